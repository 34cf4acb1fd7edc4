# JSONL given as text (no -f) is refused, naming the flag, before anything
# is written: its JSON syntax would be segmented as words.  The first line
# that is not blank decides; -f text asks for the lines as they are.
printf '\n{"text": "我爱北京。"}\n' > good.jsonl
"$TOOLS/segment" -q good.jsonl
echo "exit $?"
"$TOOLS/segment" -q -f jsonl good.jsonl
echo "exit $?"
"$TOOLS/segment" -q -f text good.jsonl
echo "exit $?"
# A JSON object without the text field is text to segment.
printf '{"title": "我爱北京"}\n' | "$TOOLS/segment" -q
echo "exit $?"
# A second input is checked too; the first one's output is not committed.
printf '我爱北京\n' > a.txt
"$TOOLS/segment" -q -o out.txt a.txt good.jsonl
echo "exit $?"
ls out.txt 2>/dev/null || echo "no out.txt"

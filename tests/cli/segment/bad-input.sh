# Invalid UTF-8 and bad JSON name the file and line; -s skips and counts.
printf 'ok 一\nbad \377 二\nthree 三\n' > bad.txt
"$TOOLS/segment" -q -r none bad.txt
echo "exit $?"
"$TOOLS/segment" -r none -s bad.txt
printf '%s\n' '{"text": "一"}' '{"text": "二"' '{"title": "x"}' '{"text": "三"}' > bad.jsonl
"$TOOLS/segment" -q -f jsonl bad.jsonl
echo "exit $?"
"$TOOLS/segment" -f jsonl -s bad.jsonl

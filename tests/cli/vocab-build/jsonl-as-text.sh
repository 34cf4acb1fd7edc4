# chars and bpe count text: JSONL given to them is refused (its JSON
# syntax would be counted), saying what to give instead.
printf '{"text": "ab"}\n' > good.jsonl
"$TOOLS/vocab-build" chars -q good.jsonl
echo "exit $?"
"$TOOLS/vocab-build" bpe -q -o bpe good.jsonl
echo "exit $?"
ls bpe

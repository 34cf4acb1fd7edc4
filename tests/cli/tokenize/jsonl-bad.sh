# A bad JSON line is an error naming file and line, or with -s skipped.
printf '%s\n' '{"text": "a"}' '{"text": 1}' '{"text": "b"' '[1]' '{"text":"c"} x' '{"text": "d"}' > in.jsonl
"$TOOLS/tokenize" -t -J -v "$BERT_VOCAB" in.jsonl
echo "exit $?"
"$TOOLS/tokenize" -t -s -J -v "$BERT_VOCAB" in.jsonl

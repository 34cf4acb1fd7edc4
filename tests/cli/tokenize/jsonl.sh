# JSONL: one output line per document; -k picks the field.
printf '%s\n' '{"text": "Hello 世界", "id": 1}' '{"body": "x", "text": "A\nB"}' '' > in.jsonl
"$TOOLS/tokenize" -t -J -v "$BERT_VOCAB" in.jsonl
printf '%s\n' '{"body": "你好"}' | "$TOOLS/tokenize" -t -k body -v "$BERT_VOCAB"

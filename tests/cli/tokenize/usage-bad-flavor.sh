"$TOOLS/tokenize" -F gpt -v "$BERT_VOCAB" </dev/null 2>&1 | head -n 1
exit 2

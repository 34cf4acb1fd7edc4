# No operand and "-" both read stdin.
echo 'Hello world' | "$TOOLS/tokenize" -t -v "$BERT_VOCAB"
echo 'Hello world' | "$TOOLS/tokenize" -t -v "$BERT_VOCAB" -

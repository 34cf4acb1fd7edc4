"$TOOLS/tokenize" -j 0 -v "$BERT_VOCAB" </dev/null

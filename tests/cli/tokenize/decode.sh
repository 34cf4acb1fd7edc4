# -d turns ids back into text; ## pieces are glued.
echo 'Unaffable 中文 words, café' | "$TOOLS/tokenize" -v "$BERT_VOCAB" > ids.txt
"$TOOLS/tokenize" -d -v "$BERT_VOCAB" ids.txt
echo '1 2 99999999' | "$TOOLS/tokenize" -d -v "$BERT_VOCAB"
echo "exit $?"

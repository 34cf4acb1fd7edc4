# -u replace and -u skip keep going; with -s a bad line is skipped and
# counted.
printf 'ok line\nbad\377here\nend\n' > bad.txt
"$TOOLS/tokenize" -q -t -u replace -v "$BERT_VOCAB" bad.txt
"$TOOLS/tokenize" -q -t -u skip -v "$BERT_VOCAB" bad.txt
"$TOOLS/tokenize" -t -s -v "$BERT_VOCAB" bad.txt

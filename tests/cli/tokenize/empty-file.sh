# An empty input gives empty output and success.
: > empty.txt
"$TOOLS/tokenize" -v "$BERT_VOCAB" empty.txt
"$TOOLS/tokenize" -v "$BERT_VOCAB" -k text < empty.txt

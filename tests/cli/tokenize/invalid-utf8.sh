# Invalid UTF-8 is an error naming file, line and offset; the lines
# before it are written.
printf 'ok line\nbad \377 here\nnever\n' > bad.txt
"$TOOLS/tokenize" -t -v "$BERT_VOCAB" bad.txt

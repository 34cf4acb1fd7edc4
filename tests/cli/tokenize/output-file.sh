# -o writes through a temporary file: success renames it, failure leaves
# no file that looks complete.
echo 'Hello world' > in.txt
"$TOOLS/tokenize" -t -o out.txt -v "$BERT_VOCAB" in.txt
cat out.txt
printf 'x\n\377\n' > bad.txt
"$TOOLS/tokenize" -o out2.txt -v "$BERT_VOCAB" bad.txt 2>/dev/null
echo "exit $?"
ls

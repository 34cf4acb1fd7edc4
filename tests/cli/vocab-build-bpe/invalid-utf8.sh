# Invalid UTF-8 stops the run, naming the file, the line and the byte;
# nothing is written, even with several threads.
printf 'fine\nbad \377 byte\nfine\n' > bad.txt
"$TOOLS/vocab-build" bpe -q -o out bad.txt
echo "exit $?"
for i in 1 2 3 4 5 6 7 8 9; do cat "$DATA/en/wikitext-2-raw/wiki.test.raw"; done > big.txt
printf '\300\257\n' >> big.txt
"$TOOLS/vocab-build" bpe -q -j 2 -o out big.txt
echo "exit $?"
ls out

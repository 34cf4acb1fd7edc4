# Invalid UTF-8 is an error naming the file, the line and the byte offset
# in it, and no output is written; -s skips such lines and counts them.
printf 'ok\nbad \377 here\r\nend\n' > bad.txt
"$TOOLS/vocab-build" chars -o out.tsv bad.txt
echo "exit $?"
ls out.tsv* 2>/dev/null || echo "no output left"
"$TOOLS/vocab-build" chars -s bad.txt
echo "exit $?"
printf 'x\n\355\240\200\n' > surrogate.txt
"$TOOLS/vocab-build" chars surrogate.txt
echo "exit $?"

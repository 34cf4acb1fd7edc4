# A missing input is reported; the others are read but nothing is written.
echo 'the cat' > a.txt
"$TOOLS/vocab-build" bpe -q -o out nope.txt a.txt
echo "exit $?"
ls out

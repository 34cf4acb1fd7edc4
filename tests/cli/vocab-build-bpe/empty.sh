# An input without text is an error, and nothing is written.
: > empty.txt
"$TOOLS/vocab-build" bpe -q -o out empty.txt
echo "exit $?"
ls out
"$TOOLS/vocab-build" bpe -q -o out < empty.txt
echo "stdin: exit $?"

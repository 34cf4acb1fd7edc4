# -o DIR is made with its missing parents, as the help says ("made if
# missing"); where it cannot be, the message names the directory.
printf 'the cat sat on the mat\nthe cat\n' > a.txt
"$TOOLS/vocab-build" bpe -q -s 260 -o nodir/sub/bpe a.txt
echo "exit $?"
ls nodir/sub/bpe
: > file
"$TOOLS/vocab-build" bpe -q -s 260 -o file/sub a.txt
echo "exit $?"

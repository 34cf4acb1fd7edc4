# A vocab size the corpus cannot supply: sentencepiece's reason, which
# says the largest size there is, and no output.  Too small a size is
# refused the same way; the largest size works.
printf 'the cat sat on the mat\nthe dog sat on the log\n' > a.txt
"$TOOLS/vocab-build" english -q a.txt
echo "exit $?"
"$TOOLS/vocab-build" english -q -s 10 a.txt
echo "exit $?"
"$TOOLS/vocab-build" english -q -s 46 a.txt
echo "exit $?"
ls

# A missing input is named, a directory is refused, and nothing is
# written.
printf 'some text\n' > a.txt
"$TOOLS/vocab-build" english -q a.txt nope.txt
echo "exit $?"
mkdir d
"$TOOLS/vocab-build" english -q d
echo "exit $?"
ls

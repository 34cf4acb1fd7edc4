# An empty corpus (or one of empty lines only) gets a clear error, and no
# output.
: > empty.txt
printf '\n\n\n' > blank.txt
"$TOOLS/vocab-build" english -q empty.txt
echo "exit $?"
"$TOOLS/vocab-build" english -q blank.txt empty.txt
echo "exit $?"
ls

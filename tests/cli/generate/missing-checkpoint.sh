# A checkpoint that is not there, or not a directory, or has no
# config.json, is named; the exit status is 1.
"$TOOLS/generate" -m no-such-dir -p hi
echo "exit $?"
: > file
"$TOOLS/generate" -m file -p hi
echo "exit $?"
mkdir empty
"$TOOLS/generate" -m empty -p hi
echo "exit $?"

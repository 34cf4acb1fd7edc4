# A checkpoint that is not there: a failure naming the file, nothing made.
"$TOOLS/checkpoint-export" -o out nothere
echo "exit $?"
test ! -e out

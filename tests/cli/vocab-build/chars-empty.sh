# An empty corpus is an error, not an empty counts file.
: > empty.txt
"$TOOLS/vocab-build" chars -o out.tsv empty.txt
echo "exit $?"
mkdir nothing
"$TOOLS/vocab-build" chars -o out.tsv nothing
echo "exit $?"
"$TOOLS/vocab-build" chars -q < /dev/null
echo "exit $?"
ls out.tsv* 2>/dev/null || echo "no output left"
"$TOOLS/vocab-build" chars missing.txt
echo "exit $?"

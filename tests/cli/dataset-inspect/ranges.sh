# A document, sentence or token range past the end is an error that names
# the count, after the selections before it are printed; exit 1.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -o p in.jsonl
"$TOOLS/dataset-inspect" -d 2 p
echo "exit $?"
"$TOOLS/dataset-inspect" -s 3 p
echo "exit $?"
"$TOOLS/dataset-inspect" -t 6:1 p
echo "exit $?"
"$TOOLS/dataset-inspect" -t 4:3 p
echo "exit $?"
"$TOOLS/dataset-inspect" -t 4:2 -d 12 -s 0 p
echo "exit $?"
"$TOOLS/dataset-inspect" -t 18446744073709551615:2 p

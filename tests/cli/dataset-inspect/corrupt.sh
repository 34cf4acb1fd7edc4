# A truncated or damaged dataset gives the library's message, naming the
# file and the field, and exit 1; so does a missing one.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -o p in.jsonl
cp p.bin q.bin
head -c 90 p.idx > q.idx
"$TOOLS/dataset-inspect" q
echo "exit $?"
head -c 20 p.idx > q.idx
"$TOOLS/dataset-inspect" -d 0 q
echo "exit $?"
head -c 10 p.bin > q.bin
cp p.idx q.idx
"$TOOLS/dataset-inspect" q
echo "exit $?"
"$TOOLS/dataset-inspect" nope

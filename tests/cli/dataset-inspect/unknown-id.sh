# An id that the vocab of -v lacks is an error naming the id, its
# position in the dataset and the vocab; exit 1.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
{ echo '[UNK]'; seq 1 70000 | sed 's/^/w/'; } > big.vocab
printf '{"text": "w1"}\n{"text": "w1 w70000"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v big.vocab -o p in.jsonl
"$TOOLS/dataset-inspect" p | sed -n 3p
"$TOOLS/dataset-inspect" -v big.vocab -d 1 p
"$TOOLS/dataset-inspect" -v tiny.vocab -d 1 p
cp "$V" tiny.vocab
"$TOOLS/dataset-inspect" -v tiny.vocab -t 0:1 -d 1 p

# With no option: the format, the files, the dtype and the counts of 10a's
# example, and what its sidecar records, as 'key: value' lines or (-j) one
# JSON object; the same for the npy pair.
export SOURCE_DATE_EPOCH=1700000000
cp "$TESTDATA/create-pretraining-data/tiny.vocab" .
V=tiny.vocab
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -o p in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -f npy -o p in.jsonl
rm p_ids.npy
"$TOOLS/dataset-inspect" p
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -f npy -o p in.jsonl
"$TOOLS/dataset-inspect" -j p

# The sidecar's record is shown with the counts; -v with another vocab
# than the one the sidecar names gets a warning (the text would be that
# vocab's reading of the ids); a dataset without a sidecar (PaddleNLP's,
# Megatron's) shows "none", a stale one is ignored with a note, a corrupt
# one is warned about.
export SOURCE_DATE_EPOCH=1700000000
cp "$TESTDATA/create-pretraining-data/tiny.vocab" tiny.vocab
cp -r "$TESTDATA/tokenize/gpt2-tiny" gpt2
{ cat tiny.vocab; echo extra; } > other.vocab
printf '{"text": "a b c"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v tiny.vocab -o p in.jsonl
"$TOOLS/dataset-inspect" p | sed -n '/^sidecar/,$p'
"$TOOLS/dataset-inspect" -v tiny.vocab -s 0 p
"$TOOLS/dataset-inspect" -v other.vocab -s 0 p
"$TOOLS/dataset-inspect" -v gpt2 -s 0 p
echo "--- a copy of another dataset's record"
"$TOOLS/create-pretraining-data" -q -v tiny.vocab -o q in.jsonl
printf '{"text": "a b c d e"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v tiny.vocab -o r in.jsonl
cp r.json q.json
"$TOOLS/dataset-inspect" -j -v other.vocab -s 0 q
"$TOOLS/dataset-inspect" q | grep sidecar
echo "--- none"
rm q.json
"$TOOLS/dataset-inspect" q | grep sidecar
"$TOOLS/dataset-inspect" -j q | grep -o '"sidecar": null'
echo "--- corrupt"
echo '{"erniekit_dataset": 1' > q.json
"$TOOLS/dataset-inspect" q | grep sidecar
echo "exit $?"

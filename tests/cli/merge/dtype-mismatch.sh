# All inputs must have one dtype: a uint16 and an int32 dataset are
# refused, naming both, and nothing is written.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
{ echo '[UNK]'; seq 1 70000 | sed 's/^/w/'; } > big.vocab
printf '{"text": "w1 w70000"}\n' > wide.jsonl
printf '{"text": "a b"}\n' > narrow.jsonl
"$TOOLS/create-pretraining-data" -q -v big.vocab -o wide wide.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o narrow narrow.jsonl
"$TOOLS/merge" -o out narrow wide
echo "exit $?"
"$TOOLS/merge" -o out wide narrow
echo "exit $?"
ls out* 2>/dev/null
"$TOOLS/merge" -o out wide wide

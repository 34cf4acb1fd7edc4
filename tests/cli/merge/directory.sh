# A directory stands for every dataset in it, either format, in sorted
# order of the prefixes, as PaddleNLP's merge.py takes them; the same
# inputs give the same output, byte for byte, every time.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
mkdir shards
printf '{"text": "a"}\n' > 1.jsonl
printf '{"text": "b b"}\n' > 2.jsonl
printf '{"text": "c c c"}\n' > 3.jsonl
cpd() { "$TOOLS/create-pretraining-data" -q -v "$V" "$@"; }
cpd -o shards/part-b 2.jsonl
cpd -f npy -o shards/part-c 3.jsonl
cpd -o shards/part-a 1.jsonl
echo notes > shards/README
"$TOOLS/merge" -q -o dir shards
"$TOOLS/merge" -q -o dir2 shards/
"$TOOLS/merge" -q -o listed shards/part-a shards/part-b shards/part-c
"$TOOLS/merge" -q -o reversed shards/part-c shards/part-b shards/part-a
cmp dir.bin listed.bin && cmp dir.idx listed.idx && echo "directory: sorted"
cmp dir.bin dir2.bin && cmp dir.idx dir2.idx && echo "same output again"
od -An -tu2 dir.bin
od -An -tu2 reversed.bin
mkdir empty
"$TOOLS/merge" -q -o none empty
echo "exit $?"

# A directory gives the JSONL files in it: *.jsonl and *.json, plain or
# zstd; other .zst files are skipped (pku.txt.zst was read as JSONL and
# failed).  The files are named, in the sorted order they are read.  One
# corpus both plain and compressed (x.jsonl beside x.jsonl.zst) is refused
# rather than read twice.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
mkdir corpus
printf '{"text": "c"}\n' > corpus/x.jsonl
zstd -q -k corpus/x.jsonl
printf '{"text": "d"}\n' > corpus/y.json
printf '中文\n' | zstd -q > corpus/pku.txt.zst
"$TOOLS/create-pretraining-data" -v "$V" -o out corpus 2>&1
echo "exit $?"
ls
rm corpus/x.jsonl
"$TOOLS/create-pretraining-data" -v "$V" -o out corpus 2>&1
echo "exit $?"
od -An -tu2 out.bin
# Named on the command line, the pair is refused too.
zstd -q -d -c corpus/x.jsonl.zst > corpus/x.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o out2 corpus/x.jsonl \
    corpus/x.jsonl.zst 2>&1
echo "exit $?"
# With -q, nothing is said about the directory.
rm corpus/x.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o out3 corpus
echo "exit $?"
# A dataset's record (PREFIX.json beside PREFIX.idx, as the tools write it)
# is not a corpus.
"$TOOLS/create-pretraining-data" -q -v "$V" -o corpus/old corpus/y.json
printf '{"tokenizer": "ernie"}\n' > corpus/old.json
"$TOOLS/create-pretraining-data" -v "$V" -o out4 corpus 2>&1
echo "exit $?"

# A 50 MB document on one line is one sentence of 16.7 million tokens, in
# bounded time and memory.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
{ printf '{"text": "'; yes 'a b ' | head -n 12500000 | tr -d '\n' | head -c 50000000; printf '"}\n'; } > in.jsonl
ls -l in.jsonl | awk '{print $5}'
"$TOOLS/create-pretraining-data" -q -v "$V" -o out in.jsonl
echo "exit $?"
od -An -tu8 -j 18 -N 16 out.idx
od -An -tu4 -j 34 -N 4 out.idx

# A malformed record stops the run with the file and line, and no output
# file is left; --skip-bad counts it instead and keeps every valid one.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "a b"}\n{"text": "c"\n{"title": "d"}\n\n{"text": "e"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o out in.jsonl
echo "exit $?"
ls
"$TOOLS/create-pretraining-data" -s -v "$V" -o out in.jsonl
echo "exit $?"
od -An -tu2 out.bin
printf '{"text": "a \377 b"}\n' > bad-utf8.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o out2 bad-utf8.jsonl
echo "exit $?"

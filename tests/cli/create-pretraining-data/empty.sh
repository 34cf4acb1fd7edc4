# A corpus with no tokens is an error, and nothing is written.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": ""}\n{"text": "  \\n "}\n\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o out in.jsonl
echo "exit $?"
"$TOOLS/create-pretraining-data" -q -v "$V" -o out </dev/null
echo "exit $?"
ls

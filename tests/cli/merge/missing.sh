# A missing input is named, every bad input is reported, and nothing is
# written: the output is not even started.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "a b"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o p in.jsonl
printf 'x' > half.idx
"$TOOLS/merge" -o out p nope half p
echo "exit $?"
ls
rm half.idx
"$TOOLS/merge" -o out half

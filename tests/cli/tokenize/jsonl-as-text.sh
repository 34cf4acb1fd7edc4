# JSONL given as text (no -J) is refused, naming the flag: its JSON syntax
# would be tokenized.  With -J (or -k) the field is read.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "c d"}\n' > good.jsonl
"$TOOLS/tokenize" -q -v "$V" good.jsonl
echo "exit $?"
"$TOOLS/tokenize" -q -v "$V" -J good.jsonl
echo "exit $?"
# Decoding reads ids, not text: not checked.
echo 7 8 | "$TOOLS/tokenize" -q -v "$V" -d

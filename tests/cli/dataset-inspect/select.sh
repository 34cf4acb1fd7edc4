# -d prints a document one sentence a line, -s a sentence, -t a token
# range; as ids, as text with -v, as JSON with -j; several in the order
# given.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -o p in.jsonl
"$TOOLS/dataset-inspect" -d 0 p
"$TOOLS/dataset-inspect" -d 1 -s 1 -t 2:3 p
"$TOOLS/dataset-inspect" -v "$V" -d 0 -d 1 -s 0 -t 3:3 p
"$TOOLS/dataset-inspect" -j -d 0 -s 2 -t 0:6 p
"$TOOLS/dataset-inspect" -j -v "$V" -d 1 p

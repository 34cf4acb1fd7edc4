# Without -q, a summary on stderr; stdout stays empty.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > 1.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -o p 1.jsonl
"$TOOLS/merge" -o out p p p
"$TOOLS/merge" -f npy -o out p

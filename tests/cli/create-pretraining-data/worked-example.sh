# ernie-data.md 10a: documents [5,6,7] [8] and [9,10] give this .idx
# (94 bytes) and .bin (12 bytes), uint16.
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$TESTDATA/create-pretraining-data/tiny.vocab" -S --chinese -o out in.jsonl
od -An -tx1 -v out.idx
od -An -tx1 -v out.bin
ls

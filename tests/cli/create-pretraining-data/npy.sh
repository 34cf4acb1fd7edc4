# -f npy writes PREFIX_ids.npy (numpy's header) and PREFIX_idx.npz.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -f npy -o out in.jsonl
ls
head -c 128 out_ids.npy | od -An -c | head -n 5
tail -c 12 out_ids.npy | od -An -tu2

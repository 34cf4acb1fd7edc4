# -S without --chinese breaks sentences where ICU's sentence iterator does
# (ICU is loaded on first use); -S --chinese only at newlines.
printf '{"text": "a b. C d? E f! e\\nd"}\n' > in.jsonl
V="$TESTDATA/create-pretraining-data/tiny.vocab"
"$TOOLS/create-pretraining-data" -q -v "$V" -S -o icu in.jsonl
"$TOOLS/dataset-inspect" -v "$V" -d 0 icu
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -o nl in.jsonl
"$TOOLS/dataset-inspect" -v "$V" -d 0 nl

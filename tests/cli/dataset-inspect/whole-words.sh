# With -v vocab.txt, "##" ids decode joined to the token before, the
# "##<CJK>" ids of whole-word marking too (tiny.vocab has 14 tokens, so
# "##中" is 14).
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "中文 文中 a\\n中文中"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -W --cn-splited \
    -o p in.jsonl
"$TOOLS/dataset-inspect" -d 0 p
"$TOOLS/dataset-inspect" -v "$V" -d 0 p
"$TOOLS/dataset-inspect" -v "$V" -t 1:3 p

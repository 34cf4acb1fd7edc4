# -W marks the second character of a jieba word with ## and stores the
# extension id: 中文 is one word, so 文 becomes ##文 (13, in the vocab);
# with --cn-splited the given words decide instead.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "中文 a"}\n' > in.jsonl
printf '{"text": "中 文 a"}\n' > split.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o plain in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -W -o wwm in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -W --cn-splited -o splited split.jsonl
for f in plain wwm splited; do od -An -tu2 $f.bin; done

# Sample errors: ERNIE without a vocab or with a BPE one, a --seq-len too
# short for [CLS] A [SEP] B [SEP], --stats for GPT, -n mixed with -d are
# usage errors (2); an empty split part and a mapping with no sample
# (every document a single sentence) fail with 1.
cat > in.jsonl <<'J'
{"text": "我爱北京天安门。\n今天天气很好。"}
{"text": "长江是中国最长的河流。\n黄河被称为母亲河。"}
J
cp "$ERNIE_VOCAB" ernie.txt # the sidecar names it
"$TOOLS/create-pretraining-data" -q -v ernie.txt -S --chinese -o p in.jsonl
"$TOOLS/dataset-inspect" -n 1 p
echo "exit $?"
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" -n 1 -l 4 p
echo "exit $?"
"$TOOLS/dataset-inspect" -k gpt -x 10 p
echo "exit $?"
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" -n 1 -d 0 p
echo "exit $?"
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" -n 1 -m 1.5 p
echo "exit $?"
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" -n 1 -w test p
echo "exit $?"
printf '{"text": "我爱北京天安门。"}\n{"text": "长江是中国最长的河流。"}\n' \
    > one.jsonl
"$TOOLS/create-pretraining-data" -q -v "$ERNIE_VOCAB" -S --chinese -o q \
    one.jsonl
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" -n 1 -p 1,0,0 q
echo "exit $?"
mkdir bpe
printf '{"a": 0, "b": 1}\n' > bpe/vocab.json
printf '#version: 0.2\n' > bpe/merges.txt
"$TOOLS/dataset-inspect" -v bpe -n 1 p
echo "exit $?"
exit 1

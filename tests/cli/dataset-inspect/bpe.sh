# -v also takes GPT-2 BPE files: vocab.json with merges.txt beside it, or
# their directory.  Decoded text may hold newlines: they are written \n so
# that a sentence stays one line (-j gives the exact string).
mkdir bpe
printf '{"a": 0, "b": 1, "ab": 2, "\304\240": 3, "\304\240ab": 4, "\304\212": 5}\n' > bpe/vocab.json
printf '#version: 0.2\na b\n\304\240 ab\n' > bpe/merges.txt
printf '{"text": "ab ab\\nb a"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -T gpt2-bpe -v bpe -o p in.jsonl
"$TOOLS/dataset-inspect" -s 0 p
"$TOOLS/dataset-inspect" -v bpe -s 0 p
"$TOOLS/dataset-inspect" -v bpe/vocab.json -t 1:3 p
"$TOOLS/dataset-inspect" -j -v bpe -s 0 p
mv bpe/merges.txt bpe/m.txt
"$TOOLS/dataset-inspect" -v bpe -s 0 p
echo "exit $?"

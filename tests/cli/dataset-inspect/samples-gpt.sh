# --samples --kind gpt prints the seq_len + 1 tokens of GPTDataset's
# samples, decoded with -v (byte-level BPE here: the hand-made tiny model,
# which drops the bytes it lacks), or as ids without it.
G="$TESTDATA/tokenize/gpt2-tiny"
printf '{"text": "Hello the world, the caf\\u00e9 is 12."}\n' > in.jsonl
printf '{"text": "the world is Hello 1212"}\n' >> in.jsonl
printf '{"text": "caf\\u00e9 caf\\u00e9 the 12"}\n' >> in.jsonl
"$TOOLS/create-pretraining-data" -q -T gpt2-bpe -v "$G" -o g in.jsonl
"$TOOLS/dataset-inspect" -k gpt -l 6 -n 4 -p 1,0,0 -v "$G" g
"$TOOLS/dataset-inspect" --kind gpt --seq-len 6 --samples 2 --first 3 \
    --seed 5 --split 1,0,0 g
mkdir cache
"$TOOLS/dataset-inspect" -k gpt -l 6 -n 1 -p 1,0,0 -C cache g > /dev/null
ls cache | sed 's/^[0-9a-f]*/MD5/'

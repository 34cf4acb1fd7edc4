# --samples prints ERNIE samples as ErnieDataset builds them from the
# samples mapping of the split: the tokens with each masked position as
# {LABEL>SHOWN} (SHOWN is [MASK], the label itself, or a random token), the
# token types, the labels and the SOP label.  Whole-word ("##<CJK>") pieces
# show as their bare characters.  The same seed gives the same samples; -C
# caches the mapping under PaddleNLP's name and reads it back.
cat > in.jsonl <<'J'
{"text": "我爱北京天安门。\n今天天气很好，我们去公园散步。\n公园里有很多人在跳舞。"}
{"text": "机器学习是人工智能的一个分支。\n深度学习使用多层神经网络。\n预训练模型改变了自然语言处理。\n数据的质量决定了模型的上限。"}
{"text": "长江是中国最长的河流。\n黄河被称为母亲河。\n两条河流孕育了中华文明。"}
{"text": "春天来了，花儿都开了。\n小鸟在树上唱歌。"}
J
"$TOOLS/create-pretraining-data" -q -v "$ERNIE_VOCAB" -S --chinese -W \
    -o p in.jsonl
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" -n 3 -l 32 -p 1,0,0 p
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" --samples 2 --first 7 \
    --seq-len 24 --seed 7 --split 1,0,0 --masked-lm-prob 0.3 \
    --max-ngrams 2 --short-seq-prob 0.5 p
mkdir cache
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" -n 1 -l 32 -p 1,0,0 -C cache p \
    > a.txt
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" -n 1 -l 32 -p 1,0,0 -C cache p \
    > b.txt
ls cache
cmp a.txt b.txt && head -n 1 a.txt

# --stats N: over N ERNIE samples, the masking rate, the 80/10/10 shares,
# the SOP swap rate and the lengths of masked runs of whole words, each next
# to what the settings imply.  A run of adjacent n-grams counts as one, and
# the budget of short samples cuts n-grams short, so runs come out shorter
# than the 1/n weights (reversed by -F) say.
cat > in.jsonl <<'J'
{"text": "我爱北京天安门。\n今天天气很好，我们去公园散步。\n公园里有很多人在跳舞。"}
{"text": "机器学习是人工智能的一个分支。\n深度学习使用多层神经网络。\n预训练模型改变了自然语言处理。\n数据的质量决定了模型的上限。"}
{"text": "长江是中国最长的河流。\n黄河被称为母亲河。\n两条河流孕育了中华文明。"}
{"text": "春天来了，花儿都开了。\n小鸟在树上唱歌。"}
J
"$TOOLS/create-pretraining-data" -q -v "$ERNIE_VOCAB" -S --chinese -W \
    -o p in.jsonl
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" -x 500 -l 64 -p 1,0,0 p
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" --stats 500 -l 64 -p 1,0,0 \
    -g 4 -F -m 0.3 p
# -G: n-gram sizes min(geometric(0.2), max_ngrams), SpanBERT's draw.
"$TOOLS/dataset-inspect" -v "$ERNIE_VOCAB" --stats 500 -l 64 -p 1,0,0 \
    -g 4 -G p

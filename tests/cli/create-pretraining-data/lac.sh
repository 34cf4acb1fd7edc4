# -W with LAC's words (--cn-seg-func seg|lac, the seed's names, or
# --engine lac --lac-mode seg|lac): LAC's words mark the tokens (PaddleNLP's
# ids: tests/conformance/lac_run.py); the sidecar names the segmenter.
[ -f "$TOOLS/lac.model" ] || { echo "no lac.model (built with WITH_LAC=0)" >&2; exit 77; }
export SOURCE_DATE_EPOCH=1700000000
printf '{"text": "%s"}\n' '百度是一家高科技公司\n机器学习是人工智能的一个分支' > in.jsonl
cpd() { "$TOOLS/create-pretraining-data" -q -v "$ERNIE_VOCAB" "$@"; }
cpd -S --chinese -W --cn-seg-func seg -o seg in.jsonl
cpd -S --chinese -W --engine lac --lac-mode seg -o seg2 in.jsonl
cmp seg.bin seg2.bin && cmp seg.idx seg2.idx && echo same
cpd -S --chinese -W --cn-seg-func lac -j 3 -o lac in.jsonl
cpd -S --chinese -W -o jieba in.jsonl
for f in seg lac jieba; do
    echo "$f: $(od -An -tu2 -w1000 $f.bin)"
    grep '"segmenter"' $f.json
done
# LAC segments for -W only, never pre-segmented text.
cpd -S --chinese --cn-seg-func lac -o x in.jsonl 2>&1 | head -n 1
cpd -S --chinese -W --cn-splited --cn-seg-func seg -o x in.jsonl 2>&1 | head -n 1
cpd -W --cn-seg-func seg -m /nonexistent/lac.model -o x in.jsonl
echo "exit $?"

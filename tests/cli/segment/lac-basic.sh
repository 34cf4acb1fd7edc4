# --engine lac: Baidu LAC 2.1.2's words (tests/conformance/lac_run.py
# checks them against LAC itself), with PaddleNLP's sentence rules.  LAC's
# words can hold spaces ("机 器"): printed as they are.
[ -f "$TOOLS/lac.model" ] || { echo "no lac.model (built with WITH_LAC=0)" >&2; exit 77; }
printf '百度是一家高科技公司。LAC是一个优秀的分词工具！！  机 器学习\nＡＢＣ１２３ 臺灣\t😀𠮷\n\n' > in.txt
# The seg network is the default; --cn-seg-func seg is the same.
"$TOOLS/segment" -q --engine lac in.txt | tee in.seg
"$TOOLS/segment" -q --cn-seg-func seg in.txt | cmp - in.seg && echo same
# The lac network, with tags (word/TAG; O's name is empty).
"$TOOLS/segment" -q --lac-mode lac --tags in.txt | tee in.tags
"$TOOLS/segment" -q --cn-seg-func lac --tags in.txt | cmp - in.tags && echo same
# -w: a document a line, whitespace words left out.
"$TOOLS/segment" -q -w --lac-mode lac in.txt
# JSONL, zstd in and out, any -j: the same bytes.
printf '{"text": "%s"}\n' 百度是一家高科技公司。 '今天天气很好！' > in.jsonl
zstd -q in.jsonl
"$TOOLS/segment" -q -f jsonl --engine lac -o out.txt.zst in.jsonl.zst
zstd -dq out.txt.zst && cat out.txt
for j in 1 2 3; do
    "$TOOLS/segment" -q -f jsonl --engine lac -j $j in.jsonl | cmp - out.txt && echo "-j $j same"
done

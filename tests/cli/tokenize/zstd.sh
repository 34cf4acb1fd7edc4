# zstd input (file or stdin, several frames) gives the same output as plain.
command -v zstd >/dev/null || { echo "zstd not installed" >&2; exit 77; }
head -n 800 "$DATA/en/wikitext-2-raw/wiki.test.raw" > a.txt
tail -n 300 "$DATA/zh/sighan2005-pku/pku_test.utf8" > b.txt
cat a.txt b.txt > ab.txt
zstd -q -c a.txt > ab.zst && zstd -q -c b.txt >> ab.zst
"$TOOLS/tokenize" -q -v "$BERT_VOCAB" ab.txt > plain.out
"$TOOLS/tokenize" -q -v "$BERT_VOCAB" ab.zst > zst.out
"$TOOLS/tokenize" -q -v "$BERT_VOCAB" < ab.zst > zst-stdin.out
cmp plain.out zst.out && cmp plain.out zst-stdin.out && wc -l < plain.out
head -c 1000 ab.zst > cut.zst
"$TOOLS/tokenize" -q -v "$BERT_VOCAB" cut.zst > /dev/null 2> err.txt
echo "truncated: exit $?"

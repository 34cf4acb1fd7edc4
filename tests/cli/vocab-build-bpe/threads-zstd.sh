# The vocab is byte-identical for any -j, from plain, zstd or stdin input,
# on an input of many chunks; --special's default is <|endoftext|>.
command -v zstd >/dev/null || { echo "zstd not installed" >&2; exit 77; }
for i in 1 2 3; do cat "$DATA/en/wikitext-2-raw/wiki.test.raw"; done > a.txt
head -c 300000 "$DATA/zh/sighan2005-pku/pku_test.utf8" > b.txt
zstd -q -c a.txt > ab.zst && zstd -q -c b.txt >> ab.zst
V="$TOOLS/vocab-build"
"$V" bpe -q -s 2000 -j 1 -o j1 a.txt b.txt
"$V" bpe -q -s 2000 -j 2 -o j2 a.txt b.txt
"$V" bpe -q -s 2000 -j 3 -S '<|endoftext|>' -o zst ab.zst
cat a.txt b.txt | "$V" bpe -q -s 2000 -o stdin -
for d in j2 zst stdin; do
    cmp j1/vocab.json $d/vocab.json && cmp j1/merges.txt $d/merges.txt || exit 1
done
head -c 40 j1/vocab.json; echo
wc -l < j1/merges.txt

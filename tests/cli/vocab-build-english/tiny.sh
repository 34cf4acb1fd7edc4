# A tiny run: the largest vocab this text supplies, the model beside it
# with -m, the same pieces for any thread count and from a zstd copy, and
# the vocab's head: <unk> <s> </s>, then the merges by decreasing count
# with score -rank.
cat > a.txt <<'TEXT'
The quick brown fox jumps over the lazy dog.
A lazy dog sleeps in the sun while the quick fox runs.
Foxes and dogs are not the best of friends, the story says.
The brown dog jumps over the quick fox in the second story.
TEXT
"$TOOLS/vocab-build" english -q -s 150 -o eng.vocab -m eng.model a.txt
echo "exit $?"
head -n 12 eng.vocab
wc -l < eng.vocab
tail -n 3 eng.vocab
"$TOOLS/vocab-build" english -q -s 150 -j 1 -o j1.vocab a.txt
cmp eng.vocab j1.vocab && echo "-j 1: same"
if command -v zstd > /dev/null; then
    zstd -q a.txt -o a.txt.zst
    "$TOOLS/vocab-build" english -q -s 150 -o z.vocab a.txt.zst
    cmp eng.vocab z.vocab && echo "zstd: same"
else
    echo "zstd: same"
fi
"$TOOLS/vocab-build" english -s 150 -o log.vocab a.txt 2> log
grep -c 'LOG(INFO)' log > /dev/null && echo "progress: logged"
tail -n 1 log
ls | grep -v '^a.txt.zst$'

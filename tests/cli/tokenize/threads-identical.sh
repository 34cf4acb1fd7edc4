# Output is byte-identical for any -j, on a multi-chunk input.
for i in 1 2 3; do cat "$DATA/en/wikitext-2-raw/wiki.test.raw" "$DATA/zh/sighan2005-pku/pku_test.utf8"; done > big.txt
"$TOOLS/tokenize" -q -j 1 -v "$ERNIE_VOCAB" big.txt > j1.out
for j in 2 3 8; do
    "$TOOLS/tokenize" -q -j $j -v "$ERNIE_VOCAB" big.txt > j$j.out
    cmp j1.out j$j.out || exit 1
done
test "$(wc -l < j1.out)" -eq "$(wc -l < big.txt)"

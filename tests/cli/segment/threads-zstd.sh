# Output is byte-identical for any -j; .zst in and out round-trip.
command -v zstd >/dev/null || { echo "zstd not installed" >&2; exit 77; }
cat "$DATA/zh/sighan2005-pku/pku_test.utf8" "$DATA/en/wikitext-2-raw/wiki.test.raw" > in.txt
"$TOOLS/segment" -q -j 1 in.txt > j1.out
for j in 2 3 8; do
    "$TOOLS/segment" -q -j $j in.txt > j$j.out && cmp j1.out j$j.out || exit 1
done
zstd -q -c in.txt > in.txt.zst
"$TOOLS/segment" -q -j 2 -o out.zst in.txt.zst
zstd -q -d -c out.zst | cmp - j1.out && echo same
ls

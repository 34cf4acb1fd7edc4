# The count-file reader is strict: every error names the file and line.
printf 'a\t3\nb\t2' > truncated.tsv
printf 'a\t3\n\\x\t2\n' > escape.tsv
printf 'a\t3\nb\t-2\n' > sign.tsv
printf 'a\t3\nb\t02\n' > zero.tsv
printf 'a\t3\nb\t18446744073709551616\n' > overflow.tsv
printf 'a\t3\nb\t2\na\t1\n' > duplicate.tsv
printf 'a\t3\nb 2\n' > notab.tsv
printf 'a\t3\n\001\t2\n' > raw.tsv
printf 'ab\t3\n' > two.tsv
printf 'a\t3\r\n' > crlf.tsv
printf '\\u0041\t3\n\\uD800\t1\n' > surrogate.tsv
for f in truncated escape sign zero overflow duplicate notab raw two crlf \
    surrogate; do
    "$TOOLS/vocab-build" chars -m $f.tsv
    echo "$f: exit $?"
done
printf 'a\t18446744073709551615\n' > max.tsv
"$TOOLS/vocab-build" chars -m max.tsv max.tsv
echo "sum: exit $?"

# Every character of every line is counted, newlines included; "\r\n" and
# a lone "\r" count as "\n" (Python's text mode, as gen_char.py reads).
# Lines are sorted by count, ties by code point; characters that cannot
# stand raw are escaped; any -j gives the same bytes.
printf 'ab\tc\\d\r\nxx\r\001\302\205é中中\360\235\204\236\n\342\200\250last' > t.txt
"$TOOLS/vocab-build" chars -q -j 1 t.txt > j1.tsv
"$TOOLS/vocab-build" chars -q -j 2 -o j2.tsv t.txt
cmp j1.tsv j2.tsv && echo "-j 1 and -j 2: identical"
cat j1.tsv
# stdin, and "-"
"$TOOLS/vocab-build" chars -q < t.txt | cmp - j1.tsv && echo "stdin: same"
"$TOOLS/vocab-build" chars -q - < t.txt | cmp - j1.tsv && echo "-: same"

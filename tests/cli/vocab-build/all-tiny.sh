# chars, english and merge in one run give what the three steps give.
i=0
while [ $i -lt 200 ]; do
    echo "the cat sat on the mat with another cat and the dog $i"
    i=$((i + 1))
done > en.txt
printf '中文字符\n字符统计\n' > zh.txt
"$TOOLS/vocab-build" all -q -n 60 -E en.txt -c c.tsv -e e.vocab \
    -o vocab.txt zh.txt
echo "exit $?"
"$TOOLS/vocab-build" english -q -s 60 -o e2.vocab en.txt
cmp e.vocab e2.vocab && echo "english: same pieces"
"$TOOLS/vocab-build" chars -q zh.txt | cmp - c.tsv && echo "chars: same counts"
"$TOOLS/vocab-build" merge -q -c c.tsv -e e.vocab | cmp - vocab.txt &&
    echo "merge: same vocab"
sed -n '1,10p' vocab.txt
wc -l < vocab.txt
"$TOOLS/vocab-build" all -q -n 60 -E missing.txt -o v2.txt zh.txt
echo "exit $?"
: > empty.txt
"$TOOLS/vocab-build" all -q -n 60 -E en.txt -o v2.txt empty.txt
echo "exit $?"
ls v2.txt* 2>/dev/null || echo "no output left"

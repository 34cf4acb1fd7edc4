# The seed's order: special tokens, the counted Han characters by count
# (ties in file order), the other 20902 - n by descending code point, the
# English pieces ("▁x" -> x, "<...>" dropped, others "##x"), then the
# characters counted at least -t times, normalized (kana and Hangul jamo
# get a "##" twin).
printf '的\t9\n中\t5\n国\t5\n豈\t4\nが\t3\n한\t3\nＡ\t3\nA\t2\n\\n\t9\n' > c.tsv
printf '<unk>\t0\n<s>\t0\n</s>\t0\n▁the\t-1\ning\t-2\n▁Über\t-3\n▁\t-4\n' > e.vocab
"$TOOLS/vocab-build" merge -c c.tsv -e e.vocab -t 3 -o vocab.txt
echo "exit $?"
wc -l < vocab.txt
sed -n '1,10p' vocab.txt
echo ...
sed -n '20909,$p' vocab.txt
"$TOOLS/vocab-build" merge -q -c c.tsv -e e.vocab -t 2 | tail -n 2

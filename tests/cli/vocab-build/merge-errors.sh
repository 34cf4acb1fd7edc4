# Bad inputs are errors that name the file and line; nothing is written.
printf '中\t5\n' > c.tsv
printf '<unk>\t0\n▁the\t-1\n' > e.vocab
vb() { "$TOOLS/vocab-build" merge -q -o out.txt "$@"; echo "exit $?"; }
vb -c missing.tsv -e e.vocab
vb -c c.tsv -e missing.vocab
printf '中\t5\n国\t' > truncated.tsv
vb -c truncated.tsv -e e.vocab
: > empty.tsv
vb -c empty.tsv -e e.vocab
printf '<unk>\t0\nthe\n' > onefield.vocab
vb -c c.tsv -e onefield.vocab
printf '<unk>\t0\n\n' > blank.vocab
vb -c c.tsv -e blank.vocab
printf '<unk>\t0\n\377\t1\n' > utf8.vocab
vb -c c.tsv -e utf8.vocab
ls out.txt* 2>/dev/null || echo "no output left"
# 30000 English pieces leave no room for the 20902 ##<CJK> ids in uint16.
awk 'BEGIN { for (i = 0; i < 30000; i++) printf "\342\226\201w%d\t%d\n", i, -i }' > big.vocab
vb -c c.tsv -e big.vocab

# -m adds count files up: counting a corpus in pieces gives the counts of
# the whole; a directory is read recursively.
mkdir -p corpus/a/b
printf '中文\n文字\n' > corpus/one.txt
printf 'abc\n中\n' > corpus/a/b/two.txt
"$TOOLS/vocab-build" chars -q -o one.tsv corpus/one.txt
"$TOOLS/vocab-build" chars -q -o two.tsv corpus/a/b/two.txt
"$TOOLS/vocab-build" chars -q -o all.tsv corpus
"$TOOLS/vocab-build" chars -q -m -o sum.tsv one.tsv two.tsv
cmp all.tsv sum.tsv && echo "pieces add up to the whole"
cat sum.tsv
"$TOOLS/vocab-build" chars -m one.tsv one.tsv

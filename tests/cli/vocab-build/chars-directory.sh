# A directory gives its text files, named in the order they are read; JSON
# files are skipped (counting them would count their syntax), and one text
# both plain and compressed is refused rather than counted twice.
mkdir corpus
printf 'ab\n' > corpus/a.txt
printf 'b\n' > corpus/b.raw
printf '{"text": "x"}\n' > corpus/c.jsonl
"$TOOLS/vocab-build" chars corpus
echo "exit $?"
zstd -q -k corpus/a.txt
"$TOOLS/vocab-build" chars corpus
echo "exit $?"

# Usage errors exit 2 with the usage line on stderr; --help goes to stdout.
vb() { "$TOOLS/vocab-build" "$@"; echo "exit $?"; }
vb chars -x
vb chars -m
vb chars -j 0 x
vb merge -c c.tsv
vb merge -c c.tsv -e e.vocab extra
vb merge -t -1 -c c.tsv -e e.vocab
vb all corpus
vb all -n 0 -E en.txt corpus
vb chars --help > help.txt; echo "chars --help: exit $?"; head -n 1 help.txt
vb merge -h | head -n 1
vb all -h | head -n 3

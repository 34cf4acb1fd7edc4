# Usage errors print the usage line and exit 2.
"$TOOLS/vocab-build" bpe -x a.txt; echo "bad option: $?"
"$TOOLS/vocab-build" bpe -s 0 a.txt; echo "vocab size 0: $?"
"$TOOLS/vocab-build" bpe -m 2x a.txt; echo "bad min frequency: $?"
"$TOOLS/vocab-build" bpe -j 0 a.txt; echo "no threads: $?"
"$TOOLS/vocab-build" bpe -S "$(printf 'a\377')" a.txt; echo "special not UTF-8: $?"
exit 2

# gpt2-bpe needs merges.txt (-M, or a directory for -v), and -M needs
# gpt2-bpe: both are usage errors (exit 2).
"$TOOLS/tokenize" -F gpt2-bpe -v "$TESTDATA/tokenize/gpt2-tiny/vocab.json" \
    < /dev/null
echo "exit $?"
"$TOOLS/tokenize" -M merges.txt -v vocab.txt < /dev/null
echo "exit $?"

# A bad model names the file and the line (merges.txt) or the place in the
# JSON (vocab.json), and the exit status is 1.
printf '{"a": 0, "b": 1, "ab": 2}' > vocab.json
printf '#version: 0.2\na b\nab\n' > merges.txt
echo ab | "$TOOLS/tokenize" -F gpt2-bpe -v .
echo "exit $?"
printf 'a b\na c\n' > merges.txt
echo ab | "$TOOLS/tokenize" -F gpt2-bpe -v .
echo "exit $?"
printf '{"a": 0,\n "b": 1,}' > vocab.json
echo ab | "$TOOLS/tokenize" -F gpt2-bpe -v vocab.json -M merges.txt
echo "exit $?"
echo ab | "$TOOLS/tokenize" -F gpt2-bpe -v missing.json -M merges.txt
echo "exit $?"

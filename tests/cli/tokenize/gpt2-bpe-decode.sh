# -d -F gpt2-bpe: ids back to the original bytes; a JSONL text with a
# newline decodes to two lines; an unknown id is a bad record.
m=$TESTDATA/tokenize/gpt2-tiny
printf 'Hello world, the caf\303\251 is here!\n  Hello   world  \n' |
    "$TOOLS/tokenize" -F gpt2-bpe -v "$m" > ids.txt
"$TOOLS/tokenize" -d -F gpt2-bpe -v "$m" ids.txt
printf '%s\n' '{"text": "Hello\nworld"}' |
    "$TOOLS/tokenize" -k text -F gpt2-bpe -v "$m" | tee ids2.txt
"$TOOLS/tokenize" -d -F gpt2-bpe -v "$m" ids2.txt
echo '36 0 23 33' | "$TOOLS/tokenize" -d -F gpt2-bpe -v "$m"
echo '36 0 47' | "$TOOLS/tokenize" -d -F gpt2-bpe -v "$m"
echo "exit $?"

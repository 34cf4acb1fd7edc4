# --keep-whitespace tokenizes a document as Megatron-LM's preprocess_data.py
# does, leading and trailing whitespace included (a trailing newline is a
# token, 'Ċ' here); with -S --chinese each line keeps its newline, so the
# sentences hold every byte of the text.  Without it text is stripped, as
# PaddleNLP does.  WordPiece drops whitespace anyway: a usage error there.
cp -r "$TESTDATA/tokenize/gpt2-tiny" gpt2
printf '{"text": "  Hello there\\n"}\n{"text": "the\\n\\n world \\n"}\n' > in.jsonl
cpd() { "$TOOLS/create-pretraining-data" -q -T gpt2-bpe -v gpt2 "$@"; }
for opts in "" "--keep-whitespace" "--keep-whitespace -S --chinese -e"; do
    echo "--- $opts"
    cpd $opts -o p in.jsonl
    "$TOOLS/dataset-inspect" -v gpt2 -j -d 0 -d 1 p
    grep '"keep_whitespace"' p.json
done
"$TOOLS/create-pretraining-data" -q --keep-whitespace \
    -v "$TESTDATA/create-pretraining-data/tiny.vocab" -o w in.jsonl
echo "exit $?"

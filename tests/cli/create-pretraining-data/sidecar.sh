# Beside PREFIX.bin/.idx, PREFIX.json records how the ids were made
# (ds-meta(5)): the tokenizer, the vocab's SHA-256 (what sha256sum
# prints), the options that change the ids.  It is the same whatever -j
# (with SOURCE_DATE_EPOCH for its time), it replaces an older record, and
# a user's own PREFIX.json is never overwritten.
export SOURCE_DATE_EPOCH=1700000000
cp "$TESTDATA/create-pretraining-data/tiny.vocab" tiny.vocab
cp -r "$TESTDATA/tokenize/gpt2-tiny" gpt2
printf '{"text": "a b c\\nd"}\n{"text": "e 中文"}\n' > zh.jsonl
printf '{"text": "Hello there, world!"}\n' > en.jsonl
cpd() { "$TOOLS/create-pretraining-data" -q "$@"; }
cpd -j 1 -v tiny.vocab -S --chinese -W --cn-splited -o one zh.jsonl
cpd -j 3 -v tiny.vocab -S --chinese -W --cn-splited -o three zh.jsonl
cmp one.json three.json && echo "-j: same sidecar"
cat one.json
sha256sum tiny.vocab
cpd -T gpt2-bpe -v gpt2 -e --max-repeated-len none -S -o en en.jsonl
grep -E '"(tokenizer|vocab_size|vocab_sha256|merges_sha256|lowercase|split_sentences|append_eod|sentence_splitter|max_repeated_len)"' en.json
(cd gpt2 && sha256sum vocab.json merges.txt)
echo "--- a new dataset replaces the record"
cpd -f npy -v tiny.vocab -o one zh.jsonl
grep -E '"(format|sentences|split_sentences)"' one.json
echo "--- a user's JSON is kept, and nothing is written"
echo '[{"title": "raw WuDao", "content": "x"}]' > part.json
"$TOOLS/create-pretraining-data" -q -v tiny.vocab -o part zh.jsonl
echo "exit $?"
cat part.json
ls part*

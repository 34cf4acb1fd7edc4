# Inputs made with different vocabularies or options are refused, naming
# both and the field their sidecars differ in, and nothing is written
# (issue 32: ERNIE WordPiece ids merged with GPT BPE ids silently); inputs
# made alike give an output with a sidecar of its own; an input without
# one (PaddleNLP's, Megatron's) or with a stale one gets a note and the
# output none; a user's file named like the output's sidecar is never
# replaced.
export SOURCE_DATE_EPOCH=1700000000
cp "$TESTDATA/create-pretraining-data/tiny.vocab" tiny.vocab
cp -r "$TESTDATA/tokenize/gpt2-tiny" gpt2
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > zh.jsonl
printf '{"text": "Hello there, world!"}\n' > en.jsonl
cpd() { "$TOOLS/create-pretraining-data" -q "$@"; }
mkdir data
cpd -v tiny.vocab -S --chinese -o data/cmrc zh.jsonl
cpd -v tiny.vocab -S --chinese -o data/cmrc2 zh.jsonl
cpd -T gpt2-bpe -v gpt2 -o data/wiki en.jsonl
cpd -v tiny.vocab -o data/whole zh.jsonl
echo "--- WordPiece and BPE"
"$TOOLS/merge" -o m data/cmrc data/wiki
echo "exit $?"
ls m.* 2>/dev/null
echo "--- a directory: every pair is checked against the first"
"$TOOLS/merge" -q -o m data
echo "exit $?"
echo "--- sentences and whole documents"
"$TOOLS/merge" -q -o m data/cmrc data/whole
echo "exit $?"
echo "--- made alike"
"$TOOLS/merge" -q -o m data/cmrc data/cmrc2
echo "exit $?"
cat m.json
echo "--- a merge of merges keeps the record"
"$TOOLS/merge" -q -o mm m data/cmrc
grep -E '"(tool|inputs|vocab_sha256|split_sentences)"' mm.json
echo "--- no sidecar: a note, and the output has none"
cp data/cmrc2.bin data/cmrc2.idx .
"$TOOLS/merge" -o m2 data/cmrc cmrc2
echo "exit $?"
ls m2.*
echo "--- a stale sidecar (another dataset's) is ignored"
cp data/wiki.json cmrc2.json
"$TOOLS/merge" -o m2 data/cmrc cmrc2
echo "exit $?"
echo "--- -q keeps the notes quiet"
"$TOOLS/merge" -q -o m2 data/cmrc cmrc2
echo "--- a user's out.json is not replaced"
echo '{"my": "notes"}' > out.json
"$TOOLS/merge" -q -o out data/cmrc data/cmrc2
echo "exit $?"
cat out.json
ls out.* 
echo "--- a corrupt sidecar is an error"
echo '{"erniekit_dataset": 1, "tokenizer": 5}' > data/cmrc2.json
"$TOOLS/merge" -q -o m3 data/cmrc data/cmrc2
echo "exit $?"

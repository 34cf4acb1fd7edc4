# ERNIE's sentence-order pairs need documents of two sentences or more:
# with -S, output where most documents have one sentence gets a warning
# saying how many and why (unsegmented text under --chinese gave 1.00
# sentences a document and exit 0, and train later found no sample).
V="$TESTDATA/create-pretraining-data/tiny.vocab"
run() {
    "$TOOLS/create-pretraining-data" -v "$V" "$@" > err 2>&1
    echo "exit $?"
    grep -v '^create-pretraining-data: wrote' err || :
}
printf '{"text": "中文。中文。"}\n{"text": "a b. c d."}\n' > raw.jsonl
printf '{"text": "中文。\\n中文。"}\n{"text": "a b.\\nc d."}\n' > lines.jsonl
cat raw.jsonl lines.jsonl lines.jsonl > mixed.jsonl
cat raw.jsonl raw.jsonl lines.jsonl > most.jsonl
for f in raw lines mixed most; do
    echo "$f:"
    run -S --chinese -W -o $f $f.jsonl
done
# ICU's rules: text without sentence ends.
printf '{"text": "a b c"}\n{"text": "d e"}\n' > icu.jsonl
echo "icu:"
run -S -o icu icu.jsonl
run -q -S -o icu icu.jsonl
# A sentence over 512 tokens: train skips its document.
awk 'BEGIN { s = ""; for (i = 0; i < 513; i++) s = s "a ";
             print "{\"text\": \"" s "\\nb\"}" }' > long.jsonl
echo "long:"
run -S --chinese -o long long.jsonl
# Without -S nobody asked for sentences: no warning.
echo "no -S:"
run -o one raw.jsonl

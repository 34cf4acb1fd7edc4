# Usage errors exit 2 with a reason (the separator given is half of 中).
V="$TESTDATA/create-pretraining-data/tiny.vocab"
"$TOOLS/create-pretraining-data" -o out 2>&1 | head -n 1
"$TOOLS/create-pretraining-data" -v "$V" -o out --append-eos </dev/null 2>&1 | head -n 1
"$TOOLS/create-pretraining-data" -v "$V" -o out -T gpt2-bpe -W </dev/null 2>&1 | head -n 1
"$TOOLS/create-pretraining-data" -v "$V" -o out -f parquet </dev/null 2>&1 | head -n 1
"$TOOLS/create-pretraining-data" -v "$V" -o out -W --cn-splited \
    --cn-split-dimer "$(printf '\344\270')" </dev/null 2>&1 | head -n 1
"$TOOLS/create-pretraining-data" -v "$V" -o out --max-word-length 0 </dev/null
echo "exit $?"
ls

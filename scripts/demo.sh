#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: scripts/demo.sh BUILD DATA
# The quick-start demo (make demo): the main job end to end on the bundled
# sample: a vocab built with the seed's recipe (vocab-build all: character
# counts of the cmrc2018 contexts, sentencepiece English pieces of
# WikiText-2, the merge) -> raw documents -> segment (jieba words,
# sentences) -> json-pack (JSONL) -> tokenize (WordPiece ids) ->
# create-pretraining-data (sentences with whole-word marks into
# <prefix>.bin/.idx) -> dataset-inspect (counts, text, ERNIE training
# samples) -> train (a tiny ERNIE on the cmrc2018 contexts, then a tiny
# GPT on WikiText-2, on the CPU; checkpoints in build/demo/{ernie,gpt}) ->
# generate (a few tokens from the GPT, a [MASK] filled by the ERNIE).
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
SAMPLE=testdata/sample/sample.jsonl
CMRC=$DATA/zh/cmrc2018_dev.json
WIKI=$DATA/en/wikitext-2-raw/wiki.test.raw
OUT=$BUILD/demo
if [ ! -f "$CMRC" ] || [ ! -f "$WIKI" ]; then
    echo "demo: no shared data at '$DATA'; give the shared data folder:" \
        "make demo DATA=/path/to/shared/data" >&2
    exit 1
fi
mkdir -p "$OUT"
step() { printf '\n== %s\n' "$*"; }

step "vocab-build all: the seed's vocab recipe (chars of the cmrc2018 contexts, 17000 English pieces of WikiText-2, merge)"
python3 -c 'import json, sys
for a in json.load(open(sys.argv[1], encoding="utf-8"))["data"]:
    for p in a["paragraphs"]: print(p["context"])' "$CMRC" > "$OUT/zh.txt"
"$BUILD/vocab-build" all -q -E "$WIKI" -c "$OUT/counts.tsv" \
    -e "$OUT/eng.vocab" -o "$OUT/vocab.txt" "$OUT/zh.txt"
VOCAB=$OUT/vocab.txt
echo "$(wc -l < "$VOCAB") tokens; the most frequent characters and some English pieces:"
sed -n '6,15p' "$VOCAB" | tr '\n' ' '; echo
grep '^##' "$VOCAB" | sed -n '100,109p' | tr '\n' ' '; echo
UNK=$(($(grep -n -x -F '[UNK]' "$VOCAB" | cut -d: -f1) - 1))

step "input: $SAMPLE ($(wc -l < "$SAMPLE") documents, $(wc -c < "$SAMPLE") bytes)"
head -n 2 "$SAMPLE"

step "segment -f jsonl: jieba words, one sentence a line, blank line between documents"
"$BUILD/segment" -q -f jsonl -o "$OUT/sample.seg" "$SAMPLE"
head -n 8 "$OUT/sample.seg"

step "json-pack: one JSON document a line again, now segmented"
"$BUILD/json-pack" -q -o "$OUT/corpus.jsonl" "$OUT/sample.seg"
head -n 2 "$OUT/corpus.jsonl" | cut -c 1-160

step "tokenize -t: the WordPiece tokens of that vocab"
"$BUILD/tokenize" -q -t -k text -v "$VOCAB" "$OUT/corpus.jsonl" |
    tee "$OUT/corpus.tokens" | cut -c 1-160

step "tokenize: the ids"
"$BUILD/tokenize" -q -k text -v "$VOCAB" -o "$OUT/corpus.ids" "$OUT/corpus.jsonl"
cut -c 1-160 "$OUT/corpus.ids"

step "tokenize -d: back to text"
"$BUILD/tokenize" -q -d -v "$VOCAB" "$OUT/corpus.ids" | cut -c 1-160

step "create-pretraining-data -S --chinese -W --cn-splited: sentences, ## whole-word marks, .bin/.idx"
"$BUILD/create-pretraining-data" -q -v "$VOCAB" -S --chinese -W --cn-splited \
    -o "$OUT/sample" "$OUT/corpus.jsonl"
ls -l "$OUT/sample.bin" "$OUT/sample.idx"

step "dataset-inspect: the counts, and document 0 as text (## marks whole words)"
"$BUILD/dataset-inspect" "$OUT/sample"
"$BUILD/dataset-inspect" -v "$VOCAB" -d 0 "$OUT/sample" | cut -c 1-160

step "dataset-inspect --samples: ERNIE training samples (SOP pair, whole-word masks {label>shown}), as the trainer will read them"
"$BUILD/dataset-inspect" --samples 2 -l 64 -v "$VOCAB" "$OUT/sample"

step "train: a tiny ERNIE (MLM + SOP) on the cmrc2018 contexts (segment -> json-pack -> create-pretraining-data), 40 steps (on the GPU when there is one: --device auto): watch the loss fall"
"$BUILD/segment" -q -o "$OUT/zh.seg" "$OUT/zh.txt"
"$BUILD/json-pack" -q -o "$OUT/zh.jsonl" "$OUT/zh.seg"
"$BUILD/create-pretraining-data" -q -v "$VOCAB" -S --chinese -W --cn-splited \
    -o "$OUT/cmrc" "$OUT/zh.jsonl"
rm -rf "$OUT/ernie"
"$BUILD/train" --config configs/ernie-demo.json --tokenizer_name_or_path "$VOCAB" \
    --input_dir "$OUT/cmrc" --output_dir "$OUT/ernie" 2>&1 |
    grep -E "global step|valid step|test step|saved|data:"

step "train: a tiny GPT on WikiText-2 (vocab-build bpe -> create-pretraining-data -T gpt2-bpe), 40 steps"
"$BUILD/vocab-build" bpe -q -s 5000 -o "$OUT/bpe" "$WIKI"
# One document per paragraph (line) of WikiText.
tr -d '\r' < "$WIKI" | awk 'NF { print; print "" }' > "$OUT/wiki.txt"
"$BUILD/json-pack" -q -o "$OUT/wiki.jsonl" "$OUT/wiki.txt"
"$BUILD/create-pretraining-data" -q -T gpt2-bpe -e -v "$OUT/bpe" \
    -o "$OUT/wiki" "$OUT/wiki.jsonl"
rm -rf "$OUT/gpt"
"$BUILD/train" --config configs/gpt-demo.json --input_dir "$OUT/wiki" \
    --tokenizer_name_or_path "$OUT/bpe" --output_dir "$OUT/gpt" 2>&1 |
    grep -E "global step|valid step|test step|saved|data:"

step "generate: a few tokens from the tiny GPT (greedy search), then the tiny ERNIE fills a whole word masked (the top 5 tokens of each mask, the word they spell); after 40 steps both are mostly noise"
"$BUILD/generate" -q --no_stream -m "$OUT/gpt/model_40" \
    --decode_strategy greedy_search --max_dec_len 12 -p " The game" -p " In 1998 ,"
"$BUILD/generate" -q -m "$OUT/ernie/model_40" -p "北京是中国的[MASK][MASK]。"

n_ids=$(wc -w < "$OUT/corpus.ids")
n_unk=$(tr ' ' '\n' < "$OUT/corpus.ids" | grep -cx "$UNK" || true)
n_sent=$(grep -c . "$OUT/sample.seg" || true)
step "done: $(wc -l < "$OUT/corpus.ids") documents, $n_sent sentences, $n_ids tokens, $n_unk [UNK]; outputs in $OUT/"

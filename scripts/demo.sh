#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: scripts/demo.sh BUILD DATA
# The quick-start demo (make demo): the main job end to end on the bundled
# sample.  Today that is tokenization: JSONL documents -> WordPiece tokens
# and ids with the ERNIE 3.0 vocab -> text again.  Later stages (segment,
# json-pack, vocab-build, create-pretraining-data, train) join as they land.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
SAMPLE=testdata/sample/sample.jsonl
VOCAB=$DATA/vocab/ernie-3.0-base-zh.vocab.txt
TOK=$BUILD/tokenize
OUT=$BUILD/demo
if [ ! -f "$VOCAB" ]; then
    echo "demo: no vocab at '$VOCAB'; give the shared data folder:" \
        "make demo DATA=/path/to/shared/data" >&2
    exit 1
fi
mkdir -p "$OUT"

echo "== input: $SAMPLE ($(wc -l < "$SAMPLE") documents, $(wc -c < "$SAMPLE") bytes)"
head -n 2 "$SAMPLE"
echo
echo "== tokens (tokenize -t -k text -v ernie-3.0-base-zh.vocab.txt)"
"$TOK" -q -t -k text -v "$VOCAB" "$SAMPLE" | tee "$OUT/sample.tokens" |
    cut -c 1-160
echo
echo "== ids (tokenize -k text -o $OUT/sample.ids)"
"$TOK" -q -k text -v "$VOCAB" -o "$OUT/sample.ids" "$SAMPLE"
cut -c 1-160 "$OUT/sample.ids"
echo
echo "== back to text (tokenize -d)"
"$TOK" -q -d -v "$VOCAB" "$OUT/sample.ids" | cut -c 1-160
echo
n_ids=$(wc -w < "$OUT/sample.ids")
n_unk=$(tr ' ' '\n' < "$OUT/sample.ids" | grep -cx 39979 || true)
echo "== done: $(wc -l < "$OUT/sample.ids") documents, $n_ids tokens," \
    "$n_unk [UNK]; outputs in $OUT/"

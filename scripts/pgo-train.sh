#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: scripts/pgo-train.sh BUILD DATA
#        scripts/pgo-train.sh --compare BUILD_A BUILD_B DATA
# The training run of `make pgo`: the preprocessing jobs whose speed
# matters, on the PKU test text of the shared data (SIGHAN 2005, 0.5 MB of
# People's Daily news) with the ERNIE vocab, one worker each: segment
# (PaddleNLP's format, and words of plain text), json-pack, tokenize, and
# create-pretraining-data splitting sentences, with jieba's whole-word
# marks and on pre-segmented text.  Not the cmrc2018 contexts: the
# benchmarks time those, and a profile taken on the text it is then timed
# on would flatter it.  With --compare, the same jobs run with both builds
# and every output must be byte-identical ("pgo: N passed, N failed" at
# the end).
set -eu
compare=
if [ "${1:-}" = --compare ]; then
    compare=$2
    shift 2
fi
BUILD=${1:?usage: scripts/pgo-train.sh [--compare BUILD_A] BUILD DATA}
DATA=${2:-../shared/data}
TEXT=$DATA/zh/sighan2005-pku/pku_test.utf8
VOCAB=$DATA/vocab/ernie-3.0-base-zh.vocab.txt
for f in "$TEXT" "$VOCAB"; do
    [ -f "$f" ] || { echo "pgo-train: no '$f'; give the shared data folder: make pgo DATA=/path/to/shared/data" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Its lines (CRLF ends), four a document, as JSONL and as plain text.
python3 - "$TEXT" "$work" <<'PY'
import json, os, sys
src, work = sys.argv[1], sys.argv[2]
with open(src, encoding="utf-8", newline="") as f:
    lines = [s for ln in f if (s := ln.rstrip("\r\n"))]
with open(os.path.join(work, "zh.jsonl"), "w", encoding="utf-8") as f:
    for i in range(0, len(lines), 4):
        f.write(json.dumps({"text": "\n".join(lines[i:i + 4])},
                           ensure_ascii=False) + "\n")
with open(os.path.join(work, "zh.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
PY

# jobs B OUT: every job with the tools of build B, outputs under OUT.
jobs() {
    b=$1 o=$2
    mkdir -p "$o"
    "$b/segment" -q -j 1 -f jsonl -o "$o/zh.seg" "$work/zh.jsonl"
    "$b/segment" -q -j 1 -r none -o "$o/zh.words" "$work/zh.txt"
    "$b/json-pack" -q -o "$o/seg.jsonl" "$o/zh.seg"
    "$b/tokenize" -q -j 1 -k text -v "$VOCAB" -o "$o/zh.ids" "$work/zh.jsonl"
    "$b/create-pretraining-data" -q -j 1 -v "$VOCAB" -S --chinese \
        -o "$o/sentences" "$work/zh.jsonl"
    "$b/create-pretraining-data" -q -j 1 -v "$VOCAB" -S --chinese -W \
        -o "$o/whole-word" "$work/zh.jsonl"
    "$b/create-pretraining-data" -q -j 1 -v "$VOCAB" -S --chinese -W \
        --cn-splited -o "$o/pre-segmented" "$o/seg.jsonl"
}

jobs "$BUILD" "$work/b"
[ -n "$compare" ] || exit 0
jobs "$compare" "$work/a"
pass=0 fail=0
for f in zh.seg zh.words seg.jsonl zh.ids sentences.bin sentences.idx \
    whole-word.bin whole-word.idx pre-segmented.bin pre-segmented.idx; do
    if cmp -s "$work/a/$f" "$work/b/$f"; then
        echo "ok   $f identical ($(wc -c < "$work/a/$f") bytes)"
        pass=$((pass + 1))
    else
        echo "FAIL $f differs between $compare and $BUILD"
        fail=$((fail + 1))
    fi
done
echo "pgo: $pass passed, $fail failed, 0 skipped"
[ "$fail" -eq 0 ]

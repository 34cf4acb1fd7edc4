#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/vocab_build_bpe.sh [BUILD] [DATA]
# Time `vocab-build bpe` against HF tokenizers' ByteLevelBPETokenizer
# training (vocab_size 30000, min_frequency 2, <|endoftext|>) at 1 and 2
# threads (RAYON_NUM_THREADS for HF), and print a Markdown table of wall
# time and peak RSS for BENCHMARKS.md.  Both are timed as whole processes
# (HF's includes starting Python, about 0.1 s) with /usr/bin/time -f
# '%e %M', best of 3; the last column says whether ours wrote the same
# vocab.json and merges.txt as HF.  Inputs: WikiText-2 test repeated to
# about 10 MB, and the cmrc2018 contexts (dev + trial) repeated to about
# 5 MB.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
. bench/lib.sh
bench_setup "$BUILD/vocab-build" bench-venv
VB=$BUILD/vocab-build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

$VENV/bin/python - "$DATA" "$work" <<'PY'
import json, sys, os
data, work = sys.argv[1], sys.argv[2]
ctx = []
for f in ("zh/cmrc2018_dev.json", "zh/cmrc2018_trial.json"):
    d = json.load(open(os.path.join(data, f), encoding="utf-8"))
    ctx += [p["context"].replace("\n", " ")
            for a in d["data"] for p in a["paragraphs"]]
zh = "\n".join(ctx) + "\n"
en = open(os.path.join(data, "en/wikitext-2-raw/wiki.test.raw"),
          encoding="utf-8").read()
for name, text, size in (("en", en, 10e6), ("zh", zh, 5e6)):
    n = max(1, round(size / len(text.encode())))
    with open(os.path.join(work, name + ".txt"), "w", encoding="utf-8") as f:
        f.write(text * n)
PY
cat > "$work/hf.py" <<'PY'
import sys
from tokenizers import ByteLevelBPETokenizer
tok = ByteLevelBPETokenizer()
tok.train(sys.argv[2:], vocab_size=30000, min_frequency=2,
          special_tokens=["<|endoftext|>"], show_progress=False)
tok.save_model(sys.argv[1])
PY

# best3 OUT CMD...: "seconds KB" of the fastest of 3 runs.
best3() {
    out=$1
    shift
    best=
    for _ in 1 2 3; do
        rm -rf "$out" && mkdir -p "$out"
        /usr/bin/time -f '%e %M' -o "$work/time" "$@" > /dev/null 2>&1
        best=$(echo "$(cat "$work/time") $best" | awk '{
            if ($3 == "" || $1 < $3) print $1, $2; else print $3, $4 }')
    done
    echo "$best"
}

echo "| input | trainer | threads | seconds | peak RSS | vs HF, same threads | same files as HF |"
echo "|---|---|---|---|---|---|---|"
for lang in en zh; do
    in=$work/$lang.txt
    mb=$(wc -c < "$in" | awk '{ printf "%.1f MB", $1 / 1e6 }')
    for j in 1 2; do
        hf=$(RAYON_NUM_THREADS=$j best3 "$work/hf$j" \
            $VENV/bin/python "$work/hf.py" "$work/hf$j" "$in")
        us=$(best3 "$work/us$j" "$VB" bpe -q -j $j -o "$work/us$j" "$in")
        same=no
        cmp -s "$work/hf$j/vocab.json" "$work/us$j/vocab.json" &&
            cmp -s "$work/hf$j/merges.txt" "$work/us$j/merges.txt" && same=yes
        set -- $hf
        hs=$1 hk=$2
        set -- $us
        echo "| $lang $mb | ours (vocab-build bpe -j $j) | $j | $1 | $(($2 / 1024)) MB | $(echo "$hs $1" | awk '{ printf "%.1fx", $1 / $2 }') | $same |"
        echo "| $lang $mb | HF ByteLevelBPETokenizer | $j | $hs | $((hk / 1024)) MB | 1.0x | |"
    done
done

#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/segment.sh [BUILD] [DATA]   (or: make bench)
# Time `segment` against jieba (Debian's python3-jieba), jieba-rs (rjieba)
# and cppjieba on the same inputs, one core and two, and print a Markdown
# table of MB/s of input.  Inputs: zh = the cmrc2018 contexts repeated to
# about 5 MB, one paragraph a line; mixed = those paragraphs interleaved
# with WikiText-2's lines (24 % Han characters, like mixed technical text),
# repeated to about 5 MB.  Ours runs as a whole process (model load
# included; the best of at least 5 runs and one second of runs, see
# bench/lib.sh) with `-r none` (words of each line, no sentence
# rules); the peers in Python after loading, over the list of lines (best
# of 3).  Ours also on zh four times over (zh-x4, 19 MB), where start-up
# weighs little, its MB/s per core set against jieba's on zh.  Also: the
# model load time, peak memory at x1 and x4 input, and
# how many lines each peer segments exactly like Python jieba.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
. bench/lib.sh
bench_setup "$BUILD/segment" "$BUILD/jieba.model" bench-venv
SEG=$BUILD/segment
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$DATA" "$work" <<'PY'
import json, os, sys
data, work = sys.argv[1], sys.argv[2]
ctx = []
for f in ("zh/cmrc2018_dev.json", "zh/cmrc2018_trial.json"):
    d = json.load(open(os.path.join(data, f), encoding="utf-8"))
    ctx += [p["context"].replace("\n", " ")
            for a in d["data"] for p in a["paragraphs"]]
text = "\n".join(ctx) + "\n"
n = max(1, round(5e6 / len(text.encode())))
open(os.path.join(work, "zh.txt"), "w", encoding="utf-8").write(text * n)
open(os.path.join(work, "zh-x4.txt"), "w", encoding="utf-8").write(text * 4 * n)
wiki = open(os.path.join(data, "en/wikitext-2-raw/wiki.test.raw"),
            encoding="utf-8").read().split("\n")
mixed = []
for i in range(max(len(ctx), len(wiki))):
    mixed += ctx[i:i + 1] + wiki[i:i + 1]
text = "\n".join(mixed) + "\n"
n = max(1, round(5e6 / len(text.encode())))
open(os.path.join(work, "mixed.txt"), "w", encoding="utf-8").write(text * n)
PY

echo "| input | segmenter | threads | seconds | MB/s | MB/s per core | per core vs jieba | lines identical to jieba |"
echo "|---|---|---|---|---|---|---|---|"
for lang in zh mixed; do
    in=$work/$lang.txt
    size=$(wc -c < "$in")
    # Our output must be jieba's: compare the words of every line once.
    "$SEG" -q -j 2 -r none "$in" | awk 'NF || length' > "$work/ours.txt"
    /usr/bin/python3 -c '
import sys, logging, jieba
jieba.setLogLevel(logging.ERROR)
for ln in open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]:
    if ln: print(" ".join(jieba.cut(ln)))
' "$in" > "$work/ref.txt"
    if cmp -s "$work/ours.txt" "$work/ref.txt"; then same=all; else same=DIFFERENT; fi
    jieba_t=$(/usr/bin/python3 bench/segment_peers.py jieba "$in" 1 | awk '{print $2}')
    jieba_mbs=$(echo "$size $jieba_t" | awk '{ printf "%.6f", $1 / 1e6 / $2 }')
    row() { # name threads seconds identical
        r=$(echo "$size $3" | awk '{ printf "%.2f", $1 / 1e6 / $2 }')
        per=$(echo "$r $2" | awk '{ printf "%.2f", $1 / $2 }')
        x=$(echo "$per $jieba_mbs" | awk '{ printf "%.1fx", $1 / $2 }')
        echo "| $lang $(echo "$size" | awk '{printf "%.1f MB", $1/1e6}') | $1 | $2 | $3 | $r | $per | $x | $4 |"
    }
    for j in 1 2; do
        row "ours (segment -r none -j $j)" $j "$(best_time "$SEG" -q -j $j -r none "$in")" "$same"
    done
    # The same text four times over: a run long enough that the start-up
    # (model load, first chunk) weighs little, as on a real corpus; the
    # ratio is to jieba's MB/s on the input above.
    if [ "$lang" = zh ]; then
        size1=$size
        size=$(wc -c < "$work/zh-x4.txt") lang=zh-x4
        for j in 1 2; do
            row "ours (segment -r none -j $j)" $j "$(best_time "$SEG" -q -j $j -r none "$work/zh-x4.txt")" "$same"
        done
        size=$size1 lang=zh
    fi
    row "jieba 0.42.1 (Python, HMM)" 1 "$jieba_t" all
    for peer in rjieba cppjieba; do
        set -- $($VENV/bin/python bench/segment_peers.py $peer "$in")
        row "$peer" 1 "$2" "$3 of $4"
    done
done
echo
t=$(best_time "$SEG" -q -j 1 -r none /dev/null)
echo "Model load (segment on empty input, whole process): $t s"
for f in zh.txt zh-x4.txt; do
    /usr/bin/time -f "Peak memory, $f $(wc -c < "$work/$f" | awk '{printf "%.1f MB", $1/1e6}'), -j 2: %M KB" \
        "$SEG" -q -j 2 -r none "$work/$f" 2>&1 > /dev/null
done

#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/segment_lac.sh [BUILD] [DATA]   (or: make bench)
# Time `segment --engine lac` against Baidu LAC 2.1.2 itself (paddlepaddle
# 1.8.5, in the oracle's venv build/lac-venv) on the same sentences, in
# both networks (seg, lac), one core and two, and print a Markdown table
# of MB/s of input (wall clock), MB per CPU second (user + system: a run's
# CPU time is what a core does, and a shared machine's load disturbs it
# less than the wall clock), the ratio per core to LAC (MB per CPU second
# of ours over LAC's), peak memory and how many sentences came out
# identical.  Input: the cmrc2018
# contexts cut into sentences by PaddleNLP's words_segmentation.py rules,
# one a line (LAC's texts, as the seed feeds them), about 1.6 MB; LAC runs
# on its first 1,500 sentences (LAC.run(sentence) each, model loaded
# first; two threads = two processes on the two halves, as the seed's
# multiprocessing pool does), ours on all of them as a whole process (model
# load included; best of at least 5 runs and one second, bench/lib.sh)
# with `-r none` (each line one text), and (seg) on the text four times
# over.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
LAC_VENV=${LAC_VENV:-build/lac-venv}
. bench/lib.sh
bench_setup "$BUILD/segment" "$BUILD/lac.model" lac-venv
SEG=$BUILD/segment
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$DATA" "$work" <<'PY'
import json, os, re, sys
data, work = sys.argv[1], sys.argv[2]
ctx = []
for f in ("zh/cmrc2018_dev.json", "zh/cmrc2018_trial.json"):
    d = json.load(open(os.path.join(data, f), encoding="utf-8"))
    ctx += [p["context"] for a in d["data"] for p in a["paragraphs"]]
sents = []
for text in ctx:  # words_segmentation.py's rules
    for c in ["\n", "。", "?", "？", " ", ";", "；", "！", "!"]:
        text = re.sub("[" + c + "]+[ ]*", c, text)
    for c in ["。", "?", "？", ";", "；", "!", "！"]:
        text = text.replace(c, c + "\n")
    sents += [s for s in text.split("\n") if s and not s.isspace()]
open(os.path.join(work, "zh.txt"), "w", encoding="utf-8").write(
    "\n".join(sents) + "\n")
open(os.path.join(work, "zh-x4.txt"), "w", encoding="utf-8").write(
    ("\n".join(sents) + "\n") * 4)
n = 1500
for name, part in (("sub", sents[:n]), ("half1", sents[:n // 2]),
                   ("half2", sents[n // 2:n])):
    open(os.path.join(work, name + ".txt"), "w", encoding="utf-8").write(
        "\n".join(part) + "\n")
PY

# LAC on FILE in MODE: prints "wall cpu" seconds after the model loads, and
# writes its words, space-joined, a sentence a line, to OUT.
lac_run() { # mode file out
    "$LAC_VENV/bin/python" - "$1" "$2" "$3" <<'PY' 2>/dev/null
import os, resource, sys, time, warnings
warnings.filterwarnings("ignore")
saved, sys.stdout = sys.stdout, sys.stderr
from LAC import LAC
mode, path, out = sys.argv[1:]
lac = LAC(mode=mode)
sys.stdout = saved
lines = open(path, encoding="utf-8").read().split("\n")[:-1]
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.time()
res = [lac.run(s) for s in lines]
t1 = time.time()
r1 = resource.getrusage(resource.RUSAGE_SELF)
with open(out, "w", encoding="utf-8") as f:
    for r in res:
        f.write(" ".join(r if mode == "seg" else r[0]) + "\n")
print("%.3f %.3f" % (t1 - t0, r1.ru_utime - r0.ru_utime +
                     r1.ru_stime - r0.ru_stime))
PY
}

size() { wc -c < "$1"; }
mbs() { echo "$1 $2" | awk '{ printf "%.3f", $1 / 1e6 / $2 }'; }
# cpu_time CMD...: the least CPU time (user + system) of 3 runs, then the
# peak resident memory in MB: a shared machine's other load slows the wall
# clock more than it does the CPU time of a run.
cpu_time() {
    for i in 1 2 3; do
        /usr/bin/time -f '%U %S %M' "$@" 2>&1 >/dev/null | tail -n 1
    done | awk '{ c = $1 + $2; if (b == "" || c < b) b = c; if ($3 > m) m = $3 }
        END { printf "%.3f %.0f\n", b, m / 1024 }'
}

echo "| input | segmenter | network | threads | seconds (wall) | MB/s | CPU seconds | MB per CPU second | per core vs LAC | peak memory | sentences identical to LAC |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for mode in seg lac; do
    sub=$work/sub.txt
    set -- $(lac_run $mode "$sub" "$work/lac.$mode")
    lac_t=$1 lac_cpu=$2
    lac_mbs=$(mbs "$(size "$sub")" "$lac_t")
    lac_cpu_mbs=$(mbs "$(size "$sub")" "$lac_cpu")
    n_sub=$(size "$sub" | awk '{ printf "%.2f MB", $1 / 1e6 }')
    echo "| $n_sub | LAC 2.1.2 (Paddle 1.8.5) | $mode | 1 | $lac_t | $lac_mbs | $lac_cpu | $lac_cpu_mbs | 1.0x | | |"
    # Two processes, a half each, at once.
    t0=$(date +%s.%N)
    lac_run $mode "$work/half1.txt" "$work/h1" > "$work/c1" &
    lac_run $mode "$work/half2.txt" "$work/h2" > "$work/c2" &
    wait
    t1=$(date +%s.%N)
    lac2_t=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
    lac2_cpu=$(cat "$work/c1" "$work/c2" | awk '{ s += $2 } END { printf "%.3f", s }')
    echo "| $n_sub | LAC 2.1.2, two processes | $mode | 2 | $lac2_t | $(mbs "$(size "$sub")" "$lac2_t") | $lac2_cpu | $(mbs "$(size "$sub")" "$lac2_cpu") | $(echo "$(mbs "$(size "$sub")" "$lac2_cpu") $lac_cpu_mbs" | awk '{ printf "%.2fx", $1 / $2 }') | | |"
    "$SEG" -q -j 2 -r none --lac-mode $mode "$sub" | awk 'NF || length' > "$work/ours.$mode"
    same=$(paste -d '\n' "$work/ours.$mode" "$work/lac.$mode" |
        awk 'NR % 2 { a = $0; next } { n++; s += a == $0 } END { print s " of " n }')
    inputs=$work/zh.txt
    [ $mode = seg ] && inputs="$inputs $work/zh-x4.txt"
    for in in $inputs; do
        sz=$(size "$in")
        for j in 1 2; do
            t=$(best_time "$SEG" -q -j $j -r none --lac-mode $mode "$in")
            set -- $(cpu_time "$SEG" -q -j $j -r none --lac-mode $mode "$in")
            cpu=$1 mem=$2
            x=$(echo "$(mbs "$sz" "$cpu") $lac_cpu_mbs" | awk '{ printf "%.1fx", $1 / $2 }')
            echo "| $(echo "$sz" | awk '{printf "%.1f MB", $1/1e6}') | ours (segment --lac-mode $mode -r none -j $j) | $mode | $j | $t | $(mbs "$sz" "$t") | $cpu | $(mbs "$sz" "$cpu") | $x | $mem MB | $( [ "$in" = "$work/zh.txt" ] && [ $j = 1 ] && echo "$same" ) |"
        done
    done
done
echo
t=$(best_time "$SEG" -q -j 1 -r none --lac-mode lac /dev/null)
echo "Model load (segment --lac-mode lac on empty input, whole process): $t s"
t=$(best_time "$SEG" -q -j 1 -r none --lac-mode seg /dev/null)
echo "Model load (segment --lac-mode seg on empty input, whole process): $t s"

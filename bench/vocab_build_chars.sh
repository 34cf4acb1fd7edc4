#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/vocab_build_chars.sh [BUILD] [DATA]
# Time `vocab-build chars` against the seed's gen_char.py counting, done in
# Python as the script does it (read lines in text mode, count every
# character into a defaultdict(int); without its periodic rewrite of
# char_dict.txt, which only makes it slower), and print a Markdown table:
# seconds (best of 3, whole process), MB/s of input, MB/s per core, the
# per-core ratio to Python, and peak RSS (GNU time).  Input: the cmrc2018
# contexts, the PKU test text (CRLF) and WikiText-2 test, concatenated and
# repeated to about 50 MB (ours reads it 4 times per run, for a time well
# above time(1)'s resolution).  Our counts are checked against Python's first.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
. bench/lib.sh
bench_setup "$BUILD/vocab-build"
VB=$BUILD/vocab-build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$DATA" "$work" <<'PY'
import json, os, sys
data, work = sys.argv[1], sys.argv[2]
d = json.load(open(os.path.join(data, "zh/cmrc2018_dev.json"),
                   encoding="utf-8"))
parts = ["".join(p["context"] + "\n" for a in d["data"]
                 for p in a["paragraphs"]).encode()]
for f in ("zh/sighan2005-pku/pku_test.utf8",
          "en/wikitext-2-raw/wiki.test.raw"):
    parts.append(open(os.path.join(data, f), "rb").read())
block = b"".join(parts)
n = max(1, round(50e6 / len(block)))
open(os.path.join(work, "corpus.txt"), "wb").write(block * n)
PY

cat > "$work/gen_char.py" <<'PY'
import sys
from collections import defaultdict
char_dict = defaultdict(int)
with open(sys.argv[1], "r") as f:
    line = f.readline()
    while line:
        for char in line:
            char_dict[char] += 1
        line = f.readline()
res = sorted(char_dict.items(), key=lambda x: (-x[1], ord(x[0])))
esc = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}
out = sys.stdout
for k, v in res:
    c = ord(k)
    if k in esc:
        k = esc[k]
    elif c < 0x20 or 0x7F <= c <= 0x9F or c in (0x2028, 0x2029, 0xFEFF):
        k = "\\u%04X" % c
    out.write("%s\t%d\n" % (k, v))
PY

in=$work/corpus.txt
size=$(wc -c < "$in")
export LC_ALL=C.UTF-8 PYTHONIOENCODING=utf-8
"$VB" chars -q -j 2 "$in" > "$work/ours.tsv"
/usr/bin/python3 "$work/gen_char.py" "$in" > "$work/ref.tsv"
if cmp -s "$work/ours.tsv" "$work/ref.tsv"; then same=identical; else same=DIFFERENT; fi

# run3 CMD...: "best_seconds peak_kb" over 3 runs.
run3() {
    best= peak=0
    for _ in 1 2 3; do
        /usr/bin/time -f '%e %M' -o "$work/t" "$@" > /dev/null
        set -- "$@"
        read -r t m < "$work/t"
        best=$(echo "$t $best" | awk '{ if ($2 == "" || $1 < $2) print $1; else print $2 }')
        [ "$m" -gt "$peak" ] && peak=$m
    done
    echo "$best $peak"
}

set -- $(run3 /usr/bin/python3 "$work/gen_char.py" "$in")
py_t=$1 py_m=$2
echo "Input: $(echo "$size" | awk '{printf "%.1f MB", $1/1e6}') (cmrc2018 + PKU + WikiText-2, repeated); counts $same to Python's."
echo
echo "| counter | threads | seconds | MB/s | MB/s per core | per core vs Python | peak RSS |"
echo "|---|---|---|---|---|---|---|"
row() { # name threads seconds kb
    r=$(echo "$size $3" | awk '{ printf "%.1f", $1 / 1e6 / $2 }')
    per=$(echo "$r $2" | awk '{ printf "%.1f", $1 / $2 }')
    x=$(echo "$py_t $3 $2" | awk '{ printf "%.0fx", ($1 / $2) / $3 }')
    echo "| $1 | $2 | $3 | $r | $per | $x | $(echo "$4" | awk '{printf "%.1f MB", $1/1024}') |"
}
# Ours reads the input 4 times in one run, so its time is well above the
# 10 ms resolution of time(1); the row shows the time per 50 MB.
for j in 1 2; do
    set -- $(run3 "$VB" chars -q -j $j "$in" "$in" "$in" "$in")
    row "ours (vocab-build chars -j $j)" $j "$(echo "$1" | awk '{ printf "%.3f", $1 / 4 }')" "$2"
done
row "gen_char.py counting (Python $(/usr/bin/python3 -c 'import sys; print(sys.version.split()[0])'))" 1 "$py_t" "$py_m"

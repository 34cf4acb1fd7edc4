#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/vocab_build_english.sh [BUILD] [DATA]
# `vocab-build english` against Debian's spm_train on the same inputs, 17,000
# pieces.  Both train with the same libsentencepiece, so the figures are
# the overhead of our front end (none is expected): wall time and peak RSS
# from /usr/bin/time -f '%e %M', best wall time of 3 runs each.  Inputs:
# WikiText-2's test split (1.3 MB) and every distinct
# /usr/share/doc/*/copyright of this machine (the largest English text its
# Debian packages give without rendering, about 5 MB).  Prints a Markdown
# table and checks that both vocabs are the same.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
. bench/lib.sh
bench_setup "$BUILD/vocab-build"
VB=$(cd "$(dirname "$BUILD/vocab-build")" && pwd)/vocab-build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work/docs.txt" <<'PY'
import glob, hashlib, sys
seen = set()
with open(sys.argv[1], "wb") as out:
    for p in sorted(glob.glob("/usr/share/doc/*/copyright")):
        try:
            b = open(p, "rb").read()
        except OSError:
            continue
        h = hashlib.sha256(b).digest()
        if h not in seen:
            seen.add(h)
            out.write(b if b.endswith(b"\n") else b + b"\n")
PY
cp "$DATA/en/wikitext-2-raw/wiki.test.raw" "$work/wiki.txt"

# run NAME DIR CMD...: best "%e %M" of 3 runs of CMD in DIR.
run() {
    dir=$2
    shift 2
    best=
    for _ in 1 2 3; do
        (cd "$dir" && /usr/bin/time -f '%e %M' -o "$work/t" "$@" \
            > /dev/null 2>&1) || true
        r=$(cat "$work/t")
        best=$(echo "$r $best" | awk '{ if ($3 == "" || $1 < $3)
            print $1, $2; else print $3, $4 }')
    done
    echo "$best"
}

echo "| input | MB | tool | threads | wall s | peak RSS MB |"
echo "|---|---|---|---|---|---|"
for f in wiki docs; do
    in=$work/$f.txt
    mb=$(awk -v n="$(wc -c < "$in")" 'BEGIN { printf "%.1f", n / 1e6 }')
    for j in 1 16; do
        mkdir -p "$work/spm" "$work/ours"
        set -- $(run spm "$work/spm" /usr/bin/spm_train \
            --input="$in" --model_prefix=eng --vocab_size=17000 \
            --model_type=bpe --num_threads=$j --minloglevel=2)
        echo "| $f | $mb | spm_train | $j | $1 | $(($2 / 1024)) |"
        set -- $(run ours "$work/ours" "$VB" english -q -j $j -o eng.vocab \
            "$in")
        echo "| $f | $mb | vocab-build english | $j | $1 | $(($2 / 1024)) |"
        cmp -s "$work/spm/eng.vocab" "$work/ours/eng.vocab" ||
            echo "| $f | vocabs DIFFER |"
    done
done

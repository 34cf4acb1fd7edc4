#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/tokenize.sh [BUILD] [DATA]   (or: make bench)
# Time `tokenize` against its peers on the same inputs, Chinese and English
# separately, and print a Markdown table of MB/s of input (and MB/s per
# core) for BENCHMARKS.md.  Ours is timed as a whole process (vocab load
# included; the best of at least 5 runs and one second of runs, see
# bench/lib.sh); the Python peers in process after loading (best of
# 3).  Inputs: the cmrc2018 contexts and WikiText-2 test of the shared
# data, each repeated to about 5 MB.  GPT-2 byte-level BPE (-F gpt2-bpe)
# is timed on the English input against HF's ByteLevelBPETokenizer, with
# a 30k model that HF trains on WikiText-2 test.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
. bench/lib.sh
bench_setup "$BUILD/tokenize" bench-venv
TOK=$BUILD/tokenize
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
for name, text in (("zh", zh), ("en", en)):
    n = max(1, round(5e6 / len(text.encode())))
    with open(os.path.join(work, name + ".txt"), "w", encoding="utf-8") as f:
        f.write(text * n)
    with open(os.path.join(work, name + "-x4.txt"), "w",
              encoding="utf-8") as f:
        f.write(text * n * 4)
os.makedirs(os.path.join(work, "vocab"))
with open(os.path.join(data, "vocab/bert-base-chinese.vocab.txt"),
          encoding="utf-8") as s, \
        open(os.path.join(work, "vocab/vocab.txt"), "w",
             encoding="utf-8") as d:
    d.write(s.read())
from tokenizers import ByteLevelBPETokenizer
bpe = ByteLevelBPETokenizer()
bpe.train([os.path.join(data, "en/wikitext-2-raw/wiki.test.raw")],
          vocab_size=30000, min_frequency=2,
          special_tokens=["<|endoftext|>"], show_progress=False)
os.makedirs(os.path.join(work, "bpe"))
bpe.save_model(os.path.join(work, "bpe"))
PY
VOCAB=$work/vocab/vocab.txt

mbs() { echo "$1 $2" | awk '{ printf "%.2f", $1 / 1e6 / $2 }'; }

echo "| input | tokenizer | threads | seconds | MB/s | MB/s per core | vs HF 1 thread |"
echo "|---|---|---|---|---|---|---|"
for lang in zh en; do
    in=$work/$lang.txt
    size=$(wc -c < "$in")
    hf1=$($VENV/bin/python bench/tokenize_peers.py hf1 "$work/vocab" "$in" | awk '{print $2}')
    row() { # name threads seconds
        r=$(mbs "$size" "$3")
        per=$(echo "$r $2" | awk '{ printf "%.2f", $1 / $2 }')
        x=$(echo "$hf1 $3 $2" | awk '{ printf "%.1fx", ($1 / $2) / $3 }')
        echo "| $lang $(echo "$size" | awk '{printf "%.1f MB", $1/1e6}') | $1 | $2 | $3 | $r | $per | $x |"
    }
    for j in 1 2; do
        row "ours (tokenize -j $j)" $j "$(best_time "$TOK" -q -j $j -v "$VOCAB" "$in")"
    done
    row "HF tokenizers BertWordPiece" 1 "$hf1"
    row "HF tokenizers BertWordPiece" 2 "$($VENV/bin/python bench/tokenize_peers.py hf2 "$work/vocab" "$in" | awk '{print $2}')"
    row "PaddleNLP ErnieTokenizer" 1 "$($VENV/bin/python bench/tokenize_peers.py paddle "$work/vocab" "$in" 2>/dev/null | awk '{print $2}')"
    row "transformers BertTokenizer (Python)" 1 "$($VENV/bin/python bench/tokenize_peers.py bert "$work/vocab" "$in" 2>/dev/null | awk '{print $2}')"
done
echo
echo "GPT-2 byte-level BPE ($(grep -c . "$work/bpe/merges.txt") merge lines, trained by HF on WikiText-2 test):"
echo
echo "| input | tokenizer | threads | seconds | MB/s | MB/s per core | vs HF 1 thread |"
echo "|---|---|---|---|---|---|---|"
in=$work/en.txt
size=$(wc -c < "$in")
lang=en
hf1=$($VENV/bin/python bench/tokenize_peers.py bpe1 "$work/bpe" "$in" | awk '{print $2}')
for j in 1 2; do
    row "ours (tokenize -F gpt2-bpe -j $j)" $j "$(best_time "$TOK" -q -j $j -F gpt2-bpe -v "$work/bpe" "$in")"
done
row "HF tokenizers ByteLevelBPETokenizer" 1 "$hf1"
row "HF tokenizers ByteLevelBPETokenizer" 2 "$($VENV/bin/python bench/tokenize_peers.py bpe2 "$work/bpe" "$in" | awk '{print $2}')"
echo
echo "Peak memory of ours (-j 2), input x1 vs x4 (streaming: it should not grow):"
for lang in zh en; do
    for f in $lang.txt $lang-x4.txt; do
        /usr/bin/time -f "  $f $(wc -c < "$work/$f" | awk '{printf "%.1f MB", $1/1e6}'): %M KB max RSS" \
            "$TOK" -q -j 2 -v "$VOCAB" "$work/$f" 2>&1 > /dev/null
    done
done

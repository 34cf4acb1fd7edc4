#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/samples.sh [BUILD] [DATA]
# Time libdata's training-sample layer against PaddleNLP's Python path and
# print Markdown tables for BENCHMARKS.md.  Everything runs on one core.
# Corpus: the cmrc2018 contexts (four paragraphs a document), tokenized
# once by create-pretraining-data -S --chinese with the ernie-3.0-base-zh
# vocab, then its documents written over and over (tests/drivers/drv_bench
# repeat, which copies ids through libdata's writer: much quicker than
# tokenizing the repeated JSONL) until it holds at least 100 M tokens; a
# synthetic corpus, real text repeated.
#   mapping: ds_mapping_build vs tool_helpers.helpers.build_mapping on the
#            same doc_idx/sizes, L=509, short_seq_prob 0.1, seed 1234,
#            max_num_samples 10M (MNS=), best of 3 each; the row counts
#            must agree (the rows themselves: tests/conformance).
#   ERNIE:   ds_ernie_sample_build over the mapping at max_seq_len 512 vs
#            the Python transcription of build_training_sample in
#            tests/conformance/samples_ernie_run.py (the stand-in for
#            PaddleNLP's ernie_dataset.py, which is not in its pip package;
#            numpy RandomState, same draws), tokens read through PaddleNLP's
#            make_dataset as ErnieDataset does.
#   GPT:     ds_gpt_sample vs paddlenlp.data.causal_dataset.GPTDataset
#            .__getitem__ at seq_len 1024 (index building not timed).
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
. bench/lib.sh
bench_setup "$BUILD/create-pretraining-data" "$BUILD/tests/drv_bench" bench-venv
VOCAB=$DATA/vocab/ernie-3.0-base-zh.vocab.txt
DRV=$BUILD/tests/drv_bench
MNS=${MNS:-10000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

$VENV/bin/python - "$DATA" "$work" <<'PY'
import json, os, sys
sys.path.insert(0, "tests/conformance")
from cpd_run import cmrc_documents
data, work = sys.argv[1], sys.argv[2]
with open(os.path.join(work, "cmrc.jsonl"), "w", encoding="utf-8") as f:
    for t in cmrc_documents(data):
        f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
PY
"$BUILD/create-pretraining-data" -q -v "$VOCAB" -S --chinese \
    -o "$work/cmrc" "$work/cmrc.jsonl"
corpus=$("$DRV" repeat "$work/cmrc" "$work/big" 100000000)

# C side.
map_c=$("$DRV" mapping "$work/big" "$MNS" 509 0.1 1234)
ernie_c=$("$DRV" ernie "$work/big" "$VOCAB" 200000 2> /dev/null)
gpt_c=$("$DRV" gpt "$work/big" 200000 1024 2> /dev/null)
# What this machine allows at least: a GPT window's copy alone (random
# places of the same mapped tokens, prefetched, no index) and the
# mapping's shuffle alone (the same number of 12-byte rows, prefetched
# partners, a xorshift generator instead of MT19937-64).
win_floor=$("$DRV" window-floor "$work/big" 200000 1024 2> /dev/null)
shuf_floor=$("$DRV" shuffle-floor "$(echo "$map_c" | awk '{print $2}')" 2> /dev/null)

# Python side: "seconds count" per line: mapping, ERNIE, GPT.
py=$($VENV/bin/python - "$work/big" "$VOCAB" "$MNS" "$work" <<'PY'
import contextlib, io, os, sys, time
import numpy as np
sys.path.insert(0, "tests/conformance")
from samples_ernie_run import Vocab, reference
from samples_gpt_run import quiet
prefix, vpath, mns, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with quiet():
    import logging
    logging.disable(logging.WARNING)
    from paddlenlp.data import causal_dataset as cd
    from paddlenlp.data.indexed_dataset import make_dataset
    from tool_helpers import helpers
    ds = make_dataset(prefix, "mmap", True)
docs = np.asarray(ds.doc_idx, np.int64)
sizes = np.asarray(ds.sizes, np.int32)
best = 1e30
for _ in range(3):
    with quiet():
        t0 = time.perf_counter()
        m = helpers.build_mapping(docs, sizes, 2**31 - 2, mns, 509, 0.1, 1234,
                                  False, 2)
        best = min(best, time.perf_counter() - t0)
print("%.6f %d" % (best, m.shape[0]))
# ERNIE: the transcription of build_training_sample on mapping rows 0..N-1.
with open(vpath, encoding="utf-8") as f:
    base = [ln.rstrip("\n").split("\t")[0] for ln in f]
added, have = [], set(base)
for t in base:
    if len(t) == 1 and "\u4e00" <= t <= "\u9fa5" and "##" + t not in have:
        added.append("##" + t)
voc = Vocab(base + added, len(base))
o = dict(seed=1234, mlm=0.15, max_ngrams=3, favor_longer=False,
         binary_head=True, cls=base.index("[CLS]"), sep=base.index("[SEP]"),
         mask=base.index("[MASK]"), pad=base.index("[PAD]"))
n = 1000
t0 = time.perf_counter()
for i in range(n):
    start, end, tgt = (int(x) for x in m[i])
    sample = [list(ds[j]) for j in range(start, end)]
    reference(sample, tgt, 512, voc, o, i)
print("%.6f %d" % (time.perf_counter() - t0, n))
# GPT: GPTDataset.__getitem__ (its index arrays are built first, untimed).
with quiet():
    g = cd.GPTDataset("train", prefix, np.arange(0, sizes.shape[0], 1, np.int32),
                      ds, "100,0,0", 200000, 1024, 1234,
                      data_cache_path=os.path.join(work, "gpt-cache"))
n = 20000
t0 = time.perf_counter()
for i in range(n):
    g[i]
print("%.6f %d" % (time.perf_counter() - t0, n))
PY
)

echo "Corpus: cmrc2018 contexts repeated, $corpus (ernie-3.0-base-zh ids)."
echo
echo "| job | ours | PaddleNLP path | ours vs PaddleNLP | goal |"
echo "|---|---|---|---|---|"
echo "$map_c $(echo "$py" | sed -n 1p)" | awk -v mns="$MNS" '{
    if ($2 != $4) { print "bench: mapping rows differ" > "/dev/stderr"; exit 1 }
    printf "| samples mapping, %d rows (max_num_samples %d, L 509) | %.3f s | %.3f s (tool_helpers.build_mapping, C++) | %.2fx | 10x |\n",
        $2, mns, $1, $3, $3 / $1 }'
echo "$ernie_c $(echo "$py" | sed -n 2p)" | awk '{
    a = $2 / $1; b = $4 / $3;
    printf "| ERNIE samples/s per core, max_seq_len 512 | %.0f | %.0f (Python transcription of build_training_sample, numpy RandomState) | %.0fx | 50x |\n",
        a, b, a / b }'
echo "$gpt_c $(echo "$py" | sed -n 3p)" | awk '{
    a = $2 / $1; b = $4 / $3;
    printf "| GPT samples/s per core, seq_len 1024 (micro-batches of 32) | %.0f | %.0f (causal_dataset.GPTDataset.__getitem__) | %.0fx | 50x |\n",
        a, b, a / b }'
echo
echo "$win_floor $(echo "$py" | sed -n 3p)" | awk '{
    a = $2 / $1; b = $4 / $3;
    printf "Floor: the copy alone of 1025-token windows at random places: %.0f/s (%.0fx the GPT peer)\n", a, a / b }'
echo "$shuf_floor $(echo "$py" | sed -n 1p)" | awk '{
    printf "Floor: the shuffle alone of %d rows: %.3f s (tool_helpers takes %.1fx that for the whole build)\n", $2, $1, $3 / $1 }'

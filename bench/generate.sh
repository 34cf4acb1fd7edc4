#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/generate.sh [BUILD] [DATA]   (or: make bench)
# Time greedy generation of `generate` against transformers' generate()
# on the same checkpoint: a GPT-2 of the 124M shape with random weights
# (bench/generate_peer.py make: 12 layers, n_embd 768, 1024 positions,
# vocab 50257), the same prompt (41 tokens), NEW new tokens (no eos), the
# key/value cache on both sides, fp32, on 1 and 2 threads, BATCH prompts
# at once for each BATCH of BATCHES.  Ours: `generate --device cpu
# --threads N --decode_strategy greedy_search`, its summary line (the
# generation's wall and CPU time, the loading aside); the peer:
# generate_peer.py run (one warm-up call, then the timed one).  Both with
# OMP_WAIT_POLICY=PASSIVE (PyTorch's better setting here, as in
# bench/train_cpu.sh; ours' on a busy machine).  Each run waits (at most QUIET seconds) for an
# idle machine; ROUNDS runs a side, alternating.  Prints a Markdown table:
# tokens/s (the best run; the ratio of the medians in brackets) and
# tokens per CPU second (the median run; one thread: the ratio per core).
# Takes 15-20 minutes.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
. bench/lib.sh
bench_setup "$BUILD/generate" bench-venv
ROUNDS=${ROUNDS:-3}
QUIET=${QUIET:-20}
NEW=${NEW:-128}
BATCHES=${BATCHES:-1 4}
H=bench/generate_peer.py
PROMPT="The tower is 324 metres (1,063 ft) tall, about the same"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
$VENV/bin/python $H make "$work/gpt"

# ours THREADS BATCH, peer THREADS BATCH: "SIDE BATCH THREADS TOKENS/S
# TOKENS/CPU-S".
ours() {
    for _ in $(seq "$2"); do echo "$PROMPT"; done > "$work/prompts.txt"
    OMP_NUM_THREADS=$1 OMP_WAIT_POLICY=PASSIVE "$BUILD/generate" \
        -m "$work/gpt" --device cpu \
        --threads "$1" -b "$2" --decode_strategy greedy_search \
        --max_dec_len "$NEW" --min_dec_len 0 --eos_token_id -1 -f jsonl \
        -o /dev/null "$work/prompts.txt" 2>&1 |
        sed -n "s/.* \([0-9.]*\) tokens\/s, \([0-9.]*\) tokens per CPU second$/ours $2 $1 \1 \2/p"
}
peer() {
    OMP_NUM_THREADS=$1 OPENBLAS_NUM_THREADS=$1 OMP_WAIT_POLICY=PASSIVE \
        $VENV/bin/python $H run "$work/gpt" "$1" "$2" "$NEW" "$PROMPT" |
        awk -v n="$1" -v b="$2" '{ print "peer", b, n, $1 / $2, $1 / $3 }'
}

waited=0
for _ in $(seq "$ROUNDS"); do
    for b in $BATCHES; do
        for n in 1 2; do
            for side in ours peer; do
                wait_quiet
                $side $n $b >> "$work/runs.txt"
            done
        done
    done
done

tv=$($VENV/bin/python -c 'import torch, transformers
print("PyTorch", torch.__version__, "+ transformers", transformers.__version__)')
echo "| batch | threads | ours tokens/s | transformers tokens/s | ours / transformers, best (median) | ours tokens/CPU-s | transformers tokens/CPU-s | ours / transformers per CPU-s |"
echo "|---|---|---|---|---|---|---|---|"
awk -v batches="$BATCHES" "$AWK_MEDIAN"'
    {
        k = $1 SUBSEP $2 SUBSEP $3
        c = ++cnt[k]
        v[k, c, 1] = $4; v[k, c, 2] = $5
        if ($4 > best[k]) best[k] = $4
    }
    END {
        nb = split(batches, bs, " ")
        for (i = 1; i <= nb; i++) for (n = 1; n <= 2; n++) {
            o = "ours" SUBSEP bs[i] SUBSEP n
            p = "peer" SUBSEP bs[i] SUBSEP n
            if (n == 1)
                cpu = sprintf("%.1f | %.1f | %.2fx", med(o, 2), med(p, 2),
                              med(o, 2) / med(p, 2))
            else
                cpu = "- | - | -"
            printf "| %d | %d | %.1f | %.1f | %.2fx (%.2fx) | %s |\n",
                bs[i], n, best[o], best[p], best[o] / best[p],
                med(o, 1) / med(p, 1), cpu
        }
    }' "$work/runs.txt"
[ -z "${RUNS:-}" ] || cp "$work/runs.txt" "$RUNS"
echo
echo "$tv, eager, $VENV/bin/python.  GPT-2 124M shape, random weights,"
echo "fp32; a prompt of 41 tokens, $NEW new tokens (greedy, no eos) a"
echo "sequence.  tokens/s: the best of $ROUNDS runs a side, alternating; the"
echo "ratio of the medians in brackets.  tokens/CPU-s: new tokens per second"
echo "of process CPU time, median run (1 thread only: with 2, spin-waiting"
echo "counts as CPU time).  Waited ${waited} s for an idle machine before the"
echo "runs; ${busy:-0} of $((ROUNDS * 4 * $(echo $BATCHES | wc -w))) runs started busy."

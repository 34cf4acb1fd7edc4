#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/train_dp.sh [BUILD] [DATA]   (or: make bench)
# The trainer on the cores of one machine, one process against several:
# the demo's tiny ERNIE (configs/ernie-demo.json: hidden 256, 4 layers,
# seq 128, global batch 16) for STEPS steps, as 1 rank with all the cores
# as threads, and as N ranks (mpirun) of one thread each, data parallel
# and data parallel with sharding stage 1; the same global batch, so the
# same samples and the same result.  Prints a Markdown table of tokens/s
# (the mean of the log windows after the first) and the traffic per step.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
. bench/lib.sh
bench_setup all
STEPS=${STEPS:-40}
N=${N:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The demo's data (and vocab), made by the demo if missing.
[ -f "$BUILD/demo/cmrc.idx" ] || scripts/demo.sh "$BUILD" "$DATA" >/dev/null

rate() { # outdir: tokens/s over the log windows after the first; comm MB
    /usr/bin/python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/train_log.jsonl")
        if "global_step" in l]
t = [r["tokens_per_second"] for r in rows[1:]]
print("%.0f %.2f" % (sum(t) / len(t), rows[-1]["comm_bytes"] / 1e6))' "$1"
}

common="--config configs/ernie-demo.json --input_dir $BUILD/demo/cmrc
    --tokenizer_name_or_path $BUILD/demo/vocab.txt --max_steps $STEPS --logging_freq 5
    --eval_freq 100000 --eval_iters 0 --save_steps 100000
    --checkpoint_steps 100000"
# shellcheck disable=SC2086
"$BUILD/train" $common --output_dir "$work/one" --threads "$N" \
    >"$work/one.log" 2>&1
# shellcheck disable=SC2086
mpirun --oversubscribe -np "$N" "$BUILD/train" $common --output_dir \
    "$work/dp" --threads 1 >"$work/dp.log" 2>&1
# shellcheck disable=SC2086
mpirun --oversubscribe -np "$N" "$BUILD/train" $common --output_dir \
    "$work/sh" --threads 1 --sharding_degree "$N" >"$work/sh.log" 2>&1

echo "| layout | processes x threads | tokens/s | vs one process | MB sent per rank a step |"
echo "|---|---|---|---|---|"
set -- $(rate "$work/one")
one=$1
echo "| one rank | 1 x $N | $1 | 1.00x | $2 |"
set -- $(rate "$work/dp")
echo "| data parallel | $N x 1 | $1 | $(awk -v a="$1" -v b="$one" 'BEGIN { printf "%.2fx", a / b }') | $2 |"
set -- $(rate "$work/sh")
echo "| sharding stage 1 | $N x 1 | $1 | $(awk -v a="$1" -v b="$one" 'BEGIN { printf "%.2fx", a / b }') | $2 |"

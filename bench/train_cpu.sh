#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/train_cpu.sh [BUILD] [DATA]   (or: make bench)
# Time one training step of the trainer (`train --device cpu`) against
# PyTorch eager on the CPU (bench/train_cpu_torch.py: transformers'
# ErnieForPreTraining / GPT2LMHeadModel, torch.optim.AdamW), same model,
# same batch shape, same thread count (1 and 2), and print a Markdown table
# of tokens/s, the ratio ours / PyTorch, and the model GFLOP/s of each
# and the FP32 peak `train` reports MFU against (cores x clock x FMA width).
# fp32, train mode, dropout 0.1 (hidden and attention) on both sides,
# AdamW lr 1e-4, no weight decay, no clipping.
# Models: ERNIE hidden 256, 4 layers, 4 heads, intermediate 1024,
# vocab 40000 (ernie-3.0-base-zh), MLM on the masked rows + SOP; GPT-2
# n_embd 256, 4 layers, 4 heads, vocab 50257 (GPT-2's); seq 128, micro
# batch 8 (1024 tokens a step).
# Data for ours, built with the project's tools: the cmrc2018 contexts ->
# segment -> json-pack -> create-pretraining-data -S --chinese -W
# --cn-splited (ERNIE); WikiText-2 test, one article a document ->
# vocab-build bpe (19.6 k tokens) -> create-pretraining-data -T gpt2-bpe -e
# (GPT).  PyTorch gets a random batch of the same shape; its ERNIE batch
# masks M rows, M = the mean masked count of ours' micro-batches (from
# dataset-inspect -x over the samples ours reads), rounded up to 8 as the
# trainer pads it.
# Ours: STEPS steps, a log line every 5; the first line (warm-up) is
# skipped, tokens/s and MFU are read from the others (data loading is
# inside ours' time; the final save is not).  PyTorch: 3 warm-up steps,
# then 3 windows of 5 steps.  Both are timed by bench/train_cpu_torch.py,
# which also reads each window's process CPU time (a figure that the other
# jobs of a shared machine disturb much less than the wall clock).  Each
# run waits (at most QUIET seconds) for the machine to look idle; ROUNDS
# runs a side, ours and PyTorch alternating.  Takes 10-30 minutes.
# RUNS=FILE keeps every window's figures.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
VENV=${VENV:-build/venv}
. bench/lib.sh
bench_setup "$BUILD/segment" "$BUILD/jieba.model" "$BUILD/json-pack" \
    "$BUILD/create-pretraining-data" "$BUILD/vocab-build" \
    "$BUILD/dataset-inspect" "$BUILD/train" bench-venv
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-20}
QUIET=${QUIET:-20}
B=8
T=128
VOCAB=$DATA/vocab/ernie-3.0-base-zh.vocab.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ERNIE corpus, as scripts/demo.sh makes it.
/usr/bin/python3 - "$DATA" > "$work/cmrc.jsonl" <<'PY'
import json, os, sys
for f in ("zh/cmrc2018_dev.json", "zh/cmrc2018_trial.json"):
    d = json.load(open(os.path.join(sys.argv[1], f), encoding="utf-8"))
    for a in d["data"]:
        for p in a["paragraphs"]:
            print(json.dumps({"text": p["context"]}, ensure_ascii=False))
PY
"$BUILD/segment" -q -f jsonl -o "$work/cmrc.seg" "$work/cmrc.jsonl"
"$BUILD/json-pack" -q -o "$work/zh.jsonl" "$work/cmrc.seg"
"$BUILD/create-pretraining-data" -q -v "$VOCAB" -S --chinese -W \
    --cn-splited -o "$work/zh" "$work/zh.jsonl"
# GPT corpus: WikiText-2 test, one article (a " = Title = " line) a document.
/usr/bin/python3 - "$DATA/en/wikitext-2-raw/wiki.test.raw" \
    > "$work/en.jsonl" <<'PY'
import json, sys
doc = []
for ln in open(sys.argv[1], encoding="utf-8"):
    if ln.startswith(" = ") and not ln.startswith(" = = ") and doc:
        print(json.dumps({"text": "".join(doc)}))
        doc = []
    doc.append(ln)
print(json.dumps({"text": "".join(doc)}))
PY
"$BUILD/vocab-build" bpe -q -o "$work/bpe" \
    "$DATA/en/wikitext-2-raw/wiki.test.raw"
"$BUILD/create-pretraining-data" -q -T gpt2-bpe -e -v "$work/bpe" \
    -o "$work/en" "$work/en.jsonl"

cat > "$work/ernie.json" <<'EOF'
{"architectures": ["ErnieForPreTraining"], "model_type": "ernie",
 "vocab_size": 40000, "hidden_size": 256, "num_hidden_layers": 4,
 "num_attention_heads": 4, "intermediate_size": 1024, "hidden_act": "gelu",
 "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
 "max_position_embeddings": 512, "type_vocab_size": 4,
 "task_type_vocab_size": 3, "use_task_id": true, "initializer_range": 0.02,
 "layer_norm_eps": 1e-12, "pad_token_id": 0}
EOF
cat > "$work/gpt.json" <<'EOF'
{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
 "vocab_size": 50257, "n_embd": 256, "n_layer": 4, "n_head": 4,
 "n_inner": null, "n_positions": 512, "activation_function": "gelu_new",
 "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
 "layer_norm_epsilon": 1e-5, "initializer_range": 0.02}
EOF

# M for PyTorch's ERNIE batch: ours' mean masked tokens a micro-batch.
M=$("$BUILD/dataset-inspect" -x $((B * STEPS)) -l $T -v "$VOCAB" "$work/zh" |
    awk -v B=$B '/^masked \// { split($6, a, "[(/]") }
        /^samples/ { s = $2 }
        END { m = a[2] / s * B; printf "%d", int((m + 7) / 8) * 8 }')

H=bench/train_cpu_torch.py
# ours MODEL THREADS, torch MODEL THREADS: "SIDE MODEL THREADS TOKENS/S
# TOKENS/CPU-S GFLOP/S" a window, and for ours "peak MODEL THREADS PEAK".
ours() {
    m=$1 n=$2
    if [ "$m" = ernie ]; then
        set -- --input_dir "$work/zh" --tokenizer_name_or_path "$VOCAB"
    else
        set -- --input_dir "$work/en"
    fi
    rm -rf "$work/out"
    OMP_NUM_THREADS=$n $VENV/bin/python $H ours "$BUILD/train" --device cpu \
        --model_type "$m" --model_name_or_path "$work/$m.json" \
        --output_dir "$work/out" --max_seq_len $T --micro_batch_size $B \
        --max_steps "$STEPS" --logging_freq 5 --eval_iters 0 \
        --save_steps 1000000000 --checkpoint_steps 1000000000 \
        --max_lr 1e-4 --threads "$n" "$@" |
        awk -v m="$m" -v n="$n" '$1 == "peak" { print "peak", m, n, $2; next }
            { print "ours", m, n, $0 }'
}
# PyTorch's libgomp pool otherwise spins against OpenBLAS's own pthreads
# (Debian links torch to openblas-pthread): 2 threads ran slower than 1
# without OMP_WAIT_POLICY=PASSIVE, about twice as fast with it.
torch() {
    OMP_NUM_THREADS=$2 OPENBLAS_NUM_THREADS=$2 OMP_WAIT_POLICY=PASSIVE \
        $VENV/bin/python $H torch \
        "$work/$1.json" $B $T "$M" "$2" 3 5 3 | sed "s/^/torch $1 $2 /"
}

waited=0
for _ in $(seq "$ROUNDS"); do
    for m in ernie gpt; do
        for n in 1 2; do
            for side in ours torch; do
                wait_quiet
                $side $m $n >> "$work/runs.txt"
            done
        done
    done
done

tv=$($VENV/bin/python -c 'import torch, transformers
print("PyTorch", torch.__version__, "+ transformers", transformers.__version__)')
echo "| model | threads | ours tokens/s | PyTorch tokens/s | ours / PyTorch, best (median) | ours tokens/CPU-s | PyTorch tokens/CPU-s | ours / PyTorch per CPU-s | ours GFLOP/s (of peak) | PyTorch GFLOP/s (of peak) | FP32 peak GFLOP/s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
awk -v M="$M" "$AWK_MEDIAN"'
    $1 == "peak" { if ($4 > peak[$3]) peak[$3] = $4; next }
    {
        k = $1 SUBSEP $2 SUBSEP $3
        c = ++cnt[k]
        v[k, c, 1] = $4; v[k, c, 2] = $5
        if ($4 > best[k]) { best[k] = $4; gf[k] = $6 }
    }
    END {
        split("ernie gpt", ms, " ")
        for (i = 1; i <= 2; i++) for (n = 1; n <= 2; n++) {
            m = ms[i]; pk = peak[n]
            o = "ours" SUBSEP m SUBSEP n; t = "torch" SUBSEP m SUBSEP n
            if (n == 1)
                cpu = sprintf("%.0f | %.0f | %.2fx", med(o, 2), med(t, 2),
                              med(o, 2) / med(t, 2))
            else
                cpu = "- | - | -"
            printf "| %s | %d | %.0f | %.0f | %.2fx (%.2fx) | %s | %.1f (%.0f %%) | %.1f (%.0f %%) | %.1f |\n",
                m == "ernie" ? "ERNIE" : "GPT-2", n, best[o], best[t],
                best[o] / best[t], med(o, 1) / med(t, 1), cpu,
                gf[o], 100 * gf[o] / pk, gf[t], 100 * gf[t] / pk, pk
        }
    }' "$work/runs.txt"
[ -z "${RUNS:-}" ] || cp "$work/runs.txt" "$RUNS"
echo
echo "$tv, eager, $VENV/bin/python.  ERNIE: M = $M"
echo "masked rows a micro-batch.  tokens/s: the best 5-step window of $ROUNDS"
echo "runs a side, alternating; the ratio of the medians of all windows in"
echo "brackets.  tokens/CPU-s: tokens per second of process CPU time, median"
echo "window (1 thread only: with 2, spin-waiting counts as CPU time)."
echo "GFLOP/s: model FLOPs (train_flops() of train/log/flops.c) / wall time in the"
echo "best window; peak: the FP32 peak train reports MFU against at that"
echo "thread count (cores x clock x FMA width).  Waited ${waited} s for an idle"
echo "machine before the runs; ${busy:-0} of $((ROUNDS * 8)) runs started busy."

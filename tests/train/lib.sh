# SPDX-License-Identifier: MIT
# tests/train/lib.sh: what the trainer's end-to-end suites share (sourced
# by tests/train/run and tests/train/parallel): the ERNIE and GPT corpora
# built by our own pipeline from the shared data, tiny model and run
# configs, and the helpers that run the trainer and compare runs (those
# of several ranks against one: tests/train/parallel, tests/cluster/run).
# Needs BUILD, DATA, TRAIN, work, pass, fail, skip set by the caller, and
# VENV_PY (the test venv's python) for the weights' comparisons.

ok() { echo "ok   $1"; pass=$((pass + 1)); }
no() { echo "FAIL $1"; fail=$((fail + 1)); }
check() { # name command...
    name=$1
    shift
    if "$@" >"$work/check.out" 2>&1; then ok "$name"; else
        no "$name"
        sed 's/^/    /' "$work/check.out" | tail -n 20
    fi
}

# ------------------------------------------------------------------ data
VOCAB=$DATA/vocab/ernie-3.0-base-zh.vocab.txt
/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
for a in d["data"]:
    for p in a["paragraphs"]:
        print(p["context"].replace("\n", " ")); print()
' "$DATA/zh/cmrc2018_dev.json" >"$work/zh.txt"
"$BUILD/segment" -q -o "$work/zh.seg" "$work/zh.txt" &&
    "$BUILD/json-pack" -q -o "$work/zh.jsonl" "$work/zh.seg" &&
    "$BUILD/create-pretraining-data" -q -v "$VOCAB" -S --chinese -W \
        --cn-splited -o "$work/zh" "$work/zh.jsonl" ||
    { echo "train: cannot build the ERNIE corpus"; exit 1; }
# One document per paragraph (line) of WikiText.
tr -d '\r' <"$DATA/en/wikitext-2-raw/wiki.test.raw" |
    awk 'NF { print; print "" }' >"$work/wiki.txt"
"$BUILD/vocab-build" bpe -q -s 2000 -o "$work/bpe" "$work/wiki.txt" &&
    "$BUILD/json-pack" -q -o "$work/wiki.jsonl" "$work/wiki.txt" &&
    "$BUILD/create-pretraining-data" -q -T gpt2-bpe -e -v "$work/bpe" \
        -o "$work/wiki" "$work/wiki.jsonl" ||
    { echo "train: cannot build the GPT corpus"; exit 1; }

cat >"$work/ernie.json" <<'EOF'
{"model_type": "ernie", "vocab_size": 40000, "hidden_size": 32,
 "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
 "hidden_act": "gelu", "max_position_embeddings": 128, "type_vocab_size": 4,
 "task_type_vocab_size": 3, "use_task_id": true,
 "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
EOF
cat >"$work/gpt.json" <<'EOF'
{"model_type": "gpt2", "vocab_size": 2000, "n_embd": 32, "n_layer": 2,
 "n_head": 2, "n_positions": 128, "activation_function": "gelu_new",
 "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}
EOF
# A run's settings as a config file (the command line adds to it).
cat >"$work/ernie-run.json" <<EOF
{"model_type": "ernie", "model_name_or_path": "$work/ernie.json",
 "tokenizer_name_or_path": "$VOCAB", "input_dir": "$work/zh",
 "max_seq_len": 64, "micro_batch_size": 4, "global_batch_size": 8,
 "max_lr": 5e-3, "min_lr": 5e-4, "warmup_rate": 0.1, "decay_steps": 0,
 "weight_decay": 0.01, "grad_clip": 1.0, "logging_freq": 1,
 "eval_freq": 5, "eval_iters": 1, "save_steps": 1000,
 "checkpoint_steps": 3, "seed": 7}
EOF
cat >"$work/gpt-run.json" <<EOF
{"model_type": "gpt", "model_name_or_path": "$work/gpt.json",
 "tokenizer_name_or_path": "$work/bpe", "input_dir": "$work/wiki", "max_seq_len": 64, "micro_batch_size": 4,
 "global_batch_size": 8, "max_lr": 5e-3, "min_lr": 5e-4,
 "warmup_rate": 0.1, "decay_steps": 0, "weight_decay": 0.01,
 "grad_clip": 1.0, "logging_freq": 1, "eval_freq": 5, "eval_iters": 1,
 "save_steps": 1000, "checkpoint_steps": 3, "seed": 7}
EOF

run() { # kind outdir [flags...]: a run, its log in outdir.log
    kind=$1 out=$2
    shift 2
    "$TRAIN" --config "$work/$kind-run.json" --output_dir "$out" "$@" \
        >"$out.log" 2>&1
}

# The (step, loss) pairs of a JSONL log, the last occurrence of each step.
losses() {
    /usr/bin/python3 -c '
import json, sys
last = {}
for ln in open(sys.argv[1]):
    r = json.loads(ln)
    if "global_step" in r:
        last[r["global_step"]] = (r["loss"], r["lm_loss"], r["sop_loss"])
for k in sorted(last):
    print(k, *last[k])
' "$1/train_log.jsonl"
}

falls() { # outdir: the loss of the last 3 steps is below the first 3's
    losses "$1" | awk '{ l[NR] = $2 } END {
        a = (l[1] + l[2] + l[3]) / 3; b = (l[NR] + l[NR-1] + l[NR-2]) / 3
        printf "first %.4f last %.4f\n", a, b; exit !(b < a - 0.3) }'
}

same_run() { # a b: the same losses and the same final weights, bit for bit
    losses "$1" >"$work/la" && losses "$2" >"$work/lb" &&
        cmp "$work/la" "$work/lb" &&
        cmp "$1/model_$3/model.safetensors" "$2/model_$3/model.safetensors" &&
        cmp "$1/model_$3/optimizer.safetensors" \
            "$2/model_$3/optimizer.safetensors"
}

close() { # a b: the same steps, losses within 1e-4 relative
    losses "$1" >"$work/la" && losses "$2" >"$work/lb" &&
        [ "$(wc -l <"$work/la")" -eq "$(wc -l <"$work/lb")" ] &&
        paste -d' ' "$work/la" "$work/lb" | awk '{
            for (i = 2; i <= 4; i++) { d = $i - $(i + 4); if (d < 0) d = -d
                if (d > 1e-4 * ($(i + 4) < 0 ? -$(i + 4) : $(i + 4)) + 1e-7) bad = 1 }
        } END { exit bad }'
}

near() { # a b band: the same steps, each loss within band of the other's
    losses "$1" >"$work/la" && losses "$2" >"$work/lb" &&
        [ "$(wc -l <"$work/la")" -eq "$(wc -l <"$work/lb")" ] &&
        paste -d' ' "$work/la" "$work/lb" | awk -v band="$3" '{
            d = $2 - $6; if (d < 0) d = -d; if (d > w) w = d
            if (d > band) bad = 1 }
        END { printf "worst %.6f\n", w; exit bad }'
}

fails_with() { # name pattern command...: non-zero exit and the message
    name=$1 pat=$2
    shift 2
    if "$@" >"$work/err.out" 2>&1; then
        no "$name (exit 0)"
    elif grep -q -- "$pat" "$work/err.out"; then
        ok "$name"
    else
        no "$name (message)"
        sed 's/^/    /' "$work/err.out" | tail -n 5
    fi
}

# ------------------------------------------- several ranks against one

# Losses of train and valid steps within 1e-5 relative, the same steps.
close_all() { # a b
    for f in "$1" "$2"; do
        /usr/bin/python3 -c '
import json, sys
last = {}
for ln in open(sys.argv[1] + "/train_log.jsonl"):
    r = json.loads(ln)
    k = ("t", r["global_step"]) if "global_step" in r else ("v", r.get("valid_step", r.get("test_step")))
    last[k] = (r["loss"], r["lm_loss"], r["sop_loss"])
for k in sorted(last):
    print(k[0], k[1], *last[k])
' "$f" >"$f.losses" || return 1
    done
    [ "$(wc -l <"$1.losses")" -eq "$(wc -l <"$2.losses")" ] &&
        paste -d' ' "$1.losses" "$2.losses" | awk '{
            if ($1 != $6 || $2 != $7) bad = 1
            for (i = 3; i <= 5; i++) { d = $i - $(i + 5); if (d < 0) d = -d
                a = $(i + 5) < 0 ? -$(i + 5) : $(i + 5)
                if (d > 1e-5 * a + 1e-7) bad = 1 }
        } END { exit bad }'
}

# Every tensor of two safetensors files within 1e-5 absolute + 1e-4 of
# its largest value (key biases get no gradient and only carry rounding
# noise); prints the worst difference.
close_tensors() { # file-a file-b
    "$VENV_PY" -c '
import sys
import numpy as np
from safetensors.numpy import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
assert a.keys() == b.keys(), "different tensors"
bad = [k for k in a if np.max(np.abs(a[k] - b[k])) >
       1e-5 + 1e-4 * np.max(np.abs(a[k]))]
print("worst", max(float(np.max(np.abs(a[k] - b[k]))) for k in a))
sys.exit(1 if bad else 0)' "$1" "$2"
}

# Final weights.
same_weights() { # a b step
    close_tensors "$1/model_$3/model.safetensors" \
        "$2/model_$3/model.safetensors"
}

equivalent() { # a b step
    close_all "$1" "$2" && same_weights "$1" "$2" "$3"
}

# The gradient norms of every step within 1e-5 relative.
same_norms() { # a b
    for f in "$1" "$2"; do
        /usr/bin/python3 -c '
import json, sys
for ln in open(sys.argv[1] + "/train_log.jsonl"):
    r = json.loads(ln)
    if "global_step" in r: print(r["global_step"], r["grad_norm"])
' "$f" >"$f.norms" || return 1
    done
    [ "$(wc -l <"$1.norms")" -eq "$(wc -l <"$2.norms")" ] &&
        paste -d' ' "$1.norms" "$2.norms" | awk '{ d = $2 - $4
            if (d < 0) d = -d; if ($1 != $3 || d > 1e-5 * $4) bad = 1
        } END { exit bad }'
}

# The optimizer moments too (the same tolerance as the weights).
same_moments() { # a b step
    close_tensors "$1/model_$3/optimizer.safetensors" \
        "$2/model_$3/optimizer.safetensors"
}

# Losses, gradient norms, weights and moments (tensor and pipeline
# parallelism, where the norms are summed differently).
tp_equivalent() { # a b: losses, gradient norms, weights and moments
    equivalent "$1" "$2" 12 && same_norms "$1" "$2" &&
        same_moments "$1" "$2" 12
}

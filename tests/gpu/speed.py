#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The first speed table of the trainer on a GPU (run-gpu-checks' speed):
tokens/s and MFU of `train` against PyTorch eager and torch.compile, bf16
mixed precision (fp32 weights and AdamW, bf16 autocast), the same batch,
for GPT-2 124M at T 1024 and ERNIE-base at seq 512 (transformers'
GPT2LMHeadModel and ErnieForPreTraining built from the same config files,
random weights, synthetic batches).  Each run is a process of its own:
WARMUP steps, then STEPS timed ones (ours: the log's tokens/s, which
counts B x max_seq_len a step, after the first logging interval).

MFU = tokens/s x FLOPs per token / the GPU's dense bf16 peak, with
    FLOPs per token = 6 N + 12 L h s
(N the parameters, tied embeddings once; L layers, h the hidden size, s
the sequence length: PaLM's model FLOPs, attention's two products counted
in full, not halved for the causal mask).  The peak comes from the GPU's
name (PEAKS, as llm.c's mfu.h): an unknown GPU gets no MFU.

  speed.py --bundle DIR [--work DIR] [--json FILE] [--deadline S]
  speed.py --bundle DIR --device cpu     tiny models on the CPU, fp32, no
                                         compile: the script's own check
  speed.py --self-test                   the FLOPs formula against counts
                                         by hand (and transformers' own
                                         parameter counts where installed)
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

# Dense bf16 TFLOP/s (no sparsity) by the vendor's datasheets, matched in
# order against the name nvidia-smi prints: the first entry whose every
# word is in the name wins.
PEAKS = [
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.0),      # SXM: "NVIDIA H100 80GB HBM3"
    ("H200 NVL", 835.0),
    ("H200", 989.0),      # SXM: "NVIDIA H200"
    ("GH200", 989.0),
    ("B200", 2250.0),
    ("A100", 312.0),
    ("A800", 312.0),
    ("L40S", 362.0),
    ("L4", 121.0),
    ("A10G", 125.0),
    ("A10", 125.0),
    ("RTX 4090", 165.0),
    ("RTX 3090", 71.0),
]

# The models of the table: (name, kind, config file, batch, seq).
MODELS = [
    ("gpt2-124M", "gpt", "gpt2-124M.json", 16, 1024),
    ("ernie-base", "ernie", "ernie-base.json", 32, 512),
]
# --device cpu: the tiny ones, a small batch.
MODELS_CPU = [
    ("gpt-tiny", "gpt", "gpt-tiny.json", 4, 64),
    ("ernie-tiny", "ernie", "ernie-tiny.json", 4, 64),
]
# Warm-up and timed steps: on the GPU, and for --device cpu.
WARMUP, STEPS = 5, 15
WARMUP_CPU, STEPS_CPU = 2, 4


def peak_tflops(name):
    """The dense bf16 peak of the GPU named so, or None: the first key of
    PEAKS found in the name as whole words ("L4" is not "L40S")."""
    for key, tf in PEAKS:
        if re.search(r"(^|[\s-])" + re.escape(key) + r"($|[\s-])", name):
            return tf
    return None


# ------------------------------------------------------------ the formula

def param_count(cfg):
    """The parameters of the model a config file describes, tied
    embeddings once, as transformers builds it (GPT2LMHeadModel,
    ErnieForPreTraining)."""
    if cfg["model_type"] == "gpt2":
        h, L, V = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"]
        P, I = cfg["n_positions"], cfg.get("n_inner") or 4 * cfg["n_embd"]
        layer = (2 * h                    # ln_1
                 + h * 3 * h + 3 * h      # attn.c_attn
                 + h * h + h              # attn.c_proj
                 + 2 * h                  # ln_2
                 + h * I + I              # mlp.c_fc
                 + I * h + h)             # mlp.c_proj
        return V * h + P * h + L * layer + 2 * h  # wte, wpe, ln_f
    h, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    I, P = cfg["intermediate_size"], cfg["max_position_embeddings"]
    types = cfg.get("type_vocab_size", 2)
    tasks = cfg.get("task_type_vocab_size", 3) if cfg.get("use_task_id") \
        else 0
    emb = (V + P + types + tasks) * h + 2 * h
    layer = (4 * (h * h + h)              # query, key, value, output
             + 2 * h                      # attention LayerNorm
             + h * I + I + I * h + h      # intermediate, output
             + 2 * h)                     # output LayerNorm
    pooler = h * h + h
    heads = (h * h + h + 2 * h            # transform: dense, LayerNorm
             + V                          # decoder bias (weight tied)
             + 2 * h + 2)                 # seq_relationship
    return emb + L * layer + pooler + heads


def layers_hidden(cfg):
    if cfg["model_type"] == "gpt2":
        return cfg["n_layer"], cfg["n_embd"]
    return cfg["num_hidden_layers"], cfg["hidden_size"]


def flops_per_token(cfg, s):
    """6 N + 12 L h s."""
    L, h = layers_hidden(cfg)
    return 6 * param_count(cfg) + 12 * L * h * s


def self_test():
    """The formula against counts worked out by hand, and (where
    transformers is installed) against transformers' own models."""
    fails = 0

    def check(name, got, want):
        nonlocal fails
        ok = got == want
        fails += not ok
        print("%s %s: %s%s" % ("ok  " if ok else "FAIL", name, got,
                               "" if ok else " (want %s)" % want))

    gpt = {"model_type": "gpt2", "vocab_size": 11, "n_embd": 4, "n_layer": 2,
           "n_head": 2, "n_positions": 7, "n_inner": 16}
    # By hand: wte 11*4 = 44, wpe 7*4 = 28; a layer: ln_1 8, c_attn 4*12 +
    # 12 = 60, c_proj 16 + 4 = 20, ln_2 8, c_fc 4*16 + 16 = 80, c_proj
    # 16*4 + 4 = 68: 244, twice 488; ln_f 8.  568 in all.
    check("gpt tiny: parameters", param_count(gpt), 568)
    # 6 * 568 + 12 * 2 layers * 4 * 7 = 3408 + 672.
    check("gpt tiny: FLOPs a token at s 7", flops_per_token(gpt, 7), 4080)
    ernie = {"model_type": "ernie", "vocab_size": 10, "hidden_size": 4,
             "num_hidden_layers": 1, "num_attention_heads": 2,
             "intermediate_size": 8, "max_position_embeddings": 6,
             "type_vocab_size": 2, "task_type_vocab_size": 3,
             "use_task_id": True}
    # By hand: embeddings (10 + 6 + 2 + 3) * 4 = 84 + LayerNorm 8 = 92; the
    # layer: q, k, v, output 4 * 20 = 80, LayerNorm 8, intermediate 4*8 + 8
    # = 40, output 8*4 + 4 = 36, LayerNorm 8: 172; pooler 20; heads:
    # transform 20 + 8, decoder bias 10, seq_relationship 8 + 2: 48.
    # 92 + 172 + 20 + 48 = 332.
    check("ernie tiny: parameters", param_count(ernie), 332)
    # 6 * 332 + 12 * 1 * 4 * 6 = 1992 + 288.
    check("ernie tiny: FLOPs a token at s 6", flops_per_token(ernie, 6), 2280)
    gpt2 = json.load(open(config_file("gpt2-124M.json")))
    # GPT-2 124M's published count (wte 50257 x 768, 1024 positions).
    check("gpt2-124M: parameters", param_count(gpt2), 124439808)
    check("peak: NVIDIA H100 80GB HBM3", peak_tflops("NVIDIA H100 80GB HBM3"),
          989.0)
    check("peak: NVIDIA H100 PCIe", peak_tflops("NVIDIA H100 PCIe"), 756.0)
    check("peak: NVIDIA H200", peak_tflops("NVIDIA H200"), 989.0)
    check("peak: NVIDIA L40S", peak_tflops("NVIDIA L40S"), 362.0)
    check("peak: NVIDIA L4", peak_tflops("NVIDIA L4"), 121.0)
    check("peak: unknown GPU", peak_tflops("NVIDIA Quadro P400"), None)
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError:
        print("skip transformers' parameter counts (no transformers here)")
    else:
        import logging
        logging.getLogger("transformers").setLevel(logging.ERROR)
        for cfg in (gpt, ernie, json.load(open(config_file(
                "ernie-base.json")))):
            model = hf_model(transformers, cfg)
            n = sum(p.numel() for p in model.parameters())  # tied: once
            check("%s: transformers' %s" % (cfg["model_type"],
                                            type(model).__name__),
                  param_count(cfg), n)
    print("speed-self-test: %d failed" % fails)
    return 1 if fails else 0


# ------------------------------------------------------------ PyTorch

def hf_model(transformers, cfg):
    args = {k: v for k, v in cfg.items() if k != "model_type"}
    if cfg["model_type"] == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(**args))
    return transformers.ErnieForPreTraining(transformers.ErnieConfig(**args))


def torch_one(cfg_path, B, T, device, compile_, warmup, steps):
    """One framework run: warm-up, then timed steps; prints a JSON line."""
    import torch
    import transformers
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    cfg = json.load(open(cfg_path))
    torch.manual_seed(0)
    model = hf_model(transformers, cfg).to(device).train()
    attn = getattr(model.config, "_attn_implementation", "?")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4,
                            **({"fused": True} if device == "cuda" else {}))
    V = cfg["vocab_size"]
    g = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, V, (B, T), generator=g).to(device)
    if cfg["model_type"] == "gpt2":
        batch = {"input_ids": ids, "labels": ids}
    else:
        labels = torch.full((B, T), -100, dtype=torch.long)
        pick = torch.rand((B, T), generator=g) < 0.15
        labels[pick] = ids.cpu()[pick]
        types = torch.zeros((B, T), dtype=torch.long)
        types[:, T // 2:] = 1
        batch = {"input_ids": ids, "token_type_ids": types.to(device),
                 "attention_mask": torch.ones((B, T), dtype=torch.long,
                                              device=device),
                 "labels": labels.to(device),
                 "next_sentence_label": torch.randint(
                     0, 2, (B,), generator=g).to(device)}
    fwd = torch.compile(model) if compile_ else model
    amp = torch.autocast(device_type="cuda", dtype=torch.bfloat16) \
        if device == "cuda" else torch.autocast(device_type="cpu",
                                                enabled=False)

    def step():
        with amp:
            loss = fwd(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    t0 = time.time()
    for _ in range(warmup):
        loss = step()
    sync()
    warm = time.time() - t0
    t0 = time.time()
    for _ in range(steps):
        loss = step()
    sync()
    dt = time.time() - t0
    print(json.dumps({"tokens_per_s": B * T * steps / dt,
                      "step_ms": 1e3 * dt / steps, "warmup_s": warm,
                      "loss": float(loss.detach()), "attn": attn,
                      "torch": torch.__version__,
                      "transformers": transformers.__version__}))


# ------------------------------------------------------------ ours

def ours(bundle, work, name, kind, cfg_file, B, T, device, timeout, warmup,
         steps):
    """`train` on the bundle's data: tokens/s of the logging intervals
    after the first (which holds the start-up: cuBLASLt's and cuDNN's
    plans)."""
    data = {"gpt": ("wiki", "bpe"), "ernie": ("cmrc", "vocab.txt")}[kind]
    out = os.path.join(work, "ours-" + name)
    conf = {"model_type": kind,
            "model_name_or_path": os.path.join(bundle, "configs", cfg_file),
            "tokenizer_name_or_path": os.path.join(bundle, "data", data[1]),
            "input_dir": os.path.join(bundle, "data", data[0]),
            "data_cache_path": os.path.join(work, "cache"),
            "max_seq_len": T, "micro_batch_size": B, "global_batch_size": B,
            "max_lr": 1e-4, "min_lr": 1e-5, "warmup_rate": 0.0,
            "logging_freq": warmup, "eval_freq": 1000000, "eval_iters": 0,
            "save_steps": 1000000, "checkpoint_steps": 1000000,
            "max_steps": warmup + steps, "seed": 1234}
    if kind == "ernie":
        conf.update(binary_head=True, masked_lm_prob=0.15)
    path = out + ".json"
    with open(path, "w") as f:
        json.dump(conf, f)
    cmd = [os.path.join(bundle, "bin", "train"), "--config", path,
           "--output_dir", out, "--device", device]
    if device == "cuda":
        cmd += ["--use_amp", "true", "--amp_dtype", "bfloat16"]
    t0 = time.time()
    with open(out + ".log", "w") as log:
        p = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                           timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("train exited %d (%s.log): %s" % (
            p.returncode, out, tail(out + ".log")))
    recs = [json.loads(ln) for ln in open(os.path.join(out,
                                                       "train_log.jsonl"))]
    tps = [r["tokens_per_second"] for r in recs if "global_step" in r][1:]
    if not tps:
        raise RuntimeError("no timed logging interval in %s" % out)
    tps.sort()
    return {"tokens_per_s": tps[len(tps) // 2],
            "step_ms": 1e3 * B * T / tps[len(tps) // 2],
            "warmup_s": time.time() - t0, "loss": recs[-1].get("loss")}


def kilo(x):
    return "%.0fk" % (x / 1e3) if x >= 1e4 else "%.0f" % x


def tail(path, n=5):
    try:
        return " | ".join(open(path).read().splitlines()[-n:])
    except OSError:
        return ""


def gpu_name():
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20,
            universal_newlines=True).stdout.splitlines()[0].strip()
    except (OSError, IndexError, subprocess.SubprocessError):
        return ""


def table(args):
    device = args.device
    models = MODELS if device == "cuda" else MODELS_CPU
    warmup, steps = (WARMUP, STEPS) if device == "cuda" else (WARMUP_CPU,
                                                               STEPS_CPU)
    work = args.work or tempfile.mkdtemp(prefix="speed.")
    os.makedirs(work, exist_ok=True)
    end = time.time() + args.deadline
    name = gpu_name() if device == "cuda" else "the CPU"
    peak = peak_tflops(name) if device == "cuda" else None
    print("speed: %s; %s; FLOPs/token = 6N + 12 L h s (N parameters, tied "
          "once; attention not halved for the causal mask); %d warm-up + %d "
          "timed steps, %s" % (
              name or "unknown GPU",
              "dense bf16 peak %g TFLOP/s" % peak if peak else
              "no known peak: no MFU", warmup, steps,
              "bf16 (autocast; ours --use_amp) with fp32 weights and AdamW"
              if device == "cuda" else "float32"))
    rows = []
    # Ours and eager first, compile last: what a short deadline loses is
    # compile's row.
    plan = [(m, fw) for fw in ("erniekit", "torch eager") for m in models]
    if device == "cuda":
        plan += [(m, "torch.compile") for m in models]
    for (mname, kind, cfg_file, B, T), fw in plan:
        cfg = json.load(open(os.path.join(args.bundle, "configs", cfg_file)))
        left = end - time.time()
        row = {"model": mname, "framework": fw, "B": B, "T": T,
               "params": param_count(cfg),
               "flops_per_token": flops_per_token(cfg, T)}
        rows.append(row)
        if left < 15:
            row["error"] = "out of time"
            continue
        try:
            if fw == "erniekit":
                row.update(ours(args.bundle, work, mname, kind, cfg_file, B,
                                T, device, min(left, 120), warmup, steps))
            else:
                p = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--torch-one",
                     os.path.join(args.bundle, "configs", cfg_file), str(B),
                     str(T), device, "1" if fw == "torch.compile" else "0",
                     str(warmup), str(steps)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    timeout=min(left, 150), universal_newlines=True)
                if p.returncode != 0:
                    raise RuntimeError("exited %d: %s" % (
                        p.returncode, " | ".join(
                            p.stderr.strip().splitlines()[-3:])))
                row.update(json.loads(p.stdout.strip().splitlines()[-1]))
        except (RuntimeError, subprocess.TimeoutExpired, ValueError,
                OSError) as e:
            row["error"] = str(e)[:300]
        if "tokens_per_s" in row and peak:
            row["mfu"] = row["tokens_per_s"] * row["flops_per_token"] / \
                (peak * 1e12)
    print("%-11s %7s %5s %3s  %-14s %10s %9s %6s %8s" % (
        "model", "N", "s", "B", "framework", "tokens/s", "step ms", "MFU",
        "vs ours"))
    failed = 0
    for r in rows:
        base = next((x for x in rows if x["model"] == r["model"] and
                     x["framework"] == "erniekit"), {})
        if "tokens_per_s" not in r:
            failed += r["framework"] == "erniekit"
            print("%-11s %6.1fM %5d %3d  %-14s %s" % (
                r["model"], r["params"] / 1e6, r["T"], r["B"],
                r["framework"], r.get("error", "?")))
            continue
        print("%-11s %6.1fM %5d %3d  %-14s %10.0f %9.1f %6s %8s" % (
            r["model"], r["params"] / 1e6, r["T"], r["B"], r["framework"],
            r["tokens_per_s"], r["step_ms"],
            "%.1f%%" % (100 * r["mfu"]) if "mfu" in r else "-",
            "%.2fx" % (base["tokens_per_s"] / r["tokens_per_s"])
            if "tokens_per_s" in base else "-"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": name, "peak_tflops": peak, "rows": rows}, f,
                      indent=1)
    # The summary line: ours against each.
    parts = []
    for m in models:
        got = {r["framework"]: r for r in rows if r["model"] == m[0]}
        s = ", ".join("%s %s" % (fw.replace("torch ", ""),
                                 "%s tok/s%s" % (
                                     kilo(got[fw]["tokens_per_s"]),
                                     " (%.0f%% MFU)" % (100 * got[fw]["mfu"])
                                     if "mfu" in got[fw] else "")
                                 if "tokens_per_s" in got[fw] else "failed")
                      for fw in ("erniekit", "torch eager", "torch.compile")
                      if fw in got)
        parts.append("%s: %s" % (m[0], s))
    print("; ".join(parts))
    return 1 if failed else 0


HERE = os.path.dirname(os.path.abspath(__file__))


def config_file(name):
    """A model config beside this file (tests/gpu/) or in the bundle's
    configs/."""
    for d in (HERE, os.path.join(HERE, "..", "configs")):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return os.path.join(HERE, name)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-one":
        a = sys.argv[2:]
        torch_one(a[0], int(a[1]), int(a[2]), a[3], a[4] == "1", int(a[5]),
                  int(a[6]))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--bundle")
    ap.add_argument("--work")
    ap.add_argument("--json")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--deadline", type=float, default=230.0,
                    help="seconds for the whole table")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.bundle:
        ap.error("--bundle DIR (the GPU bundle: bin/train, configs/, data/)")
    return table(args)


if __name__ == "__main__":
    sys.exit(main())

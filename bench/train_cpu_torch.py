#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helper of bench/train_cpu.sh: PyTorch eager's side of the trainer's CPU
benchmark, and the per-window timing of ours.

  train_cpu_torch.py torch CONFIG.json B T M THREADS [WINDOWS] [WINDOW]
                     [WARMUP]
      One training step (forward + backward + AdamW, fp32, train mode, the
      config's dropouts) of transformers' ErnieForPreTraining or
      GPT2LMHeadModel on a random batch of the trainer's shape, WARMUP
      steps (default 3), then WINDOWS (3) windows of WINDOW (5) steps.
      ERNIE as the trainer computes it: the MLM head (transform + tied
      decoder) on the M masked rows gathered from the sequence output,
      lm_loss = sum of CE over the M slots / M, the SOP head on the pooled
      output; task type ids 0, position ids 0..T-1, the attention mask 1
      on the first n tokens of a row (n from 3T/4 to T), token types 1 on
      the second half.  GPT: the LM head on all B*T rows, mean CE against
      the next tokens.  AdamW lr 1e-4, no weight decay.

  train_cpu_torch.py ours TRAIN [ARGS...]
      Run the trainer (TRAIN ARGS..., its log on stderr) and time the
      windows between its log lines: its own tokens/s and MFU, and the
      process's CPU time (utime + stime of /proc/PID/stat) read when each
      line arrives; ARGS must give --micro_batch_size and --max_seq_len
      (no accumulation).  The first window (warm-up) is skipped.  Also prints
      "peak G", the FP32 peak (GFLOP/s) train reports MFU against.

  train_cpu_torch.py quiet [SECONDS]
      Wait (at most SECONDS, default 60) until the machine looks idle: 2
      seconds with at least 90 % of the CPUs' time idle.  Prints the
      seconds waited and whether it got there.

Both timers print one line a window: "TOKENS/S TOKENS/CPU-S GFLOP/S",
tokens/s by the wall clock, tokens per second of process CPU time, and
model GFLOP/s counted as train/log/flops.c's train_flops() counts them.
"""
import json
import os
import subprocess
import sys
import time


def flops_per_step(c, B, T, M):
    """train/log/flops.c's train_flops(): 3 x the forward's matrix products."""
    gpt = c["model_type"] == "gpt2"
    C = c["n_embd"] if gpt else c["hidden_size"]
    L = c["n_layer"] if gpt else c["num_hidden_layers"]
    inner = (c.get("n_inner") or 4 * C) if gpt else c["intermediate_size"]
    V = c["vocab_size"]
    BT = B * T
    layer = 2 * BT * C * (3 * C + C + 2 * inner) + 4.0 * B * T * T * C
    head = (2 * BT * C * V if gpt else
            2.0 * M * C * (C + V) + 2.0 * B * C * (C + 2))
    return 3 * (L * layer + head)


def torch_side(argv):
    cfg_path, (B, T, M, threads) = argv[0], map(int, argv[1:5])
    windows = int(argv[5]) if len(argv) > 5 else 3
    window = int(argv[6]) if len(argv) > 6 else 5
    warmup = int(argv[7]) if len(argv) > 7 else 3
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    torch.manual_seed(1234)
    cfg = json.load(open(cfg_path))
    gpt = cfg["model_type"] == "gpt2"
    args = {k: v for k, v in cfg.items() if k != "model_type"}
    if gpt:
        from transformers import GPT2Config, GPT2LMHeadModel
        conf = GPT2Config(**args)
        conf._attn_implementation = "eager"
        model = GPT2LMHeadModel(conf)
    else:
        from transformers import ErnieConfig, ErnieForPreTraining
        conf = ErnieConfig(**args)
        conf._attn_implementation = "eager"
        model = ErnieForPreTraining(conf)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.0)
    V = cfg["vocab_size"]
    g = torch.Generator().manual_seed(11)
    pos = torch.arange(T).expand(B, T)
    if gpt:
        ids = torch.randint(0, V, (B, T + 1), generator=g)
        x, y = ids[:, :T].contiguous(), ids[:, 1:].contiguous().reshape(-1)
    else:
        C = cfg["hidden_size"]
        ids = torch.randint(1, V, (B, T), generator=g)
        n = torch.randint(T * 3 // 4, T + 1, (B,), generator=g)
        n[0] = T
        mask = (torch.arange(T)[None, :] < n[:, None]).long()
        ids = ids * mask
        types = (torch.arange(T)[None, :] >= n[:, None] // 2).long() * mask
        task = torch.zeros_like(ids)
        # M distinct real positions, spread over the rows.
        real = torch.nonzero(mask.reshape(-1)).reshape(-1)
        mpos = real[torch.randperm(real.numel(), generator=g)[:M]].sort()[0]
        mlab = torch.randint(1, V, (M,), generator=g)
        sop = torch.randint(0, 2, (B,), generator=g)

    def step():
        opt.zero_grad(set_to_none=True)
        if gpt:
            logits = model(input_ids=x, position_ids=pos).logits
            loss = F.cross_entropy(logits.reshape(B * T, -1), y)
        else:
            seq, pooled = model.ernie(input_ids=ids, attention_mask=mask,
                                      token_type_ids=types,
                                      task_type_ids=task,
                                      position_ids=pos)[:2]
            rows = seq.reshape(B * T, C).index_select(0, mpos)
            logits = model.cls.predictions(rows)
            lm = F.cross_entropy(logits, mlab, ignore_index=-1,
                                 reduction="sum") / M
            loss = lm + F.cross_entropy(model.cls.seq_relationship(pooled),
                                        sop)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(warmup):
        step()
    flops = flops_per_step(cfg, B, T, M)
    for _ in range(windows):
        t, c = time.perf_counter(), time.process_time()
        for _ in range(window):
            step()
        t, c = time.perf_counter() - t, time.process_time() - c
        print("%.1f %.1f %.2f" % (window * B * T / t, window * B * T / c,
                                  window * flops / t / 1e9), flush=True)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def field(line, name):
    words = line.split()
    return float(words[words.index(name) + 1].rstrip(",%"))


def ours_side(argv):
    tokens_per_step = (int(argv[argv.index("--micro_batch_size") + 1]) *
                       int(argv[argv.index("--max_seq_len") + 1]))
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    peak, last, log = None, None, []
    for line in p.stderr:
        log.append(line)
        if "MFU peak:" in line:
            peak = field(line, "peak:")
            print("peak %.1f" % peak, flush=True)
        elif "global step" in line:
            c, step = cpu_seconds(p.pid), field(line, "step")
            if last is not None:
                tokens = (step - last[1]) * tokens_per_step
                print("%.0f %.1f %.2f" % (field(line, "tokens/s:"),
                                          tokens / (c - last[0]),
                                          field(line, "mfu:") / 100 * peak),
                      flush=True)
            last = (c, step)
    if p.wait() != 0:
        sys.stderr.write("".join(log[-20:]))
        sys.exit("train failed: exit status %d" % p.returncode)


def idle_fraction(seconds):
    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v)
    i0, t0 = read()
    time.sleep(seconds)
    i1, t1 = read()
    return (i1 - i0) / max(1, t1 - t0)


def quiet(argv):
    limit = float(argv[0]) if argv else 60
    t0 = time.monotonic()
    while True:
        ok = idle_fraction(2) >= 0.9
        if ok or time.monotonic() - t0 >= limit:
            print("%.0f %s" % (time.monotonic() - t0, "idle" if ok else
                               "busy"))
            return


def main():
    cmd, argv = sys.argv[1], sys.argv[2:]
    if cmd == "torch":
        torch_side(argv)
    elif cmd == "ours":
        ours_side(argv)
    elif cmd == "quiet":
        quiet(argv)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

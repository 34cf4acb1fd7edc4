#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Comparisons of two runs of `train` for run-gpu-checks (tests/gpu/).

  steps.py losses RUN           the (step, loss, lm_loss, sop_loss) of a
                                run's train_log.jsonl, the last record of
                                each step (a resumed run logs some twice)
  steps.py close REF RUN STEP   CUDA against the CPU in fp32, dropout on
                                (the same masks): the losses of every step
                                and the weights after STEP steps, within
                                the tolerances below
  steps.py band FP32 BF16       bf16 against fp32 over the whole run: the
                                loss curves' moving averages within a band
  steps.py --self-test          the tolerances against planted differences

The tolerances (the one place they are set):
- LOSS_RTOL: each step's loss, lm_loss and sop_loss within 1e-4 relative,
  the bound tests/train/run holds 1 and 2 CPU threads to.  fp32 rounding
  moves a loss by ~1e-6; a dropout mask drawn differently, by ~1e-2.
- Weights after the run, per tensor: ||dw|| / ||w|| <= W_NORM (1e-3).
  Measured: the CPU with 1 and 2 threads (OpenBLAS splits the GEMMs
  otherwise) differ by 1.6e-5 at most after 10 steps of either tiny
  model, and a few elements of a small tensor (a LayerNorm bias) move by
  1e-4 of the tensor's largest, which is why no per-element bound is
  set; the share of elements off by more than W_ELEM x max|w| is printed.
  AdamW's first steps are about lr x sign(g), so an element whose
  gradient is rounding noise (the attention key biases': exactly 0 in
  exact arithmetic) moves by up to lr a step one way on one side and the
  other way on the other (50 % of the tensor's norm, measured); those are
  reported, not judged (KEY_BIAS; GPT's c_attn.bias: its middle third).
- BAND: bf16 and fp32 loss curves, moving averages over WINDOW steps,
  within BAND_REL (3 %) of the fp32 average plus BAND_ABS (0.05), and the
  bf16 run's loss falls (its last window below its first by FALLS).

Only Python's standard library and numpy.  Exit 1 when a comparison fails.
"""
import json
import math
import os
import struct
import sys

LOSS_RTOL = 1e-4
W_NORM = 1e-3
W_ELEM = 1e-4
KEY_BIAS = ("attn.c_attn.bias", "attention.self.key.bias")
WINDOW = 20
BAND_REL = 0.03
BAND_ABS = 0.05
FALLS = 0.3


def losses(run):
    last = {}
    with open(os.path.join(run, "train_log.jsonl")) as f:
        for ln in f:
            r = json.loads(ln)
            if "global_step" in r:
                last[r["global_step"]] = (r["loss"], r.get("lm_loss", 0.0),
                                          r.get("sop_loss", 0.0))
    return [(k,) + last[k] for k in sorted(last)]


def read_safetensors(path):
    import numpy as np
    types = {"F32": np.float32, "F64": np.float64, "F16": np.float16,
             "I32": np.int32, "I64": np.int64, "U8": np.uint8}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        if t["dtype"] == "BF16":
            u = np.frombuffer(data[a:b], np.uint16).astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(data[a:b], types[t["dtype"]])
        out[name] = arr.reshape(t["shape"]).astype(np.float64)
    return out


def compare_losses(la, lb):
    """The worst relative difference of any step's losses, and where."""
    if [r[0] for r in la] != [r[0] for r in lb]:
        return math.inf, "the steps differ: %s / %s" % (
            [r[0] for r in la], [r[0] for r in lb])
    worst, at = 0.0, ""
    for ra, rb in zip(la, lb):
        for i, name in ((1, "loss"), (2, "lm_loss"), (3, "sop_loss")):
            d = abs(ra[i] - rb[i])
            rel = d / abs(ra[i]) if ra[i] else (0.0 if d == 0 else math.inf)
            if not rel <= worst:
                worst, at = rel, "step %d %s %.7g / %.7g" % (
                    ra[0], name, ra[i], rb[i])
    return worst, at


def norm_rel(a, b):
    """||b - a|| / ||a|| (inf if b is not finite)."""
    import numpy as np
    if not np.all(np.isfinite(b)):
        return math.inf
    na = float(np.sqrt(np.sum(a * a)))
    d = float(np.sqrt(np.sum((a - b) ** 2)))
    return d / na if na else (0.0 if d == 0 else math.inf)


def compare_weights(wa, wb):
    """Per tensor: ||d|| / ||w|| within W_NORM, the key biases aside.
    Returns (failures, worst norm, its tensor, worst share of elements
    off by more than W_ELEM max|w|, its tensor, report lines)."""
    import numpy as np
    fails, lines = 0, []
    wn, wn_at, wf, wf_at = 0.0, "", 0.0, ""
    for name in sorted(set(wa) | set(wb)):
        if name not in wa or name not in wb or wa[name].shape != wb[name].shape:
            fails += 1
            lines.append("FAIL %s: missing or another shape" % name)
            continue
        a, b = wa[name].ravel(), wb[name].ravel()
        judged = np.ones(a.size, bool)
        if name.endswith(KEY_BIAS[0]):  # GPT: q, k, v biases side by side
            judged[a.size // 3:2 * a.size // 3] = False
        elif name.endswith(KEY_BIAS):
            judged[:] = False
        if not judged.all():
            lines.append("note %s: the key bias |dw|/|w| %.3g (a rounding-"
                         "noise gradient: not judged)" % (
                             name, norm_rel(a[~judged], b[~judged])))
        if not judged.any():
            continue
        a, b = a[judged], b[judged]
        rel = norm_rel(a, b)
        share = float(np.mean(np.abs(a - b) > W_ELEM * float(
            np.abs(a).max()))) if np.all(np.isfinite(b)) else math.inf
        bad = not rel <= W_NORM
        fails += bad
        if bad:
            lines.append("FAIL %s: |dw|/|w| %.3g, %.3g%% of elements off" %
                         (name, rel, 100 * share))
        if not rel <= wn:
            wn, wn_at = rel, name
        if not share <= wf:
            wf, wf_at = share, name
    return fails, wn, wn_at, wf, wf_at, lines


def cmd_close(ref, run, step):
    la, lb = losses(ref), losses(run)
    worst, at = compare_losses(la, lb)
    ok = worst <= LOSS_RTOL and len(la) == step
    print("losses: %d steps, worst relative difference %.3g (%s); "
          "tolerance %g" % (len(la), worst, at, LOSS_RTOL))
    wa = read_safetensors(os.path.join(ref, "model_%d" % step,
                                       "model.safetensors"))
    wb = read_safetensors(os.path.join(run, "model_%d" % step,
                                       "model.safetensors"))
    fails, wn, wn_at, wf, wf_at, lines = compare_weights(wa, wb)
    for ln in lines:
        print(ln)
    ok = ok and fails == 0
    print("%s: losses within %.2g (tol %g); weights: worst |dw|/|w| %.3g%s "
          "(tol %g); most elements off by > %g max|w|: %.3g%%%s" % (
              "ok" if ok else "FAIL", worst, LOSS_RTOL, wn,
              " (%s)" % wn_at if wn_at else "", W_NORM, W_ELEM, 100 * wf,
              " (%s)" % wf_at if wf_at else ""))
    return 0 if ok else 1


def moving(vals, w):
    return [sum(vals[i:i + w]) / w for i in range(len(vals) - w + 1)]


def cmd_band(fp32, bf16):
    la, lb = losses(fp32), losses(bf16)
    if [r[0] for r in la] != [r[0] for r in lb] or len(la) < 2 * WINDOW:
        print("FAIL: the runs' steps differ or are fewer than %d" %
              (2 * WINDOW))
        return 1
    ma, mb = moving([r[1] for r in la], WINDOW), moving([r[1] for r in lb],
                                                        WINDOW)
    worst, at, ok = 0.0, 0, True
    for i, (a, b) in enumerate(zip(ma, mb)):
        ratio = abs(b - a) / (BAND_REL * abs(a) + BAND_ABS)
        if not ratio <= worst:
            worst, at = ratio, i
    ok = worst <= 1.0 and mb[-1] < mb[0] - FALLS
    print("%s: %d steps, %d-step averages: fp32 %.4f -> %.4f, bf16 %.4f -> "
          "%.4f; worst gap %.4f at steps %d-%d = %.2f of the band (%g x fp32 "
          "+ %g)" % ("ok" if ok else "FAIL", len(la), WINDOW, ma[0], ma[-1],
                     mb[0], mb[-1], abs(mb[at] - ma[at]), at + 1, at + WINDOW,
                     worst, BAND_REL, BAND_ABS))
    return 0 if ok else 1


def self_test():
    """The comparisons on made-up runs: equal, within and beyond each
    tolerance."""
    try:
        import numpy as np
    except ImportError:
        print("FAIL numpy is missing for %s (the GPU checks' comparisons "
              "need it)" % sys.executable)
        return 1
    fails = 0

    def check(name, cond):
        nonlocal fails
        print("%s %s" % ("ok  " if cond else "FAIL", name))
        fails += not cond

    la = [(k, 8.0 - 0.1 * k, 7.0, 1.0) for k in range(1, 11)]
    check("losses: equal runs", compare_losses(la, la)[0] == 0)
    lb = [(k, l * (1 + 5e-5), m, s) for k, l, m, s in la]
    check("losses: 5e-5 relative passes", compare_losses(la, lb)[0] <= LOSS_RTOL)
    lb = [(k, l * (1 + 5e-4), m, s) for k, l, m, s in la]
    check("losses: 5e-4 relative fails", compare_losses(la, lb)[0] > LOSS_RTOL)
    check("losses: a missing step fails",
          compare_losses(la, la[:-1])[0] == math.inf)
    rng = np.random.default_rng(1)
    w = {"h.0.mlp.c_fc.weight": rng.normal(0, 0.02, (64, 32)),
         "h.0.attn.c_attn.bias": rng.normal(0, 1e-3, 96)}
    near = {k: v * (1 + 1e-6) for k, v in w.items()}
    check("weights: 1e-6 relative passes", compare_weights(w, near)[0] == 0)
    flip = {k: v.copy() for k, v in w.items()}
    flip["h.0.mlp.c_fc.weight"][0, 0] += 2e-4  # one element, by lr / 10
    check("weights: one element moved by lr / 10 passes",
          compare_weights(w, flip)[0] == 0)
    flip["h.0.mlp.c_fc.weight"][1:4, :] += 2e-3  # 96 of them, by lr
    check("weights: 5 % of a tensor moved by lr fails",
          compare_weights(w, flip)[0] == 1)
    off = {k: v * (1 + 1e-2) for k, v in w.items()}
    check("weights: 1e-2 relative fails", compare_weights(w, off)[0] == 2)
    kb = {k: v.copy() for k, v in w.items()}
    kb["h.0.attn.c_attn.bias"][32:64] += 1e-2
    check("weights: GPT's key bias is noted, not judged",
          compare_weights(w, kb)[0] == 0)
    kb["h.0.attn.c_attn.bias"][0] += 1e-2
    check("weights: GPT's query bias is judged",
          compare_weights(w, kb)[0] == 1)
    nan = {k: v.copy() for k, v in w.items()}
    nan["h.0.mlp.c_fc.weight"][1, 1] = np.nan
    check("weights: NaN fails", compare_weights(w, nan)[0] == 1)
    print("steps-self-test: %d failed" % fails)
    return 1 if fails else 0


def main(argv):
    if argv[:1] == ["losses"] and len(argv) == 2:
        for r in losses(argv[1]):
            print(*r)
        return 0
    if argv[:1] == ["close"] and len(argv) == 4:
        return cmd_close(argv[1], argv[2], int(argv[3]))
    if argv[:1] == ["band"] and len(argv) == 3:
        return cmd_band(argv[1], argv[2])
    if argv == ["--self-test"]:
        return self_test()
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

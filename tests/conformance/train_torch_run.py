#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Exactness of the trainer (build/tests/drv_train) against PyTorch and
Hugging Face transformers' own models.

Cases (CASES): ernie-tiny (gelu, 2 layers, clip 1.0, linear schedule),
ernie-relu (relu, 1 layer, type_vocab 2, clip 0.05), gpt-tiny (GPT-2,
gelu_new, no clip, cosine), gpt-clip-mid (GPT-2, 1 layer, linear, the clip
at the median global norm of an unclipped run so that some steps clip and
some do not); each 10 steps, lr 1e-3 -> 1e-4, warmup 3, decay 8 (warmup,
decay and past-decay steps all run), weight decay 0.01, Adam 0.9/0.999/1e-8.
Per case:

1. `drv_train init CONFIG.json SEED W.safetensors` writes initial weights
   under Hugging Face names; they must load into transformers'
   ErnieForPreTraining / GPT2LMHeadModel with no unexpected key and no
   missing key but the tied ones (cls.predictions.decoder.weight and
   .bias, lm_head.weight), every tensor F32 of HF's shape, the same seed
   giving the same weights, and sane initial values (LayerNorm 1/0, biases
   0, finite, matrices of roughly initializer_range's spread).
2. A deterministic batch (numpy RandomState) is written to B.safetensors:
   ERNIE input_ids, token_type_ids, attention_mask (rows padded at the
   end), masked_positions (b*T+pos, real tokens only, padded with slots at
   position 0 labelled -1 up to a multiple of 8), masked_labels,
   sop_labels; GPT input_ids and labels (the next tokens), all I32.
3. The reference, in fp32 on the CPU with one thread: loss, lm_loss,
   sop_loss and every parameter's gradient (tied weights once, the tied
   embedding's gradient including the decoder's), then N steps of:
   forward+backward, global-norm clipping (PaddlePaddle's
   ClipGradByGlobalNorm), torch.optim.AdamW with the warmup + linear or
   cosine decay schedule, weight decay on parameters with ndim >= 2 only.
   lm_loss = sum of CE over the masked slots with label >= 0 / M (all M
   slots counted, PaddleNLP's normalisation); sop_loss = mean CE; GPT loss
   = mean CE over all B*T positions.
4. `drv_train run CONFIG W B OUT --steps N ...` must write loss, lm_loss,
   sop_loss (F32 [1]), grad.<name> for every weight (unclipped), losses
   (F32 [N], each before its step's update) and param.<name> (after N
   steps), each within the tolerances of the reference.

Tolerances (TOL and the constants after it: the one place they are set).
An element passes when |ours - ref| <= atol + rtol * |ref|, atol =
atol_scale * max|ref| of the tensor (fp32 reassociation: sums in another
order, another GEMM).  Three refinements, each for a reason that the
self-test and --calibrate showed:
- grad: atol is at least NOISE_FACTOR times the largest |fp32 - fp64| of
  the tensor's gradient as the reference computes it, since a gradient
  that is a difference of much larger terms (the SOP head's bias, the
  pooler's) carries the rounding of the terms.  The attention key biases'
  gradient is 0 in exact arithmetic (rounding noise on both sides), so its
  atol is relative to the layer's q/k/v biases (key_bias()).
- param: AdamW's first steps are about lr * sign(g), so an error in a
  gradient near 0 moves a parameter by up to lr.  Each parameter's
  tolerance adds (a) the first-order effect on AdamW of every step's
  gradient being off by its grad tolerance (AdamAllowance), and (b)
  SPREAD_FACTOR times the largest deviation of SPREAD_RUNS reference
  trajectories whose gradients were perturbed at random within that
  tolerance (spread(): the flip of one parameter changes the later
  gradients of all the others).  Where the reference gradient is exactly 0
  (an embedding row not looked up) ours must be too.  The info line says
  how many parameters' allowance exceeds 10x the plain tolerance.
For each group the worst absolute error, the worst error relative to the
tensor's scale (|ours - ref| / max|ref|) and the largest share of the
tolerance used are printed with the tensor's name, and for each element
out of tolerance, the worst with its index and both values.

Usage: train_torch_run.py [BUILD_DIR]        (default build)
       --self-test    stand in for drv_train: weights from HF's own
           initialisation (torch.manual_seed(SEED)), `run` by this file's
           FakeDriver, a second, independent implementation in plain torch
           ops (its own ERNIE/GPT forward, losses, clipping, AdamW and
           schedule; no transformers, torch.nn or torch.optim), through the
           same command line and files, to check this file's batch layout,
           loss normalisation, schedule and clipping without the C side.
           With TRAIN_TORCH_MUTANT=NAME (see MUTANTS) the stand-in carries
           a planted bug, which the suite must catch.
       --calibrate    also run the reference in float64 and print how far
           its fp32 run is from it, against the same tolerances.
       --seed-offset K   add K to every init and batch seed.
       --keep         keep the temporary directory.
       --device cuda  `drv_train run` on the GPU (float32, TF32 off), the
           reference still PyTorch on the CPU in float32; the same
           tolerances (run-gpu-checks runs this).
       --drv PATH     the driver to run (default BUILD_DIR/tests/drv_train).

Prints one line per check (and "info" lines) and ends with
"train-torch-conformance: N passed, N failed, N skipped"; exits 1 on a
failure.  A missing drv_train is a failure, not a skip.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Results  # noqa: E402

SUITE = "train-torch-conformance"

# The tolerances, all of them (see the top of this file for what they mean).
# (rtol, atol_scale): |ours - ref| <= atol_scale * max|ref| + rtol * |ref|.
TOL = {
    "loss": (1e-5, 1e-6),    # loss, lm_loss, sop_loss: before any step
    "grad": (1e-4, 1e-6),    # grad.<name>: the first gradients, unclipped
    "losses": (1e-5, 1e-6),  # losses[k]: after k optimizer steps
    "param": (1e-5, 1e-6),   # param.<name>: after N steps, + AdamW allowance
}
NOISE_FACTOR = 10  # grad atol >= this * the reference's own fp32 rounding
SPREAD_RUNS = 2    # perturbed reference trajectories for the allowance
SPREAD_FACTOR = 2  # times the largest deviation seen among them

STEPS = dict(steps=10, max_lr=1e-3, min_lr=1e-4, warmup_steps=3,
             decay_steps=8, weight_decay=0.01, beta1=0.9, beta2=0.999,
             eps=1e-8)

ERNIE_BASE = {
    "architectures": ["ErnieForPreTraining"],
    "model_type": "ernie",
    "vocab_size": 1000,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
    "max_position_embeddings": 64,
    "type_vocab_size": 4,
    "task_type_vocab_size": 3,
    "use_task_id": True,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
}

GPT_BASE = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "vocab_size": 1000,
    "n_embd": 64,
    "n_layer": 2,
    "n_head": 4,
    "n_inner": None,
    "n_positions": 64,
    "activation_function": "gelu_new",
    "resid_pdrop": 0.0,
    "embd_pdrop": 0.0,
    "attn_pdrop": 0.0,
    "layer_norm_epsilon": 1e-5,
    "initializer_range": 0.02,
    "scale_attn_weights": True,
    "scale_attn_by_inverse_layer_idx": False,
    "reorder_and_upcast_attn": False,
}

CASES = [
    # name, config, B, T, schedule, grad_clip, init seed, batch seed
    ("ernie-tiny", dict(ERNIE_BASE), 4, 32, "linear", 1.0, 1234, 11),
    ("ernie-relu", dict(ERNIE_BASE, hidden_act="relu", num_hidden_layers=1,
                        type_vocab_size=2), 4, 32, "linear", 0.05, 7, 12),
    ("gpt-tiny", dict(GPT_BASE), 4, 32, "cosine", 0.0, 42, 13),
    # "mid": the median of the global norms of an unclipped trajectory, so
    # that some steps clip and some do not (a clip that is on but idle must
    # leave the gradients alone)
    ("gpt-clip-mid", dict(GPT_BASE, n_layer=1), 4, 32, "linear", "mid", 5,
     14),
]

# Written once: the tied copies are omitted by drv_train init.
TIED = {"ernie": ["cls.predictions.decoder.weight",
                  "cls.predictions.decoder.bias"],
        "gpt2": ["lm_head.weight"]}


def key_bias(name, shape, cfg):
    """The attention key biases' gradient is 0 in exact arithmetic (adding
    q.b_k to every score of a softmax row changes nothing); in fp32 it is
    rounding noise of either side's sums, which neither the tensor's own
    scale nor AdamW (it normalises noise to steps of size lr) can judge.
    Returns (mask of those elements, names whose gradients set their
    scale: the layer's q/k/v biases), or None for other tensors."""
    if cfg["model_type"] == "ernie":
        if name.endswith("attention.self.key.bias"):
            pre = name[:-len("key.bias")]
            return (np.ones(shape, bool),
                    [pre + "query.bias", pre + "key.bias", pre + "value.bias"])
        return None
    if name.endswith("attn.c_attn.bias"):
        h = cfg["n_embd"]
        mask = np.zeros(shape, bool)
        mask[h:2 * h] = True
        return mask, [name]
    return None


# ------------------------------------------------------------ shared math

def lr_at(e, max_lr, min_lr, w, d, schedule):
    """Learning rate of optimizer step e (1-based)."""
    if w > 0 and e <= w:
        return max_lr * e / w
    if e > d:
        return min_lr
    ratio = (e - w) / (d - w)
    if schedule == "linear":
        return min_lr + (1.0 - ratio) * (max_lr - min_lr)
    coeff = 0.5 * (math.cos(math.pi * ratio) + 1.0)
    return min_lr + coeff * (max_lr - min_lr)


def st_load(path):
    from safetensors.numpy import load_file
    return load_file(path)


def st_save(tensors, path):
    from safetensors.numpy import save_file
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, path)


# ------------------------------------------------------------------ batch

def make_batch(cfg, B, T, seed):
    rng = np.random.RandomState(seed)
    V = cfg["vocab_size"]
    if cfg["model_type"] == "gpt2":
        ids = rng.randint(0, V, size=(B, T + 1)).astype(np.int32)
        return {"input_ids": ids[:, :T].copy(), "labels": ids[:, 1:].copy()}
    tv = cfg["type_vocab_size"]
    lengths = [T] + sorted(rng.randint(6, T, size=B - 1).tolist(),
                           reverse=True)
    input_ids = np.zeros((B, T), np.int32)
    token_type = np.zeros((B, T), np.int32)
    mask = np.zeros((B, T), np.int32)
    positions, labels = [], []
    for b, n in enumerate(lengths):
        input_ids[b, :n] = rng.randint(1, V, size=n)
        split = rng.randint(2, n)
        token_type[b, split:n] = 1
        if tv > 2:  # reach the other rows of the table too
            for p in rng.choice(n, size=3, replace=False):
                token_type[b, p] = rng.randint(0, tv)
        mask[b, :n] = 1
        k = max(1, int(round(0.15 * n)))
        for p in sorted(rng.choice(np.arange(1, n), size=k, replace=False)):
            positions.append(b * T + int(p))
            labels.append(int(rng.randint(1, V)))
    if len(positions) % 8 == 0:  # keep at least one padding slot
        positions.pop()
        labels.pop()
    m = (len(positions) + 7) // 8 * 8
    pad = m - len(positions)
    positions += [0] * pad
    labels += [-1] * pad
    return {"input_ids": input_ids, "token_type_ids": token_type,
            "attention_mask": mask,
            "masked_positions": np.array(positions, np.int32),
            "masked_labels": np.array(labels, np.int32),
            "sop_labels": rng.randint(0, 2, size=B).astype(np.int32)}


# -------------------------------------------------------------- reference

def hf_model(cfg, dtype):
    import torch
    if cfg["model_type"] == "ernie":
        from transformers import ErnieConfig, ErnieForPreTraining
        conf = ErnieConfig(**{k: v for k, v in cfg.items()
                              if k != "model_type"})
        conf._attn_implementation = "eager"
        model = ErnieForPreTraining(conf)
    else:
        from transformers import GPT2Config, GPT2LMHeadModel
        conf = GPT2Config(**{k: v for k, v in cfg.items()
                             if k != "model_type"})
        conf._attn_implementation = "eager"
        model = GPT2LMHeadModel(conf)
    model.eval()
    return model.to(dtype) if dtype != torch.float32 else model


def written_names(model, kind):
    """state_dict keys minus the tied copies (buffers are non-persistent)."""
    return [k for k in model.state_dict() if k not in TIED[kind]]


def tie_holds(model, kind):
    if kind == "ernie":
        p = model.cls.predictions
        return (p.decoder.weight is
                model.ernie.embeddings.word_embeddings.weight and
                p.decoder.bias is p.bias)
    return model.lm_head.weight is model.transformer.wte.weight


def hf_loss(model, kind, batch):
    import torch
    import torch.nn.functional as F
    t = {k: torch.from_numpy(v.astype(np.int64)) for k, v in batch.items()}
    B, T = t["input_ids"].shape
    if kind == "gpt2":
        logits = model(input_ids=t["input_ids"],
                       position_ids=torch.arange(T).expand(B, T)).logits
        lm = F.cross_entropy(logits.reshape(B * T, -1),
                             t["labels"].reshape(-1))
        return lm, lm, torch.zeros((), dtype=logits.dtype)
    out = model(input_ids=t["input_ids"],
                attention_mask=t["attention_mask"],
                token_type_ids=t["token_type_ids"],
                task_type_ids=torch.zeros_like(t["input_ids"]),
                position_ids=torch.arange(T).expand(B, T))
    logits = out.prediction_logits.reshape(B * T, -1)[t["masked_positions"]]
    m = t["masked_labels"].shape[0]
    lm = F.cross_entropy(logits, t["masked_labels"], ignore_index=-1,
                         reduction="sum") / m
    sop = F.cross_entropy(out.seq_relationship_logits, t["sop_labels"])
    return lm + sop, lm, sop


def load_weights(res, label, model, kind, weights):
    """Load drv_train's weights into the HF model; returns the names."""
    import torch
    sd = model.state_dict()
    expect = written_names(model, kind)
    problems = []
    extra = sorted(set(weights) - set(expect))
    if extra:
        problems.append("unexpected names (tied copies and buffers are not "
                        "written): %s" % ", ".join(extra))
    missing = [k for k in expect if k not in weights]
    if missing:
        problems.append("missing names: %s" % ", ".join(missing))
    for k in expect:
        if k not in weights:
            continue
        w = weights[k]
        if w.dtype != np.float32:
            problems.append("%s is %s, not F32" % (k, w.dtype))
        if tuple(w.shape) != tuple(sd[k].shape):
            problems.append("%s has shape %s, HF %s" % (
                k, list(w.shape), list(sd[k].shape)))
    if not problems:
        dtype = next(model.parameters()).dtype
        missing, unexpected = model.load_state_dict(
            {k: torch.from_numpy(v).to(dtype) for k, v in weights.items()},
            strict=False)
        if sorted(missing) != sorted(TIED[kind]):
            problems.append("transformers says missing: %s" % ", ".join(
                sorted(set(missing) ^ set(TIED[kind]))))
        if unexpected:
            problems.append("unexpected names: %s" % ", ".join(unexpected))
        if not tie_holds(model, kind):
            problems.append("the tied weights came apart in loading")
    if problems:
        res.fail(label, "  " + "\n  ".join(problems))
        return None
    res.ok(label, "%d tensors" % len(expect))
    return expect


class GradTol:
    """TOL["grad"], elementwise: |ours - ref| <= atol + rtol * |ref| with
    atol = the largest of
      atol_scale * max|ref| of the tensor (for a key bias: of the layer's
        q/k/v biases, see key_bias);
      NOISE_FACTOR * max|fp32 - fp64| of the tensor's first gradient as
        the reference computes it: a gradient that is a difference of much
        larger terms (the SOP head's bias: mean of p - y over 4 rows; the
        pooler's bias) carries the rounding of the terms, not of itself.
    noise: {name: max|g32 - g64|} or None."""

    def __init__(self, cfg, noise=None):
        self.cfg = cfg
        self.noise = noise or {}

    def tol(self, grads):
        rtol, ascale = TOL["grad"]
        out = {}
        for n, g in grads.items():
            floor = NOISE_FACTOR * self.noise.get(n, 0.0)
            own = float(np.max(np.abs(g))) if g.size else 0.0
            t = max(ascale * own, floor) + rtol * np.abs(g)
            kb = key_bias(n, g.shape, self.cfg)
            if kb is not None:
                mask, group = kb
                s = max(float(np.max(np.abs(grads[m]))) for m in group)
                t = np.where(mask, max(ascale * s, floor) + rtol * np.abs(g),
                             t)
            out[n] = t
        return out

    def deltas(self, raw):
        """tol() of one step's gradients (before clipping) as AdamAllowance
        and spread() use it, but 0 where the gradient is exactly 0 (an
        embedding row not looked up: ours must keep it exactly 0), except
        on key biases."""
        out = {}
        for n, t in self.tol(raw).items():
            kb = key_bias(n, raw[n].shape, self.cfg)
            live = raw[n] != 0
            if kb is not None:
                live = live | kb[0]
            out[n] = np.where(live, t, 0.0)
        return out


class AdamAllowance:
    """How far AdamW may carry a parameter from the reference when each
    step's gradient may differ by up to its TOL["grad"] tolerance delta:
    first order, du <= dm/(sqrt(v)+eps) + |m| dsqrt(v)/(sqrt(v)+eps)^2 with
    bias-corrected moments, dm and dv the same moving averages of delta and
    2|g| delta + delta^2, and the step's share lr*du capped at
    2*lr*max(1, |u|) (both sides move at most about lr*|u|).  It is small
    where |g| is well above its tolerance and reaches the cap where AdamW
    turns a gradient near 0 into a step of size lr, whose sign then is
    anyone's: the key biases (key_bias) and the rare element whose gradient
    is near 0 at some step.  (What such a flip does to the other
    parameters' later gradients is second order and not in here: see
    spread().)"""

    def __init__(self, names, params, gt, opts):
        self.o = opts
        self.gt = gt
        z = {n: np.zeros(params[n].shape) for n in names}
        self.m, self.v = dict(z), {n: z[n].copy() for n in names}
        self.dm = {n: z[n].copy() for n in names}
        self.dv = {n: z[n].copy() for n in names}
        self.a = {n: z[n].copy() for n in names}

    def step(self, k, lr, raw, scale):
        o = self.o
        b1, b2, eps = o["beta1"], o["beta2"], o["eps"]
        deltas = self.gt.deltas(raw)
        for n, gr in raw.items():
            delta = scale * deltas[n]
            g = scale * gr
            self.m[n] = b1 * self.m[n] + (1 - b1) * g
            self.v[n] = b2 * self.v[n] + (1 - b2) * g * g
            self.dm[n] = b1 * self.dm[n] + (1 - b1) * delta
            self.dv[n] = b2 * self.dv[n] + (1 - b2) * (
                2 * np.abs(g) * delta + delta * delta)
            mh = self.m[n] / (1 - b1 ** k)
            vh = self.v[n] / (1 - b2 ** k)
            dmh = self.dm[n] / (1 - b1 ** k)
            dvh = self.dv[n] / (1 - b2 ** k)
            sq = np.sqrt(vh)
            den = sq + eps
            dsq = np.sqrt(vh + dvh) - sq
            du = dmh / den + np.abs(mh) * dsq / (den * den)
            cap = 2 * np.maximum(1.0, np.abs(mh / den))
            self.a[n] += lr * np.minimum(du, cap)


def reference(model, cfg, names, batch, opts, gt=None, perturb=None):
    """First loss and gradients, then the trajectory, with torch.optim;
    also the AdamW allowance of every parameter.  perturb (a RandomState):
    add to every gradient, before clipping, noise uniform within its
    TOL["grad"] (see spread())."""
    import torch
    kind = cfg["model_type"]
    params = dict(model.named_parameters())
    assert sorted(params) == sorted(names), (sorted(params), sorted(names))
    decay = [params[n] for n in names if params[n].ndim >= 2]
    plain = [params[n] for n in names if params[n].ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": opts["weight_decay"]},
         {"params": plain, "weight_decay": 0.0}],
        lr=opts["max_lr"], betas=(opts["beta1"], opts["beta2"]),
        eps=opts["eps"])
    gt = gt or GradTol(cfg)
    allow = AdamAllowance(names, params, gt, opts)
    out, losses, norms = {}, [], []
    for k in range(1, opts["steps"] + 1):
        opt.zero_grad(set_to_none=True)
        loss, lm, sop = hf_loss(model, kind, batch)
        loss.backward()
        losses.append(loss.item())
        raw = {n: params[n].grad.detach().double().numpy().copy()
               for n in names}
        if perturb is not None:
            for n, dl in gt.deltas(raw).items():
                noise = dl * perturb.uniform(-1, 1, size=dl.shape)
                params[n].grad.add_(torch.from_numpy(noise).to(
                    params[n].grad.dtype))
        if k == 1:
            out["loss"] = np.array([loss.item()])
            out["lm_loss"] = np.array([lm.item()])
            out["sop_loss"] = np.array([sop.item()])
            for n in names:
                out["grad." + n] = raw[n]
        scale = 1.0
        with torch.no_grad():
            gn = torch.sqrt(sum((params[n].grad * params[n].grad).sum()
                                for n in names))
            norms.append(gn.item())
            clip = opts["grad_clip"]
            if clip > 0:
                s = clip / torch.clamp(gn, min=clip)
                scale = s.item()
                for n in names:
                    params[n].grad.mul_(s)
        lr = lr_at(k, opts["max_lr"], opts["min_lr"], opts["warmup_steps"],
                   opts["decay_steps"], opts["schedule"])
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        allow.step(k, lr, raw, scale)
    out["losses"] = np.array(losses)
    for n in names:
        out["param." + n] = params[n].detach().double().numpy().copy()
    return out, norms, allow.a


# ------------------------------------------------------------- comparison

def compare(res, label, group, ours, ref, names, tols=None, aside=None):
    """One check over the named tensors of a group: TOL[group] elementwise,
    or tols[name] (an array) where given.  aside: {name: mask} of elements
    (the key biases) left out of the worst abs and rel-to-scale figures
    (their values are rounding noise) and reported on their own."""
    rtol, ascale = TOL[group]
    problems = []
    worst_abs = (0.0, "-")
    worst_rel = (0.0, "-")
    worst_use = (0.0, "-")
    worst_aside = 0.0
    for n in names:
        r = np.asarray(ref[n], np.float64)
        if n not in ours:
            problems.append("%s: missing" % n)
            continue
        o = ours[n]
        if o.dtype != np.float32:
            problems.append("%s: %s, not F32" % (n, o.dtype))
        if o.shape != r.shape:
            problems.append("%s: shape %s, reference %s" % (
                n, list(o.shape), list(r.shape)))
            continue
        o = o.astype(np.float64)
        if not np.all(np.isfinite(o)):
            problems.append("%s: not finite" % n)
            continue
        if r.size == 0:
            continue
        d = np.abs(o - r)
        scale = float(np.max(np.abs(r)))
        if tols is not None and n in tols:
            tol = tols[n]
        else:
            tol = ascale * scale + rtol * np.abs(r)
        main = d
        if aside is not None and n in aside:
            m = np.broadcast_to(aside[n], d.shape)
            worst_aside = max(worst_aside, float(np.max(d[m])))
            main = np.where(m, 0.0, d)
            scale = float(np.max(np.where(m, 0.0, np.abs(r))))
        i = int(np.argmax(main))
        if main.flat[i] > worst_abs[0]:
            worst_abs = (float(main.flat[i]), n)
        if scale > 0 and main.flat[i] / scale > worst_rel[0]:
            worst_rel = (float(main.flat[i] / scale), n)
        with np.errstate(divide="ignore", invalid="ignore"):
            use = np.where(tol > 0, d / np.where(tol > 0, tol, 1.0),
                           np.where(d > 0, np.inf, 0.0))
        j = int(np.argmax(use))
        if use.flat[j] > worst_use[0]:
            worst_use = (float(use.flat[j]), n)
        bad = int(np.count_nonzero(d > tol))
        if bad:
            at = tuple(int(x) for x in np.unravel_index(j, d.shape))
            problems.append(
                "%s: %d of %d elements out of tolerance; worst at %s: "
                "ours %.9g, reference %.9g, tolerance %.3g" % (
                    n, bad, d.size, at, o.flat[j], r.flat[j],
                    float(np.broadcast_to(tol, d.shape)[at])))
    detail = ("worst abs %.3g (%s), rel-to-scale %.3g (%s), "
              "tolerance used %.3g (%s)" % (worst_abs[0], worst_abs[1],
                                            worst_rel[0], worst_rel[1],
                                            worst_use[0], worst_use[1]))
    if aside and any(n in aside for n in names):
        detail += "; key biases: worst abs %.3g" % worst_aside
    if group == "grad":
        atol = "max(%g*max|ref|, %d*fp32 noise)" % (ascale, NOISE_FACTOR)
    else:
        atol = "%g*max|ref|" % ascale
    name = "%s %s (%d tensors, rtol %g, atol %s%s)" % (
        label, group, len(names), rtol, atol,
        " + AdamW allowance" if group == "param" else "")
    if problems:
        res.fail(name, "  " + detail + "\n  " + "\n  ".join(problems[:12]) +
                 ("\n  ... %d more" % (len(problems) - 12)
                  if len(problems) > 12 else ""))
    else:
        res.ok(name, detail)
    return worst_use


def fresh_model(cfg, weights, dtype):
    import torch
    model = hf_model(cfg, dtype)
    model.load_state_dict({k: torch.from_numpy(v).to(dtype)
                           for k, v in weights.items()}, strict=False)
    return model


def spread(cfg, weights, names, batch, opts, ref, gt):
    """The chaotic part of AdamW's trajectory: its first steps are nearly
    lr * sign(g), so an element whose gradient is within rounding of 0
    goes either way, and that step of size lr moves the later gradients of
    every other parameter by far more than rounding.  No first-order bound
    sees it; this measures it: the reference's trajectory again, with every
    gradient of every step perturbed within its TOL["grad"], SPREAD_RUNS
    times; SPREAD_FACTOR times the largest deviation of each parameter is
    added to its tolerance."""
    import torch
    out = {n: np.zeros(ref["param." + n].shape) for n in names}
    for r in range(SPREAD_RUNS):
        model = fresh_model(cfg, weights, torch.float32)
        pert, _, _ = reference(model, cfg, names, batch, opts, gt,
                               perturb=np.random.RandomState(1000 + r))
        for n in names:
            out[n] = np.maximum(out[n], np.abs(pert["param." + n] -
                                               ref["param." + n]))
    return {n: SPREAD_FACTOR * v for n, v in out.items()}


def rounding_noise(cfg, weights, names, batch):
    """Per tensor, max|fp32 - fp64| of the reference's first gradient."""
    import torch
    g = {}
    for dtype in (torch.float32, torch.float64):
        model = fresh_model(cfg, weights, dtype)
        hf_loss(model, cfg["model_type"], batch)[0].backward()
        params = dict(model.named_parameters())
        g[dtype] = {n: params[n].grad.double().numpy() for n in names}
    return {n: float(np.max(np.abs(g[torch.float32][n] -
                                   g[torch.float64][n]))) for n in names}


def tolerances(ref, names, allowance, gt):
    """The elementwise tolerances of the grad and param groups."""
    gtol = gt.tol({n: ref["grad." + n] for n in names})
    tols = {}
    for n in names:
        tols["grad." + n] = gtol[n]
        rtol, ascale = TOL["param"]
        p = ref["param." + n]
        tols["param." + n] = (ascale * float(np.max(np.abs(p))) +
                              rtol * np.abs(p) + allowance[n])
    return tols


# ----------------------------------------------------------------- checks

def init_sane(res, label, cfg, weights):
    """Loose checks of drv_train's initial values (not its exact draws)."""
    problems = []
    rng = cfg["initializer_range"]
    for n, w in sorted(weights.items()):
        if not np.all(np.isfinite(w)):
            problems.append("%s: not finite" % n)
            continue
        ln = ("LayerNorm" in n or ".ln_" in n or "ln_f" in n)
        if ln and n.endswith(".weight"):
            if not np.all(w == 1):
                problems.append("%s: LayerNorm weight not all 1" % n)
        elif n.endswith(".bias") or n == "cls.predictions.bias":
            if not np.all(w == 0):
                problems.append("%s: bias not all 0" % n)
        elif w.ndim == 2:
            sd = float(np.std(w))
            if not 0.25 * rng <= sd <= 2 * rng:
                problems.append("%s: std %.4g, initializer_range %g" % (
                    n, sd, rng))
    if problems:
        res.fail(label, "  " + "\n  ".join(problems))
    else:
        res.ok(label)


def schedule_table(res):
    """The schedule against values worked out by hand (w 3, d 8)."""
    want = {"linear": [1e-3 / 3, 2e-3 / 3, 1e-3, 8.2e-4, 6.4e-4, 4.6e-4,
                       2.8e-4, 1e-4, 1e-4, 1e-4],
            "cosine": [1e-3 / 3, 2e-3 / 3, 1e-3,
                       1e-4 + 0.5 * (math.cos(math.pi * 0.2) + 1) * 9e-4,
                       1e-4 + 0.5 * (math.cos(math.pi * 0.4) + 1) * 9e-4,
                       1e-4 + 0.5 * (math.cos(math.pi * 0.6) + 1) * 9e-4,
                       1e-4 + 0.5 * (math.cos(math.pi * 0.8) + 1) * 9e-4,
                       1e-4, 1e-4, 1e-4]}
    for sched, vals in want.items():
        got = [lr_at(e, 1e-3, 1e-4, 3, 8, sched) for e in range(1, 11)]
        if np.allclose(got, vals, rtol=1e-12, atol=0):
            res.ok("schedule %s warmup 3 decay 8 by hand" % sched)
        else:
            res.fail("schedule %s" % sched, "  got %s\n  want %s" % (got,
                                                                     vals))


def run_tool(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s\nexited %d; stderr:\n%s" % (
            " ".join(cmd), p.returncode,
            p.stderr.decode(errors="replace").rstrip()))
    return p.stdout.decode(errors="replace")


def run_args(opts):
    return ["--steps", str(opts["steps"]), "--max-lr", repr(opts["max_lr"]),
            "--min-lr", repr(opts["min_lr"]),
            "--warmup-steps", str(opts["warmup_steps"]),
            "--decay-steps", str(opts["decay_steps"]),
            "--schedule", opts["schedule"],
            "--weight-decay", repr(opts["weight_decay"]),
            "--grad-clip", repr(opts["grad_clip"]),
            "--beta1", repr(opts["beta1"]), "--beta2", repr(opts["beta2"]),
            "--eps", repr(opts["eps"])]


def out_names(names, kind):
    del kind
    return (["loss", "lm_loss", "sop_loss", "losses"] +
            ["grad." + n for n in names] + ["param." + n for n in names])


def case(res, args, drv, work, spec):
    import torch
    label, cfg, B, T, schedule, clip, seed, bseed = spec
    seed += args.seed_offset
    bseed += args.seed_offset
    kind = cfg["model_type"]
    d = os.path.join(work, label)
    os.makedirs(d)
    conf = os.path.join(d, "config.json")
    with open(conf, "w") as f:
        json.dump(cfg, f, indent=1)
    wpath = os.path.join(d, "init.safetensors")
    run_tool(drv + ["init", conf, str(seed), wpath])
    weights = st_load(wpath)
    again = os.path.join(d, "init2.safetensors")
    run_tool(drv + ["init", conf, str(seed), again])
    w2 = st_load(again)
    if sorted(w2) == sorted(weights) and all(
            np.array_equal(weights[k], w2[k]) for k in weights):
        res.ok("%s init: seed %d twice gives the same weights" % (label,
                                                                   seed))
    else:
        res.fail("%s init: determinism" % label,
                 "  seed %d twice gave different weights" % seed)
    init_sane(res, "%s init: initial values sane" % label, cfg, weights)

    torch.manual_seed(0)
    model = hf_model(cfg, torch.float32)
    names = load_weights(res, "%s init: loads into transformers' %s" % (
        label, type(model).__name__), model, kind, weights)
    if names is None:
        return

    batch = make_batch(cfg, B, T, bseed)
    bpath = os.path.join(d, "batch.safetensors")
    st_save(batch, bpath)
    gt = GradTol(cfg, rounding_noise(cfg, weights, names, batch))
    if clip == "mid":
        probe = fresh_model(cfg, weights, torch.float32)
        _, norms, _ = reference(probe, cfg, names, batch,
                                dict(STEPS, schedule=schedule, grad_clip=0.0))
        clip = float("%.3g" % np.median(norms))
    opts = dict(STEPS, schedule=schedule, grad_clip=clip)
    ref, norms, allowance = reference(model, cfg, names, batch, opts, gt)
    chaos = spread(cfg, weights, names, batch, opts, ref, gt)
    allowance = {n: allowance[n] + chaos[n] for n in names}
    tols = tolerances(ref, names, allowance, gt)
    clipped = sum(1 for g in norms if clip > 0 and g > clip)
    info = "global norm %.4g..%.4g, clip %g active in %d of %d steps" % (
        min(norms), max(norms), clip, clipped, len(norms))
    if kind == "ernie":
        m = len(batch["masked_labels"])
        info += "; M %d (%d padding slots), lengths %s" % (
            m, int(np.sum(batch["masked_labels"] < 0)),
            batch["attention_mask"].sum(1).tolist())
    rtol, ascale = TOL["param"]
    loose = sum(int(np.count_nonzero(
        allowance[n] > 10 * (ascale * np.max(np.abs(ref["param." + n])) +
                             rtol * np.abs(ref["param." + n]))))
        for n in names)
    info += "; %d of %d parameters with an AdamW allowance > 10x TOL" % (
        loose, sum(allowance[n].size for n in names))
    print("info %s: %s" % (label, info))

    opath = os.path.join(d, "out.safetensors")
    run_tool(drv + ["run", conf, wpath, bpath, opath] + run_args(opts) +
             (["--device", args.device] if args.device != "cpu" else []))
    ours = st_load(opath)
    expect = out_names(names, kind)
    extra = sorted(set(ours) - set(expect))
    if extra:
        res.fail("%s run: output names" % label,
                 "  unexpected: %s" % ", ".join(extra))
    groups = (("loss", ["loss", "lm_loss", "sop_loss"]),
              ("grad", ["grad." + n for n in names]),
              ("losses", ["losses"]),
              ("param", ["param." + n for n in names]))
    aside = {}
    for n in names:
        kb = key_bias(n, ref["param." + n].shape, cfg)
        if kb is not None:
            aside["grad." + n] = aside["param." + n] = kb[0]
    for group, keys in groups:
        compare(res, label, group, ours, ref, keys, tols, aside)

    if args.calibrate:
        model64 = fresh_model(cfg, weights, torch.float64)
        ref64, _, allow64 = reference(model64, cfg, names, batch, opts, gt)
        allow64 = {n: allow64[n] + chaos[n] for n in names}
        tols64 = tolerances(ref64, names, allow64, gt)
        for group, keys in groups:
            f32 = {k: ref[k].astype(np.float32) for k in keys}
            compare(Info(), "calibrate %s fp32 vs fp64:" % label, group, f32,
                    ref64, keys, tols64, aside)


class Info:
    """A Results for --calibrate: prints, counts nothing."""

    def ok(self, name, detail=""):
        print("info %s  %s" % (name, detail))

    def fail(self, name, detail):
        print("info %s OVER TOLERANCE\n%s" % (name, detail))


# ------------------------------------------------------------------- main

def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--fake-drv":
        return FakeDriver.main(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--self-test", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="added to every case's init and batch seeds")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where drv_train runs the model (default cpu)")
    ap.add_argument("--drv", help="the driver (default "
                    "BUILD_DIR/tests/drv_train)")
    args = ap.parse_args()
    res = Results()
    if args.self_test:
        drv = [sys.executable, os.path.abspath(__file__), "--fake-drv"]
        print("info self-test: drv_train stood in for by FakeDriver")
    else:
        path = args.drv or os.path.join(args.build, "tests", "drv_train")
        if not os.access(path, os.X_OK):
            res.fail("drv_train", "  %s not found or not executable "
                     "(build it: make %s)" % (path, path))
            return finish(res)
        drv = [path]
        print("info drv_train: %s, run on the %s" % (
            path, "GPU (float32, TF32 off)" if args.device == "cuda"
            else "CPU"))
    try:
        import torch
        import transformers  # noqa: F401
        import safetensors  # noqa: F401
    except ImportError as e:
        res.fail("imports", "  %s (run with build/venv/bin/python; "
                 "make venv)" % e)
        return finish(res)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    schedule_table(res)
    work = tempfile.mkdtemp(prefix="train-torch.")
    try:
        for spec in CASES:
            try:
                case(res, args, drv, work, spec)
            except Exception as e:  # noqa: BLE001
                res.fail(spec[0], "  %s" % e)
    finally:
        if args.keep:
            print("info kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return finish(res)


def finish(res):
    print("%s: %d passed, %d failed, %d skipped" % (
        SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


# ------------------------------------------------------------ fake driver

MUTANTS = {
    "lm_valid": "lm_loss divided by the valid slots, not all M",
    "sop_sum": "sop_loss summed over the batch, not averaged",
    "mask_none": "attention ignores the padding mask",
    "task_none": "no task type embedding",
    "gelu_tanh": "ERNIE gelu by the tanh approximation",
    "ln_eps": "ERNIE LayerNorm eps 1e-6, not 1e-12",
    "wd_all": "weight decay on biases and LayerNorm too",
    "wd_noemb": "no weight decay on the embeddings",
    "adam_l2": "L2 added to the gradient instead of decoupled decay",
    "lr_shift": "step k uses lr(k - 1)",
    "no_bc": "AdamW without bias correction",
    "eps_in": "eps inside the square root",
    "clip_always": "gradients scaled by clip/norm even when norm < clip",
    "clip_sq": "clipped by the squared norm's sum per tensor",
}


def mutant():
    m = os.environ.get("TRAIN_TORCH_MUTANT", "")
    if m and m not in MUTANTS:
        raise SystemExit("unknown TRAIN_TORCH_MUTANT %s" % m)
    return m


class FakeDriver:
    """Stands in for drv_train under --self-test: `init` from HF's own
    initialisation; `run` a second implementation of the math in plain
    torch ops (no transformers, no torch.nn modules, no torch.optim), the
    way the C side states it: its own embeddings, LayerNorm, attention with
    a -10000 additive mask, activations, heads, losses, global-norm
    clipping, AdamW and schedule.

    TRAIN_TORCH_MUTANT=NAME in the environment plants one of the bugs in
    MUTANTS, so `--self-test` shows which mistakes the tolerances catch.
    """

    @staticmethod
    def main(argv):
        import torch
        torch.set_num_threads(1)
        if argv and argv[0] == "init":
            _, conf, seed, out = argv
            with open(conf) as f:
                cfg = json.load(f)
            torch.manual_seed(int(seed))
            model = hf_model(cfg, torch.float32)
            kind = cfg["model_type"]
            sd = model.state_dict()
            st_save({k: sd[k].numpy() for k in written_names(model, kind)},
                    out)
            return 0
        ap = argparse.ArgumentParser(prog="drv_train run")
        ap.add_argument("cmd", choices=["run"])
        for a in ("config", "weights", "batch", "out"):
            ap.add_argument(a)
        ap.add_argument("--steps", type=int, required=True)
        for a in ("--max-lr", "--min-lr", "--weight-decay", "--grad-clip",
                  "--beta1", "--beta2", "--eps"):
            ap.add_argument(a, type=float, required=True)
        ap.add_argument("--warmup-steps", type=int, required=True)
        ap.add_argument("--decay-steps", type=int, required=True)
        ap.add_argument("--schedule", choices=["linear", "cosine"],
                        required=True)
        a = ap.parse_args(argv)
        with open(a.config) as f:
            cfg = json.load(f)
        w = {k: torch.tensor(v, requires_grad=True)
             for k, v in st_load(a.weights).items()}
        batch = {k: torch.from_numpy(v.astype(np.int64))
                 for k, v in st_load(a.batch).items()}
        fwd = FakeDriver.ernie if cfg["model_type"] == "ernie" \
            else FakeDriver.gpt
        names = sorted(w)
        m = {n: torch.zeros_like(w[n]) for n in names}
        v = {n: torch.zeros_like(w[n]) for n in names}
        out, losses = {}, []
        for k in range(1, a.steps + 1):
            loss, lm, sop = fwd(cfg, w, batch)
            grads = torch.autograd.grad(loss, [w[n] for n in names])
            g = dict(zip(names, grads))
            losses.append(float(loss))
            if k == 1:
                out["loss"] = np.array([float(loss)], np.float32)
                out["lm_loss"] = np.array([float(lm)], np.float32)
                out["sop_loss"] = np.array([float(sop)], np.float32)
                for n in names:
                    out["grad." + n] = g[n].numpy().copy()
            with torch.no_grad():
                total = torch.zeros((), dtype=torch.float32)
                for n in names:
                    total += torch.sum(g[n] ** 2)
                norm = float(torch.sqrt(total))
                if mutant() == "clip_sq" and a.grad_clip > 0:
                    g = {n: g[n] * min(1.0, a.grad_clip / float(
                        torch.sqrt(torch.sum(g[n] ** 2)))) for n in names}
                elif a.grad_clip > 0 and (norm > a.grad_clip or
                                          mutant() == "clip_always"):
                    g = {n: g[n] * (a.grad_clip / norm) for n in names}
                e, wu, de = k, a.warmup_steps, a.decay_steps
                if wu > 0 and e <= wu:
                    lr = a.max_lr * (e / wu)
                elif e > de:
                    lr = a.min_lr
                else:
                    frac = float(e - wu) / float(de - wu)
                    if a.schedule == "cosine":
                        f = (1 + math.cos(math.pi * frac)) / 2
                    else:
                        f = 1 - frac
                    lr = a.min_lr + (a.max_lr - a.min_lr) * f
                if mutant() == "lr_shift":
                    e = k - 1
                    lr = (a.max_lr * e / wu if e <= wu else a.min_lr
                          if e > de else a.min_lr + (a.max_lr - a.min_lr) * (
                              1 - (e - wu) / (de - wu)))
                b1c = 1 - a.beta1 ** k
                b2c = 1 - a.beta2 ** k
                for n in names:
                    p = w[n]
                    if mutant() == "no_bc":
                        b1c = b2c = 1.0
                    emb = "embeddings" in n or n.endswith(("wte.weight",
                                                           "wpe.weight"))
                    decays = p.ndim >= 2 or mutant() == "wd_all"
                    if mutant() == "wd_noemb" and emb:
                        decays = False
                    if mutant() == "adam_l2" and decays:
                        g[n] = g[n] + a.weight_decay * p
                    elif decays:
                        p.mul_(1 - lr * a.weight_decay)
                    m[n].mul_(a.beta1).add_((1 - a.beta1) * g[n])
                    v[n].mul_(a.beta2).add_((1 - a.beta2) * g[n] * g[n])
                    upd = (m[n] / b1c) / (torch.sqrt(v[n] / b2c) + a.eps)
                    if mutant() == "eps_in":
                        upd = (m[n] / b1c) / torch.sqrt(v[n] / b2c + a.eps)
                    p.sub_(lr * upd)
        out["losses"] = np.array(losses, np.float32)
        for n in names:
            out["param." + n] = w[n].detach().numpy().copy()
        st_save(out, a.out)
        return 0

    @staticmethod
    def layer_norm(x, g, b, eps):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) * torch_rsqrt(var + eps) * g + b

    @staticmethod
    def act(name, x):
        import torch
        if name == "relu":
            return torch.clamp(x, min=0)
        if name == "gelu":
            if mutant() == "gelu_tanh":
                return FakeDriver.act("gelu_new", x)
            return 0.5 * x * (1 + torch.erf(x * (1 / math.sqrt(2))))
        if name == "gelu_new":
            c = math.sqrt(2 / math.pi)
            return 0.5 * x * (1 + torch.tanh(c * (x + 0.044715 * x ** 3)))
        raise ValueError(name)

    @staticmethod
    def attention(q, k, v, heads, add_mask):
        """q, k, v [B, T, H]; add_mask broadcast to [B, heads, T, T]."""
        B, T, H = q.shape
        hd = H // heads

        def split(x):
            return x.reshape(B, T, heads, hd).permute(0, 2, 1, 3)
        s = split(q) @ split(k).transpose(-1, -2) / math.sqrt(hd) + add_mask
        s = s - s.max(-1, keepdim=True).values.detach()
        p = s.exp()
        p = p / p.sum(-1, keepdim=True)
        return (p @ split(v)).permute(0, 2, 1, 3).reshape(B, T, H)

    @staticmethod
    def ernie(cfg, w, batch):
        import torch
        ln, act = FakeDriver.layer_norm, FakeDriver.act
        eps = 1e-6 if mutant() == "ln_eps" else cfg["layer_norm_eps"]
        ids = batch["input_ids"]
        B, T = ids.shape
        we = w["ernie.embeddings.word_embeddings.weight"]
        pad = cfg.get("pad_token_id", 0)
        rows = we[ids]  # padding_idx: the pad row gets no lookup gradient
        rows = torch.where((ids == pad)[..., None], rows.detach(), rows)
        x = (rows + w["ernie.embeddings.position_embeddings.weight"][:T]
             + w["ernie.embeddings.token_type_embeddings.weight"][
                 batch["token_type_ids"]]
             + w["ernie.embeddings.task_type_embeddings.weight"][0]
             * (0.0 if mutant() == "task_none" else 1.0))
        x = ln(x, w["ernie.embeddings.LayerNorm.weight"],
               w["ernie.embeddings.LayerNorm.bias"], eps)
        mask = (1.0 - batch["attention_mask"].float())[:, None, None, :] \
            * (0.0 if mutant() == "mask_none" else -10000.0)

        def lin(x, pre):
            return x @ w[pre + ".weight"].t() + w[pre + ".bias"]
        for i in range(cfg["num_hidden_layers"]):
            p = "ernie.encoder.layer.%d." % i
            a = FakeDriver.attention(
                lin(x, p + "attention.self.query"),
                lin(x, p + "attention.self.key"),
                lin(x, p + "attention.self.value"),
                cfg["num_attention_heads"], mask)
            x = ln(lin(a, p + "attention.output.dense") + x,
                   w[p + "attention.output.LayerNorm.weight"],
                   w[p + "attention.output.LayerNorm.bias"], eps)
            h = act(cfg["hidden_act"], lin(x, p + "intermediate.dense"))
            x = ln(lin(h, p + "output.dense") + x,
                   w[p + "output.LayerNorm.weight"],
                   w[p + "output.LayerNorm.bias"], eps)
        pooled = torch.tanh(lin(x[:, 0], "ernie.pooler.dense"))
        sel = x.reshape(B * T, -1)[batch["masked_positions"]]
        h = act(cfg["hidden_act"], lin(sel, "cls.predictions.transform.dense"))
        h = ln(h, w["cls.predictions.transform.LayerNorm.weight"],
               w["cls.predictions.transform.LayerNorm.bias"], eps)
        logits = h @ we.t() + w["cls.predictions.bias"]
        labels = batch["masked_labels"]
        logp = FakeDriver.log_softmax(logits)
        valid = labels >= 0
        picked = logp.gather(1, labels.clamp(min=0)[:, None])[:, 0]
        lm = -(picked * valid.float()).sum() / (
            valid.sum() if mutant() == "lm_valid" else labels.shape[0])
        sl = FakeDriver.log_softmax(lin(pooled, "cls.seq_relationship"))
        sop = -sl.gather(1, batch["sop_labels"][:, None])
        sop = sop.sum() if mutant() == "sop_sum" else sop.mean()
        return lm + sop, lm, sop

    @staticmethod
    def gpt(cfg, w, batch):
        import torch
        ln, act = FakeDriver.layer_norm, FakeDriver.act
        eps = cfg["layer_norm_epsilon"]
        ids = batch["input_ids"]
        B, T = ids.shape
        x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:T]
        causal = torch.triu(torch.full((T, T), -1e9), diagonal=1)

        def conv(x, pre):  # Conv1D: weight [in, out]
            return x @ w[pre + ".weight"] + w[pre + ".bias"]
        H = cfg["n_embd"]
        for i in range(cfg["n_layer"]):
            p = "transformer.h.%d." % i
            h = ln(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
            qkv = conv(h, p + "attn.c_attn")
            a = FakeDriver.attention(qkv[..., :H], qkv[..., H:2 * H],
                                     qkv[..., 2 * H:], cfg["n_head"], causal)
            x = x + conv(a, p + "attn.c_proj")
            h = ln(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
            x = x + conv(act(cfg["activation_function"],
                             conv(h, p + "mlp.c_fc")), p + "mlp.c_proj")
        x = ln(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"],
               eps)
        logits = x.reshape(B * T, H) @ w["transformer.wte.weight"].t()
        logp = FakeDriver.log_softmax(logits)
        lm = -logp.gather(1, batch["labels"].reshape(-1, 1)).mean()
        return lm, lm, torch.zeros(())

    @staticmethod
    def log_softmax(z):
        zmax = z.max(-1, keepdim=True).values.detach()
        s = z - zmax
        return s - s.exp().sum(-1, keepdim=True).log()


def torch_rsqrt(x):
    import torch
    return torch.rsqrt(x)


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: MIT
"""usage: check_eval.py CHECKPOINT ernie|gpt BATCHES RESULTS [TRAIN_LOG]

Checks `train --do_eval`'s RESULTS (an eval_results.json) against
transformers' own model: the checkpoint directory CHECKPOINT loaded with
AutoModelForPreTraining (ERNIE) or AutoModelForCausalLM (GPT) runs the
micro-batches the evaluation read (BATCHES: the directory
TRAIN_TEST_DUMP_BATCHES wrote, valid-<i>.safetensors and
test-<i>.safetensors), with the losses of tests/conformance/
train_torch_run.py (hf_loss: PaddleNLP's normalisation), and the accuracies
from the logits' argmax.  Losses agree to fp32 tolerance (each the mean of
the micro-batches'); perplexity is exp(loss); the counts of rows predicted
right agree exactly, but for rows whose top two logits are within fp32
rounding of each other (which may go either way).

With TRAIN_LOG (the train_log.jsonl of the run that wrote CHECKPOINT),
the losses must also be those that training logged for the valid
evaluation at the checkpoint's step and for the test split, to the nine
significant digits of that log.
"""
import glob
import json
import math
import os
import re
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "conformance"))
from train_torch_run import hf_loss  # noqa: E402

RTOL = 1e-5   # train_torch_run.py's loss tolerance (TOL["loss"])
NEAR = 1e-4   # top-two logits this close (relative) may go either way


def batches(directory, split):
    files = glob.glob(os.path.join(directory, split + "-*.safetensors"))
    key = lambda f: int(re.search(r"-(\d+)\.safetensors$", f).group(1))
    return [load_file(f) for f in sorted(files, key=key)]


def hits(logits, targets):
    """(right, counted, near): rows whose target is the argmax, rows with
    a target, rows whose top two logits are within NEAR of each other."""
    keep = targets >= 0
    logits, targets = logits[keep], targets[keep]
    top2 = torch.topk(logits, 2, dim=-1).values
    near = (top2[:, 0] - top2[:, 1]).abs() <= NEAR * top2[:, 0].abs().clamp(
        min=1.0)
    right = logits.argmax(dim=-1) == targets
    return int(right.sum()), int(keep.sum()), int(near.sum())


def reference(model, kind, split_batches):
    """Mean losses and hit counts over the micro-batches, as ours."""
    sums = np.zeros(3)
    lm, sop = np.zeros(3, np.int64), np.zeros(3, np.int64)
    for b in split_batches:
        with torch.no_grad():
            loss, lm_loss, sop_loss = hf_loss(model, kind, b)
            t = {k: torch.from_numpy(v.astype(np.int64)) for k, v in b.items()}
            B, T = t["input_ids"].shape
            if kind == "gpt2":
                logits = model(input_ids=t["input_ids"]).logits
                lm += hits(logits.reshape(B * T, -1), t["labels"].reshape(-1))
            else:
                out = model(input_ids=t["input_ids"],
                            attention_mask=t["attention_mask"],
                            token_type_ids=t["token_type_ids"])
                rows = out.prediction_logits.reshape(B * T, -1)[
                    t["masked_positions"]]
                lm += hits(rows, t["masked_labels"])
                sop += hits(out.seq_relationship_logits, t["sop_labels"])
        sums += [float(loss), float(lm_loss), float(sop_loss)]
    return sums / len(split_batches), lm, sop


def close(a, b):
    return abs(a - b) <= RTOL * max(abs(b), 1e-3)


def main():
    ckpt, kind, dump, results = sys.argv[1:5]
    train_log = sys.argv[5] if len(sys.argv) > 5 else None
    res = json.load(open(results))
    kind = "gpt2" if kind == "gpt" else "ernie"
    from transformers import AutoModelForCausalLM, AutoModelForPreTraining
    cls = AutoModelForCausalLM if kind == "gpt2" else AutoModelForPreTraining
    model = cls.from_pretrained(ckpt, attn_implementation="eager")
    model.eval()
    bad = []
    logged = {}
    if train_log:
        for ln in open(train_log):
            r = json.loads(ln)
            step = r.get("valid_step", r.get("test_step"))
            if step == res["global_step"]:
                logged["eval" if "valid_step" in r else "test"] = r
    for prefix, split in (("eval", "valid"), ("test", "test")):
        bs = batches(dump, split)
        if prefix + "_loss" not in res:
            continue
        if len(bs) != res[prefix + "_micro_batches"]:
            bad.append("%s: %d micro-batches dumped, %d evaluated" %
                       (split, len(bs), res[prefix + "_micro_batches"]))
            continue
        (loss, lm_loss, sop_loss), lm, sop = reference(model, kind, bs)
        checks = [("loss", loss)]
        if kind == "ernie":
            checks += [("lm_loss", lm_loss), ("sop_loss", sop_loss)]
        else:
            checks += [("perplexity", math.exp(loss))]
        for name, ref in checks:
            ours = res["%s_%s" % (prefix, name)]
            if not close(ours, ref):
                bad.append("%s_%s: ours %.9g, transformers %.9g"
                           % (prefix, name, ours, ref))
        accs = [("accuracy" if kind == "gpt2" else "mlm_accuracy", lm)]
        if kind == "ernie":
            accs.append(("sop_accuracy", sop))
        for name, (right, counted, near) in accs:
            ours = res["%s_%s" % (prefix, name)] * counted
            if abs(ours - right) > near + 1e-6:
                bad.append("%s_%s: ours %d of %d right, transformers %d "
                           "(%d near ties)" % (prefix, name, round(ours),
                                               counted, right, near))
        if train_log:
            r = logged.get(prefix)
            if r is None:
                bad.append("%s: no %s record of step %d in %s"
                           % (prefix, split, res["global_step"], train_log))
                continue
            for name in ("loss", "lm_loss", "sop_loss"):
                key = "%s_%s" % (prefix, name)
                ours = res.get(key, res[prefix + "_loss"] if name == "lm_loss"
                               else 0.0)
                if float("%.9g" % ours) != r[name]:
                    bad.append("%s: ours %.9g, training logged %.9g"
                               % (key, ours, r[name]))
        print("%s: %d micro-batches, loss %.6f = transformers' %.6f%s"
              % (split, len(bs), res[prefix + "_loss"], loss,
                 ", = training's" if train_log else ""))
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

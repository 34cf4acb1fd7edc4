# SPDX-License-Identifier: MIT
"""usage: check_paddle.py EXPORT ernie|gpt BATCHES RESULTS TEXT IDS

Loads EXPORT, a directory that checkpoint-export wrote from a checkpoint,
with PaddleNLP (2.8) itself, as its users load a model to fine-tune it:

- model_state.pdparams is read by Python's pickle and by paddle.load();
- ErnieForPretraining (ErnieForMaskedLM without the SOP head) or
  GPTForCausalLM .from_pretrained(EXPORT) gets every parameter from the
  file (each equals the file's array) and the file holds nothing else;
  ErnieModel and ErnieForSequenceClassification (the fine-tuning classes)
  and GPTModel load it too;
- on the micro-batches `train --do_eval` evaluated (BATCHES, from
  TRAIN_TEST_DUMP_BATCHES), PaddleNLP's model gives the losses of RESULTS
  (its eval_results.json), with ErniePretrainingCriterion for ERNIE
  (PaddleNLP's run_pretrain.py loss) and the mean cross-entropy of the
  next tokens for GPT, to fp32 tolerance;
- AutoTokenizer.from_pretrained(EXPORT) is PaddleNLP's ErnieTokenizer or
  GPTTokenizer and encodes TEXT (a file of one line) to IDS (the ids our
  tokenize gives, space-separated).
"""
import glob
import json
import os
import pickle
import re
import sys

import numpy as np
from safetensors.numpy import load_file

RTOL = 1e-5   # train_torch_run.py's loss tolerance


def batches(directory, split):
    files = glob.glob(os.path.join(directory, split + "-*.safetensors"))
    key = lambda f: int(re.search(r"-(\d+)\.safetensors$", f).group(1))
    return [load_file(f) for f in sorted(files, key=key)]


def losses(model, kind, crit, b):
    import paddle
    import paddle.nn.functional as F
    t = {k: paddle.to_tensor(v.astype(np.int64)) for k, v in b.items()}
    if kind == "gpt":
        logits = model(t["input_ids"])
        logits = logits[0] if isinstance(logits, (tuple, list)) else logits
        lm = F.cross_entropy(logits.reshape([-1, logits.shape[-1]]),
                             t["labels"].reshape([-1, 1])).mean()
        return float(lm), float(lm), 0.0
    out = model(input_ids=t["input_ids"], token_type_ids=t["token_type_ids"],
                attention_mask=t["attention_mask"],
                masked_positions=t["masked_positions"])
    labels = t["masked_labels"].reshape([-1, 1])
    if isinstance(out, (tuple, list)):
        lm, sop = crit(out[0], out[1], labels, t["sop_labels"].reshape([-1, 1]))
        return float(lm) + float(sop), float(lm), float(sop)
    lm = crit(out, None, labels)
    return float(lm), float(lm), 0.0


def main():
    export, kind, dump, results, text_file, ids_file = sys.argv[1:7]
    res = json.load(open(results))
    bad = []
    path = os.path.join(export, "model_state.pdparams")
    with open(path, "rb") as f:
        arrays = pickle.load(f)
    if not all(isinstance(v, np.ndarray) and v.dtype == np.float32
               for v in arrays.values()):
        bad.append("%s: not all float32 numpy arrays" % path)

    import paddle
    import paddlenlp.transformers as pt
    loaded = paddle.load(path)
    if sorted(loaded) != sorted(arrays):
        bad.append("paddle.load reads other keys than pickle")

    arch = json.load(open(os.path.join(export, "config.json")))[
        "architectures"][0]
    cls = getattr(pt, arch)
    model = cls.from_pretrained(export)
    model.eval()
    sd = model.state_dict()
    skip = {"ernie.pooler.dense.weight", "ernie.pooler.dense.bias"} \
        if arch == "ErnieForMaskedLM" else set()
    for k, v in sd.items():
        if k in skip:
            continue
        if k not in arrays:
            bad.append("%s: %s is not in %s" % (arch, k, path))
        elif not np.array_equal(v.numpy(), arrays[k]):
            bad.append("%s: %s was not loaded from %s" % (arch, k, path))
    extra = sorted(set(arrays) - set(sd))
    if extra:
        bad.append("%s has what %s has no place for: %s"
                   % (path, arch, extra))
    others = ([pt.ErnieModel, pt.ErnieForSequenceClassification]
              if kind == "ernie" else [pt.GPTModel])
    for c in others:
        m = c.from_pretrained(export)
        base = m if c in (pt.ErnieModel, pt.GPTModel) else m.ernie
        emb = base.embeddings.word_embeddings.weight.numpy()
        name = "ernie" if kind == "ernie" else "gpt"
        if not np.array_equal(emb, arrays[name +
                                         ".embeddings.word_embeddings.weight"]):
            bad.append("%s did not load the word embeddings" % c.__name__)

    crit = None
    if kind == "ernie":
        crit = pt.ErniePretrainingCriterion(
            with_nsp_loss=arch == "ErnieForPretraining")
    for prefix, split in (("eval", "valid"), ("test", "test")):
        if prefix + "_loss" not in res:
            continue
        bs = batches(dump, split)
        with paddle.no_grad():
            means = np.mean([losses(model, kind, crit, b) for b in bs], axis=0)
        names = ["loss", "lm_loss", "sop_loss"] if kind == "ernie" \
            else ["loss"]
        for i, name in enumerate(names):
            key = "%s_%s" % (prefix, name)
            if key in res and abs(res[key] - means[i]) > \
                    RTOL * max(abs(means[i]), 1e-3):
                bad.append("%s: ours %.9g, PaddleNLP's %s %.9g"
                           % (key, res[key], arch, means[i]))
        print("%s: %d micro-batches, loss %.6f = PaddleNLP's %.6f"
              % (split, len(bs), res[prefix + "_loss"], means[0]))

    tok = pt.AutoTokenizer.from_pretrained(export)
    want_class = "ErnieTokenizer" if kind == "ernie" else "GPTTokenizer"
    if type(tok).__name__ != want_class:
        bad.append("AutoTokenizer gives %s, not %s"
                   % (type(tok).__name__, want_class))
    text = open(text_file, encoding="utf-8").read().rstrip("\n")
    want = [int(x) for x in open(ids_file).read().split()]
    got = tok(text, add_special_tokens=False)["input_ids"] \
        if kind == "ernie" else tok(text)["input_ids"]
    if got != want:
        bad.append("%s encodes the text as %s, tokenize as %s"
                   % (type(tok).__name__, got, want))
    for b in bad:
        print(b)
    if not bad:
        print("%s + %s: %d tensors, %d ids as tokenize's"
              % (arch, type(tok).__name__, len(arrays), len(want)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

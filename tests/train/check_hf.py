# SPDX-License-Identifier: MIT
"""usage: check_hf.py CHECKPOINT ernie|ernie-mlm|gpt VOCAB TEXT IDS

Loads a checkpoint directory of `train` with transformers' Auto classes,
as a user would: AutoTokenizer, and AutoModelForPreTraining (ERNIE),
AutoModelForMaskedLM (ERNIE without the SOP head) or AutoModelForCausalLM
(GPT).  Checks that the tokenizer encodes TEXT (a file of one line) to IDS
(a file of the ids our `tokenize` gives, space-separated); that its special
tokens have the ids of the run's vocabulary VOCAB (ERNIE: vocab.txt in
either format of tok-vocab(5); GPT: the directory of vocab.json), and for
GPT that config.json's bos_token_id and eos_token_id are "<|endoftext|>"
(inside the vocabulary, not GPT2Config's 50256); that the model loads with
every tensor but the tied ones and runs on the tokenizer's batch.
"""
import json
import os
import sys

import torch
from transformers import (AutoConfig, AutoModelForCausalLM,
                          AutoModelForMaskedLM, AutoModelForPreTraining,
                          AutoTokenizer)


def vocab_ids(path):
    """token -> id of a vocab.txt, one token a line or token<TAB>id."""
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    tabbed = "\t" in lines[0]
    ids = {}
    for i, ln in enumerate(lines):
        if tabbed:
            tok, n = ln.split("\t", 1)
            ids[tok] = int(n)
        else:
            ids[ln] = i
    return ids


def main():
    ckpt, kind, vocab, text_file, ids_file = sys.argv[1:6]
    text = open(text_file, encoding="utf-8").read().rstrip("\n")
    want = [int(x) for x in open(ids_file).read().split()]
    bad = []

    tok = AutoTokenizer.from_pretrained(ckpt)
    got = tok.encode(text, add_special_tokens=False)
    if got != want:
        bad.append("%s encodes the text as %s, tokenize as %s"
                   % (type(tok).__name__, got, want))
    config = AutoConfig.from_pretrained(ckpt)
    if kind == "gpt":
        eos = json.load(open(os.path.join(vocab, "vocab.json"),
                             encoding="utf-8"))["<|endoftext|>"]
        for name, v in (("tokenizer bos", tok.bos_token_id),
                        ("tokenizer eos", tok.eos_token_id),
                        ("config.json bos_token_id", config.bos_token_id),
                        ("config.json eos_token_id", config.eos_token_id)):
            if v != eos:
                bad.append("%s is %s, not %d (<|endoftext|>)" % (name, v, eos))
        if not eos < config.vocab_size:
            bad.append("<|endoftext|> %d is outside the vocab" % eos)
        cls, allowed = AutoModelForCausalLM, {"lm_head.weight"}
    else:
        ids = vocab_ids(vocab)
        for name in ("cls", "sep", "pad", "mask", "unk"):
            v = getattr(tok, name + "_token_id")
            t = "[%s]" % name.upper()
            if v != ids[t]:
                bad.append("tokenizer %s_token_id is %s, the vocab's %s %d"
                           % (name, v, t, ids[t]))
        if config.pad_token_id != tok.pad_token_id:
            bad.append("config.json pad_token_id %s, the tokenizer's %s"
                       % (config.pad_token_id, tok.pad_token_id))
        cls = AutoModelForMaskedLM if kind == "ernie-mlm" else \
            AutoModelForPreTraining
        allowed = {"cls.predictions.decoder.weight",
                   "cls.predictions.decoder.bias"}
    model, info = cls.from_pretrained(ckpt, output_loading_info=True)
    missing = set(info["missing_keys"]) - allowed
    if missing or info["unexpected_keys"]:
        bad.append("%s: missing %s, unexpected %s"
                   % (type(model).__name__, sorted(missing),
                      info["unexpected_keys"]))
    model.eval()
    with torch.no_grad():
        out = model(**tok(text, return_tensors="pt"))
    logits = out.logits if kind == "gpt" else out[0]
    if not torch.isfinite(logits).all():
        bad.append("%s gives non-finite logits" % type(model).__name__)
    for b in bad:
        print(b)
    if not bad:
        print("%s + %s: %d ids as tokenize's" % (type(tok).__name__,
                                                 type(model).__name__,
                                                 len(want)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

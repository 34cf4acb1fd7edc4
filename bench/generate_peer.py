#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The peer of bench/generate.sh: transformers' generate() on the same
checkpoint, and the checkpoint itself.

  generate_peer.py make DIR
      A GPT-2 of the 124M shape (GPT2Config()'s defaults: 12 layers,
      n_embd 768, 12 heads, 1024 positions, vocab 50257), random weights
      from torch.manual_seed(0), saved with save_pretrained(), with a
      byte-level BPE of GPT-2's size: the 256 byte symbols, 50000 merges
      of two of them (made up: pairs in order) and "<|endoftext|>" (50256),
      as vocab.json and merges.txt.
  generate_peer.py run DIR THREADS BATCH NEW PROMPT
      model.generate() of BATCH copies of PROMPT, greedy (do_sample
      False), NEW new tokens (no eos: eos_token_id None), the KV cache on
      (use_cache), torch.set_num_threads(THREADS), after one warm-up call;
      prints "NEW_TOKENS SECONDS CPU_SECONDS" of the timed call (the
      prompt's forward pass included, the loading not).
"""
import json
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers.generation.utils as gen_utils  # noqa: E402
from transformers import (  # noqa: E402
    GPT2Config,
    GPT2LMHeadModel,
    GPT2TokenizerFast,
)

# generate() imports torch.distributed.fsdp, which Debian's torch 1.13
# cannot import under Python 3.11: the model is not FSDP-managed.
gen_utils.is_fsdp_managed_module = lambda m: False


def make(out):
    os.makedirs(out, exist_ok=True)
    # GPT-2's bytes_to_unicode().
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    alpha = [chr(c) for c in cs]
    vocab = {a: i for i, a in enumerate(alpha)}
    merges = []
    for a in alpha:
        for b in alpha:
            if len(merges) == 50000:
                break
            merges.append((a, b))
            vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    with open(out + "/vocab.json", "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(out + "/merges.txt", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join("%s %s\n" % m for m in merges))
    cfg = GPT2Config(vocab_size=len(vocab), bos_token_id=50256,
                     eos_token_id=50256)
    torch.manual_seed(0)
    GPT2LMHeadModel(cfg).save_pretrained(out, safe_serialization=True)


def run(d, threads, batch, new, prompt):
    torch.set_num_threads(threads)
    model = GPT2LMHeadModel.from_pretrained(d).eval()
    tok = GPT2TokenizerFast(vocab_file=d + "/vocab.json",
                            merges_file=d + "/merges.txt")
    ids = torch.tensor([tok(prompt).input_ids] * batch)
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False,
              eos_token_id=None, pad_token_id=0, use_cache=True)
    with torch.no_grad():
        model.generate(ids, max_new_tokens=2, **kw)
        t, c = time.perf_counter(), time.process_time()
        out = model.generate(ids, max_new_tokens=new, min_new_tokens=new,
                             **kw)
        dt, dc = time.perf_counter() - t, time.process_time() - c
    print(batch * (out.shape[1] - ids.shape[1]), "%.6f" % dt, "%.6f" % dc)


def main():
    cmd, argv = sys.argv[1], sys.argv[2:]
    if cmd == "make":
        make(argv[0])
    elif cmd == "run":
        run(argv[0], int(argv[1]), int(argv[2]), int(argv[3]), argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

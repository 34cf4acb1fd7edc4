#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time the reference tokenizers on one input, in process, after loading.

usage: tokenize_peers.py PEER VOCAB_DIR INPUT [REPEAT]
PEER: hf1 (HF tokenizers, 1 thread), hf2 (2 threads), paddle (PaddleNLP
ErnieTokenizer), bert (transformers' Python BertTokenizer); bpe1, bpe2:
HF's ByteLevelBPETokenizer on 1 or 2 threads, VOCAB_DIR holding
vocab.json and merges.txt.
Prints "PEER seconds tokens" for the best of REPEAT runs over the lines of
INPUT (WordPiece lowercased; no special tokens added).
"""
import os
import sys
import time

peer, vocab_dir, path = sys.argv[1:4]
repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 3
if peer in ("hf1", "hf2", "bpe1", "bpe2"):
    os.environ["RAYON_NUM_THREADS"] = "1" if peer[-1] == "1" else "2"
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "conformance"))
import oracles  # noqa: E402

with open(path, encoding="utf-8") as f:
    lines = f.read().split("\n")
if peer in ("bpe1", "bpe2"):
    from tokenizers import ByteLevelBPETokenizer
    bpe = ByteLevelBPETokenizer(os.path.join(vocab_dir, "vocab.json"),
                                os.path.join(vocab_dir, "merges.txt"))

    def fn(texts):
        return [e.ids for e in bpe.encode_batch(texts)]
else:
    name = {"hf1": "hf", "hf2": "hf", "paddle": "paddle",
            "bert": "bert"}[peer]
    fn = oracles.make(name, vocab_dir, True)
best = None
for _ in range(repeat):
    t0 = time.perf_counter()
    out = fn(lines)
    dt = time.perf_counter() - t0
    best = dt if best is None or dt < best else best
print(peer, "%.4f" % best, sum(len(x) for x in out))

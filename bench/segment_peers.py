#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time a jieba implementation on the lines of one input, in process, after
loading (best of REPEAT), and check its words against Python jieba's.

usage: segment_peers.py PEER INPUT [REPEAT]
PEER: jieba (Python jieba, HMM on), rjieba (jieba-rs), cppjieba.
Prints "PEER seconds identical_lines total_lines".
"""
import logging
import sys
import time

peer, path = sys.argv[1], sys.argv[2]
repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 3
with open(path, encoding="utf-8") as f:
    lines = f.read().split("\n")

import jieba  # noqa: E402  (the reference, for the identity check)
jieba.setLogLevel(logging.ERROR)
jieba.initialize()
if peer == "jieba":
    cut = lambda s: list(jieba.cut(s, HMM=True))  # noqa: E731
elif peer == "rjieba":
    import rjieba
    cut = lambda s: rjieba.cut(s, hmm=True)  # noqa: E731
elif peer == "cppjieba":
    from cppjieba import Jieba
    j = Jieba()
    cut = lambda s: j.cut(s)  # noqa: E731
else:
    raise SystemExit("unknown peer " + peer)
cut("预热")
best = None
for _ in range(repeat):
    t0 = time.perf_counter()
    out = [cut(s) for s in lines]
    dt = time.perf_counter() - t0
    best = dt if best is None or dt < best else best
same = sum(1 for s, o in zip(lines, out) if list(o) == list(jieba.cut(s)))
print(peer, "%.4f" % best, same, len(lines))

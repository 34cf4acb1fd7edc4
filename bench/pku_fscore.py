#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""SIGHAN 2005 scoring of `segment` and of jieba on the PKU test set.

usage: bench/pku_fscore.py BUILD DATA
Scores word spans as the bakeoff's `score` script does: precision, recall
and F over all words, recall of words seen in the training word list (IV)
and of the others (OOV).  Our words come from `segment -w` (one line per
input line, whitespace words dropped), jieba's from jieba.cut on each line.
Prints a Markdown table.
"""
import logging
import os
import subprocess
import sys

import jieba

jieba.setLogLevel(logging.ERROR)


def spans(words):
    out, at = set(), 0
    for w in words:
        out.add((at, at + len(w)))
        at += len(w)
    return out, at


def score(gold_lines, test_lines, train):
    n_gold = n_test = n_ok = n_oov = n_oov_ok = n_iv = n_iv_ok = 0
    for g, t in zip(gold_lines, test_lines):
        gs, glen = spans(g)
        ts, tlen = spans(t)
        if "".join(g) != "".join(t):
            raise SystemExit("texts differ: %r / %r" % (g[:5], t[:5]))
        n_gold += len(gs)
        n_test += len(ts)
        ok = gs & ts
        n_ok += len(ok)
        text = "".join(g)
        for a, b in gs:
            w = text[a:b]
            if w in train:
                n_iv += 1
                n_iv_ok += (a, b) in ok
            else:
                n_oov += 1
                n_oov_ok += (a, b) in ok
    p, r = n_ok / n_test, n_ok / n_gold
    return p, r, 2 * p * r / (p + r), n_oov_ok / n_oov, n_iv_ok / n_iv


def setup(build, data):
    """Build segment and its model with bench/lib.sh's bench_setup, as the
    shell scripts do (BENCH_DRY_RUN=1: print what it would build, stop)."""
    env = dict(os.environ, BUILD=build, DATA=data,
               VENV=os.environ.get("VENV", "build/venv"))
    rc = subprocess.run(["sh", "-c", '. bench/lib.sh && bench_setup "$@"',
                         sys.argv[0], os.path.join(build, "segment"),
                         os.path.join(build, "jieba.model")],
                        env=env).returncode
    if rc != 0 or os.environ.get("BENCH_DRY_RUN"):
        sys.exit(rc)


def main():
    build, data = sys.argv[1], sys.argv[2]
    setup(build, data)
    pku = os.path.join(data, "zh/sighan2005-pku")
    with open(os.path.join(pku, "pku_test.utf8"), encoding="utf-8") as f:
        test = [ln.rstrip("\r\n") for ln in f]
    with open(os.path.join(pku, "pku_test_gold.utf8"), encoding="utf-8") as f:
        gold = [ln.split() for ln in f]
    with open(os.path.join(pku, "pku_training_words.utf8"),
              encoding="utf-8") as f:
        train = {ln.strip() for ln in f if ln.strip()}
    rows = []
    for hmm in (True, False):
        args = [os.path.join(build, "segment"), "-q", "-w"] + \
            ([] if hmm else ["-H"]) + [os.path.join(pku, "pku_test.utf8")]
        ours = [ln.split(" ") if ln else [] for ln in
                subprocess.run(args, check=True, stdout=subprocess.PIPE)
                .stdout.decode("utf-8").split("\n")[:-1]]
        ref = [[w for w in jieba.cut(ln, HMM=hmm) if not w.isspace()]
               for ln in test]
        for name, words in (("segment", ours), ("jieba 0.42.1", ref)):
            p, r, f, oov, iv = score(gold, words, train)
            rows.append("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f |" % (
                name, "on" if hmm else "off", p, r, f, oov, iv))
    print("| segmenter | HMM | P | R | F | OOV recall | IV recall |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

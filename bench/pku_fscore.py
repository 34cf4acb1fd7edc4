#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""SIGHAN 2005 scoring of `segment` (jieba and LAC engines), jieba and
Baidu LAC 2.1.2 on the PKU test set.

usage: bench/pku_fscore.py BUILD DATA
Scores word spans as the bakeoff's `score` script does: precision, recall
and F over all words, recall of words seen in the training word list (IV)
and of the others (OOV).  Our words come from `segment -w` (one line per
input line, whitespace words dropped; the PKU text has no white space in
a line), jieba's from jieba.cut on each line, LAC's from LAC(mode=...)
.run(line) in the LAC oracle's venv (build/lac-venv, `make lac-venv`;
its rows are left out without it).  Prints a Markdown table.
"""
import json
import logging
import os
import subprocess
import sys
import tempfile

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
                         os.path.join(build, "jieba.model"),
                         os.path.join(build, "lac.model")],
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
    lac_python = os.path.join("build", "lac-venv", "bin", "python")
    for mode in ("seg", "lac"):
        args = [os.path.join(build, "segment"), "-q", "-w", "--lac-mode",
                mode, os.path.join(pku, "pku_test.utf8")]
        ours = [ln.split(" ") if ln else [] for ln in
                subprocess.run(args, check=True, stdout=subprocess.PIPE)
                .stdout.decode("utf-8").split("\n")[:-1]]
        found = [("segment --engine lac", ours)]
        if os.path.exists(lac_python):
            found.append(("LAC 2.1.2", lac_words(lac_python, mode, test)))
        for name, words in found:
            p, r, f, oov, iv = score(gold, words, train)
            rows.append("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f |" % (
                name, mode, p, r, f, oov, iv))
    print("| segmenter | HMM (jieba) or network (LAC) | P | R | F | "
          "OOV recall | IV recall |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


def lac_words(python, mode, lines):
    """LAC 2.1.2's words of each line (tests/conformance/lac_oracle.py)."""
    work = tempfile.mkdtemp(prefix="pku-lac.")
    req, out = os.path.join(work, "req.json"), os.path.join(work, "out.json")
    with open(req, "w", encoding="utf-8") as f:
        json.dump({"mode": mode, "texts": lines, "userdict": None}, f,
                  ensure_ascii=False)
    subprocess.run([python, "tests/conformance/lac_oracle.py", req, out],
                   check=True, stderr=subprocess.DEVNULL)
    with open(out, encoding="utf-8") as f:
        res = json.load(f)
    for p in (req, out):
        os.unlink(p)
    os.rmdir(work)
    return [[w for w in words if not w.isspace()] for words, _ in res]


if __name__ == "__main__":
    main()

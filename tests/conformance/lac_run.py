#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of the LAC engine against Baidu LAC 2.1.2 itself.

The oracle is LAC 2.1.2 on paddlepaddle 1.8.5 in its own venv
(build/lac-venv, Python 3.8: `make lac-venv`), run through lac_oracle.py;
its results are cached per text under --cache (build/oracle-cache), so
only new texts cost a run of Paddle.

Cases, in both networks (seg: words; lac: words and tags):
  * every line of the SIGHAN 2005 PKU test text, every cmrc2018 context
    (dev + trial), and an adversarial table
    (testdata/segment/lac/adversarial.jsonl, plus the q2b.dic characters
    that are themselves replaced, read from the LAC archive, and lines of
    5,000, 9,000, 20,000 and 40,000 characters, the last longer than a
    group's window of 16384 positions in both networks: the long-text
    path), through tests/drivers/drv_lac;
  * the same with a user dictionary (testdata/segment/lac/userdict.txt:
    tags, pieces, a repeated phrase, a BOM, CR LF, '/' cases);
  * drv_lac's other paths (texts alone, small groups, every kernel the
    CPU has) give the same output bit for bit;
  * `segment --engine lac` end to end (PaddleNLP's words_segmentation.py
    rules, restated here, with LAC's words), --tags, -j 1/2/3;
  * `create-pretraining-data -W --cn-seg-func seg|lac` against PaddleNLP
    2.8.1's ErnieTokenizer with extend_chinese_char(), the marking rule of
    create_pretraining_data.py (cpd_run.py's mark_whole_words) fed LAC's
    words, and its indexed_dataset builder: the same .bin/.idx bytes.

A text whose words (or tags) differ from LAC's passes only if our Viterbi
margin for it (best path score less the second best, drv_lac's "m") is
below --bound (default 1e-4): a near tie that float rounding can flip
(LAC's own results depend on MKL's kernels).  Such texts are counted and
listed; any other difference fails.  The end-to-end cases then expect our
words for exactly those texts.

Ends with "lac-conformance: N passed, N failed, N skipped".
"""
import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
SUITE = "lac-conformance"

# PaddleNLP's words_segmentation.py
SPECIAL_CHARS = ["\n", "。", "?", "？", " ", ";", "；", "！", "!"]
SPLIT_CHARS = ["。", "?", "？", ";", "；", "!", "！"]


class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.near_ties = []

    def ok(self, name, detail=""):
        self.passed += 1
        print("ok   %s%s" % (name, "  " + detail if detail else ""))

    def fail(self, name, detail):
        self.failed += 1
        print("FAIL %s\n%s" % (name, detail))

    def skip(self, name, why):
        self.skipped += 1
        print("skip %s: %s" % (name, why))


# --------------------------------------------------------------- the oracle

class Oracle:
    """LAC 2.1.2's results, cached per (network, user dictionary, text)."""

    def __init__(self, python, cache_dir):
        self.python = python
        self.cache_dir = cache_dir
        self.memo = {}

    def _path(self, mode, userdict):
        h = hashlib.sha256(b"lac-2.1.2 " + mode.encode())
        if userdict:
            with open(userdict, "rb") as f:
                h.update(f.read())
        return os.path.join(self.cache_dir,
                            "lac-%s-%s.json" % (mode, h.hexdigest()[:16]))

    def run(self, mode, texts, userdict=None):
        path = self._path(mode, userdict)
        if path not in self.memo:
            self.memo[path] = {}
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    self.memo[path] = json.load(f)
        known = self.memo[path]
        todo = sorted({t for t in texts if t not in known})
        if todo:
            work = tempfile.mkdtemp(prefix="lac-oracle.")
            req = os.path.join(work, "req.json")
            out = os.path.join(work, "out.json")
            with open(req, "w", encoding="utf-8") as f:
                json.dump({"mode": mode, "texts": todo,
                           "userdict": os.path.abspath(userdict)
                           if userdict else None}, f, ensure_ascii=False)
            print("# running LAC 2.1.2 (%s%s) on %d texts" % (
                mode, ", user dictionary" if userdict else "", len(todo)))
            sys.stdout.flush()
            subprocess.run([self.python, os.path.join(HERE, "lac_oracle.py"),
                            req, out], check=True)
            with open(out, encoding="utf-8") as f:
                for t, r in zip(todo, json.load(f)):
                    known[t] = r
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(self.cache_dir, exist_ok=True)
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                json.dump(known, f, ensure_ascii=False)
            os.replace(path + ".tmp", path)
        return [known[t] for t in texts]


# --------------------------------------------------------------- ours

def feed(texts):
    out = bytearray()
    for t in texts:
        b = t.encode("utf-8")
        out += b"%d\n" % len(b) + b
    return bytes(out)


def drv(args, mode, texts, userdict=None, extra=()):
    cmd = [args.drv] + list(extra)
    if userdict:
        cmd += ["-U", userdict]
    cmd += [args.model, mode]
    p = subprocess.run(cmd, input=feed(texts), stdout=subprocess.PIPE,
                       check=True)
    return p.stdout


def parse(out):
    return [json.loads(ln) for ln in out.decode("utf-8").split("\n") if ln]


# --------------------------------------------------------------- compare

def compare(res, args, name, mode, texts, userdict=None):
    """Our words (and tags) against LAC's for each text; returns our
    results, with the texts explained by a near tie marked, and whether
    every difference is one."""
    ref = args.oracle.run(mode, texts, userdict)
    ours = parse(drv(args, mode, texts, userdict))
    if len(ours) != len(texts):
        res.fail(name, "  drv_lac gave %d results for %d texts" % (
            len(ours), len(texts)))
        return None, False
    ties, bad = [], []
    for i, (o, (w, t)) in enumerate(zip(ours, ref)):
        same = o["w"] == w and (mode == "seg" or o["t"] == t)
        o["tie"] = False
        if same:
            continue
        m = o["m"]
        if m is not None and m < args.bound:
            ties.append((i, m))
            o["tie"] = True
        else:
            bad.append((i, m, w, t, o))
    n_chars = sum(len(t) for t in texts)
    margins = [o["m"] for o in ours if o["m"] is not None]
    detail = "%d texts, %d characters, smallest margin %.3g" % (
        len(texts), n_chars, min(margins) if margins else float("nan"))
    if ties:
        detail += "; %d differ at a near tie (margin < %g: %s)" % (
            len(ties), args.bound,
            ", ".join("#%d %.2g" % (i, m) for i, m in ties[:8]))
        res.near_ties += [(name, i, m) for i, m in ties]
    if bad:
        lines = []
        for i, m, w, t, o in bad[:5]:
            lines.append("  text #%d %r (margin %s)\n    LAC:  %r %r\n"
                         "    ours: %r %r" % (i, texts[i][:80], m, w[:20],
                                             (t or [])[:20], o["w"][:20],
                                             o["t"][:20]))
        res.fail(name, "  %d of %d texts differ beyond a near tie "
                 "(bound %g)\n%s" % (len(bad), len(texts), args.bound,
                                     "\n".join(lines)))
        return ours, False
    res.ok(name, detail)
    return ours, True


# --------------------------------------------------------------- inputs

def pku_lines(data):
    with open(os.path.join(data, "zh/sighan2005-pku/pku_test.utf8"),
              encoding="utf-8", newline="") as f:
        text = f.read().replace("\r\n", "\n")
    return [ln for ln in text.split("\n") if ln]


def cmrc_paragraphs(data):
    paras = []
    for name in ("zh/cmrc2018_dev.json", "zh/cmrc2018_trial.json"):
        with open(os.path.join(data, name), encoding="utf-8") as f:
            for art in json.load(f)["data"]:
                for p in art["paragraphs"]:
                    paras.append(p["context"])
    return paras


def adversarial(args, pku):
    with open(os.path.join(TOP, "testdata/segment/lac/adversarial.jsonl"),
              encoding="utf-8") as f:
        lines = [json.loads(ln) for ln in f if ln.strip()]
    # q2b.dic's characters that are themselves replaced: LAC does not
    # apply it twice.  Read from the archive (nothing of LAC is committed).
    if args.archive and os.path.exists(args.archive):
        with tarfile.open(args.archive) as tf:
            q = tf.extractfile("LAC-2.1.2/LAC/seg_model/conf/q2b.dic")
            pairs = [ln.split("\t") for ln in
                     q.read().decode("utf-8").split("\n") if ln.count("\t") == 1]
        q2b = dict(pairs)
        chain = [k for k, v in q2b.items() if v in q2b]
        lines += ["".join(chain[i:i + 40]) for i in range(0, len(chain), 40)]
    # Long lines: PKU's text run together.
    joined = "".join(pku)
    lines += [joined[:5000], joined[5000:14000], joined[20000:40000],
              joined[40000:80000]]
    return lines


# --------------------------------------------------------------- end to end

def paddle_sentences(text):
    import re
    for char in SPECIAL_CHARS:
        text = re.sub("[" + char + "]+[ ]*", char, text)
    for char in SPLIT_CHARS:
        text = text.replace(char, char + "\n")
    return [ln for ln in text.split("\n") if len(ln) != 0]


def words_of(args, mode, sentences, res, name):
    """LAC's words (and tags) of each sentence, ours where a near tie
    explains the difference; None if some other difference."""
    ours, ok = compare(res, args, name + " (sentences)", mode, sentences)
    if not ok:
        return None
    ref = args.oracle.run(mode, sentences)
    return [(o["w"], o["t"]) if o["tie"] else (w, t)
            for o, (w, t) in zip(ours, ref)]


def segment_case(res, args, work, mode, docs, tags=False):
    name = "segment --engine lac --lac-mode %s%s" % (
        mode, " --tags" if tags else "")
    sents = sorted({s for d in docs for s in paddle_sentences(d)})
    got = words_of(args, mode, sents, res, name)
    if got is None:
        return
    by_sent = dict(zip(sents, got))
    want = ""
    for d in docs:
        for s in paddle_sentences(d):
            w, t = by_sent[s]
            if tags:
                want += " ".join("%s/%s" % (a, b) for a, b in zip(w, t))
            else:
                want += " ".join(w)
            want += "\n"
        want += "\n"
    path = os.path.join(work, "docs.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
    outs = {}
    for j in ("1", "2", "3"):
        cmd = [args.segment, "-q", "-f", "jsonl", "-j", j, "--lac-mode",
               mode] + (["--tags"] if tags else []) + ["-m", args.model, path]
        outs[j] = subprocess.run(cmd, stdout=subprocess.PIPE,
                                 check=True).stdout.decode("utf-8")
    if outs["2"] != want:
        a, b = outs["2"].split("\n"), want.split("\n")
        k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
                 min(len(a), len(b)))
        res.fail(name, "  first difference at output line %d\n    ours: %r\n"
                 "    want: %r" % (k + 1, a[k][:200] if k < len(a) else None,
                                   b[k][:200] if k < len(b) else None))
    elif outs["1"] != want or outs["3"] != want:
        res.fail(name, "  -j 1 or -j 3 differs from -j 2")
    else:
        res.ok(name, "%d documents, %d sentences, -j 1/2/3" % (
            len(docs), sum(len(paddle_sentences(d)) for d in docs)))


def cpd_case(res, args, work, mode, docs):
    import numpy as np
    import cpd_run
    from run import plain_vocab
    name = "create-pretraining-data -S --chinese -W --cn-seg-func %s" % mode
    vocab_src = os.path.join(args.data, "vocab/ernie-3.0-base-zh.vocab.txt")
    vdir = os.path.join(work, "vocab")
    plain_vocab(vocab_src, vdir)
    sents = sorted({s.strip() for d in docs for s in d.split("\n")
                    if s.strip()})
    got = words_of(args, mode, sents, res, name)
    if got is None:
        return
    words = dict(zip(sents, (w for w, _ in got)))
    with contextlib.redirect_stdout(io.StringIO()):  # PaddleNLP's prints
        tok = cpd_run.load_paddle(vdir, True)
    ref_docs = []
    for d in docs:
        doc = []
        for s in d.split("\n"):
            s = s.strip()
            if not s:
                continue
            # create_pretraining_data.py's process(): the segmenter's
            # words joined (LAC's cover the sentence), tokenized, marked.
            w = words[s]
            tokens = tok.tokenize("".join(w))
            ids = tok.convert_tokens_to_ids(
                cpd_run.mark_whole_words(tokens, w))
            if ids:
                doc.append(ids)
        ref_docs.append(doc)
    ref = os.path.join(work, "ref-" + mode)
    with contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        cpd_run.paddle_write(ref_docs, ref, np.uint16)
    path = os.path.join(work, "cpd.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
    prefixes = []
    for j in ("2", "1", "3"):
        ours = os.path.join(work, "ours-%s-j%s" % (mode, j))
        cpd_run.run_ours(args.cpd, ["-v", vocab_src, "-o", ours, "-j", j,
                                    "-S", "--chinese", "-W", "--cn-seg-func",
                                    mode, "-m", args.model], [path])
        prefixes.append(ours)
    same = all(cpd_run.read_file(prefixes[0] + e) == cpd_run.read_file(ref + e)
               for e in (".bin", ".idx"))
    same_j = all(cpd_run.read_file(p + e) == cpd_run.read_file(prefixes[0] + e)
                 for p in prefixes[1:] for e in (".bin", ".idx"))
    if not same:
        res.fail(name, "  .bin/.idx differ from PaddleNLP's builder")
    elif not same_j:
        res.fail(name, "  -j 1 or -j 3 differs from -j 2")
    else:
        res.ok(name, "%d documents, byte-identical, -j 1/2/3" % len(docs))


# --------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--drv", required=True)
    ap.add_argument("--segment", required=True)
    ap.add_argument("--cpd", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--lac-python", required=True)
    ap.add_argument("--archive")
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--bound", type=float, default=1e-4)
    args = ap.parse_args()
    res = Results()
    if not os.path.isdir(args.data):
        res.skip(SUITE, "no shared data at %s" % args.data)
        return finish(res)
    if not os.path.exists(args.model):
        res.fail(SUITE, "  no LAC model at %s (built with WITH_LAC=0?)"
                 % args.model)
        return finish(res)
    args.oracle = Oracle(args.lac_python, args.cache)
    work = tempfile.mkdtemp(prefix="lac-conformance.")
    pku = pku_lines(args.data)
    cmrc = cmrc_paragraphs(args.data)
    adv = adversarial(args, pku)
    userdict = os.path.join(TOP, "testdata/segment/lac/userdict.txt")
    for mode in ("seg", "lac"):
        compare(res, args, "PKU test, %s" % mode, mode, pku)
        compare(res, args, "cmrc2018 contexts, %s" % mode, mode, cmrc)
        compare(res, args, "adversarial, %s" % mode, mode, adv)
        compare(res, args, "user dictionary: adversarial + PKU, %s" % mode,
                mode, adv + pku[:300], userdict)
        # Every path of ours gives the same bytes: texts alone, groups of
        # 3 rows and 64 positions (longer texts in windows of 64), and
        # each kernel this CPU has (the scalar one on fewer texts).
        some = adv[:53] + pku[:100] + [adv[-1][:3000]]
        base = drv(args, mode, some)
        kernels = []
        for k in ("scalar", "avx2", "avx512"):
            p = subprocess.run([args.drv, "-k", k, args.model, mode],
                               input=feed(adv[:40] + pku[:30]),
                               stdout=subprocess.PIPE)
            if p.returncode == 0:
                kernels.append((k, p.stdout))
        other = [("-1", drv(args, mode, some, extra=["-1"])),
                 ("-r 3 -p 64", drv(args, mode, some,
                                    extra=["-r", "3", "-p", "64"]))]
        part = drv(args, mode, adv[:40] + pku[:30])
        bad = [n for n, o in other if o != base] + \
              [k for k, o in kernels if o != part]
        if bad:
            res.fail("paths of drv_lac, %s" % mode, "  differ: %s" % bad)
        else:
            res.ok("paths of drv_lac, %s" % mode, "alone, small groups and "
                   "windows, kernels %s: same bytes" %
                   "/".join(k for k, _ in kernels))
    docs = ["\n".join(cmrc[i:i + 4]) for i in range(0, 400, 4)]
    for mode in ("seg", "lac"):
        segment_case(res, args, work, mode, docs)
    segment_case(res, args, work, "lac", docs[:40], tags=True)
    for mode in ("seg", "lac"):
        cpd_case(res, args, work, mode, docs)
    shutil.rmtree(work, ignore_errors=True)
    n = len(res.near_ties)
    print("# near ties (margin < %g) explaining differences: %d text%s" % (
        args.bound, n, "" if n == 1 else "s"))
    return finish(res)


def finish(res):
    print("%s: %d passed, %d failed, %d skipped" % (
        SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

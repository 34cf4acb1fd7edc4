#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of `vocab-build english` against Debian's spm_train.

The seed trains its English pieces with sentencepiece BPE, 17,000 pieces,
every other option at its default (ernie-data.md 6.3).  The reference is
the same library's own front end, /usr/bin/spm_train
--model_type=bpe --vocab_size=N; our eng.vocab must equal its eng.vocab
byte for byte, and our model its model when given the same inputs, prefix
and thread count (the model records them).  Any -j gives the same vocab.

Inputs: WikiText-2's test split (17,000 pieces), the cmrc2018 contexts
(Chinese with some English; 17,000 pieces, or the largest size spm_train
accepts there), and the largest English text this machine's Debian
packages give without rendering: every distinct /usr/share/doc/*/copyright
(about 5 MB).  Also: two inputs (one named with a comma, which the input
list of spm_train must quote), a zstd input, and a vocab size too large
for the text (the same limit in our message as in spm_train's).

spm_train's outputs are cached under --cache, keyed by the inputs' bytes,
names and the options.  Prints one line per case and ends with
"vocab-english-conformance: N passed, N failed, N skipped"; exits 1 on a
failure.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Results  # noqa: E402

SUITE = "vocab-english-conformance"
SPM_TRAIN = "/usr/bin/spm_train"
SIZE = 17000


def sha256_files(paths):
    h = hashlib.sha256()
    for p in paths:
        h.update(p.encode() + b"\0")
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


class Oracle:
    """spm_train, run in a directory of its own, its outputs cached."""

    def __init__(self, cache):
        self.cache = os.path.join(cache, "vocab-english")
        os.makedirs(self.cache, exist_ok=True)

    def train(self, inputs, size, threads=16):
        """(vocab bytes, model bytes) or (None, error text)."""
        key = hashlib.sha256(json.dumps(
            [sha256_files(inputs), size, threads]).encode()).hexdigest()[:32]
        d = os.path.join(self.cache, key)
        if os.path.isdir(d):
            with open(os.path.join(d, "result.json")) as f:
                r = json.load(f)
            if r["error"] is not None:
                return None, r["error"]
            return (open(os.path.join(d, "eng.vocab"), "rb").read(),
                    open(os.path.join(d, "eng.model"), "rb").read())
        tmp = tempfile.mkdtemp(dir=self.cache)
        csv = ",".join('"%s"' % p.replace('"', '""') if re.search('[,"]', p)
                       else p for p in inputs)
        p = subprocess.run(
            [SPM_TRAIN, "--input=" + csv, "--model_prefix=eng",
             "--vocab_size=%d" % size, "--model_type=bpe",
             "--num_threads=%d" % threads, "--minloglevel=1"],
            cwd=tmp, capture_output=True, text=True, errors="replace")
        error = None
        if p.returncode != 0:
            error = p.stderr.strip() or "exit status %d" % p.returncode
        with open(os.path.join(tmp, "result.json"), "w") as f:
            json.dump({"error": error}, f)
        os.replace(tmp, d) if not os.path.isdir(d) else shutil.rmtree(tmp)
        return self.train(inputs, size, threads)


def ours(tool, inputs, size, workdir, threads=None, model=True):
    """Run vocab-build english in workdir: (vocab, model) or (None, err)."""
    os.makedirs(workdir, exist_ok=True)
    cmd = [tool, "english", "-q", "-s", str(size), "-o", "eng.vocab"]
    if model:
        cmd += ["-m", "eng.model"]
    if threads is not None:
        cmd += ["-j", str(threads)]
    p = subprocess.run(cmd + inputs, cwd=workdir, capture_output=True,
                       text=True, errors="replace")
    if p.returncode != 0:
        return None, p.stderr.strip() or "exit status %d" % p.returncode
    vocab = open(os.path.join(workdir, "eng.vocab"), "rb").read()
    mdl = (open(os.path.join(workdir, "eng.model"), "rb").read()
           if model else None)
    return vocab, mdl


def first_diff(a, b):
    la, lb = a.split(b"\n"), b.split(b"\n")
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return "line %d: ours %r, spm_train %r" % (i + 1, x, y)
    return "%d lines vs %d" % (len(la), len(lb))


def max_size(error):
    m = re.search(r"value <= (\d+)", error or "")
    return int(m.group(1)) if m else None


def compare(res, name, tool, oracle, inputs, size, work, threads=None):
    """Train both; compare vocab and model.  Returns the size used."""
    want = oracle.train(inputs, size, threads or 16)
    if want[0] is None and max_size(want[1]) is not None:
        size = max_size(want[1])
        name += " (the largest size: %d)" % size
        want = oracle.train(inputs, size, threads or 16)
    if want[0] is None:
        res.fail(name, "spm_train failed: " + want[1][-300:])
        return None
    got = ours(tool, inputs, size, work, threads)
    if got[0] is None:
        res.fail(name, "vocab-build failed: " + got[1][-300:])
    elif got[0] != want[0]:
        res.fail(name, "vocab differs: " + first_diff(got[0], want[0]))
    elif got[1] != want[1]:
        res.fail(name, "vocab same, model differs (%d vs %d bytes)" %
                 (len(got[1]), len(want[1])))
    else:
        res.ok(name, "%d pieces, vocab and model identical" %
               got[0].count(b"\n"))
    return size


# --------------------------------------------------------------- inputs

def cmrc_text(data, dst):
    """The cmrc2018 contexts, one a line (dev, then trial)."""
    with open(dst, "w", encoding="utf-8") as out:
        for name in ("cmrc2018_dev.json", "cmrc2018_trial.json"):
            path = os.path.join(data, "zh", name)
            if not os.path.exists(path):
                continue
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            for art in doc["data"]:
                for para in art["paragraphs"]:
                    out.write(para["context"].replace("\n", " ") + "\n")
    return os.path.getsize(dst) > 0


def debian_docs(dst):
    """Every distinct /usr/share/doc/*/copyright, in path order."""
    seen = set()
    with open(dst, "wb") as out:
        for p in sorted(glob.glob("/usr/share/doc/*/copyright")):
            try:
                with open(p, "rb") as f:
                    b = f.read()
            except OSError:
                continue
            h = hashlib.sha256(b).digest()
            if h in seen:
                continue
            seen.add(h)
            out.write(b if b.endswith(b"\n") else b + b"\n")
    return os.path.getsize(dst)


# --------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab-build", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache", required=True)
    args = ap.parse_args()
    res = Results()
    tool = os.path.abspath(args.vocab_build)
    if not os.access(SPM_TRAIN, os.X_OK):
        res.skip("all", "no %s (Debian package sentencepiece)" % SPM_TRAIN)
        return finish(res)
    oracle = Oracle(os.path.abspath(args.cache))
    inputs_dir = os.path.join(oracle.cache, "inputs")
    os.makedirs(inputs_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="vocab-english-")
    try:
        run_cases(res, tool, oracle, os.path.abspath(args.data), inputs_dir,
                  work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return finish(res)


def run_cases(res, tool, oracle, data, inputs_dir, work):
    wiki = os.path.join(data, "en", "wikitext-2-raw", "wiki.test.raw")
    if not os.path.exists(wiki):
        res.skip("wikitext-2", "no %s" % wiki)
    else:
        compare(res, "wikitext-2 test, %d pieces" % SIZE, tool, oracle,
                [wiki], SIZE, os.path.join(work, "wiki"))
        # The pieces do not depend on the thread count; the model records
        # it, so each model is compared with spm_train's at that count.
        vocabs = []
        for j in (1, 2):
            compare(res, "wikitext-2 test, -j %d" % j, tool, oracle, [wiki],
                    SIZE, os.path.join(work, "wiki-j%d" % j), threads=j)
            p = os.path.join(work, "wiki-j%d" % j, "eng.vocab")
            vocabs.append(open(p, "rb").read() if os.path.exists(p) else b"")
        vocabs.append(open(os.path.join(work, "wiki", "eng.vocab"),
                           "rb").read()
                      if os.path.exists(os.path.join(work, "wiki",
                                                     "eng.vocab")) else b"")
        if vocabs[0] and vocabs[0] == vocabs[1] == vocabs[2]:
            res.ok("wikitext-2 test, -j 1 = -j 2 = -j 16 vocab")
        else:
            res.fail("wikitext-2 test, -j 1 = -j 2 = -j 16 vocab",
                     "the vocabs differ")

        # Two inputs, one named with a comma: spm_train's list quotes it.
        comma = os.path.join(inputs_dir, "wiki, part 2.txt")
        with open(wiki, "rb") as f:
            lines = f.read().split(b"\n")
        half = len(lines) // 2
        first = os.path.join(inputs_dir, "wiki-part1.txt")
        with open(first, "wb") as f:
            f.write(b"\n".join(lines[:half]) + b"\n")
        with open(comma, "wb") as f:
            f.write(b"\n".join(lines[half:]))
        compare(res, "two inputs, one named with a comma", tool, oracle,
                [first, comma], 8000, os.path.join(work, "two"))

        # A zstd input trains the same pieces as its text.
        if shutil.which("zstd"):
            z = os.path.join(work, "wiki.raw.zst")
            subprocess.run(["zstd", "-q", "-f", wiki, "-o", z], check=True)
            got = ours(tool, [z], 4000, os.path.join(work, "zst"),
                       model=False)
            want = oracle.train([wiki], 4000)
            if got[0] is not None and got[0] == want[0]:
                res.ok("zstd input", "the vocab of the text")
            else:
                res.fail("zstd input", str(got[1])[-300:])
        else:
            res.skip("zstd input", "no zstd program")

        # Too large a size: the same limit in both messages.
        want = oracle.train([wiki], 200000)
        got = ours(tool, [wiki], 200000, os.path.join(work, "big"))
        limit = max_size(want[1]) if want[0] is None else None
        if got[0] is None and limit and max_size(got[1]) == limit:
            res.ok("vocab size 200000 refused", "at most %d, as spm_train"
                   % limit)
        else:
            res.fail("vocab size 200000 refused",
                     "ours: %r, spm_train: %r" % (got[1], want[1]))

    cmrc = os.path.join(inputs_dir, "cmrc2018.txt")
    if cmrc_text(data, cmrc):
        compare(res, "cmrc2018 contexts (zh)", tool, oracle, [cmrc], SIZE,
                os.path.join(work, "cmrc"))
    else:
        res.skip("cmrc2018 contexts (zh)", "no cmrc2018 in %s" % data)

    docs = os.path.join(inputs_dir, "debian-copyright.txt")
    n = debian_docs(docs)
    if n < 1000000:
        res.skip("Debian copyright texts", "only %d bytes here" % n)
    else:
        compare(res, "Debian copyright texts (%.1f MB), %d pieces"
                % (n / 1e6, SIZE), tool, oracle, [docs], SIZE,
                os.path.join(work, "docs"))


def finish(res):
    print("%s: %d passed, %d failed, %d skipped" %
          (SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

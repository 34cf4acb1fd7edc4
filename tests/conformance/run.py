#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of `tokenize` against the reference tokenizers.

Every line of the shared corpora (cmrc2018 contexts as JSONL, the PKU test
text, WikiText-2 test), the adversarial table in testdata/tokenize/, and a
sweep over every Unicode code point are tokenized by our tool and by the
references (oracles.py), for both shared vocabs, lowercased and not.  The
ids must be identical.  In the code point sweep, a difference is allowed
only where the Unicode data itself differs between Python's unicodedata and
utf8proc (read from the library through ctypes), or, for HF tokenizers,
where HF also disagrees with Google BERT's Python algorithm (HF uses older
Unicode tables): those are reported, not hidden.

Prints one line per case and ends with
"conformance: N passed, N failed, N skipped"; exits 1 on any failure.
"""
import argparse
import atexit
import ctypes
import ctypes.util
import hashlib
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracles  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))

PAIRS = [("ernie", "paddle"), ("bert", "hf"), ("bert", "bert")]


def pairs(lower):
    """transformers' BertTokenizer applies NFC to the text first (Google
    BERT, HF tokenizers and PaddleNLP do not); that is invisible after the
    lowercase path's NFD but not in cased mode, so it is an oracle for
    lowercased text only."""
    return [p for p in PAIRS if lower or p[1] != "bert"]


class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def ok(self, name, detail=""):
        self.passed += 1
        print("ok   %s%s" % (name, "  " + detail if detail else ""))

    def fail(self, name, detail):
        self.failed += 1
        print("FAIL %s\n%s" % (name, detail))

    def skip(self, name, why):
        self.skipped += 1
        print("skip %s: %s" % (name, why))


# --------------------------------------------------------------- inputs

def read_lines(path):
    """Records of a line-oriented file: split on b"\\n" like `tokenize`."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def cmrc_jsonl(src, dst, ensure_ascii):
    with open(src, encoding="utf-8") as f:
        doc = json.load(f)
    with open(dst, "w", encoding="utf-8") as out:
        for art in doc["data"]:
            for para in art["paragraphs"]:
                out.write(json.dumps({"text": para["context"]},
                                     ensure_ascii=ensure_ascii) + "\n")


def plain_vocab(src, dst_dir):
    """A one-token-a-line copy of a vocab for the oracles (PaddleNLP and HF
    read only that form); token<TAB>id files are put in id order."""
    os.makedirs(dst_dir, exist_ok=True)
    with open(src, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if "\t" in lines[0]:
        by_id = {}
        for ln in lines:
            tok, i = ln.rstrip("\r").split("\t")
            by_id[int(i)] = tok
        assert sorted(by_id) == list(range(len(by_id))), "ids not 0..n-1"
        lines = [by_id[i] for i in range(len(by_id))]
    with open(os.path.join(dst_dir, "vocab.txt"), "w", encoding="utf-8",
              newline="\n") as f:
        f.write("\n".join(ln.rstrip("\r") for ln in lines) + "\n")


def texts_of(records, jsonl):
    out = []
    for r in records:
        s = r.decode("utf-8")
        out.append(json.loads(s)["text"] if jsonl else s)
    return out


# --------------------------------------------------------------- running

_worker = None


def _init(name, vocab_dir, lower):
    global _worker
    _worker = oracles.make(name, vocab_dir, lower)


def _run(texts):
    return _worker(texts)


def run_oracle(name, vocab_dir, lower, texts, cache_dir, jobs):
    """Reference ids for texts, cached on disk by content."""
    h = hashlib.sha256()
    h.update(repr((name, oracles.versions().get(
        {"paddle": "paddlenlp", "hf": "tokenizers",
         "bert": "transformers"}[name]), lower)).encode())
    with open(os.path.join(vocab_dir, "vocab.txt"), "rb") as f:
        h.update(f.read())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass") + b"\0")
    path = os.path.join(cache_dir, h.hexdigest() + ".json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    if name == "hf":
        # HF's Rust strings cannot hold lone surrogates; the Python
        # references drop them (category Cs), so drop them here too.
        texts = [t.encode("utf-8", "ignore").decode("utf-8")
                 if any(0xD800 <= ord(c) <= 0xDFFF for c in t) else t
                 for t in texts]
    n = max(1, len(texts) // (jobs * 8))
    chunks = [texts[i:i + n] for i in range(0, len(texts), n)]
    if jobs > 1 and len(texts) > 2000 and name != "hf":
        with multiprocessing.get_context("fork").Pool(
                jobs, _init, (name, vocab_dir, lower)) as pool:
            res = [ids for part in pool.map(_run, chunks) for ids in part]
    else:
        fn = oracles.make(name, vocab_dir, lower)
        res = [ids for part in chunks for ids in fn(part)]
    os.makedirs(cache_dir, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.replace(tmp, path)
    return res


def run_ours(tool, vocab, flavor, lower, input_path, jsonl, extra=()):
    cmd = [tool, "-q", "-j", "2", "-v", vocab, "-F", flavor]
    cmd += [] if lower else ["-L"]
    cmd += ["-k", "text"] if jsonl else []
    cmd += list(extra) + [input_path]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (
            " ".join(cmd), p.returncode, p.stderr.decode(errors="replace")))
    return [[int(x) for x in ln.split()]
            for ln in p.stdout.decode().split("\n")[:-1]]


def compare(res, name, ours, ref, texts, max_show=3):
    if len(ours) != len(ref):
        res.fail(name, "  %d output lines, reference has %d"
                 % (len(ours), len(ref)))
        return
    bad = [i for i in range(len(ref)) if ours[i] != ref[i]]
    if not bad:
        res.ok(name, "%d records" % len(ref))
        return
    msg = ["  %d of %d records differ" % (len(bad), len(ref))]
    for i in bad[:max_show]:
        msg.append("  record %d: %r" % (i + 1, texts[i][:200]))
        msg.append("    ours: %s" % ours[i][:40])
        msg.append("    ref:  %s" % ref[i][:40])
    res.fail(name, "\n".join(msg))


# --------------------------------------------------------------- Unicode data

class Utf8proc:
    """utf8proc's view of a code point, straight from the shared library."""

    def __init__(self):
        name = ctypes.util.find_library("utf8proc") or "libutf8proc.so.2"
        lib = ctypes.CDLL(name)
        lib.utf8proc_category_string.restype = ctypes.c_char_p
        lib.utf8proc_category_string.argtypes = [ctypes.c_int32]
        lib.utf8proc_tolower.restype = ctypes.c_int32
        lib.utf8proc_tolower.argtypes = [ctypes.c_int32]
        lib.utf8proc_NFD.restype = ctypes.c_void_p
        lib.utf8proc_NFD.argtypes = [ctypes.c_char_p]
        lib.utf8proc_unicode_version.restype = ctypes.c_char_p
        self.lib = lib
        self.libc = ctypes.CDLL(None)
        self.libc.free.argtypes = [ctypes.c_void_p]

    def version(self):
        return self.lib.utf8proc_unicode_version().decode()

    def category(self, cp):
        return self.lib.utf8proc_category_string(cp).decode()

    def nfd_lower(self, cp):
        low = "i\u0307" if cp == 0x130 else chr(self.lib.utf8proc_tolower(cp))
        p = self.lib.utf8proc_NFD(low.encode("utf-8"))
        s = ctypes.string_at(p).decode("utf-8")
        self.libc.free(p)
        return s


def unicode_differences():
    """Code points whose category, lowercase or NFD differ between Python's
    unicodedata and utf8proc."""
    u = Utf8proc()
    diff = set()
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        pc = unicodedata.category(c)
        if pc != u.category(cp):
            diff.add(cp)
        elif pc[0] not in "C" and \
                unicodedata.normalize("NFD", c.lower()) != u.nfd_lower(cp):
            diff.add(cp)
    return diff, u.version()


def sweep_codepoints():
    return [cp for cp in range(0x110000)
            if not (0xD800 <= cp <= 0xDFFF) and cp != 0x0A]


def sweep_text(cp):
    # Inside a word, at the start of one, and after an uppercase letter.
    return "a" + chr(cp) + "A" + chr(cp)


# --------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenize", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-sweep", action="store_true")
    args = ap.parse_args()

    res = Results()
    print("# references: %s; Python unicodedata %s" % (
        ", ".join("%s %s" % kv for kv in oracles.versions().items()),
        unicodedata.unidata_version))
    if not os.path.isdir(args.data):
        res.skip("conformance", "no shared data at %s" % args.data)
        return finish(res)

    work = tempfile.mkdtemp(prefix="conformance.")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    vocabs = {
        "bert-base-chinese": os.path.join(
            args.data, "vocab/bert-base-chinese.vocab.txt"),
        "ernie-3.0-base-zh": os.path.join(
            args.data, "vocab/ernie-3.0-base-zh.vocab.txt"),
    }
    vocab_dirs = {}
    for name, path in vocabs.items():
        vocab_dirs[name] = os.path.join(work, name)
        plain_vocab(path, vocab_dirs[name])

    corpora = []
    for name, src, ascii_ in (("cmrc2018_dev", "zh/cmrc2018_dev.json", False),
                              ("cmrc2018_trial", "zh/cmrc2018_trial.json",
                               True)):
        dst = os.path.join(work, name + ".jsonl")
        cmrc_jsonl(os.path.join(args.data, src), dst, ascii_)
        corpora.append((name, dst, True))
    corpora.append(("pku_test", os.path.join(
        args.data, "zh/sighan2005-pku/pku_test.utf8"), False))
    corpora.append(("wiki.test", os.path.join(
        args.data, "en/wikitext-2-raw/wiki.test.raw"), False))
    corpora.append(("adversarial", os.path.join(
        TOP, "testdata/tokenize/adversarial.jsonl"), True))

    for cname, path, jsonl in corpora:
        texts = texts_of(read_lines(path), jsonl)
        for vname in vocabs:
            for lower in (True, False):
                for flavor, oracle in pairs(lower):
                    case = "%s %s %s %s~%s" % (
                        cname, vname, "lower" if lower else "cased",
                        flavor, oracle)
                    ref = run_oracle(oracle, vocab_dirs[vname], lower, texts,
                                     args.cache, args.jobs)
                    ours = run_ours(args.tokenize, vocabs[vname], flavor,
                                    lower, path, jsonl)
                    compare(res, case, ours, ref, texts)

    invalid_utf8(res, args, vocabs, vocab_dirs)
    if not args.no_sweep:
        sweep(res, args, work, vocabs, vocab_dirs)
    return finish(res)


def invalid_utf8(res, args, vocabs, vocab_dirs):
    """-u replace/skip equal Python's decode(errors="replace"/"ignore")."""
    path = os.path.join(TOP, "testdata/tokenize/invalid-utf8.txt")
    records = read_lines(path)
    for policy, errors in (("replace", "replace"), ("skip", "ignore")):
        texts = [r.decode("utf-8", errors) for r in records]
        for flavor, oracle in PAIRS:
            ref = run_oracle(oracle, vocab_dirs["bert-base-chinese"], True,
                             texts, args.cache, 1)
            ours = run_ours(args.tokenize, vocabs["bert-base-chinese"],
                            flavor, True, path, False, ["-u", policy])
            compare(res, "invalid-utf8 -u %s %s~%s" % (policy, flavor,
                                                      oracle),
                    ours, ref, texts)


def sweep(res, args, work, vocabs, vocab_dirs):
    cps = sweep_codepoints()
    texts = [sweep_text(cp) for cp in cps]
    path = os.path.join(work, "sweep.txt")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(texts) + "\n")
    diff, uver = unicode_differences()
    print("# code point sweep: %d code points; Unicode data differs "
          "(Python %s vs utf8proc %s) on %d of them"
          % (len(cps), unicodedata.unidata_version, uver, len(diff)))
    vname = "bert-base-chinese"
    for lower in (True, False):
        mode = "lower" if lower else "cased"
        refs = {}
        for flavor, oracle in PAIRS:
            refs[oracle] = run_oracle(oracle, vocab_dirs[vname], lower, texts,
                                      args.cache, args.jobs)
        for flavor, oracle in pairs(lower):
            name = "sweep %s %s %s~%s" % (vname, mode, flavor, oracle)
            ours = run_ours(args.tokenize, vocabs[vname], flavor, lower,
                            path, False)
            ref = refs[oracle]
            if len(ours) != len(ref):
                res.fail(name, "  %d lines, reference has %d"
                         % (len(ours), len(ref)))
                continue
            bad = [cps[i] for i in range(len(cps)) if ours[i] != ref[i]]
            allowed = set(diff)
            why = "Unicode data differences"
            if oracle == "hf":
                # HF's own departures from Google BERT's Python algorithm.
                allowed |= {cps[i] for i in range(len(cps))
                            if refs["bert"][i] != ref[i]}
                why += " or HF departing from Google BERT"
            unexplained = [cp for cp in bad if cp not in allowed]
            if unexplained:
                lines = ["  %d code points differ, %d unexplained:"
                         % (len(bad), len(unexplained))]
                for cp in unexplained[:10]:
                    i = cps.index(cp)
                    lines.append("  U+%04X %s ours %s ref %s" % (
                        cp, unicodedata.category(chr(cp)), ours[i], ref[i]))
                res.fail(name, "\n".join(lines))
            else:
                res.ok(name, "%d differ, all from %s" % (len(bad), why))


def finish(res):
    print("conformance: %d passed, %d failed, %d skipped"
          % (res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of `vocab-build chars` and `vocab-build merge` against the
seed's recipe (ernie-data.md 6.2 and 6.4).

chars: our counts must equal collections.Counter over every line of each
input read as gen_char.py reads it (Python's text mode, so "\\r\\n" is one
"\\n"), written in the vocab-charcount(5) order (count descending, then
code point); every -j gives the same bytes; `chars -m` of two halves
equals the whole.  Inputs: the cmrc2018 dev contexts, the PKU test text
(CRLF) and WikiText-2 test.

merge: a driver that follows merge_vocab.py step by step with PaddleNLP's
own BasicTokenizer for norm(), fed with the same counts (in file order,
the tie order we define) and eng.vocab files: one trained by Debian's
spm_train on WikiText-2 and a hand-made one with corner cases; counts from
the corpora and a hand-made file around the threshold.  Our vocab.txt must
be byte-identical, and a vocab too large for uint16 with its ##<CJK>
extension must be refused with the right figures.

Prints one line per case and ends with
"vocab-merge-conformance: N passed, N failed, N skipped"; exits 1 on a
failure.
"""
import argparse
import collections
import hashlib
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracles  # noqa: E402
from run import Results  # noqa: E402

SUITE = "vocab-merge-conformance"


def cached(cache_dir, key, fn):
    h = hashlib.sha256(repr(key).encode("utf-8", "surrogatepass")).hexdigest()
    path = os.path.join(cache_dir, "vocab-merge-" + h + ".pickle")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    val = fn()
    os.makedirs(cache_dir, exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        pickle.dump(val, f)
    os.replace(path + ".tmp", path)
    return val


# ------------------------------------------------------------ char counts

def gen_char_counts(paths):
    """gen_char.py's counting: text mode, every character of every line."""
    c = collections.Counter()
    for p in paths:
        with open(p, "r", encoding="utf-8") as f:
            for line in f:
                c.update(line)
    return c


def escape(ch):
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}
    cp = ord(ch)
    if ch in named:
        return named[ch]
    if cp < 0x20 or 0x7F <= cp <= 0x9F or cp in (0x2028, 0x2029, 0xFEFF):
        return "\\u%04X" % cp
    return ch


def format_counts(items):
    return "".join("%s\t%d\n" % (escape(k), v) for k, v in items).encode()


def sorted_counts(counter):
    """vocab-charcount(5) order: count descending, then code point."""
    return sorted(counter.items(), key=lambda kv: (-kv[1], ord(kv[0])))


# ------------------------------------------------------------ the merge

def reference_merge(items, eng_path, threshold):
    """merge_vocab.py, step by step (ernie-data.md 6.4), with PaddleNLP's
    BasicTokenizer.  items: (char, count) in counts-file order, which is the
    dict's insertion order and so the tie order of the stable sort.
    Returns vocab.txt's bytes."""
    def load():
        import logging
        logging.disable(logging.WARNING)
        from paddlenlp.transformers import BasicTokenizer
        from paddlenlp.transformers.tokenizer_utils import (_is_control,
                                                            _is_whitespace)
        return BasicTokenizer(), _is_control, _is_whitespace
    bt, is_control, is_whitespace = oracles._quiet_import(load)

    re_eng = re.compile("[#a-zA-Z0-9]", re.U)
    re_sep = re.compile(r"\[[A-Z]+\]", re.U)
    re_sep_eng = re.compile(r"\<[\/a-z]+\>", re.U)

    def norm(x):
        return "".join(bt.tokenize(x))

    char_dict = dict(items)
    chinese = set(chr(x) for x in range(0x4E00, 0x9FA5 + 1))
    final = set()
    out = []

    def add(tok):
        if re_sep_eng.match(tok):
            return
        if re_eng.match(tok) or re_sep.match(tok):
            if tok not in final:
                final.add(tok)
                out.append(tok)
            return
        for k in norm(tok):
            if is_whitespace(k) or is_control(k):
                continue
            if k not in final:
                final.add(k)
                out.append(k)
                if (0x3040 <= ord(k) <= 0x33FF) or (0x1100 <= ord(k) <= 0x11FF):
                    add("##" + k)

    for x in ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"]:
        add(x)
    res = sorted(char_dict.items(), key=lambda x: -x[1])
    for k, _ in res:
        k = norm(k)
        if k in chinese:
            add(k)
            chinese.remove(k)
    rest = sorted(chinese)
    while rest:
        k = rest.pop()
        if k not in final:
            out.append(k)
            final.add(k)
    with open(eng_path, encoding="utf-8") as ec:
        line = ec.readline()
        while line:
            k, _ = line.strip().split()
            if "\u2581" in k:
                k = k[1:]
            elif re_sep_eng.match(k):
                pass
            else:
                k = "##" + k
            add(k)
            line = ec.readline()
    for k, v in res:
        if v >= threshold:
            add(k)
    return "".join(t + "\n" for t in out).encode("utf-8")


def extension_size(vocab_bytes):
    """The ids extend_chinese_char() adds: Han tokens without a ## form."""
    toks = set(vocab_bytes.decode("utf-8").split("\n")[:-1])
    return sum(1 for cp in range(0x4E00, 0x9FA5 + 1)
               if chr(cp) in toks and "##" + chr(cp) not in toks)


# ------------------------------------------------------------ inputs

HAND_COUNTS = [
    # Han: ties, a compatibility ideograph before its unified form, a
    # supplementary compatibility ideograph, ideographs of other blocks.
    ("的", 1000), ("中", 500), ("国", 500), ("\uF900", 400), ("\u8C48", 350),
    ("人", 300), ("\U0002F800", 250), ("〇", 250), ("㊥", 300),
    ("一", 1), ("丁", 1), ("\U00020000", 260), ("㐀", 230),
    # Kana (voiced marks go), half-width and circled forms.
    ("が", 300), ("ガ", 250), ("ぱ", 199), ("ｶ", 250), ("㋐", 220),
    ("ー", 200), ("ゝ", 200),
    # Hangul syllables (decompose into jamo), compatibility jamo.
    ("한", 300), ("글", 200), ("ㄱ", 210), ("ᄀ", 199),
    # Full-width forms.
    ("Ａ", 400), ("０", 300), ("！", 250), ("，", 260), ("。", 240),
    # Symbols and emoji around the threshold.
    ("©", 300), ("°", 250), ("€", 201), ("™", 220), ("•", 210),
    ("😀", 300), ("👍", 199), ("❤", 200), ("\uFE0F", 300), ("\u200D", 300),
    # ASCII: letters, digits, '#' and brackets are written as they are.
    ("A", 300), ("a", 300), ("#", 250), ("0", 250), ("[", 250), ("<", 250),
    (" ", 1000), ("\n", 900), ("\t", 220), ("\r", 220), ("\\", 205),
    # Case and accents.
    ("Σ", 230), ("ς", 210), ("Ω", 200), ("İ", 240), ("é", 300), ("Å", 220),
    ("ß", 250), ("ﬁ", 230), ("Ǆ", 215), ("\U0001D400", 250),
    # Controls, format characters, separators, marks, private use.
    ("\x01", 300), ("\x85", 300), ("\u2028", 250), ("\uFEFF", 250),
    ("\u00AD", 240), ("\u0301", 260), ("\u0903", 210), ("\uE000", 300),
    ("\u3000", 280), ("\u00A0", 270),
]

HAND_ENG = [
    "<unk>", "<s>", "</s>", "\u2581", "\u2581Über", "##", "\u2581the", "ing",
    "\u2581Σ", "\u2581ΟΔΟΣ", "ΑΣ", "\u2581é", "é", "\u2581Ａ", "\u2581カ",
    "ガ", "\u2581한국", "국", "\u2581ㄱ", "\u258112", "3", "\u2581中", "中",
    "\u2581[PAD]", "[UNK]", "\u2581<b>", "<0x0A>", "a\u2581b",
    "\u2581İstanbul", "\u2581ǅ", "\u2581😀", "\u2581ﬁ", "\u2581\u00AD",
    "\u2581x\u0327\u0301", "\u2581ΣΑ", "\u2581Σ.Σ", "\u2581ᾼ", "\u2581ㄱ",
    "\u2581が", "\u2581ぱ", "ぱ", "\u2581-", "-", "\u2581.", "\u2581'",
    "\u2581∑", "\u2581\u4E00\u4E01", "\u2581\u9FA6", "\u2581\U00020001",
]


def write_eng(path, pieces, newline="\n"):
    with open(path, "w", encoding="utf-8", newline="") as f:
        for i, p in enumerate(pieces):
            f.write("%s\t%d%s" % (p, -i, newline))


# ------------------------------------------------------------ the checks

def run_tool(args, **kw):
    return subprocess.run(args, capture_output=True, **kw)


def check_chars(res, vb, work, inputs):
    out = os.path.join(work, "counts")
    os.makedirs(out, exist_ok=True)
    for name, path in inputs.items():
        want = format_counts(sorted_counts(gen_char_counts([path])))
        got = {}
        for j in (1, 2, 4):
            p = run_tool([vb, "chars", "-q", "-j", str(j), path])
            got[j] = p.stdout if p.returncode == 0 else p.stderr
        if got[1] == want and got[2] == want and got[4] == want:
            res.ok("chars %s" % name, "%d characters" % want.count(b"\n"))
        else:
            res.fail("chars %s" % name,
                     "  differs from gen_char.py's counts (-j 1 %s, -j 2 %s, "
                     "-j 4 %s)" % (got[1] == want, got[2] == want,
                                   got[4] == want))
    # A directory tree of the three, and their sum.
    tree = os.path.join(work, "tree")
    for i, (name, path) in enumerate(sorted(inputs.items())):
        d = os.path.join(tree, "d%d" % i)
        os.makedirs(d, exist_ok=True)
        shutil.copy(path, os.path.join(d, name + ".txt"))
    want = format_counts(sorted_counts(gen_char_counts(inputs.values())))
    all_path = os.path.join(out, "all.tsv")
    p = run_tool([vb, "chars", "-q", "-o", all_path, tree])
    got = open(all_path, "rb").read() if p.returncode == 0 else p.stderr
    if got == want:
        res.ok("chars directory tree", "%d characters" % want.count(b"\n"))
    else:
        res.fail("chars directory tree", "  differs from the Counter")
    # -m of two halves equals the whole.
    with open(inputs["cmrc2018"], "rb") as f:
        lines = f.read().split(b"\n")
    half = len(lines) // 2
    parts = [b"\n".join(lines[:half]) + b"\n", b"\n".join(lines[half:])]
    paths = []
    for i, data in enumerate(parts):
        tp = os.path.join(out, "half%d.txt" % i)
        with open(tp, "wb") as f:
            f.write(data)
        cp = os.path.join(out, "half%d.tsv" % i)
        run_tool([vb, "chars", "-q", "-o", cp, tp], check=True)
        paths.append(cp)
    p = run_tool([vb, "chars", "-m", "-q"] + paths)
    whole = run_tool([vb, "chars", "-q", inputs["cmrc2018"]]).stdout
    if p.returncode == 0 and p.stdout == whole:
        res.ok("chars -m of two halves")
    else:
        res.fail("chars -m of two halves", "  " + p.stderr.decode())
    if shutil.which("zstd"):
        z = os.path.join(out, "pku.zst")
        subprocess.run(["zstd", "-q", "-f", "-o", z, inputs["pku"]],
                       check=True)
        p = run_tool([vb, "chars", "-q", z])
        want = format_counts(sorted_counts(gen_char_counts([inputs["pku"]])))
        if p.stdout == want:
            res.ok("chars zstd input")
        else:
            res.fail("chars zstd input", "  " + p.stderr.decode())
    else:
        res.skip("chars zstd input", "no zstd program")
    return all_path


def check_merge(res, vb, cache, name, items, eng_path, threshold):
    counts_path = eng_path + ".%s.counts" % name.replace(" ", "_")
    with open(counts_path, "wb") as f:
        f.write(format_counts(items))
    with open(eng_path, "rb") as f:
        eng = f.read()
    key = ("merge-v1", tuple(items), eng, threshold)
    want = cached(cache, key,
                  lambda: reference_merge(items, eng_path, threshold))
    p = run_tool([vb, "merge", "-q", "-c", counts_path, "-e", eng_path, "-t",
                  str(threshold)])
    if p.returncode != 0:
        res.fail("merge " + name, "  " + p.stderr.decode().strip())
        return
    if p.stdout == want:
        res.ok("merge " + name, "%d tokens, extension %d" % (
            want.count(b"\n"), extension_size(want)))
        return
    a = want.decode().split("\n")
    b = p.stdout.decode().split("\n")
    i = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
             min(len(a), len(b)))
    res.fail("merge " + name,
             "  first difference at line %d: reference %r, ours %r "
             "(%d vs %d lines)" % (i + 1, a[i] if i < len(a) else None,
                                   b[i] if i < len(b) else None, len(a),
                                   len(b)))


def check_overflow(res, vb, work, cache, items):
    eng_path = os.path.join(work, "big.vocab")
    write_eng(eng_path, ["<unk>", "<s>", "</s>"] +
              ["\u2581w%d" % i for i in range(30000)])
    counts_path = os.path.join(work, "big.counts")
    with open(counts_path, "wb") as f:
        f.write(format_counts(items))
    with open(eng_path, "rb") as f:
        eng = f.read()
    vocab = cached(cache, ("merge-v1", tuple(items), eng, 200),
                   lambda: reference_merge(items, eng_path, 200))
    n = vocab.count(b"\n") + extension_size(vocab)
    p = run_tool([vb, "merge", "-q", "-c", counts_path, "-e", eng_path])
    want = ("vocab would need %d ids with the %d ##<CJK> extension, %d more "
            "than uint16 holds" % (n, extension_size(vocab), n - 65536))
    if n > 65536 and p.returncode == 1 and want in p.stderr.decode() and \
            not p.stdout:
        res.ok("merge refuses %d ids" % n)
    else:
        res.fail("merge refuses %d ids" % n,
                 "  exit %d: %s" % (p.returncode, p.stderr.decode().strip()))


def check_all(res, vb, work, cache, inputs, eng_path):
    """`all` = chars + english + merge: the reference merge of the Chinese
    corpora's counts and spm_train's pieces of the English text."""
    zh = [inputs["cmrc2018"], inputs["pku"]]
    items = sorted_counts(gen_char_counts(zh))
    with open(eng_path, "rb") as f:
        eng = f.read()
    want = cached(cache, ("merge-v1", tuple(items), eng, 200),
                  lambda: reference_merge(items, eng_path, 200))
    out = os.path.join(work, "all.vocab.txt")
    p = run_tool([vb, "all", "-q", "-n", "8000", "-E", inputs["wikitext2"],
                  "-o", out] + zh)
    got = open(out, "rb").read() if p.returncode == 0 else None
    if got == want:
        res.ok("all (chars, english -n 8000, merge)",
               "%d tokens" % want.count(b"\n"))
    else:
        res.fail("all (chars, english -n 8000, merge)",
                 "  exit %d: %s" % (p.returncode, p.stderr.decode().strip()))


def finish(res):
    print("%s: %d passed, %d failed, %d skipped" % (
        SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab-build", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache", required=True)
    args = ap.parse_args()
    res = Results()
    vb = os.path.abspath(args.vocab_build)
    print("# references: paddlenlp %s" % oracles.versions().get("paddlenlp"))
    if not os.path.isdir(args.data):
        res.skip(SUITE, "no shared data at %s" % args.data)
        return finish(res)
    work = tempfile.mkdtemp(prefix="vocab-merge-conformance.")
    try:
        cmrc = os.path.join(work, "cmrc2018.txt")
        with open(os.path.join(args.data, "zh/cmrc2018_dev.json"),
                  encoding="utf-8") as f:
            doc = json.load(f)
        with open(cmrc, "w", encoding="utf-8") as f:
            for art in doc["data"]:
                for para in art["paragraphs"]:
                    f.write(para["context"] + "\n")
        inputs = {
            "cmrc2018": cmrc,
            "pku": os.path.join(args.data, "zh/sighan2005-pku/pku_test.utf8"),
            "wikitext2": os.path.join(args.data,
                                      "en/wikitext-2-raw/wiki.test.raw"),
        }
        check_chars(res, vb, work, inputs)

        corpus_items = sorted_counts(gen_char_counts(inputs.values()))
        hand_items = HAND_COUNTS
        engs = {}
        if shutil.which("spm_train"):
            prefix = os.path.join(work, "eng")
            subprocess.run(["spm_train", "--input=" + inputs["wikitext2"],
                            "--model_prefix=" + prefix, "--vocab_size=8000",
                            "--model_type=bpe"], check=True,
                           capture_output=True)
            engs["spm8000"] = prefix + ".vocab"
        else:
            res.skip("merge with spm_train's eng.vocab", "no spm_train")
        engs["hand"] = os.path.join(work, "hand.vocab")
        write_eng(engs["hand"], HAND_ENG)
        engs["hand-crlf"] = os.path.join(work, "hand-crlf.vocab")
        write_eng(engs["hand-crlf"], HAND_ENG, newline="\r\n")

        cases = [
            ("corpus", corpus_items, "hand", 200),
            ("hand", hand_items, "hand", 200),
            ("hand", hand_items, "hand-crlf", 200),
            ("hand", hand_items, "hand", 1),
            ("hand", hand_items, "hand", 250),
        ]
        if "spm8000" in engs:
            cases[:0] = [
                ("corpus", corpus_items, "spm8000", 200),
                ("corpus", corpus_items, "spm8000", 1),
                ("corpus", corpus_items, "spm8000", 20),
                ("hand", hand_items, "spm8000", 200),
            ]
        for cname, items, ename, t in cases:
            check_merge(res, vb, args.cache,
                        "%s counts, %s eng.vocab, -t %d" % (cname, ename, t),
                        items, engs[ename], t)
        check_overflow(res, vb, work, args.cache, corpus_items)
        if "spm8000" in engs:
            check_all(res, vb, work, args.cache, inputs, engs["spm8000"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return finish(res)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of `create-pretraining-data` (and `merge`) against PaddleNLP.

The reference is PaddleNLP's own pieces, driven the way
create_pretraining_data.py drives them (ernie-data.md 4.2-4.6): its
ErnieTokenizer (with extend_chinese_char() for whole-word marking), jieba
(Debian's python3-jieba, the dictionary our model is compiled from), the
marking rule of 4.5, and paddlenlp.data.indexed_dataset's
MMapIndexedDatasetBuilder, which writes the .bin/.idx.  Our files must be
byte-identical to the builder's; our .npy/.npz pair must load with
numpy.load and with PaddleNLP's CompatibleIndexedDataset to the same
arrays; every -j must give the same bytes.

Inputs: the cmrc2018 contexts (dev + trial), four paragraphs a document
joined by newlines, and the adversarial documents of
testdata/create-pretraining-data/adversarial.jsonl.

Prints one line per case and ends with
"cpd-conformance: N passed, N failed, N skipped"; exits 1 on a failure.
"""
import argparse
import hashlib
import json
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracles  # noqa: E402
from run import Results, plain_vocab  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
SUITE = "cpd-conformance"


# --------------------------------------------------------------- reference

def load_paddle(vocab_dir, extend):
    def load():
        import logging
        logging.disable(logging.WARNING)
        from paddlenlp.transformers import ErnieTokenizer
        tok = ErnieTokenizer.from_pretrained(vocab_dir)
        if extend:
            tok.extend_chinese_char()
        return tok
    return oracles._quiet_import(load)


def mark_whole_words(tokens, words, max_word_length=6):
    """ernie-data.md 4.5, written from the specification."""
    word_set = set(words)
    out = []
    i = 0
    while i < len(tokens):
        if not re.search("[\u4e00-\u9fa5]", tokens[i]):
            out.append(tokens[i])
            i += 1
            continue
        for length in range(max_word_length, 0, -1):
            if i + length > len(tokens):
                continue
            if "".join(tokens[i:i + length]) in word_set:
                out.append(tokens[i])
                out.extend("##" + t for t in tokens[i + 1:i + length])
                i += length
                break
        else:
            out.append(tokens[i])
            i += 1
    return out


def reference_docs(texts, vocab_dir, opts):
    """The documents as lists of sentence id lists, as
    create_pretraining_data.py's Converter.encode makes them."""
    tok = load_paddle(vocab_dir, opts.get("wwm", False))
    if opts.get("wwm") and not opts.get("cn_splited"):
        import jieba
        jieba.setLogLevel(60)
    dimer = opts.get("dimer", " ")

    def process(sentence):
        if not opts.get("wwm"):
            return tok.convert_tokens_to_ids(tok.tokenize(sentence))
        if opts.get("cn_splited"):
            words = sentence.split(dimer)
            prev = False
            for k, w in enumerate(words):
                if prev and w == "":
                    words[k] = dimer
                    prev = False
                else:
                    prev = w == ""
        else:
            words = list(jieba.cut(sentence))
        tokens = tok.tokenize("".join(words))
        return tok.convert_tokens_to_ids(mark_whole_words(tokens, words))

    docs = []
    for text in texts:
        n = opts.get("max_repeated_len", 100)
        if n is not None:
            text = re.sub(r"(.)\1{%d,}" % n, r"\1", text)
        sentences = text.split("\n") if opts.get("split") else [text]
        doc = []
        for s in sentences:
            ids = process(s.strip())
            if ids:
                doc.append(ids)
        docs.append(doc)
    return docs


def cached(cache_dir, key, fn):
    h = hashlib.sha256(repr(key).encode("utf-8", "surrogatepass")).hexdigest()
    path = os.path.join(cache_dir, "cpd-" + h + ".pickle")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    val = fn()
    os.makedirs(cache_dir, exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        pickle.dump(val, f)
    os.replace(path + ".tmp", path)
    return val


def paddle_write(docs, prefix, dtype):
    """PaddleNLP's builder, fed as create_pretraining_data.py feeds it."""
    from paddlenlp.data import indexed_dataset
    builder = indexed_dataset.make_builder(prefix + ".bin", "mmap", dtype)
    for doc in docs:
        if not doc:
            continue
        for sentence in doc:
            builder.add_item(sentence)
        builder.end_document()
    saved = sys.stdout
    sys.stdout = sys.stderr  # finalize() prints statistics
    try:
        builder.finalize(prefix + ".idx")
    finally:
        sys.stdout = saved


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


# --------------------------------------------------------------- ours

def run_ours(tool, args, inputs, expect_ok=True):
    cmd = [tool, "-q"] + args + inputs
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if expect_ok and p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (
            " ".join(cmd), p.returncode, p.stderr.decode(errors="replace")))
    return p


def first_difference(a, b):
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))


def same_bytes(res, name, ours_prefix, ref_prefix):
    bad = []
    for ext in (".bin", ".idx"):
        a = read_file(ours_prefix + ext)
        b = read_file(ref_prefix + ext)
        if a != b:
            bad.append("  %s: %d bytes, reference %d; first difference at "
                       "byte %d" % (ext, len(a), len(b),
                                    first_difference(a, b)))
    if bad:
        res.fail(name, "\n".join(bad))
        return False
    res.ok(name, "%d + %d bytes identical" % (
        os.path.getsize(ours_prefix + ".bin"),
        os.path.getsize(ours_prefix + ".idx")))
    return True


def explain_ids(res, name, ours_prefix, docs):
    """When the bytes differ, name the first differing sentence."""
    from paddlenlp.data import indexed_dataset
    ds = oracles._quiet_import(
        lambda: indexed_dataset.make_dataset(ours_prefix, "mmap"))
    ref = [s for d in docs for s in d]
    for i, s in enumerate(ref):
        if i >= len(ds) or list(ds[i]) != list(s):
            res.fail(name + " (ids)", "  sentence %d: ours %s\n  ref  %s" % (
                i, list(ds[i])[:30] if i < len(ds) else None, s[:30]))
            return
    res.ok(name + " (ids)")


# --------------------------------------------------------------- cases

def cmrc_documents(data, per_doc=4):
    paras = []
    for name in ("zh/cmrc2018_dev.json", "zh/cmrc2018_trial.json"):
        with open(os.path.join(data, name), encoding="utf-8") as f:
            for art in json.load(f)["data"]:
                for p in art["paragraphs"]:
                    paras.append(p["context"])
    return ["\n".join(paras[i:i + per_doc])
            for i in range(0, len(paras), per_doc)]


def random_documents(n=800, seed=20261126):
    """Documents, seeded, made to meet the whole-word marking's corners:
    jieba's dictionary words (repeated within a document, so that a word
    of one sentence is found again at other positions), characters that
    finalseg's emission tables lack for some state, Latin words in mixed
    case, digits, full-width forms, and the sentence terminators."""
    import jieba
    from jieba.finalseg import prob_emit
    em = prob_emit.P
    chars = set().union(*(em[s] for s in "BMES"))
    rare = sorted(c for c in chars if not all(c in em[s] for s in "BMES"))
    no_start = sorted(c for c in chars if c not in em["B"] and
                      c not in em["S"])  # Viterbi paths from M or E
    with open(os.path.join(os.path.dirname(jieba.__file__), "dict.txt"),
              encoding="utf-8") as f:
        dict_words = [ln.split(" ")[0] for ln in f]
    rnd = random.Random(seed)
    latin = ["iPhone", "ERNIE", "GPU", "hello", "x86", "2026", "3.14",
             "100%", "ＡＢＣ", "１２３", "C++", "e-mail", "Ünïcode"]
    docs = []
    for _ in range(n):
        vocab = [rnd.choice(dict_words) for _ in range(12)]
        sentences = []
        for _ in range(rnd.randint(1, 6)):
            parts = []
            for _ in range(rnd.randint(2, 14)):
                r = rnd.random()
                if r < 0.6:
                    parts.append(rnd.choice(vocab))
                elif r < 0.7:
                    parts.append(rnd.choice(rare))
                elif r < 0.75:
                    parts.append(rnd.choice(no_start))
                elif r < 0.85:
                    parts.append(rnd.choice(latin))
                else:
                    parts.append(rnd.choice("，、的了是在 "))
            sentences.append("".join(parts) + rnd.choice("。！？；\n"))
        docs.append("".join(sentences))
    return docs


def write_jsonl(texts, path, ensure_ascii=False):
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=ensure_ascii) + "\n")


def segmented(texts):
    """Pre-segmented text as words_segmentation.py writes it: jieba's words
    joined by one space (spaces in the text become words of their own)."""
    import jieba
    jieba.setLogLevel(60)
    return ["\n".join(" ".join(jieba.cut(line)) for line in t.split("\n"))
            for t in texts]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--merge")
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache", required=True)
    args = ap.parse_args()

    res = Results()
    print("# references: paddlenlp %s, numpy %s" % (
        oracles.versions().get("paddlenlp"), np.__version__))
    if not os.path.isdir(args.data):
        res.skip(SUITE, "no shared data at %s" % args.data)
        return finish(res)
    work = tempfile.mkdtemp(prefix="cpd-conformance.")
    vocab_src = {
        "ernie-3.0-base-zh": os.path.join(
            args.data, "vocab/ernie-3.0-base-zh.vocab.txt"),
        "bert-base-chinese": os.path.join(
            args.data, "vocab/bert-base-chinese.vocab.txt"),
    }
    vocab_dirs = {}
    for name, path in vocab_src.items():
        vocab_dirs[name] = os.path.join(work, name)
        plain_vocab(path, vocab_dirs[name])

    corpora = {}
    cmrc = cmrc_documents(args.data)
    corpora["cmrc2018"] = cmrc
    with open(os.path.join(TOP, "testdata/create-pretraining-data/"
                           "adversarial.jsonl"), encoding="utf-8") as f:
        corpora["adversarial"] = [json.loads(ln)["text"] for ln in f
                                  if ln.strip()]
    corpora["random"] = random_documents()
    seg_key = ("segmented", tuple(cmrc))
    corpora["cmrc2018-segmented"] = cached(args.cache, seg_key,
                                           lambda: segmented(cmrc))
    # The same words joined by other separators (--cn-split-dimer): one
    # byte, scanned 64 at a time, and two, searched as a string.
    for name, dimer in (("slash", "/"), ("bars", "||")):
        corpora["cmrc2018-segmented-" + name] = [
            t.replace(" ", dimer) for t in corpora["cmrc2018-segmented"][:300]]
    paths = {}
    for name, texts in corpora.items():
        paths[name] = os.path.join(work, name + ".jsonl")
        write_jsonl(texts, paths[name], ensure_ascii=name == "adversarial")

    # (corpus, vocab, our flags, reference options)
    cases = [
        ("cmrc2018", "ernie-3.0-base-zh", ["-S", "--chinese", "-W"],
         {"split": True, "wwm": True}),
        ("cmrc2018", "bert-base-chinese", ["-S", "--chinese", "-W"],
         {"split": True, "wwm": True}),
        ("cmrc2018", "ernie-3.0-base-zh", [], {}),
        ("cmrc2018", "ernie-3.0-base-zh", ["-S", "--chinese"],
         {"split": True}),
        ("cmrc2018-segmented", "ernie-3.0-base-zh",
         ["-S", "--chinese", "-W", "--cn-splited"],
         {"split": True, "wwm": True, "cn_splited": True}),
        ("cmrc2018-segmented-slash", "ernie-3.0-base-zh",
         ["-S", "--chinese", "-W", "--cn-splited", "--cn-split-dimer", "/"],
         {"split": True, "wwm": True, "cn_splited": True, "dimer": "/"}),
        ("cmrc2018-segmented-bars", "ernie-3.0-base-zh",
         ["-S", "--chinese", "-W", "--cn-splited", "--cn-split-dimer", "||"],
         {"split": True, "wwm": True, "cn_splited": True, "dimer": "||"}),
        ("adversarial", "ernie-3.0-base-zh", ["-S", "--chinese", "-W"],
         {"split": True, "wwm": True}),
        ("random", "ernie-3.0-base-zh", ["-S", "--chinese", "-W"],
         {"split": True, "wwm": True}),
        ("random", "bert-base-chinese", ["-S", "--chinese", "-W"],
         {"split": True, "wwm": True}),
        # Whole documents as sentences: long ones, whose words starting
        # with digits (years) outnumber a chain; and BERT's "##<CJK>"
        # tokens, whose first code point is '#'.
        ("cmrc2018", "ernie-3.0-base-zh", ["-W"], {"wwm": True}),
        ("random", "bert-base-chinese", ["-W"], {"wwm": True}),
        ("adversarial", "bert-base-chinese",
         ["-S", "--chinese", "-W", "--cn-splited"],
         {"split": True, "wwm": True, "cn_splited": True}),
        ("adversarial", "ernie-3.0-base-zh",
         ["-S", "--chinese", "--max-repeated-len", "none"],
         {"split": True, "max_repeated_len": None}),
        ("adversarial", "ernie-3.0-base-zh",
         ["-S", "--chinese", "--max-repeated-len", "3"],
         {"split": True, "max_repeated_len": 3}),
    ]
    versions = oracles.versions()
    mmap_prefixes = []
    for corpus, vname, flags, opts in cases:
        name = "%s %s %s" % (corpus, vname, " ".join(flags) or "(plain)")
        texts = corpora[corpus]
        key = ("docs", versions.get("paddlenlp"), read_file(
            os.path.join(vocab_dirs[vname], "vocab.txt")), tuple(texts),
            sorted(opts.items()))
        docs = cached(args.cache, key, lambda: reference_docs(
            texts, vocab_dirs[vname], opts))
        n = len(os.listdir(work))
        ref = os.path.join(work, "ref%d" % n)
        ours = os.path.join(work, "ours%d" % n)
        dtype = np.uint16  # both vocabs: fewer than 65535 tokens
        paddle_write(docs, ref, dtype)
        run_ours(args.tool, ["-v", vocab_src[vname], "-o", ours, "-j", "2"]
                 + flags, [paths[corpus]])
        if not same_bytes(res, name, ours, ref):
            explain_ids(res, name, ours, docs)
        mmap_prefixes.append(ours)

    # Every -j gives the same bytes.
    base = mmap_prefixes[0]
    for j in ("1", "3"):
        other = base + "-j" + j
        run_ours(args.tool, ["-v", vocab_src["ernie-3.0-base-zh"], "-o",
                             other, "-j", j, "-S", "--chinese", "-W"],
                 [paths["cmrc2018"]])
        if all(read_file(base + e) == read_file(other + e)
               for e in (".bin", ".idx")):
            res.ok("cmrc2018 -j %s = -j 2" % j)
        else:
            res.fail("cmrc2018 -j %s = -j 2" % j, "  the files differ")

    gpt2_case(res, args, work)
    npy_case(res, args, work, vocab_src, paths, base)
    if args.merge:
        merge_cases(res, args, work, mmap_prefixes)
    shutil.rmtree(work, ignore_errors=True)
    return finish(res)


def gpt2_case(res, args, work):
    """-T gpt2-bpe --append-eos against Hugging Face tokenizers: a
    ByteLevelBPETokenizer trained on WikiText-2 test (as bpe_run.py does),
    loaded back from its vocab.json and merges.txt; documents of five lines,
    split at newlines, <|endoftext|> after each document."""
    import bpe_run
    wiki = os.path.join(args.data, "en/wikitext-2-raw/wiki.test.raw")
    model = bpe_run.train([wiki], os.path.join(work, "gpt2"), 5000)
    with open(wiki, encoding="utf-8") as f:
        lines = f.read().split("\n")
    texts = ["\n".join(lines[i:i + 5]) for i in range(0, len(lines), 5)]
    path = os.path.join(work, "wiki.jsonl")
    write_jsonl(texts, path)
    from tokenizers import ByteLevelBPETokenizer
    tok = ByteLevelBPETokenizer(os.path.join(model, "vocab.json"),
                                os.path.join(model, "merges.txt"))
    eos = tok.token_to_id("<|endoftext|>")
    docs = []
    for t in texts:
        t = re.sub(r"(.)\1{100,}", r"\1", t)
        doc = [ids for ids in (e.ids for e in tok.encode_batch(
            [s.strip() for s in t.split("\n")])) if ids]
        if doc:
            doc[-1].append(eos)
        docs.append(doc)
    ref = os.path.join(work, "gpt2-ref")
    ours = os.path.join(work, "gpt2-ours")
    paddle_write(docs, ref, np.uint16)
    run_ours(args.tool, ["-T", "gpt2-bpe", "-v", model, "-e", "-S",
                         "--chinese", "-o", ours], [path])
    if not same_bytes(res, "wiki.test gpt2-bpe -e -S --chinese", ours, ref):
        explain_ids(res, "wiki.test gpt2-bpe", ours, docs)


def npy_case(res, args, work, vocab_src, paths, mmap_prefix):
    """-f npy: numpy.load and PaddleNLP's reader see the mmap case's data."""
    from paddlenlp.data import indexed_dataset
    prefix = os.path.join(work, "npy")
    run_ours(args.tool, ["-v", vocab_src["ernie-3.0-base-zh"], "-o", prefix,
                         "-f", "npy", "-S", "--chinese", "-W"],
             [paths["cmrc2018"]])
    ref = oracles._quiet_import(
        lambda: indexed_dataset.make_dataset(mmap_prefix, "mmap"))
    ids = np.load(prefix + "_ids.npy")
    idx = np.load(prefix + "_idx.npz")
    want_lens = np.asarray(ref.sizes, dtype=np.int32)
    want_docs = np.asarray(ref.doc_idx, dtype=np.int64)
    want_ids = np.frombuffer(read_file(mmap_prefix + ".bin"), dtype=np.uint16)
    problems = []
    if ids.dtype != np.uint16 or not np.array_equal(ids, want_ids):
        problems.append("ids: %s %s" % (ids.dtype, ids.shape))
    if sorted(idx.files) != ["docs", "lens"]:
        problems.append("npz members %s" % idx.files)
    elif (idx["lens"].dtype != np.int32 or idx["docs"].dtype != np.int64 or
          not np.array_equal(idx["lens"], want_lens) or
          not np.array_equal(idx["docs"], want_docs)):
        problems.append("lens/docs differ")
    if problems:
        res.fail("npy numpy.load", "  " + "; ".join(problems))
    else:
        res.ok("npy numpy.load", "%d ids, %d sentences, %d documents" % (
            len(ids), len(want_lens), len(want_docs) - 1))
    ds = oracles._quiet_import(
        lambda: indexed_dataset.make_dataset(prefix, "mmap"))
    if (type(ds).__name__ == "CompatibleIndexedDataset" and
            len(ds) == len(ref) and
            all(np.array_equal(ds[i], ref[i]) for i in range(len(ref))) and
            np.array_equal(ds.doc_idx, ref.doc_idx)):
        res.ok("npy PaddleNLP CompatibleIndexedDataset")
    else:
        res.fail("npy PaddleNLP CompatibleIndexedDataset",
                 "  %s, %d items" % (type(ds).__name__, len(ds)))


def merge_cases(res, args, work, prefixes):
    """merge = PaddleNLP's merge.py: its builder's merge_file_ over the
    prefixes in sorted order.  Datasets made alike (one vocab, the same
    options: cases 0, 4, 7 and 8) are merged with their sidecars; the first
    four cases mix two vocabularies and options, which merge refuses from
    their sidecars (ds-meta(5)), and merges as merge.py does once they have
    none, as PaddleNLP's files have none."""
    merge_same(res, args, work, sorted(prefixes[i] for i in (0, 4, 7, 8)),
               "merge mmap (%d prefixes made alike)")
    mixed = sorted(prefixes[:4])
    p = subprocess.run([args.merge, "-q", "-o", os.path.join(work, "mixed")]
                       + mixed, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode == 1 and b"were not made alike (vocab_size: " in p.stderr:
        res.ok("merge refuses ids of two vocabularies (their sidecars)")
    else:
        res.fail("merge refuses ids of two vocabularies (their sidecars)",
                 "  exit %d: %s" % (p.returncode,
                                    p.stderr.decode(errors="replace")))
    bare = []
    for i, prefix in enumerate(mixed):
        bare.append(os.path.join(work, "bare%d" % i))
        for ext in (".bin", ".idx"):
            shutil.copy(prefix + ext, bare[-1] + ext)
    merge_same(res, args, work, bare, "merge mmap (%d prefixes, no sidecar)")


def merge_same(res, args, work, parts, name):
    from paddlenlp.data import indexed_dataset
    ref = os.path.join(work, "merged-ref")
    builder = indexed_dataset.make_builder(ref + ".bin", "mmap", np.uint16)
    for p in parts:
        oracles._quiet_import(lambda: builder.merge_file_(p))
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        builder.finalize(ref + ".idx")
    finally:
        sys.stdout = saved
    ours = os.path.join(work, "merged")
    p = subprocess.run([args.merge, "-q", "-o", ours] + parts,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        res.fail("merge mmap", "  exit %d: %s" % (
            p.returncode, p.stderr.decode(errors="replace")))
        return
    same_bytes(res, name % len(parts), ours, ref)


def finish(res):
    print("%s: %d passed, %d failed, %d skipped"
          % (SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of libdata's GPT samples (ds_gpt_*) against
paddlenlp.data.causal_dataset (pip PaddleNLP 2.8.1), ernie-data.md 7.9.

Data: the cmrc2018 contexts (four paragraphs a document, -T bert with
bert-base-chinese) and WikiText-2 test (five lines a document, -T gpt2-bpe
with a 5000-token BPE from `vocab-build bpe`, <|endoftext|> after each
document), written by `create-pretraining-data` with one item a document.

Per (dataset, split, num_samples, seq_len, seed) -- one epoch, several
epochs with and without the separate last epoch, windows shorter than a
document and longer than many -- the reference is causal_dataset's own
functions: _num_tokens, _num_epochs, _build_doc_idx with
np.random.RandomState(seed), sample_idx from tool_helpers'
compiled build_sample_idx (the one GPTDataset calls) and also the Python
_build_sample_idx, and _build_shuffle_idx; and GPTDataset itself (built
with data_cache_path, no distributed environment needed) for the tokens
of samples 0..N-1 through __getitem__.  Identical arrays and tokens are
required.  Cache files: ours must np.load to the same arrays and be taken
by GPTDataset as found; GPTDataset's must be read by us (from_cache).

Prints one line per check and ends with
"samples-gpt-conformance: N passed, N failed, N skipped"; exits 1 on a
failure.
"""
import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Results  # noqa: E402

SUITE = "samples-gpt-conformance"
N_TOKENS_CHECKED = 3000  # samples whose tokens are compared per case


@contextlib.contextmanager
def quiet():
    """PaddleNLP and tool_helpers print progress on stdout (the helper
    from C++, so the file descriptor is redirected)."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def paddle_modules():
    with quiet():
        import logging
        logging.disable(logging.WARNING)
        from paddlenlp.data import causal_dataset as cd
        from paddlenlp.data.indexed_dataset import make_dataset
        from tool_helpers import helpers
    return cd, make_dataset, helpers


def write_jsonl(texts, path):
    import json
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (
            " ".join(cmd), p.returncode, p.stderr.decode(errors="replace")))
    return p.stdout.decode()


def build_datasets(args, work):
    from cpd_run import cmrc_documents
    tool = os.path.join(args.build, "create-pretraining-data")
    out = {}
    cmrc = os.path.join(work, "cmrc.jsonl")
    write_jsonl(cmrc_documents(args.data), cmrc)
    run([tool, "-q", "-T", "bert", "-v",
         os.path.join(args.data, "vocab/bert-base-chinese.vocab.txt"),
         "-o", os.path.join(work, "cmrc"), cmrc])
    out["cmrc"] = os.path.join(work, "cmrc")
    wiki = os.path.join(args.data, "en/wikitext-2-raw/wiki.test.raw")
    model = os.path.join(work, "gpt2")
    run([os.path.join(args.build, "vocab-build"), "bpe", "-q", "-s", "5000",
         "-o", model, wiki])
    with open(wiki, encoding="utf-8") as f:
        lines = f.read().split("\n")
    texts = ["\n".join(lines[i:i + 5]) for i in range(0, len(lines), 5)]
    wj = os.path.join(work, "wiki.jsonl")
    write_jsonl(texts, wj)
    run([tool, "-q", "-T", "gpt2-bpe", "-v", model, "-e", "-o",
         os.path.join(work, "wiki"), wj])
    out["wiki"] = os.path.join(work, "wiki")
    return out


def reference(cd, helpers, sizes, documents, num_samples, seq_len, seed):
    """_build_index_mappings without its files (causal_dataset.py)."""
    tpe = cd._num_tokens(documents, sizes)
    e = cd._num_epochs(tpe, seq_len, num_samples)
    rng = np.random.RandomState(seed=seed)
    if e == 1:
        sep = False
    else:
        minus_one = ((e - 1) * tpe - 1) // seq_len
        last = num_samples - minus_one
        per = (tpe - 1) // seq_len
        sep = last < int(0.80 * per)
    with quiet():
        doc_idx = cd._build_doc_idx(documents, e, rng, sep)
        sample_idx = helpers.build_sample_idx(sizes, doc_idx, seq_len, e, tpe)
        ns = minus_one if sep else sample_idx.shape[0] - 1
        shuffle_idx = cd._build_shuffle_idx(ns, sample_idx.shape[0] - 1, rng)
    return e, sep, doc_idx, sample_idx, shuffle_idx


def ours(args, prefix, first, end, ns, sl, seed, outdir, extra=(), count=0):
    os.makedirs(outdir, exist_ok=True)
    cmd = [os.path.join(args.build, "tests", "drv_gpt"), "-a", outdir]
    cmd += list(extra)
    if count:
        cmd += ["-t", os.path.join(outdir, "tokens.i32"), "-n", str(count)]
    cmd += [prefix, str(first), str(end), str(ns), str(sl), str(seed)]
    line = run(cmd).split()
    info = dict(zip(line[0::2], line[1::2]))
    arr = (np.fromfile(os.path.join(outdir, "doc_idx.i32"), np.int32),
           np.fromfile(os.path.join(outdir, "sample_idx.i32"),
                       np.int32).reshape(-1, 2),
           np.fromfile(os.path.join(outdir, "shuffle_idx.u64"), np.uint64))
    toks = None
    if count:
        toks = np.fromfile(os.path.join(outdir, "tokens.i32"),
                           np.int32).reshape(-1, sl + 1)
    return info, arr, toks


def first_diff(a, b):
    a = np.asarray(a).reshape(-1)
    b = np.asarray(b).reshape(-1)
    if a.shape != b.shape:
        return "lengths %d != %d" % (a.size, b.size)
    i = int(np.nonzero(a != b)[0][0])
    return "first difference at flat index %d: ours %s, reference %s" % (
        i, a[i], b[i])


def same(res, name, a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape == b.shape and np.array_equal(a.astype(np.int64),
                                             b.astype(np.int64)):
        res.ok(name)
        return True
    res.fail(name, "  " + first_diff(a.astype(np.int64), b.astype(np.int64)))
    return False


def gpt_dataset(cd, prefix, ds, first, end, ns, sl, seed, cache_dir,
                split="949,50,1", name="train"):
    with quiet():
        return cd.GPTDataset(name, prefix, np.arange(first, end, 1, np.int32),
                             ds, split, ns, sl, seed,
                             data_cache_path=cache_dir)


def case(res, args, cd, helpers, make_dataset, work, dname, prefix, split,
         ns_kind, sl, seed):
    with quiet():
        ds = make_dataset(prefix, "mmap", True)
    sizes = ds.sizes
    splits = cd.get_train_valid_test_split_("949,50,1", sizes.shape[0])
    k = {"train": 0, "valid": 1, "test": 2}[split]
    first, end = splits[k], splits[k + 1]
    documents = np.arange(first, end, 1, np.int32)
    if first == end:  # PaddleNLP gives no dataset; we refuse clearly
        p = subprocess.run([os.path.join(args.build, "tests", "drv_gpt"),
                            prefix, str(first), str(end), "10", str(sl),
                            str(seed)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        name = "%s %s (empty split) is refused" % (dname, split)
        if p.returncode == 1 and b"no documents" in p.stderr:
            res.ok(name)
        else:
            res.fail(name, "  rc %d: %r" % (p.returncode, p.stderr))
        return
    tpe = int(np.sum(sizes[documents]))
    per = (tpe - 1) // sl
    ns = {"one": max(1, per // 2), "full": per,
          "sep": 2 * per + max(1, per // 10),
          "nosep": 2 * per + per * 9 // 10,
          "many": 7 * per + 3}[ns_kind]
    tag = "%s %s ns=%d(%s) seq=%d seed=%d" % (dname, split, ns, ns_kind, sl,
                                              seed)
    e, sep, rdoc, rsample, rshuffle = reference(cd, helpers, sizes,
                                                documents, ns, sl, seed)
    out = os.path.join(work, "o", tag.replace(" ", "_").replace("=", ""))
    count = min(N_TOKENS_CHECKED, rsample.shape[0] - 1)
    info, (doc, sample, shuffle), toks = ours(
        args, prefix, first, end, ns, sl, seed, out, count=count)
    if int(info["epochs"]) != e or int(info["separate"]) != int(sep):
        res.fail(tag + " epochs", "  ours %s/%s, reference %d/%d" % (
            info["epochs"], info["separate"], e, sep))
    else:
        res.ok(tag + " epochs=%d separate_last=%d" % (e, sep))
    same(res, tag + " doc_idx", doc, rdoc)
    same(res, tag + " sample_idx", sample, rsample)
    if ns_kind in ("one", "sep"):  # the Python loop, where it is quick
        with quiet():
            py = cd._build_sample_idx(sizes, rdoc, sl, e, tpe)
        same(res, tag + " sample_idx = Python _build_sample_idx", sample, py)
    same(res, tag + " shuffle_idx", shuffle, rshuffle)
    # GPTDataset itself, its cache in a fresh directory.
    pcache = os.path.join(out, "paddle-cache")
    gd = gpt_dataset(cd, prefix, ds, first, end, ns, sl, seed, pcache,
                     name=split)
    ref = np.stack([gd[i]["text"] for i in range(count)]) if count else None
    if count:
        same(res, tag + " tokens of samples 0..%d" % (count - 1), toks, ref)
    # Our cache: same hash, arrays that numpy loads equal, GPTDataset
    # takes them as found; and we take GPTDataset's.
    ocache = os.path.join(out, "our-cache")
    extra = ["-c", ocache, "-p", prefix, "-N", split, "-s", "949,50,1"]
    info, _, _ = ours(args, prefix, first, end, ns, sl, seed, out, extra)
    # Our .dsc.lock (the build-once flock, never deleted) is ours alone.
    files = sorted(f for f in os.listdir(ocache) if not f.endswith(".lock"))
    pfiles = sorted(os.listdir(pcache))
    if files != pfiles:
        res.fail(tag + " cache names", "  ours %s, PaddleNLP %s" % (
            files, pfiles))
        return
    res.ok(tag + " cache names = PaddleNLP's (%s)" % info["hash"])
    ok = True
    for f in files:
        if f.endswith(".npy"):
            a, b = np.load(os.path.join(ocache, f)), np.load(
                os.path.join(pcache, f))
            if a.dtype != b.dtype or not same(res, tag + " np.load " + f,
                                               a, b):
                if a.dtype != b.dtype:
                    res.fail(tag + " np.load " + f, "  dtype %s != %s" % (
                        a.dtype, b.dtype))
                ok = False
        else:
            with open(os.path.join(ocache, f)) as x, \
                    open(os.path.join(pcache, f)) as y:
                if x.read() != y.read():
                    res.fail(tag + " " + f, "  the descriptions differ")
                    ok = False
    mt = {f: os.stat(os.path.join(ocache, f)).st_mtime_ns for f in files}
    gd2 = gpt_dataset(cd, prefix, ds, first, end, ns, sl, seed, ocache,
                      name=split)
    mt2 = {f: os.stat(os.path.join(ocache, f)).st_mtime_ns for f in files}
    if mt != mt2 or not gd2.shuffle_idx.filename.startswith(ocache):
        res.fail(tag + " GPTDataset reuses our cache", "  it rebuilt it")
    elif count and not np.array_equal(
            np.stack([gd2[i]["text"] for i in range(min(count, 200))]),
            toks[:min(count, 200)]):
        res.fail(tag + " GPTDataset reuses our cache", "  other tokens")
    else:
        res.ok(tag + " GPTDataset reuses our cache")
    extra = ["-c", pcache, "-p", prefix, "-N", split, "-s", "949,50,1"]
    info, (doc2, sample2, shuffle2), _ = ours(
        args, prefix, first, end, ns, sl, seed, os.path.join(out, "re"),
        extra)
    if info["from_cache"] != "1":
        res.fail(tag + " we read PaddleNLP's cache", "  we rebuilt it")
    elif not (np.array_equal(doc2, rdoc) and np.array_equal(sample2, rsample)
              and np.array_equal(shuffle2.astype(np.int64),
                                 rshuffle.astype(np.int64))):
        res.fail(tag + " we read PaddleNLP's cache", "  other arrays")
    else:
        res.ok(tag + " we read PaddleNLP's cache")
    del gd, gd2


def blend_case(res, args, cd, work, data, weights, nums, sl, seed,
               split="80,15,5"):
    """A weighted list of two corpora, as the trainer opens it, against
    causal_dataset.build_train_valid_test_datasets (BlendableDataset over
    GPTDatasets): the per-split sample counts and the tokens of the first
    samples of each split."""
    spec = [str(weights[0]), data["cmrc"], str(weights[1]), data["wiki"]]
    tag = "blend %s cmrc %s wiki n=%s seq=%d seed=%d" % (
        weights[0], weights[1], ",".join(map(str, nums)), sl, seed)
    ref_cache = os.path.join(work, "blend-ref")
    our_cache = os.path.join(work, "blend-ours")
    for d in (ref_cache, our_cache):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    with quiet():
        dsets = cd.build_train_valid_test_datasets(
            spec, "mmap", split, list(nums), sl, seed, True,
            data_cache_path=ref_cache)
    toks = os.path.join(work, "blend.i32")
    lines = run([os.path.join(args.build, "tests", "drv_corpus"),
                 " ".join(spec), split, str(sl), str(seed)] +
                [str(n) for n in nums] +
                [our_cache, str(N_TOKENS_CHECKED), toks]).split("\n")
    got_n = [int(ln.split()[1]) for ln in lines if ln.strip()]
    want_n = [len(d) if d is not None else 0 for d in dsets]
    if got_n != want_n:
        res.fail(tag + ": samples per split",
                 "  ours %s, PaddleNLP %s" % (got_n, want_n))
        return
    got = np.fromfile(toks, np.int32).reshape(-1, sl + 1)
    want = [np.asarray(dsets[k][i]["text"], np.int32)
            for k in range(3) for i in range(min(N_TOKENS_CHECKED,
                                                 want_n[k]))]
    bad = [i for i in range(len(want)) if not np.array_equal(got[i],
                                                             want[i])]
    if got.shape[0] != len(want) or bad:
        res.fail(tag, "  %d rows, %d differ (first %s)" %
                 (got.shape[0], len(bad), bad[:1]))
    else:
        res.ok(tag, "%s samples per split, %d samples' tokens identical" %
               (got_n, len(want)))


def corrupt_case(res, args, work, prefix):
    """A truncated cached shuffle_idx is detected and rebuilt."""
    out = os.path.join(work, "corrupt")
    c = os.path.join(out, "cache")
    extra = ["-c", c, "-p", prefix, "-N", "train", "-s", "949,50,1"]
    info, a, _ = ours(args, prefix, 0, 100, 500, 64, 7, out, extra)
    f = [x for x in os.listdir(c) if x.endswith("_shuffle_idx.npy")][0]
    with open(os.path.join(c, f), "r+b") as fh:
        fh.truncate(os.path.getsize(os.path.join(c, f)) - 4)
    info2, b, _ = ours(args, prefix, 0, 100, 500, 64, 7, out, extra)
    info3, _, _ = ours(args, prefix, 0, 100, 500, 64, 7, out, extra)
    if (info2["from_cache"] == "0" and info3["from_cache"] == "1"
            and all(np.array_equal(x, y) for x, y in zip(a, b))):
        res.ok("a truncated cached shuffle_idx is rebuilt")
    else:
        res.fail("a truncated cached shuffle_idx is rebuilt",
                 "  from_cache %s then %s" % (info2["from_cache"],
                                              info3["from_cache"]))


def bench(args, cd, make_dataset, prefix, work):
    """Samples per second on one core at seq 1024: ds_gpt_sample against
    GPTDataset.__getitem__ (Python + numpy)."""
    with quiet():
        ds = make_dataset(prefix, "mmap", True)
    n = ds.sizes.shape[0]
    out = os.path.join(work, "bench")
    os.makedirs(out, exist_ok=True)
    line = run([os.path.join(args.build, "tests", "drv_gpt"), "-B", prefix,
                "0", str(n), "20000", "1024", "1234"])
    gd = gpt_dataset(cd, prefix, ds, 0, n, 20000, 1024, 1234,
                     os.path.join(out, "c"))
    m = min(len(gd), 20000)
    t = time.perf_counter()
    for i in range(m):
        gd[i]
    py = m / (time.perf_counter() - t)
    c = float(line.split("samples_per_s ")[1].split()[0])
    print("bench seq 1024: ours %.0f samples/s, GPTDataset %.0f samples/s, "
          "%.0fx" % (c, py, c / py))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--bench", action="store_true")
    args = ap.parse_args()
    res = Results()
    try:
        cd, make_dataset, helpers = paddle_modules()
    except Exception as e:  # noqa: BLE001
        res.skip("all", "paddlenlp or tool_helpers not importable: %s" % e)
        return finish(res)
    work = tempfile.mkdtemp(prefix="samples-gpt.")
    try:
        data = build_datasets(args, work)
        cases = [
            ("cmrc", "train", "one", 1024, 1234),
            ("cmrc", "train", "full", 1024, 1),
            ("cmrc", "train", "sep", 1024, 1234),
            ("cmrc", "train", "nosep", 512, 42),
            ("cmrc", "valid", "many", 128, 7),
            ("cmrc", "test", "many", 1024, 0),
            ("wiki", "train", "one", 1024, 1234),
            ("wiki", "train", "sep", 2048, 99),
            ("wiki", "train", "nosep", 300, 4294967295),
            ("wiki", "valid", "many", 16, 5),
            ("wiki", "train", "sep", 7, 1234),
        ]
        for dname, split, kind, sl, seed in cases:
            try:
                case(res, args, cd, helpers, make_dataset, work, dname,
                     data[dname], split, kind, sl, seed)
            except Exception as e:  # noqa: BLE001
                res.fail("%s %s %s seq=%d seed=%d" % (dname, split, kind, sl,
                                                      seed), "  %r" % e)
        for weights, nums, sl, seed in [((7, 3), (400, 40, 8), 128, 1234),
                                        ((1, 1), (3000, 25, 1), 64, 7),
                                        ((0.2, 0.8), (900, 5, 3), 256, 42)]:
            try:
                blend_case(res, args, cd, work, data, weights, nums, sl,
                           seed)
            except Exception as e:  # noqa: BLE001
                res.fail("blend %s" % (weights,), "  %r" % e)
        corrupt_case(res, args, work, data["wiki"])
        if args.bench:
            bench(args, cd, make_dataset, data["cmrc"], work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return finish(res)


def finish(res):
    print("%s: %d passed, %d failed, %d skipped" % (
        SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

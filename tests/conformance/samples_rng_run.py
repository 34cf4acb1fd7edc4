#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of libdata's RNGs, split, samples mapping and blending.

References (ernie-data.md 7.1-7.4):
* numpy.random.RandomState itself (numpy 1.26 in the venv): raw MT19937
  output (randint(0, 2**32, dtype=uint32) returns the raw 32-bit draws),
  random_sample, randint, shuffle, choice, for many seeds.  RandomState(seed)
  seeds with init_genrand, as std::mt19937(seed) does; checked here against
  the C++ standard's vectors too.  numpy.random.MT19937(seed) seeds through
  SeedSequence and gives another stream (checked: it differs).
* std::mt19937_64: the standard's 10000th output and the spec's vectors.
* PaddleNLP's tool_helpers (PyPI): build_mapping and build_blending_indices
  on the spec's 10b vectors and on random inputs; must be identical.
* split_indices: a transcription of PaddleNLP's get_train_valid_test_split_.

Ends with "samples-rng-conformance: N passed, N failed, N skipped"; exits 1
on a failure.  --bench N times build_mapping on N synthetic tokens against
tool_helpers.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Results  # noqa: E402

SUITE = "samples-rng-conformance"
EPOCHS_ANY = 2147483646


def drv_rng(build, cmds):
    out = subprocess.run([os.path.join(build, "tests", "drv_rng")],
                         input="".join(c + "\n" for c in cmds),
                         capture_output=True, text=True, check=True).stdout
    return out.split("\n")[:len(cmds)]


def check_rng(res, build):
    rng = np.random.RandomState(20240601)
    seeds = [0, 1, 5489, 1234, 2**32 - 1] + [int(s) for s in
                                           rng.randint(0, 2**32, 995,
                                                       dtype=np.uint64)]
    cmds, want = [], []
    for s in seeds:
        cmds.append("mt32 %d 700" % s)
        want.append(" ".join(str(int(x)) for x in np.random.RandomState(s)
                             .randint(0, 2**32, 700, dtype=np.uint32)))
        cmds.append("random %d 20" % s)
        want.append(" ".join(repr(float(x)) for x in
                             np.random.RandomState(s).random_sample(20)))
    for name, got_w in [("mt32+random_sample (1000 seeds)", None)]:
        got = drv_rng(build, cmds)
        bad = [i for i in range(len(cmds))
               if [float(x) for x in got[i].split()] !=
               [float(x) for x in want[i].split()]]
        if bad:
            res.fail(name, "first: %s\n got  %s\n want %s" %
                     (cmds[bad[0]], got[bad[0]][:200], want[bad[0]][:200]))
        else:
            res.ok(name, "%d commands" % len(cmds))
    # std::mt19937 / numpy's MT19937 bit generator
    mt = np.random.MT19937(1234).random_raw(1)[0]
    if int(mt) != 822569775:
        res.ok("numpy.random.MT19937(seed) is another stream (SeedSequence)")
    else:
        res.fail("MT19937 seeding", "numpy.random.MT19937 matched init_genrand")
    m = np.random.MT19937()
    m._legacy_seeding(1234)
    if int(m.random_raw(1)[0]) == 822569775:
        res.ok("MT19937._legacy_seeding == init_genrand (std::mt19937)")
    else:
        res.fail("MT19937 legacy seeding", "differs")
    got = drv_rng(build, ["mt64 5489 10000", "mt64 1235 3"])
    if (got[0].split()[-1] == "9981545732273789042" and got[1].split() ==
            ["12475983374653888083", "573922149886606219",
             "5802434057304372554"]):
        res.ok("mt19937_64 vectors")
    else:
        res.fail("mt19937_64 vectors", got[1])

    # randint, shuffle, choice
    cmds, want = [], []
    for k, s in enumerate(seeds[:600]):
        r = np.random.RandomState(s + 7 if s + 7 < 2**32 else s)
        lo = int(r.randint(-1000, 1000))
        span = [1, 2, 3, 7, 10, 255, 256, 1000, 2**31, 2**32 - 1, 2**32,
                2**32 + 5, 2**40 + 3, 2**62][k % 14]
        cmds.append("randint %d %d %d 30" % (s, lo, lo + span))
        want.append(" ".join(str(int(x)) for x in np.random.RandomState(s)
                             .randint(lo, lo + span, 30, dtype=np.int64)))
        n = [0, 1, 2, 3, 10, 100, 1000][k % 7]
        cmds.append("shuffle %d %d" % (s, n))
        x = np.arange(n, dtype=np.int64)
        np.random.RandomState(s).shuffle(x)
        want.append(" ".join(str(int(v)) for v in x))
        if n >= 1:
            p = r.random_sample(n)
            p /= p.sum()
            cmds.append("choice %d 5 %d %s" % (s, n, " ".join(repr(float(v))
                                                              for v in p)))
            rs = np.random.RandomState(s)
            want.append(" ".join(str(int(rs.choice(n, p=p)))
                                 for _ in range(5)))
        # geometric: both of numpy's methods (search for p >= 1/3,
        # inversion below), and the 0.2 of SpanBERT-style n-gram masking
        gp = [0.2, 0.2, 0.05, 0.3333333333333333, 1 / 3, 0.5, 0.9, 1.0,
              1e-6][k % 9]
        cmds.append("geometric %d 40 %r" % (s, gp))
        want.append(" ".join(str(int(v)) for v in np.random.RandomState(s)
                             .geometric(gp, 40)))
    got = drv_rng(build, cmds)
    for kind in ("randint", "shuffle", "choice", "geometric"):
        idx = [i for i in range(len(cmds)) if cmds[i].startswith(kind)]
        bad = [i for i in idx if got[i].split() != want[i].split()]
        if bad:
            res.fail(kind, "first: %s\n got  %s\n want %s" %
                     (cmds[bad[0]][:200], got[bad[0]][:200],
                      want[bad[0]][:200]))
        else:
            res.ok("%s (%d cases)" % (kind, len(idx)))


def py_split(s, size):
    """PaddleNLP get_train_valid_test_split_, transcribed."""
    if s.find(",") != -1:
        splits = [float(x) for x in s.split(",")]
    elif s.find("/") != -1:
        splits = [float(x) for x in s.split("/")]
    else:
        splits = [float(s)]
    while len(splits) < 3:
        splits.append(0.0)
    splits = splits[:3]
    total = sum(splits)
    assert total > 0.0
    splits = [x / total for x in splits]
    idx = [0]
    for i, x in enumerate(splits):
        idx.append(idx[i] + int(round(x * float(size))))
    diff = idx[-1] - size
    for i in range(1, len(idx)):
        idx[i] -= diff
    return idx


def check_split(res, build):
    rng = np.random.RandomState(7)
    cases = [("949,50,1", 1000), ("949,50,1", 7), ("98,2,0", 333),
             ("1/1", 5), ("1", 4), ("0.5,0.5", 3), ("1,1,1", 1),
             ("3,3,3,3", 10)]
    for _ in range(2000):
        k = rng.randint(1, 5)
        w = [int(rng.randint(0, 1000)) if rng.rand() < .7 else
             round(float(rng.rand() * 10), 2) for _ in range(k)]
        if sum(w[:3]) == 0:
            w[0] = 1
        sep = "," if rng.rand() < .8 else "/"
        cases.append((sep.join(str(x) for x in w), int(rng.randint(0, 10**6))))
    got = drv_rng(build, ["split %d %s" % (d, s) for s, d in cases])
    bad = []
    for (s, d), g in zip(cases, got):
        want = py_split(s, d)
        if min(want) < 0:
            continue  # DS_ERANGE, out still printed
        if g.split() != [str(x) for x in want]:
            bad.append((s, d, g, want))
    if bad:
        res.fail("split_indices", "first: %r" % (bad[0],))
    else:
        res.ok("split_indices (%d cases)" % len(cases))


V_SIZES = [30, 40, 50, 20, 20, 600, 10, 5, 70, 80, 90, 100, 15, 15, 15]
V_DOCS = [0, 3, 5, 7, 8, 12, 15]


def run_mapping(build, tmp, docs, sizes, mns, msl, ssp, seed, min_sent,
                epochs=EPOCHS_ANY):
    dpath, spath = os.path.join(tmp, "d.i64"), os.path.join(tmp, "s.i32")
    opath = os.path.join(tmp, "rows")
    np.asarray(docs, np.int64).tofile(dpath)
    np.asarray(sizes, np.int32).tofile(spath)
    out = subprocess.run([os.path.join(build, "tests", "drv_mapping"),
                          "build", dpath, spath, str(mns), str(msl),
                          repr(float(ssp)), str(seed), str(min_sent),
                          str(epochs), opath],
                         capture_output=True, text=True).stdout.split()
    if not out or out[0] != "rows":
        return None, " ".join(out)
    dt = np.uint64 if out[3] == "uint64" else np.uint32
    return np.fromfile(opath, dt).reshape(-1, 3), float(out[5])


def check_mapping(res, build, tmp, helpers):
    rng = np.random.RandomState(11)
    cases = [(V_DOCS, V_SIZES, 20, 100, 0.5, 1234, 2),
             (V_DOCS, V_SIZES, 10, 100, 0.0, 1234, 1)]
    for _ in range(300):
        n_docs = int(rng.randint(1, 60))
        nsent = rng.randint(0, 12, n_docs)
        docs = np.concatenate([[0], np.cumsum(nsent)]).astype(np.int64)
        lo = int(rng.randint(0, 5))
        sizes = rng.randint(1, 700 if rng.rand() < .3 else 120,
                            int(docs[-1]) + lo + 3).astype(np.int32)
        docs += lo  # a view that starts inside the file
        min_sent = int(rng.randint(1, 3))
        if not any(docs[i + 1] - docs[i] >= min_sent and
                   (docs[i + 1] - docs[i] <= 1 or
                    sizes[docs[i]:docs[i + 1]].max() <= 512)
                   for i in range(n_docs)):
            continue
        ssp = [0.0, 0.1, 0.5, 1.0, 0.33, float(rng.rand())][rng.randint(6)]
        cases.append((docs, sizes, int(rng.randint(0, 500)),
                      int(rng.randint(2, 600)), ssp,
                      int(rng.randint(-5, 2**31 - 1)), min_sent))
    bad, n = [], 0
    for docs, sizes, mns, msl, ssp, seed, min_sent in cases:
        want = helpers.build_mapping(np.asarray(docs, np.int64),
                                     np.asarray(sizes, np.int32), EPOCHS_ANY,
                                     mns, msl, ssp, seed, False, min_sent)
        got, info = run_mapping(build, tmp, docs, sizes, mns, msl, ssp, seed,
                                min_sent)
        n += 1
        if got is None or got.dtype != want.dtype or \
                not np.array_equal(got, want):
            bad.append((mns, msl, ssp, seed, min_sent, info))
    if bad:
        res.fail("build_mapping vs tool_helpers", "%d of %d differ; first %r"
                 % (len(bad), n, bad[0]))
    else:
        res.ok("build_mapping vs tool_helpers (%d cases, 10b vectors "
               "included)" % n)

    # The cache: numpy reads ours; we read numpy's (built 0), and rebuild
    # a truncated one.
    prefix = os.path.join(tmp, "corpus")
    args = ["20", "100", "0.5", "1234", "2", str(EPOCHS_ANY)]
    dpath, spath = os.path.join(tmp, "vd"), os.path.join(tmp, "vs")
    np.asarray(V_DOCS, np.int64).tofile(dpath)
    np.asarray(V_SIZES, np.int32).tofile(spath)
    name = prefix + "_train_indexmap_20mns_100msl_0.50ssp_1234s.npy"
    want = helpers.build_mapping(np.asarray(V_DOCS, np.int64),
                                 np.asarray(V_SIZES, np.int32), EPOCHS_ANY,
                                 20, 100, 0.5, 1234, False, 2)
    drv = [os.path.join(build, "tests", "drv_mapping"), "get", prefix,
           "train", dpath, spath] + args

    def get():
        return subprocess.run(drv, capture_output=True, text=True).stdout

    out1 = get()
    ours = open(name, "rb").read()
    np.save(name + ".ref.npy", want)
    theirs = open(name + ".ref.npy", "rb").read()
    if out1.split() == ["rows", "20", "built", "1"] and ours == theirs:
        res.ok("cache file byte-identical to np.save of tool_helpers' rows")
    else:
        res.fail("cache file", out1)
    os.replace(name + ".ref.npy", name)
    out2 = get()
    with open(name, "r+b") as f:
        f.truncate(len(theirs) - 5)
    out3 = get()
    ok = (out2.split() == ["rows", "20", "built", "0"] and
          out3.split() == ["rows", "20", "built", "1"] and
          open(name, "rb").read() == theirs)
    if ok:
        res.ok("cache: np.save'd file reused, truncated file rebuilt")
    else:
        res.fail("cache reuse/rebuild", out2 + out3)


def check_blend(res, build, helpers):
    rng = np.random.RandomState(5)
    cases = [([0.7, 0.3], 10)]
    for _ in range(200):
        n = int(rng.randint(1, 12))
        w = rng.random_sample(n)
        w /= np.sum(w)
        cases.append((list(w), int(rng.randint(0, 3000))))
    bad = []
    for w, size in cases:
        di = np.zeros(size, np.uint8)
        dsi = np.zeros(size, np.int64)
        helpers.build_blending_indices(di, dsi, np.asarray(w, np.float64),
                                       len(w), size, False)
        out = subprocess.run([os.path.join(build, "tests", "drv_mapping"),
                              "blend", str(size)] + [repr(float(x)) for x in w],
                             capture_output=True, text=True).stdout
        lines = out.split("\n")
        if lines[0].split() != [str(int(x)) for x in di] or \
                lines[1].split() != [str(int(x)) for x in dsi]:
            bad.append((w, size))
    if bad:
        res.fail("build_blending_indices vs tool_helpers",
                 "%d differ; first %r" % (len(bad), bad[0]))
    else:
        res.ok("build_blending_indices vs tool_helpers (%d cases)"
               % len(cases))


def bench(build, tmp, helpers, n_tokens):
    rng = np.random.RandomState(0)
    sizes = rng.randint(1, 60, n_tokens // 30 + 1).astype(np.int32)
    cut = np.cumsum(rng.randint(1, 20, len(sizes)))
    cut = cut[cut < len(sizes)]
    docs = np.concatenate([[0], cut, [len(sizes)]]).astype(np.int64)
    print("bench: %d tokens, %d sentences, %d documents" %
          (int(sizes.sum()), len(sizes), len(docs) - 1))
    for mns, ssp in [(int(sizes.sum()) // 509, 0.1),
                     (4 * int(sizes.sum()) // 509, 0.1)]:
        best = 1e9
        for _ in range(3):
            t0 = time.perf_counter()
            want = helpers.build_mapping(docs, sizes, EPOCHS_ANY, mns, 509,
                                         ssp, 1234, False, 2)
            best = min(best, time.perf_counter() - t0)
        ours = 1e9
        for _ in range(3):
            got, t = run_mapping(build, tmp, docs, sizes, mns, 509, ssp, 1234,
                                 2)
            ours = min(ours, t)
        print("bench: max_num_samples %d -> %d rows: tool_helpers %.3f s, "
              "ours %.3f s, %.1fx, identical %s" %
              (mns, len(want), best, ours, best / ours,
               np.array_equal(got, want)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--data")
    ap.add_argument("--cache")
    ap.add_argument("--bench", type=int, default=0,
                    help="time build_mapping on N synthetic tokens")
    a = ap.parse_args()
    res = Results()
    try:
        from tool_helpers import helpers
    except ImportError:
        helpers = None
    with tempfile.TemporaryDirectory() as tmp:
        if a.bench:
            bench(a.build, tmp, helpers, a.bench)
            return 0
        check_rng(res, a.build)
        check_split(res, a.build)
        if helpers is None:
            for n in ("build_mapping", "build_blending_indices", "cache"):
                res.skip(n, "tool_helpers is not installed (pip install "
                         "-r tests/conformance/requirements.txt)")
        else:
            check_mapping(res, a.build, tmp, helpers)
            check_blend(res, a.build, helpers)
    print("%s: %d passed, %d failed, %d skipped" %
          (SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

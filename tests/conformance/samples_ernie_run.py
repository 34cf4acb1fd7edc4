#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of libdata's ERNIE samples (ds_ernie_*) against a Python
transcription of ernie-data.md 7.6 (build_training_sample with
create_masked_lm_predictions, to_chinese_char=True) driven by numpy's own
RandomState, ernie-data.md 10b's vectors (produced by PaddleNLP's code)
anchoring both.

The transcription below is written from the spec, not copied from
PaddleNLP (whose code is not in its pip package).  Random cases: random
vocabularies (CJK characters with their added "##" forms, "##" CJK pieces
whose bare character is missing, English words and "##" pieces), random
sentences, sentence counts, target lengths (truncation included), seeds,
max_ngrams, favor_longer_ngram, geometric n-gram sizes (Megatron's
geometric_dist), binary_head and masked_lm_prob, through
tests/drivers/drv_ernie (in-memory sentences), plus samples read from a
dataset file written by libdata and from the real ernie-3.0 vocab.

Prints one line per check and ends with
"samples-ernie-conformance: N passed, N failed, N skipped"; exits 1 on a
failure.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Results  # noqa: E402

SUITE = "samples-ernie-conformance"
CJK_CONT = re.compile("##[\u4E00-\u9FA5]")


# ---------------------------------------------------- reference (spec 7.6)

class Vocab:
    def __init__(self, tokens, n_base):
        self.tokens = tokens
        self.n_base = n_base
        self.to_id = {}
        for i, t in enumerate(tokens):  # a later id wins, as dict updates
            self.to_id[t] = i


def reference(sample, tgt, lmax, voc, o, idx):
    """Spec 7.6 step by step; returns (ids, types, positions, labels,
    is_random) or raises on what PaddleNLP asserts."""
    rng = np.random.RandomState((o["seed"] + idx) % 2**32)
    cls, sep, msk, pad = o["cls"], o["sep"], o["mask"], o["pad"]
    # (a) segments
    if o["binary_head"]:
        n = len(sample)
        assert n >= 2
        cut = 1 if n == 2 else rng.randint(1, n)
        seg_a = [t for s in sample[:cut] for t in s]
        seg_b = [t for s in sample[cut:] for t in s]
        swapped = rng.random() < 0.5
        if swapped:
            seg_a, seg_b = seg_b, seg_a
    else:
        seg_a = [t for s in sample for t in s]
        seg_b = []
        swapped = False
    assert len(seg_a) > 0
    # (b) truncation
    while len(seg_a) + len(seg_b) > tgt:
        victim = seg_a if len(seg_a) > len(seg_b) else seg_b
        if rng.random() < 0.5:
            victim.pop(0)
        else:
            victim.pop()
    # (c) tokens and types
    toks = [cls] + seg_a + [sep]
    types = [0] * len(toks)
    if seg_b:
        toks += seg_b + [sep]
        types += [1] * (len(seg_b) + 1)
    assert len(toks) <= lmax
    # (d) masking: words
    words = []
    cont = []
    for i, t in enumerate(toks):
        if t in (cls, sep):
            cont.append(False)
            continue
        s = voc.tokens[t]
        is_cont = s.startswith("##")
        cont.append(is_cont)
        if is_cont and words:
            words[-1].append(i)
        else:
            words.append([i])
    seen = list(toks)
    for i, t in enumerate(toks):
        if cont[i] and CJK_CONT.search(voc.tokens[t]):
            bare = voc.tokens[t][2:]
            seen[i] = voc.to_id[bare] if bare in voc.to_id else toks[-1]
    labels_src = list(seen)
    if o["mlm"] == 0:
        positions = []
    else:
        budget = min(o["mlm"] * tgt,
                     max(1, round(len(toks) * o["mlm"])))
        k_max = o["max_ngrams"]
        weights = 1.0 / np.arange(1, k_max + 1)
        weights /= weights.sum(keepdims=True)
        if o["favor_longer"]:
            weights = weights[::-1]
        sizes = np.arange(1, k_max + 1)
        grams = [[words[j:j + k] for k in range(1, k_max + 1)]
                 for j in range(len(words))]
        rng.shuffle(grams)
        taken = {}
        for g in grams:
            if len(taken) >= budget:
                break
            if o.get("geometric"):
                k = min(int(rng.geometric(0.2)), k_max)
            else:
                k = int(rng.choice(sizes, p=weights / weights.sum()))
            span = [i for w in g[k - 1] for i in w]
            while len(taken) + len(span) > budget and k > 1:
                k -= 1
                span = [i for w in g[k - 1] for i in w]
            if len(taken) + len(span) > budget:
                continue
            if any(i in taken for i in span):
                continue
            for i in span:
                taken[i] = labels_src[i]
                if rng.random() < 0.8:
                    seen[i] = msk
                elif rng.random() < 0.5:
                    pass
                else:
                    seen[i] = rng.randint(0, voc.n_base)
        positions = sorted(taken)
    labels = [labels_src[i] for i in positions]
    # (e) padding
    fill = lmax - len(toks)
    return (seen + [pad] * fill, types + [pad] * fill, positions, labels,
            int(swapped))


# ----------------------------------------------------------------- driver

def run_driver(drv, vocab_path, n_base, lmax, o, lines, prefix=None):
    args = [drv, vocab_path, str(n_base), str(lmax), repr(o["mlm"]),
            str(o["max_ngrams"]),
            str(int(o["favor_longer"]) | 2 * int(o.get("geometric", False))),
            str(int(o["binary_head"])), str(o["cls"]), str(o["sep"]),
            str(o["mask"]), str(o["pad"]), str(o["seed"])]
    if prefix:
        args.append(prefix)
    p = subprocess.run(args, input="".join(lines), capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError("drv_ernie failed: %s" % p.stderr)
    out = []
    for ln in p.stdout.splitlines():
        if ln.startswith("err"):
            out.append(("err", ln))
            continue
        head, ids, types, pos, lab = ln.split("|")
        _, is_random, _, _ = head.split()
        out.append(([int(x) for x in ids.split()],
                     [int(x) for x in types.split()],
                     [int(x) for x in pos.split()],
                     [int(x) for x in lab.split()], int(is_random)))
    return out


def write_vocab(tokens, path):
    with open(path, "w", encoding="utf-8") as f:
        for t in tokens:
            f.write(t + "\n")


def compare(res, name, got, want, ctx):
    if got == want:
        return True
    res.fail(name, "  %s\n  ours: %r\n  want: %r" % (ctx, got, want))
    return False


# ------------------------------------------------------------------ cases

TOY = ("[PAD] [CLS] [SEP] [MASK] [UNK] 我 爱 北 京 天 安 门 今 日 晴 he ##llo "
       "world 。").split()
TOY_ADDED = ["##" + c for c in "我爱北京天安门今日晴"]
TOY_SENTS = [[5, 6, 7, 22, 9, 24, 25, 18], [12, 27, 9, 28, 18],
             [15, 16, 17, 18]]
VECTORS = {  # spec 10b: idx -> (ids, n_type0, positions, labels, is_random)
    0: ([1, 3, 3, 17, 18, 2, 5, 6, 7, 8, 9, 10, 11, 18, 12, 13, 9, 14, 3, 2],
        6, [1, 2, 18], [15, 16, 18], 1),
    1: ([1, 5, 6, 7, 8, 9, 10, 11, 18, 12, 13, 9, 14, 18, 2, 3, 3, 3, 18, 2],
        15, [15, 16, 17], [15, 16, 17], 0),
    7: ([1, 15, 16, 3, 3, 2, 5, 6, 7, 8, 9, 10, 11, 3, 12, 13, 9, 14, 18, 2],
        6, [3, 4, 13], [17, 18, 18], 1),
}
TOY_OPTS = dict(seed=1234, mlm=0.15, max_ngrams=3, favor_longer=False,
                binary_head=True, cls=1, sep=2, mask=3, pad=0)


def sample_line(idx, tgt, sents):
    flat = [t for s in sents for t in s]
    return "%d %d %d %s %s\n" % (idx, tgt, len(sents),
                                 " ".join(map(str, map(len, sents))),
                                 " ".join(map(str, flat)))


def check_vectors(res, drv, tmp):
    path = os.path.join(tmp, "toy.vocab")
    voc = Vocab(TOY + TOY_ADDED, len(TOY))
    write_vocab(voc.tokens, path)
    lines = [sample_line(i, 20, TOY_SENTS) for i in VECTORS]
    got = run_driver(drv, path, 19, 24, TOY_OPTS, lines)
    for (idx, v), g in zip(VECTORS.items(), got):
        ids, n0, pos, lab, rnd = v
        want = (ids + [0] * 4, [0] * n0 + [1] * (20 - n0) + [0] * 4, pos,
                lab, rnd)
        ref = reference([list(s) for s in TOY_SENTS], 20, 24, voc, TOY_OPTS,
                        idx)
        ok = compare(res, "vector idx %d: reference" % idx, ref, want,
                     "spec 10b")
        ok &= compare(res, "vector idx %d: drv_ernie" % idx, g, want,
                      "spec 10b")
        if ok:
            res.ok("spec 10b build_training_sample idx %d" % idx)


def random_vocab(r):
    """Specials, CJK chars (some with ## forms in the base vocab), English
    words and ## pieces; added ## forms of most CJK chars, and a few whose
    bare character is missing."""
    cjk = sorted(set(chr(0x4E00 + int(x)) for x in r.randint(0, 0x51A6, 40)))
    base = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"]
    base += cjk[:30]
    base += ["##" + c for c in cjk[25:28]]            # ## CJK in the base
    base += ["w%d" % i for i in range(15)]
    base += ["##p%d" % i for i in range(10)]
    base += ["##", "###", "##a##" + cjk[0], "x##" + cjk[1]]
    added = ["##" + c for c in cjk[:24]] + ["##" + c for c in cjk[30:]]
    return base, added


def random_cases(res, drv, tmp, n_groups, per_group):
    r = np.random.RandomState(20240607)
    total = bad = 0
    for grp in range(n_groups):
        base, added = random_vocab(r)
        voc = Vocab(base + added, len(base))
        path = os.path.join(tmp, "v%d.vocab" % grp)
        write_vocab(voc.tokens, path)
        o = dict(seed=int(r.randint(0, 2**31)) * int(r.randint(1, 3)),
                 mlm=[0.15, 0.15, 0.3, 0.05, 0.5, 0.0, 1.0][grp % 7],
                 max_ngrams=int([3, 3, 1, 2, 4, 9][grp % 6]),
                 favor_longer=bool(grp % 3 == 1),
                 geometric=bool(grp % 5 == 2),
                 binary_head=bool(grp % 4 != 3), cls=1, sep=2, mask=3, pad=0)
        lmax = int(r.choice([16, 32, 64, 128, 512]))
        lines, samples = [], []
        for _ in range(per_group):
            idx = int(r.randint(0, 10**6))
            ns = int(r.randint(2 if o["binary_head"] else 1, 7))
            sents = []
            for _ in range(ns):
                ln = int(r.randint(1, max(2, lmax // 2)))
                if r.random_sample() < 0.1:  # all "##" pieces
                    pool = [i for i, t in enumerate(voc.tokens)
                            if t.startswith("##")]
                else:
                    pool = list(range(4, len(voc.tokens)))
                sents.append([int(pool[r.randint(0, len(pool))])
                              for _ in range(ln)])
            tgt = int(r.randint(2, lmax - 2))
            lines.append(sample_line(idx, tgt, sents))
            samples.append((idx, tgt, sents))
        got = run_driver(drv, path, len(base), lmax, o, lines)
        for (idx, tgt, sents), g in zip(samples, got):
            total += 1
            try:
                want = reference([list(s) for s in sents], tgt, lmax, voc, o,
                                 idx)
            except AssertionError:
                want = "err"
            if want == "err" or g[0] == "err":
                if not (want == "err" and g[0] == "err"):
                    bad += 1
                    compare(res, "random group %d idx %d" % (grp, idx), g,
                            want, "opts %r lmax %d" % (o, lmax))
                continue
            if g != want:
                bad += 1
                if bad <= 5:
                    compare(res, "random group %d idx %d" % (grp, idx), g,
                            want, "opts %r lmax %d tgt %d" % (o, lmax, tgt))
    if bad == 0:
        res.ok("random samples", "%d samples in %d groups identical"
               % (total, n_groups))
    elif bad > 5:
        res.fail("random samples", "%d of %d differ" % (bad, total))


def dataset_cases(res, drv, tmp, data):
    """Samples read through ds_open (drv_ernie's PREFIX mode) from a
    dataset file numpy writes in PaddleNLP's era-A format, with the real
    ernie-3.0 vocab and its extend_chinese_char() tokens (spec 4.4)."""
    vpath = os.path.join(data, "vocab", "ernie-3.0-base-zh.vocab.txt")
    if not os.path.exists(vpath):
        res.skip("dataset samples", "%s missing" % vpath)
        return
    with open(vpath, encoding="utf-8") as f:
        base = [ln.rstrip("\n").split("\t")[0] for ln in f]
    added = []
    have = set(base)
    for t in base:  # extend_chinese_char: ##<char> of CJK chars, in order
        if len(t) == 1 and "\u4e00" <= t <= "\u9fa5" and "##" + t not in have:
            added.append("##" + t)
    voc = Vocab(base + added, len(base))
    path = os.path.join(tmp, "ernie.vocab")
    write_vocab(voc.tokens, path)
    r = np.random.RandomState(7)
    n_docs, sents, docs = 40, [], [0]
    for _ in range(n_docs):
        for _ in range(int(r.randint(1, 6))):
            sents.append([int(x) for x in
                          r.randint(5, len(voc.tokens), r.randint(1, 200))])
        docs.append(len(sents))
    prefix = os.path.join(tmp, "ds")
    flat = np.array([t for s in sents for t in s], dtype=np.int32)
    np.save(prefix + "_ids.npy", flat)
    np.savez(prefix + "_idx.npz",
             lens=np.array([len(s) for s in sents], dtype=np.int32),
             docs=np.array(docs, dtype=np.int64))
    o = dict(seed=1234, mlm=0.15, max_ngrams=3, favor_longer=False,
             binary_head=True, cls=base.index("[CLS]"),
             sep=base.index("[SEP]"), mask=base.index("[MASK]"),
             pad=base.index("[PAD]"))
    lines, rows = [], []
    for idx in range(600):
        a = int(r.randint(0, len(sents) - 2))
        b = int(r.randint(a + 2, min(len(sents), a + 6) + 1))
        tgt = int(r.randint(2, 510))
        lines.append("%d %d %d %d\n" % (idx, tgt, a, b))
        rows.append((idx, tgt, a, b))
    got = run_driver(drv, path, len(base), 512, o, lines, prefix)
    bad = 0
    for (idx, tgt, a, b), g in zip(rows, got):
        want = reference([list(s) for s in sents[a:b]], tgt, 512, voc, o,
                         idx)
        if g != want:
            bad += 1
            if bad <= 3:
                compare(res, "dataset sample %d" % idx, g, want,
                        "sentences [%d, %d) tgt %d" % (a, b, tgt))
    if bad == 0:
        res.ok("dataset samples", "600 samples from an era-A file, "
               "ernie-3.0 vocab + %d added ## tokens" % len(added))
    elif bad > 3:
        res.fail("dataset samples", "%d of 600 differ" % bad)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--cache", default="build/oracle-cache")
    ap.add_argument("--groups", type=int, default=60)
    ap.add_argument("--per-group", type=int, default=60)
    a = ap.parse_args()
    res = Results()
    drv = os.path.join(a.build, "tests", "drv_ernie")
    with tempfile.TemporaryDirectory() as tmp:
        check_vectors(res, drv, tmp)
        random_cases(res, drv, tmp, a.groups, a.per_group)
        dataset_cases(res, drv, tmp, a.data)
    print("%s: %d passed, %d failed, %d skipped" % (
        SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

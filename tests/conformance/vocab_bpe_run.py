#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of `vocab-build bpe` against Hugging Face tokenizers.

Run in build/venv (tokenizers pinned in requirements.txt).  The oracle is
ByteLevelBPETokenizer().train(files, vocab_size, min_frequency,
special_tokens) followed by save_model(dir), and ours must write the same
vocab.json and merges.txt, byte for byte:

  wiki5k     WikiText-2 test, vocab_size 5000, min_frequency 2
  wiki30k    the same with 30000: the corpus runs out of pairs seen twice
             first, so min_frequency stops it
  wiki30k-m1 30000 with min_frequency 1: vocab_size stops it
  mixed20k   WikiText-2 test plus the cmrc2018 contexts (Chinese bytes)
  cmrc30k    the cmrc2018 contexts alone, no special token
  specials   odd special tokens: repeated, one that is an alphabet symbol
             ("a"), one that training makes ("Ġthe")
  runs       runs of one or two letters, where merges overlap
  fuzz       small random corpora over tiny alphabets, random settings

HF's training has no seed, but its hash maps are randomly seeded, so its
output could depend on their order where two queue entries tie; the
models wiki5k and runs are trained twice to show that they do not (if a
run ever differed, ours is required to equal one of HF's outputs).  Then:
-j 1 and -j 2 give identical files, and `tokenize -F gpt2-bpe -v OURDIR`
gives the ids of HF's tokenizer loaded from HF's own files.  HF's files
are cached under --cache, keyed by the tokenizers version, the settings
and the input bytes.

Prints one line per case and ends with
"vocab-bpe-conformance: N passed, N failed, N skipped"; exits 1 on any
failure.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

SUITE = "vocab-bpe-conformance"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Results  # noqa: E402
FILES = ("vocab.json", "merges.txt")


# --------------------------------------------------------------- models

def read_model(d):
    out = []
    for name in FILES:
        with open(os.path.join(d, name), "rb") as f:
            out.append(f.read())
    return tuple(out)


def hf_train(files, out_dir, vocab_size, min_frequency, special):
    from tokenizers import ByteLevelBPETokenizer
    os.makedirs(out_dir, exist_ok=True)
    tok = ByteLevelBPETokenizer()
    tok.train(files, vocab_size=vocab_size, min_frequency=min_frequency,
              special_tokens=list(special), show_progress=False)
    tok.save_model(out_dir)
    return out_dir


def hf_model(cache, files, vocab_size, min_frequency, special, runs=1):
    """HF's outputs (a set of (vocab.json, merges.txt)) and its directory,
    from the cache when there."""
    import tokenizers
    h = hashlib.sha256()
    h.update(json.dumps([tokenizers.__version__, vocab_size, min_frequency,
                         list(special), runs]).encode())
    for path in files:
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    base = os.path.join(cache, "vocab-bpe", h.hexdigest()[:24])
    dirs = [os.path.join(base, "run%d" % i) for i in range(runs)]
    if not all(os.path.exists(os.path.join(d, "merges.txt")) for d in dirs):
        for d in dirs:
            tmp = d + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            hf_train(files, tmp, vocab_size, min_frequency, special)
            shutil.rmtree(d, ignore_errors=True)
            os.rename(tmp, d)
    return set(read_model(d) for d in dirs), dirs[0]


def ours_train(vb, files, out_dir, vocab_size, min_frequency, special,
               threads=2):
    cmd = [vb, "bpe", "-q", "-j", str(threads), "-s", str(vocab_size),
           "-m", str(min_frequency), "-o", out_dir]
    for s in special:
        cmd += ["-S", s]
    if not special:
        cmd += ["-S", ""]
    p = subprocess.run(cmd + list(files), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (
            " ".join(cmd), p.returncode,
            p.stderr.decode(errors="replace")[:500]))
    return out_dir


def first_diff(a, b):
    n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
             min(len(a), len(b)))
    return "byte %d: ours %r, HF %r" % (n, a[n:n + 60], b[n:n + 60])


def compare_model(res, name, ours, hf_outs):
    if ours in hf_outs:
        n_merges = ours[1].count(b"\n") - 1
        res.ok(name, "vocab.json and merges.txt identical (%d merges)"
               % n_merges)
        return True
    ref = sorted(hf_outs)[0]
    for i, fname in enumerate(FILES):
        if ours[i] != ref[i]:
            res.fail(name, "  %s differs at %s" % (fname,
                                                   first_diff(ours[i], ref[i])))
            return False
    res.fail(name, "  differs")
    return False


# --------------------------------------------------------------- inputs

def cmrc_contexts(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return [p["context"] for art in doc["data"] for p in art["paragraphs"]]


def write_text(path, lines):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("\n".join(lines) + "\n")
    return path


def runs_corpus(path):
    r = random.Random(5)
    lines = []
    for n in range(1, 300):
        lines += ["a" * n] * r.randint(1, 5)
        lines += [" " + "ab" * n] * r.randint(1, 3)
        lines += ["=" * (n % 40 + 1) + " x" + "-" * (n % 7)] * r.randint(1, 2)
    r.shuffle(lines)
    return write_text(path, lines)


def fuzz_corpus(path, seed):
    r = random.Random(seed)
    alpha = r.choice(["ab", "abc", "ab ", "aab b", "xyz\n", "a", "aa b",
                      "a\r\n", "中文 ", "é'sx 1"])
    lines = ["".join(r.choice(alpha) for _ in range(r.randint(1, 60)))
             for _ in range(r.randint(1, 40))]
    write_text(path, lines)
    return r.randint(257, 1500), r.randint(0, 3)


# --------------------------------------------------------------- tokenize

def check_tokenize(res, tokenize, work, name, ours_dir, hf_dir, texts):
    from tokenizers import ByteLevelBPETokenizer
    hf = ByteLevelBPETokenizer(os.path.join(hf_dir, "vocab.json"),
                               os.path.join(hf_dir, "merges.txt"))
    ref = [e.ids for e in hf.encode_batch(texts)]
    path = os.path.join(work, name + ".jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    p = subprocess.run([tokenize, "-q", "-F", "gpt2-bpe", "-v", ours_dir,
                        "-k", "text", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        res.fail(name, "  tokenize failed: %s"
                 % p.stderr.decode(errors="replace")[:300])
        return
    ours = [[int(x) for x in ln.split()]
            for ln in p.stdout.decode().split("\n")[:-1]]
    bad = [i for i in range(len(ref)) if i >= len(ours) or ours[i] != ref[i]]
    if len(ours) == len(ref) and not bad:
        res.ok(name, "%d lines, %d tokens" % (len(ref),
                                              sum(len(x) for x in ref)))
    else:
        i = bad[0] if bad else len(ref)
        res.fail(name, "  %d lines differ, first %d: %r" % (
            len(bad), i + 1, texts[i][:80] if i < len(texts) else ""))


# --------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab-build", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache", default=None,
                    help="directory for HF's trained files")
    ap.add_argument("--fuzz", type=int, default=60,
                    help="random corpora to compare (default 60)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory")
    args = ap.parse_args()

    res = Results()
    import tokenizers
    print("# reference: tokenizers %s" % tokenizers.__version__)
    wiki = os.path.join(args.data, "en/wikitext-2-raw/wiki.test.raw")
    cmrc = os.path.join(args.data, "zh/cmrc2018_dev.json")
    if not (os.path.exists(wiki) and os.path.exists(cmrc)):
        res.skip(SUITE, "no shared data at %s" % args.data)
        return finish(res)
    vb = args.vocab_build
    tokenize = os.path.join(os.path.dirname(os.path.abspath(vb)), "tokenize")

    work = tempfile.mkdtemp(prefix="vocab-bpe-conformance.")
    cache = args.cache or os.path.join(work, "cache")
    try:
        contexts = cmrc_contexts(cmrc)
        ctx = write_text(os.path.join(work, "cmrc_contexts.txt"), contexts)
        runs = runs_corpus(os.path.join(work, "runs.txt"))
        eot = ("<|endoftext|>",)
        cases = [
            ("wiki5k", [wiki], 5000, 2, eot, 2),
            ("wiki30k", [wiki], 30000, 2, eot, 1),
            ("wiki30k-m1", [wiki], 30000, 1, eot, 1),
            ("mixed20k", [wiki, ctx], 20000, 2, eot, 1),
            ("cmrc30k", [ctx], 30000, 2, (), 1),
            ("specials", [wiki], 8000, 3,
             ("<s>", "<pad>", "</s>", "<s>", "a", "Ġthe"), 1),
            ("runs", [runs], 3000, 1, eot, 2),
        ]
        dirs = {}
        for name, files, vs, mf, special, n_hf in cases:
            hf_outs, hf_dir = hf_model(cache, files, vs, mf, special, n_hf)
            if n_hf > 1:
                if len(hf_outs) == 1:
                    res.ok("HF deterministic " + name,
                           "trained %d times, byte-identical" % n_hf)
                else:
                    # Not a failure of ours: HF's order is then random,
                    # and ours must be one of the outputs it gave.
                    print("note HF gave %d different outputs for %s"
                          % (len(hf_outs), name))
            ours = ours_train(vb, files, os.path.join(work, "ours-" + name),
                              vs, mf, special)
            compare_model(res, name, read_model(ours), hf_outs)
            dirs[name] = (ours, hf_dir)

        # -j 1 and -j 2 (and 3) give the same files.
        one = ours_train(vb, [wiki, ctx], os.path.join(work, "j1"), 20000, 2,
                         eot, threads=1)
        three = ours_train(vb, [wiki, ctx], os.path.join(work, "j3"), 20000,
                           2, eot, threads=3)
        two = read_model(dirs["mixed20k"][0])
        if read_model(one) == two == read_model(three):
            res.ok("threads mixed20k", "-j 1, -j 2 and -j 3 identical")
        else:
            res.fail("threads mixed20k", "  -j 1, -j 2, -j 3 differ")

        # Random small corpora.
        n_bad = 0
        for seed in range(args.fuzz):
            path = os.path.join(work, "fuzz%d.txt" % seed)
            vs, mf = fuzz_corpus(path, seed)
            hf_outs = {read_model(hf_train([path], path + ".hf", vs, mf,
                                           eot))}
            ours = read_model(ours_train(vb, [path], path + ".ours", vs, mf,
                                         eot, threads=1))
            if ours not in hf_outs:
                n_bad += 1
                if n_bad <= 3:
                    print("  fuzz seed %d (vocab %d, min %d) differs"
                          % (seed, vs, mf))
        if n_bad == 0:
            res.ok("fuzz", "%d random corpora identical" % args.fuzz)
        else:
            res.fail("fuzz", "  %d of %d random corpora differ"
                     % (n_bad, args.fuzz))

        # tokenize -F gpt2-bpe with our files = HF with its files.
        if not os.path.exists(tokenize):
            res.skip("tokenize", "no %s" % tokenize)
        else:
            with open(wiki, encoding="utf-8") as f:
                wiki_lines = f.read().split("\n")[:1500]
            for name in ("wiki5k", "mixed20k"):
                ours, hf_dir = dirs[name]
                check_tokenize(res, tokenize, work, "tokenize %s wiki" % name,
                               ours, hf_dir, wiki_lines)
                check_tokenize(res, tokenize, work, "tokenize %s cmrc" % name,
                               ours, hf_dir, contexts[:300])
    finally:
        if args.keep:
            print("# work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return finish(res)


def finish(res):
    print("%s: %d passed, %d failed, %d skipped"
          % (SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

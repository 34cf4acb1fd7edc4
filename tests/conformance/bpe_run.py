#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of `tokenize -F gpt2-bpe` against Hugging Face tokenizers.

Run in build/venv (tokenizers pinned in requirements.txt).  Models are
trained here with HF's ByteLevelBPETokenizer and saved with save_model()
(vocab.json + merges.txt); the oracle is ByteLevelBPETokenizer(vocab,
merges), loaded back from those files, exactly the tokenizer whose ids
`tokenize -F gpt2-bpe -v DIR` promises.  The models:

  wiki5k   trained on WikiText-2 test, vocab_size 5000, min_frequency 2,
           special token <|endoftext|> (the brief's model)
  mixed20k trained on WikiText-2 test plus the cmrc2018 contexts,
           vocab_size 20000, so Chinese text really merges
  sweep    made by hand so that the pre-tokenizer's split of "aX 1X !X  X"
           shows in the ids for every code point X: it has the merges
           "a"+b, "1"+b and "!"+b for every alphabet symbol b, and "Ġ Ġ".
           This compares PCRE2's \\p{L}, \\p{N} and white space with
           Oniguruma's over Unicode (see sweep_codepoints()).

HF's BPE training is deterministic (no seed): the wiki5k model is trained
twice and the files must be byte-identical.  Every line of WikiText-2
test, every cmrc2018 context (as JSONL, newlines kept) and an adversarial
table are encoded by both, and the ids must be identical; decoding our ids
with `tokenize -d` must give the input bytes back.

Prints one line per case and ends with
"bpe-conformance: N passed, N failed, N skipped"; exits 1 on any failure.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
SUITE = "bpe-conformance"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Results  # noqa: E402


# --------------------------------------------------------------- inputs

def read_lines(path):
    """Records of a line-oriented file: split on b"\\n" like `tokenize`."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [ln.decode("utf-8") for ln in lines]


def cmrc_contexts(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return [p["context"] for art in doc["data"] for p in art["paragraphs"]]


def adversarial():
    """Texts where a byte-level BPE port can go wrong."""
    t = [
        # Contractions: ASCII apostrophe, lower case only.
        "it's", "It'S", "IT'S", "don't stop", "we're they've I'm you'll he'd",
        "'s 't 're 've 'm 'll 'd", "''s", "rock 'n' roll", "o'clock",
        "it\u2019s curly", "'", "''", "' s", "'ss", "'lll", "'Re",
        # White space: runs, leading, trailing, tabs, CR, Unicode spaces.
        "a  b   c    d", "   leading", "trailing   ", " ", "  ", "\t",
        "a\tb\t\tc", "\t\t x", "x \t y", "a\r\nb", "\r\n", "line\r",
        "\r", "\x0b\x0c", "a\x0bb", "\u00a0nbsp\u00a0 \u00a0",
        "\u3000全角空格\u3000", "\u2028\u2029", "\x85nel\x85 x",
        " \u2003em\u2003 ", "x  \u3000y", "   \t  \t",
        # Digits.
        "2024", "3.14159", "1,000,000", "  42", "x1y2", "\u0663\u0664\u0665",
        "\u2460\u2461\u2462", "\u216b", "\u00bd \u00be", "１２３ fullwidth",
        "007 and 0.5e-10", "1st 2nd 3rd",
        # Emoji and symbols.
        "😀😃 😄", "👨\u200d👩\u200d👧\u200d👦 family", "🇫🇷 flag",
        "\u2764\ufe0f", "a😀b", "€100 £5 ¥3", "©®™", "∑∫√∞", "→←↑↓",
        # Combining marks.
        "e\u0301", "café vs cafe\u0301", "\u0301alone", " \u0301x",
        "Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032d\u0308\u0307",
        "\u0915\u094d\u0937", "\u0e01\u0e34\u0e19",
        # Control characters (no NUL).
        "\x01\x02\x1b[31mred\x1b[0m", "\x7f", "\x1c\x1d\x1e\x1f",
        "a\x1cb", "\u200b\u200c\u200d", "\ufeffBOM", "\u00ad soft hyphen",
        # Lone punctuation.
        "!", "?", ".", "...", "\u2014", "\u00ab\u00bb", "\u300c\u300d", "@@",
        "#", "$", "%", "&&", "(", ")", "\"quoted\"", " - ", " -- ",
        "@-@", " @,@ ", "=", " = = Heading = = ",
        # Long words and runs.
        "a" * 5000, "pneumonoultramicroscopicsilicovolcanoconiosis" * 20,
        "ab" * 3000, "1234567890" * 500, "!" * 3000, " " * 3000,
        "x" + " " * 1000 + "y", "\u4e2d" * 2000, "\t" * 500 + "z",
        "😀" * 1000, "é" * 2000,
        # The special token as text.
        "<|endoftext|>", "text<|endoftext|>more", " <|endoftext|> ",
        "<|endoftext|><|endoftext|>",
        # Mixed scripts and planes.
        "Hello мир 世界 عالم שלום नमस्ते", "日本語とEnglishの混在",
        "한국어 텍스트", "ภาษาไทย", "Ελληνικά", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𠀀𠀁",
        "\ue000\uf8ff", "\U000e0001\U000e0041", "\ufffe\uffff",
        "\ufffd", "\U0010ffff",
        # Empty.
        "",
    ]
    return t


def sweep_codepoints():
    """Every code point of planes 0-3 and 14 but the surrogates and newline;
    of the unassigned planes 4-13 and the private-use planes 15-16, every
    257th (an oracle call per code point costs HF about a minute)."""
    return [cp for cp in range(0x110000)
            if not (0xD800 <= cp <= 0xDFFF) and cp != 0x0A and
            (cp < 0x40000 or 0xE0000 <= cp < 0xF0000 or cp % 257 == 0)]


def sweep_texts(per_line=64):
    """Each code point X of the sweep in the context "aX 1X !X  X", per_line
    of them to a record (a space apart)."""
    cps = sweep_codepoints()
    return [" ".join("a%s 1%s !%s  %s" % ((chr(cp),) * 4)
                     for cp in cps[i:i + per_line])
            for i in range(0, len(cps), per_line)]


# --------------------------------------------------------------- models

def train(files, out_dir, vocab_size):
    from tokenizers import ByteLevelBPETokenizer
    os.makedirs(out_dir, exist_ok=True)
    tok = ByteLevelBPETokenizer()
    tok.train(files, vocab_size=vocab_size, min_frequency=2,
              special_tokens=["<|endoftext|>"], show_progress=False)
    tok.save_model(out_dir)
    return out_dir


def sweep_model(out_dir):
    """256 alphabet symbols, then "Ġ Ġ" and "x b" for x in a, 1, ! and
    every symbol b."""
    from tokenizers.pre_tokenizers import ByteLevel
    os.makedirs(out_dir, exist_ok=True)
    alphabet = sorted(ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    merges = [("Ġ", "Ġ")]
    for x in "a1!":
        merges += [(x, b) for b in alphabet]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    with open(os.path.join(out_dir, "vocab.json"), "w",
              encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out_dir, "merges.txt"), "w",
              encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        f.write("".join("%s %s\n" % m for m in merges))
    return out_dir


def oracle(model_dir):
    from tokenizers import ByteLevelBPETokenizer
    tok = ByteLevelBPETokenizer(os.path.join(model_dir, "vocab.json"),
                                os.path.join(model_dir, "merges.txt"))
    return lambda texts: [e.ids for e in tok.encode_batch(texts)]


# --------------------------------------------------------------- running

def run_tool(cmd, stdin_path):
    with open(stdin_path, "rb") as f:
        p = subprocess.run(cmd, stdin=f, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (
            " ".join(cmd), p.returncode,
            p.stderr.decode(errors="replace")[:500]))
    return p.stdout


def write_jsonl(path, texts):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")


def compare(res, name, ours, ref, texts, max_show=3):
    if len(ours) != len(ref):
        res.fail(name, "  %d output lines, reference has %d"
                 % (len(ours), len(ref)))
        return False
    bad = [i for i in range(len(ref)) if ours[i] != ref[i]]
    if not bad:
        res.ok(name, "%d records, %d tokens"
               % (len(ref), sum(len(r) for r in ref)))
        return True
    msg = ["  %d of %d records differ" % (len(bad), len(ref))]
    for i in bad[:max_show]:
        msg.append("  record %d: %r" % (i + 1, texts[i][:200]))
        msg.append("    ours: %s" % ours[i][:40])
        msg.append("    ref:  %s" % ref[i][:40])
    res.fail(name, "\n".join(msg))
    return False


def check_set(res, args, work, mname, mdir, sname, texts, ref_fn):
    """Encode texts with ours (JSONL, so any text survives) and HF, then
    decode ours back."""
    path = os.path.join(work, "%s.%s.jsonl" % (mname, sname))
    write_jsonl(path, texts)
    base = [args.tokenize, "-q", "-j", "2", "-F", "gpt2-bpe", "-v", mdir]
    out = run_tool(base + ["-k", "text"], path)
    ours = [[int(x) for x in ln.split()]
            for ln in out.decode().split("\n")[:-1]]
    ref = ref_fn(texts)
    name = "%s %s" % (sname, mname)
    if not compare(res, name, ours, ref, texts):
        return
    ids_path = os.path.join(work, "%s.%s.ids" % (mname, sname))
    with open(ids_path, "wb") as f:
        f.write(out)
    back = run_tool(base + ["-d"], ids_path)
    want = b"".join(t.encode("utf-8") + b"\n" for t in texts)
    if back == want:
        res.ok(name + " decode", "round trip of %d bytes" % len(want))
    else:
        n = next((i for i in range(min(len(back), len(want)))
                  if back[i] != want[i]), min(len(back), len(want)))
        res.fail(name + " decode", "  differs at byte %d: ours %r, want %r"
                 % (n, back[n:n + 40], want[n:n + 40]))


def same_files(a, b):
    for name in ("vocab.json", "merges.txt"):
        with open(os.path.join(a, name), "rb") as f, \
                open(os.path.join(b, name), "rb") as g:
            if f.read() != g.read():
                return name
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenize", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory (models, inputs)")
    args = ap.parse_args()

    res = Results()
    import tokenizers
    print("# reference: tokenizers %s" % tokenizers.__version__)
    wiki = os.path.join(args.data, "en/wikitext-2-raw/wiki.test.raw")
    cmrc = os.path.join(args.data, "zh/cmrc2018_dev.json")
    if not (os.path.exists(wiki) and os.path.exists(cmrc)):
        res.skip(SUITE, "no shared data at %s" % args.data)
        return finish(res)

    work = tempfile.mkdtemp(prefix="bpe-conformance.")
    try:
        contexts = cmrc_contexts(cmrc)
        ctx_txt = os.path.join(work, "cmrc_contexts.txt")
        with open(ctx_txt, "w", encoding="utf-8") as f:
            f.write("\n".join(contexts) + "\n")
        models = {
            "wiki5k": train([wiki], os.path.join(work, "wiki5k"), 5000),
            "mixed20k": train([wiki, ctx_txt], os.path.join(work, "mixed20k"),
                              20000),
        }
        again = train([wiki], os.path.join(work, "wiki5k-again"), 5000)
        diff = same_files(models["wiki5k"], again)
        if diff is None:
            res.ok("training deterministic", "wiki5k trained twice, "
                   "vocab.json and merges.txt byte-identical")
        else:
            res.fail("training deterministic",
                     "  %s differs between two runs" % diff)

        sets = [("wiki.test", read_lines(wiki)),
                ("cmrc2018_dev", contexts),
                ("adversarial", adversarial())]
        for mname, mdir in models.items():
            fn = oracle(mdir)
            for sname, texts in sets:
                check_set(res, args, work, mname, mdir, sname, texts, fn)
        if not args.no_sweep:
            mdir = sweep_model(os.path.join(work, "sweep"))
            texts = sweep_texts()
            check_set(res, args, work, "sweep", mdir, "codepoints", texts,
                      oracle(mdir))
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

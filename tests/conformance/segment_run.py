#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Conformance of `segment` against jieba 0.42.1 (Debian's python3-jieba).

Run with Debian's /usr/bin/python3, which sees python3-jieba.  Each case
produces the expected output with the real jieba and the sentence rules of
PaddleNLP's words_segmentation.py (restated below with the same regexes),
runs our tool on the same input, and compares the bytes.  Because jieba's
words never contain a space except the one-space word, " ".join(words) is
an exact, unambiguous record of the word list.

Ends with "segment-conformance: N passed, N failed, N skipped".
"""
import argparse
import atexit
import json
import logging
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import jieba

jieba.setLogLevel(logging.ERROR)
HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))

# PaddleNLP model_zoo/ernie-1.0/preprocess/words_segmentation.py
SPECIAL_CHARS = ['\n', '。', '?', '？', ' ', ';', '；', '！', '!']
SPLIT_CHARS = ['。', '?', '？', ';', '；', '!', '！']


def paddle_doc(text, cut):
    for char in SPECIAL_CHARS:
        text = re.sub('[' + char + ']+[ ]*', char, text)
    for char in SPLIT_CHARS:
        text = text.replace(char, char + "\n")
    return lines_doc(text, cut)


def lines_doc(text, cut):
    """--sentence-rule none (and the end of text_to_text): every non-empty
    line is a sentence, the document ends with a blank line."""
    final = ""
    for line in text.split("\n"):
        if len(line) == 0:
            continue
        final += " ".join(cut(line)) + "\n"
    return final + "\n"


def trans_to_json(path, key="text", spliter="", min_len=10):
    """PaddleNLP's trans_to_json.py, one input file, no shuffle."""
    out = []
    with open(path, "r", encoding="utf-8") as f:
        doc = ""
        for line in f:
            if line.strip() == spliter:
                if len(doc) > min_len:
                    out.append(json.dumps({key: doc}, ensure_ascii=False) +
                               "\n")
                doc = ""
            else:
                doc += line
        if len(doc) > min_len:
            out.append(json.dumps({key: doc}, ensure_ascii=False) + "\n")
    return "".join(out).encode("utf-8")


def words_doc(text, cut):
    """--words-only: the words of the whole document, whitespace dropped."""
    return " ".join(w for w in cut(text) if not w.isspace()) + "\n"


def word_spans(texts, cut):
    """drv_jieba's output: a line of "start-end" byte spans a text, one a
    word of cut(text), whitespace words included."""
    out = []
    for t in texts:
        spans, at = [], 0
        for w in cut(t):
            n = len(w.encode())
            spans.append("%d-%d" % (at, at + n))
            at += n
        out.append(" ".join(spans) + "\n")
    return "".join(out).encode()


class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, name, ours, ref):
        if ours == ref:
            self.passed += 1
            print("ok   %s  %d bytes" % (name, len(ref)))
            return
        self.failed += 1
        a = ours.decode("utf-8", "replace").split("\n")
        b = ref.decode("utf-8", "replace").split("\n")
        for i in range(min(len(a), len(b))):
            if a[i] != b[i]:
                print("FAIL %s: first difference at output line %d\n"
                      "  ours: %r\n  ref:  %r" % (name, i + 1, a[i][:300],
                                                  b[i][:300]))
                return
        print("FAIL %s: %d output lines, reference has %d"
              % (name, len(a), len(b)))


def drv_spans(drv, args, texts):
    """The word spans of tests/drivers/drv_jieba run with args on texts,
    or its exit status if it failed."""
    feed = b"".join(b"%d\n" % len(t.encode()) + t.encode() for t in texts)
    p = subprocess.run([drv] + args, input=feed, stdout=subprocess.PIPE)
    return p.stdout if p.returncode == 0 else b"exit %d" % p.returncode


def run(tool, args, path, piped=False):
    """tool's output on path; piped: read from a pipe, of a size the tool
    cannot know, so segment copies the model's edge table to huge pages
    where the kernel offers them (a plain file under 8 MB reads it from
    the mapping): the suite covers both."""
    threads = [] if tool.endswith("json-pack") else ["-j", "2"]
    with open(path, "rb") as fh:
        p = subprocess.run([tool, "-q"] + threads + args +
                           ([] if piped else [path]),
                           stdin=fh if piped else subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        return ("exit %d: %s" % (p.returncode,
                                 p.stderr.decode(errors="replace"))).encode()
    return p.stdout


def rare_hmm_docs(n=3000, seed=20261126):
    """Short documents, seeded: common words, then characters that
    finalseg's emission tables lack for some state (a Viterbi path can
    then start with M or E), so that such blocks also come after a word
    of their run, and punctuation."""
    from jieba.finalseg import prob_emit
    em = prob_emit.P
    chars = set().union(*(em[s] for s in "BMES"))
    rare = sorted(c for c in chars if not all(c in em[s] for s in "BMES"))
    no_start = sorted(c for c in chars if c not in em["B"] and
                      c not in em["S"])
    words = ["中国", "我们", "发展", "工作", "可以", "他说", "的", "是", "在"]
    rnd = random.Random(seed)
    docs = []
    for _ in range(n):
        parts = []
        for _ in range(rnd.randint(1, 6)):
            parts.append(rnd.choice(words))
            parts += [rnd.choice(no_start if rnd.random() < 0.4 else rare)
                      for _ in range(rnd.randint(1, 4))]
            parts.append(rnd.choice("，。！ A1."))
        docs.append("".join(parts))
    return docs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--segment", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--json-pack")
    ap.add_argument("--drv-jieba", help="tests/drivers/drv_jieba")
    ap.add_argument("--model", help="the jieba model, for --drv-jieba")
    args = ap.parse_args()
    res = Results()
    print("# reference: jieba %s from %s" % (jieba.__version__,
                                             os.path.dirname(jieba.__file__)))
    if not os.path.isdir(args.data):
        res.skipped += 1
        print("skip segment-conformance: no shared data at %s" % args.data)
        return finish(res)
    work = tempfile.mkdtemp(prefix="segment-conformance.")
    atexit.register(shutil.rmtree, work, ignore_errors=True)

    docs = []
    for f in ("zh/cmrc2018_dev.json", "zh/cmrc2018_trial.json"):
        with open(os.path.join(args.data, f), encoding="utf-8") as fh:
            d = json.load(fh)
        docs += [p["context"] for a in d["data"] for p in a["paragraphs"]]
    with open(os.path.join(TOP, "testdata/segment/adversarial.jsonl"),
              encoding="utf-8") as fh:
        adversarial = [json.loads(ln)["text"] for ln in fh if ln.strip()]
    pku = os.path.join(args.data, "zh/sighan2005-pku/pku_test.utf8")
    wiki = os.path.join(args.data, "en/wikitext-2-raw/wiki.test.raw")

    cut_hmm = lambda s: jieba.cut(s, HMM=True)  # noqa: E731
    cut_nohmm = lambda s: jieba.cut(s, HMM=False)  # noqa: E731

    # 1. Words of every line (sentence rule none), HMM on and off.
    for name, path in (("pku_test", pku), ("wiki.test", wiki)):
        with open(path, "rb") as fh:
            lines = fh.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for hmm, cut, flag in ((True, cut_hmm, []),
                               (False, cut_nohmm, ["-H"])):
            ref = "".join(lines_doc(ln.decode("utf-8").rstrip("\r"), cut)
                          for ln in lines).encode()
            res.check("%s words %s" % (name, "hmm" if hmm else "no-hmm"),
                      run(args.segment, ["-r", "none"] + flag, path), ref)

    # 2. The full PaddleNLP format on JSONL documents (cmrc2018 contexts,
    # the adversarial table and the seeded rare-character corpus), HMM on
    # and off.
    for name, texts in (("cmrc2018", docs), ("adversarial", adversarial),
                        ("rare-hmm", rare_hmm_docs())):
        path = os.path.join(work, name + ".jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for t in texts:
                fh.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
        for hmm, cut, flag in ((True, cut_hmm, []),
                               (False, cut_nohmm, ["-H"])):
            ref = "".join(paddle_doc(t, cut) for t in texts).encode()
            res.check("%s paddle-format %s" % (name,
                                               "hmm" if hmm else "no-hmm"),
                      run(args.segment, ["-f", "jsonl"] + flag, path), ref)
        ref = "".join(words_doc(t, cut_hmm) for t in texts).encode()
        res.check("%s words-only" % name,
                  run(args.segment, ["-f", "jsonl", "-w"], path, piped=True),
                  ref)

    # 3. WuDao's JSON array, as words_segmentation.py reads it.
    path = os.path.join(work, "wudao.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump([{"id": i, "title": "t%d" % i, "content": t,
                    "dataType": "百科"} for i, t in enumerate(docs[:300])],
                  fh, ensure_ascii=False, indent=1)
    ref = "".join(paddle_doc(t, cut_hmm) for t in docs[:300]).encode()
    res.check("wudao paddle-format", run(args.segment, ["-f", "wudao"], path),
              ref)

    # 4. Blank-line separated documents of plain text.
    path = os.path.join(work, "blank.txt")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n\n".join(docs[:200]) + "\n")
    ref = "".join(paddle_doc(t, cut_hmm) for t in docs[:200]).encode()
    res.check("blank-line docs paddle-format",
              run(args.segment, ["-d", "blank"], path), ref)

    # 5. The library itself: every word of jieba.cut(), whitespace words
    # ("\r\n" among them) included, which the tool drops as PaddleNLP
    # does; whole documents, newlines inside.  Before the user dictionary:
    # its words of frequency 0 stay in finalseg's global Force_Split_Words.
    if args.drv_jieba:
        texts = docs[:300] + adversarial
        # The edge table read from the mapping, and from a copy.
        for hmm, how in ((True, []), (False, []), (True, ["-c"])):
            res.check("tok_jieba_cut spans %s%s" % (
                          "hmm" if hmm else "no-hmm",
                          ", copied table" if how else ""),
                      drv_spans(args.drv_jieba,
                                how + [args.model, str(int(hmm))], texts),
                      word_spans(texts, lambda t: jieba.cut(t, HMM=hmm)))

    # 6. A user dictionary, loaded as jieba.load_userdict does (in a fresh
    # jieba instance, so the main one stays untouched).
    udict = os.path.join(TOP, "testdata/segment/userdict.txt")
    tk = jieba.Tokenizer()
    tk.load_userdict(udict)
    texts = docs[:400] + adversarial
    path = os.path.join(work, "user.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        for t in texts:
            fh.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    for hmm, flag in ((True, []), (False, ["-H"])):
        ref = "".join(paddle_doc(t, lambda s: tk.cut(s, HMM=hmm))
                      for t in texts).encode()
        res.check("user dictionary %s" % ("hmm" if hmm else "no-hmm"),
                  run(args.segment, ["-f", "jsonl", "-U", udict] + flag,
                      path, piped=True), ref)
    # The same words through the library with the model's edge table read
    # from the mapping: the user dictionary then copies the table.
    if args.drv_jieba:
        res.check("tok_jieba_cut spans, user dictionary",
                  drv_spans(args.drv_jieba, [args.model, "1", udict], texts),
                  word_spans(texts, lambda t: tk.cut(t, HMM=True)))

    # 6b. A user dictionary large enough to grow the edge table past its
    # size in the model (more than 26,000 new edges; every node id then
    # changes): the PKU training words and the pairs of adjacent words of
    # the PKU gold text, 116,698 lines, with a frequency on every fifth
    # (0, a forced split, on every eleventh) and a tag on every seventh.
    pku_dir = os.path.join(args.data, "zh/sighan2005-pku")
    with open(os.path.join(pku_dir, "pku_training_words.utf8"),
              encoding="utf-8") as fh:
        words = [w.strip() for w in fh if w.strip()]
    seen = set(words)
    with open(os.path.join(pku_dir, "pku_test_gold.utf8"),
              encoding="utf-8") as fh:
        for ln in fh:
            g = ln.split()
            for a, b in zip(g, g[1:]):
                if a + b not in seen:
                    seen.add(a + b)
                    words.append(a + b)
    big = os.path.join(work, "bigdict.txt")
    with open(big, "w", encoding="utf-8") as fh:
        for i, w in enumerate(words):
            line = w
            if i % 11 == 0:
                line += " 0"
            elif i % 5 == 0:
                line += " %d" % (i % 997 + 1)
            if i % 7 == 0:
                line += " nz"
            fh.write(line + "\n")
    tk2 = jieba.Tokenizer()
    tk2.load_userdict(big)
    with open(pku, encoding="utf-8") as fh:
        texts2 = docs[:200] + [ln.rstrip("\n") for ln in fh][:400]
    path = os.path.join(work, "bigdict.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        for t in texts2:
            fh.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    ref = "".join(paddle_doc(t, lambda s: tk2.cut(s, HMM=True))
                  for t in texts2).encode()
    res.check("user dictionary that grows the table",
              run(args.segment, ["-f", "jsonl", "-U", big], path, piped=True),
              ref)
    if args.drv_jieba:
        res.check("tok_jieba_cut spans, user dictionary that grows the table",
                  drv_spans(args.drv_jieba, [args.model, "1", big], texts2),
                  word_spans(texts2, lambda t: tk2.cut(t, HMM=True)))

    # 7. json-pack: trans_to_json.py on segment's own output, and on text
    # with every kind of line end, blank-looking lines and escapes.
    if args.json_pack:
        seg = os.path.join(work, "cmrc.seg")
        with open(seg, "wb") as fh:
            fh.write(run(args.segment, ["-f", "jsonl"],
                         os.path.join(work, "cmrc2018.jsonl")))
        res.check("json-pack of segment output",
                  run(args.json_pack, [], seg), trans_to_json(seg))
        odd = os.path.join(work, "odd.txt")
        with open(odd, "wb") as fh:
            fh.write("a short one\n\nquotes \" and \\ and \t tab\r\n"
                     "crlf line\r\nlone\rcr\n\u3000\nafter an ideographic"
                     " space line\n  \t \nctl \x01\x1f\x7f \u2028 ok\n"
                     "<doc>\n是一个比较长的中文文档，超过十个字。\n<doc>\n"
                     "12345678901\nno final newline".encode("utf-8"))
        for extra, kw in (([], {}), (["-n", "0"], {"min_len": 0}),
                          (["-n", "30"], {"min_len": 30}),
                          (["-D", "<doc>"], {"spliter": "<doc>"}),
                          (["-k", "content"], {"key": "content"})):
            res.check("json-pack %s" % (" ".join(extra) or "defaults"),
                      run(args.json_pack, extra, odd),
                      trans_to_json(odd, **kw))
    return finish(res)


def finish(res):
    print("segment-conformance: %d passed, %d failed, %d skipped"
          % (res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

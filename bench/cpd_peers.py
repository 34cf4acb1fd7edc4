#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The peers of create-pretraining-data, for bench/create_pretraining_data.sh.

usage: cpd_peers.py paddle|hf VOCAB_DIR INPUT.jsonl PREFIX WORKERS
                    [--wwm [--splited]]

Does the job of PaddleNLP's create_pretraining_data.py (-S --chinese, and
with --wwm jieba whole-word marks; with --splited too, the words come
from the input, split at spaces, as its --cn_splited does) the way that
script does it: a multiprocessing.Pool of WORKERS processes running
imap(encode, lines, 256) and paddlenlp.data.indexed_dataset's mmap builder
in the main process.  Each document takes the script's steps with the
script's operations (see _encode), the default --max_repeated_len of the
current script included, as ours applies it by default.
  paddle  PaddleNLP's ErnieTokenizer (the script's own tokenizer)
  hf      Hugging Face tokenizers' BertWordPieceTokenizer (Rust), one
          thread per process (RAYON_NUM_THREADS=1)
Prints "seconds S" (wall time after start-up: tokenizers loaded, pool
started) on stdout.
"""
import os
import sys

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "conformance"))

import json  # noqa: E402
import multiprocessing  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

_tok = None
_opts = None


def _init(kind, vocab_dir, wwm, splited):
    global _tok, _opts
    _opts = (kind, wwm, splited)
    if kind == "paddle":
        from cpd_run import load_paddle
        _tok = load_paddle(vocab_dir, wwm)
    else:
        from tokenizers import BertWordPieceTokenizer
        _tok = BertWordPieceTokenizer(os.path.join(vocab_dir, "vocab.txt"))
    if wwm and not splited:
        import jieba
        jieba.setLogLevel(60)
        jieba.initialize()


# The script's per-document steps, in its order and with its operations
# (llm/tools/preprocess/create_pretraining_data.py, Converter.encode and
# process): runs of more than 100 equal characters collapsed (its default
# --max_repeated_len, which ours applies too), the text split at newlines,
# each sentence stripped, cut into words (the identity without
# --cn_whole_word_segment: a string, its characters), the words joined
# again and tokenized, the tokens marked, the ids looked up, and the
# document's size in bytes computed for its progress line.  Until
# 2026-11-26 this driver left out the collapsing, the joining and the size,
# and marked with re.search and a generator; timed in one process on the
# benchmark's 1.6 MB, the two drivers' work differs by under 1 %.
# Module-level re calls with the pattern as a string, as the script makes
# them (each looks its pattern up in re's cache).
MAX_REPEATED_LEN = 100


def _mark(tokens, words, max_word_length=6):
    """The script's get_whole_word_mask_tokens(), operation for operation:
    a token without a U+4E00..9FA5 character (the matches of re.findall,
    counted) is kept; otherwise the longest window of tokens, at most
    max_word_length, whose concatenation is a word gets "##" on all but
    its first token."""
    word_set = set(words)
    out = []
    i = 0
    while i < len(tokens):
        if len(re.findall("[\u4E00-\u9FA5]", tokens[i])) == 0:
            out.append(tokens[i])
            i += 1
            continue
        marked = False
        for length in range(max_word_length, 0, -1):
            if i + length > len(tokens):
                continue
            if "".join(tokens[i:i + length]) in word_set:
                out.append(tokens[i])
                for k in range(1, length):
                    out.append("##" + tokens[i + k])
                i += length
                marked = True
                break
        if not marked:
            out.append(tokens[i])
            i += 1
    return out


def _words(s):
    kind, wwm, splited = _opts
    if not wwm:
        return s
    if splited:
        # split(" ") and the script's repair: the second of two empty
        # strings in a row stands for a space that was a word
        words = s.split(" ")
        prev = False
        for k, w in enumerate(words):
            if prev and len(w) == 0:
                words[k] = " "
                prev = False
            elif len(w) == 0:
                prev = True
            else:
                prev = False
        return words
    import jieba
    return list(jieba.cut(s))


def _encode(line):
    kind, wwm, splited = _opts
    text = json.loads(line)["text"]
    text = re.sub(r"(.)\1{" + str(MAX_REPEATED_LEN) + ",}", r"\1", text)
    doc = []
    for s in text.split("\n"):
        words = _words(s.strip())
        if kind == "paddle":
            tokens = _tok.tokenize("".join(words))
            if wwm:
                tokens = _mark(tokens, words)
            ids = _tok.convert_tokens_to_ids(tokens)
        else:
            ids = _tok.encode("".join(words), add_special_tokens=False).ids
        if ids:
            doc.append(ids)
    return doc, len(text.encode("utf-8"))


def main():
    kind, vocab_dir, path, prefix, workers = sys.argv[1:6]
    wwm = "--wwm" in sys.argv[6:]
    splited = "--splited" in sys.argv[6:]
    from paddlenlp.data import indexed_dataset
    pool = multiprocessing.get_context("fork").Pool(
        int(workers), _init, (kind, vocab_dir, wwm, splited))
    pool.map(abs, range(int(workers)))  # wait until every worker is ready
    t0 = time.time()
    builder = indexed_dataset.make_builder(prefix + ".bin", "mmap", np.uint16)
    step = total = 0
    with open(path, encoding="utf-8") as f:
        # The script's loop: its count of documents and bytes, and its
        # progress line every --log_interval (100) documents.
        for doc, size in pool.imap(_encode, f, 256):
            step += 1
            total += size
            if not doc:
                continue
            for s in doc:
                if len(s) == 0:
                    continue
                builder.add_item(s)
            builder.end_document()
            if step % 100 == 0:
                elapsed = time.time() - t0
                print("Processed %d documents (%.2f docs/s, %.4f MB/s)."
                      % (step, step / elapsed, total / elapsed / 1024 / 1024),
                      file=sys.stderr)
    saved = sys.stdout
    sys.stdout = sys.stderr
    builder.finalize(prefix + ".idx")
    sys.stdout = saved
    print("seconds %.3f" % (time.time() - t0))
    pool.close()


if __name__ == "__main__":
    main()

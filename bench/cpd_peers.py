#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The peers of create-pretraining-data, for bench/create_pretraining_data.sh.

usage: cpd_peers.py paddle|hf VOCAB_DIR INPUT.jsonl PREFIX WORKERS
                    [--wwm [--splited]]

Does the job of PaddleNLP's create_pretraining_data.py (-S --chinese, and
with --wwm jieba whole-word marks; with --splited too, the words come
from the input, split at spaces, as its --cn_splited does) the way that
script does it: a
multiprocessing.Pool of WORKERS processes running imap(encode, lines, 256)
and paddlenlp.data.indexed_dataset's mmap builder in the main process.
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


def _encode(line):
    from cpd_run import mark_whole_words
    kind, wwm, splited = _opts
    text = json.loads(line)["text"]
    doc = []
    for s in text.split("\n"):
        s = s.strip()
        if kind == "paddle":
            if wwm and splited:
                # split(" ") and the script's repair: the second of two
                # empty strings in a row stands for a space that was a word
                words = s.split(" ")
                prev = False
                for k, w in enumerate(words):
                    if prev and w == "":
                        words[k] = " "
                        prev = False
                    else:
                        prev = w == ""
                ids = _tok.convert_tokens_to_ids(
                    mark_whole_words(_tok.tokenize("".join(words)), words))
            elif wwm:
                import jieba
                words = list(jieba.cut(s))
                ids = _tok.convert_tokens_to_ids(
                    mark_whole_words(_tok.tokenize(s), words))
            else:
                ids = _tok.convert_tokens_to_ids(_tok.tokenize(s))
        else:
            ids = _tok.encode(s, add_special_tokens=False).ids
        if ids:
            doc.append(ids)
    return doc


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
    with open(path, encoding="utf-8") as f:
        for doc in pool.imap(_encode, f, 256):
            if not doc:
                continue
            for s in doc:
                builder.add_item(s)
            builder.end_document()
    saved = sys.stdout
    sys.stdout = sys.stderr
    builder.finalize(prefix + ".idx")
    sys.stdout = saved
    print("seconds %.3f" % (time.time() - t0))
    pool.close()


if __name__ == "__main__":
    main()

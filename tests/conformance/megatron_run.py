#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Conformance of `create-pretraining-data --keep-whitespace` against
Megatron-Core.

Megatron-LM's tools/preprocess_data.py tokenizes a document as it is,
leading and trailing whitespace included, with the tokenizer of
--tokenizer-type GPT2BPETokenizer, and writes the .bin/.idx with
megatron.core.datasets.indexed_dataset.IndexedDatasetBuilder.  That script
is not in the megatron-core wheel, so this drives the same steps with the
wheel's own classes (the loop is its Encoder.encode and
Partition.process_json_file, in order):

  * the tokenizer of build_tokenizer() for GPT2BPETokenizer, i.e.
    megatron.core.tokenizers' MegatronHFTokenizer, which resolves the
    name "gpt2" with transformers' AutoTokenizer.  There is no network
    here, so "gpt2" is a directory in the working directory laid out as
    the hub's gpt2 repository (config.json, tokenizer_config.json,
    vocab.json, merges.txt) holding the test's BPE model, which
    AutoTokenizer reads as a local path; both the slow (Megatron's
    default) and the fast tokenizer are checked;
  * per document, the ids of each sentence, empty sentences dropped, the
    eod id appended to the last with --append-eod;
  * IndexedDatasetBuilder(bin, dtype=DType.optimal_dtype(vocab_size)),
    add_document() per document, finalize(idx).

With --split-sentences Megatron splits with NLTK's punkt, whose model is
not on PyPI; its encode step also takes a document already split (the
"text" as a list, what its split step writes), so the documents are given
to it split into lines, each keeping its newline, which is what
`-S --chinese --keep-whitespace` does.  A document with no token is
written by Megatron as an empty document and skipped by us (ds-mmap(5)
never holds one): the inputs have none.

The BPE model is trained on WikiText-2 by `vocab-build bpe` (itself
byte-identical to HF tokenizers' trainer).  The documents are WikiText-2
lines with their leading space and trailing newline, paragraphs of several
lines, and hand-made documents of spaces, tabs, newlines, CRLF and Unicode
spaces around text.  Ours must be byte-identical, with and without -S and
--append-eos (Megatron's --append-eod).

Prints one line per case and ends with
"megatron-conformance: N passed, N failed, N skipped"; exits 1 on a
failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Results  # noqa: E402

SUITE = "megatron-conformance"

HAND_MADE = [
    " leading space",
    "trailing space ",
    "  two each side  ",
    "trailing newline\n",
    "\nleading newline",
    "\n\nblank lines around\n\n",
    "\ttabs\tinside and out\t",
    "CRLF line\r\nand the next\r\n",
    " \n \n",
    "   ",
    "\n",
    "\u3000ideographic space\u3000",
    "no-break\u00a0space\u00a0",
    "line one\nline two\n\nline four, after a blank\n",
    "  indented first line\n    indented second\n",
    "中文 和 English \n 混合 ",
    "ends with many newlines\n\n\n\n",
    "x",
]


def wikitext_documents(path, limit):
    """Lines of WikiText-2 as they are (leading space, trailing newline),
    then paragraphs: the lines between two headings, joined."""
    with open(path, encoding="utf-8", newline="") as f:
        lines = [ln for ln in f.read().split("\n")]
    docs, para = [], []
    for ln in lines:
        if ln.strip() == "":
            continue
        docs.append(ln + "\n")
        if ln.startswith(" = ") and para:
            docs.append("".join(para))
            para = []
        para.append(ln + "\n")
        if len(docs) >= limit:
            break
    return docs


def split_lines(text):
    """-S --chinese --keep-whitespace: the lines, each with its newline."""
    return re.findall(r"[^\n]*\n|[^\n]+", text)


# ------------------------------------------------------------- Megatron

def megatron_tokenizer(vocab_json, merges_txt, use_fast):
    """build_tokenizer() for --tokenizer-type GPT2BPETokenizer; "gpt2"
    must resolve to the hub-like directory in the working directory."""
    from megatron.core.tokenizers.text.utils.build_tokenizer import \
        build_tokenizer
    args = types.SimpleNamespace(
        tokenizer_type="GPT2BPETokenizer", vocab_file=vocab_json,
        merge_file=merges_txt, tokenizer_special_tokens=None,
        tokenizer_hf_use_fast=use_fast, trust_remote_code=False,
        tokenizer_hf_include_special_tokens=False, tokenizer_metadata=None,
        tokenizer_model=None, vocab_size=None)
    return build_tokenizer(args)


def megatron_write(tokenizer, docs, split, append_eod, prefix):
    """preprocess_data.py's encode + process_json_file for one key."""
    import numpy  # noqa: F401  (the builder's)
    from megatron.core.datasets import indexed_dataset
    builder = indexed_dataset.IndexedDatasetBuilder(
        prefix + ".bin",
        dtype=indexed_dataset.DType.optimal_dtype(tokenizer.vocab_size))
    for text in docs:
        sentences = split_lines(text) if split else [text]
        doc_ids, sentence_lens = [], []
        for sentence in sentences:
            sentence_ids = tokenizer.tokenize(sentence)
            if len(sentence_ids) > 0:
                doc_ids.extend(sentence_ids)
                sentence_lens.append(len(sentence_ids))
        if len(doc_ids) > 0 and append_eod:
            doc_ids.append(tokenizer.eod)
            sentence_lens[-1] += 1
        builder.add_document(doc_ids, sentence_lens)
    builder.finalize(prefix + ".idx")


def hub_like_dir(vocab_json, merges_txt, where):
    """The files of the hub's gpt2 repository that AutoTokenizer reads,
    with the test's model."""
    d = os.path.join(where, "gpt2")
    os.makedirs(d)
    shutil.copy(vocab_json, os.path.join(d, "vocab.json"))
    shutil.copy(merges_txt, os.path.join(d, "merges.txt"))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"model_type": "gpt2"}, f)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"model_max_length": 1024}, f)


# ------------------------------------------------------------- ours

def ours(tool, bpe_dir, jsonl, split, append_eod, prefix):
    cmd = [tool, "-q", "-T", "gpt2-bpe", "-v", bpe_dir, "--keep-whitespace",
           "--max-repeated-len", "none", "-o", prefix]
    if split:
        cmd += ["-S", "--chinese"]
    if append_eod:
        cmd += ["-e"]
    subprocess.run(cmd + [jsonl], check=True)


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--vocab-build", required=True)
    ap.add_argument("--data", required=True)
    args = ap.parse_args()
    args.tool = os.path.abspath(args.tool)
    args.vocab_build = os.path.abspath(args.vocab_build)
    res = Results()
    wiki = os.path.join(args.data, "en", "wikitext-2-raw", "wiki.test.raw")
    if not os.path.exists(wiki):
        res.skip("all", "no WikiText-2 at %s (set DATA=)" % wiki)
        print("%s: 0 passed, 0 failed, 1 skipped" % SUITE)
        return 0
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    work = tempfile.mkdtemp()
    try:
        # A BPE model of WikiText-2, with <|endoftext|> (the eod).
        train_txt = os.path.join(work, "train.txt")
        with open(wiki, encoding="utf-8") as f, \
                open(train_txt, "w", encoding="utf-8") as g:
            g.write(f.read())
        bpe = os.path.join(work, "bpe")
        subprocess.run([args.vocab_build, "bpe", "-q", "-s", "2000", "-o",
                        bpe, train_txt], check=True)
        vocab_json = os.path.join(bpe, "vocab.json")
        merges_txt = os.path.join(bpe, "merges.txt")
        hub_like_dir(vocab_json, merges_txt, work)

        docs = wikitext_documents(wiki, 3000) + HAND_MADE
        jsonl = os.path.join(work, "docs.jsonl")
        with open(jsonl, "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")

        os.chdir(work)  # "gpt2" is ./gpt2
        toks = {fast: megatron_tokenizer(vocab_json, merges_txt, fast)
                for fast in (False, True)}
        eod = toks[False].eod
        if eod is None or toks[False].vocab_size != 2000:
            res.fail("the tokenizer", "eod %r, vocab_size %r" %
                     (eod, toks[False].vocab_size))
        for split in (False, True):
            for append_eod in (False, True):
                name = "keep-whitespace%s%s" % (
                    " -S --chinese" if split else "",
                    " --append-eos" if append_eod else "")
                mine = os.path.join(work, "ours")
                ours(args.tool, bpe, jsonl, split, append_eod, mine)
                for fast in (False, True):
                    ref = os.path.join(work, "ref")
                    megatron_write(toks[fast], docs, split, append_eod, ref)
                    case = "%s = Megatron-Core (%s GPT2BPETokenizer, " \
                        "IndexedDatasetBuilder)" % (
                            name, "fast" if fast else "slow")
                    bad = []
                    for ext in (".bin", ".idx"):
                        with open(mine + ext, "rb") as f:
                            a = f.read()
                        with open(ref + ext, "rb") as f:
                            b = f.read()
                        if a != b:
                            bad.append("%s differs at byte %d (%d vs %d "
                                       "bytes)" % (ext, first_difference(
                                           a, b), len(a), len(b)))
                    if bad:
                        res.fail(case, "\n".join(bad))
                    else:
                        res.ok(case, "%d documents, %d bytes" % (
                            len(docs), os.path.getsize(mine + ".bin")))
        # The point of the option: without it, text is stripped as
        # PaddleNLP strips it, and the ids differ from Megatron's.
        plain = os.path.join(work, "plain")
        subprocess.run([args.tool, "-q", "-T", "gpt2-bpe", "-v", bpe,
                        "--max-repeated-len", "none", "-o", plain, jsonl],
                       check=True)
        megatron_write(toks[False], docs, False, False, ref)
        with open(plain + ".bin", "rb") as f, open(ref + ".bin", "rb") as g:
            if f.read() != g.read():
                res.ok("without --keep-whitespace the ids differ (stripped)")
            else:
                res.fail("without --keep-whitespace the ids differ",
                         "the stripped output equals Megatron's")
    finally:
        os.chdir("/")
        shutil.rmtree(work, ignore_errors=True)
    print("%s: %d passed, %d failed, %d skipped"
          % (SUITE, res.passed, res.failed, res.skipped))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

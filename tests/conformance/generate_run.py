#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Exactness of `generate` against Hugging Face transformers 4.46.3.

Models, made here with transformers (fp32, the CPU, fixed seeds): a
GPT-2 (3 layers, n_embd 64, 96 positions) with a byte-level BPE of 1024
tokens trained by HF tokenizers on WikiText-2 ("<|endoftext|>" id 0, the
bos and eos), its weights scaled up x4 so that its next-token
distributions are peaked as a trained model's are, not near-uniform
(where every greedy choice would be a near tie); an ErnieForMaskedLM and
an ErnieForPreTraining (2 layers, hidden 64, task embeddings) and a
BertForMaskedLM with the ernie-3.0-base-zh vocabulary, also scaled.  Each is written with
save_pretrained() (model.safetensors, config.json, the tokenizer files)
and read by `generate -m DIR`.

Cases:
- greedy: every prompt (JSONL input, batches of 8 and of 3, an empty one
  that starts from the bos, one with "<|endoftext|>" inside; text lines
  on the standard input; streamed token by token) gives the
  tokens of model.generate(prompt alone, do_sample=False), its prompt
  ids those of the tokenizer and its text tokenizer.decode(new ids,
  skip_special_tokens=True); again with --repetition_penalty, and with
  an eos token that comes up (one that greedy search chose early) and
  --min_dec_len, so that sequences end at it and min_new_tokens bans it.
- beam search: --num_beams 3 --num_return_sequences 2, and --num_beams 4
  with that eos, --length_penalty 0.6 and --early_stopping: each returned
  sequence is generate(num_beams=...)'s, in its order, and its score its
  sequences_scores (to 1e-4).
- the sampling filters: rows of logits recorded from the model (and a
  row with ties) through transformers' processors (RepetitionPenalty,
  MinNewTokensLength, Temperature, TopK, TopP, built as generate() builds
  them) and through ours (tests/drivers/drv_generate.c): the same tokens
  filtered out, the same scores to 1e-6 (on the row with ties, the same
  scores kept: torch.sort orders ties as it likes, so which of equal
  scores top-p drops is not defined); 20000 draws of our sampler from
  a filtered row fit its softmax (chi-square, p > 1e-4); `generate
  --decode_strategy sampling` gives the same tokens for a seed, in any
  batch, and others for another seed.
- fill-mask: the top 10 tokens of each [MASK] (batches of texts of other
  lengths, a whole word masked, English pieces) are ErnieForMaskedLM's
  top 10 and their probabilities its softmax's (to 2e-6 + 1e-4 relative),
  for both ERNIE models, and BertForMaskedLM's for a BERT ("bert."
  tensors, no task embeddings).
- errors: a checkpoint without its tokenizer files or config.json, a
  prompt longer than the context (the others still generated), --top_p
  0, an unknown --decode_strategy, --fill_mask with a GPT, a text without
  [MASK]: the exit status and a message naming the file or flag.

Usage: generate_run.py [--build DIR] [--data DIR] [--keep]
       [--device cuda] [--generate PATH] [--drv PATH] [--bpe DIR]
       [--vocab FILE]   (the GPU bundle's check: ours on the GPU, the
                         bundle's programs and its BPE and vocabulary;
                         on a device other than the CPU, the filters and
                         the errors, the host's part, are not run again)
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
import transformers.generation.utils as gen_utils  # noqa: E402
from tokenizers import ByteLevelBPETokenizer  # noqa: E402
from transformers import (  # noqa: E402
    BertConfig,
    BertForMaskedLM,
    BertTokenizer,
    ErnieConfig,
    ErnieForMaskedLM,
    ErnieForPreTraining,
    GPT2Config,
    GPT2LMHeadModel,
    GPT2TokenizerFast,
    LogitsProcessorList,
    MinNewTokensLengthLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

# generate() asks whether the model is FSDP-managed by importing
# torch.distributed.fsdp, which Debian's torch 1.13 cannot import under
# Python 3.11 (a dataclass with a mutable default): it is not.
gen_utils.is_fsdp_managed_module = lambda m: False
transformers.logging.set_verbosity_error()
torch.set_num_threads(1)

GPT_PROMPTS = [
    "The game",
    "In 1998 , the",
    "Valkyria Chronicles III is a tactical role @-@ playing video game",
    " He was",
    "",
    "The end<|endoftext|>Then",
    "A",
    "Robert Boulter is an English film , television and theatre actor .",
    "The",
    "= = Gameplay = =",
]
MASK_TEXTS = [
    "我爱[MASK]京。",
    "今天[MASK][MASK]很好",
    "the [MASK] is blue and the [MASK]s are green .",
    "北京是中国的[MASK][MASK]，也是一座历史悠久的[MASK][MASK][MASK]。",
    "[MASK]",
]


# Where ours is and what it runs on (set by main()).
GEN = "build/generate"
DRV = "build/tests/drv_generate"
DEVICE = "cpu"


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s%s" % (name, ": " + detail if detail else ""))
        return ok


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


# ------------------------------------------------------------ models


def scale_(model, factor):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.mul_(factor)


def make_gpt(out, data, bpe_dir):
    os.makedirs(out)
    if bpe_dir:  # a BPE of ours (vocab-build bpe), "<|endoftext|>" id 0
        for f in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(bpe_dir, f), out)
    else:
        wiki = os.path.join(data, "en/wikitext-2-raw/wiki.test.raw")
        with open(wiki, encoding="utf-8") as f:
            lines = [l for l in f.read().splitlines() if l.strip()][:4000]
        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(lines, vocab_size=1024,
                                special_tokens=["<|endoftext|>"],
                                show_progress=False)
        bpe.save_model(out)
    tok = GPT2TokenizerFast(vocab_file=out + "/vocab.json",
                            merges_file=out + "/merges.txt")
    tok.save_pretrained(out)
    eos = tok.convert_tokens_to_ids("<|endoftext|>")
    cfg = GPT2Config(vocab_size=len(tok), n_positions=96, n_embd=64,
                     n_layer=3, n_head=4, bos_token_id=eos, eos_token_id=eos)
    torch.manual_seed(1234)
    model = GPT2LMHeadModel(cfg).eval()
    scale_(model, 4.0)
    model.save_pretrained(out, safe_serialization=True)
    return model, tok


def make_ernie(out, src, cls):
    os.makedirs(out)
    with open(src, encoding="utf-8") as f:  # token<TAB>id -> a token a line
        toks = [l.split("\t")[0] for l in f.read().split("\n") if l]
    with open(out + "/vocab.txt", "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in toks))
    tok = BertTokenizer(out + "/vocab.txt")
    tok.save_pretrained(out)
    if cls is BertForMaskedLM:
        cfg = BertConfig(vocab_size=len(toks), hidden_size=64,
                         num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=128, max_position_embeddings=64)
    else:
        cfg = ErnieConfig(vocab_size=len(toks), hidden_size=64,
                          num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=128, max_position_embeddings=64,
                          type_vocab_size=4, use_task_id=True,
                          task_type_vocab_size=3)
    torch.manual_seed({ErnieForMaskedLM: 99, ErnieForPreTraining: 98,
                       BertForMaskedLM: 97}[cls])
    model = cls(cfg).eval()
    scale_(model, 4.0)
    model.save_pretrained(out, safe_serialization=True)
    return tok


# ------------------------------------------------------------ generation


def hf_new_tokens(seq, n_prompt, eos):
    """The new tokens of one returned sequence, up to its first eos."""
    new = seq[n_prompt:]
    if eos is not None and eos in new:
        new = new[:new.index(eos) + 1]
    return new


def hf_generate(model, tok, prompt, **kw):
    ids = tok(prompt).input_ids or [model.config.bos_token_id]
    eos = kw.get("eos_token_id", model.config.eos_token_id)
    kw.setdefault("pad_token_id", eos if eos is not None else 0)
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]),
                             attention_mask=torch.ones(1, len(ids),
                                                       dtype=torch.long),
                             return_dict_in_generate=True,
                             output_scores=kw.get("num_beams", 1) > 1, **kw)
    seqs = [hf_new_tokens(s.tolist(), len(ids), eos) for s in out.sequences]
    scores = (out.sequences_scores.tolist()
              if getattr(out, "sequences_scores", None) is not None else None)
    return ids, seqs, scores


def ours_jsonl(build, ckpt, prompts, args, batch, stdin_jsonl=True):
    lines = "".join(json.dumps({"text": p}, ensure_ascii=False) + "\n"
                    for p in prompts)
    cmd = [GEN, "-m", ckpt, "-f", "jsonl", "-J", "-b", str(batch),
           "--device", DEVICE, "-q"] + args
    rc, out, err = run(cmd, lines)
    recs = [json.loads(l) for l in out.splitlines()]
    return rc, recs, err


def compare_generation(res, name, build, ckpt, model, tok, ours_args, hf_kw,
                       batch, n_return=1):
    rc, recs, err = ours_jsonl(build, ckpt, GPT_PROMPTS, ours_args, batch)
    if not res.check(name + ".exit", rc == 0, err.strip()):
        return []
    res.check(name + ".count", len(recs) == len(GPT_PROMPTS) * n_return,
              "%d records" % len(recs))
    hyps = []
    for i, prompt in enumerate(GPT_PROMPTS):
        ids, seqs, scores = hf_generate(model, tok, prompt, **hf_kw)
        mine = [r for r in recs if r["index"] == i]
        mine.sort(key=lambda r: r["sequence"])
        res.check("%s.prompt_ids[%d]" % (name, i),
                  mine and mine[0]["prompt_ids"] == ids,
                  "%s != %s" % (mine and mine[0]["prompt_ids"], ids))
        for j, seq in enumerate(seqs):
            got = mine[j] if j < len(mine) else {"ids": None, "text": None}
            ok = res.check("%s.ids[%d.%d]" % (name, i, j), got["ids"] == seq,
                           "prompt %r:\n  ours %s\n  HF   %s"
                           % (prompt, got["ids"], seq))
            if ok:
                want = tok.decode(seq, skip_special_tokens=True)
                res.check("%s.text[%d.%d]" % (name, i, j),
                          got["text"] == want,
                          "%r != %r" % (got["text"], want))
            if scores is not None and ok:
                res.check("%s.score[%d.%d]" % (name, i, j),
                          abs(got["score"] - scores[j]) <= 1e-4,
                          "%g != %g" % (got["score"], scores[j]))
            hyps.append(seq)
    return recs


def test_greedy_and_beams(res, build, gpt_dir, model, tok):
    base = ["--decode_strategy", "greedy_search", "--max_dec_len", "20"]
    kw = dict(do_sample=False, max_new_tokens=20, min_new_tokens=1)
    recs = compare_generation(res, "greedy", build, gpt_dir, model, tok,
                              base, kw, 8)
    compare_generation(res, "greedy_batch3", build, gpt_dir, model, tok,
                       base, kw, 3)
    # The same prompts as text lines on the standard input (the empty
    # one, a blank line, is skipped), and streamed.
    lines = [p for p in GPT_PROMPTS if p]
    rc, out, err = run([GEN, "-m", gpt_dir, "--device", DEVICE, "-q", "-f",
                        "jsonl"] + base, "".join(p + "\n" for p in lines))
    want = [r["ids"] for r in recs if r["prompt"]]
    res.check("greedy_stdin_lines",
              rc == 0 and [json.loads(l)["ids"] for l in out.splitlines()]
              == want, err)
    outs = []
    for flag in ("--stream", "--no_stream"):
        cmd = [GEN, "-m", gpt_dir, "--device", DEVICE, "-q", flag] + base
        for p in lines:
            cmd += ["-p", p]
        outs.append(run(cmd))
    res.check("greedy_stream", outs[0][0] == 0 and outs[0] == outs[1] and
              outs[0][1].count("\n") == len(lines), repr(outs[0][1]))
    compare_generation(res, "greedy_repetition", build, gpt_dir, model, tok,
                       base + ["--repetition_penalty", "1.5"],
                       dict(kw, repetition_penalty=1.5), 4)
    # An eos that greedy search chooses for some prompts after their
    # third token and not before: those sequences must end there.
    counts = {}
    for r in recs:
        for t in set(r["ids"][3:8]) - set(r["ids"][:3]):
            counts[t] = counts.get(t, 0) + 1
    if not res.check("greedy_eos.candidate", len(counts) > 0):
        return
    eos = max(sorted(counts), key=lambda t: counts[t])
    eos_recs = compare_generation(
        res, "greedy_eos", build, gpt_dir, model, tok,
        base + ["--eos_token_id", str(eos), "--min_dec_len", "3"],
        dict(kw, eos_token_id=eos, pad_token_id=eos, min_new_tokens=3), 8)
    ended = [r for r in eos_recs if r["finish_reason"] == "eos"]
    res.check("greedy_eos.some_end", len(ended) > 0 and all(
        r["ids"][-1] == eos and len(r["ids"]) >= 3 for r in ended),
        "eos %d: %d ended" % (eos, len(ended)))
    compare_generation(
        res, "beam3", build, gpt_dir, model, tok,
        ["--decode_strategy", "beam_search", "--num_beams", "3",
         "--num_return_sequences", "2", "--max_dec_len", "16"],
        dict(do_sample=False, num_beams=3, num_return_sequences=2,
             max_new_tokens=16, min_new_tokens=1), 8, n_return=2)
    compare_generation(
        res, "beam4_eos", build, gpt_dir, model, tok,
        ["--decode_strategy", "beam_search", "--num_beams", "4",
         "--max_dec_len", "16", "--eos_token_id", str(eos),
         "--length_penalty", "0.6", "--early_stopping", "--min_dec_len",
         "2"],
        dict(do_sample=False, num_beams=4, max_new_tokens=16,
             min_new_tokens=2, eos_token_id=eos, pad_token_id=eos,
             length_penalty=0.6, early_stopping=True), 3)


# ------------------------------------------------------------ sampling


FILTERS = [  # (name, temperature, top_k, top_p, repetition, min_new, n_new)
    ("t0.7_k50_p0.75", 0.7, 50, 0.75, 1.0, 1, 0),
    ("t1.3_p0.9", 1.3, 0, 0.9, 1.0, 0, 2),
    ("k5", 1.0, 5, 1.0, 1.0, 0, 2),
    ("rep1.3_k20_p0.5", 1.0, 20, 0.5, 1.3, 0, 3),
    ("min_new3_p0.95", 0.9, 0, 0.95, 1.2, 3, 1),
    ("p0.3", 1.0, 0, 0.3, 1.0, 0, 0),
]


def hf_processors(temp, k, p, rep, min_new, n_prompt, eos):
    procs = LogitsProcessorList()
    if rep != 1.0:
        procs.append(RepetitionPenaltyLogitsProcessor(penalty=rep))
    if min_new > 0:
        procs.append(MinNewTokensLengthLogitsProcessor(n_prompt, min_new, eos))
    if temp != 1.0:
        procs.append(TemperatureLogitsWarper(temp))
    if k != 0:
        procs.append(TopKLogitsWarper(top_k=k, min_tokens_to_keep=1))
    if p < 1.0:
        procs.append(TopPLogitsWarper(top_p=p, min_tokens_to_keep=1))
    return procs


def chi2_upper(x, df):
    """P(chi2_df > x) by Wilson and Hilferty's normal approximation."""
    z = ((x / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def test_filters(res, build, model, tok):
    eos = model.config.eos_token_id
    rows = []
    with torch.no_grad():
        for prompt in GPT_PROMPTS[:4]:
            ids = tok(prompt).input_ids
            hist = ids + [5, 9, 5][:3]
            lg = model(torch.tensor([hist])).logits[0, -1].float()
            rows.append((hist, lg))
    # A row with ties at the top-k and top-p edges.
    tied = torch.tensor([1.0] * 10 + [2.0] * 6 + [0.5] * 8 + [3.0] * 4 +
                        [-1.0] * 100, dtype=torch.float32)
    rows.append(([1, 2, 3], tied))
    cases, hf_out = [], []
    for (name, temp, k, p, rep, min_new, n_new) in FILTERS:
        for r, (hist, lg) in enumerate(rows):
            V = lg.shape[0]
            procs = hf_processors(temp, k, p, rep, min_new,
                                  len(hist) - n_new, eos)
            want = procs(torch.tensor([hist]), lg.clone()[None])[0]
            draws = 20000 if r == 0 else 0
            cases.append("%d %d %d %d %.9g 1 %.9g %d %.9g %d 7\n%s\n%s\n" % (
                V, n_new, eos, min_new, rep, temp, k, p, draws,
                " ".join(map(str, hist)),
                " ".join("%.9g" % v for v in lg.tolist())))
            hf_out.append((name, r, want, draws))
    rc, out, err = run([DRV], "".join(cases))
    if not res.check("filters.exit", rc == 0, err):
        return
    lines = out.splitlines()
    at = 0
    for name, r, want, draws in hf_out:
        got = np.array([float(x) for x in lines[at].split()],
                       dtype=np.float64)
        at += 1
        w = want.double().numpy()
        fin = ~np.isneginf(w)
        if r == len(rows) - 1:
            # torch.sort leaves the order of ties unspecified, and so
            # which of equal scores top-p drops: the kept scores are
            # compared as a multiset.
            same_out = (~np.isneginf(got)).sum() == fin.sum()
            close = same_out and np.allclose(
                np.sort(got[~np.isneginf(got)]), np.sort(w[fin]),
                rtol=1e-6, atol=1e-6)
        else:
            same_out = np.array_equal(np.isneginf(got), np.isneginf(w))
            close = same_out and np.all(
                np.abs(got[fin] - w[fin]) <=
                1e-6 * np.maximum(1, np.abs(w[fin])))
        res.check("filters.%s.row%d" % (name, r), same_out and close,
                  "kept ours %d HF %d, %d differ" % (
                      (~np.isneginf(got)).sum(), fin.sum(),
                      (np.isneginf(got) != np.isneginf(w)).sum()))
        if draws:
            counts = np.array([int(x) for x in lines[at].split()])
            at += 1
            prob = torch.softmax(want, -1).double().numpy()
            kept = prob > 0
            exp = prob[kept] * draws
            # Pool the rare tokens so that each cell expects >= 5.
            order = np.argsort(exp)
            cells, acc_e, acc_o = [], 0.0, 0
            for j in order:
                acc_e += exp[j]
                acc_o += counts[kept][j]
                if acc_e >= 5:
                    cells.append((acc_o, acc_e))
                    acc_e, acc_o = 0.0, 0
            if acc_e > 0 and cells:
                o, e = cells.pop()
                cells.append((o + acc_o, e + acc_e))
            stat = sum((o - e) ** 2 / e for o, e in cells)
            df = max(1, len(cells) - 1)
            pval = chi2_upper(stat, df) if len(cells) > 1 else 1.0
            res.check("filters.%s.draws" % name,
                      counts[~kept].sum() == 0 and pval > 1e-4,
                      "chi2 %.1f on %d df, p %.2g; %d drawn outside" % (
                          stat, df, pval, counts[~kept].sum()))


def test_sampling_runs(res, build, gpt_dir):
    args = ["--decode_strategy", "sampling", "--max_dec_len", "12",
            "--top_k", "40", "--top_p", "0.9", "--temperature", "0.8",
            "--num_return_sequences", "2"]
    a = ours_jsonl(build, gpt_dir, GPT_PROMPTS, args + ["--seed", "7"], 8)
    b = ours_jsonl(build, gpt_dir, GPT_PROMPTS, args + ["--seed", "7"], 1)
    c = ours_jsonl(build, gpt_dir, GPT_PROMPTS, args + ["--seed", "8"], 8)
    ok = a[0] == 0 and b[0] == 0 and c[0] == 0
    res.check("sampling.exit", ok, a[2] + b[2] + c[2])
    if not ok:
        return
    ids = lambda recs: [(r["index"], r["sequence"], r["ids"]) for r in recs]
    res.check("sampling.same_seed_any_batch", ids(a[1]) == ids(b[1]))
    res.check("sampling.other_seed", ids(a[1]) != ids(c[1]))
    res.check("sampling.two_sequences_differ", any(
        a[1][2 * i]["ids"] != a[1][2 * i + 1]["ids"]
        for i in range(len(GPT_PROMPTS))))


# ------------------------------------------------------------ fill-mask


def test_fill_mask(res, build, ernie_dir, name, cls=ErnieForMaskedLM):
    model = cls.from_pretrained(ernie_dir).eval()
    tok = BertTokenizer.from_pretrained(ernie_dir)
    rc, recs, err = ours_jsonl(build, ernie_dir, MASK_TEXTS,
                               ["--fill_mask", "--top_k", "10"], 3)
    if not res.check(name + ".exit", rc == 0, err.strip()):
        return
    res.check(name + ".count", len(recs) == len(MASK_TEXTS))
    for rec in recs:
        text = MASK_TEXTS[rec["index"]]
        enc = tok(text, return_tensors="pt")
        res.check("%s.ids[%d]" % (name, rec["index"]),
                  rec["ids"] == enc.input_ids[0].tolist(),
                  "%s != %s" % (rec["ids"], enc.input_ids[0].tolist()))
        with torch.no_grad():
            logits = model(**enc).logits[0]
        pos = (enc.input_ids[0] == tok.mask_token_id).nonzero()[:, 0].tolist()
        res.check("%s.positions[%d]" % (name, rec["index"]),
                  [m["position"] for m in rec["masks"]] == pos)
        for m in rec["masks"]:
            prob = torch.softmax(logits[m["position"]], -1).double()
            ids = [c["id"] for c in m["candidates"]]
            got = np.array([c["prob"] for c in m["candidates"]])
            want = prob[ids].numpy()
            top = prob.topk(10)
            # The same ten (the tenth may tie with the eleventh).
            same = ids[:9] == top.indices.tolist()[:9] and abs(
                prob[ids[9]] - top.values[9]) <= 2e-6
            res.check("%s.top10[%d@%d]" % (name, rec["index"],
                                           m["position"]),
                      same and np.all(np.abs(got - want) <=
                                      2e-6 + 1e-4 * want),
                      "ours %s %s\n  HF %s %s" % (
                          ids, got.round(7).tolist(), top.indices.tolist(),
                          top.values.numpy().round(7).tolist()))
            res.check("%s.tokens[%d@%d]" % (name, rec["index"],
                                            m["position"]),
                      [c["token"] for c in m["candidates"]] ==
                      tok.convert_ids_to_tokens(ids))
    words = [w for r in recs for w in r["words"]]
    res.check(name + ".whole_words", len(words) == 3, str(words))


# ------------------------------------------------------------ errors


def test_errors(res, build, gpt_dir, ernie_dir, work):
    gen = GEN

    def expect(name, cmd, rc_want, needles, stdin=None):
        rc, out, err = run(cmd, stdin)
        ok = rc == rc_want and all(n in err for n in needles)
        res.check("errors." + name, ok,
                  "exit %d (want %d), stderr %r" % (rc, rc_want, err))
        return out

    no_tok = os.path.join(work, "gpt-no-tokenizer")
    shutil.copytree(gpt_dir, no_tok)
    os.remove(os.path.join(no_tok, "merges.txt"))
    expect("gpt_no_tokenizer", [gen, "-m", no_tok, "-p", "x"], 1,
           ["has no tokenizer", "'merges.txt' is missing", no_tok])
    no_vocab = os.path.join(work, "ernie-no-vocab")
    shutil.copytree(ernie_dir, no_vocab)
    os.remove(os.path.join(no_vocab, "vocab.txt"))
    expect("ernie_no_tokenizer", [gen, "-m", no_vocab, "-p", "[MASK]"], 1,
           ["has no tokenizer", "'vocab.txt' is missing"])
    no_cfg = os.path.join(work, "no-config")
    shutil.copytree(gpt_dir, no_cfg)
    os.remove(os.path.join(no_cfg, "config.json"))
    expect("no_config", [gen, "-m", no_cfg, "-p", "x"], 1,
           ["has no config.json", no_cfg])
    long_prompt = " ".join(["word"] * 200)
    out = expect("prompt_too_long",
                 [gen, "-m", gpt_dir, "--decode_strategy", "greedy_search",
                  "--max_dec_len", "3", "-p", "short", "-p", long_prompt,
                  "-p", "after"], 1,
                 ["prompt 2: a prompt of", "context is 96 positions"])
    res.check("errors.prompt_too_long.others_kept",
              out.startswith("short") and "\nafter" in out, repr(out))
    expect("top_p_zero", [gen, "-m", gpt_dir, "--top_p", "0", "-p", "x"],
           2, ["--top_p 0: must be greater than 0"])
    expect("strategy", [gen, "-m", gpt_dir, "--decode_strategy", "topk",
                        "-p", "x"], 2,
           ["--decode_strategy topk: use sampling, greedy_search or "
            "beam_search"])
    expect("fill_mask_gpt", [gen, "-m", gpt_dir, "--fill_mask", "-p", "x"],
           2, ["--fill_mask", "GPT checkpoint"])
    expect("no_mask", [gen, "-m", ernie_dir, "-", "-q"], 1,
           ["<stdin>:2: no [MASK] in the text"],
           stdin="我爱[MASK]京。\n没有面具\n")


def main():
    global GEN, DRV, DEVICE
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--generate", help="the generate program (default: "
                    "BUILD/generate)")
    ap.add_argument("--drv", help="drv_generate (default: "
                    "BUILD/tests/drv_generate)")
    ap.add_argument("--device", default="cpu", help="ours runs on it")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--bpe", help="a BPE directory (vocab.json, merges.txt) "
                    "instead of one trained on DATA's WikiText-2")
    ap.add_argument("--vocab", help="ERNIE's vocab.txt instead of DATA's "
                    "ernie-3.0-base-zh")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    GEN = a.generate or os.path.join(a.build, "generate")
    DRV = a.drv or os.path.join(a.build, "tests/drv_generate")
    DEVICE = a.device
    vocab = a.vocab or os.path.join(a.data,
                                    "vocab/ernie-3.0-base-zh.vocab.txt")
    res = Results()
    if not os.path.isfile(vocab) or not (a.bpe or os.path.isdir(a.data)):
        print("generate-conformance: 0 passed, 0 failed, 1 skipped (no "
              "shared data at %s)" % a.data)
        return 0
    work = tempfile.mkdtemp(prefix="generate-run.")
    try:
        gpt_dir = os.path.join(work, "gpt")
        model, tok = make_gpt(gpt_dir, a.data, a.bpe)
        mlm_dir = os.path.join(work, "ernie-mlm")
        make_ernie(mlm_dir, vocab, ErnieForMaskedLM)
        pre_dir = os.path.join(work, "ernie-pretraining")
        make_ernie(pre_dir, vocab, ErnieForPreTraining)
        test_greedy_and_beams(res, a.build, gpt_dir, model, tok)
        test_sampling_runs(res, a.build, gpt_dir)
        test_fill_mask(res, a.build, mlm_dir, "fill_mask")
        test_fill_mask(res, a.build, pre_dir, "fill_mask_pretraining")
        bert_dir = os.path.join(work, "bert-mlm")
        make_ernie(bert_dir, vocab, BertForMaskedLM)
        test_fill_mask(res, a.build, bert_dir, "fill_mask_bert",
                       BertForMaskedLM)
        if DEVICE == "cpu":  # the host's work, whatever the device
            test_filters(res, a.build, model, tok)
            test_errors(res, a.build, gpt_dir, mlm_dir, work)
    finally:
        if a.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("generate-conformance: %d passed, %d failed, 0 skipped"
          % (res.passed, res.failed))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

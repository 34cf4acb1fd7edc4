# SPDX-License-Identifier: MIT
"""The reference tokenizers that `tokenize` must agree with.

Each oracle maps a list of strings to a list of id lists:
  paddle  PaddleNLP ErnieTokenizer.from_pretrained(dir with vocab.txt), the
          tokenizer create_pretraining_data.py uses  (our --flavor ernie)
  hf      Hugging Face tokenizers BertWordPieceTokenizer  (--flavor bert)
  bert    transformers' Python BertTokenizer, Google BERT's algorithm
          (--flavor bert)
They are imported lazily, so a run needs only the packages it uses.
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _quiet_import(fn):
    # paddle and transformers print banners on import; keep stdout clean.
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        return fn()
    finally:
        sys.stdout = saved


def make(name, vocab_dir, lower):
    """Return a function list[str] -> list[list[int]]."""
    vocab = os.path.join(vocab_dir, "vocab.txt")
    if name == "paddle":
        def load():
            import logging
            logging.disable(logging.WARNING)
            from paddlenlp.transformers import ErnieTokenizer
            return ErnieTokenizer.from_pretrained(vocab_dir,
                                                  do_lower_case=lower)
        tok = _quiet_import(load)

        def run(texts):
            return [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in texts]
        return run
    if name == "hf":
        from tokenizers import BertWordPieceTokenizer
        tok = BertWordPieceTokenizer(vocab, lowercase=lower)

        def run(texts):
            return [e.ids for e in tok.encode_batch(texts,
                                                    add_special_tokens=False)]
        return run
    if name == "bert":
        def load():
            from transformers import BertTokenizer
            return BertTokenizer(vocab, do_lower_case=lower)
        tok = _quiet_import(load)

        def run(texts):
            return [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in texts]
        return run
    raise ValueError("unknown oracle " + name)


def versions():
    out = {}
    for mod in ("paddlenlp", "tokenizers", "transformers"):
        try:
            m = _quiet_import(lambda: __import__(mod))
            out[mod] = getattr(m, "__version__", "?")
        except Exception as e:  # noqa: BLE001 - report, do not hide
            out[mod] = "unavailable (%s)" % e
    return out

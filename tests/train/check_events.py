# SPDX-License-Identifier: MIT
"""usage: check_events.py OUTPUT_DIR ernie|ernie-mlm|gpt [tensorboard|visualdl]

Reads the event files of a `train` run with the readers of TensorBoard
(EventAccumulator, over the directory as `tensorboard --logdir` does) and
VisualDL (the file that LogReader picks for the directory, read with
LogReader) and checks them against OUTPUT_DIR/train_log.jsonl: every
scalar of every logged step and evaluation, at its step, with its value
(stored as fp32), each step once (a resumed run's repeated steps are
dropped: the last line of each step in the JSON log is the one that
counts).  GPT has no lm_loss and sop_loss tags (they repeat loss and
are 0), ERNIE without the SOP head (ernie-mlm) no sop_loss; a float16
run (--use_amp --amp_dtype float16) has train/loss_scale, and a step it
skipped a grad_norm that is not finite (null in the JSON log).  Also reads every TensorBoard record through TensorBoard's
record reader, which checks both CRC-32Cs.  Exits 1 with the differences.
"""
import glob
import json
import math
import os
import sys

# JSON log key -> (tag suffix, significant digits written in the JSON log)
TRAIN_KEYS = {
    "loss": 9, "lm_loss": 9, "sop_loss": 9, "learning_rate": 9,
    "grad_norm": 9, "steps_per_second": 6, "samples_per_second": 6,
    "tokens_per_second": 6, "mfu": 6, "loss_scale": 9,
}
EVAL_KEYS = {"loss": 9, "lm_loss": 9, "sop_loss": 9}


def expected(out, kind):
    """{tag: {step: (value, digits)}} from the JSON log, last line wins."""
    want = {}
    drop = {"gpt": ("lm_loss", "sop_loss"), "ernie-mlm": ("sop_loss",),
            "ernie": ()}[kind]
    for line in open(os.path.join(out, "train_log.jsonl")):
        r = json.loads(line)
        if "global_step" in r:
            split, step, keys = "train", r["global_step"], TRAIN_KEYS
        elif "valid_step" in r:
            split, step, keys = "valid", r["valid_step"], EVAL_KEYS
        elif "test_step" in r:
            split, step, keys = "test", r["test_step"], EVAL_KEYS
        else:
            continue
        for k, digits in keys.items():
            if k in drop or k not in r:  # (loss_scale: float16 runs only)
                continue
            want.setdefault("%s/%s" % (split, k), {})[step] = (r[k], digits)
    return want


def same(got, value, digits):
    if value is None:  # not finite (a skipped step's norm)
        return not math.isfinite(got)
    # fp32 storage (half an ulp, 2^-24 relative) plus the JSON log's own
    # rounding to `digits` significant digits.
    tol = (2.0 ** -24 + 0.5 * 10.0 ** (1 - digits)) * abs(value) + 1e-30
    return abs(got - value) <= tol


def compare(name, have, want, bad):
    """have: {tag: [(step, value), ...]} as the reader gives them."""
    for tag, steps in sorted(want.items()):
        if tag not in have:
            bad.append("%s: no tag %s" % (name, tag))
            continue
        seen = [s for s, _ in have[tag]]
        if sorted(seen) != sorted(steps):
            bad.append("%s: %s has steps %s, the JSON log %s"
                       % (name, tag, seen, sorted(steps)))
            continue
        for step, value in have[tag]:
            v, digits = steps[step]
            if not same(value, v, digits):
                bad.append("%s: %s step %d: %r, the JSON log %r"
                           % (name, tag, step, value, v))
    for tag in have:
        if tag not in want:
            bad.append("%s: unexpected tag %s" % (name, tag))


def tensorboard_side(runs, want, bad):
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.compat.tensorflow_stub import errors
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import \
        PyRecordReader_New

    files = sorted(glob.glob(os.path.join(runs, "*tfevents*")))
    if not files:
        bad.append("tensorboard: no event file in %s" % runs)
        return files
    for f in files:  # every record's two CRCs, by TensorBoard's reader
        reader = PyRecordReader_New(f)
        try:
            while True:
                reader.GetNext()
        except errors.OutOfRangeError:
            pass
        except errors.DataLossError as e:
            bad.append("tensorboard: %s" % e.message)
    ea = event_accumulator.EventAccumulator(
        runs, size_guidance={event_accumulator.SCALARS: 0})
    ea.Reload()
    have = {tag: [(e.step, e.value) for e in ea.Scalars(tag)]
            for tag in ea.Tags()["scalars"]}
    compare("tensorboard", have, want, bad)
    return files


def visualdl_side(runs, want, bad):
    from visualdl import LogReader

    shown = LogReader(logdir=runs).logs(update=True)
    if runs not in shown:
        bad.append("visualdl: no vdlrecords file in %s" % runs)
        return []
    f = os.path.join(runs, shown[runs])
    reader = LogReader(file_path=f)
    tags = reader.get_tags().get("scalar", [])
    have = {tag: [(v.id, v.value) for v in reader.get_data("scalar", tag)]
            for tag in tags}
    compare("visualdl", have, want, bad)
    return [f]


def main():
    out, kind = sys.argv[1], sys.argv[2]
    sides = sys.argv[3:] or ["tensorboard", "visualdl"]
    runs = os.path.join(out, "runs")
    want = expected(out, kind)
    bad = []
    if not want:
        bad.append("%s/train_log.jsonl has no scalars" % out)
    n = 0
    for side in sides:
        files = {"tensorboard": tensorboard_side,
                 "visualdl": visualdl_side}[side](runs, want, bad)
        n += len(files)
    for b in bad:
        print(b)
    if not bad:
        print("%d tags, %d file(s): the values of train_log.jsonl"
              % (len(want), n))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

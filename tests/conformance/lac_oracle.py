# SPDX-License-Identifier: MIT
"""Baidu LAC 2.1.2 itself, for tests/conformance/lac_run.py: run in the
oracle's venv (build/lac-venv, Python 3.8, paddlepaddle 1.8.5).

    lac_oracle.py REQUEST.json RESULT.json

REQUEST is {"mode": "seg" | "lac", "userdict": path or null, "texts":
[...]}; RESULT gets one entry a text: [words, tags] (tags null for seg),
each text run alone as LAC.run(text), the call PaddleNLP's scripts make,
after LAC.load_customization(userdict) when there is one.  Prints the
versions on stderr.
"""
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("GLOG_minloglevel", "3")


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        req = json.load(f)
    saved = sys.stdout
    sys.stdout = sys.stderr  # paddle prints on import
    import paddle
    import LAC as lac_pkg
    from LAC import LAC
    model = LAC(mode=req["mode"])
    if req.get("userdict"):
        model.load_customization(req["userdict"])
    sys.stdout = saved
    print("# oracle: LAC %s (%s), paddlepaddle %s, Python %s" % (
        "2.1.2", os.path.dirname(lac_pkg.__file__), paddle.__version__,
        sys.version.split()[0]), file=sys.stderr)
    out = []
    for text in req["texts"]:
        r = model.run(text)
        if req["mode"] == "seg":
            out.append([list(r), None])
        else:
            out.append([list(r[0]), list(r[1])])
    with open(sys.argv[2] + ".tmp", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])


if __name__ == "__main__":
    main()

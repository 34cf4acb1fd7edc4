#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: bench/vocab_build.sh [BUILD] [DATA]   (or: make bench)
# The vocab-build benchmarks, each against its peer on the same input:
#   chars    vs the seed's gen_char.py counting in Python
#   english  vs Debian's spm_train (the same library: front-end overhead)
#   bpe      vs HF tokenizers' ByteLevelBPETokenizer training
# Each prints a Markdown table for BENCHMARKS.md.
set -eu
BUILD=${1:-build}
DATA=${2:-../shared/data}
for part in chars english bpe; do
    echo "### vocab-build $part"
    echo
    sh "bench/vocab_build_$part.sh" "$BUILD" "$DATA"
    echo
done

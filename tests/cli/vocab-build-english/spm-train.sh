# The vocab and the model are spm_train's, byte for byte (Debian's
# sentencepiece package, where installed).
command -v spm_train > /dev/null || { echo "no spm_train" >&2; exit 77; }
awk 'BEGIN { for (i = 0; i < 300; i++)
    printf "line %d of the text: the %s %s jumps over %d lazy dogs.\n", i,
        (i % 3 ? "quick" : "slow"), (i % 5 ? "brown fox" : "grey cat"),
        i % 7 }' > a.txt
"$TOOLS/vocab-build" english -q -s 200 -o eng.vocab -m eng.model a.txt
mkdir spm
(cd spm && spm_train --input=../a.txt --model_prefix=eng --vocab_size=200 \
    --model_type=bpe --minloglevel=2 --num_threads=16)
cmp eng.vocab spm/eng.vocab && echo "vocab: same"
# The model records the prefix and inputs as given: give the same ones.
(cd spm && "$TOOLS/vocab-build" english -q -s 200 -o eng.vocab \
    -m ours.model ../a.txt && cmp ours.model eng.model && echo "model: same")

# Inputs of either format, mixed, give the same merge; -f npy writes the
# npy pair.  Merging the datasets of two corpora gives, byte for byte, the
# dataset of the two corpora made in one run, in both formats.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > 1.jsonl
printf '{"text": "f\\ne d"}\n{"text": "c"}\n' > 2.jsonl
cat 1.jsonl 2.jsonl > both.jsonl
cpd() { "$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese "$@"; }
cpd -o m1 1.jsonl
cpd -o m2 2.jsonl
cpd -f npy -o n1 1.jsonl
cpd -f npy -o n2 2.jsonl
cpd -o one both.jsonl
cpd -f npy -o one both.jsonl
"$TOOLS/merge" -q -o mm m1 m2
"$TOOLS/merge" -q -o nm n1 m2
"$TOOLS/merge" -q -o mn m1 n2
"$TOOLS/merge" -q -f npy -o nn n1 n2
"$TOOLS/merge" -q -f npy -o mixed m1 n2
for p in mm nm mn; do
    cmp $p.bin one.bin && cmp $p.idx one.idx && echo "$p: same as one run"
done
for p in nn mixed; do
    cmp ${p}_ids.npy one_ids.npy && cmp ${p}_idx.npz one_idx.npz &&
        echo "$p (npy): same as one run"
done
ls mixed* nn*

# --shard i/n over a directory's JSONL files (sorted): `merge' of the n
# datasets, in the order of their names, is byte for byte the dataset of
# all the files, whatever n is: a corpus preprocessed as a cluster job.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
mkdir in
for i in 0 1 2 3 4 5; do
    j=0
    while [ $j -le $((i % 3)) ]; do
        printf '{"text": "a b c %s %s"}\n' "$i" "$j" >> "in/part$i.jsonl"
        j=$((j + 1))
    done
done
cpd() { "$TOOLS/create-pretraining-data" -q -v "$V" "$@"; }
cpd -o all in
for n in 2 3 6; do
    mkdir "s$n"
    i=0
    while [ $i -lt $n ]; do
        cpd --shard $i/$n -o "s$n/$(printf 'part-%05d' $i)" in || echo "fail"
        i=$((i + 1))
    done
    "$TOOLS/merge" -q -o "m$n" "s$n"
    cmp m$n.bin all.bin && cmp m$n.idx all.idx &&
        echo "$n shards merged: the dataset of all the files"
done
cpd --shard 0/7 -o x in
echo "exit $?"

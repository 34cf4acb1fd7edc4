# --shard i/n: the n outputs, one after another, are the output of all
# the files (a document ends at the end of its file), whatever n is.
i=0
for w in 3 1 1 5; do
    : > "f$i.txt"
    j=0
    while [ $j -lt "$w" ]; do
        printf 'file %s, document %s: a line\nand another\n\n' $i $j >> "f$i.txt"
        j=$((j + 1))
    done
    i=$((i + 1))
done
"$TOOLS/json-pack" -q -o all.jsonl f*.txt
for n in 1 2 3 4; do
    : > cat.jsonl
    i=0
    while [ $i -lt $n ]; do
        "$TOOLS/json-pack" -q --shard $i/$n f*.txt >> cat.jsonl
        i=$((i + 1))
    done
    cmp -s cat.jsonl all.jsonl && echo "$n shards: the whole output"
done
"$TOOLS/json-pack" -q --shard 4/5 f*.txt
echo "exit $?"

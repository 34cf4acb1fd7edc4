# --shard i/n: the i-th of n runs of the files, cut by their sizes (each
# file goes to the run that holds its middle byte, every run at least one
# file); the n outputs, one after another, are the output of all the
# files, whatever n is.  Fewer files than shards, stdin and bad specs are
# usage errors.
i=0
for w in 1 9 2 2 6; do # five files of unequal sizes, in sorted order
    : > "f$i.txt"
    j=0
    while [ $j -lt "$w" ]; do
        echo "这是第${i}个文件的第${j}行。它有两句话！" >> "f$i.txt"
        j=$((j + 1))
    done
    i=$((i + 1))
done
"$TOOLS/segment" -q -o all.txt f*.txt
for n in 1 2 3 4 5; do
    : > cat.txt
    i=0
    while [ $i -lt $n ]; do
        "$TOOLS/segment" -q --shard $i/$n f*.txt >> cat.txt || echo "fail $i/$n"
        i=$((i + 1))
    done
    cmp -s cat.txt all.txt && echo "$n shards: the whole output"
done
# Which files each shard of 3 takes (the notice on stderr).
for i in 0 1 2; do
    "$TOOLS/segment" --shard $i/3 -o /dev/null f*.txt 2>&1 |
        sed 's/ ([^)]*)//'
done
"$TOOLS/segment" -q --shard 5/6 f*.txt
echo "exit $?"
echo x | "$TOOLS/segment" -q --shard 0/1
echo "exit $?"
echo x | "$TOOLS/segment" -q --shard 0/1 f0.txt -
echo "exit $?"
for bad in 3/3 1/0 a/2 -1/2 1/ /2 1/2x 0/65537; do
    "$TOOLS/segment" -q --shard "$bad" f0.txt 2>&1 | head -n 1
done

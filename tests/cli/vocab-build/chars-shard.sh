# Counting in pieces: each task of a cluster job counts its --shard of the
# files (a directory's, sorted), and -m adds the counts up: the counts of
# all the files, byte for byte.  -m with --shard is a usage error.
mkdir corpus
printf '天地玄黄\n宇宙洪荒\n' > corpus/a.txt
printf '日月盈昃，辰宿列张。\n' > corpus/b.txt
printf 'hello 天地\n' > corpus/c.txt
printf '寒来暑往\n秋收冬藏\n闰余成岁\n' > corpus/d.txt
"$TOOLS/vocab-build" chars -q -o all.tsv corpus
for n in 2 3 4; do
    i=0
    while [ $i -lt $n ]; do
        "$TOOLS/vocab-build" chars -q --shard $i/$n -o "c$n.$i.tsv" corpus
        i=$((i + 1))
    done
    "$TOOLS/vocab-build" chars -m -q -o "m$n.tsv" c$n.*.tsv
    cmp -s "m$n.tsv" all.tsv && echo "$n shards added up: the counts of all"
done
"$TOOLS/vocab-build" chars -m --shard 0/2 all.tsv 2>&1 | head -n 1
"$TOOLS/vocab-build" chars -q --shard 4/5 corpus
echo "exit $?"

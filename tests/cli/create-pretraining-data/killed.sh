# A run killed mid-way leaves no file that looks complete: only temporary
# *.tmp.<pid> names, never out.bin or out.idx.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
yes '{"text": "a b c d e f a b c d e f a b c d e f a b c d e f"}' | head -n 3000000 > in.jsonl
"$TOOLS/create-pretraining-data" -q -j 1 -v "$V" -o out in.jsonl &
pid=$!
i=0
while [ ! -e "out.bin.tmp.$pid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.3
kill -9 $pid
wait $pid
echo "status $?"
ls out.bin out.idx 2>/dev/null
ls | grep -c "tmp.$pid" | sed 's/^[1-9][0-9]*$/temporaries left/'

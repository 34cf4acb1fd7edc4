# A vocab of more than 65534 tokens stores int32 ids, and says so.
{ echo '[UNK]'; seq 1 70000 | sed 's/^/w/'; } > big.vocab
printf '{"text": "w1 w70000"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -v big.vocab -o out in.jsonl 2>&1 | head -n 1
od -An -tu1 -j 17 -N 1 out.idx
od -An -td4 out.bin

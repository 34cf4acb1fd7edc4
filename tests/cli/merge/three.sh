# Three prefixes merged in the order given (ernie-data.md 5.2, 5.5):
#   p1 = 10a's example: sizes [3,1,2], doc_idx [0,2,3], tokens 5..10
#   p2: sizes [1,2,1], doc_idx [0,2,3], tokens 10 9 8 7
#   p3: sizes [2], doc_idx [0,1], tokens 11 12
# give N = 7 sentences, sizes [3,1,2,1,2,1,2], byte pointers
# [0,6,8,12,14,18,20], and doc_idx [0,2,3] + [2,3]+3 + [1]+6 =
# [0,2,3,5,6,7] (M = 6): an .idx of 34 + 12*7 + 8*6 = 166 bytes.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "a b c\\nd"}\n{"text": "e f"}\n' > 1.jsonl
printf '{"text": "f\\ne d"}\n{"text": "c"}\n' > 2.jsonl
printf '{"text": "中 文"}\n' > 3.jsonl
for i in 1 2 3; do
    "$TOOLS/create-pretraining-data" -q -v "$V" -S --chinese -o p$i $i.jsonl
done
"$TOOLS/merge" -q -o out p1 p2 p3
echo "exit $?"
od -An -tx1 -v out.idx
od -An -tu2 -v out.bin
ls

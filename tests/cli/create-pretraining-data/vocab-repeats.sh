# ERNIE 3.0's vocab repeats '$' (lines 12085 and 18006), so it has 39979
# distinct tokens for 39980 ids, and (as in PaddleNLP) the '##' ids of -W
# start at 39979: '##的' gets 39979, the id of '[UNK]'.  The warnings name
# the tokens, not only the ids.  (目的 is one word: 目 ##的.)
cp "$ERNIE_VOCAB" ernie.txt
printf '{"text": "目的"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -v ernie.txt -W -o out in.jsonl
od -An -tu2 out.bin
"$TOOLS/create-pretraining-data" -q -v ernie.txt -W -o out in.jsonl

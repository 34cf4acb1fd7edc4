# -P shows the progress line every tool shows: the share of the tokens
# copied, the MB, the documents, MB/s and an ETA; then a summary.
# ERNIEKIT_PROGRESS_INTERVAL=0 draws a line at every step (stderr is a
# file here: one line each, no escapes).
V="$TESTDATA/create-pretraining-data/tiny.vocab"
awk 'BEGIN { for (i = 0; i < 3000; i++) { s = "";
        for (j = 0; j < 200; j++) s = s " a";
        print "{\"text\": \"" s "\"}" } }' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o p1 in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o p2 in.jsonl
ERNIEKIT_PROGRESS_INTERVAL=0 "$TOOLS/merge" -P -o out p1 p2 2> err
echo "exit $?"
p='^merge: [0-9]\{1,2\}%, [0-9.]* MB, [0-9]* documents'
p="$p, [0-9.]* MB/s, ETA [0-9]*:[0-9][0-9]$"
grep -q "$p" err && echo "a line below 100 % with its share and ETA"
grep -v ', ETA ' err | sed 's/[0-9][0-9.:]*/N/g' | uniq

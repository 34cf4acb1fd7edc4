# -P shows one progress line: the share done and an ETA also on a .zst
# input (from its compressed bytes read), the MB of text, the documents,
# MB/s; then a summary.  ERNIEKIT_PROGRESS_INTERVAL=0 draws a line at
# every step (stderr is a file here: one line each, no escapes).
V="$TESTDATA/create-pretraining-data/tiny.vocab"
awk 'BEGIN { srand(1); for (i = 0; i < 20000; i++) { s = "";
        for (j = 0; j < 40; j++) s = s sprintf("%c", 97 + int(rand() * 26));
        print "{\"text\": \"" s "\"}" } }' | zstd -q > in.jsonl.zst
ERNIEKIT_PROGRESS_INTERVAL=0 "$TOOLS/create-pretraining-data" -j 1 -P \
    -v "$V" -o out in.jsonl.zst 2> err
echo "exit $?"
p='^create-pretraining-data: [0-9]\{1,2\}%, [0-9.]* MB, [0-9]* documents'
p="$p, [0-9.]* MB/s, ETA [0-9]*:[0-9][0-9]$"
grep -q "$p" err && echo "a line below 100 % with its share and ETA"
grep -v ', ETA ' err | sed 's/[0-9][0-9.:]*/N/g' | uniq

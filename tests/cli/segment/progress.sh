# -P shows one progress line, as every tool does: the share done, the MB,
# the documents, MB/s and an ETA; then a summary.
# ERNIEKIT_PROGRESS_INTERVAL=0 draws a line at every step (stderr is a
# file here: one line each, no escapes).
awk 'BEGIN { srand(1); for (i = 0; i < 20000; i++) { s = "";
        for (j = 0; j < 40; j++) s = s sprintf("%c", 97 + int(rand() * 26));
        print s } }' > in.txt
ERNIEKIT_PROGRESS_INTERVAL=0 "$TOOLS/segment" -j 1 -P in.txt 2> err >/dev/null
echo "exit $?"
p='^segment: [0-9]\{1,2\}%, [0-9.]* MB, [0-9]* documents'
p="$p, [0-9.]* MB/s, ETA [0-9]*:[0-9][0-9]$"
grep -q "$p" err && echo "a line below 100 % with its share and ETA"
grep -v ', ETA ' err | sed 's/[0-9][0-9.:]*/N/g' | uniq
# Without -P, and stderr not a terminal: nothing.
"$TOOLS/segment" in.txt > /dev/null

# -o takes a prefix with a file name: 'outdir/' or a directory is a usage
# error before any input is read (it used to write outdir/.bin and
# outdir/.idx, or outdir.bin beside the directory); a missing directory is
# named as given, not by the temporary file.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "c d"}\n' > in.jsonl
"$TOOLS/create-pretraining-data" -q -v "$V" -o p in.jsonl
mkdir outdir
for o in outdir/ outdir nodir/m outdir/m; do
    "$TOOLS/merge" -q -o "$o" p > err 2>&1
    echo "-o $o: exit $?"
    head -n 1 err
done
find . -name '*.bin' -o -name '*.idx' -o -name '*tmp*' | sort

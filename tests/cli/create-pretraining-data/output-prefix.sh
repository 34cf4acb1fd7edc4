# -o names the files' prefix: one without a file name ('outdir/') or that
# is a directory is a usage error, before any work and with nothing
# written (it used to give outdir/.bin and outdir/.idx, exit 0); a missing
# directory is named as given, not by the temporary file.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
printf '{"text": "c d"}\n' > in.jsonl
run() {
    "$TOOLS/create-pretraining-data" -q -v "$V" -o "$1" in.jsonl > err 2>&1
    echo "-o $1: exit $?"
    head -n 1 err
}
run outdir/
mkdir outdir
run outdir/
run outdir
run ./outdir/.
run nodir/x
run outdir/x
find . -name '*.bin' -o -name '*.idx' -o -name '*tmp*' | sort

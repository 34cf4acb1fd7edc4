# Usage errors exit 2 with the usage line; --help and --version exit 0.
"$TOOLS/merge" p 2>&1
echo "exit $?"
"$TOOLS/merge" -o out 2>&1
echo "exit $?"
"$TOOLS/merge" -f parquet -o out p 2>&1
echo "exit $?"
"$TOOLS/merge" --bogus 2>&1 | tail -n 1
"$TOOLS/merge" --help | head -n 1
echo "exit $?"
"$TOOLS/merge" --version | sed 's/[0-9][0-9.]*$/X.Y.Z/'

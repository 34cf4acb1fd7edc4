# Usage errors exit 2 with the usage lines; --help and --version exit 0.
"$TOOLS/dataset-inspect" 2>&1
echo "exit $?"
"$TOOLS/dataset-inspect" a b 2>&1
echo "exit $?"
"$TOOLS/dataset-inspect" -t 5 p 2>&1 | head -n 1
"$TOOLS/dataset-inspect" -t 5:0 p 2>&1 | head -n 1
"$TOOLS/dataset-inspect" -d -1 p 2>&1 | head -n 1
"$TOOLS/dataset-inspect" -s x p 2>&1
echo "exit $?"
"$TOOLS/dataset-inspect" --help | head -n 2
echo "exit $?"
"$TOOLS/dataset-inspect" --version | sed 's/[0-9][0-9.]*$/X.Y.Z/'

# Empty input: empty output, success, in every format.
: > e.txt
"$TOOLS/segment" -q e.txt
"$TOOLS/segment" -q -f jsonl e.txt
echo '[]' | "$TOOLS/segment" -q -f wudao

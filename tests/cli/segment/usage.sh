# Usage errors exit 2 with the usage on stderr; --help goes to stdout.
"$TOOLS/segment" --help | head -n 2
"$TOOLS/segment" -f xml 2>&1 </dev/null | head -n 1
"$TOOLS/segment" -r spacy 2>&1 </dev/null | head -n 1
"$TOOLS/segment" -j 0 2>&1 </dev/null
echo "exit $?"
"$TOOLS/segment" --version

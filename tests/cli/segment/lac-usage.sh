# The engine options: bad values and mixes are usage errors (exit 2).
"$TOOLS/segment" --engine spacy 2>&1 </dev/null | head -n 1
"$TOOLS/segment" --lac-mode pos 2>&1 </dev/null | head -n 1
"$TOOLS/segment" --cn-seg-func thulac 2>&1 </dev/null | head -n 1
"$TOOLS/segment" --engine jieba --lac-mode seg 2>&1 </dev/null | head -n 1
"$TOOLS/segment" --engine lac -H 2>&1 </dev/null | head -n 1
"$TOOLS/segment" --engine lac --tags 2>&1 </dev/null | head -n 1
"$TOOLS/segment" --tags 2>&1 </dev/null | head -n 1
"$TOOLS/segment" --cn-seg-func jieba --tags </dev/null
echo "exit $?"
"$TOOLS/segment" --help | grep -e --engine -e --lac-mode -e --tags

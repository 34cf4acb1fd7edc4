# Invalid UTF-8 names the file and line (-s skips and counts it); an
# empty text has no words.
[ -f "$TOOLS/lac.model" ] || { echo "no lac.model (built with WITH_LAC=0)" >&2; exit 77; }
printf 'ok 一\nbad \377 二\nthree 三\n' > bad.txt
"$TOOLS/segment" -q -r none --engine lac bad.txt
echo "exit $?"
"$TOOLS/segment" -r none -s --engine lac bad.txt
printf '%s\n' '{"text": ""}' '{"text": "\u0000\u0001 \t"}' '{"text": "\ud800x"}' > odd.jsonl
"$TOOLS/segment" -q -f jsonl --lac-mode lac --tags odd.jsonl | od -c | sed 's/  */ /g'

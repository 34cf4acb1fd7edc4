# A LAC user dictionary (LAC.load_customization()): a phrase's pieces
# become words, TAG on a piece names it; a bad file names its line.
[ -f "$TOOLS/lac.model" ] || { echo "no lac.model (built with WITH_LAC=0)" >&2; exit 77; }
printf '春天/SEASON\n花 开/v\n高科 技\n' > u.txt
echo 春天来了，花开了。百度是一家高科技公司 > in.txt
"$TOOLS/segment" -q --lac-mode lac --tags in.txt
"$TOOLS/segment" -q --lac-mode lac --tags -U u.txt in.txt
"$TOOLS/segment" -q --engine lac -U u.txt in.txt
printf 'ok\n\377bad\n' > bad.txt
echo x | "$TOOLS/segment" -q --engine lac -U bad.txt
echo "exit $?"
echo x | "$TOOLS/segment" -q --engine lac -U missing.txt
echo "exit $?"

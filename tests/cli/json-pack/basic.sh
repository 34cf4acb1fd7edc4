# Documents end at blank lines; short ones are dropped and counted.
printf 'first line\nsecond "quoted" \\ line\n\nshort\n\n\t\nthird\tdoc ends here' > in.txt
"$TOOLS/json-pack" in.txt
"$TOOLS/json-pack" -q -n 0 -k content in.txt
printf 'x\n\377\n' | "$TOOLS/json-pack" -q
echo "exit $?"

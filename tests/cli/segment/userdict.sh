# A user dictionary changes the cut; a bad one names its line.
printf '杭研大厦 20\n' > u.txt
echo 他来到了网易杭研大厦 | "$TOOLS/segment" -q -w -U u.txt
printf 'ok 3\n\377bad\n' > bad.txt
echo x | "$TOOLS/segment" -q -U bad.txt
echo "exit $?"

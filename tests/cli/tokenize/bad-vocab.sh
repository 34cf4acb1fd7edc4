# A malformed vocab names the line and the problem.
printf '[PAD]\t0\n[UNK]\tone\n' > v.txt
echo hi | "$TOOLS/tokenize" -v v.txt

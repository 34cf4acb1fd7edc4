# A missing input file is reported and the others are still processed.
echo '[UNK]' > v.txt
echo 'x' > a.txt
"$TOOLS/tokenize" -t -v v.txt nope.txt a.txt

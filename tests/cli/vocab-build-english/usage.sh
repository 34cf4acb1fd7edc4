# Usage errors exit 2 with the usage on stderr; --help goes to stdout.
VB="$TOOLS/vocab-build"
"$VB" english --help | head -n 2
"$VB" english -x 2>&1
echo "exit $?"
"$VB" english 2>&1
echo "exit $?"
"$VB" english -s 0 a.txt 2>&1
echo "exit $?"
"$VB" english -s 17k a.txt 2>&1
echo "exit $?"
"$VB" english -j 0 a.txt 2>&1
echo "exit $?"
"$VB" english -j 129 a.txt 2>&1
echo "exit $?"
"$VB" english - 2>&1 </dev/null
echo "exit $?"
"$VB" english -o - a.txt 2>&1
echo "exit $?"
"$VB" english -o x.vocab -m x.vocab a.txt 2>&1
echo "exit $?"
"$VB" english --version
ls

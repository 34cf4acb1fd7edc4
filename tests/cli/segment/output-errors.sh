# An output that cannot be made is named as given ('nodir/x.txt', not its
# temporary 'nodir/x.txt.tmp.<pid>'), and a directory is refused at the
# start, not when the finished file is renamed over it.
printf '我爱北京\n' > in.txt
mkdir outdir
for o in nodir/x.txt outdir outdir/ newdir/; do
    "$TOOLS/segment" -q -o "$o" in.txt
    echo "-o $o: exit $?"
done
find . -name '*tmp*'
ls outdir

# An output that is a FIFO or a device (/dev/null) is written in place,
# not through a temporary file renamed over it, which would replace it
# with a regular file (as root, /dev/null itself).  Every tool's -o goes
# through the same code (cli_output_open).
mkfifo out.fifo
timeout 20 cat out.fifo > got &
printf '我们在北京。\n' | timeout 20 "$TOOLS/segment" -q -o out.fifo
echo "exit $?"
wait
if [ -p out.fifo ]; then echo "still a FIFO"; else echo "replaced"; fi
cat got
ls out.fifo.tmp.* 2>/dev/null || echo "no temporary file left"

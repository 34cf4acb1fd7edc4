# The cutter's look-ahead prefetches survive compilation: GCC 12 at -O2
# once deleted them without a word (see tok_prefetch() in
# libtok/tok_int.h).  The cutter's object holds five: two of the
# look-ahead, and one in each inlined table lookup.
obj=$TOOLS/libtok/tok_jieba_cut.o
command -v objdump > /dev/null || { echo "no objdump" >&2; exit 77; }
[ "$(uname -m)" = x86_64 ] || { echo "not x86-64" >&2; exit 77; }
[ -f "$obj" ] || { echo "no $obj" >&2; exit 77; }
n=$(objdump -d "$obj" | grep -c prefetcht0)
[ "$n" -ge 5 ] ||
    { echo "$obj: $n prefetch instructions, want 5 or more" >&2; exit 1; }

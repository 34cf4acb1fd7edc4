# A missing, foreign or truncated model is a clear error, exit 1.
echo 中文 | "$TOOLS/segment" -m /nonexistent/jieba.model
echo "exit $?"
echo 'not a model at all, but long enough to hold a header ............' > junk.model
for i in 1 2 3 4 5 6 7 8; do cat junk.model junk.model > j2 && mv j2 junk.model; done
echo 中文 | "$TOOLS/segment" -m junk.model
echo "exit $?"
head -c 1000000 "$TOOLS/jieba.model" > cut.model
echo 中文 | "$TOOLS/segment" -m cut.model
echo "exit $?"
# Every edge slot marked used: rejected, so no lookup can loop forever.
python3 - "$TOOLS/jieba.model" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
n_nodes, slots = struct.unpack_from('<QQ', d, 16)
off = 256 + 8 * n_nodes
for i in range(slots):
    if not struct.unpack_from('<Q', d, off + 16 * i)[0] >> 63:
        struct.pack_into('<Q', d, off + 16 * i, 1 << 63 | 1 << 42 | 1 << 21 | 0x41)
open('full.model', 'wb').write(d)
PY
echo 中文 | "$TOOLS/segment" -m full.model
echo "exit $?"
# A filter of another size than the reader's: a corrupt header.
python3 - "$TOOLS/jieba.model" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
struct.pack_into('<I', d, 232, 23)
open('filter.model', 'wb').write(d)
PY
echo 中文 | "$TOOLS/segment" -m filter.model
echo "exit $?"

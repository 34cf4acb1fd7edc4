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
# Every edge slot marked used, none left empty to end a search.
python3 - "$TOOLS/jieba.model" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
slots = struct.unpack_from('<Q', d, 24)[0]
for i in range(slots):
    if not struct.unpack_from('<Q', d, 256 + 8 * i)[0] >> 63:
        struct.pack_into('<Q', d, 256 + 8 * i, 1 << 63 | 1 << 21 | 0x41)
open('full.model', 'wb').write(d)
PY
# The table is not read whole when a model is opened: segmenting with it
# ends (no search reads more than the header's max_probe slots), with
# words that are not jieba's ...
echo 中文 | timeout 60 "$TOOLS/segment" -m full.model > /dev/null
echo "exit $?"
# ... and adding words, which needs a sound table, refuses it.
printf '杭研大厦 20\n' > u.txt
echo 中文 | "$TOOLS/segment" -m full.model -U u.txt
echo "exit $?"
# A child id out of range in the root's table: the same.
python3 - "$TOOLS/jieba.model" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
slots = struct.unpack_from('<Q', d, 24)[0]
root = 256 + 8 * slots + 524288
for cp in range(0x4E2D, 0x10000):
    v = struct.unpack_from('<Q', d, root + 8 * cp)[0]
    if v >> 63:
        struct.pack_into('<Q', d, root + 8 * cp, (v & ~0x3FFFFF) | slots)
        break
open('child.model', 'wb').write(d)
PY
echo 中文 | "$TOOLS/segment" -m child.model
echo "exit $?"
echo 中文 | "$TOOLS/segment" -m child.model -U u.txt
echo "exit $?"
# A node made its own parent: the parents never reach the root, which
# growing the table would follow for ever.
python3 - "$TOOLS/jieba.model" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
slots = struct.unpack_from('<Q', d, 24)[0]
for i in range(1, slots):
    v = struct.unpack_from('<Q', d, 256 + 8 * i)[0]
    if v >> 63 and (v >> 21) & 0x3FFFFF:
        v = (v & ~(0x3FFFFF << 21)) | (i << 21)
        struct.pack_into('<Q', d, 256 + 8 * i, v)
        break
open('cycle.model', 'wb').write(d)
PY
echo 中文 | "$TOOLS/segment" -m cycle.model
echo "exit $?"
echo 中文 | "$TOOLS/segment" -m cycle.model -U u.txt
echo "exit $?"
# A probe bound of 0, or above the number of slots: a corrupt header.
python3 - "$TOOLS/jieba.model" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
slots = struct.unpack_from('<Q', d, 24)[0]
struct.pack_into('<I', d, 236, 0)
open('probe0.model', 'wb').write(d)
struct.pack_into('<I', d, 236, slots + 1)
open('probe1.model', 'wb').write(d)
PY
for m in probe0 probe1; do
    echo 中文 | "$TOOLS/segment" -m $m.model
    echo "exit $?"
done
# A filter of another size than the reader's: a corrupt header.
python3 - "$TOOLS/jieba.model" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
struct.pack_into('<I', d, 232, 23)
open('filter.model', 'wb').write(d)
PY
echo 中文 | "$TOOLS/segment" -m filter.model
echo "exit $?"

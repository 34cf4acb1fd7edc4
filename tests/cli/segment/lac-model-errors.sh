# A missing, foreign, truncated or damaged LAC model is a clear error,
# exit 1; so is asking for a network the model lacks.
[ -f "$TOOLS/lac.model" ] || { echo "no lac.model (built with WITH_LAC=0)" >&2; exit 77; }
echo 中文 | "$TOOLS/segment" --engine lac -m /nonexistent/lac.model
echo "exit $?"
echo 中文 | LAC_MODEL=/nonexistent/x.model "$TOOLS/segment" --engine lac
echo "exit $?"
head -c 4096 "$TOOLS/jieba.model" > jieba.model
echo 中文 | "$TOOLS/segment" --engine lac -m jieba.model
echo "exit $?"
head -c 30000000 "$TOOLS/lac.model" > cut.model
echo 中文 | "$TOOLS/segment" --engine lac -m cut.model
echo "exit $?"
# One bit of the lac network's embedding flipped: its checksum; the seg
# network, not read, still opens.
python3 - "$TOOLS/lac.model" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
n, = struct.unpack_from('<I', d, 12)
for k in range(n):
    e = 128 + 64 * k
    if d[e:e + 16].rstrip(b'\0') == b'lac.emb':
        off, = struct.unpack_from('<Q', d, e + 40)
        d[off + 1000] ^= 0x10
open('flip.model', 'wb').write(d)
PY
echo 中文 | "$TOOLS/segment" -q --lac-mode lac -m flip.model
echo "exit $?"
echo 中文 | "$TOOLS/segment" -q --lac-mode seg -m flip.model
echo "exit $?"

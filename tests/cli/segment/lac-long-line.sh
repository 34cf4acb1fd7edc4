# A long line is one document: with the sentence rules, many sentences;
# without (-r none), one LAC sequence of any length, run through windows
# (memory bounded: peak resident memory printed as under or over 300 MB).
[ -f "$TOOLS/lac.model" ] || { echo "no lac.model (built with WITH_LAC=0)" >&2; exit 77; }
yes '他来到了网易杭研大厦。今天天气很好！' | tr -d '\n' | head -c 1000008 > line.txt
"$TOOLS/segment" -q -j 2 --engine lac line.txt | sort | uniq -c | sort -rn
yes '他来到了网易杭研大厦今天天气很好' | tr -d '\n' | head -c 240000 > long.txt
python3 - "$TOOLS/segment" long.txt <<'PY'
import collections, resource, subprocess, sys
out = subprocess.run([sys.argv[1], '-q', '-r', 'none', '--engine', 'lac',
                      sys.argv[2]], stdout=subprocess.PIPE, check=True).stdout
words = out.decode().split()
print(len(words), 'words', sum(map(len, words)), 'characters')
for w, n in collections.Counter(words).most_common():
    print(n, w)
kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print('peak memory', 'under' if kb < 300 * 1024 else 'over', '300 MB')
PY

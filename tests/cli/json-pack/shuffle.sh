# --shuffle is a deterministic permutation: same seed, same bytes; another
# seed, another order; no temporary files left behind.
for i in $(seq 1 500); do printf 'document number %d, long enough\n\n' $i; done > in.txt
"$TOOLS/json-pack" -q in.txt > plain.jsonl
"$TOOLS/json-pack" -q -S -s 7 -o a.jsonl in.txt
"$TOOLS/json-pack" -q -S -s 7 -o b.jsonl in.txt
"$TOOLS/json-pack" -q -S -s 8 -o c.jsonl in.txt
cmp a.jsonl b.jsonl && echo same-seed-same
cmp -s a.jsonl c.jsonl || echo other-seed-differs
cmp -s a.jsonl plain.jsonl || echo shuffled
sort a.jsonl | cmp - "$(sort plain.jsonl > sorted && echo sorted)" && echo permutation
wc -l < a.jsonl
ls

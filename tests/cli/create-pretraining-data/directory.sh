# A directory is read recursively: its *.jsonl (and *.json) files, plain or
# .zst, in sorted order; the files it gives are named, others skipped with
# a message.
V="$TESTDATA/create-pretraining-data/tiny.vocab"
mkdir -p corpus/b corpus/a
printf '{"text": "f"}\n' > corpus/b/2.jsonl
printf '{"text": "e"}\n' > corpus/b/1.jsonl
printf '{"text": "d"}\n' | zstd -q > corpus/a/x.jsonl.zst
printf '{"text": "c"}\n' > corpus/a.jsonl
printf 'not json\n' > corpus/notes.txt
"$TOOLS/create-pretraining-data" -v "$V" -o out corpus 2>&1
od -An -tu2 out.bin

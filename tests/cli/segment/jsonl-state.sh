# A bad record must not change how the next one reads: json-c's tokener
# kept a \ud800 escape of a record it rejected across json_tokener_reset(),
# and paired it with the \udef0 that starts the next record's escapes (a
# four-byte character instead of U+FFFD), so the words of a record hung on
# which records the same thread had read before, that is on -j.
printf '%s\n' '{"text": "\ud800\uzz"}' '{"text": "a\udef0b"}' > in.jsonl
"$TOOLS/segment" -q -s -f jsonl -r none in.jsonl | od -An -tx1
tail -n 1 in.jsonl > last.jsonl
"$TOOLS/segment" -q -f jsonl -r none last.jsonl | od -An -tx1

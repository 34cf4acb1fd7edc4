# WuDao's JSON array: the "content" of each element is a document; a
# broken array is an error naming the line.
cat > w.json <<'J'
[
  {"id": 1, "title": "t", "content": "第一篇。第二句！"},
  {"id": 2, "content": "another\ndoc", "dataType": "x"}
]
J
"$TOOLS/segment" -q -f wudao w.json
head -n 3 w.json > cut.json
"$TOOLS/segment" -q -f wudao cut.json
echo "exit $?"
echo '{"content": "x"}' > obj.json
"$TOOLS/segment" -q -f wudao obj.json
echo "exit $?"

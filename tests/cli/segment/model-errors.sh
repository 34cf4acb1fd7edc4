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

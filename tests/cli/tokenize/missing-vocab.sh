# A missing vocab is an error naming the file; exit 1.
echo hi | "$TOOLS/tokenize" -v /nonexistent/vocab.txt

# A 100 MB line without a newline is tokenized whole, in bounded memory
# per token, and the same for any -j.
head -c 100000000 /dev/zero | tr '\0' 'a' | sed 's/aaaaaaaaaa/hello wor /g' > line.txt
ls -l line.txt | awk '{print $5}'
"$TOOLS/tokenize" -q -j 2 -v "$BERT_VOCAB" line.txt | tr ' ' '\n' | sort | uniq -c | sort -rn | head -n 4

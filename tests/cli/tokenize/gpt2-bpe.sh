# -F gpt2-bpe: the ids and tokens of HF's ByteLevelBPETokenizer, with the
# model as a directory or as two files, on one thread or two.  Bytes whose
# symbol is not in the vocab (the emoji's) are dropped, as HF drops them.
m=$TESTDATA/tokenize/gpt2-tiny
printf 'Hello world, the caf\303\251 is here!\n  Hello   world  \n' > in.txt
printf "it's 12 caf\303\251s\tTab\nemoji \360\237\230\200 dropped\n\n" >> in.txt
printf '<|endoftext|>\n' >> in.txt
"$TOOLS/tokenize" -F gpt2-bpe -v "$m" in.txt
"$TOOLS/tokenize" -t -F gpt2-bpe -v "$m/vocab.json" -M "$m/merges.txt" in.txt
"$TOOLS/tokenize" -j 1 -F gpt2-bpe -v "$m" in.txt > j1.txt
"$TOOLS/tokenize" -j 2 -F gpt2-bpe -v "$m" - < in.txt > j2.txt
cmp j1.txt j2.txt && echo same

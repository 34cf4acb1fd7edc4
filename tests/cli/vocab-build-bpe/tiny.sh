# A tiny corpus gives exactly the vocab.json and merges.txt of HF tokenizers
# 0.20.3 ByteLevelBPETokenizer().train(files, vocab_size, min_frequency,
# special_tokens) and save_model() (checked against it when this golden
# was made): first stopped by min_frequency 2 with two special tokens,
# then by vocab_size 270 with min_frequency 1 and none.
printf 'The cat sat on the mat.\nThe dog\047s bone isn\047t "the" cat\047s.\r\n' > a.txt
printf '  the the   theme\tthen\n中文的文本，中文。\n1234 12 3.14\n\n' >> a.txt
printf 'cat mat hat that that\\nthe back\\slash' >> a.txt
"$TOOLS/vocab-build" bpe -q -s 300 -S '<|endoftext|>' -S '<pad>' -o out a.txt
cat out/merges.txt
cat out/vocab.json
echo
"$TOOLS/vocab-build" bpe -q -s 270 -m 1 -S '' -o out2 a.txt
cat out2/merges.txt

# A vocab that repeats a token loads as Hugging Face and PaddleNLP load it
# (the later line's id wins, silently there), with a warning naming the
# token and both lines; -q leaves it out.
cp "$BERT_VOCAB" v.txt
echo '的' >> v.txt
echo '的' | "$TOOLS/tokenize" -v v.txt
echo '的' | "$TOOLS/tokenize" -q -v v.txt

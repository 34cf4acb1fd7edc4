# ernie (PaddleNLP) isolates symbols; bert (Google/HF) does not.
echo '©2024 a→b' | "$TOOLS/tokenize" -t -v "$BERT_VOCAB"
echo '©2024 a→b' | "$TOOLS/tokenize" -t -F bert -v "$BERT_VOCAB"
echo 'Café ÉCOLE' | "$TOOLS/tokenize" -t -L -v "$BERT_VOCAB"

"$TOOLS/tokenize" --version

# --help prints the usage and options on stdout and exits 0.
"$TOOLS/tokenize" --help | head -n 2

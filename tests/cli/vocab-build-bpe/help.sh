# -h prints the usage and the options to stdout.
"$TOOLS/vocab-build" bpe -h

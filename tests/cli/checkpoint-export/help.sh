# --help: the usage and the options on stdout, exit 0; -V the version.
"$TOOLS/checkpoint-export" --help | sed -n '1p; /-o, --output/p; /-f, --force/p'
"$TOOLS/checkpoint-export" -V | sed 's/[0-9][0-9.]*$/X/'

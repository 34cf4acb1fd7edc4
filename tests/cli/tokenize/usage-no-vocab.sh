# A usage error prints only the usage to stderr and exits 2.
echo hi | "$TOOLS/tokenize"

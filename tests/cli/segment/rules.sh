# Sentence rules: icu breaks where ICU's sentence iterator does (trailing
# spaces dropped), none only at newlines.
printf '%s\n' 'Hello world. How are you?  I am fine! 他来了。真的吗？' > in.txt
"$TOOLS/segment" -q -r icu in.txt
"$TOOLS/segment" -q -r none in.txt

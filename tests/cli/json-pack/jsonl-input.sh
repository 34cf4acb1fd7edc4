# JSONL is already what json-pack makes: given as its input, it is refused
# (it would be wrapped in JSON again), naming the line.
printf '\n{"text": "我 爱 北京 。\\n天安门"}\n' > good.jsonl
"$TOOLS/json-pack" -q good.jsonl
echo "exit $?"
"$TOOLS/json-pack" -q -k content good.jsonl
echo "exit $?"

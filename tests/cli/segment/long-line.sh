# A 100 MB line is one document: cut whole, split by the sentence rules.
yes '他来到了网易杭研大厦。今天天气很好！' | tr -d '\n' | head -c 100000008 > line.txt
ls -l line.txt | awk '{print $5}'
"$TOOLS/segment" -q -j 2 line.txt | sort | uniq -c | sort -rn

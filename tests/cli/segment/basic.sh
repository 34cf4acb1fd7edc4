# PaddleNLP's format: one sentence a line, words joined by one space (a
# space word shows as three), a blank line after each document.
printf '%s\n' '他来到了网易杭研大厦。今天天气很好！  你好吗？Hello world; yes' '第二个文档  有空格。。。结束' '' | "$TOOLS/segment" -q
printf '%s\n' '他来到了网易杭研大厦' | "$TOOLS/segment" -q -H -w

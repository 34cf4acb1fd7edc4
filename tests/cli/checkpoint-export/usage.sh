# No checkpoint, two of them, no -o, an unknown format: usage errors (2),
# nothing made.
for args in "-o out" "-o out a b" "ckpt" "-F onnx -o out ckpt"; do
    # shellcheck disable=SC2086
    "$TOOLS/checkpoint-export" $args
    echo "exit $?"
done
test ! -e out

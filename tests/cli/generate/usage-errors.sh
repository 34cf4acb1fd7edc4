# Bad settings are usage errors that name the flag and the value, before
# any checkpoint is read: exit 2, the message, then the usage.
for args in "--top_p 0" "--top_p 1.5" "--decode_strategy topk" \
    "--temperature 0" "--max_dec_len 0" "--top_k -1" "--num_beams 99" \
    "--decode_strategy beam_search --num_beams 1" \
    "--decode_strategy beam_search --num_beams 2 --num_return_sequences 3" \
    "--device tpu" "--dtype int8" "-f xml"; do
    # shellcheck disable=SC2086
    "$TOOLS/generate" -m ckpt -p hi $args > out 2> err
    echo "exit $? $(head -n 1 err)"
    grep -q '^usage: generate' err || echo "no usage after it"
done
"$TOOLS/generate" -p hi > out 2> err
echo "exit $? $(head -n 1 err)"

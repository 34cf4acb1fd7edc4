/* SPDX-License-Identifier: MIT */
/*
 * fuzz_encode.c: encode arbitrary text with a small real-looking vocab in
 * every mode.  The first byte picks flavor, case and word limit; the rest is
 * the text.  Invariants: invalid UTF-8 is rejected with nothing written;
 * valid text gives ids that exist and offsets that are in bounds and on
 * character boundaries; the ids decode; and ids, offsets and chars are
 * those of tok_encode_reference(), which has no fast paths.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tok.h"
#include "tok_int.h"

static const char vocab_text[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\nab\n##a\n##b\n##ab\nhe\n##llo\n"
    "world\n,\n.\n!\n$\n\xe2\x82\xac\n\xe4\xb8\xad\n\xe6\x96\x87\n"
    "\xc3\xa9\n##\xc3\xa9\ni\n##\xcc\x87\n\xce\xbf\n##\xcf\x83\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tok_vocab *v;
    struct tok_tokenizer *t = NULL;
    struct tok_opts o;
    struct tok_encoding e, r;
    struct tok_buf b;
    const char *text;
    size_t len;
    int rc;

    if (size == 0)
        return 0;
    if (v == NULL && (tok_vocab_parse(&v, vocab_text, sizeof(vocab_text) - 1,
                                      "fuzz", NULL) < 0 ||
                      tok_vocab_extend_chinese(v, NULL) < 0))
        abort();
    tok_opts_init(&o, (data[0] & 1) ? TOK_FLAVOR_BERT : TOK_FLAVOR_ERNIE);
    o.lowercase = (data[0] >> 1) & 1;
    o.split_special = !((data[0] >> 2) & 1);
    o.max_chars_per_word = (data[0] >> 3) ? (size_t)(data[0] >> 3) : 100;
    text = (const char *)data + 1;
    len = size - 1;
    if (tok_tokenizer_new(&t, v, &o, NULL) < 0)
        abort();
    tok_encoding_init(&e);
    tok_encoding_init(&r);
    e.want_offsets = r.want_offsets = 1;
    e.want_chars = r.want_chars = 1;
    rc = tok_encode(t, text, len, &e, NULL);
    if (tok_encode_reference(t, text, len, &r, NULL) != rc || r.n != e.n)
        abort();
    for (size_t i = 0; i < e.n; i++)
        if (e.ids[i] != r.ids[i] || e.starts[i] != r.starts[i] ||
            e.ends[i] != r.ends[i] || e.chars[i] != r.chars[i])
            abort();
    if (tok_utf8_check(text, len) != len) {
        if (rc != TOK_EUTF8 || e.n != 0)
            abort();
    } else {
        if (rc != 0)
            abort();
        for (size_t i = 0; i < e.n; i++) {
            uint32_t cp;

            if (tok_vocab_token(v, e.ids[i], NULL) == NULL)
                abort();
            if (e.starts[i] >= e.ends[i] || e.ends[i] > len)
                abort();
            if (tok_utf8_decode(text + e.starts[i], len - e.starts[i], &cp) ==
                0)
                abort();
            if (e.ends[i] < len &&
                tok_utf8_decode(text + e.ends[i], len - e.ends[i], &cp) == 0)
                abort();
        }
        tok_buf_init(&b);
        if (tok_decode(t, e.ids, e.n, &b, NULL) != 0)
            abort();
        tok_buf_release(&b);
    }
    tok_encoding_release(&e);
    tok_encoding_release(&r);
    tok_tokenizer_free(t);
    return 0;
}

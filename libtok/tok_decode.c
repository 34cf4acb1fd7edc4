/* SPDX-License-Identifier: MIT */
/*
 * tok_decode.c: ids back to text, the way the references'
 * convert_tokens_to_string() does it: " ".join(tokens).replace(" ##", "").
 */
#include "tok_int.h"

int
tok_decode(const struct tok_tokenizer *t, const tok_id *ids, size_t n,
           struct tok_buf *out, struct tok_err *err)
{
    size_t len0 = out->len;

    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *tok = tok_vocab_token(t->vocab, ids[i], &len);
        int rc = 0;

        if (tok == NULL) {
            out->len = len0;
            if (out->data)
                out->data[len0] = '\0';
            return tok_err_set(err, TOK_ERANGE,
                               "id %ld at position %zu is not in the vocab",
                               (long)ids[i], i);
        }
        if (i > 0 && len >= 2 && tok[0] == '#' && tok[1] == '#') {
            tok += 2;
            len -= 2;
        } else if (i > 0) {
            rc = tok_buf_append(out, " ", 1);
        }
        if (rc < 0 || tok_buf_append(out, tok, len) < 0)
            return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    }
    if (out->data == NULL && tok_buf_append(out, "", 0) < 0)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    return 0;
}

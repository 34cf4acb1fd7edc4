/* SPDX-License-Identifier: MIT */
/*
 * fuzz_bpe.c: byte-level BPE on arbitrary bytes.  The first byte picks the
 * mode.  Even: the rest is text, encoded with a small fixed model (all 256
 * symbols and a few dozen merges, some making one token twice); invalid
 * UTF-8 must be rejected with nothing written, and valid text must give
 * the same ids as the reference merge, offsets that tile the text, and
 * the text back from decoding.  Odd: the rest is "vocab.json NUL
 * merges.txt" for tok_bpe_parse(); a model it accepts must be
 * self-consistent and encode a fixed text as the reference does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tok.h"
#include "tok_int.h"

/* Merges over the alphabet ("Ġ" is a space, "ä¸Ń" is 中, "ðŁĺ" starts
 * most emoji); "abab" is made by two of them. */
static const char *const merges[] = {
    "\xc4\xa0 t",
    "h e",
    "\xc4\xa0t he",
    "i n",
    "\xc4\xa0 a",
    "e r",
    "a n",
    "\xc4\xa0 s",
    "o n",
    "r e",
    "' s",
    "\xc4\xa0 \xc4\xa0",
    "\xc4\xa0\xc4\xa0 \xc4\xa0\xc4\xa0",
    "1 2",
    "12 3",
    "a b",
    "b a",
    "ab a",
    "aba b",
    "ab ab",
    "a a",
    "aa aa",
    "aaaa aaaa",
    "\xc3\xa4 \xc2\xb8",
    "\xc3\xa4\xc2\xb8 \xc5\x83",
    "\xc3\xb0 \xc5\x81",
    "\xc3\xb0\xc5\x81 \xc4\xba",
    "\xc4\x8a \xc4\x8a",
    "\xc4\x8d \xc4\x8a",
    ". .",
    ".. .",
    "\xc4\xa0 1",
    "\xc3\x83 \xc2\xa9",
    "c \xc3\x83\xc2\xa9",
    "c a",
    "ca f",
    "caf \xc3\x83\xc2\xa9",
};

static uint32_t
byte_cp(int c)
{
    uint32_t n = 0x100;

    if ((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE)
        return (uint32_t)c;
    for (int k = 0; k < c; k++)
        if (!((k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) ||
              k >= 0xAE))
            n++;
    return n;
}

static struct tok_bpe *
fixed_model(void)
{
    static char vocab[16384], merge_txt[2048];
    size_t off = 0, moff = 0;
    int id = 0;
    struct tok_bpe *b = NULL;
    struct tok_err e;

    off += (size_t)snprintf(vocab + off, sizeof(vocab) - off, "{");
    for (int c = 0; c < 256; c++) {
        char u[4];
        size_t n = tok_utf8_encode(byte_cp(c), u);

        off += (size_t)snprintf(
            vocab + off, sizeof(vocab) - off, "%s\"%s%.*s\": %d", c ? ", " : "",
            (c == '"' || c == '\\') ? "\\" : "", (int)n, u, id++);
    }
    moff += (size_t)snprintf(merge_txt, sizeof(merge_txt), "#version: 0.2\n");
    for (size_t i = 0; i < sizeof(merges) / sizeof(merges[0]); i++) {
        const char *sp = strchr(merges[i], ' ');
        char key[64];

        snprintf(key, sizeof(key), "\"%.*s%s\":", (int)(sp - merges[i]),
                 merges[i], sp + 1);
        if (strstr(vocab, key) == NULL)
            off += (size_t)snprintf(vocab + off, sizeof(vocab) - off, ", %s %d",
                                    key, id++);
        moff += (size_t)snprintf(merge_txt + moff, sizeof(merge_txt) - moff,
                                 "%s\n", merges[i]);
    }
    snprintf(vocab + off, sizeof(vocab) - off, "}");
    if (tok_bpe_parse(&b, vocab, strlen(vocab), "fuzz", merge_txt,
                      strlen(merge_txt), "fuzz", &e) < 0) {
        fprintf(stderr, "fuzz_bpe: %s\n", e.msg);
        abort();
    }
    return b;
}

/* Encode with the fast paths and the reference; they must agree. */
static void
check_encode(const struct tok_bpe *b, const char *text, size_t len,
             bool full_alphabet)
{
    struct tok_encoding e, r;
    struct tok_buf out;
    int rc, rc_ref;
    size_t prev_end = 0;

    tok_encoding_init(&e);
    tok_encoding_init(&r);
    e.want_offsets = r.want_offsets = 1;
    rc = tok_bpe_encode(b, text, len, &e, NULL);
    rc_ref = tok_bpe_encode_reference(b, text, len, &r, NULL);
    if (rc != rc_ref || e.n != r.n)
        abort();
    if (tok_utf8_check(text, len) != len) {
        if (rc != TOK_EUTF8 || e.n != 0)
            abort();
        goto out;
    }
    if (rc != 0)
        abort();
    for (size_t i = 0; i < e.n; i++) {
        if (e.ids[i] != r.ids[i] || e.starts[i] != r.starts[i] ||
            e.ends[i] != r.ends[i])
            abort();
        if (tok_bpe_token(b, e.ids[i], NULL) == NULL)
            abort();
        if (e.starts[i] < prev_end || e.ends[i] <= e.starts[i] ||
            e.ends[i] > len)
            abort();
        /* With every byte in the vocab nothing is dropped: they tile. */
        if (full_alphabet && e.starts[i] != prev_end)
            abort();
        prev_end = e.ends[i];
    }
    if (full_alphabet && prev_end != len)
        abort();
    tok_buf_init(&out);
    if (tok_bpe_decode(b, e.ids, e.n, &out, NULL) != 0)
        abort();
    if (full_alphabet && (out.len != len || memcmp(out.data, text, len) != 0))
        abort();
    tok_buf_release(&out);
out:
    tok_encoding_release(&e);
    tok_encoding_release(&r);
}

static void
check_parsed(const uint8_t *data, size_t size)
{
    static const char text[] = "Hello, world! It's 2024: a  b\t\xe4\xb8\xad "
                               "abab ab ba \xf0\x9f\x98\x80 x";
    const uint8_t *nul = memchr(data, '\0', size);
    size_t vlen = nul ? (size_t)(nul - data) : size;
    struct tok_bpe *b = (struct tok_bpe *)1;
    struct tok_err e;

    if (tok_bpe_parse(&b, (const char *)data, vlen, "fuzz",
                      nul ? (const char *)nul + 1 : "",
                      nul ? size - vlen - 1 : 0, "fuzz", &e) < 0) {
        if (b != NULL || e.code >= 0)
            abort();
        return;
    }
    for (tok_id id = 0; id < 4096; id++) {
        size_t len;
        const char *t = tok_bpe_token(b, id, &len);

        if (t != NULL && tok_bpe_find(b, t, len) != id)
            abort();
    }
    check_encode(b, text, sizeof(text) - 1, false);
    tok_bpe_free(b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tok_bpe *fixed;

    if (size == 0)
        return 0;
    if (data[0] & 1) {
        check_parsed(data + 1, size - 1);
        return 0;
    }
    if (fixed == NULL)
        fixed = fixed_model();
    check_encode(fixed, (const char *)data + 1, size - 1, true);
    return 0;
}

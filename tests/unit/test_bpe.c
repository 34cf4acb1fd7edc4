/* SPDX-License-Identifier: MIT */
/*
 * test_bpe.c: unit tests of libtok's byte-level BPE on tiny hand-made
 * vocab.json/merges.txt files: merge order and ties, the pre-tokenizer,
 * dropped bytes, offsets, HF's merges.txt rules, load errors naming the
 * file and line, decoding, and the fast paths against the reference
 * merge.  Agreement with Hugging Face tokenizers on real text is tested by
 * tests/conformance/bpe_run.py.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness.h"
#include "tok.h"
#include "tok_int.h"

/* "Ġ" (U+0120), the alphabet's space. */
#define SP "\xc4\xa0"

static char tmp_dir[] = "/tmp/test_bpe.XXXXXX";
static char vocab_path[64], merges_path[64];
/* Whether tmp_dir was made (its random suffix may itself hold an 'X'). */
static int tmp_made;

/* Write the two files into the test's directory and load them. */
static struct tok_bpe *
load(const char *vocab, const char *merges, struct tok_err *e)
{
    struct tok_bpe *b = NULL;
    FILE *f;

    if (!tmp_made) {
        if (mkdtemp(tmp_dir) == NULL)
            return NULL;
        tmp_made = 1;
    }
    snprintf(vocab_path, sizeof(vocab_path), "%s/vocab.json", tmp_dir);
    snprintf(merges_path, sizeof(merges_path), "%s/merges.txt", tmp_dir);
    if ((f = fopen(vocab_path, "w")) == NULL)
        return NULL;
    fputs(vocab, f);
    fclose(f);
    if ((f = fopen(merges_path, "w")) == NULL)
        return NULL;
    fputs(merges, f);
    fclose(f);
    if (tok_bpe_load(&b, vocab_path, merges_path, e) < 0)
        return NULL;
    return b;
}

/* Encode and render as space-separated tokens (and check the reference
 * merge agrees). */
static void
encode_tokens(const struct tok_bpe *b, const char *text, char *buf, size_t cap)
{
    struct tok_encoding e, r;
    size_t off = 0;

    tok_encoding_init(&e);
    tok_encoding_init(&r);
    buf[0] = '\0';
    if (tok_bpe_encode(b, text, strlen(text), &e, NULL) == 0) {
        for (size_t i = 0; i < e.n; i++) {
            const char *s = tok_bpe_token(b, e.ids[i], NULL);

            off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? " " : "",
                                    s ? s : "?");
        }
    }
    CHECK_EQ_INT(tok_bpe_encode_reference(b, text, strlen(text), &r, NULL), 0);
    CHECK_EQ_INT(r.n, e.n);
    if (r.n == e.n)
        CHECK_EQ_MEM(r.ids, e.ids, e.n * sizeof(*e.ids));
    tok_encoding_release(&e);
    tok_encoding_release(&r);
}

/* bytes_to_unicode(), restated. */
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

/* A vocab.json of the 256 alphabet symbols (ids 0..255) and then `extra`
 * (JSON members, may be ""), into buf. */
static void
alphabet_vocab(char *buf, size_t cap, const char *extra)
{
    size_t off = 0;

    off += (size_t)snprintf(buf + off, cap - off, "{");
    for (int c = 0; c < 256; c++) {
        char u[4];
        size_t n = tok_utf8_encode(byte_cp(c), u);
        const char *esc = (c == '"' || c == '\\') ? "\\" : "";

        off += (size_t)snprintf(buf + off, cap - off, "%s\"%s%.*s\": %d",
                                c ? ", " : "", esc, (int)n, u, c);
    }
    snprintf(buf + off, cap - off, "%s%s}", *extra ? ", " : "", extra);
}

/* ------------------------------------------------------------------ load */

static void
test_bpe_load_counts_and_lookups(void)
{
    struct tok_err e;
    struct tok_bpe *b = load("{\"a\": 0, \"b\": 1, \"ab\": 2, \"c\": 7, "
                             "\"x\": null, \"y\": \"3\", \"z\": [1]}",
                             "#version: 0.2\na b\n", &e);
    size_t len;

    CHECK(b != NULL);
    if (b == NULL)
        return;
    /* Values that are not numbers are ignored, as HF does. */
    CHECK_EQ_INT(tok_bpe_vocab_size(b), 4);
    CHECK_EQ_INT(tok_bpe_n_merges(b), 1);
    CHECK_EQ_INT(tok_bpe_find(b, "ab", 2), 2);
    CHECK_EQ_INT(tok_bpe_find(b, "c", 1), 7);
    CHECK_EQ_INT(tok_bpe_find(b, "x", 1), -1);
    CHECK_EQ_INT(tok_bpe_find(b, "abc", 3), -1);
    CHECK_EQ_STR(tok_bpe_token(b, 2, &len), "ab");
    CHECK_EQ_INT(len, 2);
    CHECK(tok_bpe_token(b, 3, NULL) == NULL);
    CHECK(tok_bpe_token(b, -1, NULL) == NULL);
    tok_bpe_free(b);
    tok_bpe_free(NULL);
}

static void
test_bpe_merges_file_rules(void)
{
    struct tok_err e;
    /* CRLF, "#version" anywhere, no final newline, and a pair listed twice
     * keeps its last rank: "b c" (rank 2) loses to "a b" (rank 1). */
    struct tok_bpe *b =
        load("{\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"bc\": 4}",
             "#version: 0.2\r\nb c\r\n#version again\na b\r\nb c", &e);
    char buf[64];

    CHECK(b != NULL);
    if (b == NULL)
        return;
    CHECK_EQ_INT(tok_bpe_n_merges(b), 2);
    encode_tokens(b, "abc", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "ab c");
    tok_bpe_free(b);
}

static void
test_bpe_load_errors_name_file_and_line(void)
{
    static const char vocab[] =
        "{\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"x y\": 4}";
    static const struct {
        const char *vocab, *merges;
        bool in_merges;  /* the message names merges.txt */
        const char *msg; /* what follows the file's name */
    } cases[] = {
        { vocab, "#version: 0.2\na b\na  b\n", true,
          "' line 3: expected two tokens separated by one space" },
        { vocab, "a b c\n", true,
          "' line 1: expected two tokens separated by one space" },
        { vocab, "a b\nab\n", true,
          "' line 2: expected two tokens separated by one space" },
        { vocab, "a b\n\n", true,
          "' line 2: expected two tokens separated by one space" },
        { vocab, "a b\nd a\n", true, "' line 2: 'd' is not in the vocab" },
        { vocab, "a d\n", true, "' line 1: 'd' is not in the vocab" },
        /* The merged token must be in the vocab too. */
        { vocab, "a b\nb c\n", true, "' line 2: 'bc' is not in the vocab" },
        { vocab, "a\xff b\n", true, "' line 1: invalid UTF-8" },
        { "{\"a\": 0,\n \"b\": }", "", false,
          "' line 2 column 7: invalid JSON" },
        { "{\"a\": 0", "", false,
          "' line 1 column 8: invalid JSON: unexpected end" },
        { "[\"a\"]", "", false, "': not a JSON object of token: id" },
        { "{\"a\": 0} x", "", false,
          "' line 1 column 10: text after the JSON" },
        { "{\"a\": 1.5}", "", false, "': the id of 'a' is not an integer" },
        { "{\"a\": -1}", "", false, "': the id of 'a' is out of range" },
        { "{\"a\": 2147483648}", "", false,
          "': the id of 'a' is out of range" },
        { "{\"a\xff\": 0}", "", false, "': invalid UTF-8 at byte offset 3" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tok_err e;
        struct tok_bpe *b;
        const char *path, *at;

        memset(&e, 0, sizeof(e));
        b = load(cases[i].vocab, cases[i].merges, &e);
        CHECK(b == NULL);
        tok_bpe_free(b);
        CHECK_EQ_INT(e.code, TOK_EFORMAT);
        path = cases[i].in_merges ? merges_path : vocab_path;
        at = strstr(e.msg, path);
        CHECK(at != NULL);
        if (at == NULL || strstr(at + strlen(path), cases[i].msg) == NULL) {
            fprintf(stderr, "case %zu: got \"%s\", want \"...%s\"\n", i, e.msg,
                    cases[i].msg);
            CHECK(0);
        }
    }
}

static void
test_bpe_load_missing_file(void)
{
    struct tok_bpe *b = (struct tok_bpe *)1;
    struct tok_err e;

    CHECK_EQ_INT(tok_bpe_load(&b, "/nonexistent/vocab.json", "/dev/null", &e),
                 TOK_EIO);
    CHECK(b == NULL);
    CHECK_EQ_STR(e.msg, "cannot open vocab '/nonexistent/vocab.json': No "
                        "such file or directory");
    CHECK_EQ_INT(tok_bpe_parse(&b, "{}", 2, "v", "", 0, "m", &e), 0);
    CHECK(b != NULL);
    CHECK_EQ_INT(tok_bpe_vocab_size(b), 0);
    tok_bpe_free(b);
}

/* ----------------------------------------------------------------- merge */

static void
test_bpe_merge_lowest_rank_first(void)
{
    static const char vocab[] = "{\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, "
                                "\"bc\": 4, \"abc\": 5}";
    char buf[64];
    struct tok_bpe *b;

    /* "b c" outranks "a b": bc first, then a+bc. */
    b = load(vocab, "b c\na b\na bc\n", NULL);
    CHECK(b != NULL);
    encode_tokens(b, "abc", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "abc");
    tok_bpe_free(b);
    /* The other way round, ab is made and ab+c has no merge. */
    b = load(vocab, "a b\nb c\na bc\n", NULL);
    CHECK(b != NULL);
    encode_tokens(b, "abc", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "ab c");
    encode_tokens(b, "cab", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "c ab");
    tok_bpe_free(b);
}

static void
test_bpe_merge_tie_goes_left(void)
{
    struct tok_bpe *b = load("{\"a\": 0, \"aa\": 1}", "a a\n", NULL);
    char buf[64];

    CHECK(b != NULL);
    encode_tokens(b, "aaa", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "aa a");
    encode_tokens(b, "aaaaa", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "aa aa a");
    tok_bpe_free(b);
}

/* The pre-tokenizer: GPT-2's regex decides what may merge. */
static void
test_bpe_pretokenizer(void)
{
    char vocab[8192], buf[256];
    struct tok_bpe *b;

    alphabet_vocab(vocab, sizeof(vocab),
                   "\"" SP "b\": 256, \"'s\": 257, \"" SP SP "\": 258, "
                   "\"ab\": 259, \"a1\": 260, \"" SP "1\": 261, \"!!\": 262, "
                   "\"!\xc3\x82\": 263");
    b = load(vocab,
             SP " b\n' s\n" SP " " SP "\na b\na 1\n" SP " 1\n! !\n! \xc3\x82\n",
             NULL);
    CHECK(b != NULL);
    if (b == NULL)
        return;
    /* A run of spaces leaves its last space to the next word. */
    encode_tokens(b, "a   b", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "a " SP SP " " SP "b");
    /* Trailing spaces stay together. */
    encode_tokens(b, "ab   ", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "ab " SP SP " " SP);
    /* Letters and digits are separate pieces; contractions are lower case
     * and their own piece. */
    encode_tokens(b, "a1 1", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "a 1 " SP "1");
    encode_tokens(b, "ab's 'S", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "ab 's " SP " ' S");
    /* Punctuation runs merge; a tab is not a space. */
    encode_tokens(b, "!!\tb", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "!! \xc4\x89 b");
    /* U+0085 (C2 85: "Âħ") is white space, as Oniguruma's \s, so "!" does
     * not take it into its piece and cannot merge with its "Â". */
    encode_tokens(b, "!\xc2\x85", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "! \xc3\x82 \xc4\xa7");
    encode_tokens(b, "!\xc2\xa7", buf, sizeof(buf)); /* U+00A7 is not */
    CHECK_EQ_STR(buf, "!\xc3\x82 \xc2\xa7");
    tok_bpe_free(b);
}

/* ------------------------------------------------------------ encode/decode */

static void
test_bpe_dropped_bytes_and_offsets(void)
{
    /* "é" is C3 A9, "Ã" and "©" in the alphabet; only "Ã" is a token. */
    struct tok_bpe *b =
        load("{\"a\": 0, \"\xc3\x83\": 1, \"b\": 2, \"ab\": 3}", "a b\n", NULL);
    struct tok_encoding e;
    static const char text[] = "a\xc3\xa9"
                               "b ab";

    CHECK(b != NULL);
    if (b == NULL)
        return;
    tok_encoding_init(&e);
    e.want_offsets = 1;
    /* "aéb" is one piece: a, Ã, (© dropped), b; " ab": the space is not in
     * the vocab, so it is dropped and ab covers bytes 6..7. */
    CHECK_EQ_INT(tok_bpe_encode(b, text, strlen(text), &e, NULL), 0);
    CHECK_EQ_INT(e.n, 4);
    if (e.n == 4) {
        CHECK_EQ_INT(e.ids[0], 0);
        CHECK_EQ_INT(e.ids[1], 1);
        CHECK_EQ_INT(e.ids[2], 2);
        CHECK_EQ_INT(e.ids[3], 3);
        CHECK_EQ_INT(e.starts[1], 1);
        CHECK_EQ_INT(e.ends[1], 2); /* half of "é" */
        CHECK_EQ_INT(e.starts[2], 3);
        CHECK_EQ_INT(e.starts[3], 5);
        CHECK_EQ_INT(e.ends[3], 7);
    }
    tok_encoding_release(&e);
    tok_bpe_free(b);
}

static void
test_bpe_encode_invalid_utf8(void)
{
    struct tok_bpe *b = load("{\"a\": 0}", "", NULL);
    struct tok_encoding e;
    struct tok_err err;

    CHECK(b != NULL);
    tok_encoding_init(&e);
    CHECK_EQ_INT(tok_bpe_encode(b, "a", 1, &e, NULL), 0);
    CHECK_EQ_INT(tok_bpe_encode(b, "aa\xc3", 3, &e, &err), TOK_EUTF8);
    CHECK_EQ_INT(e.n, 1); /* nothing appended */
    CHECK_EQ_STR(err.msg, "invalid UTF-8 at byte offset 2 (byte 0xC3)");
    CHECK_EQ_INT(tok_bpe_encode(b, "", 0, &e, NULL), 0);
    CHECK_EQ_INT(e.n, 1);
    tok_encoding_release(&e);
    tok_bpe_free(b);
}

static void
test_bpe_decode_roundtrip_and_unknown_id(void)
{
    char vocab[8192];
    struct tok_bpe *b;
    struct tok_encoding e;
    struct tok_buf out;
    struct tok_err err;
    static const char text[] =
        "Hello  world\t\r\n caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 "
        "\xf0\x9f\x98\x80 \"q\" \\ <|endoftext|>\x01";
    tok_id bad[2], ids3[3];

    alphabet_vocab(vocab, sizeof(vocab),
                   "\"" SP "w\": 256, \"<|endoftext|>\": 257, \"\xc3\xa9\": "
                   "258, \"\xe4\xb8\xad\": 259");
    b = load(vocab, SP " w\n", NULL);
    CHECK(b != NULL);
    if (b == NULL)
        return;
    tok_encoding_init(&e);
    tok_buf_init(&out);
    CHECK_EQ_INT(tok_bpe_encode(b, text, strlen(text), &e, NULL), 0);
    CHECK_EQ_INT(tok_bpe_decode(b, e.ids, e.n, &out, NULL), 0);
    CHECK_EQ_INT(out.len, strlen(text));
    CHECK_EQ_STR(out.data, text);
    /* Each character of the alphabet is one byte ("é" is the symbol of
     * byte E9); a token with another character ("中") is copied. */
    tok_buf_clear(&out);
    ids3[0] = 257;
    ids3[1] = 258;
    ids3[2] = 259;
    CHECK_EQ_INT(tok_bpe_decode(b, ids3, 3, &out, NULL), 0);
    CHECK_EQ_INT(out.len, 17);
    CHECK_EQ_MEM(out.data, "<|endoftext|>\xe9\xe4\xb8\xad", 17);
    /* An unknown id: TOK_ERANGE, out as it was. */
    tok_buf_clear(&out);
    CHECK_EQ_INT(tok_buf_append(&out, "x", 1), 0);
    bad[0] = 1;
    bad[1] = 999;
    CHECK_EQ_INT(tok_bpe_decode(b, bad, 2, &out, &err), TOK_ERANGE);
    CHECK_EQ_STR(err.msg, "id 999 at position 1 is not in the vocab");
    CHECK_EQ_INT(out.len, 1);
    CHECK_EQ_STR(out.data, "x");
    tok_buf_release(&out);
    tok_encoding_release(&e);
    tok_bpe_free(b);
}

/* A word of more than SCAN_MAX symbols takes the reference merge; so does
 * every word when two tokens share an id. */
static void
test_bpe_long_word_and_shared_ids(void)
{
    static const char merges[] = "a b\nab ab\nb a\n";
    struct tok_bpe *b = load("{\"a\": 0, \"b\": 1, \"ab\": 2, \"abab\": 3, "
                             "\"ba\": 4}",
                             merges, NULL);
    char word[81], buf[512], want[512];

    CHECK(b != NULL);
    if (b == NULL)
        return;
    for (int i = 0; i < 80; i++)
        word[i] = (char)(i % 2 ? 'b' : 'a');
    word[80] = '\0';
    encode_tokens(b, word, buf, sizeof(buf));
    for (int i = 0, off = 0; i < 20; i++)
        off += snprintf(want + off, sizeof(want) - (size_t)off, "%s",
                        i ? " abab" : "abab");
    CHECK_EQ_STR(buf, want);
    tok_bpe_free(b);
    /* Two tokens with one id: merges go by the reference algorithm. */
    b = load("{\"a\": 0, \"b\": 1, \"ab\": 2, \"ba\": 2}", "a b\nb a\n", NULL);
    CHECK(b != NULL);
    if (b == NULL)
        return;
    encode_tokens(b, "aba", buf, sizeof(buf));
    CHECK(strcmp(buf, "ab a") == 0 || strcmp(buf, "ba a") == 0);
    tok_bpe_free(b);
}

struct job {
    const struct tok_bpe *b;
    size_t n_ids;
    tok_id first, last;
};

static void *
thread_main(void *arg)
{
    struct job *j = arg;
    struct tok_encoding e;
    static const char text[] = "abc abc cab bca aaa";

    tok_encoding_init(&e);
    for (int k = 0; k < 1000; k++) {
        tok_encoding_clear(&e);
        tok_bpe_encode(j->b, text, strlen(text), &e, NULL);
    }
    j->n_ids = e.n;
    j->first = e.n ? e.ids[0] : -1;
    j->last = e.n ? e.ids[e.n - 1] : -1;
    tok_encoding_release(&e);
    return NULL;
}

static void
test_bpe_threads_share_model(void)
{
    char vocab[8192];
    struct tok_bpe *b;
    pthread_t tid[4];
    struct job jobs[4];

    alphabet_vocab(vocab, sizeof(vocab),
                   "\"ab\": 256, \"abc\": 257, \"" SP "c\": 258, \"" SP
                   "ca\": 259");
    b = load(vocab, "a b\nab c\n" SP " c\n" SP "c a\n", NULL);
    CHECK(b != NULL);
    if (b == NULL)
        return;
    for (int i = 0; i < 4; i++) {
        jobs[i].b = b;
        pthread_create(&tid[i], NULL, thread_main, &jobs[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
        /* abc Ġ abc Ġc ab Ġ b c a Ġ a a a */
        CHECK_EQ_INT(jobs[i].n_ids, 13);
        CHECK_EQ_INT(jobs[i].first, 257);
        CHECK_EQ_INT(jobs[i].last, 'a');
    }
    tok_bpe_free(b);
}

static void
cleanup(void)
{
    if (tmp_made) {
        unlink(vocab_path);
        unlink(merges_path);
        rmdir(tmp_dir);
    }
}

static void
test_bpe_cleanup(void)
{
    cleanup();
    CHECK(access(tmp_dir, F_OK) != 0);
}

TESTS(test_bpe, TEST(test_bpe_load_counts_and_lookups),
      TEST(test_bpe_merges_file_rules),
      TEST(test_bpe_load_errors_name_file_and_line),
      TEST(test_bpe_load_missing_file), TEST(test_bpe_merge_lowest_rank_first),
      TEST(test_bpe_merge_tie_goes_left), TEST(test_bpe_pretokenizer),
      TEST(test_bpe_dropped_bytes_and_offsets),
      TEST(test_bpe_encode_invalid_utf8),
      TEST(test_bpe_decode_roundtrip_and_unknown_id),
      TEST(test_bpe_long_word_and_shared_ids),
      TEST(test_bpe_threads_share_model), TEST(test_bpe_cleanup))

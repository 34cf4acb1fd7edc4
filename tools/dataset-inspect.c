/* SPDX-License-Identifier: MIT */
/*
 * dataset-inspect: what a token dataset holds.  Without an option it
 * prints the format, the files, the dtype and the counts, with the spread
 * of sentence lengths and of sentences per document; -d, -s and -t print a
 * document, a sentence or a range of tokens, as ids or, given the vocab,
 * as text.  Everything is read through libdata.  See dataset-inspect(1).
 */
#include <err.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ds.h"
#include "tok.h"
#include "banned.h"

/* Ranges are read and printed in chunks of this many tokens. */
#define CHUNK_TOKENS (1u << 16)

/* What to print, in the order of the command line. */
struct selection {
    char kind; /* 'd', 's' or 't' */
    uint64_t a, b;
};

/* A vocab to turn ids into text: WordPiece or byte-level BPE. */
struct decoder {
    const char *path;
    struct tok_vocab *vocab;
    struct tok_tokenizer *tok;
    struct tok_bpe *bpe;
};

struct inspector {
    const struct ds_dataset *d;
    struct decoder *dec; /* NULL: ids */
    bool json;
    int32_t *ids; /* CHUNK_TOKENS + 1 */
    struct tok_buf text;
    char *line; /* the output being built, flushed when large */
    size_t len, cap;
};

static void
usage(void)
{
    fprintf(stderr, "usage: dataset-inspect [-hjV] [-d document] "
                    "[-s sentence] [-t pos:count]\n"
                    "                       [-v vocab] prefix\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: dataset-inspect [-hjV] [-d document] [-s sentence] "
           "[-t pos:count]\n"
           "                       [-v vocab] prefix\n"
           "\n"
           "Show what the token dataset PREFIX (PREFIX.bin + PREFIX.idx, "
           "or PREFIX_ids.npy +\nPREFIX_idx.npz) holds: with no option, "
           "its format, files, dtype and counts, one\n'key: value' a line.  "
           "Numbers count from 0.\n"
           "\n"
           "  -d, --document N      print document N, one sentence a line\n"
           "  -s, --sentence N      print sentence N\n"
           "  -t, --tokens POS:N    print the N tokens from position POS\n"
           "  -v, --vocab PATH      print text, not ids: vocab.txt "
           "(WordPiece), vocab.json\n"
           "                        with merges.txt beside it (GPT-2 BPE), "
           "or a directory\n"
           "                        holding either\n"
           "  -j, --json            print JSON: one object a line\n"
           "  -h, --help            show this help and exit\n"
           "  -V, --version         show the version and exit\n"
           "\n"
           "-d, -s and -t may be given several times, and are printed in "
           "order.\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad dataset, number "
           "out of range),\n2 usage error.\n");
    exit(0);
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

static void
flush_line(struct inspector *in)
{
    if (in->len > 0 && fwrite(in->line, 1, in->len, stdout) != in->len)
        err(1, "stdout");
    in->len = 0;
}

static void
put(struct inspector *in, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (in->len + n > in->cap) {
        size_t cap = in->cap ? in->cap : 1 << 16;
        char *p;

        flush_line(in);
        while (cap < n)
            cap *= 2;
        if (cap > in->cap) {
            p = realloc(in->line, cap);
            if (p == NULL)
                err(1, NULL);
            in->line = p;
            in->cap = cap;
        }
    }
    memcpy(in->line + in->len, s, n);
    in->len += n;
}

static void
puts_(struct inspector *in, const char *s)
{
    put(in, s, strlen(s));
}

static void
put_u64(struct inspector *in, uint64_t v)
{
    char b[24];
    size_t i = sizeof(b);

    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    put(in, b + i, sizeof(b) - i);
}

static void
put_id(struct inspector *in, int32_t v)
{
    if (v < 0) {
        put(in, "-", 1);
        put_u64(in, 0 - (uint64_t)(int64_t)v);
    } else {
        put_u64(in, (uint64_t)v);
    }
}

/* The longest prefix of s[0..n) that does not end inside a UTF-8
 * sequence (the rest may be completed by the next chunk). */
static size_t
complete_prefix(const char *s, size_t n)
{
    size_t i = n, back = 0;
    unsigned char c;
    size_t need;

    while (i > 0 && back < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return n;
    c = (unsigned char)s[i - 1];
    need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return n - (i - 1) < need ? i - 1 : n;
}

/* Text bytes: as they are, except that a newline or carriage return is
 * written \n or \r so that it cannot end the line; in JSON, the body of a
 * JSON string, with invalid UTF-8 replaced by U+FFFD. */
static void
put_text(struct inspector *in, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t from = 0, i = 0;

    if (n == 0)
        return;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
        const char *rep = esc;
        size_t k = 1, rep_len = 2;
        uint32_t cp;

        if (c == '\n')
            esc[1] = 'n';
        else if (c == '\r')
            esc[1] = 'r';
        else if (!in->json) {
            i++;
            continue;
        } else if (c == '"' || c == '\\')
            esc[1] = (char)c;
        else if (c == '\t')
            esc[1] = 't';
        else if (c < 0x20)
            rep_len = 6;
        else if (c < 0x80) {
            i++;
            continue;
        } else if ((k = tok_utf8_decode(s + i, n - i, &cp)) > 0) {
            i += k;
            continue;
        } else {
            rep = "\\ufffd";
            rep_len = 6;
            k = 1;
        }
        put(in, s + from, i - from);
        put(in, rep, rep_len);
        i += k;
        from = i;
    }
    put(in, s + from, n - from);
}

/* ------------------------------------------------------------------------ */
/* Vocab                                                                     */

static bool
is_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool
ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);

    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Load -v PATH: a vocab.txt (WordPiece), a vocab.json with merges.txt in
 * its directory (BPE), or a directory holding vocab.txt or vocab.json. */
static void
decoder_load(struct decoder *dec, const char *path)
{
    struct tok_err e;
    struct stat st;
    char *txt = NULL, *json = NULL, *merges = NULL;

    memset(dec, 0, sizeof(*dec));
    dec->path = path;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (asprintf(&txt, "%s/vocab.txt", path) < 0)
            err(1, NULL);
        if (!is_file(txt)) {
            free(txt);
            txt = NULL;
            if (asprintf(&json, "%s/vocab.json", path) < 0)
                err(1, NULL);
            if (!is_file(json))
                errx(1,
                     "vocab directory '%s' has neither vocab.txt nor "
                     "vocab.json",
                     path);
        }
    } else if (ends_with(path, ".json")) {
        json = strdup(path);
        if (json == NULL)
            err(1, NULL);
    } else {
        txt = strdup(path);
        if (txt == NULL)
            err(1, NULL);
    }
    if (json != NULL) {
        const char *slash = strrchr(json, '/');

        if (asprintf(&merges, "%.*smerges.txt",
                     slash ? (int)(slash - json + 1) : 0, json) < 0)
            err(1, NULL);
        if (tok_bpe_load(&dec->bpe, json, merges, &e) < 0)
            errx(1, "%s", e.msg);
    } else {
        struct tok_opts o;

        /* Stored data holds the "##<CJK>" ids of whole-word marking. */
        if (tok_vocab_load(&dec->vocab, txt, &e) < 0 ||
            tok_vocab_extend_chinese(dec->vocab, &e) < 0)
            errx(1, "%s", e.msg);
        tok_opts_init(&o, TOK_FLAVOR_ERNIE);
        if (tok_tokenizer_new(&dec->tok, dec->vocab, &o, &e) < 0)
            errx(1, "%s", e.msg);
    }
    free(txt);
    free(json);
    free(merges);
}

static void
decoder_free(struct decoder *dec)
{
    tok_tokenizer_free(dec->tok);
    tok_vocab_free(dec->vocab);
    tok_bpe_free(dec->bpe);
}

/* ------------------------------------------------------------------------ */
/* Ranges                                                                    */

/* Print tokens [pos, pos + n) as ids separated by spaces (JSON: commas),
 * or as their text, reading them in chunks.  `what` names the range in
 * messages.  Returns 0, or -1 after a warning. */
static int
put_range(struct inspector *in, uint64_t pos, uint64_t n, const char *what)
{
    /* Chunks are read to in->ids + 1; in->ids[0] keeps the last id of the
     * chunk before, for WordPiece. */
    int32_t *ids = in->ids + 1;
    bool more = false; /* a chunk came before */
    struct ds_err e;
    struct tok_err te;

    tok_buf_clear(&in->text);
    for (uint64_t done = 0; done < n; more = true) {
        size_t k = n - done < CHUNK_TOKENS ? (size_t)(n - done) : CHUNK_TOKENS;
        size_t old = in->text.len, dup = 0, ok;
        int rc;

        if (ds_read_tokens(in->d, pos + done, k, ids, &e) < 0) {
            warnx("%s", e.msg);
            return -1;
        }
        if (in->dec == NULL) {
            for (size_t i = 0; i < k; i++) {
                if (i > 0 || more)
                    puts_(in, in->json ? ", " : " ");
                put_id(in, ids[i]);
            }
            done += k;
            continue;
        }
        for (size_t i = 0; i < k; i++)
            if ((in->dec->bpe
                     ? tok_bpe_token(in->dec->bpe, ids[i], NULL)
                     : tok_vocab_token(in->dec->vocab, ids[i], NULL)) == NULL) {
                warnx("%s: id %" PRId32 " (token %" PRIu64 ") is not in the "
                      "vocab '%s'",
                      what, ids[i], pos + done + i, in->dec->path);
                return -1;
            }
        done += k;
        if (in->dec->bpe) {
            rc = tok_bpe_decode(in->dec->bpe, ids, k, &in->text, &te);
        } else if (!more) {
            rc = tok_decode(in->dec->tok, ids, k, &in->text, &te);
        } else {
            /* Decoded after the last id of the chunk before, so that a
             * "##" piece is joined to it; that id's text, printed already,
             * is then cut out again. */
            tok_vocab_token(in->dec->vocab, in->ids[0], &dup);
            rc = tok_decode(in->dec->tok, in->ids, k + 1, &in->text, &te);
        }
        if (rc < 0) /* the ids are known: only TOK_ENOMEM is left */
            errx(1, "%s", te.msg);
        in->ids[0] = ids[k - 1];
        memmove(in->text.data + old, in->text.data + old + dup,
                in->text.len - old - dup);
        in->text.len -= dup;
        /* A character split between two chunks waits for the next. */
        ok = complete_prefix(in->text.data, in->text.len);
        put_text(in, in->text.data, ok);
        memmove(in->text.data, in->text.data + ok, in->text.len - ok);
        in->text.len -= ok;
    }
    if (in->dec != NULL)
        put_text(in, in->text.data, in->text.len);
    return 0;
}

/* A range as one output line: ids or text, or in JSON "tokens": [...] and
 * with a vocab "text": "...". */
static int
put_range_line(struct inspector *in, uint64_t pos, uint64_t n, const char *what)
{
    struct decoder *dec = in->dec;
    int rc;

    if (!in->json)
        return put_range(in, pos, n, what);
    puts_(in, "\"tokens\": [");
    in->dec = NULL;
    rc = put_range(in, pos, n, what);
    in->dec = dec;
    puts_(in, "]");
    if (rc == 0 && dec != NULL) {
        puts_(in, ", \"text\": \"");
        rc = put_range(in, pos, n, what);
        puts_(in, "\"");
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The three selections and the counts                                       */

/* The document that holds sentence s: the last k with doc_idx[k] <= s. */
static uint64_t
document_of(const struct ds_dataset *d, uint64_t s)
{
    uint64_t lo = 0, hi = ds_dataset_n_documents(d); /* doc_idx[hi] = N */

    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (ds_document_first(d, mid) <= s)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int
print_document(struct inspector *in, uint64_t k)
{
    const struct ds_dataset *d = in->d;
    uint64_t n = ds_dataset_n_documents(d);
    uint64_t first, end;
    char what[64];

    if (k >= n) {
        warnx("document %" PRIu64 ": the dataset has %" PRIu64 " documents", k,
              n);
        return -1;
    }
    first = ds_document_first(d, k);
    end = ds_document_first(d, k + 1);
    if (in->json) {
        puts_(in, "{\"document\": ");
        put_u64(in, k);
        puts_(in, ", \"first_sentence\": ");
        put_u64(in, first);
        puts_(in, ", \"sentences\": [");
    }
    for (uint64_t s = first; s < end; s++) {
        snprintf(what, sizeof(what), "sentence %" PRIu64, s);
        if (in->json)
            puts_(in, s > first ? ", {" : "{");
        if (put_range_line(in, ds_sentence_start(d, s), ds_sentence_len(d, s),
                           what) < 0)
            return -1;
        puts_(in, in->json ? "}" : "\n");
    }
    if (in->json)
        puts_(in, "]}\n");
    return 0;
}

static int
print_sentence(struct inspector *in, uint64_t s)
{
    const struct ds_dataset *d = in->d;
    uint64_t n = ds_dataset_n_sentences(d);
    char what[64];

    if (s >= n) {
        warnx("sentence %" PRIu64 ": the dataset has %" PRIu64 " sentences", s,
              n);
        return -1;
    }
    snprintf(what, sizeof(what), "sentence %" PRIu64, s);
    if (in->json) {
        puts_(in, "{\"sentence\": ");
        put_u64(in, s);
        puts_(in, ", \"document\": ");
        put_u64(in, document_of(d, s));
        puts_(in, ", \"position\": ");
        put_u64(in, ds_sentence_start(d, s));
        puts_(in, ", ");
    }
    if (put_range_line(in, ds_sentence_start(d, s), ds_sentence_len(d, s),
                       what) < 0)
        return -1;
    puts_(in, in->json ? "}\n" : "\n");
    return 0;
}

static int
print_tokens(struct inspector *in, uint64_t pos, uint64_t count)
{
    uint64_t n = ds_dataset_n_tokens(in->d);
    char what[64];

    if (pos >= n || count > n - pos) {
        warnx("tokens %" PRIu64 ":%" PRIu64 ": the dataset has %" PRIu64
              " tokens",
              pos, count, n);
        return -1;
    }
    snprintf(what, sizeof(what), "tokens %" PRIu64 ":%" PRIu64, pos, count);
    if (in->json) {
        puts_(in, "{\"position\": ");
        put_u64(in, pos);
        puts_(in, ", \"count\": ");
        put_u64(in, count);
        puts_(in, ", ");
    }
    if (put_range_line(in, pos, count, what) < 0)
        return -1;
    puts_(in, in->json ? "}\n" : "\n");
    return 0;
}

struct spread {
    uint64_t min, max, sum, n;
};

static void
spread_add(struct spread *s, uint64_t v)
{
    if (s->n == 0 || v < s->min)
        s->min = v;
    if (v > s->max)
        s->max = v;
    s->sum += v;
    s->n++;
}

static void
put_spread(struct inspector *in, const char *key, const struct spread *s)
{
    static const char *const parts[3] = { "min", "mean", "max" };
    char b[64];

    for (int i = 0; i < 3; i++) {
        puts_(in, in->json ? ", \"" : "");
        puts_(in, key);
        puts_(in, "_");
        puts_(in, parts[i]);
        puts_(in, in->json ? "\": " : ": ");
        if (i == 1) {
            snprintf(b, sizeof(b), "%.2f",
                     s->n ? (double)s->sum / (double)s->n : 0.0);
            puts_(in, b);
        } else {
            put_u64(in, i == 0 ? s->min : s->max);
        }
        puts_(in, in->json ? "" : "\n");
    }
}

static void
put_count(struct inspector *in, const char *key, uint64_t v)
{
    puts_(in, in->json ? ", \"" : "");
    puts_(in, key);
    puts_(in, in->json ? "\": " : ": ");
    put_u64(in, v);
    puts_(in, in->json ? "" : "\n");
}

static void
print_counts(struct inspector *in, const char *prefix)
{
    const struct ds_dataset *d = in->d;
    enum ds_format f = ds_dataset_format(d);
    struct spread sent = { 0, 0, 0, 0 }, docs = { 0, 0, 0, 0 };
    uint64_t n = ds_dataset_n_sentences(d), m = ds_dataset_n_documents(d);
    bool json = in->json;
    char *names[2];

    if (ds_output_names(prefix, f, names) < 0)
        err(1, NULL);
    for (uint64_t i = 0; i < n; i++)
        spread_add(&sent, ds_sentence_len(d, i));
    for (uint64_t k = 0; k < m; k++)
        spread_add(&docs,
                   ds_document_first(d, k + 1) - ds_document_first(d, k));
    puts_(in, json ? "{\"format\": \"" : "format: ");
    puts_(in, f == DS_FORMAT_MMAP ? "mmap" : "npy");
    puts_(in, json ? "\", \"files\": [\"" : "\nfiles: ");
    for (int i = 0; i < 2; i++) {
        if (i > 0)
            puts_(in, json ? "\", \"" : " ");
        if (json)
            put_text(in, names[i], strlen(names[i]));
        else
            puts_(in, names[i]);
    }
    puts_(in, json ? "\"], \"dtype\": \"" : "\ndtype: ");
    puts_(in, ds_dtype_name(ds_dataset_dtype(d)));
    puts_(in, json ? "\"" : "\n");
    put_count(in, "documents", m);
    put_count(in, "sentences", n);
    put_count(in, "tokens", ds_dataset_n_tokens(d));
    put_spread(in, "sentence_tokens", &sent);
    put_spread(in, "document_sentences", &docs);
    if (json)
        puts_(in, "}\n");
    free(names[0]);
    free(names[1]);
}

/* ------------------------------------------------------------------------ */

/* -t POS:COUNT */
static void
parse_range(const char *s, struct selection *sel)
{
    const char *colon = strchr(s, ':');
    char *pos;

    if (colon == NULL) {
        warnx("invalid tokens '%s': use POS:COUNT", s);
        usage();
    }
    pos = strndup(s, (size_t)(colon - s));
    if (pos == NULL)
        err(1, NULL);
    sel->a = cli_parse_u64(pos, 0, UINT64_MAX, "token position");
    sel->b = cli_parse_u64(colon + 1, 1, UINT64_MAX, "token count");
    free(pos);
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "document", required_argument, NULL, 'd' },
        { "help", no_argument, NULL, 'h' },
        { "json", no_argument, NULL, 'j' },
        { "sentence", required_argument, NULL, 's' },
        { "tokens", required_argument, NULL, 't' },
        { "version", no_argument, NULL, 'V' },
        { "vocab", required_argument, NULL, 'v' },
        { NULL, 0, NULL, 0 }
    };
    struct selection *sel;
    size_t n_sel = 0;
    struct decoder dec;
    struct inspector in;
    struct ds_dataset *d;
    struct ds_err e;
    const char *vocab = NULL;
    bool json = false;
    int ch, rval = 0;

    sel = calloc((size_t)argc, sizeof(*sel));
    if (sel == NULL)
        err(1, NULL);
    while ((ch = getopt_long(argc, argv, "d:hjs:t:Vv:", longopts, NULL)) !=
           -1) {
        switch (ch) {
        case 'd':
            sel[n_sel].kind = 'd';
            sel[n_sel++].a = cli_parse_u64(optarg, 0, UINT64_MAX, "document");
            break;
        case 'h':
            help();
            break;
        case 'j':
            json = true;
            break;
        case 's':
            sel[n_sel].kind = 's';
            sel[n_sel++].a = cli_parse_u64(optarg, 0, UINT64_MAX, "sentence");
            break;
        case 't':
            sel[n_sel].kind = 't';
            parse_range(optarg, &sel[n_sel++]);
            break;
        case 'V':
            cli_print_version("dataset-inspect");
            free(sel);
            return 0;
        case 'v':
            vocab = optarg;
            break;
        default:
            usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (argc != 1) {
        warnx(argc == 0 ? "no dataset: give its prefix"
                        : "one dataset at a time");
        usage();
    }

    if (ds_open(&d, argv[0], &e) < 0)
        errx(1, "%s", e.msg);
    memset(&in, 0, sizeof(in));
    in.d = d;
    in.json = json;
    tok_buf_init(&in.text);
    if (vocab != NULL) {
        decoder_load(&dec, vocab);
        in.dec = &dec;
    }
    in.ids = malloc((CHUNK_TOKENS + 1) * sizeof(*in.ids));
    if (in.ids == NULL)
        err(1, NULL);
    if (n_sel == 0) {
        print_counts(&in, argv[0]);
        flush_line(&in);
    }
    for (size_t i = 0; i < n_sel && rval == 0; i++) {
        int rc = sel[i].kind == 'd'   ? print_document(&in, sel[i].a)
                 : sel[i].kind == 's' ? print_sentence(&in, sel[i].a)
                                      : print_tokens(&in, sel[i].a, sel[i].b);

        /* What a failed selection has not flushed yet is dropped. */
        if (rc < 0)
            rval = 1;
        else
            flush_line(&in);
    }
    if (in.dec != NULL)
        decoder_free(&dec);
    tok_buf_release(&in.text);
    free(in.ids);
    free(in.line);
    free(sel);
    ds_close(d);
    return cli_exit_status(rval);
}

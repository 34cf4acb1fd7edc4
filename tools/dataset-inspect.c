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
#include <math.h>
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
    size_t n_base; /* WordPiece: ids before the "##<CJK>" extension */
    char sha256[DS_META_HEX], merges_sha256[DS_META_HEX]; /* its files */
};

struct inspector {
    const struct ds_dataset *d;
    const char *prefix;
    struct ds_meta meta; /* its sidecar */
    int has_meta;        /* 1: read and fresh; 0: none; -1: stale; -2: bad */
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
    fprintf(stderr,
            "usage: dataset-inspect [-hjV] [-d document] [-s sentence] "
            "[-t pos:count]\n"
            "                       [-v vocab] prefix\n"
            "       dataset-inspect [-FG] -n samples | -x samples [-C dir] "
            "[-e seed] [-f first]\n"
            "                       [-g max-ngrams] [-k kind] [-l seq-len] "
            "[-m prob] [-P prob]\n"
            "                       [-p split] [-w which] [-v vocab] "
            "prefix\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: dataset-inspect [-hjV] [-d document] [-s sentence] "
           "[-t pos:count]\n"
           "                       [-v vocab] prefix\n"
           "       dataset-inspect [-FG] -n samples | -x samples [-C dir] "
           "[-e seed] [-f first]\n"
           "                       [-g max-ngrams] [-k kind] [-l seq-len] "
           "[-m prob] [-P prob]\n"
           "                       [-p split] [-w which] [-v vocab] "
           "prefix\n"
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
           "Training samples, as PaddleNLP's ErnieDataset and GPTDataset "
           "make them:\n"
           "  -n, --samples N       print N samples of the split\n"
           "  -x, --stats N         ERNIE: masking statistics over N "
           "samples\n"
           "  -f, --first K         start at sample K (default 0)\n"
           "  -k, --kind KIND       ernie (default; needs -v vocab.txt) or "
           "gpt\n"
           "  -l, --seq-len L       ERNIE: max_seq_len (default 512); GPT: "
           "seq_len, the\n"
           "                        window is L + 1 tokens (default 1024)\n"
           "  -e, --seed S          seed (default 1234)\n"
           "  -p, --split W         split weights (default 949,50,1)\n"
           "  -w, --which PART      train (default), valid or test\n"
           "  -m, --masked-lm-prob P  ERNIE (default 0.15)\n"
           "  -g, --max-ngrams N    ERNIE (default 3)\n"
           "  -F, --favor-longer    ERNIE: favor longer n-grams\n"
           "  -G, --geometric       ERNIE: n-gram sizes min(geometric(0.2), "
           "max-ngrams)\n"
           "  -P, --short-seq-prob P  ERNIE mapping (default 0.1)\n"
           "  -C, --cache-dir DIR   read or write the index caches in DIR "
           "(default: build\n"
           "                        them in memory)\n"
           "\n"
           "A masked ERNIE position is printed {LABEL>SHOWN}: SHOWN is "
           "[MASK], the label\nitself (kept) or a random token.\n"
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
        struct ds_err de;

        if (asprintf(&merges, "%.*smerges.txt",
                     slash ? (int)(slash - json + 1) : 0, json) < 0)
            err(1, NULL);
        if (tok_bpe_load(&dec->bpe, json, merges, &e) < 0)
            errx(1, "%s", e.msg);
        if (ds_meta_file_sha256(json, dec->sha256, &de) < 0 ||
            ds_meta_file_sha256(merges, dec->merges_sha256, &de) < 0)
            errx(1, "%s", de.msg);
    } else {
        struct tok_opts o;
        struct ds_err de;

        /* Stored data holds the "##<CJK>" ids of whole-word marking. */
        if (tok_vocab_load(&dec->vocab, txt, &e) < 0)
            errx(1, "%s", e.msg);
        if (ds_meta_file_sha256(txt, dec->sha256, &de) < 0)
            errx(1, "%s", de.msg);
        dec->n_base = tok_vocab_n_ids(dec->vocab);
        if (tok_vocab_extend_chinese(dec->vocab, &e) < 0)
            errx(1, "%s", e.msg);
        tok_opts_init(&o, TOK_FLAVOR_ERNIE);
        if (tok_tokenizer_new(&dec->tok, dec->vocab, &o, &e) < 0)
            errx(1, "%s", e.msg);
    }
    free(txt);
    free(json);
    free(merges);
}

/* Warn when -v is not the vocab the dataset's sidecar names: the text
 * shown would be another vocab's reading of the ids. */
static void
decoder_check(const struct decoder *dec, const struct inspector *in)
{
    struct ds_meta m;
    char diff[320];

    if (in->has_meta != 1)
        return;
    ds_meta_init(&m, NULL, NULL);
    snprintf(m.tokenizer, sizeof(m.tokenizer), "%s",
             dec->bpe ? "gpt2-bpe" : "wordpiece");
    memcpy(m.vocab_sha256, dec->sha256, sizeof(m.vocab_sha256));
    memcpy(m.merges_sha256, dec->merges_sha256, sizeof(m.merges_sha256));
    if (ds_meta_compare(&in->meta, &m, DS_META_TOKENIZER | DS_META_VOCAB, diff,
                        sizeof(diff)))
        warnx("warning: -v '%s' is not the vocab '%s' was made with (%s, "
              "the sidecar's vs -v's; made with '%s'): the text shown may "
              "be wrong",
              dec->path, in->prefix, diff,
              in->meta.vocab[0] ? in->meta.vocab : "?");
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

/* ", \"key\": " or "key: ". */
static void
put_key(struct inspector *in, const char *key)
{
    puts_(in, in->json ? ", \"" : "");
    puts_(in, key);
    puts_(in, in->json ? "\": " : ": ");
}

/* A string field, quoted in JSON; "" is not recorded and not shown. */
static void
put_meta_str(struct inspector *in, const char *key, const char *v)
{
    if (v[0] == '\0')
        return;
    put_key(in, key);
    puts_(in, in->json ? "\"" : "");
    put_text(in, v, strlen(v));
    puts_(in, in->json ? "\"" : "");
    puts_(in, in->json ? "" : "\n");
}

static void
put_meta_bool(struct inspector *in, const char *key, int v)
{
    if (v < 0)
        return;
    put_key(in, key);
    puts_(in, v ? "true" : "false");
    puts_(in, in->json ? "" : "\n");
}

static void
put_meta_count(struct inspector *in, const char *key, int64_t v)
{
    if (v < 0)
        return;
    put_key(in, key);
    if (v == INT64_MAX) /* max_repeated_len: runs kept */
        puts_(in, in->json ? "\"none\"" : "none");
    else
        put_u64(in, (uint64_t)v);
    puts_(in, in->json ? "" : "\n");
}

/* The sidecar (ds-meta(5)): how the ids were made, or that nobody said. */
static void
print_meta(struct inspector *in, const char *prefix)
{
    const struct ds_meta *m = &in->meta;
    char *path = ds_meta_path(prefix);

    if (path == NULL)
        err(1, NULL);
    put_key(in, "sidecar");
    if (in->has_meta != 1) {
        puts_(in, in->json             ? "null"
                  : in->has_meta == 0  ? "none"
                  : in->has_meta == -1 ? "stale"
                                       : "unreadable");
        puts_(in, in->json ? "" : "\n");
        free(path);
        return;
    }
    puts_(in, in->json ? "\"" : "");
    put_text(in, path, strlen(path));
    puts_(in, in->json ? "\"" : "\n");
    free(path);
    put_meta_str(in, "tool", m->tool);
    put_meta_str(in, "tool_version", m->tool_version);
    put_meta_str(in, "created", m->created);
    put_meta_count(in, "inputs", m->n_inputs > 0 ? (int64_t)m->n_inputs : -1);
    put_meta_str(in, "tokenizer", m->tokenizer);
    put_meta_str(in, "vocab", m->vocab);
    put_meta_count(in, "vocab_size", m->vocab_size);
    put_meta_str(in, "vocab_sha256", m->vocab_sha256);
    put_meta_str(in, "merges_sha256", m->merges_sha256);
    put_meta_bool(in, "lowercase", m->lowercase);
    put_meta_bool(in, "whole_word_marks", m->whole_word_marks);
    put_meta_bool(in, "split_sentences", m->split_sentences);
    put_meta_bool(in, "append_eod", m->append_eod);
    put_meta_bool(in, "keep_whitespace", m->keep_whitespace);
    put_meta_str(in, "sentence_splitter", m->sentence_splitter);
    put_meta_str(in, "segmenter", m->segmenter);
    put_meta_count(in, "max_word_length", m->max_word_length);
    put_meta_count(in, "max_repeated_len", m->max_repeated_len);
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
    print_meta(in, prefix);
    if (json)
        puts_(in, "}\n");
    free(names[0]);
    free(names[1]);
}

/* ------------------------------------------------------------------------ */
/* Training samples (--samples, --stats)                                     */

enum kind { KIND_ERNIE, KIND_GPT };

struct sample_opts {
    uint64_t n_samples, first, n_stats;
    enum kind kind;
    uint32_t seq_len; /* ERNIE: padded max_seq_len; GPT: window - 1 */
    uint64_t seed;
    const char *split, *cache_dir;
    int which; /* 0 train, 1 valid, 2 test */
    double masked_lm_prob, short_seq_prob;
    uint32_t max_ngrams;
    bool favor_longer;
    bool geometric;
};

static const char *const split_names[] = { "train", "valid", "test", NULL };

/* The split's first and end item (documents for ERNIE, items of the index
 * for GPT, as PaddleNLP splits each) out of n. */
static void
split_range(const struct sample_opts *so, uint64_t n, uint64_t *first,
            uint64_t *end)
{
    int64_t b[4];
    struct ds_err e;

    if (ds_split_indices(so->split, (int64_t)n, b, &e) < 0)
        errx(1, "split '%s': %s", so->split, e.msg);
    if (b[so->which + 1] <= b[so->which])
        errx(1,
             "split '%s' leaves the %s part of %" PRIu64 " %s empty: "
             "give another --split or --which",
             so->split, split_names[so->which], n,
             so->kind == KIND_GPT ? "items" : "documents");
    *first = (uint64_t)b[so->which];
    *end = (uint64_t)b[so->which + 1];
}

/* Ids as text into in: the decoder's text, or the ids. */
static void
put_ids(struct inspector *in, const int32_t *ids, size_t n, uint64_t i)
{
    struct tok_err te;
    int rc;

    if (in->dec == NULL) {
        for (size_t k = 0; k < n; k++) {
            if (k > 0)
                puts_(in, " ");
            put_id(in, ids[k]);
        }
        return;
    }
    for (size_t k = 0; k < n; k++)
        if ((in->dec->bpe
                 ? tok_bpe_token(in->dec->bpe, ids[k], NULL)
                 : tok_vocab_token(in->dec->vocab, ids[k], NULL)) == NULL)
            errx(1,
                 "sample %" PRIu64 ": id %" PRId32 " is not in the vocab "
                 "'%s'",
                 i, ids[k], in->dec->path);
    tok_buf_clear(&in->text);
    rc = in->dec->bpe ? tok_bpe_decode(in->dec->bpe, ids, n, &in->text, &te)
                      : tok_decode(in->dec->tok, ids, n, &in->text, &te);
    if (rc < 0)
        errx(1, "%s", te.msg);
    put_text(in, in->text.data, in->text.len);
}

static void
print_gpt(struct inspector *in, const struct sample_opts *so)
{
    const struct ds_dataset *d = in->d;
    uint64_t first, end, *docs;
    struct ds_gpt *g;
    struct ds_gpt_cache cache;
    struct ds_err e;
    int32_t *win;

    split_range(so, ds_dataset_n_sentences(d), &first, &end);
    docs = malloc((size_t)(end - first) * sizeof(*docs));
    win = malloc(((size_t)so->seq_len + 1) * sizeof(*win));
    if (docs == NULL || win == NULL)
        err(1, NULL);
    for (uint64_t k = first; k < end; k++)
        docs[k - first] = k;
    cache.dir = so->cache_dir;
    cache.data_prefix = in->prefix;
    cache.name = split_names[so->which];
    cache.split = so->split;
    if (ds_gpt_build(&g, d, docs, (size_t)(end - first),
                     so->first + so->n_samples, so->seq_len, so->seed,
                     so->cache_dir ? &cache : NULL, &e) < 0)
        errx(1, "%s", e.msg);
    for (uint64_t i = so->first; i < so->first + so->n_samples; i++) {
        if (ds_gpt_sample(g, d, i, win, &e) < 0)
            errx(1, "%s", e.msg);
        puts_(in, "sample ");
        put_u64(in, i);
        puts_(in, ": ");
        put_ids(in, win, (size_t)so->seq_len + 1, i);
        puts_(in, "\n");
        flush_line(in);
    }
    ds_gpt_free(g);
    free(win);
    free(docs);
}

/* ERNIE: the vocab as ds_ernie_ctx_new() wants it, and a second table in
 * which every "##<CJK>" string is defaced ("##\1<CJK>") so that it is no
 * longer mapped to its bare character: samples built with it draw the
 * same numbers (word boundaries and the base vocab are unchanged) but keep
 * the stored ids, which tell --stats where the whole words are. */
struct ernie {
    struct ds_ernie_ctx *ctx, *raw;
    struct ds_ernie_sample s, r;
    const char **tokens;
    char **defaced;
    size_t n_tokens;
    int32_t cls, sep, mask;
    struct ds_mapping *map;
};

static bool
is_cont_cjk(const char *t)
{
    const unsigned char *c = (const unsigned char *)t + 2;
    uint32_t cp;

    if (t[0] != '#' || t[1] != '#')
        return false;
    if ((c[0] & 0xf0) != 0xe0 || (c[1] & 0xc0) != 0x80 || (c[2] & 0xc0) != 0x80)
        return false;
    cp = (uint32_t)(c[0] & 0x0f) << 12 | (uint32_t)(c[1] & 0x3f) << 6 |
         (c[2] & 0x3f);
    return cp >= 0x4e00 && cp <= 0x9fa5;
}

static int32_t
special_id(const struct decoder *dec, const char *t)
{
    tok_id id = tok_vocab_find(dec->vocab, t, strlen(t));

    if (id < 0)
        errx(1, "vocab '%s' has no %s token", dec->path, t);
    return (int32_t)id;
}

static void
ernie_open(struct ernie *er, struct inspector *in, const struct sample_opts *so,
           bool stats)
{
    const struct decoder *dec = in->dec;
    const struct ds_dataset *d = in->d;
    struct ds_ernie_opts o;
    struct ds_mapping_params p;
    struct ds_err e;
    uint64_t first, end, n_sent = ds_dataset_n_sentences(d);
    int64_t *docs;
    int32_t *sizes;

    memset(er, 0, sizeof(*er));
    er->n_tokens = tok_vocab_n_ids(dec->vocab);
    er->tokens = calloc(er->n_tokens, sizeof(*er->tokens));
    er->defaced = calloc(er->n_tokens, sizeof(*er->defaced));
    if (er->tokens == NULL || er->defaced == NULL)
        err(1, NULL);
    for (size_t i = 0; i < er->n_tokens; i++) {
        const char *t = tok_vocab_token(dec->vocab, (tok_id)i, NULL);

        er->tokens[i] = t ? t : "";
        if (is_cont_cjk(er->tokens[i]) &&
            asprintf(&er->defaced[i], "##\1%s", er->tokens[i] + 2) < 0)
            err(1, NULL);
    }
    memset(&o, 0, sizeof(o));
    o.max_seq_len = so->seq_len;
    o.masked_lm_prob = so->masked_lm_prob;
    o.max_ngrams = so->max_ngrams;
    o.favor_longer_ngram = so->favor_longer;
    o.geometric_ngram = so->geometric;
    o.binary_head = 1;
    o.cls_id = er->cls = special_id(dec, "[CLS]");
    o.sep_id = er->sep = special_id(dec, "[SEP]");
    o.mask_id = er->mask = special_id(dec, "[MASK]");
    o.pad_id = special_id(dec, "[PAD]");
    o.seed = so->seed;
    if (ds_ernie_ctx_new(&er->ctx, &o, er->tokens, er->n_tokens, dec->n_base,
                         &e) < 0 ||
        ds_ernie_sample_init(&er->s, er->ctx, &e) < 0)
        errx(1, "%s", e.msg);
    if (stats) {
        const char **raw = malloc(er->n_tokens * sizeof(*raw));

        if (raw == NULL)
            err(1, NULL);
        for (size_t i = 0; i < er->n_tokens; i++)
            raw[i] = er->defaced[i] ? er->defaced[i] : er->tokens[i];
        if (ds_ernie_ctx_new(&er->raw, &o, raw, er->n_tokens, dec->n_base, &e) <
                0 ||
            ds_ernie_sample_init(&er->r, er->raw, &e) < 0)
            errx(1, "%s", e.msg);
        free(raw);
    }

    /* The samples mapping of the split's documents, as ErnieDataset asks
     * for it: L = max_seq_len - 3, SOP pairs of 2+ sentences. */
    split_range(so, ds_dataset_n_documents(d), &first, &end);
    docs = malloc((size_t)(end - first + 1) * sizeof(*docs));
    sizes = malloc((size_t)n_sent * sizeof(*sizes));
    if (docs == NULL || sizes == NULL)
        err(1, NULL);
    for (uint64_t k = first; k <= end; k++)
        docs[k - first] = (int64_t)ds_document_first(d, k);
    for (uint64_t i = 0; i < n_sent; i++)
        sizes[i] = (int32_t)ds_sentence_len(d, i);
    memset(&p, 0, sizeof(p));
    p.max_num_samples = so->first + (stats ? so->n_stats : so->n_samples);
    p.num_epochs = DS_MAPPING_EPOCHS_ANY;
    p.max_seq_len = (int32_t)so->seq_len - 3;
    p.short_seq_prob = so->short_seq_prob;
    p.seed = (int32_t)so->seed;
    p.min_num_sent = 2;
    if (so->cache_dir != NULL) {
        const char *base = strrchr(in->prefix, '/');
        char *cp;

        if (asprintf(&cp, "%s/%s", so->cache_dir,
                     base ? base + 1 : in->prefix) < 0)
            err(1, NULL);
        if (ds_mapping_get(&er->map, cp, split_names[so->which], docs,
                           (size_t)(end - first), sizes, (size_t)n_sent, &p,
                           NULL, &e) < 0)
            errx(1, "%s", e.msg);
        free(cp);
    } else if (ds_mapping_build(&er->map, docs, (size_t)(end - first), sizes,
                                (size_t)n_sent, &p, &e) < 0) {
        errx(1, "%s", e.msg);
    }
    free(docs);
    free(sizes);
}

static void
ernie_close(struct ernie *er)
{
    ds_mapping_free(er->map);
    ds_ernie_sample_release(&er->s);
    ds_ernie_sample_release(&er->r);
    ds_ernie_ctx_free(er->ctx);
    ds_ernie_ctx_free(er->raw);
    for (size_t i = 0; i < er->n_tokens; i++)
        free(er->defaced[i]);
    free(er->defaced);
    free(er->tokens);
}

/* Build sample i of the split (mapping row i) into er->s, and into er->r
 * as well when raw. */
static void
ernie_build(struct ernie *er, const struct ds_dataset *d, uint64_t i, bool raw,
            uint64_t row[3])
{
    struct ds_err e;

    if (i >= ds_mapping_n(er->map))
        errx(1, "sample %" PRIu64 ": the mapping has %" PRIu64 " samples", i,
             ds_mapping_n(er->map));
    ds_mapping_row(er->map, i, row);
    if (ds_ernie_sample_build(er->ctx, d, row[0], row[1], (uint32_t)row[2], i,
                              &er->s, &e) < 0 ||
        (raw && ds_ernie_sample_build(er->raw, d, row[0], row[1],
                                      (uint32_t)row[2], i, &er->r, &e) < 0))
        errx(1, "sample %" PRIu64 ": %s", i, e.msg);
    if (raw && (er->r.n_masked != er->s.n_masked ||
                er->r.is_random != er->s.is_random))
        errx(1, "sample %" PRIu64 ": the two vocab tables disagree", i);
}

static void
put_token(struct inspector *in, const struct ernie *er, int32_t id)
{
    puts_(in, id >= 0 && (size_t)id < er->n_tokens ? er->tokens[id] : "?");
}

/* One sample: a header line, then the tokens with every masked position
 * as {LABEL>SHOWN}, the token types as A/B, and the labels. */
static void
print_ernie_sample(struct inspector *in, const struct ernie *er, uint64_t i,
                   const uint64_t row[3])
{
    const struct ds_ernie_sample *s = &er->s;
    uint32_t m = 0;
    char b[160];

    snprintf(b, sizeof(b),
             "sample %" PRIu64 ": sentences %" PRIu64 "..%" PRIu64
             ", target %" PRIu64 ", %" PRIu32 " tokens, %" PRIu32
             " masked, is_random %d, truncated %d\n",
             i, row[0], row[1] - 1, row[2], s->n_tokens, s->n_masked,
             s->is_random, s->truncated);
    puts_(in, b);
    puts_(in, "  tokens:");
    for (uint32_t p = 0; p < s->n_tokens; p++) {
        puts_(in, " ");
        if (m < s->n_masked && (uint32_t)s->masked_positions[m] == p) {
            puts_(in, "{");
            put_token(in, er, s->masked_labels[m]);
            puts_(in, ">");
            put_token(in, er, s->input_ids[p]);
            puts_(in, "}");
            m++;
        } else {
            put_token(in, er, s->input_ids[p]);
        }
    }
    puts_(in, "\n  types:  ");
    for (uint32_t p = 0; p < s->n_tokens; p++)
        puts_(in, s->token_type_ids[p] ? "B" : "A");
    puts_(in, "\n  labels:");
    for (m = 0; m < s->n_masked; m++) {
        puts_(in, " ");
        put_u64(in, (uint64_t)s->masked_positions[m]);
        puts_(in, "=");
        put_token(in, er, s->masked_labels[m]);
    }
    puts_(in, "\n");
}

static void
print_ernie(struct inspector *in, const struct sample_opts *so)
{
    struct ernie er;
    uint64_t row[3];

    ernie_open(&er, in, so, false);
    for (uint64_t i = so->first; i < so->first + so->n_samples; i++) {
        ernie_build(&er, in->d, i, false, row);
        print_ernie_sample(in, &er, i, row);
        flush_line(in);
    }
    ernie_close(&er);
}

static void
put_ratio(struct inspector *in, const char *key, uint64_t a, uint64_t n,
          double want)
{
    char b[1024];

    snprintf(b, sizeof(b),
             "%-24s %.4f  (%" PRIu64 "/%" PRIu64 "; settings: "
             "%.4f)\n",
             key, n ? (double)a / (double)n : 0.0, a, n, want);
    puts_(in, b);
}

/* --stats N: the masking rate, the spread of masked run lengths, the
 * 80/10/10 shares and the SOP swap rate over samples first..first+N-1,
 * each next to what the settings imply. */
static void
print_ernie_stats(struct inspector *in, const struct sample_opts *so)
{
    const uint32_t k_max = so->max_ngrams;
    uint64_t hist[DS_ERNIE_MAX_NGRAMS + 2] = { 0 }, n_runs = 0;
    uint64_t plain = 0, masked = 0, shown[3] = { 0 }, swapped = 0;
    double w[DS_ERNIE_MAX_NGRAMS + 1], w_sum = 0;
    struct ernie er;
    uint64_t row[3];
    uint8_t *is_masked;
    char b[160];

    ernie_open(&er, in, so, true);
    is_masked = calloc(so->seq_len, 1);
    if (is_masked == NULL)
        err(1, NULL);
    for (uint64_t i = so->first; i < so->first + so->n_stats; i++) {
        const struct ds_ernie_sample *s = &er.s, *r = &er.r;
        uint32_t run = 0;

        ernie_build(&er, in->d, i, true, row);
        plain += s->n_tokens - 3; /* [CLS] A [SEP] B [SEP] */
        masked += s->n_masked;
        swapped += (uint64_t)s->is_random;
        memset(is_masked, 0, so->seq_len);
        for (uint32_t m = 0; m < s->n_masked; m++) {
            int32_t pos = s->masked_positions[m];
            int32_t shown_id = s->input_ids[pos];

            is_masked[pos] = 1;
            shown[shown_id == er.mask               ? 0
                  : shown_id == s->masked_labels[m] ? 1
                                                    : 2]++;
        }
        /* Runs of whole masked words, in words, from the stored ids: a
         * "##" piece continues the word before it. */
        for (uint32_t p = 0, m = 0; p <= s->n_tokens; p++) {
            int32_t id = p < s->n_tokens ? r->input_ids[p] : er.sep;
            bool cont;

            if (m < r->n_masked && (uint32_t)r->masked_positions[m] == p)
                id = r->masked_labels[m++];
            cont = id != er.cls && id != er.sep &&
                   strncmp(er.tokens[id], "##", 2) == 0;
            if (cont)
                continue;
            if (p < s->n_tokens && is_masked[p]) {
                run++;
            } else if (run > 0) {
                hist[run > k_max ? k_max + 1 : run]++;
                n_runs++;
                run = 0;
            }
        }
    }
    for (uint32_t k = 1; k <= k_max; k++)
        w[k] = 1.0 / k;
    if (so->geometric) /* min(geometric(0.2), k_max) */
        for (uint32_t k = 1; k <= k_max; k++)
            w[k] = k < k_max ? 0.2 * pow(0.8, k - 1) : pow(0.8, k - 1);
    else if (so->favor_longer)
        for (uint32_t k = 1; k <= k_max / 2; k++) {
            double t = w[k];

            w[k] = w[k_max + 1 - k];
            w[k_max + 1 - k] = t;
        }
    for (uint32_t k = 1; k <= k_max; k++)
        w_sum += w[k];
    snprintf(b, sizeof(b),
             "samples                  %" PRIu64 " (from %" PRIu64 ")\n",
             so->n_stats, so->first);
    puts_(in, b);
    put_ratio(in, "masked / plain tokens", masked, plain, so->masked_lm_prob);
    put_ratio(in, "shown as [MASK]", shown[0], masked, 0.8);
    put_ratio(in, "kept", shown[1], masked, 0.1);
    put_ratio(in, "random", shown[2], masked, 0.1);
    put_ratio(in, "SOP swapped (is_random)", swapped, so->n_stats, 0.5);
    puts_(in, "masked runs in words (adjacent n-grams count as one run):\n");
    for (uint32_t k = 1; k <= k_max + 1; k++) {
        if (k == k_max + 1 && hist[k] == 0)
            break;
        snprintf(b, sizeof(b), "%s%-3" PRIu32, k > k_max ? ">" : " ",
                 k > k_max ? k_max : k);
        put_ratio(in, b, hist[k], n_runs, k > k_max ? 0.0 : w[k] / w_sum);
    }
    ernie_close(&er);
    free(is_masked);
}

static void
print_samples(struct inspector *in, const struct sample_opts *so)
{
    if (so->kind == KIND_GPT)
        print_gpt(in, so);
    else if (so->n_stats > 0)
        print_ernie_stats(in, so);
    else
        print_ernie(in, so);
    flush_line(in);
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

/* A probability in [0, 1]. */
static double
parse_prob(const char *s, const char *what)
{
    char *end;
    double v = strtod(s, &end);

    if (*s == '\0' || *end != '\0' || !(v >= 0.0 && v <= 1.0)) {
        warnx("invalid %s '%s': must be a number between 0 and 1", what, s);
        usage();
    }
    return v;
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "cache-dir", required_argument, NULL, 'C' },
        { "document", required_argument, NULL, 'd' },
        { "favor-longer", no_argument, NULL, 'F' },
        { "first", required_argument, NULL, 'f' },
        { "geometric", no_argument, NULL, 'G' },
        { "help", no_argument, NULL, 'h' },
        { "json", no_argument, NULL, 'j' },
        { "kind", required_argument, NULL, 'k' },
        { "masked-lm-prob", required_argument, NULL, 'm' },
        { "max-ngrams", required_argument, NULL, 'g' },
        { "samples", required_argument, NULL, 'n' },
        { "seed", required_argument, NULL, 'e' },
        { "sentence", required_argument, NULL, 's' },
        { "seq-len", required_argument, NULL, 'l' },
        { "short-seq-prob", required_argument, NULL, 'P' },
        { "split", required_argument, NULL, 'p' },
        { "stats", required_argument, NULL, 'x' },
        { "tokens", required_argument, NULL, 't' },
        { "version", no_argument, NULL, 'V' },
        { "vocab", required_argument, NULL, 'v' },
        { "which", required_argument, NULL, 'w' },
        { NULL, 0, NULL, 0 }
    };
    static const char *const kinds[] = { "ernie", "gpt", NULL };
    struct sample_opts so = { .split = "949,50,1",
                              .seed = 1234,
                              .masked_lm_prob = 0.15,
                              .short_seq_prob = 0.1,
                              .max_ngrams = 3 };
    const char *seq_len = NULL;
    int k;
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
    while ((ch = getopt_long(argc, argv,
                             "C:d:e:Ff:Gg:hjk:l:m:n:P:p:s:t:Vv:w:x:", longopts,
                             NULL)) != -1) {
        switch (ch) {
        case 'C':
            so.cache_dir = optarg;
            break;
        case 'd':
            sel[n_sel].kind = 'd';
            sel[n_sel++].a = cli_parse_u64(optarg, 0, UINT64_MAX, "document");
            break;
        case 'e':
            so.seed = cli_parse_u64(optarg, 0, INT32_MAX, "seed");
            break;
        case 'F':
            so.favor_longer = true;
            break;
        case 'G':
            so.geometric = true;
            break;
        case 'f':
            so.first = cli_parse_u64(optarg, 0, UINT32_MAX, "first sample");
            break;
        case 'g':
            so.max_ngrams = (uint32_t)cli_parse_u64(
                optarg, 1, DS_ERNIE_MAX_NGRAMS, "max-ngrams");
            break;
        case 'h':
            help();
            break;
        case 'j':
            json = true;
            break;
        case 'k':
            if ((k = cli_parse_choice(optarg, "kind", kinds)) < 0)
                usage();
            so.kind = (enum kind)k;
            break;
        case 'l':
            seq_len = optarg;
            break;
        case 'm':
            so.masked_lm_prob = parse_prob(optarg, "masked-lm-prob");
            break;
        case 'n':
            so.n_samples = cli_parse_u64(optarg, 1, UINT32_MAX, "samples");
            break;
        case 'P':
            so.short_seq_prob = parse_prob(optarg, "short-seq-prob");
            break;
        case 'p':
            so.split = optarg;
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
        case 'w':
            if ((k = cli_parse_choice(optarg, "split part", split_names)) < 0)
                usage();
            so.which = k;
            break;
        case 'x':
            so.n_stats = cli_parse_u64(optarg, 1, UINT32_MAX, "stats samples");
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
    if (so.n_samples > 0 || so.n_stats > 0) {
        if (n_sel > 0 || json || (so.n_samples > 0 && so.n_stats > 0)) {
            warnx("-n or -x goes alone: not with -d, -s, -t, -j or each "
                  "other");
            usage();
        }
        if (so.kind == KIND_GPT && so.n_stats > 0) {
            warnx("-x (--stats) is for --kind ernie");
            usage();
        }
        if (so.kind == KIND_ERNIE && vocab == NULL) {
            warnx("ERNIE samples need the vocab: give -v vocab.txt");
            usage();
        }
        /* ERNIE: [CLS] A [SEP] B [SEP] with A and B one token each at
         * least. */
        so.seq_len =
            seq_len == NULL
                ? (so.kind == KIND_GPT ? 1024 : 512)
                : (uint32_t)cli_parse_u64(seq_len, so.kind == KIND_GPT ? 1 : 5,
                                          INT32_MAX - 1, "seq-len");
    }

    if (ds_open(&d, argv[0], &e) < 0)
        errx(1, "%s", e.msg);
    memset(&in, 0, sizeof(in));
    in.d = d;
    in.prefix = argv[0];
    in.has_meta = ds_meta_read(argv[0], &in.meta, &e);
    if (in.has_meta < 0) {
        warnx("warning: %s", e.msg);
        in.has_meta = -2;
    } else if (in.has_meta == 1 && ds_meta_stale(argv[0], &in.meta, &e) > 0) {
        warnx("note: %s; ignored", e.msg);
        in.has_meta = -1;
    }
    in.json = json;
    tok_buf_init(&in.text);
    if (vocab != NULL) {
        decoder_load(&dec, vocab);
        decoder_check(&dec, &in);
        in.dec = &dec;
        if (so.kind == KIND_ERNIE && (so.n_samples || so.n_stats) &&
            dec.vocab == NULL)
            errx(1,
                 "ERNIE samples need a WordPiece vocab.txt, not the BPE "
                 "'%s'",
                 vocab);
    }
    in.ids = malloc((CHUNK_TOKENS + 1) * sizeof(*in.ids));
    if (in.ids == NULL)
        err(1, NULL);
    if (so.n_samples > 0 || so.n_stats > 0) {
        print_samples(&in, &so);
    } else if (n_sel == 0) {
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

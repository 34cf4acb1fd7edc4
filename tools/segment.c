/* SPDX-License-Identifier: MIT */
/*
 * segment: Chinese word segmentation and sentence splitting, as PaddleNLP's
 * words_segmentation.py does with jieba: documents in (text lines, blank-
 * line blocks, JSONL or WuDao JSON arrays), one sentence a line out with
 * words joined by one space and a blank line after each document.  A thin
 * layer over libtok's jieba and LAC engines and the shared pipeline; see
 * segment(1).  LAC's sentences are queued as a chunk is read and run as one
 * batch at its end (tok_lac_batch_run), their words then put in place.
 */
#include <err.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tok.h"
#include "banned.h"

/* Bytes of whole records a worker takes at a time: small enough that a
 * few MB keep two workers evenly busy and a chunk's text and words stay
 * in the L2 cache (1 MB chunks were 10-20 % slower on a 4.7 MB input at
 * -j 1 and -j 2, docs/benchmarks-history.md); the ring holds a few per
 * thread. */
#define CHUNK_SIZE (1u << 17)

/* LAC: a chunk's sentences run as one batch, or more when a document
 * holds more text than this. */
#define LAC_BATCH_BYTES (1u << 20)

enum in_format { IN_TEXT, IN_JSONL, IN_WUDAO };
enum rule { RULE_PADDLE, RULE_ICU, RULE_NONE };

/* A sentence queued for LAC: its text in the batch, where its words go
 * in the chunk's output, and whether whitespace words are left out. */
struct pending {
    size_t index, at;
    bool skip_space;
};

struct worker {
    struct tok_words words;
    struct tok_lac_batch *lac; /* --engine lac */
    struct pending *pending;
    size_t n_pending, cap_pending;
    struct tok_lac_words lac_words;
    struct tok_buf merged;    /* the output with the words put in */
    struct tok_buf doc, text; /* scratch of the sentence rules */
    struct tok_buf field;     /* the text of a JSON record */
    struct json_tokener *jt;
    struct cli_sentences *sentences; /* with -r icu */
};

struct ctx {
    const struct tok_jieba *jieba;
    const struct tok_lac *lac;
    bool tags; /* --tags */
    enum in_format format;
    bool blank_docs, words_only, skip_bad, hmm;
    enum rule rule;
    const char *json_key;
    bool jsonl_check; /* text by default, not by -f text: refuse JSONL */
    struct worker *workers;
};

static void
usage(void)
{
    fprintf(stderr,
            "usage: segment [-HhPqsVw] [-d docsep] [-f format] [-j threads] "
            "[-k key]\n"
            "               [-m model] [-o output] [-r rule] [-U userdict]\n"
            "               [--engine jieba|lac] [--lac-mode seg|lac] "
            "[--shard i/n] [--tags]\n"
            "               [file ...]\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf(
        "usage: segment [-HhPqsVw] [-d docsep] [-f format] [-j threads] "
        "[-k key]\n"
        "               [-m model] [-o output] [-r rule] [-U userdict]\n"
        "               [--engine jieba|lac] [--lac-mode seg|lac] "
        "[--shard i/n] [--tags]\n"
        "               [file ...]\n"
        "\n"
        "Split documents into sentences and words exactly as jieba 0.42.1 "
        "(or Baidu\nLAC 2.1.2) and PaddleNLP's words_segmentation.py do: one "
        "sentence a line,\nwords joined by one space, a blank line after each "
        "document.  Files may be\nzstd-compressed; no file or '-' reads "
        "stdin.\n"
        "\n"
        "  -f, --format FMT       text (default), jsonl, wudao (a JSON array "
        "of objects)\n"
        "  -d, --doc-sep SEP      text: a document is a line (default) or a "
        "block of\n"
        "                         lines ended by a blank line (blank)\n"
        "  -k, --json-key KEY     field of the text (default 'text', wudao: "
        "'content')\n"
        "  -r, --sentence-rule R  paddle (default), icu (ICU sentence "
        "breaks), none\n"
        "                         (newlines only)\n"
        "  -w, --words-only       one document a line, words only, no "
        "sentence split\n"
        "      --engine E         jieba (default) or lac (Baidu LAC 2.1.2)\n"
        "      --lac-mode M       LAC's network: seg (default: words) or lac "
        "(words and\n"
        "                         tags); implies --engine lac\n"
        "      --cn-seg-func F    the seed's name: jieba, lac (--engine lac "
        "--lac-mode\n"
        "                         lac) or seg (--engine lac --lac-mode seg)\n"
        "      --tags             LAC's lac network: print word/TAG\n"
        "  -H, --no-hmm           jieba.cut(HMM=False)\n"
        "  -U, --user-dict FILE   add a user dictionary: jieba's (word [freq] "
        "[tag]), or\n"
        "                         LAC's (pieces of a phrase, each text or "
        "text/TAG)\n"
        "  -m, --model FILE       the compiled model (default: $SEGMENT_MODEL "
        "or\n"
        "                         $LAC_MODEL, else jieba.model or lac.model "
        "beside the\n"
        "                         program, else the one installed with it)\n"
        "  -s, --skip-bad         skip (and count) bad records instead of "
        "failing\n"
        "      --shard I/N        only the I-th of N runs of the files, cut "
        "by size (one\n"
        "                         task of a cluster job; the N outputs in "
        "order make all)\n"
        "  -j, --threads N        worker threads (default: online CPUs)\n"
        "  -o, --output FILE      write to FILE via a temporary file; "
        "*.zst is compressed\n"
        "  -P, --progress         show progress on stderr even if it is not "
        "a terminal\n"
        "  -q, --quiet            no progress, no summary\n"
        "  -h, --help             show this help and exit\n"
        "  -V, --version          show the version and exit\n"
        "\n"
        "Exit status: 0 success, 1 failure (I/O, bad input), 2 usage "
        "error.\n");
    exit(0);
}

/* ------------------------------------------------------------------------ */

static bool
nomem(struct cli_chunk_result *r, uint64_t line)
{
    cli_chunk_error(r, line, "out of memory");
    return false;
}

/* Append the words of text[0..len) joined by one space, then a newline.
 * With skip_space, whitespace words are left out. */
/* Whether a word that starts with byte c can be white space: the code
 * points of cli_is_space() all start with one of these bytes in UTF-8, so
 * a word of Chinese characters is passed over without decoding it. */
static inline bool
may_be_space(unsigned char c)
{
    return c <= 0x20 || c == 0xC2 || (c >= 0xE1 && c <= 0xE3);
}

/* Copy the word text[a..b) of the line text[0..len) to d + at, returning
 * the end.  Most words are a few bytes: one fixed 16-byte move, not a
 * call, where the text has 16 bytes left to read (d has 16 bytes of
 * slack). */
static inline size_t
copy_word(char *d, size_t at, const char *text, size_t len, size_t a, size_t b)
{
    if (b - a <= 16 && a + 16 <= len)
        memcpy(d + at, text + a, 16);
    else
        memcpy(d + at, text + a, b - a);
    return at + (b - a);
}

static int lac_flush(const struct ctx *c, struct worker *w,
                     struct tok_buf *out);

/* LAC: queue the sentence; its words go in at the current end of out
 * when the batch runs (lac_flush). */
static int
lac_queue(const struct ctx *c, struct worker *w, const char *text, size_t len,
          bool skip_space, struct tok_buf *out)
{
    int64_t index;

    if (w->n_pending == w->cap_pending) {
        size_t cap = w->cap_pending ? 2 * w->cap_pending : 256;
        struct pending *p = realloc(w->pending, cap * sizeof(*p));

        if (p == NULL)
            return -1;
        w->pending = p;
        w->cap_pending = cap;
    }
    /* Records are validated once, when read. */
    if ((index = tok_lac_batch_add(w->lac, text, len, 1, NULL)) < 0)
        return -1;
    w->pending[w->n_pending].index = (size_t)index;
    w->pending[w->n_pending].at = out->len;
    w->pending[w->n_pending].skip_space = skip_space;
    w->n_pending++;
    if (tok_lac_batch_bytes(w->lac) >= LAC_BATCH_BYTES)
        return lac_flush(c, w, out);
    return 0;
}

/* Whether the word s[0..len) is all white space (Python's isspace()). */
static bool
all_space(const char *s, size_t len)
{
    return cli_is_blank_line(s, len);
}

/* Append the words of the batch's text i to out, joined by one space
 * (word/TAG with --tags), then a newline. */
static int
lac_render(const struct ctx *c, struct worker *w, const struct pending *p,
           struct tok_buf *out)
{
    struct tok_lac_words *lw = &w->lac_words;
    const char *s = tok_lac_batch_text(w->lac, p->index, NULL);
    bool first = true;

    tok_lac_words_clear(lw);
    if (tok_lac_batch_words(w->lac, p->index, lw, NULL) < 0)
        return -1;
    for (size_t k = 0; k < lw->n; k++) {
        const char *word = s + lw->starts[k];
        size_t n = lw->ends[k] - lw->starts[k];

        if (p->skip_space && all_space(word, n))
            continue;
        if ((!first && tok_buf_append(out, " ", 1) < 0) ||
            tok_buf_append(out, word, n) < 0)
            return -1;
        first = false;
        if (c->tags) {
            size_t tl;
            const char *t = tok_lac_tag_name(c->lac, lw->tags[k], &tl);

            if (tok_buf_append(out, "/", 1) < 0 ||
                tok_buf_append(out, t, tl) < 0)
                return -1;
        }
    }
    return tok_buf_append(out, "\n", 1);
}

/* Run the queued sentences and put their lines into out where they were
 * queued: out from the first one's place on is rebuilt in the scratch
 * buffer, then put back. */
static int
lac_flush(const struct ctx *c, struct worker *w, struct tok_buf *out)
{
    struct tok_buf *m = &w->merged;
    size_t first, from;

    if (w->n_pending == 0)
        return 0;
    if (tok_lac_batch_run(w->lac, NULL) < 0)
        return -1;
    tok_buf_clear(m);
    first = from = w->pending[0].at;
    for (size_t k = 0; k < w->n_pending; k++) {
        const struct pending *p = &w->pending[k];

        if (tok_buf_append(m, out->data + from, p->at - from) < 0 ||
            lac_render(c, w, p, m) < 0)
            return -1;
        from = p->at;
    }
    if (tok_buf_append(m, out->data + from, out->len - from) < 0)
        return -1;
    out->len = first;
    if (tok_buf_append(out, m->data, m->len) < 0)
        return -1;
    w->n_pending = 0;
    tok_lac_batch_clear(w->lac);
    return 0;
}

static int
put_words(const struct ctx *c, struct worker *w, const char *text, size_t len,
          bool skip_space, struct tok_buf *out)
{
    bool first = true;

    if (c->lac != NULL)
        return lac_queue(c, w, text, len, skip_space, out);
    tok_words_clear(&w->words);
    /* Records are validated once, when read. */
    if (tok_jieba_cut(c->jieba, text, len,
                      (c->hmm ? TOK_JIEBA_HMM : 0) | TOK_JIEBA_TRUSTED,
                      &w->words, NULL) < 0)
        return -1;
    /* The line is at most the text plus a space per word and a newline:
     * reserve that once, then copy without further checks. */
    {
        /* (16 bytes of slack for the fixed-size copies below) */
        size_t need = out->len + len + w->words.n + 2 + 16, at;

        if (need > out->cap) {
            size_t old = out->len;

            if (tok_buf_append(out, NULL, 0) < 0)
                return -1;
            while (out->cap < need) {
                char *d = realloc(out->data, out->cap * 2);

                if (d == NULL)
                    return -1;
                out->data = d;
                out->cap *= 2;
            }
            out->len = old;
        }
        /* In locals: a store through char * may alias any field, so the
         * compiler would reload each of them after every byte written. */
        char *d = out->data;
        const size_t *starts = w->words.starts, *ends = w->words.ends;
        size_t n = w->words.n;

        at = out->len;
        if (!skip_space && n > 0) {
            /* The common case, apart: no test a word but the copy's. */
            at = copy_word(d, at, text, len, starts[0], ends[0]);
            for (size_t i = 1; i < n; i++) {
                d[at++] = ' ';
                at = copy_word(d, at, text, len, starts[i], ends[i]);
            }
            n = 0;
        }
        for (size_t i = 0; i < n; i++) {
            size_t a = starts[i], b = ends[i];

            if (skip_space && may_be_space((unsigned char)text[a])) {
                uint32_t cp;
                size_t k = tok_utf8_decode(text + a, b - a, &cp);

                if ((k == b - a && cli_is_space(cp)) ||
                    (b - a == 2 && text[a] == '\r' && text[a + 1] == '\n'))
                    continue;
            }
            if (!first)
                d[at++] = ' ';
            at = copy_word(d, at, text, len, a, b);
            first = false;
        }
        d[at++] = '\n';
        d[at] = '\0';
        out->len = at;
    }
    return 0;
}

/* PaddleNLP's "simple rules": collapse runs of each special character
 * (and the ASCII spaces after them), break after the terminators, split at
 * newlines, drop empty pieces. */
static const char *const collapse_chars[] = {
    "\n",           "\xE3\x80\x82", "?", "\xEF\xBC\x9F", " ", ";",
    "\xEF\xBC\x9B", "\xEF\xBC\x81", "!"
};
static const char *const split_chars[] = { "\xE3\x80\x82", "?",
                                           "\xEF\xBC\x9F", ";",
                                           "\xEF\xBC\x9B", "!",
                                           "\xEF\xBC\x81" };

/* re.sub('[c]+[ ]*', c, src) into dst. */
static int
collapse(const char *src, size_t len, const char *ch, struct tok_buf *dst)
{
    size_t n = strlen(ch), i = 0, from = 0;

    tok_buf_clear(dst);
    while (i + n <= len) {
        const char *hit = memchr(src + i, ch[0], len - i - n + 1);

        if (hit == NULL)
            break;
        i = (size_t)(hit - src);
        if (memcmp(src + i, ch, n) != 0) {
            i++;
            continue;
        }
        if (tok_buf_append(dst, src + from, i - from + n) < 0)
            return -1;
        while (i + n <= len && memcmp(src + i, ch, n) == 0)
            i += n;
        while (i < len && src[i] == ' ')
            i++;
        from = i;
    }
    return tok_buf_append(dst, src + from, len - from);
}

/* The length of the split character at s, or 0. */
static size_t
split_char_len(const char *s, size_t len)
{
    unsigned char c = (unsigned char)s[0];

    if (c == '?' || c == ';' || c == '!')
        return 1;
    if ((c != 0xE3 && c != 0xEF) || len < 3)
        return 0;
    for (size_t k = 0; k < sizeof(split_chars) / sizeof(split_chars[0]); k++)
        if (split_chars[k][0] == s[0] && memcmp(s, split_chars[k], 3) == 0)
            return 3;
    return 0;
}

static int
segment_paddle(const struct ctx *c, struct worker *w, const char *doc,
               size_t len, struct tok_buf *out)
{
    struct tok_buf *a = &w->doc, *b = &w->text, *t;
    const char *p, *end, *piece;

    tok_buf_clear(a);
    if (tok_buf_append(a, doc, len) < 0)
        return -1;
    for (size_t k = 0; k < sizeof(collapse_chars) / sizeof(collapse_chars[0]);
         k++) {
        if (collapse(a->data, a->len, collapse_chars[k], b) < 0)
            return -1;
        t = a;
        a = b;
        b = t;
    }
    /* Split after each terminator and at each newline. */
    p = piece = a->data;
    end = a->data + a->len;
    while (p < end) {
        size_t n;

        if (*p == '\n') {
            if (p > piece &&
                put_words(c, w, piece, (size_t)(p - piece), false, out) < 0)
                return -1;
            piece = ++p;
            continue;
        }
        if ((n = split_char_len(p, (size_t)(end - p))) > 0) {
            p += n;
            if (put_words(c, w, piece, (size_t)(p - piece), false, out) < 0)
                return -1;
            piece = p;
            continue;
        }
        p++;
    }
    if (end > piece &&
        put_words(c, w, piece, (size_t)(end - piece), false, out) < 0)
        return -1;
    return 0;
}

static int
segment_lines(const struct ctx *c, struct worker *w, const char *doc,
              size_t len, struct tok_buf *out)
{
    const char *p = doc, *end = doc + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;

        if (e > p && put_words(c, w, p, (size_t)(e - p), false, out) < 0)
            return -1;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

struct icu_doc {
    const struct ctx *c;
    struct worker *w;
    const char *doc;
    struct tok_buf *out;
};

/* One sentence of ICU's, without its trailing whitespace (which ICU keeps
 * in the sentence); nothing if that leaves it empty. */
static int
icu_sentence(void *arg, size_t s, size_t e)
{
    const struct icu_doc *d = arg;

    while (e > s) {
        /* Step back over one whitespace character. */
        size_t k = e - 1;
        uint32_t cp;

        while (k > s && ((unsigned char)d->doc[k] & 0xC0) == 0x80)
            k--;
        if (tok_utf8_decode(d->doc + k, e - k, &cp) != e - k ||
            !cli_is_space(cp))
            break;
        e = k;
    }
    if (e > s && segment_lines(d->c, d->w, d->doc + s, e - s, d->out) < 0)
        return -1;
    return 0;
}

/* ICU's sentence boundaries; trailing whitespace of each sentence is
 * dropped and so are empty sentences. */
static int
segment_icu(const struct ctx *c, struct worker *w, const char *doc, size_t len,
            struct tok_buf *out)
{
    struct icu_doc d = { c, w, doc, out };

    return cli_sentences_each(w->sentences, doc, len, icu_sentence, &d);
}

static int
segment_doc(const struct ctx *c, struct worker *w, const char *doc, size_t len,
            struct tok_buf *out)
{
    int rc;

    if (c->words_only)
        return put_words(c, w, doc, len, true, out);
    switch (c->rule) {
    case RULE_PADDLE:
        rc = segment_paddle(c, w, doc, len, out);
        break;
    case RULE_ICU:
        rc = segment_icu(c, w, doc, len, out);
        break;
    default:
        rc = segment_lines(c, w, doc, len, out);
        break;
    }
    if (rc < 0)
        return rc;
    return tok_buf_append(out, "\n", 1);
}

/* Whether segment_doc()'s result rc for the document of len bytes at
 * line lets the chunk go on; if not, the chunk's error is set. */
static bool
doc_done(struct cli_chunk_result *r, uint64_t line, int rc, size_t len)
{
    if (rc == CLI_SENTENCES_TOO_LONG)
        cli_chunk_error(r, line, CLI_SENTENCES_TOO_LONG_MSG, len);
    else if (rc < 0)
        nomem(r, line);
    return rc >= 0;
}

static void
process_records(void *arg, unsigned worker, const char *lines, size_t len,
                uint64_t first_line, struct cli_chunk_result *r)
{
    const struct ctx *c = arg;
    struct worker *w = &c->workers[worker];
    const char *p = lines, *end = lines + len;
    uint64_t line = first_line;

    if (c->jsonl_check &&
        !cli_jsonl_check(r, lines, len, first_line, c->json_key,
                         "read it with -f jsonl (or give -f text to segment "
                         "its lines as they are)"))
        return;
    while (p < end) {
        const char *rec = p, *rec_end;
        uint64_t rec_line = line;
        size_t bad;

        if (c->format == IN_TEXT && c->blank_docs) {
            /* A document: lines up to a blank line (or the end). */
            const char *q = p;

            rec_end = end;
            while (q < end) {
                const char *nl = memchr(q, '\n', (size_t)(end - q));
                const char *le = nl ? nl : end;

                line++;
                if (cli_is_blank_line(q, (size_t)(le - q))) {
                    rec_end = q;
                    p = nl ? nl + 1 : end;
                    break;
                }
                q = nl ? nl + 1 : end;
                p = q;
            }
            /* Drop the newline that ends the document's last line. */
            if (rec_end > rec && rec_end[-1] == '\n')
                rec_end--;
            if (rec_end == rec)
                continue; /* blank lines between documents */
        } else {
            const char *nl = memchr(p, '\n', (size_t)(end - p));

            rec_end = nl ? nl : end;
            p = nl ? nl + 1 : end;
            line++;
        }
        bad = tok_utf8_check(rec, (size_t)(rec_end - rec));
        if (bad != (size_t)(rec_end - rec)) {
            if (!cli_chunk_bad(r, c->skip_bad, rec_line,
                               "invalid UTF-8 at byte offset %zu of the record",
                               bad))
                return;
            continue;
        }
        r->n_records++;
        if (c->format == IN_TEXT) {
            /* CR LF line ends count as LF, as Python's text files do. */
            const char *t = rec;
            size_t n = (size_t)(rec_end - rec);

            if (memchr(rec, '\r', n) != NULL) {
                tok_buf_clear(&w->text);
                for (size_t i = 0; i < n; i++)
                    if (!(rec[i] == '\r' &&
                          (i + 1 == n || rec[i + 1] == '\n')) &&
                        tok_buf_append(&w->text, rec + i, 1) < 0) {
                        nomem(r, rec_line);
                        return;
                    }
                t = w->text.data ? w->text.data : "";
                n = w->text.len;
            }
            if (!doc_done(r, rec_line, segment_doc(c, w, t, n, &r->out), n))
                return;
        } else {
            char why[200];
            int k = cli_json_field(&w->jt, rec, (size_t)(rec_end - rec),
                                   c->json_key, &w->field, why, sizeof(why));

            if (k == -2) {
                cli_chunk_error(r, rec_line, "%s", why);
                return;
            }
            if (k <= 0) {
                r->n_records--; /* a blank line, or a bad record */
                if (k < 0 &&
                    !cli_chunk_bad(r, c->skip_bad, rec_line, "%s", why))
                    return;
                continue;
            }
            if (!doc_done(
                    r, rec_line,
                    segment_doc(c, w, w->field.data, w->field.len, &r->out),
                    w->field.len))
                return;
        }
    }
}

/* The chunk's records, then (LAC) the words of the sentences queued: also
 * those before a record that stopped the run, whose output is written. */
static void
process_chunk(void *arg, unsigned worker, const char *lines, size_t len,
              uint64_t first_line, struct cli_chunk_result *r)
{
    const struct ctx *c = arg;
    struct worker *w = &c->workers[worker];

    process_records(arg, worker, lines, len, first_line, r);
    if (c->lac != NULL && lac_flush(c, w, &r->out) < 0) {
        w->n_pending = 0;
        tok_lac_batch_clear(w->lac);
        if (r->status == 0)
            cli_chunk_error(r, first_line, "out of memory");
    }
}

/* ------------------------------------------------------------------------ */

enum { OPT_TAGS = 256, OPT_SHARD };

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "doc-sep", required_argument, NULL, 'd' },
        { "format", required_argument, NULL, 'f' },
        { "no-hmm", no_argument, NULL, 'H' },
        { "help", no_argument, NULL, 'h' },
        { "threads", required_argument, NULL, 'j' },
        { "json-key", required_argument, NULL, 'k' },
        { "model", required_argument, NULL, 'm' },
        { "output", required_argument, NULL, 'o' },
        { "progress", no_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "sentence-rule", required_argument, NULL, 'r' },
        { "skip-bad", no_argument, NULL, 's' },
        { "user-dict", required_argument, NULL, 'U' },
        { "version", no_argument, NULL, 'V' },
        { "words-only", no_argument, NULL, 'w' },
        CLI_SEGMENTER_OPTIONS,
        { "tags", no_argument, NULL, OPT_TAGS },
        { "shard", required_argument, NULL, OPT_SHARD },
        { NULL, 0, NULL, 0 }
    };
    struct ctx c;
    struct tok_jieba *jieba = NULL;
    struct tok_lac *lac = NULL;
    struct cli_segmenter_flags segf = { { false, TOK_LAC_SEG }, -1, false };
    const struct cli_segmenter *seg = &segf.seg;
    struct cli_output out;
    struct cli_run run;
    const char *model = NULL, *out_path = NULL, *user_dict = NULL;
    unsigned n_threads = cli_default_threads();
    bool quiet = false, progress = false, key_given = false;
    bool format_given = false;
    struct cli_shard shard = { 0, 0 };
    struct cli_files files = { NULL, 0, 0, 0 };
    int ch, rval = 0;

    memset(&c, 0, sizeof(c));
    c.format = IN_TEXT;
    c.rule = RULE_PADDLE;
    c.hmm = true;
    c.json_key = "text";

    while ((ch = getopt_long(argc, argv, "d:f:Hhj:k:m:o:Pqr:sU:Vw", longopts,
                             NULL)) != -1) {
        int seg_flag = cli_segmenter_flag(&segf, ch, optarg);

        if (seg_flag < 0)
            usage();
        if (seg_flag > 0)
            continue;
        switch (ch) {
        case 'd': {
            static const char *const seps[] = { "line", "blank", NULL };
            int k = cli_parse_choice(optarg, "doc-sep", seps);

            if (k < 0)
                usage();
            c.blank_docs = k == 1;
            break;
        }
        case 'f': {
            /* In enum in_format order. */
            static const char *const formats[] = { "text", "jsonl", "wudao",
                                                   NULL };
            int k = cli_parse_choice(optarg, "format", formats);

            if (k < 0)
                usage();
            c.format = (enum in_format)k;
            format_given = true;
            break;
        }
        case 'H':
            c.hmm = false;
            break;
        case 'h':
            help();
            break;
        case 'j':
            n_threads = (unsigned)cli_parse_u64(optarg, 1, 256, "threads");
            break;
        case 'k':
            c.json_key = optarg;
            key_given = true;
            break;
        case 'm':
            model = optarg;
            break;
        case 'o':
            out_path = optarg;
            break;
        case 'P':
            progress = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'r': {
            /* In enum rule order. */
            static const char *const rules[] = { "paddle", "icu", "none",
                                                 NULL };
            int k = cli_parse_choice(optarg, "sentence rule", rules);

            if (k < 0)
                usage();
            c.rule = (enum rule)k;
            break;
        }
        case 's':
            c.skip_bad = true;
            break;
        case 'U':
            user_dict = optarg;
            break;
        case 'V':
            cli_print_version("segment");
            return 0;
        case 'w':
            c.words_only = true;
            break;
        case OPT_TAGS:
            c.tags = true;
            break;
        case OPT_SHARD:
            if (!cli_shard_parse(optarg, &shard))
                usage();
            break;
        default:
            usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (cli_segmenter_done(&segf) < 0)
        usage();
    if (seg->lac && !c.hmm) {
        warnx("-H (--no-hmm) is jieba's: LAC has no HMM");
        usage();
    }
    if (c.tags && !(seg->lac && seg->lac_mode == TOK_LAC_LAC)) {
        warnx("--tags needs LAC's lac network (--lac-mode lac): the others "
              "give words only");
        usage();
    }
    if (c.format == IN_WUDAO && !key_given)
        c.json_key = "content";
    /* The inputs: all of them, or the shard's. */
    for (int i = 0; i < argc; i++)
        cli_files_add(&files, argv[i]);
    if (shard.n > 0 && cli_files_shard(&files, &shard, quiet) != 0)
        exit(EXIT_USAGE);
    c.jsonl_check = c.format == IN_TEXT && !format_given;
    if (seg->lac)
        c.lac = lac = cli_lac_open(model, user_dict, seg->lac_mode);
    else
        c.jieba = jieba = cli_jieba_open(
            model, user_dict, cli_plain_bytes((int)files.n, files.v));
    c.workers = calloc(n_threads, sizeof(*c.workers));
    if (c.workers == NULL)
        err(1, NULL);
    for (unsigned i = 0; i < n_threads; i++) {
        struct worker *w = &c.workers[i];

        tok_words_init(&w->words);
        tok_lac_words_init(&w->lac_words);
        tok_buf_init(&w->merged);
        if (lac != NULL) {
            struct tok_err e;

            if (tok_lac_batch_new(&w->lac, lac, seg->lac_mode, &e) < 0)
                errx(1, "%s", e.msg);
        }
        tok_buf_init(&w->doc);
        tok_buf_init(&w->text);
        tok_buf_init(&w->field);
        w->jt = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
        if (w->jt == NULL)
            err(1, NULL);
        if (c.rule == RULE_ICU)
            w->sentences = cli_sentences_new();
    }

    cli_output_open(&out, out_path);
    run.n_threads = n_threads;
    run.chunk_size = CHUNK_SIZE;
    run.records = c.format == IN_TEXT && c.blank_docs ? CLI_RECORDS_BLANK
                                                      : CLI_RECORDS_LINES;
    run.json_array = c.format == IN_WUDAO;
    run.quiet = quiet;
    run.progress = progress;
    run.fn = process_chunk;
    run.ctx = &c;
    run.prog = NULL;
    run.unit = "documents";
    rval = cli_run_files(&run, (int)files.n, files.v, &out);
    cli_files_release(&files);
    for (unsigned i = 0; i < n_threads; i++) {
        struct worker *w = &c.workers[i];

        tok_words_release(&w->words);
        tok_lac_words_release(&w->lac_words);
        tok_buf_release(&w->merged);
        tok_lac_batch_free(w->lac);
        free(w->pending);
        tok_buf_release(&w->doc);
        tok_buf_release(&w->text);
        tok_buf_release(&w->field);
        json_tokener_free(w->jt);
        cli_sentences_free(w->sentences);
    }
    free(c.workers);
    tok_jieba_close(jieba);
    tok_lac_close(lac);
    return cli_exit_status(rval);
}

/* SPDX-License-Identifier: MIT */
/*
 * create-pretraining-data: JSONL documents to the token files the trainers
 * read (<prefix>.bin/.idx or <prefix>_ids.npy/_idx.npz), as PaddleNLP's
 * create_pretraining_data.py writes them: sentence splitting, WordPiece or
 * byte-level BPE, and the "##" whole-word marks of Chinese words.  Workers
 * turn chunks of lines into packed id records; the main thread writes them
 * in input order through libdata.  See create-pretraining-data(1).
 */
#include <err.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ds.h"
#include "tok.h"
#include "wwm.h"
#include "banned.h"

/* Bytes of input a worker takes at a time: small enough that two workers
 * end a run within a few ms of each other (1 MB chunks left one idle for
 * up to 10 ms at the end, 3 % of a 57 MB run). */
#define CHUNK_SIZE (1u << 18)

/* LAC: the sentences of a chunk are segmented as one batch (more when a
 * document holds more text than this), their tokens marked after. */
#define LAC_BATCH_BYTES (1u << 20)

enum tokenizer { TOKENIZER_ERNIE, TOKENIZER_BERT, TOKENIZER_GPT2_BPE };
enum splitter { SPLIT_NONE, SPLIT_NEWLINE, SPLIT_ICU };

/* A sentence whose tokens wait for LAC's words: its text in the batch,
 * its ids in the chunk's output, their chars entries in worker.chars. */
struct marks_pending {
    size_t index, ids_at, n, chars_at;
};

struct worker {
    struct json_tokener *jt;
    struct tok_lac_batch *lac; /* -W with LAC */
    struct marks_pending *pending;
    size_t n_pending, cap_pending;
    struct tok_buf chars;
    struct tok_lac_words lac_words;
    struct tok_buf field;     /* the document text */
    struct tok_buf collapsed; /* after --max-repeated-len */
    struct tok_encoding enc;
    struct tok_words words;
    struct wwm *wwm;      /* -W: the sentence's words and marks */
    size_t last_sentence; /* offset of the last sentence record in out */
    struct cli_sentences *sentences; /* with SPLIT_ICU */
};

struct ctx {
    enum tokenizer tokenizer;
    enum splitter splitter;
    const struct tok_tokenizer *tok;
    const struct tok_vocab *vocab; /* as loaded: id -> token string */
    const struct tok_bpe *bpe;
    const struct tok_jieba *jieba;
    const struct tok_lac *lac; /* -W, --cn-seg-func lac or seg */
    const char *json_key;
    bool wwm, cn_splited, skip_bad;
    bool keep_space; /* --keep-whitespace: no strip, sentences keep '\n' */
    size_t max_word_len;
    long max_repeat;               /* -1: keep runs */
    tok_id eos;                    /* -1: none */
    const struct wwm_vocab *marks; /* -W */
    struct worker *workers;
};

/* What the main thread does with the records. */
struct sink {
    struct ds_writer *writer;
    uint64_t docs_in;
    /* Documents that yield no SOP pair in train: of one sentence, or with
     * a sentence over DS_MAPPING_LONG_SENTENCE tokens. */
    uint64_t n_one_sentence, n_long_sentence;
    struct ds_err err;
    bool failed;
};

static void
usage(void)
{
    fprintf(stderr, "usage: create-pretraining-data [-ehPqSsVW] [-f format] "
                    "[-j threads] [-k key]\n"
                    "           [-T tokenizer] [--chinese] [--cn-splited] "
                    "[--shard i/n] [...]\n"
                    "           -v vocab -o prefix [file|dir ...]\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: create-pretraining-data [options] -v vocab -o prefix "
           "[file|dir ...]\n"
           "\n"
           "Turn JSONL documents (one JSON object a line) into the token files "
           "the trainers\nread: PREFIX.bin + PREFIX.idx (Megatron/PaddleNLP "
           "mmap, default) or\nPREFIX_ids.npy + PREFIX_idx.npz (-f npy), "
           "byte-identical to PaddleNLP's\ncreate_pretraining_data.py.  A "
           "directory is read recursively: its *.jsonl and\n*.json files, "
           "plain or .zst, in sorted order.  No input or '-' reads stdin.\n"
           "\n"
           "  -v, --vocab PATH          vocab.txt, or a directory with "
           "vocab.txt (WordPiece)\n"
           "                            or vocab.json + merges.txt "
           "(gpt2-bpe)\n"
           "  -T, --tokenizer NAME      ernie (default), bert or gpt2-bpe\n"
           "  -M, --merges FILE         merges.txt, when -v names vocab.json\n"
           "  -o, --output-prefix PFX   write PFX.bin/.idx (or PFX_ids.npy/"
           "_idx.npz); PFX\n"
           "                            ends in a file name (not 'dir/')\n"
           "  -f, --format NAME         mmap (default) or npy\n"
           "  -k, --json-key KEY        the field to read (default 'text')\n"
           "  -S, --split-sentences     one item per sentence (needed for "
           "ERNIE's SOP)\n"
           "      --chinese             with -S: sentences are the lines of "
           "the text\n"
           "                            (else ICU's sentence rules)\n"
           "  -W, --cn-whole-word-segment\n"
           "                            mark Chinese words with ## (jieba, "
           "or --cn-splited)\n"
           "      --cn-splited          the text is already segmented: words "
           "are split by\n"
           "                            --cn-split-dimer (default ' ')\n"
           "      --cn-split-dimer STR  the word separator of --cn-splited\n"
           "      --max-word-length N   longest word marked, in tokens "
           "(default 6)\n"
           "      --cn-seg-func F       -W's segmenter: jieba (default), lac "
           "or seg (Baidu\n"
           "                            LAC 2.1.2's lac or seg network)\n"
           "      --engine E            jieba or lac; --lac-mode M: seg or "
           "lac\n"
           "  -m, --model FILE          the compiled jieba or LAC model\n"
           "  -U, --user-dict FILE      add a user dictionary (jieba's or "
           "LAC's)\n"
           "      --max-repeated-len N  collapse runs of more than N equal "
           "characters to one\n"
           "                            (default 100, as PaddleNLP; 'none' "
           "keeps them)\n"
           "  -e, --append-eos          end each document with <|endoftext|> "
           "(gpt2-bpe)\n"
           "      --keep-whitespace     keep a document's (and sentence's) "
           "leading and\n"
           "                            trailing whitespace, as Megatron-LM "
           "(gpt2-bpe)\n"
           "  -s, --skip-bad            skip bad records (and count them) "
           "instead of failing\n"
           "      --shard I/N           only the I-th of N runs of the files, "
           "cut by size (one\n"
           "                            task of a cluster job; `merge' of the "
           "N outputs in\n"
           "                            order gives the whole)\n"
           "  -j, --threads N           worker threads (default: online "
           "CPUs)\n"
           "      --log-interval N      a progress line every N documents\n"
           "  -P, --progress            show progress even if stderr is not a "
           "terminal\n"
           "  -q, --quiet               no progress, no summary\n"
           "  -h, --help                show this help and exit\n"
           "  -V, --version             show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad input), 2 usage "
           "error.\n");
    exit(0);
}

/* ------------------------------------------------------------------------ */
/* Text helpers                                                              */

/* Does s[0..len) (valid UTF-8) hold a run of more than n equal code
 * points other than '\n'?  Two code points are equal when their bytes
 * are, and the length of each comes from its lead byte. */
static bool
has_long_run(const char *str, size_t len, long n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t run = 1, k, prev_k = 0;

    if (n >= 71) {
        /* A run of more than n code points of k bytes is periodic with
         * period k over (n + 1) k bytes, so it holds at least 64
         * consecutive places p where s[p..p+8) = s[p+k..p+k+8), one of
         * them a multiple of 64.  No such sample, no run: most text is
         * done in a glance, the rest is scanned below. */
        bool maybe = false;

        for (size_t p = 0; p + 9 <= len && !maybe; p += 64) {
            uint64_t a, b;

            memcpy(&a, s + p, 8);
            for (size_t d = 1; d <= 4 && p + 8 + d <= len; d++) {
                memcpy(&b, s + p + d, 8);
                maybe |= a == b;
            }
        }
        if (!maybe)
            return false;
    }

    for (size_t i = 0; i < len; i += k, prev_k = k) {
        bool same;

        k = s[i] < 0x80 ? 1 : s[i] < 0xE0 ? 2 : s[i] < 0xF0 ? 3 : 4;
        same = k == prev_k && s[i] != '\n' && s[i] == s[i - k];
        for (size_t b = 1; same && b < k; b++)
            same = s[i + b] == s[i - k + b];
        if (!same)
            run = 1;
        else if (++run > (size_t)n)
            return true;
    }
    return false;
}

/* Python's re.sub(r"(.)\1{N,}", r"\1", text): a run of more than N equal
 * code points other than '\n' becomes one.  Returns 0 when the text has
 * no such run (out is untouched), 1 when out holds the new text, -1 when
 * out of memory. */
static int
collapse_runs(const char *s, size_t len, long n, struct tok_buf *out)
{
    size_t i = 0;

    if (!has_long_run(s, len, n))
        return 0;
    tok_buf_clear(out);
    while (i < len) {
        uint32_t cp;
        size_t k = tok_utf8_decode(s + i, len - i, &cp), j = i + k;
        size_t run = 1;

        while (j + k <= len && memcmp(s + j, s + i, k) == 0) {
            j += k;
            run++;
        }
        if (cp != '\n' && run > (size_t)n) {
            if (tok_buf_append(out, s + i, k) < 0)
                return -1;
        } else if (tok_buf_append(out, s + i, j - i) < 0) {
            return -1;
        }
        i = j;
    }
    return tok_buf_append(out, "", 0) < 0 ? -1 : 1;
}

/* Python's str.strip(): drop leading and trailing whitespace. */
static void
strip(const char **s, size_t *len)
{
    const char *p = *s, *end = *s + *len;

    while (p < end) {
        uint32_t cp;
        size_t k = tok_utf8_decode(p, (size_t)(end - p), &cp);

        if (k == 0 || !cli_is_space(cp))
            break;
        p += k;
    }
    while (end > p) {
        const char *q = end - 1;
        uint32_t cp;

        while (q > p && ((unsigned char)*q & 0xC0) == 0x80)
            q--;
        if (tok_utf8_decode(q, (size_t)(end - q), &cp) != (size_t)(end - q) ||
            !cli_is_space(cp))
            break;
        end = q;
    }
    *s = p;
    *len = (size_t)(end - p);
}

/* ------------------------------------------------------------------------ */
/* One sentence                                                              */

/* Tokenize one stripped sentence into (ids, n).  Returns -1 when out of
 * memory. */
static int
tokenize_sentence(const struct ctx *c, struct worker *w, const char *s,
                  size_t len, const int32_t **ids, size_t *n)
{
    const char *text = s;
    size_t text_len = len;

    tok_encoding_clear(&w->enc);
    if (c->tokenizer == TOKENIZER_GPT2_BPE) {
        if (tok_bpe_encode(c->bpe, s, len, &w->enc, NULL) < 0)
            return -1;
        goto done;
    }
    if (!c->wwm) {
        if (tok_encode(c->tok, s, len, &w->enc, NULL) < 0)
            return -1;
        goto done;
    }
    if (c->lac != NULL) {
        /* Marked when LAC has run (lac_flush): LAC's words cover the
         * sentence, so they joined are its text. */
        if (tok_encode(c->tok, s, len, &w->enc, NULL) < 0)
            return -1;
        goto done;
    }
    wwm_clear(w->wwm);
    if (c->cn_splited) {
        if (wwm_split(w->wwm, c->marks, s, len, &text, &text_len) < 0)
            return -1;
    } else {
        tok_words_clear(&w->words);
        if (tok_jieba_cut(c->jieba, s, len, TOK_JIEBA_HMM | TOK_JIEBA_TRUSTED,
                          &w->words, NULL) < 0)
            return -1;
        if (wwm_add_spans(w->wwm, s, w->words.starts, w->words.ends,
                          w->words.n) < 0)
            return -1;
    }
    if (tok_encode(c->tok, text, text_len, &w->enc, NULL) < 0 ||
        wwm_mark(w->wwm, c->marks, w->enc.ids, w->enc.chars, w->enc.n) < 0)
        return -1;
done:
    *ids = w->enc.ids;
    *n = w->enc.n;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Records: per document u32 n_sentences, then per sentence u32 n and n
 * int32 ids, in native byte order (they never leave the process). */

static int
put_u32(struct tok_buf *b, uint32_t v)
{
    return tok_buf_append(b, &v, sizeof(v));
}

static int lac_flush(const struct ctx *c, struct worker *w,
                     struct tok_buf *out);

/* LAC: queue the sentence s[0..len), whose n ids end out, for marking. */
static int
lac_queue(const struct ctx *c, struct worker *w, const char *s, size_t len,
          size_t n, struct tok_buf *out)
{
    struct marks_pending *p;
    int64_t index;

    if (w->n_pending == w->cap_pending) {
        size_t cap = w->cap_pending ? 2 * w->cap_pending : 256;

        p = realloc(w->pending, cap * sizeof(*p));
        if (p == NULL)
            return -1;
        w->pending = p;
        w->cap_pending = cap;
    }
    /* Records were checked whole, and their JSON strings decode to UTF-8. */
    if ((index = tok_lac_batch_add(w->lac, s, len, 1, NULL)) < 0)
        return -1;
    p = &w->pending[w->n_pending++];
    p->index = (size_t)index;
    p->ids_at = out->len - n * sizeof(tok_id);
    p->n = n;
    p->chars_at = w->chars.len;
    if (tok_buf_append(&w->chars, w->enc.chars, n * sizeof(uint32_t)) < 0)
        return -1;
    if (tok_lac_batch_bytes(w->lac) >= LAC_BATCH_BYTES)
        return lac_flush(c, w, out);
    return 0;
}

/* Run LAC over the queued sentences and mark their ids in out. */
static int
lac_flush(const struct ctx *c, struct worker *w, struct tok_buf *out)
{
    if (w->n_pending == 0)
        return 0;
    if (tok_lac_batch_run(w->lac, NULL) < 0)
        return -1;
    for (size_t k = 0; k < w->n_pending; k++) {
        const struct marks_pending *p = &w->pending[k];
        const char *text = tok_lac_batch_text(w->lac, p->index, NULL);
        struct tok_lac_words *lw = &w->lac_words;

        tok_lac_words_clear(lw);
        wwm_clear(w->wwm);
        /* The batch's texts have 16 NUL bytes after them: WWM_SLACK. */
        if (tok_lac_batch_words(w->lac, p->index, lw, NULL) < 0 ||
            wwm_add_spans(w->wwm, text, lw->starts, lw->ends, lw->n) < 0 ||
            wwm_mark(
                w->wwm, c->marks, (tok_id *)(void *)(out->data + p->ids_at),
                (const uint32_t *)(const void *)(w->chars.data + p->chars_at),
                p->n) < 0)
            return -1;
    }
    w->n_pending = 0;
    tok_buf_clear(&w->chars);
    tok_lac_batch_clear(w->lac);
    return 0;
}

static int
put_sentence(const struct ctx *c, struct worker *w, const char *s, size_t len,
             struct tok_buf *out, uint32_t *n_sent)
{
    const int32_t *ids;
    size_t n;

    if (!c->keep_space)
        strip(&s, &len);
    if (len == 0)
        return 0;
    if (tokenize_sentence(c, w, s, len, &ids, &n) < 0)
        return -1;
    if (n == 0)
        return 0;
    if (n > UINT32_MAX - 1)
        return -1;
    w->last_sentence = out->len;
    if (put_u32(out, (uint32_t)n) < 0 ||
        tok_buf_append(out, ids, n * sizeof(*ids)) < 0)
        return -1;
    (*n_sent)++;
    if (c->lac != NULL && lac_queue(c, w, s, len, n, out) < 0)
        return -1;
    return 0;
}

struct icu_doc {
    const struct ctx *c;
    struct worker *w;
    const char *text;
    struct tok_buf *out;
    uint32_t *n_sent;
};

static int
icu_sentence(void *arg, size_t start, size_t end)
{
    const struct icu_doc *d = arg;

    return put_sentence(d->c, d->w, d->text + start, end - start, d->out,
                        d->n_sent);
}

static int
put_document(const struct ctx *c, struct worker *w, const char *text,
             size_t len, struct tok_buf *out)
{
    size_t head = out->len;
    uint32_t n_sent = 0;

    if (put_u32(out, 0) < 0)
        return -1;
    switch (c->splitter) {
    case SPLIT_NONE:
        if (put_sentence(c, w, text, len, out, &n_sent) < 0)
            return -1;
        break;
    case SPLIT_NEWLINE: {
        const char *p = text, *end = text + len;

        for (;;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            /* --keep-whitespace: a line keeps its newline, so the
             * sentences add up to the whole text. */
            const char *le = nl ? nl + c->keep_space : end;

            if (put_sentence(c, w, p, (size_t)(le - p), out, &n_sent) < 0)
                return -1;
            if (nl == NULL)
                break;
            p = nl + 1;
        }
        break;
    }
    case SPLIT_ICU: {
        struct icu_doc d = { c, w, text, out, &n_sent };
        int rc = cli_sentences_each(w->sentences, text, len, icu_sentence, &d);

        if (rc < 0)
            return rc;
        break;
    }
    }
    if (n_sent && c->eos >= 0) {
        /* The eos id ends the document's last sentence. */
        uint32_t n_last;

        memcpy(&n_last, out->data + w->last_sentence, sizeof(n_last));
        n_last++;
        memcpy(out->data + w->last_sentence, &n_last, sizeof(n_last));
        if (tok_buf_append(out, &c->eos, sizeof(c->eos)) < 0)
            return -1;
    }
    memcpy(out->data + head, &n_sent, sizeof(n_sent));
    return 0;
}

static void
process_records(void *arg, unsigned worker, const char *lines, size_t len,
                uint64_t first_line, struct cli_chunk_result *r)
{
    const struct ctx *c = arg;
    struct worker *w = &c->workers[worker];
    const char *p = lines, *end = lines + len;
    uint64_t line = first_line;

    for (; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *rec = p, *rec_end = nl ? nl : end;
        size_t n = (size_t)(rec_end - rec), bad;
        const char *text;
        size_t text_len;
        char why[200];
        int k;

        p = nl ? nl + 1 : end;
        bad = tok_utf8_check(rec, n);
        if (bad != n) {
            if (!cli_chunk_bad(r, c->skip_bad, line,
                               "invalid UTF-8 at byte offset %zu of the record",
                               bad))
                return;
            continue;
        }
        k = cli_json_field(&w->jt, rec, n, c->json_key, &w->field, why,
                           sizeof(why));
        if (k == -2) {
            cli_chunk_error(r, line, "%s", why);
            return;
        }
        if (k == 0)
            continue; /* a blank line */
        if (k < 0) {
            if (!cli_chunk_bad(r, c->skip_bad, line, "%s", why))
                return;
            continue;
        }
        if (wwm_keep_slack(&w->field) < 0)
            goto nomem;
        text = w->field.data;
        text_len = w->field.len;
        if (c->max_repeat >= 0) {
            int got =
                collapse_runs(text, text_len, c->max_repeat, &w->collapsed);

            if (got < 0 || (got > 0 && wwm_keep_slack(&w->collapsed) < 0))
                goto nomem;
            if (got > 0) {
                text = w->collapsed.data;
                text_len = w->collapsed.len;
            }
        }
        r->n_records++;
        if ((k = put_document(c, w, text, text_len, &r->out)) < 0) {
            if (k != CLI_SENTENCES_TOO_LONG)
                goto nomem;
            cli_chunk_error(r, line, CLI_SENTENCES_TOO_LONG_MSG, text_len);
            return;
        }
    }
    return;
nomem:
    cli_chunk_error(r, line, "out of memory");
}

/* The chunk's records, then (LAC) the marks of the sentences queued: also
 * those before a record that stopped the run, whose records are written. */
static void
process_chunk(void *arg, unsigned worker, const char *lines, size_t len,
              uint64_t first_line, struct cli_chunk_result *r)
{
    const struct ctx *c = arg;
    struct worker *w = &c->workers[worker];

    process_records(arg, worker, lines, len, first_line, r);
    if (c->lac != NULL && lac_flush(c, w, &r->out) < 0) {
        w->n_pending = 0;
        tok_buf_clear(&w->chars);
        tok_lac_batch_clear(w->lac);
        if (r->status == 0)
            cli_chunk_error(r, first_line, "out of memory");
    }
}

/* The main thread: hand the records of one chunk, in order, to libdata. */
static int
sink_write(void *arg, const void *data, size_t len)
{
    struct sink *s = arg;
    const char *p = data, *end = p + len;
    uint64_t docs = 0;

    while (p < end) {
        uint32_t n_sent, longest = 0;

        memcpy(&n_sent, p, sizeof(n_sent));
        p += sizeof(n_sent);
        for (uint32_t i = 0; i < n_sent; i++) {
            uint32_t n;

            memcpy(&n, p, sizeof(n));
            p += sizeof(n);
            if (ds_writer_add_sentence(s->writer,
                                       (const int32_t *)(const void *)p, n,
                                       &s->err) < 0)
                goto fail;
            p += (size_t)n * sizeof(int32_t);
            longest = n > longest ? n : longest;
        }
        if (ds_writer_end_document(s->writer, &s->err) < 0)
            goto fail;
        if (n_sent == 1)
            s->n_one_sentence++;
        else if (n_sent > 1 && longest > DS_MAPPING_LONG_SENTENCE)
            s->n_long_sentence++;
        docs++;
    }
    s->docs_in += docs;
    return 0;
fail:
    warnx("%s", s->err.msg);
    s->failed = true;
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */

/* The JSONL files of a directory: *.jsonl and *.json, plain or .zst
 * (cli_is_json_name), but not the record beside a dataset (PREFIX.json
 * beside PREFIX.idx or PREFIX_idx.npz).  PaddleNLP reads every *.zst
 * too, whatever it holds: pku.txt.zst failed as JSONL. */
static const char *
not_corpus(const char *path)
{
    static const char *const dataset[] = { ".idx", "_idx.npz", NULL };
    size_t n = strlen(path);

    if (!cli_is_json_name(path))
        return "not *.jsonl or *.json (nor .zst of them)";
    if (!cli_ends_with(path, ".json"))
        return NULL;
    for (int i = 0; dataset[i]; i++) {
        char *p;
        bool beside;

        if (asprintf(&p, "%.*s%s", (int)(n - 5), path, dataset[i]) < 0)
            err(1, NULL);
        beside = access(p, F_OK) == 0;
        free(p);
        if (beside)
            return "the record of a dataset beside it, not JSONL";
    }
    return NULL;
}

/* Warn when few documents can give ERNIE's SOP pairs (two sentences or
 * more, none too long): train would find few samples, or none. */
static void
check_sop(const struct sink *s, uint64_t n_docs, bool chinese)
{
    uint64_t bad = s->n_one_sentence + s->n_long_sentence;

    if (n_docs == 0 || 2 * bad <= n_docs)
        return;
    if (bad == n_docs)
        warnx("warning: none of the %llu documents can give ERNIE's "
              "sentence-order (SOP) pairs: train would find no sample",
              (unsigned long long)n_docs);
    else
        warnx("warning: %llu of the %llu documents (%.0f%%) cannot give "
              "ERNIE's sentence-order (SOP) pairs",
              (unsigned long long)bad, (unsigned long long)n_docs,
              100.0 * (double)bad / (double)n_docs);
    if (s->n_one_sentence > 0)
        warnx("warning: %llu %s one sentence (a pair needs two): %s",
              (unsigned long long)s->n_one_sentence,
              s->n_one_sentence == 1 ? "document has" : "documents have",
              chinese ? "with --chinese the sentences are the lines of the "
                        "text; was it split into sentences, one a line (as "
                        "segment | json-pack does)?"
                      : "ICU's sentence rules found no break in them; is the "
                        "text in sentences, or (Chinese text one sentence a "
                        "line) does it need --chinese?");
    if (s->n_long_sentence > 0)
        warnx("warning: %llu %s a sentence of more than %d tokens, which "
              "train skips",
              (unsigned long long)s->n_long_sentence,
              s->n_long_sentence == 1 ? "document has" : "documents have",
              DS_MAPPING_LONG_SENTENCE);
}

/* Name the tokens whose ids the "##" extension takes over: with a vocab
 * that repeats tokens, PaddleNLP numbers the new "##<CJK>" tokens from
 * its count of distinct tokens, so the first of them share ids with the
 * vocab's last ones (ernie-3.0-base-zh: "##的" gets 39979, "[UNK]"). */
static void
warn_reused_ids(const struct tok_vocab *vocab, const tok_id *cont,
                const char *path)
{
    size_t n_ids = tok_vocab_n_ids(vocab), base = tok_vocab_size(vocab);
    size_t shown = 0, more = 0;

    for (size_t id = 0; id < n_ids; id++) {
        const char *old, *t;

        if (cont[id] < (tok_id)base || (size_t)cont[id] >= n_ids)
            continue;
        old = tok_vocab_token(vocab, cont[id], NULL);
        if (old == NULL)
            continue;
        if (shown == 3) {
            more++;
            continue;
        }
        t = tok_vocab_token(vocab, (tok_id)id, NULL);
        warnx("warning: '%s' repeats tokens, so (as in PaddleNLP) the "
              "'##' ids start at its %zu distinct tokens: '##%s' gets id "
              "%ld, the id of '%s'",
              path, base, t, (long)cont[id], old);
        shown++;
    }
    if (more)
        warnx("warning: '%s': %zu more '##' ids are ids of its tokens", path,
              more);
}

/* ------------------------------------------------------------------------ */
/* Vocabularies                                                              */

/* path, or path/name when path is a directory; malloc'd. */
static char *
in_dir(const char *path, const char *name)
{
    struct stat st;
    char *p;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (asprintf(&p, "%s/%s", path, name) < 0)
            err(1, NULL);
        return p;
    }
    p = strdup(path);
    if (p == NULL)
        err(1, NULL);
    return p;
}

/* ------------------------------------------------------------------------ */
/* The sidecar (ds-meta(5))                                                  */

/* What the options make of the ids, into a fresh record m; the vocab's
 * checksums, size and case follow when it is loaded. */
static void
record_options(struct ds_meta *m, const struct ctx *c,
               const struct cli_segmenter *seg, const char *vocab,
               bool append_eos)
{
    static const char *const names[] = { "ernie", "bert", "gpt2-bpe" };

    ds_meta_init(m, "create-pretraining-data", PROJECT_VERSION);
    snprintf(m->tokenizer, sizeof(m->tokenizer), "%s", names[c->tokenizer]);
    snprintf(m->vocab, sizeof(m->vocab), "%s", vocab);
    m->lowercase = 0; /* byte-level BPE keeps case */
    m->whole_word_marks = c->wwm;
    m->split_sentences = c->splitter != SPLIT_NONE;
    m->append_eod = append_eos;
    m->keep_whitespace = c->keep_space;
    if (c->splitter != SPLIT_NONE)
        snprintf(m->sentence_splitter, sizeof(m->sentence_splitter), "%s",
                 c->splitter == SPLIT_NEWLINE ? "lines" : "icu");
    if (c->wwm) {
        snprintf(m->segmenter, sizeof(m->segmenter), "%s",
                 c->cn_splited ? "presegmented" : cli_segmenter_name(seg));
        m->max_word_length = (int64_t)c->max_word_len;
    }
    m->max_repeated_len = c->max_repeat < 0 ? INT64_MAX : c->max_repeat;
}

/* ------------------------------------------------------------------------ */

enum {
    OPT_CHINESE = 256,
    OPT_CN_SPLITED,
    OPT_CN_SPLIT_DIMER,
    OPT_MAX_WORD_LENGTH,
    OPT_MAX_REPEATED_LEN,
    OPT_LOG_INTERVAL,
    OPT_KEEP_WHITESPACE,
    OPT_SHARD
};

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "vocab", required_argument, NULL, 'v' },
        { "tokenizer", required_argument, NULL, 'T' },
        { "merges", required_argument, NULL, 'M' },
        { "output-prefix", required_argument, NULL, 'o' },
        { "format", required_argument, NULL, 'f' },
        { "json-key", required_argument, NULL, 'k' },
        { "split-sentences", no_argument, NULL, 'S' },
        { "chinese", no_argument, NULL, OPT_CHINESE },
        { "cn-whole-word-segment", no_argument, NULL, 'W' },
        { "cn-splited", no_argument, NULL, OPT_CN_SPLITED },
        { "cn-split-dimer", required_argument, NULL, OPT_CN_SPLIT_DIMER },
        { "max-word-length", required_argument, NULL, OPT_MAX_WORD_LENGTH },
        { "model", required_argument, NULL, 'm' },
        { "jieba-model", required_argument, NULL, 'm' },
        CLI_SEGMENTER_OPTIONS,
        { "user-dict", required_argument, NULL, 'U' },
        { "max-repeated-len", required_argument, NULL, OPT_MAX_REPEATED_LEN },
        { "append-eos", no_argument, NULL, 'e' },
        { "keep-whitespace", no_argument, NULL, OPT_KEEP_WHITESPACE },
        { "skip-bad", no_argument, NULL, 's' },
        { "threads", required_argument, NULL, 'j' },
        { "log-interval", required_argument, NULL, OPT_LOG_INTERVAL },
        { "progress", no_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "shard", required_argument, NULL, OPT_SHARD },
        { NULL, 0, NULL, 0 }
    };
    struct ctx c;
    struct cli_shard shard = { 0, 0 };
    struct sink sink;
    struct cli_output out;
    struct cli_run run;
    struct cli_progress prog;
    struct cli_files files = { NULL, 0, 0, 0 };
    struct tok_vocab *vocab = NULL;
    size_t n_ext_ids = 0; /* with -W: ids of the vocab with its "##<CJK>" */
    struct tok_tokenizer *tok = NULL;
    struct tok_bpe *bpe = NULL;
    struct tok_jieba *jieba = NULL;
    struct tok_lac *lac = NULL;
    struct cli_segmenter_flags segf = { { false, TOK_LAC_SEG }, -1, false };
    const struct cli_segmenter *seg = &segf.seg;
    struct tok_err e;
    struct ds_err de;
    struct ds_meta meta;
    enum ds_format format = DS_FORMAT_MMAP;
    enum ds_dtype dtype;
    const char *vocab_path = NULL, *merges_path = NULL, *prefix = NULL;
    const char *model = NULL, *user_dict = NULL;
    const char *dimer = " ";
    struct wwm_vocab *marks = NULL;
    unsigned n_threads = cli_default_threads();
    bool quiet = false, progress = false, split = false, chinese = false;
    bool append_eos = false;
    uint64_t log_every = 0, total = 0;
    size_t vocab_size;
    int ch, rval;

    memset(&c, 0, sizeof(c));
    c.tokenizer = TOKENIZER_ERNIE;
    c.json_key = "text";
    c.max_word_len = 6;
    c.max_repeat = 100;
    c.eos = -1;

    while ((ch = getopt_long(argc, argv, "ef:hj:k:M:m:o:PqSsT:U:v:VW", longopts,
                             NULL)) != -1) {
        int seg_flag = cli_segmenter_flag(&segf, ch, optarg);

        if (seg_flag < 0)
            usage();
        if (seg_flag > 0)
            continue;
        switch (ch) {
        case 'e':
            append_eos = true;
            break;
        case 'f': {
            static const char *const formats[] = { "mmap", "npy", NULL };
            int k = cli_parse_choice(optarg, "format", formats);

            if (k < 0)
                usage();
            format = k == 0 ? DS_FORMAT_MMAP : DS_FORMAT_NPY;
            break;
        }
        case 'h':
            help();
            break;
        case 'j':
            n_threads = (unsigned)cli_parse_u64(optarg, 1, 256, "threads");
            break;
        case 'k':
            c.json_key = optarg;
            break;
        case 'M':
            merges_path = optarg;
            break;
        case 'm':
            model = optarg;
            break;
        case 'o':
            prefix = optarg;
            break;
        case 'P':
            progress = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'S':
            split = true;
            break;
        case 's':
            c.skip_bad = true;
            break;
        case 'T': {
            /* In enum tokenizer order. */
            static const char *const names[] = { "ernie", "bert", "gpt2-bpe",
                                                 NULL };
            int k = cli_parse_choice(optarg, "tokenizer", names);

            if (k < 0)
                usage();
            c.tokenizer = (enum tokenizer)k;
            break;
        }
        case 'U':
            user_dict = optarg;
            break;
        case 'v':
            vocab_path = optarg;
            break;
        case 'V':
            cli_print_version("create-pretraining-data");
            return 0;
        case 'W':
            c.wwm = true;
            break;
        case OPT_CHINESE:
            chinese = true;
            break;
        case OPT_CN_SPLITED:
            c.cn_splited = true;
            break;
        case OPT_CN_SPLIT_DIMER:
            dimer = optarg;
            break;
        case OPT_MAX_WORD_LENGTH:
            c.max_word_len =
                (size_t)cli_parse_u64(optarg, 1, 64, "max-word-length");
            break;
        case OPT_MAX_REPEATED_LEN:
            c.max_repeat = strcmp(optarg, "none") == 0
                               ? -1
                               : (long)cli_parse_u64(optarg, 0, 1u << 30,
                                                     "max-repeated-len");
            break;
        case OPT_LOG_INTERVAL:
            log_every = cli_parse_u64(optarg, 1, UINT64_MAX, "log-interval");
            break;
        case OPT_KEEP_WHITESPACE:
            c.keep_space = true;
            break;
        case OPT_SHARD:
            if (!cli_shard_parse(optarg, &shard))
                usage();
            break;
        default:
            usage();
        }
    }
    if (cli_segmenter_done(&segf) < 0)
        usage();
    if (seg->lac && (!c.wwm || c.cn_splited)) {
        warnx("LAC (--cn-seg-func lac or seg) segments for -W "
              "(--cn-whole-word-segment)%s",
              c.cn_splited ? ", not --cn-splited text" : "");
        usage();
    }
    argc -= optind;
    argv += optind;
    if (vocab_path == NULL || prefix == NULL) {
        warnx("%s is required", vocab_path == NULL ? "--vocab" : "-o PREFIX");
        usage();
    }
    if (ds_prefix_check(prefix, &de) < 0) {
        warnx("-o: %s", de.msg);
        usage();
    }
    if (c.cn_splited && *dimer == '\0') {
        warnx("--cn-split-dimer must not be empty");
        usage();
    }
    if (tok_utf8_check(dimer, strlen(dimer)) != strlen(dimer)) {
        /* Text is split where its bytes match: a separator that is not
         * UTF-8 would split characters. */
        warnx("--cn-split-dimer is not valid UTF-8");
        usage();
    }
    if (c.tokenizer == TOKENIZER_GPT2_BPE && c.wwm) {
        warnx("--cn-whole-word-segment needs a WordPiece tokenizer "
              "(ernie or bert)");
        usage();
    }
    if (append_eos && c.tokenizer != TOKENIZER_GPT2_BPE) {
        warnx("--append-eos: the %s tokenizer has no end-of-text token",
              c.tokenizer == TOKENIZER_ERNIE ? "ernie" : "bert");
        usage();
    }
    if (c.keep_space && c.tokenizer != TOKENIZER_GPT2_BPE) {
        /* WordPiece never makes a token of whitespace (Megatron's BERT
         * tokenizers neither): the option would change nothing. */
        warnx("--keep-whitespace: the %s tokenizer drops whitespace "
              "anyway; it applies to gpt2-bpe",
              c.tokenizer == TOKENIZER_ERNIE ? "ernie" : "bert");
        usage();
    }
    c.splitter = !split ? SPLIT_NONE : chinese ? SPLIT_NEWLINE : SPLIT_ICU;
    record_options(&meta, &c, seg, vocab_path, append_eos);

    /* The inputs first: a mistake there fails before the models load. */
    if (cli_files_expand(&files, argc, argv, not_corpus, "JSONL ", quiet) !=
        0) {
        cli_files_release(&files);
        return cli_exit_status(1);
    }
    if (shard.n > 0 && cli_files_shard(&files, &shard, quiet) != 0) {
        cli_files_release(&files);
        return cli_exit_status(EXIT_USAGE);
    }
    total = files.total_bytes;
    if (argc > 0 && files.n == 0)
        errx(1, "no input: the directories hold no *.jsonl or *.json file "
                "(nor .zst of them)");

    /* The tokenizer, and the dtype PaddleNLP would pick for it. */
    if (c.tokenizer == TOKENIZER_GPT2_BPE) {
        char *vj = in_dir(vocab_path, "vocab.json");
        char *mt = merges_path ? strdup(merges_path)
                               : in_dir(vocab_path, "merges.txt");

        if (mt == NULL)
            err(1, NULL);
        if (merges_path == NULL && strcmp(vj, vocab_path) == 0) {
            warnx("--vocab names a file: give merges.txt with --merges");
            usage();
        }
        if (tok_bpe_load(&bpe, vj, mt, &e) < 0)
            errx(1, "%s", e.msg);
        if (ds_meta_file_sha256(vj, meta.vocab_sha256, &de) < 0 ||
            ds_meta_file_sha256(mt, meta.merges_sha256, &de) < 0)
            errx(1, "%s", de.msg);
        free(vj);
        free(mt);
        vocab_size = tok_bpe_vocab_size(bpe);
        meta.vocab_size = (int64_t)vocab_size;
        if (append_eos) {
            c.eos = tok_bpe_find(bpe, "<|endoftext|>", 13);
            if (c.eos < 0)
                errx(1, "--append-eos: the vocab has no '<|endoftext|>'");
        }
    } else {
        char *vt = in_dir(vocab_path, "vocab.txt");
        struct tok_opts o;

        vocab = cli_vocab_load(vt, quiet);
        if (ds_meta_file_sha256(vt, meta.vocab_sha256, &de) < 0)
            errx(1, "%s", de.msg);
        tok_opts_init(&o, c.tokenizer == TOKENIZER_ERNIE ? TOK_FLAVOR_ERNIE
                                                         : TOK_FLAVOR_BERT);
        meta.lowercase = o.lowercase != 0;
        if (tok_tokenizer_new(&tok, vocab, &o, &e) < 0)
            errx(1, "%s", e.msg);
        vocab_size = tok_vocab_size(vocab);
        meta.vocab_size = (int64_t)tok_vocab_n_ids(vocab); /* its lines */
        if (c.wwm) {
            /* The "##" form of each id, the "##<CJK>" ones numbered as
             * PaddleNLP's extend_chinese_char() adds them. */
            size_t n_ids = tok_vocab_n_ids(vocab), added;
            tok_id *cont = malloc((n_ids ? n_ids : 1) * sizeof(*cont));

            if (cont == NULL)
                err(1, NULL);
            added = tok_vocab_cont_ids(vocab, cont);
            n_ext_ids = vocab_size + added > n_ids ? vocab_size + added : n_ids;
            if (n_ids > vocab_size && added > 0 && !quiet)
                warn_reused_ids(vocab, cont, vt);
            marks = wwm_vocab_new(vocab, cont, c.max_word_len, dimer);
            if (marks == NULL)
                err(1, "'%s'", vt);
            free(cont);
            c.marks = marks;
        }
        free(vt);
        c.tok = tok;
        c.vocab = vocab;
    }
    /* PaddleNLP: uint16 if vocab_size < 2**16 - 1, else int32; the "##"
     * ids must fit too, which PaddleNLP does not check. */
    dtype = vocab_size < 65535 ? DS_DTYPE_UINT16 : DS_DTYPE_INT32;
    if (dtype == DS_DTYPE_INT32 && !quiet)
        warnx("the vocab has %zu tokens (more than 65534): ids are stored "
              "as int32",
              vocab_size);
    if (dtype == DS_DTYPE_UINT16 && n_ext_ids > 65536) {
        dtype = DS_DTYPE_INT32;
        if (!quiet)
            warnx("with the '##' ids the vocab needs %zu ids (more than "
                  "65536): ids are stored as int32",
                  n_ext_ids);
    }

    if (c.wwm && !c.cn_splited && seg->lac)
        c.lac = lac = cli_lac_open(model, user_dict, seg->lac_mode);
    else if (c.wwm && !c.cn_splited)
        c.jieba = jieba =
            cli_jieba_open(model, user_dict, cli_plain_bytes(argc, argv));
    c.bpe = bpe;

    c.workers = calloc(n_threads, sizeof(*c.workers));
    if (c.workers == NULL)
        err(1, NULL);
    for (unsigned i = 0; i < n_threads; i++) {
        struct worker *w = &c.workers[i];

        w->jt = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
        if (w->jt == NULL)
            err(1, NULL);
        tok_buf_init(&w->field);
        tok_buf_init(&w->collapsed);
        if (c.wwm && (w->wwm = wwm_new()) == NULL)
            err(1, NULL);
        tok_encoding_init(&w->enc);
        /* the marking compares the tokens it knows as code points */
        w->enc.want_chars = c.wwm;
        /* Each record was checked whole, and its JSON string decodes to
         * valid UTF-8 (cli_json_field); only pre-segmented text, whose
         * words a separator of any bytes splits, is checked again. */
        w->enc.valid_utf8 = !c.cn_splited;
        tok_words_init(&w->words);
        tok_buf_init(&w->chars);
        tok_lac_words_init(&w->lac_words);
        if (lac != NULL &&
            tok_lac_batch_new(&w->lac, lac, seg->lac_mode, &e) < 0)
            errx(1, "%s", e.msg);
        if (c.splitter == SPLIT_ICU)
            w->sentences = cli_sentences_new();
    }

    if (ds_meta_check_name(prefix, &de) < 0 ||
        ds_writer_open(&sink.writer, prefix, format, dtype, &de) < 0)
        errx(1, "%s", de.msg);
    sink.docs_in = 0;
    sink.n_one_sentence = sink.n_long_sentence = 0;
    sink.failed = false;
    cli_progress_init(&prog, !quiet && (progress || isatty(STDERR_FILENO)));
    prog.unit = "documents";
    prog.total = total;
    prog.log_every = quiet ? 0 : log_every;
    prog.next_log = log_every;
    cli_output_sink(&out, sink_write, &sink);

    memset(&run, 0, sizeof(run));
    run.n_threads = n_threads;
    run.chunk_size = CHUNK_SIZE;
    run.records = CLI_RECORDS_LINES;
    run.quiet = quiet;
    run.progress = progress;
    run.fn = process_chunk;
    run.ctx = &c;
    run.prog = &prog;
    rval = cli_run_files(&run, (int)files.n, files.v, &out);
    if (rval == 0 && ds_writer_n_documents(sink.writer) == 0) {
        /* PaddleNLP fails here too (a division by zero in its summary);
         * an empty dataset is never what was meant. */
        warnx("no document has a token (%llu read): nothing written",
              (unsigned long long)sink.docs_in);
        rval = 1;
    }
    if (rval == 0) {
        uint64_t n_docs = ds_writer_n_documents(sink.writer);
        uint64_t n_sent = ds_writer_n_sentences(sink.writer);
        uint64_t n_tok = ds_writer_n_tokens(sink.writer);

        meta.format = format;
        meta.dtype = dtype;
        meta.n_documents = n_docs;
        meta.n_sentences = n_sent;
        meta.n_tokens = n_tok;
        /* The old record goes before the new files take its place, the
         * new one after: none ever describes other files. */
        if (ds_meta_remove(prefix, &de) < 0) {
            ds_writer_abort(sink.writer);
            warnx("%s", de.msg);
            rval = 1;
        } else if (ds_writer_commit(sink.writer, &de) < 0 ||
                   ds_meta_write(prefix, &meta, &de) < 0) {
            warnx("%s", de.msg);
            rval = 1;
        } else if (!quiet) {
            char *names[2] = { NULL, NULL };

            if (ds_output_names(prefix, format, names) == 0)
                fprintf(stderr,
                        "create-pretraining-data: wrote %s and %s (%s): "
                        "%llu documents of %llu read, %llu sentences, %llu "
                        "tokens (%.2f a sentence, %.2f a document)\n",
                        names[0], names[1], ds_dtype_name(dtype),
                        (unsigned long long)n_docs,
                        (unsigned long long)sink.docs_in,
                        (unsigned long long)n_sent, (unsigned long long)n_tok,
                        n_sent ? (double)n_tok / (double)n_sent : 0.0,
                        n_docs ? (double)n_tok / (double)n_docs : 0.0);
            free(names[0]);
            free(names[1]);
        }
        /* Only ERNIE trains on sentence pairs, and only -S makes them. */
        if (rval == 0 && !quiet && split && c.tokenizer != TOKENIZER_GPT2_BPE)
            check_sop(&sink, n_docs, chinese);
    } else {
        ds_writer_abort(sink.writer);
    }

    for (unsigned i = 0; i < n_threads; i++) {
        struct worker *w = &c.workers[i];

        json_tokener_free(w->jt);
        tok_buf_release(&w->field);
        tok_buf_release(&w->collapsed);
        tok_encoding_release(&w->enc);
        tok_words_release(&w->words);
        tok_buf_release(&w->chars);
        tok_lac_words_release(&w->lac_words);
        tok_lac_batch_free(w->lac);
        free(w->pending);
        wwm_free(w->wwm);
        cli_sentences_free(w->sentences);
    }
    cli_files_release(&files);
    free(c.workers);
    wwm_vocab_free(marks);
    tok_jieba_close(jieba);
    tok_lac_close(lac);
    tok_tokenizer_free(tok);
    tok_vocab_free(vocab);
    tok_bpe_free(bpe);
    return cli_exit_status(rval);
}

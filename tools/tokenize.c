/* SPDX-License-Identifier: MIT */
/*
 * tokenize: text lines or JSONL documents to BERT/ERNIE WordPiece ids or
 * GPT-2 byte-level BPE ids (or tokens), one output line per input record,
 * and ids back to text with -d.  A thin layer over libtok and the shared
 * pipeline of cli.c; see tokenize(1).
 */
#include <err.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "tok.h"
#include "banned.h"

#define CHUNK_SIZE (1u << 20)

enum out_format { OUT_IDS, OUT_TOKENS };

struct worker {
    struct tok_encoding enc;
    struct tok_buf raw;  /* a JSONL line, valid UTF-8 */
    struct tok_buf text; /* the text to tokenize */
    struct json_tokener *jt;
    tok_id *ids;
    size_t cap_ids;
};

struct ctx {
    const struct tok_tokenizer *tok; /* WordPiece, or */
    const struct tok_vocab *vocab;
    const struct tok_bpe *bpe; /* byte-level BPE */
    bool jsonl, decode, skip_bad;
    const char *json_key;
    enum tok_utf8_policy policy;
    enum out_format format;
    struct worker *workers;
};

static void
usage(void)
{
    fprintf(stderr,
            "usage: tokenize [-dhJLlPqstV] [-F flavor] [-j threads] "
            "[-k key] [-M merges]\n"
            "                [-m chars] [-o output] [-u policy] -v vocab "
            "[file ...]\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf(
        "usage: tokenize [-dhJLlPqstV] [-F flavor] [-j threads] [-k key] "
        "[-M merges]\n"
        "                [-m chars] [-o output] [-u policy] -v vocab "
        "[file ...]\n"
        "\n"
        "Tokenize text lines (or JSONL documents) into BERT/ERNIE WordPiece "
        "ids or\nGPT-2 byte-level BPE ids, one output line per input record.  "
        "Files may be\nzstd-compressed; no file or '-' reads stdin.\n"
        "\n"
        "  -v, --vocab FILE       vocab.txt (one token a line, or "
        "token<TAB>id);\n"
        "                         gpt2-bpe: vocab.json, or a directory with "
        "vocab.json\n"
        "                         and merges.txt\n"
        "  -F, --flavor NAME      ernie (PaddleNLP, default), bert "
        "(Google/HF) or\n"
        "                         gpt2-bpe (HF ByteLevelBPETokenizer)\n"
        "  -M, --merges FILE      gpt2-bpe: merges.txt (unless -v is a "
        "directory)\n"
        "  -l, --lower            WordPiece: lowercase and strip accents "
        "(default)\n"
        "  -L, --no-lower         WordPiece: keep case and accents\n"
        "  -m, --max-word-chars N WordPiece: longer words become [UNK] "
        "(default 100)\n"
        "  -J, --jsonl            input is JSONL; tokenize one string field\n"
        "  -k, --json-key KEY     the field to read (default 'text'; "
        "implies -J)\n"
        "  -t, --tokens           print tokens instead of ids\n"
        "  -d, --decode           read ids, print text\n"
        "  -u, --invalid POLICY   invalid UTF-8: strict (error, default), "
        "replace, skip\n"
        "  -s, --skip-bad         skip bad records (and count them) instead "
        "of failing\n"
        "  -j, --threads N        worker threads (default: online CPUs)\n"
        "  -o, --output FILE      write to FILE (via a temporary file) "
        "instead of stdout\n"
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

static int
append_u32(struct tok_buf *b, uint32_t v)
{
    char tmp[12];
    int n = 0;

    do {
        tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return tok_buf_append(b, tmp + sizeof(tmp) - n, (size_t)n);
}

static int
format_ids(const struct ctx *c, const struct tok_encoding *e,
           struct tok_buf *out)
{
    for (size_t i = 0; i < e->n; i++) {
        if (i && tok_buf_append(out, " ", 1) < 0)
            return -1;
        if (c->format == OUT_IDS) {
            if (append_u32(out, (uint32_t)e->ids[i]) < 0)
                return -1;
        } else {
            size_t len;
            const char *t = c->bpe ? tok_bpe_token(c->bpe, e->ids[i], &len)
                                   : tok_vocab_token(c->vocab, e->ids[i], &len);

            if (tok_buf_append(out, t, len) < 0)
                return -1;
        }
    }
    return tok_buf_append(out, "\n", 1);
}

/* Get the text of one record into w->text (sanitized), or report it. */
static bool
record_text(const struct ctx *c, struct worker *w, const char *s, size_t len,
            uint64_t line, struct cli_chunk_result *r, bool *skip)
{
    struct tok_err e;
    int64_t rc;

    struct tok_buf *utf8 = c->jsonl ? &w->raw : &w->text;

    *skip = false;
    tok_buf_clear(utf8);
    rc = tok_utf8_sanitize(s, len, c->policy, utf8, NULL, &e);
    if (rc == TOK_EUTF8) {
        *skip = true;
        return cli_chunk_bad(r, c->skip_bad, line, "%s", e.msg);
    }
    if (rc < 0) {
        cli_chunk_error(r, line, "%s", tok_strerror((int)rc));
        return false;
    }
    if (!c->jsonl)
        return true;

    /* JSONL: parse the (now valid UTF-8) line, take one string field. */
    {
        char why[200];
        int k =
            cli_json_field(&w->jt, w->raw.data ? w->raw.data : "", w->raw.len,
                           c->json_key, &w->text, why, sizeof(why));

        if (k == 1)
            return true;
        *skip = true;
        if (k == 0)
            return true;
        if (k == -2) {
            cli_chunk_error(r, line, "%s", why);
            return false;
        }
        return cli_chunk_bad(r, c->skip_bad, line, "%s", why);
    }
}

static bool
decode_line(const struct ctx *c, struct worker *w, const char *s, size_t len,
            uint64_t line, struct cli_chunk_result *r)
{
    size_t n = 0;
    struct tok_err e;
    int64_t before = (int64_t)r->out.len;

    for (size_t i = 0; i < len;) {
        uint64_t v = 0;
        size_t j = i;

        if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
            i++;
            continue;
        }
        while (j < len && s[j] >= '0' && s[j] <= '9' && v <= INT32_MAX)
            v = v * 10 + (uint64_t)(s[j++] - '0');
        if (j == i || v > INT32_MAX ||
            (j < len && s[j] != ' ' && s[j] != '\t' && s[j] != '\r')) {
            return cli_chunk_bad(r, c->skip_bad, line,
                                 "not an id at column %zu", i + 1);
        }
        if (n == w->cap_ids) {
            size_t cap = w->cap_ids ? 2 * w->cap_ids : 256;
            tok_id *ids = realloc(w->ids, cap * sizeof(*ids));
            if (ids == NULL) {
                cli_chunk_error(r, line, "%s", tok_strerror(TOK_ENOMEM));
                return false;
            }
            w->ids = ids;
            w->cap_ids = cap;
        }
        w->ids[n++] = (tok_id)v;
        i = j;
    }
    if ((c->bpe ? tok_bpe_decode(c->bpe, w->ids, n, &r->out, &e)
                : tok_decode(c->tok, w->ids, n, &r->out, &e)) < 0) {
        r->out.len = (size_t)before;
        return cli_chunk_bad(r, c->skip_bad, line, "%s", e.msg);
    }
    if (tok_buf_append(&r->out, "\n", 1) < 0) {
        cli_chunk_error(r, line, "%s", tok_strerror(TOK_ENOMEM));
        return false;
    }
    return true;
}

static void
process_chunk(void *arg, unsigned worker, const char *lines, size_t len,
              uint64_t first_line, struct cli_chunk_result *r)
{
    const struct ctx *c = arg;
    struct worker *w = &c->workers[worker];
    const char *p = lines, *end = lines + len;
    uint64_t line = first_line;

    if (!c->jsonl && !c->decode &&
        !cli_jsonl_check(r, lines, len, first_line, c->json_key,
                         "tokenize its field with -J (or -k KEY)"))
        return;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        bool skip;
        struct tok_err e;

        r->n_records++;
        if (c->decode) {
            if (!decode_line(c, w, p, n, line, r))
                return;
        } else {
            if (!record_text(c, w, p, n, line, r, &skip))
                return;
            if (!skip) {
                const char *text = w->text.data ? w->text.data : "";
                int rc;

                tok_encoding_clear(&w->enc);
                rc =
                    c->bpe
                        ? tok_bpe_encode(c->bpe, text, w->text.len, &w->enc, &e)
                        : tok_encode(c->tok, text, w->text.len, &w->enc, &e);
                if (rc < 0) {
                    cli_chunk_error(r, line, "%s", e.msg);
                    return;
                }
                if (format_ids(c, &w->enc, &r->out) < 0) {
                    cli_chunk_error(r, line, "%s", tok_strerror(TOK_ENOMEM));
                    return;
                }
            }
        }
        line++;
        p = nl ? nl + 1 : end;
    }
}

/* ------------------------------------------------------------------------ */

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "decode", no_argument, NULL, 'd' },
        { "flavor", required_argument, NULL, 'F' },
        { "help", no_argument, NULL, 'h' },
        { "jsonl", no_argument, NULL, 'J' },
        { "threads", required_argument, NULL, 'j' },
        { "json-key", required_argument, NULL, 'k' },
        { "no-lower", no_argument, NULL, 'L' },
        { "lower", no_argument, NULL, 'l' },
        { "merges", required_argument, NULL, 'M' },
        { "max-word-chars", required_argument, NULL, 'm' },
        { "output", required_argument, NULL, 'o' },
        { "progress", no_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "skip-bad", no_argument, NULL, 's' },
        { "tokens", no_argument, NULL, 't' },
        { "invalid", required_argument, NULL, 'u' },
        { "version", no_argument, NULL, 'V' },
        { "vocab", required_argument, NULL, 'v' },
        { NULL, 0, NULL, 0 }
    };
    struct ctx c;
    struct tok_opts opts;
    struct tok_vocab *vocab = NULL;
    struct tok_tokenizer *tok = NULL;
    struct tok_bpe *bpe = NULL;
    struct tok_err e;
    struct cli_output out;
    struct cli_run run;
    const char *vocab_path = NULL, *merges_path = NULL, *out_path = NULL;
    bool gpt2 = false;
    unsigned n_threads = cli_default_threads();
    bool quiet = false, progress = false;
    int ch, rval = 0;

    memset(&c, 0, sizeof(c));
    c.json_key = "text";
    c.policy = TOK_UTF8_STRICT;
    c.format = OUT_IDS;
    tok_opts_init(&opts, TOK_FLAVOR_ERNIE);

    while ((ch = getopt_long(argc, argv, "dF:hJj:k:LlM:m:o:Pqstu:Vv:", longopts,
                             NULL)) != -1) {
        switch (ch) {
        case 'd':
            c.decode = true;
            break;
        case 'F': {
            /* In enum tok_flavor order, then the BPE. */
            static const char *const flavors[] = { "ernie", "bert", "gpt2-bpe",
                                                   NULL };
            int k = cli_parse_choice(optarg, "flavor", flavors);

            if (k < 0)
                usage();
            gpt2 = k == 2;
            if (!gpt2)
                opts.flavor = (enum tok_flavor)k;
            break;
        }
        case 'h':
            help();
            break;
        case 'J':
            c.jsonl = true;
            break;
        case 'j':
            n_threads = (unsigned)cli_parse_u64(optarg, 1, 256, "threads");
            break;
        case 'k':
            c.json_key = optarg;
            c.jsonl = true;
            break;
        case 'L':
            opts.lowercase = 0;
            break;
        case 'l':
            opts.lowercase = 1;
            break;
        case 'M':
            merges_path = optarg;
            break;
        case 'm':
            opts.max_chars_per_word =
                (size_t)cli_parse_u64(optarg, 1, 1000000, "max-word-chars");
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
        case 's':
            c.skip_bad = true;
            break;
        case 't':
            c.format = OUT_TOKENS;
            break;
        case 'u': {
            /* In enum tok_utf8_policy order. */
            static const char *const policies[] = { "strict", "replace", "skip",
                                                    NULL };
            int k = cli_parse_choice(optarg, "policy", policies);

            if (k < 0)
                usage();
            c.policy = (enum tok_utf8_policy)k;
            break;
        }
        case 'V':
            cli_print_version("tokenize");
            return 0;
        case 'v':
            vocab_path = optarg;
            break;
        default:
            usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (vocab_path == NULL) {
        warnx("no vocab: give one with -v FILE");
        usage();
    }
    if (c.decode && (c.jsonl || c.format == OUT_TOKENS)) {
        warnx("-d reads ids; it cannot be combined with -J, -k or -t");
        usage();
    }
    if (merges_path != NULL && !gpt2) {
        warnx("-M is for -F gpt2-bpe");
        usage();
    }

    if (gpt2) {
        struct stat st;
        char *json = NULL, *txt = NULL;

        /* -v DIR: the two files as save_model() writes them. */
        if (stat(vocab_path, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (asprintf(&json, "%s/vocab.json", vocab_path) < 0 ||
                (merges_path == NULL &&
                 asprintf(&txt, "%s/merges.txt", vocab_path) < 0))
                err(1, NULL);
            vocab_path = json;
            if (merges_path == NULL)
                merges_path = txt;
        }
        if (merges_path == NULL) {
            warnx("no merges: give -M FILE, or a directory with -v");
            usage();
        }
        if (tok_bpe_load(&bpe, vocab_path, merges_path, &e) < 0)
            errx(1, "%s", e.msg);
        free(json);
        free(txt);
    } else {
        vocab = cli_vocab_load(vocab_path, quiet);
        if (c.decode && tok_vocab_extend_chinese(vocab, &e) < 0)
            errx(1, "%s", e.msg);
        if (tok_tokenizer_new(&tok, vocab, &opts, &e) < 0)
            errx(1, "%s", e.msg);
    }
    c.tok = tok;
    c.vocab = vocab;
    c.bpe = bpe;
    c.workers = calloc(n_threads, sizeof(*c.workers));
    if (c.workers == NULL)
        err(1, NULL);
    for (unsigned i = 0; i < n_threads; i++) {
        tok_encoding_init(&c.workers[i].enc);
        tok_buf_init(&c.workers[i].raw);
        tok_buf_init(&c.workers[i].text);
        c.workers[i].jt = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
        if (c.workers[i].jt == NULL)
            err(1, NULL);
    }

    cli_output_open(&out, out_path);
    run.n_threads = n_threads;
    run.chunk_size = CHUNK_SIZE;
    run.records = CLI_RECORDS_LINES;
    run.json_array = false;
    run.quiet = quiet;
    run.progress = progress;
    run.fn = process_chunk;
    run.ctx = &c;
    run.prog = NULL;
    run.unit = "lines";
    rval = cli_run_files(&run, argc, argv, &out);
    for (unsigned i = 0; i < n_threads; i++) {
        tok_encoding_release(&c.workers[i].enc);
        tok_buf_release(&c.workers[i].raw);
        tok_buf_release(&c.workers[i].text);
        json_tokener_free(c.workers[i].jt);
        free(c.workers[i].ids);
    }
    free(c.workers);
    tok_tokenizer_free(tok);
    tok_vocab_free(vocab);
    tok_bpe_free(bpe);
    return cli_exit_status(rval);
}

/* SPDX-License-Identifier: MIT */
/*
 * json-pack: segmented (or plain) text to JSONL, one {"text": ...} object
 * per document, as PaddleNLP's trans_to_json.py does: documents end at a
 * blank line, short ones are dropped, and the output can be shuffled
 * deterministically (--shuffle --seed N) even when it does not fit in
 * memory.  See json-pack(1).
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tok.h"
#include "banned.h"

#define N_BUCKETS 256

struct packer {
    const char *key;
    const char *spliter; /* a line whose strip() equals this ends a doc */
    size_t spliter_len;
    uint64_t min_chars;
    struct tok_buf doc, json;
    uint64_t doc_chars;
    uint64_t n_docs, n_dropped, n_written;
    struct cli_output *out;
    struct cli_progress *prog;
    /* Shuffling: records go to bucket files by the top bits of a key. */
    bool shuffle;
    uint64_t seed;
    FILE *bucket[N_BUCKETS];
    char *bucket_dir;
};

enum { OPT_SHARD = 256 };

static void
usage(void)
{
    fprintf(stderr, "usage: json-pack [-hPqSV] [-D spliter] [-k key] "
                    "[-n chars] [-o output] [-s seed]\n"
                    "                 [-T tmpdir] [--shard i/n] [file ...]\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: json-pack [-hPqSV] [-D spliter] [-k key] [-n chars] "
           "[-o output] [-s seed]\n"
           "                 [-T tmpdir] [--shard i/n] [file ...]\n"
           "\n"
           "Pack text into JSONL, one {\"text\": \"...\"} object per "
           "document, as PaddleNLP's\ntrans_to_json.py does.  A document "
           "ends at a blank line; its lines keep their\nnewlines.  Files may "
           "be zstd-compressed; no file or '-' reads stdin.\n"
           "\n"
           "  -k, --json-key KEY     the key to write (default 'text')\n"
           "  -D, --doc-spliter STR  a line equal to STR (after stripping "
           "whitespace) ends\n"
           "                         a document (default: a blank line)\n"
           "  -n, --min-chars N      keep documents of more than N "
           "characters (default 10)\n"
           "  -S, --shuffle          shuffle the documents (external, "
           "deterministic)\n"
           "  -s, --seed N           the shuffle's seed (default 0)\n"
           "  -T, --tmpdir DIR       where the shuffle keeps its buckets "
           "(default: the\n"
           "                         output's directory, or $TMPDIR)\n"
           "      --shard I/N        only the I-th of N runs of the files, cut "
           "by size (one\n"
           "                         task of a cluster job; the N outputs in "
           "order make all)\n"
           "  -o, --output FILE      write to FILE via a temporary file; "
           "*.zst is compressed\n"
           "  -P, --progress         show progress on stderr even if it is "
           "not a terminal\n"
           "  -q, --quiet            no progress, no summary\n"
           "  -h, --help             show this help and exit\n"
           "  -V, --version          show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad input), 2 usage "
           "error.\n");
    exit(0);
}

/* ------------------------------------------------------------------------ */

static uint64_t
splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static int
put_record(struct packer *p, const char *rec, size_t len)
{
    uint64_t key, idx;
    unsigned b;
    uint64_t hdr[3];

    if (!p->shuffle)
        return cli_output_write(p->out, rec, len);
    /* The shuffled order is that of (key, index); the key depends only on
     * the seed and the document's index. */
    idx = p->n_written;
    key = splitmix64(p->seed ^ splitmix64(idx));
    b = (unsigned)(key >> 56);
    if (p->bucket[b] == NULL) {
        char path[4096];

        snprintf(path, sizeof(path), "%s/bucket.%03u", p->bucket_dir, b);
        p->bucket[b] = fopen(path, "w+b");
        if (p->bucket[b] == NULL) {
            warn("cannot create '%s'", path);
            return -1;
        }
    }
    hdr[0] = key;
    hdr[1] = idx;
    hdr[2] = len;
    if (fwrite(hdr, sizeof(hdr), 1, p->bucket[b]) != 1 ||
        fwrite(rec, 1, len, p->bucket[b]) != len) {
        warn("cannot write a shuffle bucket in '%s'", p->bucket_dir);
        return -1;
    }
    return 0;
}

/* Emit the current document if it is long enough. */
static int
end_doc(struct packer *p)
{
    int rc = 0;

    if (p->doc.len == 0 && p->doc_chars == 0)
        return 0;
    p->n_docs++;
    cli_progress_records(p->prog, 1);
    if (p->doc_chars > p->min_chars) {
        tok_buf_clear(&p->json);
        if (tok_buf_append(&p->json, "{", 1) < 0 ||
            tok_json_string(&p->json, p->key, strlen(p->key)) < 0 ||
            tok_buf_append(&p->json, ": ", 2) < 0 ||
            tok_json_string(&p->json, p->doc.data ? p->doc.data : "",
                            p->doc.len) < 0 ||
            tok_buf_append(&p->json, "}\n", 2) < 0) {
            warnx("out of memory");
            return -1;
        }
        rc = put_record(p, p->json.data, p->json.len);
        p->n_written++;
    } else {
        p->n_dropped++;
    }
    tok_buf_clear(&p->doc);
    p->doc_chars = 0;
    return rc;
}

static uint64_t
count_chars(const char *s, size_t len)
{
    uint64_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* Is the line (without its newline) the document spliter once stripped? */
static bool
is_spliter(const struct packer *p, const char *s, size_t len)
{
    size_t a = 0, b = len;

    while (a < b) {
        uint32_t cp;
        size_t n = tok_utf8_decode(s + a, b - a, &cp);

        if (n == 0 || !cli_is_space(cp))
            break;
        a += n;
    }
    while (b > a) {
        size_t k = b - 1;
        uint32_t cp;

        while (k > a && ((unsigned char)s[k] & 0xC0) == 0x80)
            k--;
        if (tok_utf8_decode(s + k, b - k, &cp) != b - k || !cli_is_space(cp))
            break;
        b = k;
    }
    return b - a == p->spliter_len && memcmp(s + a, p->spliter, b - a) == 0;
}

/* Whether line number lineno s[0..len) of `in` may be packed: the first
 * line that is not blank must not be a JSON object with a "text" field or
 * one named by -k (JSONL, which json-pack would wrap in JSON again). */
static bool
not_jsonl(const struct packer *p, const struct cli_input *in, const char *s,
          size_t len, uint64_t lineno, bool *checked)
{
    static const char advice[] = "it goes to create-pretraining-data as it is";
    struct cli_chunk_result r;

    if (*checked || cli_is_blank_line(s, len))
        return true;
    *checked = true;
    memset(&r, 0, sizeof(r));
    if (cli_jsonl_check(&r, s, len, 1, "text", advice) &&
        cli_jsonl_check(&r, s, len, 1, p->key, advice))
        return true;
    warnx("%s:%llu: %s", cli_input_name(in), (unsigned long long)lineno,
          r.err_msg);
    return false;
}

/* One line, newline included when present (already LF-normalized). */
static int
add_line(struct packer *p, const char *s, size_t len, bool has_nl)
{
    if (is_spliter(p, s, len))
        return end_doc(p);
    if (tok_buf_append(&p->doc, s, len) < 0 ||
        (has_nl && tok_buf_append(&p->doc, "\n", 1) < 0)) {
        warnx("out of memory");
        return -1;
    }
    p->doc_chars += count_chars(s, len) + (has_nl ? 1 : 0);
    return 0;
}

/* Read one input; lines end at LF, CR LF or a lone CR, like Python's text
 * files (universal newlines). */
static int
pack_file(struct packer *p, struct cli_input *in, struct cli_progress *prog)
{
    struct tok_buf line;
    char buf[1 << 16];
    uint64_t lineno = 1;
    bool cr = false, checked = false;
    long got;
    int rc = 0;

    tok_buf_init(&line);
    cli_progress_input(prog, in);
    while (rc == 0 && (got = cli_input_read(in, buf, sizeof(buf))) > 0) {
        cli_progress_add(prog, (uint64_t)got);
        for (long i = 0; i < got && rc == 0; i++) {
            char c = buf[i];

            if (cr && c == '\n') { /* the LF of a CR LF */
                cr = false;
                continue;
            }
            cr = c == '\r';
            if (c != '\n' && c != '\r') {
                if (tok_buf_append(&line, &c, 1) < 0)
                    rc = -1;
                continue;
            }
            if (tok_utf8_check(line.data ? line.data : "", line.len) !=
                line.len) {
                warnx("%s:%llu: invalid UTF-8", cli_input_name(in),
                      (unsigned long long)lineno);
                rc = -1;
                break;
            }
            if (!not_jsonl(p, in, line.data ? line.data : "", line.len, lineno,
                           &checked)) {
                rc = -1;
                break;
            }
            rc = add_line(p, line.data ? line.data : "", line.len, true);
            tok_buf_clear(&line);
            lineno++;
        }
    }
    if (got < 0)
        rc = -1;
    if (rc == 0 && line.len > 0) {
        if (tok_utf8_check(line.data, line.len) != line.len) {
            warnx("%s:%llu: invalid UTF-8", cli_input_name(in),
                  (unsigned long long)lineno);
            rc = -1;
        } else if (!not_jsonl(p, in, line.data, line.len, lineno, &checked)) {
            rc = -1;
        } else {
            rc = add_line(p, line.data, line.len, false);
        }
    }
    if (rc == 0)
        rc = end_doc(p);
    cli_progress_input(prog, NULL);
    tok_buf_release(&line);
    return rc;
}

struct rec {
    uint64_t key, idx;
    size_t off, len;
};

static int
rec_cmp(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sort each bucket in memory and write it out, in bucket order. */
static int
unshuffle_buckets(struct packer *p)
{
    int rc = 0;

    for (unsigned b = 0; b < N_BUCKETS && rc == 0; b++) {
        FILE *f = p->bucket[b];
        char *data = NULL;
        struct rec *recs = NULL;
        size_t n = 0, cap = 0;
        long size;

        if (f == NULL)
            continue;
        if (fflush(f) != 0 || fseek(f, 0, SEEK_END) != 0 ||
            (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
            warn("cannot read a shuffle bucket");
            return -1;
        }
        data = malloc((size_t)size + 1);
        if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size) {
            warnx("cannot read a shuffle bucket of %ld bytes", size);
            free(data);
            return -1;
        }
        for (size_t off = 0; off < (size_t)size;) {
            uint64_t hdr[3];

            if (n == cap) {
                struct rec *r;
                cap = cap ? 2 * cap : 1024;
                r = realloc(recs, cap * sizeof(*r));
                if (r == NULL) {
                    rc = -1;
                    break;
                }
                recs = r;
            }
            memcpy(hdr, data + off, sizeof(hdr));
            recs[n].key = hdr[0];
            recs[n].idx = hdr[1];
            recs[n].len = hdr[2];
            recs[n].off = off + sizeof(hdr);
            off += sizeof(hdr) + hdr[2];
            n++;
        }
        if (rc == 0) {
            qsort(recs, n, sizeof(*recs), rec_cmp);
            for (size_t i = 0; i < n && rc == 0; i++)
                rc = cli_output_write(p->out, data + recs[i].off, recs[i].len);
        }
        free(recs);
        free(data);
    }
    return rc;
}

static void
remove_buckets(struct packer *p)
{
    for (unsigned b = 0; b < N_BUCKETS; b++) {
        char path[4096];

        if (p->bucket[b] == NULL)
            continue;
        fclose(p->bucket[b]);
        p->bucket[b] = NULL;
        snprintf(path, sizeof(path), "%s/bucket.%03u", p->bucket_dir, b);
        unlink(path);
    }
    if (p->bucket_dir)
        rmdir(p->bucket_dir);
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "doc-spliter", required_argument, NULL, 'D' },
        { "help", no_argument, NULL, 'h' },
        { "json-key", required_argument, NULL, 'k' },
        { "min-chars", required_argument, NULL, 'n' },
        { "output", required_argument, NULL, 'o' },
        { "progress", no_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "shuffle", no_argument, NULL, 'S' },
        { "seed", required_argument, NULL, 's' },
        { "tmpdir", required_argument, NULL, 'T' },
        { "version", no_argument, NULL, 'V' },
        { "shard", required_argument, NULL, OPT_SHARD },
        { NULL, 0, NULL, 0 }
    };
    struct packer p;
    struct cli_shard shard = { 0, 0 };
    struct cli_files files = { NULL, 0, 0, 0 };
    struct cli_output out;
    struct cli_progress prog;
    const char *out_path = NULL, *tmpdir = NULL;
    bool quiet = false, progress = false;
    int ch, rval = 0;

    memset(&p, 0, sizeof(p));
    p.key = "text";
    p.spliter = "";
    p.min_chars = 10;
    while ((ch = getopt_long(argc, argv, "D:hk:n:o:PqSs:T:V", longopts,
                             NULL)) != -1) {
        switch (ch) {
        case 'D':
            p.spliter = optarg;
            break;
        case 'h':
            help();
            break;
        case 'k':
            p.key = optarg;
            break;
        case 'n':
            p.min_chars = cli_parse_u64(optarg, 0, UINT64_MAX / 2, "min-chars");
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
        case 'S':
            p.shuffle = true;
            break;
        case 's':
            p.seed = cli_parse_u64(optarg, 0, UINT64_MAX, "seed");
            break;
        case 'T':
            tmpdir = optarg;
            break;
        case 'V':
            cli_print_version("json-pack");
            return 0;
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
    /* The inputs: all of them, or the shard's. */
    for (int i = 0; i < argc; i++)
        cli_files_add(&files, argv[i]);
    if (shard.n > 0 && cli_files_shard(&files, &shard, quiet) != 0)
        exit(EXIT_USAGE);
    p.spliter_len = strlen(p.spliter);
    if (tok_utf8_check(p.key, strlen(p.key)) != strlen(p.key)) {
        warnx("the json key is not UTF-8");
        usage();
    }
    tok_buf_init(&p.doc);
    tok_buf_init(&p.json);
    if (p.shuffle) {
        char tmpl[4096 + 32];
        const char *dir = tmpdir;

        if (dir == NULL && out_path && strcmp(out_path, "-") != 0) {
            const char *slash = strrchr(out_path, '/');
            static char outdir[4096];

            if (slash)
                snprintf(outdir, sizeof(outdir), "%.*s",
                         (int)(slash - out_path), out_path);
            else
                snprintf(outdir, sizeof(outdir), ".");
            dir = outdir;
        }
        if (dir == NULL)
            dir = getenv("TMPDIR");
        if (dir == NULL || *dir == '\0')
            dir = "/tmp";
        snprintf(tmpl, sizeof(tmpl), "%s/json-pack.XXXXXX", dir);
        if (mkdtemp(tmpl) == NULL)
            err(1, "cannot create a temporary directory in '%s'", dir);
        p.bucket_dir = strdup(tmpl);
        if (p.bucket_dir == NULL)
            err(1, NULL);
    }
    cli_output_open(&out, out_path);
    p.out = &out;
    cli_progress_init(&prog, !quiet && (progress || isatty(STDERR_FILENO)));
    prog.unit = "documents";
    p.prog = &prog;
    {
        static char *const stdin_only[] = { "-", NULL };
        char *const *f = files.n > 0 ? files.v : stdin_only;

        prog.total = cli_stored_bytes(f);
        for (; *f && rval == 0; f++) {
            struct cli_input *in = cli_input_open(*f);

            if (in == NULL) {
                rval = 1;
                continue;
            }
            if (pack_file(&p, in, &prog) < 0)
                rval = 1;
            cli_input_close(in);
        }
    }
    if (rval == 0 && p.shuffle && unshuffle_buckets(&p) < 0)
        rval = 1;
    cli_progress_done(&prog);
    remove_buckets(&p);
    if (rval == 0) {
        if (cli_output_commit(&out) != 0)
            rval = 1;
    } else {
        cli_output_abort(&out);
    }
    if (rval == 0 && !quiet)
        fprintf(stderr,
                "json-pack: %llu documents written, %llu of %llu characters "
                "or fewer dropped\n",
                (unsigned long long)p.n_written,
                (unsigned long long)p.n_dropped,
                (unsigned long long)p.min_chars);
    tok_buf_release(&p.doc);
    tok_buf_release(&p.json);
    free(p.bucket_dir);
    cli_files_release(&files);
    return cli_exit_status(rval);
}

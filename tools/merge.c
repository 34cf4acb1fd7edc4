/* SPDX-License-Identifier: MIT */
/*
 * merge: many token datasets into one, as PaddleNLP's
 * llm/tools/preprocess/merge.py does with MMapIndexedDatasetBuilder's
 * merge_file_(): the tokens of each input are appended, its sentence sizes
 * extended, and its documents added after the previous inputs' sentences.
 * Inputs are read through libdata in either format; the output is written
 * by ds_writer (temporary files, renamed at the end).  See merge(1).
 */
#include <dirent.h>
#include <err.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ds.h"
#include "banned.h"

/* Tokens are copied in blocks of whole sentences of about this many
 * tokens (a longer sentence is read on its own). */
#define BLOCK_TOKENS (1u << 20)

struct prefixes {
    char **v;
    size_t n, cap;
};

/* What the first pass learns. */
struct totals {
    enum ds_dtype dtype;
    const char *dtype_from; /* the input that set dtype */
    uint64_t n_documents, n_sentences, n_tokens, bytes;
    struct ds_meta meta;   /* the inputs' sidecars, folded */
    const char *meta_from; /* the first input with one */
    size_t n_unrecorded;   /* inputs without one */
};

static void
usage(void)
{
    fprintf(stderr, "usage: merge [-hPqV] [-f format] -o prefix "
                    "prefix|dir ...\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: merge [-hPqV] [-f format] -o prefix prefix|dir ...\n"
           "\n"
           "Merge token datasets into one, as PaddleNLP's merge.py does: "
           "the tokens,\nsentences and documents of each input in turn.  "
           "An input is a dataset prefix\n(PREFIX.bin + PREFIX.idx, or "
           "PREFIX_ids.npy + PREFIX_idx.npz), or a directory,\nwhich stands "
           "for every dataset in it, in sorted order.  All inputs must have "
           "the\nsame dtype (uint16 or int32), and where they have "
           "sidecars (PREFIX.json), the\nsame tokenizer, vocab and "
           "options; the output gets one when every input has\none.\n"
           "\n"
           "  -o, --output-prefix PFX  write PFX.bin/.idx (or PFX_ids.npy/"
           "_idx.npz)\n"
           "  -f, --format NAME        mmap (default) or npy\n"
           "  -P, --progress           show progress even if stderr is not "
           "a terminal\n"
           "  -q, --quiet              no progress, no summary\n"
           "  -h, --help               show this help and exit\n"
           "  -V, --version            show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad input), 2 usage "
           "error.\n");
    exit(0);
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */

static void
prefixes_add(struct prefixes *l, char *s)
{
    if (s == NULL)
        err(1, NULL);
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof(*v));

        if (v == NULL)
            err(1, NULL);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
}

static char *
cat(const char *a, const char *b)
{
    char *s;

    if (asprintf(&s, "%s%s", a, b) < 0)
        err(1, NULL);
    return s;
}

static bool
exists(const char *prefix, const char *suffix)
{
    char *p = cat(prefix, suffix);
    bool yes = access(p, F_OK) == 0;

    free(p);
    return yes;
}

/* The name of a dataset file without its suffix, or NULL. */
static char *
strip_suffix(const char *name)
{
    static const char *const suffixes[] = { ".idx", ".bin", "_idx.npz",
                                            "_ids.npy", NULL };
    size_t len = strlen(name);

    for (int i = 0; suffixes[i]; i++) {
        size_t k = strlen(suffixes[i]);

        if (len > k && strcmp(name + len - k, suffixes[i]) == 0)
            return strndup(name, len - k);
    }
    return NULL;
}

static int
compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every dataset in dir (not recursive), as merge.py finds them: each
 * regular file named <prefix> plus a dataset suffix gives <prefix>, once;
 * the prefixes are taken in sorted (byte) order.  Returns the number
 * found, or -1 after a warning. */
static long
scan_dir(const char *dir, struct prefixes *out)
{
    struct prefixes names = { NULL, 0, 0 };
    DIR *d = opendir(dir);
    struct dirent *e;
    const char *sep;
    long found = 0;

    if (d == NULL) {
        warn("cannot read directory '%s'", dir);
        return -1;
    }
    sep = dir[strlen(dir) - 1] == '/' ? "" : "/";
    while ((e = readdir(d)) != NULL) {
        char *path, *prefix = strip_suffix(e->d_name);
        struct stat st;

        if (prefix == NULL)
            continue;
        if (asprintf(&path, "%s%s%s", dir, sep, e->d_name) < 0)
            err(1, NULL);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            prefixes_add(&names, prefix);
        else
            free(prefix);
        free(path);
    }
    closedir(d);
    if (names.n > 0)
        qsort(names.v, names.n, sizeof(*names.v), compare_names);
    for (size_t i = 0; i < names.n; i++) {
        char *p;

        if (i > 0 && strcmp(names.v[i], names.v[i - 1]) == 0)
            continue;
        if (asprintf(&p, "%s%s%s", dir, sep, names.v[i]) < 0)
            err(1, NULL);
        prefixes_add(out, p);
        found++;
    }
    for (size_t i = 0; i < names.n; i++)
        free(names.v[i]);
    free(names.v);
    if (found == 0)
        warnx("no dataset in directory '%s' (no *.idx, *.bin, *_idx.npz or "
              "*_ids.npy file)",
              dir);
    return found ? found : -1;
}

/* The operands as a list of prefixes: a directory that is not itself a
 * dataset prefix stands for the datasets in it. */
static int
expand_operands(int argc, char *const *argv, struct prefixes *out)
{
    int rval = 0;

    for (int i = 0; i < argc; i++) {
        struct stat st;

        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) &&
            !exists(argv[i], ".idx") && !exists(argv[i], "_idx.npz")) {
            if (scan_dir(argv[i], out) < 0)
                rval = 1;
        } else {
            prefixes_add(out, strdup(argv[i]));
        }
    }
    return rval;
}

/* ------------------------------------------------------------------------ */
/* Checking                                                                  */

/* merge_file_ copies every sentence and document as it is; the writer
 * never writes an empty sentence or document, so such an input cannot be
 * copied exactly.  Returns 0, or -1 after a warning. */
static int
check_copyable(const struct ds_dataset *d, const char *prefix)
{
    uint64_t n = ds_dataset_n_sentences(d), m = ds_dataset_n_documents(d);

    for (uint64_t i = 0; i < n; i++)
        if (ds_sentence_len(d, i) == 0) {
            warnx("'%s': sentence %" PRIu64 " is empty, and merge does not "
                  "copy empty sentences",
                  prefix, i);
            return -1;
        }
    for (uint64_t k = 0; k < m; k++)
        if (ds_document_first(d, k) == ds_document_first(d, k + 1)) {
            warnx("'%s': document %" PRIu64 " is empty, and merge does not "
                  "copy empty documents",
                  prefix, k);
            return -1;
        }
    return 0;
}

/* Fold the sidecar of input `prefix` into t: its ids must mean what the
 * first recorded input's do.  A missing or stale sidecar is counted (and
 * told, unless quiet).  Returns 0, or -1 after a warning. */
static int
check_meta(const char *prefix, struct totals *t, bool quiet)
{
    struct ds_meta m;
    struct ds_err e;
    char diff[320];
    int rc = ds_meta_read(prefix, &m, &e);

    if (rc < 0) {
        warnx("%s", e.msg);
        return -1;
    }
    if (rc == 1) {
        int stale = ds_meta_stale(prefix, &m, &e);

        if (stale < 0) /* no token file: ds_open() has said so */
            return 0;
        if (stale > 0 && !quiet)
            warnx("note: %s; ignored", e.msg);
        if (stale > 0)
            rc = 0;
    }
    if (rc == 0) {
        t->n_unrecorded++;
        return 0;
    }
    if (t->meta_from == NULL) {
        t->meta = m;
        t->meta_from = prefix;
        return 0;
    }
    if (ds_meta_compare(&t->meta, &m, DS_META_ALL, diff, sizeof(diff))) {
        warnx("'%s' and '%s' were not made alike (%s in their sidecars): "
              "their ids cannot be merged",
              t->meta_from, prefix, diff);
        return -1;
    }
    ds_meta_combine(&t->meta, &m);
    return 0;
}

/* Open every input once, before anything is written: each must be a valid
 * dataset of the dtype of the first, made as the others (their
 * sidecars).  Every bad input is reported.  Returns the exit status. */
static int
check_inputs(const struct prefixes *in, struct totals *t, bool quiet)
{
    int rval = 0;

    for (size_t i = 0; i < in->n; i++) {
        struct ds_dataset *d;
        struct ds_err e;
        enum ds_dtype dt;
        bool ok = true;

        if (ds_open(&d, in->v[i], &e) < 0) {
            warnx("%s", e.msg);
            rval = 1;
            continue;
        }
        dt = ds_dataset_dtype(d);
        if (dt != DS_DTYPE_UINT16 && dt != DS_DTYPE_INT32) {
            warnx("'%s' has %s tokens: merge writes only uint16 or int32 "
                  "datasets",
                  in->v[i], ds_dtype_name(dt));
            ok = false;
        } else if (t->dtype_from == NULL) {
            t->dtype = dt;
            t->dtype_from = in->v[i];
        } else if (dt != t->dtype) {
            /* Only uint16 and int32 get here: widening uint16 would do,
             * but a merge copies, it does not convert. */
            warnx("'%s' has %s tokens but '%s' has %s: all inputs must have "
                  "one dtype (merge does not widen uint16 to int32)",
                  in->v[i], ds_dtype_name(dt), t->dtype_from,
                  ds_dtype_name(t->dtype));
            ok = false;
        }
        if (ok && check_copyable(d, in->v[i]) < 0)
            ok = false;
        if (check_meta(in->v[i], t, quiet) < 0)
            ok = false;
        if (!ok)
            rval = 1;
        t->n_documents += ds_dataset_n_documents(d);
        t->n_sentences += ds_dataset_n_sentences(d);
        t->n_tokens += ds_dataset_n_tokens(d);
        t->bytes += ds_dataset_n_tokens(d) * ds_dtype_size(dt);
        ds_close(d);
    }
    if (rval == 0 && t->n_unrecorded > 0 && !quiet)
        warnx("note: %zu of %zu inputs have no sidecar (made by PaddleNLP "
              "or Megatron?): %s",
              t->n_unrecorded, in->n,
              t->meta_from ? "their tokenizer is not checked, and the "
                             "output gets none"
                           : "the output gets none");
    return rval;
}

/* The output's sidecar, when every input has one: their record, as a
 * merge of them.  Returns 0 or a libdata error (in err). */
static int
write_meta(const char *out, enum ds_format format, size_t n_inputs,
           const struct totals *t, struct ds_err *err)
{
    struct ds_meta m;

    if (t->n_unrecorded > 0)
        return 0;
    ds_meta_init(&m, "merge", PROJECT_VERSION);
    memcpy(m.tokenizer, t->meta.tokenizer, sizeof(m.tokenizer));
    m.vocab_size = t->meta.vocab_size;
    memcpy(m.vocab_sha256, t->meta.vocab_sha256, sizeof(m.vocab_sha256));
    memcpy(m.merges_sha256, t->meta.merges_sha256, sizeof(m.merges_sha256));
    m.lowercase = t->meta.lowercase;
    m.whole_word_marks = t->meta.whole_word_marks;
    m.split_sentences = t->meta.split_sentences;
    m.append_eod = t->meta.append_eod;
    m.keep_whitespace = t->meta.keep_whitespace;
    memcpy(m.vocab, t->meta.vocab, sizeof(m.vocab));
    memcpy(m.sentence_splitter, t->meta.sentence_splitter,
           sizeof(m.sentence_splitter));
    memcpy(m.segmenter, t->meta.segmenter, sizeof(m.segmenter));
    m.max_word_length = t->meta.max_word_length;
    m.max_repeated_len = t->meta.max_repeated_len;
    m.format = format;
    m.dtype = t->dtype;
    m.n_documents = t->n_documents;
    m.n_sentences = t->n_sentences;
    m.n_tokens = t->n_tokens;
    m.n_inputs = n_inputs;
    return ds_meta_write(out, &m, err);
}

/* ------------------------------------------------------------------------ */
/* Copying                                                                   */

struct copier {
    struct ds_writer *w;
    int32_t *buf;
    size_t cap; /* tokens */
    struct cli_progress *prog;
    struct ds_err err;
};

/* Append the dataset d to the writer: blocks of whole sentences are read
 * with one call each, then handed to the writer sentence by sentence,
 * closing a document after its last sentence.  Returns 0, or -1 with the
 * message in c->err. */
static int
copy_dataset(struct copier *c, const struct ds_dataset *d)
{
    uint64_t n = ds_dataset_n_sentences(d), k = 0, s = 0;
    uint64_t doc_end = ds_document_first(d, 1);
    size_t itemsize = ds_dtype_size(ds_dataset_dtype(d));

    while (s < n) {
        uint64_t pos = ds_sentence_start(d, s), e = s;
        size_t len = 0, off = 0;

        /* The sentences s..e-1 that fit the buffer; at least one. */
        do {
            len += ds_sentence_len(d, e++);
        } while (e < n && len + ds_sentence_len(d, e) <= c->cap);
        if (len > c->cap) {
            int32_t *p = realloc(c->buf, len * sizeof(*p));

            if (p == NULL) {
                c->err.code = DS_ENOMEM;
                snprintf(c->err.msg, sizeof(c->err.msg),
                         "out of memory for a sentence of %zu tokens", len);
                return -1;
            }
            c->buf = p;
            c->cap = len;
        }
        if (ds_read_tokens(d, pos, len, c->buf, &c->err) < 0)
            return -1;
        for (; s < e; s++) {
            size_t m = ds_sentence_len(d, s);

            if (ds_writer_add_sentence(c->w, c->buf + off, m, &c->err) < 0)
                return -1;
            off += m;
            if (s + 1 == doc_end) {
                if (ds_writer_end_document(c->w, &c->err) < 0)
                    return -1;
                c->prog->records++;
                doc_end = ds_document_first(d, ++k + 1);
            }
        }
        cli_progress_add(c->prog, (uint64_t)len * itemsize);
    }
    return 0;
}

/* The second pass: write the output.  Returns the exit status. */
static int
merge(const struct prefixes *in, const char *out, enum ds_format format,
      const struct totals *t, bool quiet, bool progress)
{
    struct cli_progress prog;
    struct copier c;
    int rval = 0;

    memset(&c, 0, sizeof(c));
    c.cap = BLOCK_TOKENS;
    c.buf = malloc(c.cap * sizeof(*c.buf));
    if (c.buf == NULL)
        err(1, NULL);
    if (ds_meta_check_name(out, &c.err) < 0 ||
        ds_writer_open(&c.w, out, format, t->dtype, &c.err) < 0)
        errx(1, "%s", c.err.msg);
    cli_progress_init(&prog, !quiet && (progress || isatty(STDERR_FILENO)));
    prog.total = t->bytes;
    prog.unit = "documents";
    c.prog = &prog;
    for (size_t i = 0; i < in->n && rval == 0; i++) {
        struct ds_dataset *d;

        if (ds_open(&d, in->v[i], &c.err) < 0 || copy_dataset(&c, d) < 0) {
            warnx("%s", c.err.msg);
            rval = 1;
        }
        ds_close(d);
    }
    cli_progress_done(&prog);
    /* The old sidecar goes before the new files take its place; the new
     * one, if every input had one, after. */
    if (rval == 0 && ds_meta_remove(out, &c.err) < 0) {
        warnx("%s", c.err.msg);
        rval = 1;
    }
    if (rval != 0) {
        ds_writer_abort(c.w);
    } else if (ds_writer_commit(c.w, &c.err) < 0) {
        warnx("%s", c.err.msg);
        rval = 1;
    } else if (write_meta(out, format, in->n, t, &c.err) < 0) {
        warnx("%s", c.err.msg);
        rval = 1;
    } else if (!quiet) {
        char *names[2];

        if (ds_output_names(out, format, names) < 0)
            err(1, NULL);
        fprintf(stderr,
                "merge: wrote %s and %s (%s): %" PRIu64 " documents, %" PRIu64
                " sentences, %" PRIu64 " tokens from %zu datasets\n",
                names[0], names[1], ds_dtype_name(t->dtype), t->n_documents,
                t->n_sentences, t->n_tokens, in->n);
        free(names[0]);
        free(names[1]);
    }
    free(c.buf);
    return rval;
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "format", required_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { "output-prefix", required_argument, NULL, 'o' },
        { "progress", no_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    static const char *const formats[] = { "mmap", "npy", NULL };
    enum ds_format format = DS_FORMAT_MMAP;
    struct prefixes in = { NULL, 0, 0 };
    struct totals t;
    const char *out = NULL;
    bool quiet = false, progress = false;
    int ch, k, rval;

    while ((ch = getopt_long(argc, argv, "f:ho:PqV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'f':
            k = cli_parse_choice(optarg, "format", formats);
            if (k < 0)
                usage();
            format = k == 0 ? DS_FORMAT_MMAP : DS_FORMAT_NPY;
            break;
        case 'h':
            help();
            break;
        case 'o':
            out = optarg;
            break;
        case 'P':
            progress = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'V':
            cli_print_version("merge");
            return 0;
        default:
            usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (out == NULL || *out == '\0') {
        warnx("-o PREFIX is required");
        usage();
    }
    {
        struct ds_err e;

        if (ds_prefix_check(out, &e) < 0) {
            warnx("-o: %s", e.msg);
            usage();
        }
    }
    if (argc == 0) {
        warnx("no input: give dataset prefixes or directories");
        usage();
    }

    memset(&t, 0, sizeof(t));
    rval = expand_operands(argc, argv, &in);
    if (rval == 0)
        rval = check_inputs(&in, &t, quiet);
    if (rval == 0)
        rval = merge(&in, out, format, &t, quiet, progress);
    for (size_t i = 0; i < in.n; i++)
        free(in.v[i]);
    free(in.v);
    return cli_exit_status(rval);
}

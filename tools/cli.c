/* SPDX-License-Identifier: MIT */
/*
 * cli.c: number parsing, version line, outputs written through a temporary
 * file, and progress display, shared by every tool.
 */
#include <err.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "cli.h"
#include "banned.h"

uint64_t
cli_parse_u64(const char *s, uint64_t min, uint64_t max, const char *what)
{
    uint64_t v = 0;

    if (*s == '\0')
        goto bad;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            goto bad;
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            goto range;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v < min || v > max)
        goto range;
    return v;
bad:
    warnx("invalid %s '%s': not a non-negative integer", what, s);
    exit(EXIT_USAGE);
range:
    warnx("invalid %s '%s': must be between %llu and %llu", what, s,
          (unsigned long long)min, (unsigned long long)max);
    exit(EXIT_USAGE);
}

int
cli_parse_choice(const char *s, const char *what, const char *const *names)
{
    char list[256];
    size_t off = 0;
    int n = 0;

    for (int i = 0; names[i]; i++, n++)
        if (strcmp(s, names[i]) == 0)
            return i;
    list[0] = '\0';
    for (int i = 0; i < n && off < sizeof(list); i++)
        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
                                i == 0       ? ""
                                : i == n - 1 ? " or "
                                             : ", ",
                                names[i]);
    warnx("invalid %s '%s': use %s", what, s, list);
    return -1;
}

unsigned
cli_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1 : (unsigned)n;
}

void
cli_print_version(const char *tool)
{
    printf("%s (%s) %s\n", tool, PROJECT_NAME, PROJECT_VERSION);
}

/* ------------------------------------------------------------------------ */

static char *
xstrdup(const char *s)
{
    char *d = strdup(s);

    if (d == NULL)
        err(1, NULL);
    return d;
}

void
cli_output_open(struct cli_output *o, const char *path)
{
    memset(o, 0, sizeof(*o));
    if (path == NULL || strcmp(path, "-") == 0) {
        o->fp = stdout;
        return;
    }
    o->path = xstrdup(path);
    {
        struct stat st;
        bool exists = stat(path, &st) == 0;

        /* Refused before any work: the rename at the end would fail. */
        if (cli_ends_with(path, "/") || (exists && S_ISDIR(st.st_mode)))
            errx(1, "cannot write '%s': it names a directory; give a file name",
                 path);
        /* A device or a FIFO (/dev/null, /dev/stdout, a named pipe) is
         * written in place: a temporary file renamed over it would
         * replace it with a regular file (as root, /dev/null itself). */
        o->in_place = exists && !S_ISREG(st.st_mode);
    }
    {
        size_t n = strlen(path) + 32;
        o->tmp_path = malloc(n);
        if (o->tmp_path == NULL)
            err(1, NULL);
        if (o->in_place)
            snprintf(o->tmp_path, n, "%s", path);
        else
            snprintf(o->tmp_path, n, "%s.tmp.%ld", path, (long)getpid());
    }
    o->fp = fopen(o->tmp_path, "wb");
    if (o->fp == NULL) /* the user's name, not the temporary one */
        err(1, "cannot %s '%s'", o->in_place ? "open" : "create", path);
    {
        size_t n = strlen(path);

        if (n > 4 && strcmp(path + n - 4, ".zst") == 0) {
            o->zcs = ZSTD_createCStream();
            o->zcap = ZSTD_CStreamOutSize();
            o->zbuf = malloc(o->zcap);
            if (o->zcs == NULL || o->zbuf == NULL)
                errx(1, "cannot compress '%s': out of memory", path);
            ZSTD_CCtx_setParameter(o->zcs, ZSTD_c_compressionLevel, 3);
        }
    }
}

/* Feed p[0..n) to the compressor (mode ZSTD_e_continue or ZSTD_e_end) and
 * write what it produces. */
static int
zwrite(struct cli_output *o, const void *p, size_t n, ZSTD_EndDirective mode)
{
    ZSTD_inBuffer in = { p, n, 0 };

    for (;;) {
        ZSTD_outBuffer out = { o->zbuf, o->zcap, 0 };
        size_t left = ZSTD_compressStream2(o->zcs, &out, &in, mode);

        if (ZSTD_isError(left)) {
            warnx("cannot compress '%s': %s", o->path, ZSTD_getErrorName(left));
            return -1;
        }
        if (out.pos && fwrite(o->zbuf, 1, out.pos, o->fp) != out.pos) {
            warn("cannot write '%s'", o->path);
            return -1;
        }
        if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size)
            return 0;
    }
}

void
cli_output_sink(struct cli_output *o,
                int (*fn)(void *ctx, const void *p, size_t n), void *ctx)
{
    memset(o, 0, sizeof(*o));
    o->sink = fn;
    o->sink_ctx = ctx;
}

int
cli_output_write(struct cli_output *o, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (o->sink)
        return o->sink(o->sink_ctx, p, n);
    if (o->zcs)
        return zwrite(o, p, n, ZSTD_e_continue);
    if (fwrite(p, 1, n, o->fp) != n) {
        warn("cannot write '%s'", o->path ? o->path : "stdout");
        return -1;
    }
    return 0;
}

static void
output_free(struct cli_output *o)
{
    ZSTD_freeCStream(o->zcs);
    free(o->zbuf);
    free(o->path);
    free(o->tmp_path);
    memset(o, 0, sizeof(*o));
}

int
cli_output_commit(struct cli_output *o)
{
    int rc = 0;

    if (o->sink) {
        memset(o, 0, sizeof(*o));
        return 0;
    }
    if (o->zcs && zwrite(o, "", 0, ZSTD_e_end) < 0)
        rc = -1;
    if (o->path == NULL) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
            warn("stdout");
            return -1;
        }
        return 0;
    }
    /* A device or FIFO has nothing to fsync (EINVAL) nor to rename. */
    if (rc == 0 && (fflush(o->fp) != 0 || ferror(o->fp) ||
                    (!o->in_place && fsync(fileno(o->fp)) != 0))) {
        warn("cannot write '%s'", o->path);
        rc = -1;
    }
    if (fclose(o->fp) != 0 && rc == 0) {
        warn("cannot write '%s'", o->path);
        rc = -1;
    }
    o->fp = NULL;
    if (rc == 0 && !o->in_place && rename(o->tmp_path, o->path) != 0) {
        warn("cannot rename '%s' to '%s'", o->tmp_path, o->path);
        rc = -1;
    }
    if (rc != 0 && !o->in_place)
        unlink(o->tmp_path);
    output_free(o);
    return rc;
}

void
cli_output_abort(struct cli_output *o)
{
    if (o->sink) {
        memset(o, 0, sizeof(*o));
        return;
    }
    if (o->path == NULL) {
        output_free(o);
        return;
    }
    if (o->fp)
        fclose(o->fp);
    if (!o->in_place)
        unlink(o->tmp_path);
    output_free(o);
}

bool
cli_jsonl_check(struct cli_chunk_result *r, const char *lines, size_t len,
                uint64_t first_line, const char *key, const char *advice)
{
    const char *p = lines, *end = lines + len;
    uint64_t line = first_line;

    if (first_line != 1)
        return true;
    /* The first line that is not blank. */
    for (; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t n = (size_t)(le - p);

        if (tok_utf8_check(p, n) != n)
            return true;
        if (!cli_is_blank_line(p, n)) {
            const char *q = p;
            struct json_tokener *jt;
            struct tok_buf field;
            char why[200];
            int k;

            while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
                q++;
            if (q == le || *q != '{')
                return true;
            jt = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
            if (jt == NULL)
                return true;
            tok_buf_init(&field);
            k = cli_json_field(&jt, p, n, key, &field, why, sizeof(why));
            tok_buf_release(&field);
            json_tokener_free(jt);
            if (k != 1)
                return true;
            cli_chunk_error(r, line,
                            "a JSON object with a \"%s\" field: the input is "
                            "JSONL, not text; %s",
                            key, advice);
            return false;
        }
        p = nl ? nl + 1 : end;
    }
    return true;
}

bool
cli_is_space(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
           cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool
cli_is_blank_line(const char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        uint32_t cp;
        size_t n = tok_utf8_decode(s + i, len - i, &cp);

        if (n == 0 || !cli_is_space(cp))
            return false;
        i += n;
    }
    return true;
}

/* ------------------------------------------------------------------------ */

int
cli_mkdirs(const char *dir)
{
    char *p = xstrdup(dir);
    struct stat st;
    int rc = 0;

    /* Each prefix that ends before a '/', then the whole path. */
    for (char *q = p + (p[0] == '/');; q++) {
        char c = *q;

        if (c != '/' && c != '\0')
            continue;
        *q = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            warn("cannot create directory '%s'", p);
            rc = -1;
            break;
        }
        *q = c;
        if (c == '\0')
            break;
    }
    if (rc == 0 && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        warnx("cannot create directory '%s': a file of that name exists", dir);
        rc = -1;
    }
    free(p);
    return rc;
}

/* At most this many repeated tokens are named, then a count. */
#define MAX_REPEATS_SHOWN 5

struct tok_vocab *
cli_vocab_load(const char *path, bool quiet)
{
    struct tok_vocab *v;
    const struct tok_vocab_repeat *r;
    struct tok_err e;
    size_t n;

    if (tok_vocab_load(&v, path, &e) < 0)
        errx(1, "%s", e.msg);
    r = tok_vocab_repeats(v, &n);
    for (size_t i = 0; i < n && !quiet; i++) {
        if (i == MAX_REPEATS_SHOWN) {
            warnx("warning: vocab '%s': %zu more repeated tokens", path, n - i);
            break;
        }
        warnx("warning: vocab '%s': token '%s' is on lines %zu and %zu: it "
              "gets id %ld of the later line, as Hugging Face and PaddleNLP "
              "read it, and no token has id %ld",
              path, tok_vocab_token(v, r[i].id, NULL), r[i].first_line,
              r[i].line, (long)r[i].id, (long)r[i].dropped_id);
    }
    return v;
}

/* ------------------------------------------------------------------------ */

/* The model `name` to use: $env, else `name` beside the running program
 * (a build tree), else the installed one (returned whether or not it is
 * there, so that the error names it). */
static char *
model_path(const char *env_name, const char *name)
{
    const char *env = getenv(env_name);
    char *dir, *beside, *datadir, *installed;

    if (env && *env)
        return strdup(env);
    if ((dir = cli_exe_dir()) == NULL)
        return NULL;
    beside = cli_path_join(dir, name);
    if (beside && access(beside, R_OK) == 0) {
        free(dir);
        return beside;
    }
    free(beside);
    datadir = cli_path_join(dir, cli_datadir_rel);
    installed = datadir ? cli_path_join(datadir, name) : NULL;
    free(datadir);
    free(dir);
    return installed;
}

char *
cli_jieba_model_path(void)
{
    return model_path("SEGMENT_MODEL", "jieba.model");
}

char *
cli_lac_model_path(void)
{
    return model_path("LAC_MODEL", "lac.model");
}

struct tok_lac *
cli_lac_open(const char *model, const char *user_dict, enum tok_lac_mode mode)
{
    struct tok_lac *l;
    struct tok_err e;
    char *found = model ? NULL : cli_lac_model_path();

    if (model == NULL && (model = found) == NULL)
        err(1, "cannot locate the LAC model (give -m or set LAC_MODEL)");
    if (tok_lac_open(&l, model, 1 << mode, &e) < 0) {
        if (e.code == TOK_EIO && access(model, F_OK) != 0)
            errx(1, "%s (make builds lac.model unless WITH_LAC=0)", e.msg);
        errx(1, "%s", e.msg);
    }
    if (user_dict && tok_lac_load_customization(l, user_dict, NULL, &e) < 0)
        errx(1, "%s", e.msg);
    free(found);
    return l;
}

int
cli_parse_seg_func(const char *s, struct cli_segmenter *seg)
{
    static const char *const names[] = { "jieba", "lac", "seg", NULL };
    int k = cli_parse_choice(s, "segmenter", names);

    if (k < 0)
        return -1;
    seg->lac = k > 0;
    seg->lac_mode = k == 2 ? TOK_LAC_SEG : TOK_LAC_LAC;
    return 0;
}

int
cli_segmenter_flag(struct cli_segmenter_flags *f, int opt, const char *arg)
{
    static const char *const engines[] = { "jieba", "lac", NULL };
    static const char *const modes[] = { "seg", "lac", NULL };
    int k;

    switch (opt) {
    case CLI_OPT_ENGINE:
        if ((k = cli_parse_choice(arg, "engine", engines)) < 0)
            return -1;
        f->engine = k;
        f->seg.lac = k == 1;
        return 1;
    case CLI_OPT_LAC_MODE:
        if ((k = cli_parse_choice(arg, "LAC mode", modes)) < 0)
            return -1;
        f->seg.lac_mode = k == 0 ? TOK_LAC_SEG : TOK_LAC_LAC;
        f->mode = true;
        return 1;
    case CLI_OPT_CN_SEG_FUNC:
        if (cli_parse_seg_func(arg, &f->seg) < 0)
            return -1;
        f->engine = f->seg.lac;
        f->mode = f->seg.lac;
        return 1;
    }
    return 0;
}

int
cli_segmenter_done(struct cli_segmenter_flags *f)
{
    if (f->mode) {
        if (f->engine == 0) {
            warnx("--lac-mode is LAC's: not with --engine jieba");
            return -1;
        }
        f->seg.lac = true;
    }
    return 0;
}

const char *
cli_segmenter_name(const struct cli_segmenter *seg)
{
    if (!seg->lac)
        return "jieba";
    return seg->lac_mode == TOK_LAC_SEG ? "lac-seg" : "lac-lac";
}

struct tok_jieba *
cli_jieba_open(const char *model, const char *user_dict, uint64_t input_bytes)
{
    struct tok_jieba *j;
    struct tok_err e;
    char *found = model ? NULL : cli_jieba_model_path();
    int flags = input_bytes > 0 && input_bytes < CLI_JIEBA_COPY_MIN
                    ? TOK_JIEBA_OPEN_MAPPED
                    : 0;

    if (model == NULL && (model = found) == NULL)
        err(1, "cannot locate the jieba model (give -m or set SEGMENT_MODEL)");
    if (tok_jieba_open_flags(&j, model, flags, &e) < 0)
        errx(1, "%s", e.msg);
    if (user_dict && tok_jieba_load_userdict(j, user_dict, &e) < 0)
        errx(1, "%s", e.msg);
    free(found);
    return j;
}

uint64_t
cli_stored_bytes(char *const *files)
{
    uint64_t total = 0;
    struct stat st;

    for (; *files; files++) {
        int rc = strcmp(*files, "-") == 0 ? fstat(STDIN_FILENO, &st)
                                          : stat(*files, &st);

        if (rc != 0 || !S_ISREG(st.st_mode))
            return 0;
        total += (uint64_t)st.st_size;
    }
    return total;
}

uint64_t
cli_plain_bytes(int argc, char *const *argv)
{
    uint64_t total = 0;
    struct stat st;

    if (argc == 0)
        return fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode)
                   ? (uint64_t)st.st_size
                   : 0;
    for (int i = 0; i < argc; i++) {
        int rc = strcmp(argv[i], "-") == 0 ? fstat(STDIN_FILENO, &st)
                                           : stat(argv[i], &st);

        if (rc != 0 || !S_ISREG(st.st_mode) || cli_ends_with(argv[i], ".zst"))
            return 0;
        total += (uint64_t)st.st_size;
    }
    return total;
}

/* ------------------------------------------------------------------------ */

double
cli_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds between two progress lines: a terminal's line is redrawn in
 * place a few times a second; elsewhere (a log file) a line is added now
 * and then.  $ERNIEKIT_PROGRESS_INTERVAL overrides both (0: every
 * update, which the tests use to see every line). */
#define PROGRESS_TTY_S 0.25
#define PROGRESS_LOG_S 10.0

void
cli_progress_init(struct cli_progress *p, bool on)
{
    const char *env = getenv("ERNIEKIT_PROGRESS_INTERVAL");

    memset(p, 0, sizeof(*p));
    p->on = on;
    p->tty = isatty(STDERR_FILENO);
    p->interval = p->tty ? PROGRESS_TTY_S : PROGRESS_LOG_S;
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);

        if (*end == '\0' && v >= 0)
            p->interval = v;
    }
    p->unit = "records";
    p->t_start = p->t_last = cli_now();
}

/* "1:02:03" or "2:03" */
static void
format_duration(double s, char *buf, size_t n)
{
    unsigned long t = s < 0 ? 0 : (unsigned long)(s + 0.5);

    if (t >= 3600)
        snprintf(buf, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%lu:%02lu", t / 60, t % 60);
}

/* How far the run is, out of p->total: the stored bytes of the inputs
 * read so far, or for a tool that reports no input (merge) its bytes. */
static uint64_t
progress_pos(const struct cli_progress *p)
{
    if (!p->has_inputs)
        return p->bytes;
    return p->done + (p->in ? cli_input_stored_bytes(p->in) : 0);
}

/* Append printf-style text to buf[0..n) at *off. */
static void appendf(char *buf, size_t n, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
appendf(char *buf, size_t n, size_t *off, const char *fmt, ...)
{
    va_list ap;
    int k;

    if (*off >= n)
        return;
    va_start(ap, fmt);
    k = vsnprintf(buf + *off, n - *off, fmt, ap);
    va_end(ap);
    if (k > 0)
        *off += (size_t)k;
}

/* "<prog>: 45%, 12.3 MB, 8123 documents, 5.1 MB/s, ETA 0:03": the share
 * and the ETA from the stored bytes (the compressed ones of a .zst), the
 * MB those of the text read. */
static void
progress_format(const struct cli_progress *p, double now, char *buf, size_t n)
{
    double dt = now - p->t_start, mb = (double)p->bytes / 1e6;
    uint64_t pos = progress_pos(p);
    size_t off = 0;

    appendf(buf, n, &off, "%s: ", program_invocation_short_name);
    if (p->total)
        appendf(buf, n, &off, "%.0f%%, ",
                100.0 * (double)(pos < p->total ? pos : p->total) /
                    (double)p->total);
    appendf(buf, n, &off, "%.1f MB, %llu %s, %.1f MB/s", mb,
            (unsigned long long)p->records, p->unit, dt > 0 ? mb / dt : 0.0);
    if (p->total && pos > 0 && pos < p->total) {
        char eta[32];

        format_duration(dt * (double)(p->total - pos) / (double)pos, eta,
                        sizeof(eta));
        appendf(buf, n, &off, ", ETA %s", eta);
    }
}

/* Show line: in place on a terminal, else as a line of its own. */
static void
progress_put(const struct cli_progress *p, const char *line)
{
    if (p->tty)
        fprintf(stderr, "\r%s\033[K", line);
    else
        fprintf(stderr, "%s\n", line);
}

static void
progress_tick(struct cli_progress *p)
{
    char line[256];
    double now;

    if (!p->on)
        return;
    now = cli_now();
    if (now - p->t_last < p->interval)
        return;
    progress_format(p, now, line, sizeof(line));
    progress_put(p, line);
    p->drawn = p->tty;
    p->t_last = now;
}

void
cli_progress_add(struct cli_progress *p, uint64_t bytes)
{
    p->bytes += bytes;
    progress_tick(p);
}

void
cli_progress_input(struct cli_progress *p, const struct cli_input *in)
{
    if (p->in)
        p->done += cli_input_stored_bytes(p->in);
    p->in = in;
    p->has_inputs |= in != NULL;
}

void
cli_progress_records(struct cli_progress *p, uint64_t n)
{
    p->records += n;
    if (p->log_every && p->records >= p->next_log) {
        char line[256];

        progress_format(p, cli_now(), line, sizeof(line));
        fprintf(stderr, "%s%s\n", p->drawn ? "\r\033[K" : "", line);
        p->drawn = false;
        p->next_log = (p->records / p->log_every + 1) * p->log_every;
    }
    progress_tick(p);
}

void
cli_progress_done(struct cli_progress *p)
{
    double dt = cli_now() - p->t_start, mb = (double)p->bytes / 1e6;
    char line[256], took[32];
    size_t off = 0;

    cli_progress_input(p, NULL);
    if (!p->on)
        return;
    format_duration(dt, took, sizeof(took));
    appendf(line, sizeof(line), &off,
            "%s: %.1f MB, %llu %s in %s (%.1f MB/s, %.0f %s/s)",
            program_invocation_short_name, mb, (unsigned long long)p->records,
            p->unit, took, dt > 0 ? mb / dt : 0.0,
            dt > 0 ? (double)p->records / dt : 0.0, p->unit);
    fprintf(stderr, "%s%s\n", p->drawn ? "\r\033[K" : "", line);
    p->drawn = false;
}

/* ------------------------------------------------------------------------ */

static void vchunk_error(struct cli_chunk_result *r, uint64_t line,
                         const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void
vchunk_error(struct cli_chunk_result *r, uint64_t line, const char *fmt,
             va_list ap)
{
    r->status = 1;
    r->err_line = line;
    vsnprintf(r->err_msg, sizeof(r->err_msg), fmt, ap);
}

void
cli_chunk_error(struct cli_chunk_result *r, uint64_t line, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vchunk_error(r, line, fmt, ap);
    va_end(ap);
}

bool
cli_chunk_bad(struct cli_chunk_result *r, bool skip_bad, uint64_t line,
              const char *fmt, ...)
{
    va_list ap;

    if (skip_bad) {
        r->n_skipped++;
        return true;
    }
    va_start(ap, fmt);
    vchunk_error(r, line, fmt, ap);
    va_end(ap);
    return false;
}

int
cli_run_files(const struct cli_run *run, int argc, char *const *argv,
              struct cli_output *out)
{
    static char *const stdin_only[] = { "-", NULL };
    char *const *files = argc > 0 ? argv : stdin_only;
    struct cli_pipeline_stats stats = { 0, 0, 0 };
    struct cli_progress own, *prog = run->prog ? run->prog : &own;
    int rval = 0;

    if (run->prog == NULL) {
        cli_progress_init(&own, !run->quiet &&
                                    (run->progress || isatty(STDERR_FILENO)));
        if (run->unit)
            own.unit = run->unit;
    }
    if (prog->total == 0)
        prog->total = cli_stored_bytes(files);
    for (; *files; files++) {
        struct cli_input *in = cli_input_open(*files);
        uint64_t skipped_before = stats.n_skipped;

        if (in == NULL) {
            rval = 1;
            continue;
        }
        cli_progress_input(prog, in);
        if (run->json_array)
            cli_input_json_array(in);
        if (cli_pipeline_run(in, out, run->n_threads, run->chunk_size,
                             run->records, run->fn, run->ctx, prog,
                             &stats) != 0)
            rval = 1;
        if (stats.n_skipped > skipped_before && !run->quiet)
            warnx("%s: skipped %llu bad record%s", cli_input_name(in),
                  (unsigned long long)(stats.n_skipped - skipped_before),
                  stats.n_skipped - skipped_before == 1 ? "" : "s");
        cli_progress_input(prog, NULL);
        cli_input_close(in);
    }
    cli_progress_done(prog);
    if (rval == 0) {
        if (cli_output_commit(out) != 0)
            rval = 1;
    } else {
        bool to_stdout = out->path == NULL;

        cli_output_abort(out);
        if (to_stdout && fflush(stdout) != 0)
            warn("stdout");
    }
    return rval;
}

int
cli_exit_status(int rval)
{
    if (fclose(stdout) != 0 && rval == 0) {
        warn("stdout");
        rval = 1;
    }
    return rval;
}

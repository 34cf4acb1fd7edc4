/* SPDX-License-Identifier: MIT */
/*
 * cli_files.c: a tool's list of input files, with directories expanded
 * (recursively, in sorted order, as the Python references' sorted
 * os.walk lists take them) and the total size for progress; and the
 * shard of the list one task of a cluster job takes (--shard i/n).
 */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "banned.h"

void
cli_files_add(struct cli_files *f, const char *path)
{
    if (f->n + 1 >= f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        char **v = realloc(f->v, cap * sizeof(*v));

        if (v == NULL)
            err(1, NULL);
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n] = strdup(path);
    if (f->v[f->n] == NULL)
        err(1, NULL);
    f->v[++f->n] = NULL;
}

void
cli_files_release(struct cli_files *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i]);
    free(f->v);
    memset(f, 0, sizeof(*f));
}

bool
cli_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);

    return n >= k && strcmp(s + n - k, suffix) == 0;
}

bool
cli_is_json_name(const char *path)
{
    static const char *const ends[] = { ".jsonl", ".json", ".jsonl.zst",
                                        ".json.zst", NULL };

    for (int i = 0; ends[i]; i++)
        if (cli_ends_with(path, ends[i]))
            return true;
    return false;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add the files under dir that skip() keeps, the entries of each
 * directory taken in sorted order so that the messages are the same
 * whatever order the file system lists them in; 0, or 1 after a warning. */
static int
walk(struct cli_files *f, const char *dir, cli_skip_fn skip, bool quiet)
{
    struct cli_files names = { NULL, 0, 0, 0 };
    DIR *d = opendir(dir);
    struct dirent *e;
    int rval = 0;

    if (d == NULL) {
        warn("cannot read directory '%s'", dir);
        return 1;
    }
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            cli_files_add(&names, e->d_name);
    closedir(d);
    if (names.n > 0)
        qsort(names.v, names.n, sizeof(*names.v), cmp_str);
    for (size_t i = 0; i < names.n; i++) {
        const char *why;
        char *path;
        struct stat st;

        if (asprintf(&path, "%s/%s", dir, names.v[i]) < 0)
            err(1, NULL);
        if (stat(path, &st) != 0) {
            warn("cannot stat '%s'", path);
            rval = 1;
        } else if (S_ISDIR(st.st_mode)) {
            rval |= walk(f, path, skip, quiet);
        } else if (skip == NULL || (why = skip(path)) == NULL) {
            cli_files_add(f, path);
        } else if (!quiet) {
            warnx("'%s': %s, skipped", path, why);
        }
        free(path);
    }
    cli_files_release(&names);
    return rval;
}

/* At most this many of a directory's files are named, then a count. */
#define MAX_SHOWN 5

/* Name the files a directory stands for: "'<dir>': N files: a, b, ...". */
static void
show_expansion(const struct cli_files *f, size_t from, const char *dir)
{
    size_t n = f->n - from;
    char line[1024];
    size_t off = 0;

    off += (size_t)snprintf(line, sizeof(line), "'%s': %zu file%s:", dir, n,
                            n == 1 ? "" : "s");
    for (size_t i = 0; i < n && i < MAX_SHOWN && off < sizeof(line); i++)
        off += (size_t)snprintf(line + off, sizeof(line) - off, "%s %s",
                                i ? "," : "", f->v[from + i]);
    if (n > MAX_SHOWN && off < sizeof(line))
        snprintf(line + off, sizeof(line) - off, ", and %zu more",
                 n - MAX_SHOWN);
    warnx("%s", line);
}

/* The first pair of inputs that hold one corpus twice, plain and zstd
 * ("x.jsonl" and "x.jsonl.zst"): 0, or 1 after an error naming them. */
static int
check_twins(const struct cli_files *f)
{
    char **sorted;
    int rval = 0;

    if (f->n < 2)
        return 0;
    sorted = malloc(f->n * sizeof(*sorted));
    if (sorted == NULL)
        err(1, NULL);
    memcpy(sorted, f->v, f->n * sizeof(*sorted));
    qsort(sorted, f->n, sizeof(*sorted), cmp_str);
    for (size_t i = 0; i < f->n && rval == 0; i++) {
        size_t len = strlen(sorted[i]);
        char *plain;

        if (!cli_ends_with(sorted[i], ".zst"))
            continue;
        plain = strndup(sorted[i], len - 4);
        if (plain == NULL)
            err(1, NULL);
        if (bsearch(&plain, sorted, f->n, sizeof(*sorted), cmp_str)) {
            warnx("'%s' and '%s' are one corpus, plain and compressed: "
                  "reading both would read it twice; remove one, or name "
                  "the files to read",
                  plain, sorted[i]);
            rval = 1;
        }
        free(plain);
    }
    free(sorted);
    return rval;
}

int
cli_files_expand(struct cli_files *f, int argc, char *const *argv,
                 cli_skip_fn skip, const char *kind, bool quiet)
{
    int rval = 0;

    for (int i = 0; i < argc; i++) {
        struct stat st;

        if (strcmp(argv[i], "-") != 0 && stat(argv[i], &st) == 0 &&
            S_ISDIR(st.st_mode)) {
            size_t from = f->n;

            rval |= walk(f, argv[i], skip, quiet);
            if (f->n > from) {
                qsort(f->v + from, f->n - from, sizeof(*f->v), cmp_str);
                if (!quiet)
                    show_expansion(f, from, argv[i]);
            } else if (!quiet) {
                warnx("'%s': no %sfiles", argv[i], kind);
            }
        } else {
            cli_files_add(f, argv[i]);
        }
    }
    rval |= check_twins(f);
    /* An ETA needs every input's size: regular files only. */
    f->total_bytes = f->n ? cli_stored_bytes(f->v) : 0;
    return rval;
}

/* ------------------------------------------------------------------------ */
/* Shards                                                                    */

bool
cli_shard_parse(const char *s, struct cli_shard *sh)
{
    unsigned long i, n;
    char *end;

    errno = 0;
    i = strtoul(s, &end, 10);
    if (end == s || *end != '/' || s[0] == '-' || s[0] == '+' ||
        end[1] == '-' || end[1] == '+' || errno != 0)
        goto bad;
    n = strtoul(end + 1, &end, 10);
    if (*end != '\0' || errno != 0 || n < 1 || n > CLI_SHARDS_MAX || i >= n)
        goto bad;
    sh->i = (unsigned)i;
    sh->n = (unsigned)n;
    return true;
bad:
    warnx("invalid shard '%s': give i/n, the i-th of n shards, 0 <= i < n "
          "<= %d (a Slurm array's $SLURM_ARRAY_TASK_ID/"
          "$SLURM_ARRAY_TASK_COUNT)",
          s, CLI_SHARDS_MAX);
    return false;
}

int
cli_files_shard(struct cli_files *f, const struct cli_shard *sh, bool quiet)
{
    __extension__ typedef unsigned __int128 u128;
    size_t n = sh->n, nf = f->n, *b, lo, hi;
    uint64_t *size, total = 0, mine = 0;

    if (n == 0)
        return 0;
    if (nf == 0) {
        warnx("--shard %u/%u takes files: standard input cannot be dealt "
              "out",
              sh->i, sh->n);
        return 2;
    }
    if (nf < n) {
        warnx("--shard %u/%u: %zu input file%s for %u shards: give at least "
              "as many files as shards (fewer tasks, or split the files)",
              sh->i, sh->n, nf, nf == 1 ? "" : "s", sh->n);
        return 2;
    }
    size = calloc(nf, sizeof(*size));
    b = calloc(n + 1, sizeof(*b));
    if (size == NULL || b == NULL)
        err(1, NULL);
    for (size_t k = 0; k < nf; k++) {
        struct stat st;

        if (strcmp(f->v[k], "-") == 0 || stat(f->v[k], &st) != 0 ||
            !S_ISREG(st.st_mode)) {
            warnx("--shard: '%s' is not a file: a shard takes files (standard "
                  "input cannot be dealt out)",
                  strcmp(f->v[k], "-") == 0 ? "<stdin>" : f->v[k]);
            free(size);
            free(b);
            return 2;
        }
        size[k] = (uint64_t)st.st_size;
        total += size[k];
    }
    /* b[j]: the files whose middle byte lies before j/n of the bytes;
     * then every run made at least one file long. */
    {
        u128 at = 0;
        size_t k = 0;

        for (size_t j = 1; j < n; j++) {
            /* middle of file k < j T / n  <=>  n (2 at + s) < 2 j T */
            while (k < nf && (u128)n * (2 * at + size[k]) < (u128)2 * j * total)
                at += size[k++];
            b[j] = k;
        }
    }
    b[0] = 0;
    b[n] = nf;
    for (size_t j = 1; j < n; j++)
        if (b[j] < b[j - 1] + 1)
            b[j] = b[j - 1] + 1;
    for (size_t j = n - 1; j >= 1; j--)
        if (b[j] > b[j + 1] - 1)
            b[j] = b[j + 1] - 1;
    lo = b[sh->i];
    hi = b[sh->i + 1];
    for (size_t k = lo; k < hi; k++)
        mine += size[k];
    if (!quiet)
        warnx("shard %u/%u: %zu of %zu files (%.1f MB of %.1f MB): '%s'%s%s%s",
              sh->i, sh->n, hi - lo, nf, mine / 1e6, total / 1e6, f->v[lo],
              hi - lo > 1 ? " to '" : "", hi - lo > 1 ? f->v[hi - 1] : "",
              hi - lo > 1 ? "'" : "");
    for (size_t k = 0; k < nf; k++)
        if (k < lo || k >= hi)
            free(f->v[k]);
    memmove(f->v, f->v + lo, (hi - lo) * sizeof(*f->v));
    f->n = hi - lo;
    f->v[f->n] = NULL;
    f->total_bytes = mine;
    free(size);
    free(b);
    return 0;
}

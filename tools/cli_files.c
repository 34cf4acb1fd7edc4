/* SPDX-License-Identifier: MIT */
/*
 * cli_files.c: a tool's list of input files, with directories expanded
 * (recursively, in sorted order, as the Python references' sorted
 * os.walk lists take them) and the total size for progress.
 */
#include <dirent.h>
#include <err.h>
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

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add the files under dir that keep() accepts; 0, or 1 after a warning. */
static int
walk(struct cli_files *f, const char *dir, bool (*keep)(const char *),
     const char *skip_why, bool quiet)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int rval = 0;

    if (d == NULL) {
        warn("cannot read directory '%s'", dir);
        return 1;
    }
    while ((e = readdir(d)) != NULL) {
        char *path;
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (asprintf(&path, "%s/%s", dir, e->d_name) < 0)
            err(1, NULL);
        if (stat(path, &st) != 0) {
            warn("cannot stat '%s'", path);
            rval = 1;
        } else if (S_ISDIR(st.st_mode)) {
            rval |= walk(f, path, keep, skip_why, quiet);
        } else if (keep == NULL || keep(path)) {
            cli_files_add(f, path);
        } else if (!quiet) {
            warnx("'%s': %s, skipped", path, skip_why);
        }
        free(path);
    }
    closedir(d);
    return rval;
}

int
cli_files_expand(struct cli_files *f, int argc, char *const *argv,
                 bool (*keep)(const char *), const char *kind,
                 const char *skip_why, bool quiet)
{
    int rval = 0;

    for (int i = 0; i < argc; i++) {
        struct stat st;

        if (strcmp(argv[i], "-") != 0 && stat(argv[i], &st) == 0 &&
            S_ISDIR(st.st_mode)) {
            size_t from = f->n;

            rval |= walk(f, argv[i], keep, skip_why, quiet);
            if (f->n > from)
                qsort(f->v + from, f->n - from, sizeof(*f->v), cmp_str);
            else if (!quiet)
                warnx("'%s': no %sfiles", argv[i], kind);
        } else {
            cli_files_add(f, argv[i]);
        }
    }
    /* An ETA needs every input's size: plain regular files only. */
    f->total_bytes = 0;
    for (size_t i = 0; i < f->n; i++) {
        struct stat st;

        if (strcmp(f->v[i], "-") == 0 || cli_ends_with(f->v[i], ".zst") ||
            stat(f->v[i], &st) != 0 || !S_ISREG(st.st_mode)) {
            f->total_bytes = 0;
            break;
        }
        f->total_bytes += (uint64_t)st.st_size;
    }
    return rval;
}

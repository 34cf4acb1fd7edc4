/* SPDX-License-Identifier: MIT */
/*
 * ds_list.c: the corpus list of the trainer's --input_dir (see
 * ds_corpus_list_parse() in ds.h): one dataset prefix, PaddleNLP's
 * "w1 prefix1 w2 prefix2 ..." with shell-style quoting for prefixes that
 * hold blanks, a directory of datasets (PaddleNLP's meaning of input_dir),
 * or "@FILE", a file holding the list.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ds_int.h"

/* A list file longer than this is not a corpus list. */
#define LIST_FILE_MAX (16u << 20)

static int
is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

static bool
is_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool
is_dir(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ------------------------------------------------------------------------ */
/* Words                                                                     */

struct words {
    char **w;
    size_t n, cap;
};

static void
words_release(struct words *ws)
{
    for (size_t i = 0; i < ws->n; i++)
        free(ws->w[i]);
    free(ws->w);
    memset(ws, 0, sizeof(*ws));
}

static int
words_push(struct words *ws, char *w, struct ds_err *err)
{
    if (ws->n == ws->cap) {
        size_t cap = ws->cap ? 2 * ws->cap : 8;
        char **p = (char **)realloc(ws->w, cap * sizeof(char *));

        if (p == NULL)
            return ds_err_nomem(err);
        ws->w = p;
        ws->cap = cap;
    }
    ws->w[ws->n++] = w;
    return 0;
}

/* Split text into words as a POSIX shell does, without expansions: blanks
 * separate words; '...' is literal; in "..." a backslash escapes only "
 * and \; elsewhere a backslash escapes the next character.  With
 * comments, '#' at the start of a word runs to the end of the line (list
 * files).  what names the text in messages. */
static int
split_words(const char *text, bool comments, const char *what, struct words *ws,
            struct ds_err *err)
{
    size_t len = strlen(text);
    const char *s = text;
    char *buf = (char *)malloc(len + 1);
    int rc = 0;

    if (buf == NULL)
        return ds_err_nomem(err);
    while (*s != '\0') {
        size_t n = 0;

        while (is_blank(*s))
            s++;
        if (*s == '\0')
            break;
        if (comments && *s == '#') {
            while (*s != '\0' && *s != '\n')
                s++;
            continue;
        }
        while (*s != '\0' && !is_blank(*s)) {
            if (*s == '\'' || *s == '"') {
                char q = *s++;

                while (*s != '\0' && *s != q) {
                    if (q == '"' && *s == '\\' && (s[1] == '"' || s[1] == '\\'))
                        s++;
                    buf[n++] = *s++;
                }
                if (*s == '\0') {
                    rc = ds_err_set(err, DS_EINVAL,
                                    "corpus list %s: unterminated %c quote",
                                    what, q);
                    goto out;
                }
                s++;
            } else if (*s == '\\' && s[1] != '\0') {
                buf[n++] = s[1];
                s += 2;
            } else {
                buf[n++] = *s++;
            }
        }
        buf[n] = '\0';
        {
            char *w = ds_path_cat(buf, "", NULL);

            if (w == NULL) {
                rc = ds_err_nomem(err);
                goto out;
            }
            if ((rc = words_push(ws, w, err)) < 0) {
                free(w);
                goto out;
            }
        }
    }
out:
    free(buf);
    return rc;
}

/* The whole of a list file, NUL-terminated (caller frees). */
static char *
read_list_file(const char *path, struct ds_err *err)
{
    struct ds_map m;
    char *text;

    if (ds_map_file(path, &m, err) < 0)
        return NULL;
    if (m.len > LIST_FILE_MAX || (m.len > 0 && memchr(m.p, '\0', m.len))) {
        ds_err_set(err, DS_EINVAL, "corpus list '%s' %s", path,
                   m.len > LIST_FILE_MAX ? "is larger than 16 MB"
                                         : "holds a NUL byte");
        ds_unmap(&m);
        return NULL;
    }
    if ((text = (char *)malloc(m.len + 1)) == NULL) {
        ds_unmap(&m);
        ds_err_nomem(err);
        return NULL;
    }
    if (m.len > 0)
        memcpy(text, m.p, m.len);
    text[m.len] = '\0';
    ds_unmap(&m);
    return text;
}

/* ------------------------------------------------------------------------ */
/* Datasets                                                                  */

/* 0 if prefix names a dataset of either format (both files of a pair are
 * regular files), else DS_EIO with a message naming what is missing. */
static int
check_prefix(const char *prefix, struct ds_err *err)
{
    static const char *const sfx[4] = { ".idx", ".bin", "_ids.npy",
                                        "_idx.npz" };
    char *f[4];
    bool have[4];
    int rc = 0;

    for (int i = 0; i < 4; i++)
        f[i] = ds_path_cat(prefix, sfx[i], NULL);
    if (!f[0] || !f[1] || !f[2] || !f[3]) {
        rc = ds_err_nomem(err);
        goto out;
    }
    for (int i = 0; i < 4; i++)
        have[i] = is_file(f[i]);
    if ((have[0] && have[1]) || (have[2] && have[3]))
        goto out;
    if (have[0] != have[1] || have[2] != have[3]) {
        int k = have[0] != have[1] ? 0 : 2, h = have[k] ? k : k + 1;

        rc = ds_err_set(err, DS_EIO,
                        "dataset '%s': '%s' exists but '%s' does not", prefix,
                        f[h], f[h == k ? k + 1 : k]);
        goto out;
    }
    rc = ds_err_set(err, DS_EIO,
                    "dataset '%s' not found: neither '%s' and '%s' nor '%s' "
                    "and '%s' exist",
                    prefix, f[0], f[1], f[2], f[3]);
out:
    for (int i = 0; i < 4; i++)
        free(f[i]);
    return rc;
}

/* os.path.join(dir, name) */
static char *
join(const char *dir, const char *name)
{
    size_t n = strlen(dir);

    return ds_path_cat(dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name);
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* If name ends with suffix and has something before it, that part (the
 * dataset's base name), else NULL. */
static char *
strip_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    char *b;

    if (n <= s || strcmp(name + n - s, suffix) != 0)
        return NULL;
    if ((b = ds_path_cat(name, "", NULL)) != NULL)
        b[n - s] = '\0';
    return b;
}

/* Every dataset of directory dir, sorted by name: the prefixes of the
 * "<base>.idx" files (with their ".bin") and of the "<base>_idx.npz"
 * files (with their "_ids.npy"), as PaddleNLP's get_train_data_file()
 * lists them; a base that has both forms counts once. */
static int
expand_dir(const char *dir, struct words *out, struct ds_err *err)
{
    struct words bases = { NULL, 0, 0 };
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = 0;

    if (d == NULL)
        return ds_err_set(err, DS_EIO, "cannot read directory '%s': %s", dir,
                          strerror(errno));
    while ((e = readdir(d)) != NULL) {
        static const char *const forms[2][2] = { { ".idx", ".bin" },
                                                 { "_idx.npz", "_ids.npy" } };

        for (int k = 0; k < 2; k++) {
            char *base = strip_suffix(e->d_name, forms[k][0]);
            char *index, *data;

            if (base == NULL)
                continue;
            index = join(dir, e->d_name);
            data = join(dir, base);
            if (data != NULL) {
                char *t = ds_path_cat(data, forms[k][1], NULL);

                free(data);
                data = t;
            }
            if (index == NULL || data == NULL) {
                rc = ds_err_nomem(err);
            } else if (!is_file(index)) {
                rc = 0; /* a directory or a dangling link: not a dataset */
            } else if (!is_file(data)) {
                rc = ds_err_set(err, DS_EIO,
                                "directory '%s': '%s' has no '%s' beside it",
                                dir, index, data);
            } else {
                if ((rc = words_push(&bases, base, err)) == 0)
                    base = NULL; /* bases owns it */
            }
            free(base);
            free(index);
            free(data);
            if (rc < 0)
                goto out;
        }
    }
    if (bases.n == 0) {
        rc = ds_err_set(err, DS_EINVAL,
                        "directory '%s' holds no dataset (no <prefix>.idx "
                        "and .bin, nor <prefix>_idx.npz and _ids.npy)",
                        dir);
        goto out;
    }
    qsort(bases.w, bases.n, sizeof(char *), cmp_str);
    for (size_t i = 0; i < bases.n; i++) {
        char *p;

        if (i > 0 && strcmp(bases.w[i], bases.w[i - 1]) == 0)
            continue;
        if ((p = join(dir, bases.w[i])) == NULL) {
            rc = ds_err_nomem(err);
            goto out;
        }
        if ((rc = words_push(out, p, err)) < 0) {
            free(p);
            goto out;
        }
    }
out:
    closedir(d);
    words_release(&bases);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The list                                                                  */

static int
parse_weight(const char *s, double *out, struct ds_err *err)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v))
        return ds_err_set(err, DS_EINVAL,
                          "corpus list: weight '%s' is not a number (the "
                          "list is \"w1 prefix1 w2 prefix2 ...\"; quote a "
                          "prefix that holds blanks)",
                          s);
    if (!(v > 0))
        return ds_err_set(err, DS_EINVAL,
                          "corpus list: weight '%s' must be positive", s);
    *out = v;
    return 0;
}

/* l gets the n prefixes of ws (taken over) with weights w (NULL: 1). */
static int
list_take(struct ds_corpus_list *l, struct words *ws, const double *w,
          struct ds_err *err)
{
    l->prefixes = (char **)calloc(ws->n ? ws->n : 1, sizeof(char *));
    l->weights = (double *)malloc((ws->n ? ws->n : 1) * sizeof(double));
    if (l->prefixes == NULL || l->weights == NULL)
        return ds_err_nomem(err);
    for (size_t i = 0; i < ws->n; i++) {
        l->prefixes[i] = ws->w[i];
        l->weights[i] = w ? w[i] : 1;
        ws->w[i] = NULL;
    }
    l->n = ws->n;
    ws->n = 0;
    return 0;
}

/* A single word: a directory, or a dataset prefix. */
static int
parse_one(struct ds_corpus_list *l, const char *path, struct ds_err *err)
{
    struct words ws = { NULL, 0, 0 };
    int rc;

    if (is_dir(path)) {
        if ((rc = expand_dir(path, &ws, err)) < 0)
            goto out;
        l->from_dir = 1;
        l->weighted = ws.n > 1; /* PaddleNLP: weight 1.0 each */
    } else {
        char *p;

        if ((rc = check_prefix(path, err)) < 0)
            return rc;
        if ((p = ds_path_cat(path, "", NULL)) == NULL)
            return ds_err_nomem(err);
        if ((rc = words_push(&ws, p, err)) < 0) {
            free(p);
            return rc;
        }
    }
    rc = list_take(l, &ws, NULL, err);
out:
    words_release(&ws);
    return rc;
}

/* Words of a weight list, "w1 p1 w2 p2 ...". */
static int
parse_pairs(struct ds_corpus_list *l, struct words *ws, struct ds_err *err)
{
    struct words prefixes = { NULL, 0, 0 };
    double *w = NULL;
    int rc = 0;

    if (ws->n % 2 != 0)
        return ds_err_set(err, DS_EINVAL,
                          "corpus list: weight '%s' has no prefix after it "
                          "(the list is \"w1 prefix1 w2 prefix2 ...\")",
                          ws->w[ws->n - 1]);
    if (ws->n / 2 > 32767)
        return ds_err_set(err, DS_EINVAL,
                          "corpus list: %zu corpora, at most 32767", ws->n / 2);
    if ((w = (double *)malloc(ws->n / 2 * sizeof(double))) == NULL)
        return ds_err_nomem(err);
    for (size_t i = 0; i < ws->n / 2 && rc == 0; i++)
        rc = parse_weight(ws->w[2 * i], &w[i], err);
    for (size_t i = 0; i < ws->n / 2 && rc == 0; i++) {
        const char *p = ws->w[2 * i + 1];

        if (is_dir(p))
            rc = ds_err_set(err, DS_EINVAL,
                            "corpus list: '%s' is a directory; a weight list "
                            "names dataset prefixes",
                            p);
        else if ((rc = check_prefix(p, err)) == 0)
            rc = words_push(&prefixes, ws->w[2 * i + 1], err);
        if (rc == 0)
            ws->w[2 * i + 1] = NULL; /* prefixes owns it now */
    }
    if (rc == 0) {
        l->weighted = 1;
        rc = list_take(l, &prefixes, w, err);
    }
    free(w);
    words_release(&prefixes);
    return rc;
}

static int
parse_words(struct ds_corpus_list *l, const char *text, bool comments,
            const char *what, const char *spec, struct ds_err *err)
{
    struct words ws = { NULL, 0, 0 };
    double w0;
    int rc;

    if ((rc = split_words(text, comments, what, &ws, err)) < 0)
        goto out;
    if (ws.n == 0) {
        rc = comments
                 ? ds_err_set(err, DS_EINVAL, "corpus list %s is empty", what)
                 : ds_err_set(err, DS_EINVAL, "corpus list: empty spec");
    } else if (ws.n == 1) {
        rc = parse_one(l, ws.w[0], err);
    } else if (!comments && parse_weight(ws.w[0], &w0, NULL) < 0) {
        /* Not a weight list: most likely a path with blanks ("sp ace/out
         * dir/cmrc") that does not exist; say both readings. */
        struct ds_err inner;

        parse_weight(ws.w[0], &w0, &inner);
        rc = ds_err_set(err, DS_EINVAL,
                        "dataset '%s' not found (no such prefix or "
                        "directory), and not a weight list: %s",
                        spec, inner.msg + strlen("corpus list: "));
    } else {
        rc = parse_pairs(l, &ws, err);
    }
out:
    words_release(&ws);
    return rc;
}

int
ds_corpus_list_parse(struct ds_corpus_list *l, const char *spec,
                     struct ds_err *err)
{
    int rc;

    memset(l, 0, sizeof(*l));
    if (spec == NULL)
        return ds_err_set(err, DS_EINVAL, "corpus list: no spec");
    /* A path that exists as given wins, blanks and all. */
    if (is_dir(spec) || check_prefix(spec, NULL) == 0)
        rc = parse_one(l, spec, err);
    else if (spec[0] == '@' && spec[1] != '\0') {
        char *text = read_list_file(spec + 1, err), what[300];

        if (text == NULL)
            return err ? err->code : DS_EIO;
        snprintf(what, sizeof(what), "'%.280s'", spec + 1);
        rc = parse_words(l, text, true, what, spec, err);
        free(text);
    } else {
        rc = parse_words(l, spec, false, "spec", spec, err);
    }
    if (rc < 0)
        ds_corpus_list_release(l);
    return rc;
}

void
ds_corpus_list_release(struct ds_corpus_list *l)
{
    for (size_t i = 0; l->prefixes != NULL && i < l->n; i++)
        free(l->prefixes[i]);
    free(l->prefixes);
    free(l->weights);
    memset(l, 0, sizeof(*l));
}

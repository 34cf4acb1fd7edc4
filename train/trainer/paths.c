/* SPDX-License-Identifier: MIT */
/*
 * paths.c: the run's paths, checked before anything is built: the
 * datasets of --input_dir, --continue_training's weights, the output and
 * cache directories (made with their parents), and rank 0's lock on the
 * output directory, which also clears what interrupted runs left there
 * (a training run's: an evaluation leaves them alone).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "ckpt/safetensors.h"
#include "ds.h"
#include "trainer.h"
#include "util/tr_util.h"

char *
file_in(const char *path, const char *name)
{
    struct stat st;
    char *out;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (asprintf(&out, "%s/%s", path, name) < 0)
            fatal("out of memory");
    } else if ((out = strdup(path)) == NULL) {
        fatal("out of memory");
    }
    return out;
}

/* mkdir -p path, as os.makedirs(exist_ok=True), and path a directory; on
 * failure -1 with errno and the directory that could not be made in
 * failed. */
static int
make_dirs(const char *path, char failed[PATH_MAX])
{
    struct stat st;

    if (tr_make_dirs(path, failed) < 0 || stat(path, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* A directory the run writes to: made with its parents, writable. */
static void
check_dir(const char *flag, const char *dir)
{
    char failed[PATH_MAX];

    if (make_dirs(dir, failed) < 0) {
        if (strcmp(failed, dir) == 0)
            fatal("%s '%s': cannot create it: %s", flag, dir, strerror(errno));
        fatal("%s '%s': cannot create '%s': %s", flag, dir, failed,
              strerror(errno));
    }
    if (access(dir, W_OK | X_OK) < 0)
        fatal("%s '%s': not writable: %s", flag, dir, strerror(errno));
}

static void
report_stale(const char *path, int is_dir, void *ctx)
{
    (void)ctx;
    log_info("removing '%s', %s an earlier run left unfinished", path,
             is_dir ? "a checkpoint" : "a temporary file");
}

/* The lock rank 0 holds on the output directory while it runs (never
 * released: the exit does). */
static int g_output_lock = -1;

/* Rank 0 owns the output directory: no other run may write to it at the
 * same time, and what interrupted runs left there is removed. */
static void
take_output_dir(const char *dir)
{
    char err[1024];
    int locked = 0;

    g_output_lock = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g_output_lock >= 0 && flock(g_output_lock, LOCK_EX | LOCK_NB) == 0) {
        locked = 1;
    } else if (g_output_lock >= 0 && errno == EWOULDBLOCK) {
        fatal("--output_dir '%s' is in use by another train run; wait for "
              "it to end, or pick another --output_dir",
              dir);
    }
    /* Without a lock (a file system without flock()), a temporary of a
     * process alive on this host is left alone. */
    if (ckpt_clean_stale(dir, !locked, report_stale, NULL, err, sizeof(err)) <
        0)
        fatal("%s", err);
}

/* Every path of the run before anything is built: the data (a
 * directory's datasets are listed), the output and cache directories
 * (made with their parents, as PaddleNLP and transformers make
 * output_dir).  The model config and the vocabulary were read already. */
void
check_paths(struct run *r)
{
    const struct train_args *a = &r->a;
    struct ds_corpus_list l;
    struct ds_err e;

    if (ds_corpus_list_parse(&l, a->input_dir, &e) < 0)
        fatal("--input_dir: %s", e.msg);
    if (l.from_dir) {
        char names[1024];
        size_t len = 0;

        names[0] = '\0';
        for (size_t i = 0; i < l.n && len < sizeof(names); i++) {
            int w = i < 8 ? snprintf(names + len, sizeof(names) - len, "%s%s",
                                     i ? ", " : "", l.prefixes[i])
                          : snprintf(names + len, sizeof(names) - len,
                                     ", ... (%zu more)", l.n - i);

            if (w < 0)
                break;
            len += (size_t)w;
            if (i >= 8)
                break;
        }
        log_info("--input_dir '%s': %zu dataset%s%s: %s", a->input_dir, l.n,
                 l.n == 1 ? "" : "s",
                 l.n > 1 ? ", blended with weight 1 each (as PaddleNLP does)"
                         : "",
                 names);
    }
    ds_corpus_list_release(&l);
    if (a->continue_training) { /* the weights (unless model_last wins) */
        char *w = file_in(a->model_name_or_path, "model.safetensors"), *last;

        if (asprintf(&last, "%s/model_last", a->output_dir) < 0)
            fatal("out of memory");
        if (access(last, F_OK) != 0) {
            struct st_file *f;
            struct st_err se;

            if (st_open(&f, w, &se) < 0)
                fatal("--continue_training: %s", se.msg);
            st_close(f);
        }
        free(last);
        free(w);
    }
    check_dir("--output_dir", a->output_dir);
    if (a->cache_dir != NULL)
        check_dir("--cache_dir", a->cache_dir);
    /* An evaluation writes one file atomically: it may run beside the
     * training that writes the checkpoints it reads. */
    if (g_rank == 0 && a->do_train)
        take_output_dir(a->output_dir);
}

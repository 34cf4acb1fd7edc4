/* SPDX-License-Identifier: MIT */
/* checkpoint.c: the trainer's checkpoint directories (see checkpoint.h). */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "model/config.h"
#include "cli/interrupt.h"
#include "model/model.h"
#include "optim/optim.h"
#include "safetensors.h"
#include "weights.h"
#include "util/tr_util.h"
#include "banned.h"

#define MODEL_FILE  "model.safetensors"
#define OPTIM_FILE  "optimizer.safetensors"
#define STATE_FILE  "trainer_state.json"
#define CONFIG_FILE "config.json"
#define VOCAB_FILE  "vocab.txt"

/* A trainer_state.json larger than this is refused (it holds a few
 * numbers and the run's arguments). */
#define STATE_MAX_BYTES (64u << 20)

/* out = dir + "/" + name; -1 if it does not fit. */
static int
join(char out[PATH_MAX], const char *dir, const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);

    return n < 0 || n >= PATH_MAX ? -1 : 0;
}

/* ------------------------------------------------------------- files */

/* fsync an existing file or directory. */
static int
sync_path(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

    if (fd < 0)
        return tr_fail(err, errlen, "cannot open '%s': %s", path,
                       strerror(errno));
    rc = fsync(fd);
    if (rc < 0)
        tr_fail(err, errlen, "cannot sync '%s': %s", path, strerror(errno));
    close(fd);
    return rc;
}

/* Create path (it must not exist) holding the len bytes at p, fsync'ed. */
static int
write_new_file(const char *path, const void *p, size_t len, char *err,
               size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);

    if (fd < 0)
        return tr_fail(err, errlen, "cannot create '%s': %s", path,
                       strerror(errno));
    if (tr_write_all(fd, p, len) < 0 || fsync(fd) < 0) {
        tr_fail(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (close(fd) < 0)
        return tr_fail(err, errlen, "cannot write '%s': %s", path,
                       strerror(errno));
    return 0;
}

/* Copy the file src to the new file dst, fsync'ed. */
static int
copy_file(const char *src, const char *dst, char *err, size_t errlen)
{
    char buf[1 << 16];
    int in, out, rc = -1;

    in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return tr_fail(err, errlen, "cannot open '%s': %s", src,
                       strerror(errno));
    out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (out < 0) {
        tr_fail(err, errlen, "cannot create '%s': %s", dst, strerror(errno));
        close(in);
        return -1;
    }
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            tr_fail(err, errlen, "cannot read '%s': %s", src, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        if (tr_write_all(out, buf, (size_t)n) < 0) {
            tr_fail(err, errlen, "cannot write '%s': %s", dst, strerror(errno));
            goto out;
        }
    }
    if (fsync(out) < 0) {
        tr_fail(err, errlen, "cannot write '%s': %s", dst, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    close(in);
    if (close(out) < 0 && rc == 0)
        rc =
            tr_fail(err, errlen, "cannot write '%s': %s", dst, strerror(errno));
    return rc;
}

/* Read all of path into a NUL-terminated buffer (at most max bytes). */
static char *
read_whole(const char *path, size_t max, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    char *buf = NULL;
    size_t got = 0;

    if (fd < 0) {
        tr_fail(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) < 0) {
        tr_fail(err, errlen, "cannot stat '%s': %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        tr_fail(err, errlen, "'%s' is %s", path,
                S_ISREG(st.st_mode) ? "too large" : "not a regular file");
        goto fail;
    }
    buf = (char *)malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        tr_fail(err, errlen, "cannot read '%s': out of memory", path);
        goto fail;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            tr_fail(err, errlen, "cannot read '%s': %s", path,
                    n < 0 ? strerror(errno) : "file shrank while read");
            goto fail;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    *len = got;
    close(fd);
    return buf;
fail:
    free(buf);
    close(fd);
    return NULL;
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* Remove path and everything under it; a missing path is no error.
 * Returns 0, or -1 with errno set. */
static int
remove_tree(const char *path)
{
    struct stat st;

    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 ? -1 : 0;
}

/* ------------------------------------------------------------ saving */

static const char *const file_meta[] = { "format", "pt", NULL };

/* model.safetensors: the weights, every tensor whole, one at a time. */
static int
save_model(const char *tmp, const struct ckpt_tensors *src, int write,
           char *err, size_t errlen)
{
    static const char *const prefix[] = { "" };
    static const int bufs[] = { CKPT_WEIGHTS };
    char path[PATH_MAX];
    struct st_err se;

    if (write && join(path, tmp, MODEL_FILE) < 0)
        return tr_fail(err, errlen, "'%s': path too long", tmp);
    if (weights_save(path, src->table, prefix, bufs, 1, src->get, src->ctx,
                     NULL, 0, file_meta, write, &se) < 0)
        return tr_fail(err, errlen, "%s", se.msg);
    return 0;
}

static int
save_config(const char *tmp, const struct model_config *cfg, char *err,
            size_t errlen)
{
    char path[PATH_MAX];
    struct config_err ce;

    if (join(path, tmp, CONFIG_FILE) < 0)
        return tr_fail(err, errlen, "'%s': path too long", tmp);
    if (config_write_json(cfg, path, &ce) < 0)
        return tr_fail(err, errlen, "%s", ce.msg);
    return sync_path(path, err, errlen);
}

/* optimizer.safetensors: AdamW's moments, "exp_avg." then "exp_avg_sq."
 * + the weights' names, laid out as the weights (Conv1D transposed). */
static int
save_optimizer(const char *tmp, const struct ckpt_tensors *src, int write,
               char *err, size_t errlen)
{
    static const char *const prefix[] = { "exp_avg.", "exp_avg_sq." };
    static const int bufs[] = { CKPT_EXP_AVG, CKPT_EXP_AVG_SQ };
    char path[PATH_MAX];
    struct st_err se;

    if (write && join(path, tmp, OPTIM_FILE) < 0)
        return tr_fail(err, errlen, "'%s': path too long", tmp);
    if (weights_save(path, src->table, prefix, bufs, 2, src->get, src->ctx,
                     NULL, 0, file_meta, write, &se) < 0)
        return tr_fail(err, errlen, "%s", se.msg);
    return 0;
}

/* Parse s strictly as one JSON value; NULL with why set on failure. */
static struct json_object *
parse_json(const char *s, size_t len, char *why, size_t whylen)
{
    struct json_tokener *tok = json_tokener_new_ex(64);
    struct json_object *obj = NULL;
    enum json_tokener_error je;
    size_t end;

    if (tok == NULL || len > INT_MAX) {
        snprintf(why, whylen, "%s", tok ? "too large" : "out of memory");
        json_tokener_free(tok);
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    obj = json_tokener_parse_ex(tok, s, (int)len);
    je = json_tokener_get_error(tok);
    end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (obj == NULL || je != json_tokener_success) {
        snprintf(why, whylen, "invalid JSON at byte %zu: %s", end,
                 je == json_tokener_continue  ? "unexpected end"
                 : je == json_tokener_success ? "null, not an object"
                                              : json_tokener_error_desc(je));
        json_object_put(obj);
        return NULL;
    }
    while (end < len && strchr(" \t\r\n", s[end]) != NULL && s[end] != '\0')
        end++;
    if (end != len) {
        snprintf(why, whylen, "text after the JSON value at byte %zu", end);
        json_object_put(obj);
        return NULL;
    }
    return obj;
}

static int
save_state(const char *tmp, const struct model_config *cfg,
           int64_t optimizer_step, const struct train_state *s,
           const char *args_json, char *err, size_t errlen)
{
    struct json_object *j = json_object_new_object(), *args = NULL;
    char path[PATH_MAX], lr[32], why[160];
    const char *text;
    int rc = -1;

    if (join(path, tmp, STATE_FILE) < 0) {
        tr_fail(err, errlen, "'%s': path too long", tmp);
        goto out;
    }
    if (s->global_step < 0 || optimizer_step < 0 || s->global_batch_size < 0 ||
        s->micro_batch_size < 0 || !isfinite(s->learning_rate) ||
        s->learning_rate < 0 || s->skipped_steps < 0 ||
        !isfinite(s->loss_scale) || s->loss_scale < 0 ||
        s->loss_scale_incr_count < 0 || s->loss_scale_decr_count < 0) {
        tr_fail(err, errlen,
                "cannot write '%s': a negative or non-finite value "
                "in the training state",
                path);
        goto out;
    }
    if (args_json != NULL) {
        args = parse_json(args_json, strlen(args_json), why, sizeof(why));
        if (args == NULL || !json_object_is_type(args, json_type_object)) {
            tr_fail(err, errlen,
                    "cannot write '%s': the arguments are not a "
                    "JSON object (%s)",
                    path, args ? "another value" : why);
            goto out;
        }
    } else {
        args = json_object_new_object();
    }
    config_format_double(lr, sizeof(lr), s->learning_rate);
    if (j == NULL || args == NULL ||
        json_object_object_add(j, "format",
                               json_object_new_string(CKPT_STATE_FORMAT)) ||
        json_object_object_add(j, "version",
                               json_object_new_int(CKPT_STATE_VERSION)) ||
        json_object_object_add(
            j, "model_type",
            json_object_new_string(cfg->type == MODEL_GPT ? "gpt" : "ernie")) ||
        json_object_object_add(j, "global_step",
                               json_object_new_int64(s->global_step)) ||
        json_object_object_add(j, "consumed_samples",
                               json_object_new_uint64(s->consumed_samples)) ||
        json_object_object_add(j, "optimizer_step",
                               json_object_new_int64(optimizer_step)) ||
        json_object_object_add(j, "global_batch_size",
                               json_object_new_int64(s->global_batch_size)) ||
        json_object_object_add(j, "micro_batch_size",
                               json_object_new_int64(s->micro_batch_size)) ||
        json_object_object_add(j, "seed", json_object_new_uint64(s->seed)) ||
        json_object_object_add(
            j, "learning_rate",
            json_object_new_double_s(s->learning_rate, lr)) ||
        json_object_object_add(j, "skipped_steps",
                               json_object_new_int64(s->skipped_steps))) {
        tr_fail(err, errlen, "cannot write '%s': out of memory", path);
        goto out;
    }
    if (s->loss_scale > 0) { /* float16's loss scaling */
        char ls[32];

        config_format_double(ls, sizeof(ls), s->loss_scale);
        if (json_object_object_add(
                j, "loss_scale", json_object_new_double_s(s->loss_scale, ls)) ||
            json_object_object_add(
                j, "loss_scale_incr_count",
                json_object_new_int64(s->loss_scale_incr_count)) ||
            json_object_object_add(
                j, "loss_scale_decr_count",
                json_object_new_int64(s->loss_scale_decr_count))) {
            tr_fail(err, errlen, "cannot write '%s': out of memory", path);
            goto out;
        }
    }
    if (json_object_object_add(j, "args", args) < 0) {
        tr_fail(err, errlen, "cannot write '%s': out of memory", path);
        goto out;
    }
    args = NULL; /* j owns it now */
    text = json_object_to_json_string_ext(
        j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
               JSON_C_TO_STRING_NOSLASHESCAPE);
    if (text == NULL) {
        tr_fail(err, errlen, "cannot write '%s': out of memory", path);
        goto out;
    }
    {
        size_t len = strlen(text);
        char *buf = (char *)malloc(len + 2);

        if (buf == NULL) {
            tr_fail(err, errlen, "cannot write '%s': out of memory", path);
            goto out;
        }
        memcpy(buf, text, len);
        buf[len] = '\n';
        rc = write_new_file(path, buf, len + 1, err, errlen);
        free(buf);
    }
out:
    json_object_put(args);
    json_object_put(j);
    return rc;
}

/* Put the finished temporary directory tmp in dir's place.  With an old
 * dir, swap the two names atomically where the file system can, so dir
 * always names a complete checkpoint; else rename the old one aside
 * first and back on failure. */
static int
install(const char *dir, const char *tmp, const char *bak, int have_old,
        int keep_backup, char *err, size_t errlen)
{
    char aside[PATH_MAX];

    if (!have_old) {
        if (rename(tmp, dir) < 0)
            return tr_fail(err, errlen, "cannot rename '%s' to '%s': %s", tmp,
                           dir, strerror(errno));
        return 0;
    }
    if (keep_backup && remove_tree(bak) < 0)
        return tr_fail(err, errlen, "cannot remove the old backup '%s': %s",
                       bak, strerror(errno));
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        /* tmp now holds the old checkpoint */
        if (keep_backup ? rename(tmp, bak) < 0 : remove_tree(tmp) < 0)
            return tr_fail(err, errlen, "saved '%s', but cannot %s '%s': %s",
                           dir,
                           keep_backup ? "back up the old checkpoint as"
                                       : "remove the old checkpoint",
                           keep_backup ? bak : tmp, strerror(errno));
        return 0;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return tr_fail(err, errlen, "cannot swap '%s' and '%s': %s", tmp, dir,
                       strerror(errno));
    if (keep_backup)
        snprintf(aside, sizeof(aside), "%s", bak);
    else if (snprintf(aside, sizeof(aside), "%s.old.%ld", dir,
                      (long)getpid()) >= (int)sizeof(aside))
        return tr_fail(err, errlen, "'%s': path too long", dir);
    if (rename(dir, aside) < 0)
        return tr_fail(err, errlen, "cannot rename '%s' to '%s': %s", dir,
                       aside, strerror(errno));
    if (rename(tmp, dir) < 0) {
        int e = errno;

        rename(aside, dir);
        return tr_fail(err, errlen, "cannot rename '%s' to '%s': %s", tmp, dir,
                       strerror(e));
    }
    if (!keep_backup && remove_tree(aside) < 0)
        return tr_fail(err, errlen, "saved '%s', but cannot remove '%s': %s",
                       dir, aside, strerror(errno));
    return 0;
}

/* A whole model's flat buffers (and a whole-table optimizer's moments) as
 * a checkpoint's tensors. */
struct local {
    struct model *m;
    const struct optimizer *o;
};

static float *
local_buffer(const struct local *l, int b)
{
    return b == CKPT_WEIGHTS   ? model_params(l->m)
           : b == CKPT_EXP_AVG ? l->o->m
                               : l->o->v;
}

static int
local_get(void *ctx, int b, const struct param_tensor *t, float *host,
          struct st_err *err)
{
    const struct local *l = ctx;
    const struct ops *op = model_ops(l->m);

    if (host != NULL && op->download(host, local_buffer(l, b) + t->offset,
                                     t->numel * sizeof(float)) < 0) {
        snprintf(err->msg, sizeof(err->msg), "%s", op->error());
        return -1;
    }
    return 0;
}

static int
local_put(void *ctx, int b, const struct param_tensor *t, const float *host,
          struct st_err *err)
{
    const struct local *l = ctx;

    (void)err;
    model_ops(l->m)->upload(local_buffer(l, b) + t->offset, host,
                            t->numel * sizeof(float));
    return 0;
}

int
ckpt_save(const char *dir, struct model *m, const struct optimizer *o,
          const struct train_state *s, const char *args_json,
          const char *vocab_path, int keep_backup, char *err, size_t errlen)
{
    struct ckpt_file vocab = { VOCAB_FILE, vocab_path, NULL };

    return ckpt_save_files(dir, m, o, s, args_json, &vocab, vocab_path != NULL,
                           keep_backup, err, errlen);
}

int
ckpt_write_dir(const char *dir,
               int (*fill)(const char *tmp, void *ctx, char *err,
                           size_t errlen),
               void *ctx, const struct ckpt_file *files, size_t n_files,
               int keep_backup, char *err, size_t errlen)
{
    /* d leaves room for the suffixes of tmp and bak */
    char d[PATH_MAX - 32], tmp[PATH_MAX], bak[PATH_MAX], path[PATH_MAX];
    size_t len = strlen(dir);
    struct stat st;
    int have_old = 0, made = 0, rc = -1;

    while (len > 1 && dir[len - 1] == '/')
        len--; /* "ckpt/" names "ckpt", whose temp is "ckpt.tmp.<pid>" */
    if (len == 0 || len >= sizeof(d))
        return tr_fail(err, errlen, "bad directory '%s'", dir);
    snprintf(d, sizeof(d), "%.*s", (int)len, dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", d, (long)getpid());
    snprintf(bak, sizeof(bak), "%s_bak", d);
    if (stat(d, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return tr_fail(err, errlen,
                           "cannot write '%s': it exists and is not a "
                           "directory",
                           d);
        have_old = 1;
    } else if (errno != ENOENT) {
        return tr_fail(err, errlen, "cannot stat '%s': %s", d, strerror(errno));
    }
    /* A temp dir left by a crashed process that had our pid. */
    if (remove_tree(tmp) < 0)
        return tr_fail(err, errlen, "cannot remove '%s': %s", tmp,
                       strerror(errno));
    if (mkdir(tmp, 0777) < 0)
        return tr_fail(err, errlen, "cannot create '%s': %s", tmp,
                       strerror(errno));
    made = 1;
    interrupt_protect(tmp); /* a SIGINT from here removes it */
    if (fill != NULL && fill(tmp, ctx, err, errlen) < 0)
        goto out;
    for (size_t i = 0; i < n_files; i++) {
        if (join(path, tmp, files[i].name) < 0) {
            tr_fail(err, errlen, "'%s/%s': path too long", tmp, files[i].name);
            goto out;
        }
        if (files[i].src
                ? copy_file(files[i].src, path, err, errlen) < 0
                : write_new_file(path, files[i].text, strlen(files[i].text),
                                 err, errlen) < 0)
            goto out;
    }
    if (sync_path(tmp, err, errlen) < 0)
        goto out;
    /* From the swap on, tmp may hold the old directory, complete. */
    interrupt_release();
    if (install(d, tmp, bak, have_old, keep_backup, err, errlen) < 0)
        goto out;
    tr_sync_parent(d);
    rc = 0;
out:
    interrupt_release();
    if (rc < 0 && made)
        remove_tree(tmp);
    return rc;
}

/* What ckpt_save_tensors() writes besides the caller's files. */
struct save_ctx {
    const struct model_config *cfg;
    const struct ckpt_tensors *src;
    int64_t optimizer_step;
    const struct train_state *s;
    const char *args_json;
};

static int
fill_checkpoint(const char *tmp, void *ctx, char *err, size_t errlen)
{
    const struct save_ctx *c = ctx;

    if (save_model(tmp, c->src, 1, err, errlen) < 0 ||
        save_config(tmp, c->cfg, err, errlen) < 0 ||
        save_optimizer(tmp, c->src, 1, err, errlen) < 0 ||
        save_state(tmp, c->cfg, c->optimizer_step, c->s, c->args_json, err,
                   errlen) < 0)
        return -1;
    return 0;
}

int
ckpt_save_files(const char *dir, struct model *m, const struct optimizer *o,
                const struct train_state *s, const char *args_json,
                const struct ckpt_file *files, size_t n_files, int keep_backup,
                char *err, size_t errlen)
{
    struct local l = { m, o };
    struct ckpt_tensors src = { model_table(m), local_get, local_put, &l };

    if (o->lo != 0 || o->hi != model_table(m)->total)
        return tr_fail(err, errlen,
                       "the optimizer holds a range of the model (sharding): "
                       "gather it first");
    return ckpt_save_tensors(dir, model_cfg(m), &src, o->t, s, args_json, files,
                             n_files, keep_backup, 1, err, errlen);
}

int
ckpt_save_tensors(const char *dir, const struct model_config *cfg,
                  const struct ckpt_tensors *src, int64_t optimizer_step,
                  const struct train_state *s, const char *args_json,
                  const struct ckpt_file *files, size_t n_files,
                  int keep_backup, int write, char *err, size_t errlen)
{
    struct save_ctx c = { cfg, src, optimizer_step, s, args_json };

    tr_stage_reset();
    if (!write) /* only the writer's gathers */
        return save_model(NULL, src, 0, err, errlen) < 0 ||
                       save_optimizer(NULL, src, 0, err, errlen) < 0
                   ? -1
                   : 0;
    return ckpt_write_dir(dir, fill_checkpoint, &c, files, n_files, keep_backup,
                          err, errlen);
}

/* name = "<base>.tmp.<pid>" or "<base>.old.<pid>": the pid, else 0. */
static long
stale_pid(const char *name)
{
    size_t n = strlen(name);
    const char *t = name + n;

    while (t > name && t[-1] >= '0' && t[-1] <= '9')
        t--;
    if (t == name + n || (size_t)(t - name) < 6 ||
        (memcmp(t - 5, ".tmp.", 5) != 0 && memcmp(t - 5, ".old.", 5) != 0))
        return 0;
    return strtol(t, NULL, 10);
}

int
ckpt_clean_stale(const char *dir, int check_pid,
                 void (*report)(const char *path, int is_dir, void *ctx),
                 void *ctx, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (d == NULL)
        return tr_fail(err, errlen, "cannot read '%s': %s", dir,
                       strerror(errno));
    while ((e = readdir(d)) != NULL) {
        long pid = stale_pid(e->d_name);
        char path[PATH_MAX];
        struct stat st;

        if (pid <= 0 || pid == (long)getpid() ||
            (check_pid && (kill((pid_t)pid, 0) == 0 || errno == EPERM)))
            continue;
        if (join(path, dir, e->d_name) < 0 || lstat(path, &st) < 0)
            continue;
        if (report != NULL)
            report(path, S_ISDIR(st.st_mode), ctx);
        if (remove_tree(path) < 0) {
            tr_fail(err, errlen, "cannot remove '%s': %s", path,
                    strerror(errno));
            closedir(d);
            return -1;
        }
        n++;
    }
    closedir(d);
    return n;
}

/* ----------------------------------------------------------- loading */

/* An integer field of trainer_state.json in [0, max]. */
static int
get_count(const char *path, struct json_object *j, const char *key,
          uint64_t max, uint64_t *out, char *err, size_t errlen)
{
    struct json_object *v;

    if (!json_object_object_get_ex(j, key, &v))
        return tr_fail(err, errlen, "'%s' has no \"%s\"", path, key);
    if (!json_object_is_type(v, json_type_int))
        return tr_fail(err, errlen, "'%s': \"%s\" is not an integer", path,
                       key);
    if (json_object_get_int64(v) < 0)
        return tr_fail(err, errlen, "'%s': \"%s\" is negative", path, key);
    *out = json_object_get_uint64(v);
    /* json-c reads an integer of 2^64 and beyond as 2^64 - 1, silently. */
    if (*out > max || *out == UINT64_MAX)
        return tr_fail(err, errlen, "'%s': \"%s\" is out of range", path, key);
    return 0;
}

static int
read_state(const char *dir, enum model_type type, struct train_state *s,
           char *err, size_t errlen)
{
    struct json_object *j, *v = NULL;
    char path[PATH_MAX], why[160];
    const char *want = type == MODEL_GPT ? "gpt" : "ernie";
    uint64_t gs, os, gbs, mbs;
    size_t len;
    char *text;
    int rc = -1;

    if (join(path, dir, STATE_FILE) < 0)
        return tr_fail(err, errlen, "'%s': path too long", dir);
    text = read_whole(path, STATE_MAX_BYTES, &len, err, errlen);
    if (text == NULL)
        return -1;
    j = parse_json(text, len, why, sizeof(why));
    free(text);
    if (j == NULL)
        return tr_fail(err, errlen, "'%s': %s", path, why);
    if (!json_object_is_type(j, json_type_object)) {
        tr_fail(err, errlen, "'%s' is not a JSON object", path);
        goto out;
    }
    if (!json_object_object_get_ex(j, "format", &v) ||
        !json_object_is_type(v, json_type_string) ||
        strcmp(json_object_get_string(v), CKPT_STATE_FORMAT) != 0) {
        tr_fail(err, errlen,
                "'%s' is not a trainer state: \"format\" is not "
                "\"%s\"",
                path, CKPT_STATE_FORMAT);
        goto out;
    }
    if (!json_object_object_get_ex(j, "version", &v) ||
        !json_object_is_type(v, json_type_int) ||
        json_object_get_int64(v) != CKPT_STATE_VERSION) {
        tr_fail(err, errlen,
                "'%s': unsupported \"version\" %s (this trainer "
                "reads version %d)",
                path, v ? json_object_to_json_string(v) : "(missing)",
                CKPT_STATE_VERSION);
        goto out;
    }
    if (!json_object_object_get_ex(j, "model_type", &v) ||
        !json_object_is_type(v, json_type_string)) {
        tr_fail(err, errlen, "'%s': \"model_type\" is missing or not a string",
                path);
        goto out;
    }
    if (strcmp(json_object_get_string(v), want) != 0) {
        tr_fail(err, errlen,
                "checkpoint '%s' was made for model_type %.32s, "
                "this run has %s",
                dir, json_object_get_string(v), want);
        goto out;
    }
    if (get_count(path, j, "global_step", INT64_MAX, &gs, err, errlen) < 0 ||
        get_count(path, j, "consumed_samples", UINT64_MAX, &s->consumed_samples,
                  err, errlen) < 0 ||
        get_count(path, j, "optimizer_step", INT64_MAX, &os, err, errlen) < 0 ||
        get_count(path, j, "global_batch_size", INT64_MAX, &gbs, err, errlen) <
            0 ||
        get_count(path, j, "micro_batch_size", INT64_MAX, &mbs, err, errlen) <
            0 ||
        get_count(path, j, "seed", UINT64_MAX, &s->seed, err, errlen) < 0)
        goto out;
    s->global_step = (int64_t)gs;
    s->optimizer_step = (int64_t)os;
    s->global_batch_size = (int64_t)gbs;
    s->micro_batch_size = (int64_t)mbs;
    if (!json_object_object_get_ex(j, "learning_rate", &v) ||
        !(json_object_is_type(v, json_type_double) ||
          json_object_is_type(v, json_type_int))) {
        tr_fail(err, errlen,
                "'%s': \"learning_rate\" is missing or not a "
                "number",
                path);
        goto out;
    }
    s->learning_rate = json_object_get_double(v);
    if (!isfinite(s->learning_rate) || s->learning_rate < 0) {
        tr_fail(err, errlen,
                "'%s': \"learning_rate\" is negative or not "
                "finite",
                path);
        goto out;
    }
    if (!json_object_object_get_ex(j, "args", &v) ||
        !json_object_is_type(v, json_type_object)) {
        tr_fail(err, errlen, "'%s': \"args\" is missing or not an object",
                path);
        goto out;
    }
    /* The optional keys: absent (checkpoints of before, runs without
     * float16's loss scaling), 0. */
    {
        uint64_t sk = 0, ic = 0, dc = 0;

        if ((json_object_object_get_ex(j, "skipped_steps", NULL) &&
             get_count(path, j, "skipped_steps", INT64_MAX, &sk, err, errlen) <
                 0) ||
            (json_object_object_get_ex(j, "loss_scale_incr_count", NULL) &&
             get_count(path, j, "loss_scale_incr_count", INT32_MAX, &ic, err,
                       errlen) < 0) ||
            (json_object_object_get_ex(j, "loss_scale_decr_count", NULL) &&
             get_count(path, j, "loss_scale_decr_count", INT32_MAX, &dc, err,
                       errlen) < 0))
            goto out;
        s->skipped_steps = (int64_t)sk;
        s->loss_scale_incr_count = (int64_t)ic;
        s->loss_scale_decr_count = (int64_t)dc;
        s->loss_scale = 0;
        if (json_object_object_get_ex(j, "loss_scale", &v)) {
            s->loss_scale = json_object_get_double(v);
            if (!(json_object_is_type(v, json_type_double) ||
                  json_object_is_type(v, json_type_int)) ||
                !isfinite(s->loss_scale) || s->loss_scale <= 0) {
                tr_fail(err, errlen,
                        "'%s': \"loss_scale\" is not a positive number", path);
                goto out;
            }
        }
    }
    rc = 0;
out:
    json_object_put(j);
    return rc;
}

/* When dir has a config.json, its sizes must be m's.  (binary_head is
 * no Hugging Face key, so config.json does not say; the SOP head's
 * tensors in model.safetensors do.) */
static int
check_config(const char *dir, const struct model_config *k, char *err,
             size_t errlen)
{
    struct model_config c;
    struct config_err ce;
    char path[PATH_MAX];
    struct stat st;

    if (join(path, dir, CONFIG_FILE) < 0)
        return tr_fail(err, errlen, "'%s': path too long", dir);
    if (stat(path, &st) < 0 && errno == ENOENT)
        return 0;
    config_defaults(&c, k->type);
    if (config_read_json(&c, path, &ce) < 0)
        return tr_fail(err, errlen, "%s", ce.msg);
    if (c.type != k->type)
        return tr_fail(err, errlen,
                       "checkpoint '%s' was made for model_type %s, "
                       "this run has %s",
                       dir, c.type == MODEL_GPT ? "gpt" : "ernie",
                       k->type == MODEL_GPT ? "gpt" : "ernie");
    {
        int ernie = k->type == MODEL_ERNIE;
        int task = ernie && c.use_task_id && k->use_task_id;
        const struct {
            const char *name;
            int used, ckpt, run;
        } f[] = {
            { "vocab_size", 1, c.vocab_size, k->vocab_size },
            { "hidden_size", 1, c.hidden_size, k->hidden_size },
            { "num_hidden_layers", 1, c.num_layers, k->num_layers },
            { "num_attention_heads", 1, c.num_heads, k->num_heads },
            { "intermediate_size", 1,
              c.intermediate_size ? c.intermediate_size : 4 * c.hidden_size,
              k->intermediate_size ? k->intermediate_size
                                   : 4 * k->hidden_size },
            { "max_position_embeddings", 1, c.max_position, k->max_position },
            { "type_vocab_size", ernie, c.type_vocab_size, k->type_vocab_size },
            { "use_task_id", ernie, c.use_task_id, k->use_task_id },
            { "task_type_vocab_size", task, c.task_type_vocab_size,
              k->task_type_vocab_size },
        };

        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
            if (f[i].used && f[i].ckpt != f[i].run)
                return tr_fail(err, errlen,
                               "checkpoint '%s' was made for %s "
                               "%d, this run has %d",
                               dir, f[i].name, f[i].ckpt, f[i].run);
    }
    return 0;
}

/* Hand dst the tensors prefix + name of the file dir/file, buffer bufs[i]
 * for prefixes[i]: exactly the table's tensors (besides those of other
 * prefixes). */
static int
load_tensors(const char *dir, const char *file, const struct ckpt_tensors *dst,
             const int *bufs, const char *const *prefixes, int n_bufs,
             char *err, size_t errlen)
{
    char path[PATH_MAX];
    struct st_file *f = NULL;
    struct st_err se;
    size_t unused;
    int rc = -1;

    if (join(path, dir, file) < 0)
        return tr_fail(err, errlen, "'%s': path too long", dir);
    if (st_open(&f, path, &se) < 0)
        return tr_fail(err, errlen, "%s", se.msg);
    for (int i = 0; i < n_bufs; i++) {
        if (weights_load(f, dst->table, prefixes[i], bufs[i], dst->put,
                         dst->ctx, &unused, &se) < 0) {
            tr_fail(err, errlen, "'%s': %s", path, se.msg);
            goto out;
        }
        if (unused > 0) {
            tr_fail(err, errlen,
                    "'%s' holds %zu tensor%s named '%s...' that "
                    "this model does not have",
                    path, unused, unused == 1 ? "" : "s", prefixes[i]);
            goto out;
        }
    }
    rc = 0;
out:
    st_close(f);
    return rc;
}

int
ckpt_load_tensors(const char *dir, const struct model_config *cfg,
                  const struct ckpt_tensors *dst, int optimizer,
                  struct train_state *s, char *err, size_t errlen)
{
    static const char *const model_prefix[] = { "" };
    static const int model_bufs[] = { CKPT_WEIGHTS };
    static const char *const optim_prefix[] = { "exp_avg.", "exp_avg_sq." };
    static const int optim_bufs[] = { CKPT_EXP_AVG, CKPT_EXP_AVG_SQ };
    struct train_state st;

    tr_stage_reset();
    if (read_state(dir, cfg->type, &st, err, errlen) < 0 ||
        check_config(dir, cfg, err, errlen) < 0 ||
        load_tensors(dir, MODEL_FILE, dst, model_bufs, model_prefix, 1, err,
                     errlen) < 0 ||
        (optimizer && load_tensors(dir, OPTIM_FILE, dst, optim_bufs,
                                   optim_prefix, 2, err, errlen) < 0))
        return -1;
    *s = st;
    return 0;
}

int
ckpt_load(const char *dir, struct model *m, struct optimizer *o,
          struct train_state *s, char *err, size_t errlen)
{
    struct local l = { m, o };
    struct ckpt_tensors dst = { model_table(m), local_get, local_put, &l };

    if (o != NULL && (o->lo != 0 || o->hi != o->table->total))
        return tr_fail(err, errlen,
                       "the optimizer holds a range of the model (sharding):"
                       " load into a whole-table one");
    if (ckpt_load_tensors(dir, model_cfg(m), &dst, o != NULL, s, err, errlen) <
        0)
        return -1;
    if (o != NULL)
        o->t = s->optimizer_step;
    return 0;
}

int
ckpt_read_state(const char *dir, enum model_type type, struct train_state *s,
                char *err, size_t errlen)
{
    return read_state(dir, type, s, err, errlen);
}

int
ckpt_exists(const char *dir)
{
    static const char *const files[] = { STATE_FILE, MODEL_FILE, OPTIM_FILE };
    char path[PATH_MAX];
    struct stat st;

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (join(path, dir, files[i]) < 0 || stat(path, &st) < 0 ||
            !S_ISREG(st.st_mode))
            return 0;
    return 1;
}

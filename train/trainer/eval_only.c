/* SPDX-License-Identifier: MIT */
/*
 * eval_only.c: an evaluation without training (--do_eval without
 * --do_train, or --do_train false): the checkpoint's losses on the valid
 * and test splits, the very micro-batches training's evaluations read,
 * with the accuracies (ERNIE: MLM and SOP; GPT: perplexity and next-token
 * accuracy), in the log and in output_dir/eval_results.json, as the
 * trainers of transformers and PaddleNLP write it.  Nothing else is
 * written: no checkpoint, no train_log.jsonl, no event files.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/datasets.h"
#include "tok.h"
#include "trainer.h"
#include "util/tr_util.h"

/* The arguments that decide which samples an evaluation reads (the
 * splits, their samples mappings or windows, the masks, where the valid
 * split is read from): a checkpoint trained with other values was
 * evaluated on other samples. */
static const char *const sample_args[] = {
    "input_dir",       "split",          "seed",       "max_seq_len",
    "max_steps",       "eval_freq",      "eval_iters", "micro_batch_size",
    "masked_lm_prob",  "short_seq_prob", "max_ngrams", "favor_longer_ngram",
    "geometric_ngram", "binary_head",
};

/* Note each argument of sample_args whose value in the checkpoint's
 * trainer_state.json differs from this run's (nothing for a checkpoint
 * without one). */
static void
note_other_samples(const struct run *r, const char *dir)
{
    struct json_object *state, *then, *now_args, *v, *w;
    struct config_err ce;
    char *path;

    if (asprintf(&path, "%s/trainer_state.json", dir) < 0)
        fatal("out of memory");
    state = config_json_object(path, &ce);
    free(path);
    if (state == NULL || !json_object_object_get_ex(state, "args", &then)) {
        json_object_put(state);
        return;
    }
    now_args = json_tokener_parse(r->args_json);
    for (size_t i = 0;
         now_args != NULL && i < sizeof(sample_args) / sizeof(sample_args[0]);
         i++) {
        const char *k = sample_args[i], *a, *b;

        if (!json_object_object_get_ex(then, k, &v) ||
            !json_object_object_get_ex(now_args, k, &w))
            continue;
        a = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
        b = json_object_to_json_string_ext(w, JSON_C_TO_STRING_PLAIN);
        if (strcmp(a, b) != 0)
            log_info("note: %s was trained with --%s %s, this run has %s: "
                     "its evaluations read other samples than these",
                     dir, k, a, b);
    }
    if (r->st.global_batch_size != 0 && r->st.global_batch_size != r->gbs)
        log_info("note: %s was trained with global_batch_size %lld, this "
                 "run has %d: its evaluations read other samples than these",
                 dir, (long long)r->st.global_batch_size, r->gbs);
    json_object_put(now_args);
    json_object_put(state);
}

/* Whether files a and b have the same bytes (by their SHA-256). */
static int
same_file(const char *a, const char *b)
{
    char ha[DS_META_HEX], hb[DS_META_HEX];
    struct ds_err e;

    if (ds_meta_file_sha256(a, ha, &e) < 0 ||
        ds_meta_file_sha256(b, hb, &e) < 0)
        fatal("%s", e.msg);
    return strcmp(ha, hb) == 0;
}

/* The vocabulary the checkpoint was trained with (the tokenizer files it
 * carries) must be the run's, whose ids the data holds (checked against
 * the datasets' sidecars already): another is an error naming both. */
static void
check_checkpoint_vocab(const struct run *r, const char *dir)
{
    const char *flag = "--tokenizer_name_or_path";
    char *mine;

    if (r->cfg.type == MODEL_ERNIE) {
        struct tok_vocab *v, *w;
        struct tok_err te;
        size_t n, m;

        if ((mine = tr_file_in_dir(dir, "vocab.txt")) == NULL)
            return;
        if (tok_vocab_load(&v, mine, &te) < 0 ||
            tok_vocab_load(&w, r->vocab_path, &te) < 0)
            fatal("%s", te.msg);
        n = tok_vocab_n_ids(v);
        m = tok_vocab_n_ids(w);
        for (size_t i = 0; i < (n > m ? n : m); i++) {
            const char *t = i < n ? tok_vocab_token(v, (tok_id)i, NULL) : NULL;
            const char *u = i < m ? tok_vocab_token(w, (tok_id)i, NULL) : NULL;

            if (i < n && i < m && (t == u || (t && u && !strcmp(t, u))))
                continue;
            fatal("checkpoint '%s' was trained with another vocab than %s "
                  "'%s', whose ids the data holds: id %zu is %s%s%s in "
                  "'%s', %s%s%s in the run's (%zu and %zu tokens); give "
                  "the checkpoint data of its own vocab",
                  dir, flag, r->vocab_path, i, t ? "'" : "", t ? t : "none",
                  t ? "'" : "", mine, u ? "'" : "", u ? u : "none",
                  u ? "'" : "", n, m);
        }
        tok_vocab_free(v);
        tok_vocab_free(w);
        free(mine);
        return;
    }
    /* GPT: the checkpoint's copies of vocab.json and merges.txt. */
    for (size_t i = 0; i < r->tok.n_files; i++) {
        const struct ckpt_file *f = &r->tok.files[i];

        if (f->src == NULL || (mine = tr_file_in_dir(dir, f->name)) == NULL)
            continue;
        if (!same_file(mine, f->src))
            fatal("checkpoint '%s' was trained with another byte-level BPE "
                  "than %s's: '%s' is not '%s'; give the checkpoint data "
                  "of its own vocab",
                  dir, flag, mine, f->src);
        free(mine);
    }
}

/* A split to evaluate must have samples: a clear error naming the flag
 * that asked for it and the split that gave it none. */
static void
need_samples(const struct run *r, enum ds_split split, const char *flag,
             const char *name)
{
    if (ds_corpus_n_samples(r->corpus, split) > 0)
        return;
    fatal("%s: the %s split of --input_dir '%s' has no samples (--split %s "
          "gives it no documents); give a --split with %s documents%s",
          flag, name, r->a.input_dir, r->a.split, name,
          split == DS_SPLIT_TEST ? ", or --do_predict false"
                                 : ", or --do_eval false");
}

/* A number in the shortest form that reads back the same (as
 * trainer_state.json's), not printf's %.17g. */
static struct json_object *
num(double x)
{
    char buf[40];

    if (!isfinite(x))
        return NULL; /* (a loss that is not finite stopped the run) */
    config_format_double(buf, sizeof(buf), x);
    return json_object_new_double_s(x, buf);
}

/* hit / n, or -1 when there was nothing to count. */
static double
share(int64_t hit, int64_t n)
{
    return n > 0 ? (double)hit / (double)n : -1;
}

/* One split's metrics under prefix ("eval" for the valid split, "test"),
 * named as transformers' Trainer names them, and its log line. */
static void
add_metrics(struct json_object *o, const struct run *r, const char *prefix,
            const char *name, const struct eval_result *e)
{
    char key[64];
    int ernie = r->cfg.type == MODEL_ERNIE, sop = ernie && r->cfg.binary_head;
    double lm_acc = share(e->hits[0], e->hits[1]);
    double sop_acc = share(e->hits[2], e->hits[3]);

#define KEY(s) (snprintf(key, sizeof(key), "%s_%s", prefix, (s)), key)
    json_object_object_add(o, KEY("loss"), num(e->mean.loss));
    if (ernie) {
        json_object_object_add(o, KEY("lm_loss"), num(e->mean.lm_loss));
        if (sop)
            json_object_object_add(o, KEY("sop_loss"), num(e->mean.sop_loss));
        json_object_object_add(o, KEY("mlm_accuracy"),
                               lm_acc >= 0 ? num(lm_acc) : NULL);
        if (sop)
            json_object_object_add(o, KEY("sop_accuracy"),
                                   sop_acc >= 0 ? num(sop_acc) : NULL);
        if (sop)
            log_info("%s step %lld, mlm_accuracy: %.6f (%lld masked tokens), "
                     "sop_accuracy: %.6f (%lld sequences)",
                     name, (long long)r->st.global_step, lm_acc,
                     (long long)e->hits[1], sop_acc, (long long)e->hits[3]);
        else
            log_info("%s step %lld, mlm_accuracy: %.6f (%lld masked tokens)",
                     name, (long long)r->st.global_step, lm_acc,
                     (long long)e->hits[1]);
    } else {
        json_object_object_add(o, KEY("perplexity"), num(exp(e->mean.loss)));
        json_object_object_add(o, KEY("accuracy"),
                               lm_acc >= 0 ? num(lm_acc) : NULL);
        log_info("%s step %lld, perplexity: %.6f, accuracy: %.6f (%lld "
                 "tokens)",
                 name, (long long)r->st.global_step, exp(e->mean.loss), lm_acc,
                 (long long)e->hits[1]);
    }
    json_object_object_add(o, KEY("samples"),
                           json_object_new_int64(e->samples));
    json_object_object_add(o, KEY("micro_batches"), json_object_new_int(e->n));
    json_object_object_add(o, KEY("runtime"), num(e->seconds));
    json_object_object_add(
        o, KEY("samples_per_second"),
        num(e->seconds > 0 ? (double)e->samples / e->seconds : 0));
#undef KEY
}

/* Write text to path through "<path>.tmp.<pid>", synced and renamed, so
 * that path is never half written. */
static void
write_atomically(const char *path, const char *text)
{
    char *tmp;
    FILE *f;

    if (asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) < 0)
        fatal("out of memory");
    f = fopen(tmp, "w");
    if (f == NULL)
        fatal("cannot create '%s': %s", tmp, strerror(errno));
    if (fputs(text, f) == EOF || fputc('\n', f) == EOF || fflush(f) != 0 ||
        fsync(fileno(f)) != 0) {
        int e = errno;

        fclose(f);
        unlink(tmp);
        fatal("cannot write '%s': %s", tmp, strerror(e));
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        int e = errno;

        unlink(tmp);
        fatal("cannot write '%s': %s", path, strerror(e));
    }
    tr_sync_parent(path);
    free(tmp);
}

/* An evaluation must read all it asked for: a split whose samples (sized
 * by the flags, as training sizes them) ran out before is an error. */
static void
read_all(const struct run *r, const char *flag, const char *name,
         const struct eval_result *e, int iters)
{
    int want = iters * r->replicas;

    if (e->n >= want)
        return;
    fatal("%s: the %s split ran out after %d of the %d micro-batches of "
          "global step %lld: its samples are those of a run of --max_steps "
          "%d evaluating every --eval_freq %d steps (--eval_iters %d); give "
          "the flags of the run that wrote the checkpoint",
          flag, name, e->n, want, (long long)r->st.global_step, r->a.max_steps,
          r->a.eval_freq, r->a.eval_iters);
}

void
evaluate_checkpoint(struct run *r)
{
    const struct train_args *a = &r->a;
    struct eval_result valid, test;
    struct json_object *o;
    char *dir, *path;
    int iters = a->eval_iters * r->accumulate;

    log_info("evaluation only (%s): no training, no checkpoint written",
             a->do_eval ? "--do_eval without --do_train" : "--do_train false");
    if (a->do_eval)
        need_samples(r, DS_SPLIT_VALID, "--do_eval", "valid");
    if (a->do_predict)
        need_samples(r, DS_SPLIT_TEST, "--do_predict", "test");
    dir = load_for_eval(r);
    check_checkpoint_vocab(r, dir);
    note_other_samples(r, dir);
    o = json_object_new_object();
    json_object_object_add(o, "global_step",
                           json_object_new_int64(r->st.global_step));
    json_object_object_add(o, "checkpoint", json_object_new_string(dir));
    if (a->do_eval) {
        /* The micro-batches of training's evaluation at this step (of the
         * next one for a step between two), in a run that went through
         * without a resume: evaluations read one global batch after
         * another, from where the loader starts at step 0 (7.8). */
        int64_t k = r->st.global_step, f = a->eval_freq;
        uint64_t chunk = (uint64_t)(1 / f) + (k > 0 ? (k + f - 1) / f - 1 : 0);

        r->valid = open_loader(r, DS_SPLIT_VALID);
        r->valid->pos.consumed_samples =
            (uint64_t)r->gbs * chunk * (uint64_t)a->eval_iters;
        evaluate(r, r->valid, "valid", iters, 0, &valid);
        read_all(r, "--do_eval", "valid", &valid, iters);
        add_metrics(o, r, "eval", "valid", &valid);
    }
    if (a->do_predict) {
        struct loader *l = open_loader(r, DS_SPLIT_TEST);

        evaluate(r, l, "test", 10 * iters, 1, &test);
        loader_free(l);
        read_all(r, "--do_predict", "test", &test, 10 * iters);
        add_metrics(o, r, "test", "test", &test);
    }
    if (g_rank == 0) {
        if (asprintf(&path, "%s/eval_results.json", a->output_dir) < 0)
            fatal("out of memory");
        write_atomically(path, json_object_to_json_string_ext(
                                   o, JSON_C_TO_STRING_PRETTY |
                                          JSON_C_TO_STRING_SPACED |
                                          JSON_C_TO_STRING_NOSLASHESCAPE));
        log_info("wrote %s", path);
        free(path);
    }
    json_object_put(o);
    free(dir);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_train_cli.c: unit tests of the `train` tool's plumbing: the
 * arguments (ranges and choices named with the value, suggestions for
 * unknown names, PaddleNLP's TrainingArguments names as aliases in flags
 * and config files, config files that cannot be read, required flags,
 * the shortest numbers in the dump), the JSON log trimmed to a resumed
 * step, the stale temporaries of an output directory, and the signals
 * (SIGTERM recorded; SIGINT during a save removes the half-written
 * checkpoint).  Files go to a fresh directory under $TMPDIR (default
 * /tmp), removed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness.h"
#include "../harness_files.h"
#include "cli/args.h"
#include "ckpt/checkpoint.h"
#include "model/config.h"
#include "cli/interrupt.h"
#include "model/model.h"
#include "ops.h"
#include "optim/optim.h"
#include "log/runlog.h"

static char err[1024];

/* args_parse() of the words of line (split at blanks), after "train". */
static int
parse(struct train_args *a, const char *line)
{
    char buf[4096], *argv[64];
    int argc = 0;

    snprintf(buf, sizeof(buf), "%s", line);
    argv[argc++] = (char *)"train";
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 63;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    err[0] = '\0';
    return args_parse(a, argc, argv, err, sizeof(err));
}

#define REQ                                                    \
    "--model_type ernie --model_name_or_path m --input_dir d " \
    "--output_dir o "

/* line fails with a message containing sub. */
static void
fails(const char *line, const char *sub)
{
    struct train_args a;

    CHECK_EQ_INT(parse(&a, line), ARGS_ERROR);
    CHECK_MSG_STR(err, sub);
    args_release(&a);
}

static void
test_args_errors(void)
{
    struct train_args a;

    CHECK_EQ_INT(parse(&a, ""), ARGS_EMPTY);
    args_release(&a);
    fails(REQ "--max_steps 0", "--max_steps 0: must be at least 1");
    fails(REQ "--max_steps=-3", "--max_steps -3: must be at least 1");
    fails(REQ "--max_steps x", "--max_steps 'x': not an integer");
    fails(REQ "--sharding_stage 4", "--sharding_stage 4: must be 1, 2 or 3");
    fails(REQ "--warmup_rate 1.5", "--warmup_rate 1.5: must be in [0, 1]");
    fails(REQ "--adam_beta1 1", "--adam_beta1 1: must be in [0, 1)");
    fails(REQ "--max_lr nan", "--max_lr 'nan': not a finite number");
    fails(REQ "--model_type bert", "--model_type 'bert': must be ernie or gpt");
    fails(REQ "--device tpu", "must be cpu, cuda or auto");
    fails(REQ "--lr_decay_style cos", "must be linear, cosine or auto");
    fails(REQ "--binary_head maybe", "--binary_head 'maybe': must be true");
    fails(REQ "--max_step 5", "--max_step: unknown flag; did you mean "
                              "--max_steps?");
    fails(REQ "--lerning_rate 1", "did you mean --learning_rate?");
    fails(REQ "--batch_size 4", "did you mean --micro_batch_size, "
                                "--global_batch_size or");
    fails(REQ "--max_steps", "--max_steps needs a value");
    fails(REQ "stray", "unexpected argument 'stray'");
    fails("--model_name_or_path m --input_dir d --output_dir o",
          "--model_type is required (ernie or gpt)");
    fails("--model_type gpt --input_dir d --output_dir o",
          "--model_name_or_path is required");
    fails("--model_type gpt --model_name_or_path m --input_dir d",
          "--output_dir is required");
}

static void
test_args_aliases(void)
{
    struct train_args a;

    CHECK_EQ_INT(parse(&a, REQ "--per_device_train_batch_size 4 "
                               "--learning_rate 1e-4 --min_learning_rate 1e-5 "
                               "--logging_steps 20 --eval_steps 1000 "
                               "--warmup_ratio 0.01 --max_grad_norm 1.0 "
                               "--gradient_accumulation_steps 2 "
                               "--max_seq_length 512 --fp16 false --bf16=0 "
                               "--do_train --recompute "
                               "--tensor_parallel_degree -1 "
                               "--pipeline-parallel-degree 2 "
                               "--lr_scheduler_type cosine "
                               "--data_cache_path c --device gpu "
                               "--dataloader_num_workers 4"),
                 ARGS_OK);
    CHECK_EQ_INT(a.micro_batch_size, 4);
    CHECK(a.max_lr == 1e-4 && a.min_lr == 1e-5);
    CHECK_EQ_INT(a.logging_freq, 20);
    CHECK_EQ_INT(a.eval_freq, 1000);
    CHECK(a.warmup_rate == 0.01 && a.grad_clip == 1.0);
    CHECK_EQ_INT(a.gradient_accumulation_steps, 2);
    CHECK_EQ_INT(a.max_seq_len, 512);
    CHECK_EQ_INT(a.use_recompute, 1);
    CHECK_EQ_INT(a.tp, 1);
    CHECK_EQ_INT(a.pp, 2);
    CHECK_EQ_STR(a.lr_decay_style, "cosine");
    CHECK_EQ_STR(a.cache_dir, "c");
    CHECK_EQ_STR(a.device, "cuda");
    CHECK(a.notes != NULL &&
          strstr(a.notes, "--dataloader_num_workers has no effect") != NULL);
    args_release(&a);
    CHECK_EQ_INT(parse(&a, REQ "--sharding stage2 --sharding_parallel_degree 2 "
                               "--evaluation_strategy no --optim adamw "
                               "--num_train_epochs 3 --max_steps 10"),
                 ARGS_OK);
    CHECK_EQ_INT(a.sharding_stage, 2);
    CHECK_EQ_INT(a.sharding_degree, 2);
    CHECK_EQ_INT(a.do_eval, 0);
    CHECK(a.notes != NULL &&
          strstr(a.notes, "--num_train_epochs has no effect") != NULL);
    args_release(&a);
    /* PaddleNLP's mixed precision: --fp16 and --bf16 are --use_amp with
     * a dtype; Paddle's GradScaler's init_loss_scaling is --scale_loss. */
    CHECK_EQ_INT(parse(&a, REQ "--fp16 --init_loss_scaling 1024 "
                               "--fp16_opt_level O1 --amp_master_grad"),
                 ARGS_OK);
    CHECK_EQ_INT(a.use_amp, 1);
    CHECK_EQ_STR(a.amp_dtype, "float16");
    CHECK(a.scale_loss == 1024);
    CHECK_EQ_STR(a.fp16_opt_level, "O1");
    CHECK(a.notes != NULL &&
          strstr(a.notes, "--amp_master_grad has no effect") != NULL);
    args_release(&a);
    CHECK_EQ_INT(parse(&a, REQ "--bf16 true"), ARGS_OK);
    CHECK_EQ_INT(a.use_amp, 1);
    CHECK_EQ_STR(a.amp_dtype, "bfloat16");
    CHECK(a.scale_loss == 32768 && a.incr_every_n_steps == 2000 &&
          a.decr_every_n_nan_or_inf == 1 && a.incr_ratio == 2 &&
          a.decr_ratio == 0.5 && a.use_dynamic_loss_scaling == 1);
    args_release(&a);
    /* What cannot be honoured is refused, saying why. */
    fails(REQ "--fp16_full_eval", "--fp16_full_eval true: not supported: "
                                  "evaluation computes as training does");
    fails(REQ "--amp_dtype float8",
          "--amp_dtype 'float8': must be bfloat16 or float16");
    fails(REQ "--decr_ratio 1", "--decr_ratio 1: must be in (0, 1)");
    fails(REQ "--lr_scheduler_type constant",
          "--lr_scheduler_type 'constant': not supported");
    fails(REQ "--sharding stage2", "--sharding stage2: give the degree too");
    fails(REQ "--sharding=offload", "--sharding 'offload': not supported");
    fails(REQ "--num_train_epochs 3", "not supported without --max_steps");
    fails(REQ "--resume_from_checkpoint x", "resumes from "
                                            "output_dir/model_last");
    fails(REQ "--per_device_eval_batch_size 16",
          "--per_device_eval_batch_size 16: not supported");
    CHECK_EQ_INT(parse(&a, REQ "--per_device_train_batch_size 16 "
                               "--per_device_eval_batch_size 16"),
                 ARGS_OK);
    args_release(&a);
}

/* PaddleNLP's run_pretrain.py trains with --do_train; --do_eval without
 * it evaluates a checkpoint; train without either trains. */
static void
test_args_do_train(void)
{
    static const struct {
        const char *flags;
        int do_train, do_eval;
    } cases[] = {
        { "", 1, 1 },
        { "--do_eval", 0, 1 },
        { "--do_eval true --do_train", 1, 1 },
        { "--do_train --do_eval", 1, 1 },
        { "--do_train false", 0, 1 },
        { "--do_eval false", 1, 0 },
        { "--evaluation_strategy steps", 1, 1 },
        { "--do_train false --do_eval false", 0, 0 },
    };
    struct train_args a;
    char line[512];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(line, sizeof(line), REQ "%s", cases[i].flags);
        CHECK_EQ_INT(parse(&a, line), ARGS_OK);
        CHECK_EQ_INT(a.do_train, cases[i].do_train);
        CHECK_EQ_INT(a.do_eval, cases[i].do_eval);
        args_release(&a);
    }
    fails(REQ "--do_train false --do_eval false --do_predict false",
          "--do_train false with --do_eval false and --do_predict false: "
          "nothing to do");
    fails(REQ "--do_eval --eval_iters 0",
          "--eval_iters 0: an evaluation without training reads at least "
          "one micro-batch");
    fails(REQ "--do_train maybe",
          "--do_train 'maybe': must be true or false (or 1 or 0)");
}

static void
test_args_config(void)
{
    const char *dir = test_dir("config");
    char line[9000];
    struct train_args a;
    static const char good[] =
        "{\"model_type\": \"gpt\", \"model_name_or_path\": \"m\",\n"
        " \"input_dir\": \"sp ace/d\", \"output_dir\": \"o\",\n"
        " \"learning_rate\": 0.0003, \"per_device_train_batch_size\": 2,\n"
        " \"fp16\": false, \"max_steps\": 7, \"seed\": null,\n"
        " \"data_cache\": \"cache\"}\n";

    write_file(path_of(dir, "run.json"), good, sizeof(good) - 1);
    snprintf(line, sizeof(line), "--config %s --max_steps 9",
             path_of(dir, "run.json"));
    CHECK_EQ_INT(parse(&a, line), ARGS_OK);
    CHECK(a.max_lr == 0.0003);
    CHECK_EQ_INT(a.micro_batch_size, 2);
    CHECK_EQ_INT(a.max_steps, 9); /* the command line wins */
    CHECK_EQ_INT(a.seed, 1234);   /* null: the default */
    CHECK_EQ_STR(a.input_dir, "sp ace/d");
    CHECK_EQ_STR(a.cache_dir, "cache");
    args_release(&a);
    /* Errors name the file and the key, never json-c's internals. */
    snprintf(line, sizeof(line), REQ "--config %s", dir);
    fails(line, "cannot read '");
    fails(line, "': Is a directory");
    snprintf(line, sizeof(line), REQ "--config %s/nope.json", dir);
    fails(line, "cannot open '");
    write_file(path_of(dir, "bad.json"), "{\"max_steps\": 3,}", 17);
    snprintf(line, sizeof(line), REQ "--config %s", path_of(dir, "bad.json"));
    fails(line, "bad.json': not valid JSON at byte");
    write_file(path_of(dir, "typo.json"), "{\"max_step\": 3}", 15);
    snprintf(line, sizeof(line), REQ "--config %s", path_of(dir, "typo.json"));
    fails(line, "typo.json': max_step: unknown key; did you mean max_steps?");
    write_file(path_of(dir, "zero.json"), "{\"logging_steps\": 0}", 20);
    snprintf(line, sizeof(line), REQ "--config %s", path_of(dir, "zero.json"));
    fails(line, "zero.json': logging_steps 0: must be at least 1");
    write_file(path_of(dir, "arr.json"), "{\"seed\": [1]}", 13);
    snprintf(line, sizeof(line), REQ "--config %s", path_of(dir, "arr.json"));
    fails(line, "arr.json': seed: must be a string, number or boolean, not "
                "array");
}

/* The dump prints 0.9, not 0.90000000000000002, and the JSON too. */
static void
test_args_dump(void)
{
    struct train_args a;
    char *text = NULL, *json;
    size_t len = 0;
    FILE *f;

    CHECK_EQ_INT(parse(&a, REQ "--max_lr 3e-4 --warmup_rate 0.1"), ARGS_OK);
    f = open_memstream(&text, &len);
    CHECK(f != NULL);
    if (f == NULL)
        return;
    args_print(&a, f, "");
    fclose(f);
    CHECK(strstr(text, "adam_beta1          :0.9\n") != NULL);
    CHECK(strstr(text, "max_lr              :0.0003\n") != NULL);
    CHECK(strstr(text, "warmup_rate         :0.1\n") != NULL);
    CHECK(strstr(text, "0000000") == NULL);
    json = args_to_json(&a);
    CHECK(json != NULL && strstr(json, "\"adam_beta1\":0.9,") != NULL);
    CHECK(json != NULL && strstr(json, "\"max_lr\":0.0003,") != NULL);
    free(json);
    free(text);
    args_release(&a);
}

static const char log_text[] = "{\"global_step\": 1, \"loss\": 9}\n"
                               "{\"global_step\": 2, \"loss\": 8}\n"
                               "{\"global_step\": 3, \"loss\": 7}\n"
                               "{\"valid_step\": 3, \"loss\": 7.5}\n"
                               "{\"note\": \"no step\"}\n"
                               "{\"global_step\": 4, \"loss\": 6}\n"
                               "{\"test_step\": 4, \"loss\": 6.5}\n"
                               "{\"global_step\": 5, \"lo";

static void
test_runlog_trim(void)
{
    const char *dir = test_dir("runlog");
    char *path = path_of(dir, "train_log.jsonl");
    unsigned char *got;
    size_t len, dropped = 99;
    int n_tmp;

    CHECK_EQ_INT(runlog_trim(path, 3, &dropped, err, sizeof(err)), 0);
    CHECK_EQ_INT(dropped, 0); /* no log yet */
    write_file(path, log_text, sizeof(log_text) - 1);
    /* Resumed at step 4: the test of a run that ended there goes, and
     * the record cut short. */
    CHECK_EQ_INT(runlog_trim(path, 4, &dropped, err, sizeof(err)), 0);
    CHECK_EQ_INT(dropped, 2);
    got = read_file(path, &len);
    CHECK(got != NULL && len == strstr(log_text, "{\"test_step") - log_text &&
          memcmp(got, log_text, len) == 0); /* up to step 4 */
    free(got);
    CHECK_EQ_INT(runlog_trim(path, 4, &dropped, err, sizeof(err)), 0);
    CHECK_EQ_INT(dropped, 0);
    /* Resumed at step 2. */
    CHECK_EQ_INT(runlog_trim(path, 2, &dropped, err, sizeof(err)), 0);
    CHECK_EQ_INT(dropped, 3);
    {
        static const char want[] = "{\"global_step\": 1, \"loss\": 9}\n"
                                   "{\"global_step\": 2, \"loss\": 8}\n"
                                   "{\"note\": \"no step\"}\n";

        got = read_file(path, &len);
        CHECK(got != NULL && len == sizeof(want) - 1 &&
              memcmp(got, want, len) == 0);
        free(got);
    }
    /* A fresh start keeps no step. */
    CHECK_EQ_INT(runlog_trim(path, 0, &dropped, err, sizeof(err)), 0);
    CHECK_EQ_INT(dropped, 2);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 1);
    CHECK_EQ_INT(n_tmp, 0);
}

static void
test_clean_stale(void)
{
    const char *dir = test_dir("stale");
    char name[64];
    int n_tmp;

    mkdir(path_of(dir, "model_last"), 0777);
    mkdir(path_of(dir, "model_last.tmp.999999999"), 0777);
    write_file(path_of(dir, "model_last.tmp.999999999/model.safetensors"), "x",
               1);
    mkdir(path_of(dir, "model_6.old.999999998"), 0777);
    write_file(path_of(dir, "train_log.jsonl.tmp.999999997"), "{", 1);
    write_file(path_of(dir, "notes.tmp"), "x", 1);
    snprintf(name, sizeof(name), "model_9.tmp.%ld", (long)getpid());
    mkdir(path_of(dir, name), 0777); /* this process's: kept */
    snprintf(name, sizeof(name), "model_12.tmp.%ld", (long)getppid());
    mkdir(path_of(dir, name), 0777); /* alive: kept with check_pid */
    CHECK_EQ_INT(ckpt_clean_stale(dir, 1, NULL, NULL, err, sizeof(err)), 3);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 4);
    CHECK_EQ_INT(n_tmp, 2);
    CHECK(access(path_of(dir, "model_last"), F_OK) == 0);
    /* Without check_pid (the caller holds the directory's lock) only this
     * process's own is kept. */
    CHECK_EQ_INT(ckpt_clean_stale(dir, 0, NULL, NULL, err, sizeof(err)), 1);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 3);
    CHECK_EQ_INT(
        ckpt_clean_stale(path_of(dir, "gone"), 0, NULL, NULL, err, sizeof(err)),
        -1);
    CHECK_MSG_STR(err, "gone");
}

/* A child stopped by a signal: 1 if it died of sig. */
static int
died_of(pid_t pid, int sig)
{
    int st = 0;

    return waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) &&
           WTERMSIG(st) == sig;
}

static void
test_sigterm_recorded(void)
{
    pid_t pid = fork();
    int st = 0;

    if (pid == 0) {
        if (interrupt_install() < 0 || interrupt_pending() != 0)
            _exit(2);
        raise(SIGTERM);
        if (interrupt_pending() != SIGTERM)
            _exit(3);
        raise(SIGUSR1);
        _exit(interrupt_pending() == SIGUSR1 ? 0 : 4);
    }
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* SIGINT while ckpt_save() writes: the process dies of SIGINT and leaves
 * neither the checkpoint nor its temporary directory.  The save is held
 * in the middle by a vocabulary that is a FIFO nobody writes to (it is
 * copied last). */
static void
test_sigint_during_save(void)
{
    const char *dir = test_dir("sigint");
    char fifo[4400], tmp_state[4500], ckpt[4400];
    struct timespec nap = { 0, 10 * 1000 * 1000 };
    int n_tmp, waited = 0;
    pid_t pid;

    snprintf(fifo, sizeof(fifo), "%s", path_of(dir, "vocab.fifo"));
    snprintf(ckpt, sizeof(ckpt), "%s", path_of(dir, "model_last"));
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    pid = fork();
    if (pid == 0) {
        struct model_config c;
        struct model *m = NULL;
        struct optimizer o;
        struct train_state s;
        char e[256];

        config_defaults(&c, MODEL_GPT);
        c.vocab_size = 40;
        c.hidden_size = 8;
        c.num_layers = 1;
        c.num_heads = 2;
        c.intermediate_size = 32;
        c.max_position = 16;
        memset(&s, 0, sizeof(s));
        if (interrupt_install() < 0 ||
            model_create(&m, &c, ops_cpu(1, OPS_F32), 2, 8, 0, e, sizeof(e)) <
                0 ||
            model_init_params(m, 1) < 0 ||
            optim_create(&o, model_ops(m), model_table(m)) < 0)
            _exit(2);
        ckpt_save(ckpt, m, &o, &s, NULL, fifo, 1, e, sizeof(e));
        _exit(3); /* the save was not interrupted */
    }
    CHECK(pid > 0);
    snprintf(tmp_state, sizeof(tmp_state), "%s.tmp.%ld/trainer_state.json",
             ckpt, (long)pid);
    while (access(tmp_state, F_OK) != 0 && waited++ < 2000)
        nanosleep(&nap, NULL);
    CHECK(access(tmp_state, F_OK) == 0); /* the save is under way */
    kill(pid, SIGINT);
    CHECK(died_of(pid, SIGINT));
    CHECK_EQ_INT(count_files(dir, &n_tmp), 1); /* the FIFO */
    CHECK_EQ_INT(n_tmp, 0);
}

TESTS(train_cli, TEST(test_args_errors), TEST(test_args_aliases),
      TEST(test_args_do_train), TEST(test_args_config), TEST(test_args_dump),
      TEST(test_runlog_trim), TEST(test_clean_stale),
      TEST(test_sigterm_recorded), TEST(test_sigint_during_save))

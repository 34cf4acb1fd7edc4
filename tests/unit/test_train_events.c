/* SPDX-License-Identifier: MIT */
/*
 * test_train_events.c: unit tests of the trainer's event files
 * (train/log/events.c, tb_events.c, vdl_records.c) and checkpoint tokenizer
 * files (train/ckpt/hf_tokenizer.c), where the end-to-end tests
 * (tests/train/check_events.py, check_hf.py: the real readers) do not
 * reach: --report_to's words, TensorBoard's file named after a newer one
 * already there (but not after a name with the largest number), its
 * record framing, VisualDL's resume dropping the later records and a torn
 * last record (and keeping an empty one), an ERNIE vocab in the
 * token<TAB>id form with CRLF line ends, and the tokenizer errors.  Files
 * go to a fresh directory under $TMPDIR.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "../harness.h"
#include "../harness_files.h"
#include "log/events.h"
#include "ckpt/hf_tokenizer.h"
#include "vdl_record.pb-c.h"

static void
test_events_targets(void)
{
    unsigned t = 99;
    char err[256];

    CHECK_EQ_INT(events_parse_targets("tensorboard", &t, err, sizeof(err)), 0);
    CHECK_EQ_INT(t, EVENTS_TENSORBOARD);
    CHECK_EQ_INT(
        events_parse_targets("visualdl,tensorboard", &t, err, sizeof(err)), 0);
    CHECK_EQ_INT(t, EVENTS_TENSORBOARD | EVENTS_VISUALDL);
    CHECK_EQ_INT(events_parse_targets("all", &t, err, sizeof(err)), 0);
    CHECK_EQ_INT(t, EVENTS_TENSORBOARD | EVENTS_VISUALDL);
    CHECK_EQ_INT(events_parse_targets("none", &t, err, sizeof(err)), 0);
    CHECK_EQ_INT(t, 0);
    CHECK_EQ_INT(events_parse_targets("", &t, err, sizeof(err)), 0);
    CHECK_EQ_INT(t, 0);
    CHECK_EQ_INT(
        events_parse_targets("tensorboard,wandb", &t, err, sizeof(err)), -1);
    CHECK_MSG_STR(err, "unknown target 'wandb'");
}

/* The last (strcmp order) of the *n files of dir whose names contain
 * mark (static), or "". */
static const char *
file_with(const char *dir, const char *mark, int *n)
{
    static char name[512];
    DIR *d = opendir(dir);
    struct dirent *e;

    name[0] = '\0';
    *n = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (strstr(e->d_name, mark) == NULL)
            continue;
        ++*n;
        if (strcmp(e->d_name, name) > 0)
            snprintf(name, sizeof(name), "%s", e->d_name);
    }
    if (d)
        closedir(d);
    return name;
}

static void
test_events_tensorboard_file(void)
{
    const char *dir = test_dir("tb");
    char future[128], err[256];
    struct events *ev;
    struct event_scalar s[2] = { { "train/loss", 2.5 }, { "train/mfu", 0.25 } };
    const char *name, *path;
    unsigned char *p;
    size_t len, off = 0;
    int n, records = 0;
    long long later = (long long)time(NULL) + 100;

    /* The directory is made with its parents; then an older event file
     * and one from a clock ahead: ours still sorts after both. */
    CHECK_EQ_INT(events_open(&ev, EVENTS_TENSORBOARD, path_of(dir, "a/b"), 1,
                             err, sizeof(err)),
                 0);
    events_close(ev);
    name = file_with(path_of(dir, "a/b"), "tfevents", &n);
    remove(path_of(path_of(dir, "a/b"), name));
    write_file(path_of(dir, "a/b/events.out.tfevents.0000000001.h.1"), "", 0);
    snprintf(future, sizeof(future), "a/b/events.out.tfevents.%010lld.host.1",
             later);
    write_file(path_of(dir, future), "", 0);
    CHECK_EQ_INT(events_open(&ev, EVENTS_TENSORBOARD, path_of(dir, "a/b"), 7,
                             err, sizeof(err)),
                 0);
    path = events_path(ev, EVENTS_TENSORBOARD);
    CHECK(events_path(ev, EVENTS_VISUALDL) == NULL);
    CHECK_EQ_INT(events_write(ev, 7, s, 2, err, sizeof(err)), 0);
    name = file_with(path_of(dir, "a/b"), "tfevents", &n);
    CHECK_EQ_INT(n, 3);
    CHECK(strstr(path, name) != NULL); /* the newest name is ours */
    {
        char want[64];

        snprintf(want, sizeof(want), "tfevents.%010lld.", later + 1);
        CHECK(strstr(name, want) != NULL);
    }
    /* Written at once: the file version, the START, one summary, each
     * framed by its length (and two CRCs). */
    p = read_file(path, &len);
    while (p && off + 12 <= len) {
        uint64_t n8 = 0;

        for (int i = 0; i < 8; i++)
            n8 |= (uint64_t)p[off + i] << (8 * i);
        off += 12 + n8 + 4;
        records++;
    }
    CHECK_EQ_INT(off, len);
    CHECK_EQ_INT(records, 3);
    free(p);
    events_close(ev);
    events_close(NULL);
    CHECK_EQ_INT(events_write(NULL, 1, s, 2, err, sizeof(err)), 0);
}

/* Earlier files named with the largest number: ours take the time, not
 * a number past it (the sum overflowed; fuzz_tblog found it). */
static void
test_events_names_past_largest(void)
{
    const char *dir = test_dir("largest");
    char err[256];
    struct events *ev;
    long long t0 = (long long)time(NULL), t1, tb, vdl;

    write_file(path_of(dir, "events.out.tfevents.9223372036854775807.h.1"), "",
               0);
    write_file(path_of(dir, "vdlrecords.9223372036854775807.log"), "", 0);
    CHECK_EQ_INT(events_open(&ev, EVENTS_TENSORBOARD | EVENTS_VISUALDL, dir, 1,
                             err, sizeof(err)),
                 0);
    t1 = (long long)time(NULL);
    tb = strtoll(strstr(events_path(ev, EVENTS_TENSORBOARD), "tfevents.") + 9,
                 NULL, 10);
    vdl = strtoll(strstr(events_path(ev, EVENTS_VISUALDL), "vdlrecords.") + 11,
                  NULL, 10);
    CHECK(tb >= t0 && tb <= t1);
    CHECK(vdl >= t0 && vdl <= t1);
    events_close(ev);
}

/* The steps (first value's ids) of the records of a VisualDL file. */
static int
vdl_steps(const char *path, int64_t *steps, int max)
{
    size_t len, off = 0;
    unsigned char *p = read_file(path, &len);
    int n = 0;

    while (p && off + 8 <= len && n < max) {
        uint64_t k = 0;
        Visualdl__Record *r;

        for (int i = 0; i < 8; i++)
            k |= (uint64_t)p[off + i] << (8 * i);
        if (off + 8 + k > len)
            break;
        r = visualdl__record__unpack(NULL, k, p + off + 8);
        if (r == NULL)
            break;
        steps[n++] = r->n_values ? r->values[0]->id : -1;
        visualdl__record__free_unpacked(r, NULL);
        off += 8 + k;
    }
    free(p);
    return n;
}

static void
test_events_visualdl_resume(void)
{
    const char *dir = test_dir("vdl");
    char err[256], path[4096];
    struct events *ev;
    struct event_scalar s = { "train/loss", 1.0 };
    int64_t steps[32];
    unsigned char *p;
    size_t len;
    int n;

    CHECK_EQ_INT(events_open(&ev, EVENTS_VISUALDL, dir, 1, err, sizeof(err)),
                 0);
    snprintf(path, sizeof(path), "%s", events_path(ev, EVENTS_VISUALDL));
    for (int step = 1; step <= 6; step++)
        CHECK_EQ_INT(events_write(ev, step, &s, 1, err, sizeof(err)), 0);
    events_close(ev);
    /* The meta record (step 0), then steps 1..6; a kill tore step 6. */
    CHECK_EQ_INT(vdl_steps(path, steps, 32), 7);
    p = read_file(path, &len);
    write_file(path, p, len - 3);
    free(p);
    /* Resumed after step 3: records 4 and later go, the file goes on. */
    CHECK_EQ_INT(events_open(&ev, EVENTS_VISUALDL, dir, 4, err, sizeof(err)),
                 0);
    CHECK_EQ_STR(events_path(ev, EVENTS_VISUALDL), path);
    CHECK_EQ_INT(events_write(ev, 4, &s, 1, err, sizeof(err)), 0);
    events_close(ev);
    n = vdl_steps(path, steps, 32);
    CHECK_EQ_INT(n, 5);
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(steps[i], i);
    (void)file_with(dir, "vdlrecords", &n);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(count_files(dir, &n), 1);
    CHECK_EQ_INT(n, 0); /* no temporary left */
    /* An empty record (a length of 0) is kept like any other, even the
     * first. */
    p = read_file(path, &len);
    p = realloc(p, len + 8);
    CHECK(p != NULL);
    memmove(p + 8, p, len);
    memset(p, 0, 8);
    write_file(path, p, len + 8);
    free(p);
    CHECK_EQ_INT(events_open(&ev, EVENTS_VISUALDL, dir, 5, err, sizeof(err)),
                 0);
    CHECK_EQ_INT(events_write(ev, 5, &s, 1, err, sizeof(err)), 0);
    events_close(ev);
    n = vdl_steps(path, steps, 32);
    CHECK_EQ_INT(n, 7);
    CHECK_EQ_INT(steps[0], -1);
    for (int i = 1; i < n; i++)
        CHECK_EQ_INT(steps[i], i - 1);
    /* A fresh run starts its own file. */
    CHECK_EQ_INT(events_open(&ev, EVENTS_VISUALDL, dir, 1, err, sizeof(err)),
                 0);
    CHECK(strcmp(events_path(ev, EVENTS_VISUALDL), path) > 0);
    events_close(ev);
    /* A directory that cannot be made. */
    write_file(path_of(dir, "plain"), "x", 1);
    CHECK_EQ_INT(events_open(&ev, EVENTS_VISUALDL, path_of(dir, "plain/sub"), 1,
                             err, sizeof(err)),
                 -1);
    CHECK_MSG_STR(err, "cannot create '");
}

static void
test_hf_tokenizer_files(void)
{
    const char *dir = test_dir("tok");
    static const char tabbed[] = "[PAD]\t0\r\n[SEP]\t2\r\n[CLS]\t1\r\n"
                                 "$\t3\r\n$\t4\r\n[UNK]\t5\r\n";
    struct hf_tokenizer t;
    char err[256];

    write_file(path_of(dir, "vocab.txt"), tabbed, strlen(tabbed));
    CHECK_EQ_INT(hf_tokenizer_wordpiece(&t, path_of(dir, "vocab.txt"), 64, err,
                                        sizeof(err)),
                 0);
    CHECK_EQ_INT(t.n_files, 3);
    CHECK_EQ_STR(t.files[0].name, "vocab.txt");
    /* Id order, no CR; the repeated "$" keeps both lines (ids 3, 4). */
    CHECK_EQ_STR(t.files[0].text, "[PAD]\n[CLS]\n[SEP]\n$\n$\n[UNK]\n");
    CHECK_EQ_INT(t.n_tokens, 6);
    CHECK_EQ_STR(t.files[1].name, "tokenizer_config.json");
    CHECK(strstr(t.files[1].text, "\"mask_token\": null") != NULL);
    CHECK(strstr(t.files[1].text, "\"model_max_length\": 64") != NULL);
    CHECK(strstr(t.files[2].text, "mask_token") == NULL);
    hf_tokenizer_release(&t);
    write_file(path_of(dir, "bad.txt"), "a\t0\nb\n", 6);
    CHECK_EQ_INT(hf_tokenizer_wordpiece(&t, path_of(dir, "bad.txt"), 64, err,
                                        sizeof(err)),
                 -1);
    CHECK_MSG_STR(err, "line 2");

    write_file(path_of(dir, "vocab.json"), "{\"<|endoftext|>\": 0, \"a\": 7}",
               28);
    CHECK_EQ_INT(hf_tokenizer_bpe(&t, dir, 1024, err, sizeof(err)), -1);
    CHECK_MSG_STR(err, "merges.txt");
    write_file(path_of(dir, "merges.txt"), "#version: 0.2\n", 14);
    CHECK_EQ_INT(hf_tokenizer_bpe(&t, path_of(dir, "vocab.json"), 1024, err,
                                  sizeof(err)),
                 0);
    CHECK_EQ_INT(t.eos_id, 0);
    CHECK_EQ_INT(t.n_tokens, 8);
    CHECK_EQ_STR(t.files[1].name, "merges.txt");
    CHECK(strstr(t.files[2].text, "\"eos_token\": \"<|endoftext|>\"") != NULL);
    hf_tokenizer_release(&t);
    write_file(path_of(dir, "vocab.json"), "[1]", 3);
    CHECK_EQ_INT(hf_tokenizer_bpe(&t, dir, 1024, err, sizeof(err)), -1);
    CHECK_MSG_STR(err, "not a JSON object");
}

TESTS(test_train_events, TEST(test_events_targets),
      TEST(test_events_tensorboard_file), TEST(test_events_names_past_largest),
      TEST(test_events_visualdl_resume), TEST(test_hf_tokenizer_files))

/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tblog.c: the trainer's event files (train/log: events_open,
 * events_write) written from fuzzed steps, tags and values, then read
 * back here: TensorBoard's TFRecord framing with both masked CRC-32Cs
 * (checked with a bitwise CRC-32C of this file's own, not ISA-L's), the
 * file version, the SessionLog START at the first step and one Event of
 * the scalars a write; VisualDL's length-framed Records, its meta record
 * or, when a run resumes, the newest record file of the directory kept
 * up to the first step (records at or past it, and whatever follows a
 * damaged one, dropped) and continued.
 *
 * Input: byte 0 holds flags (bit 0 TensorBoard, bit 1 VisualDL, neither:
 * both; bit 2: an earlier VisualDL file, bit 3: an earlier TensorBoard
 * file, both in the directory before the run); bytes 1-8 the first step
 * (int64, little-endian).  Then for bit 2 a length byte (& 63) and that
 * many bytes of name after "vdlrecords", two bytes of content length
 * and the content; for bit 3 a length byte and the name after
 * "events.out.tfevents." (the file is empty).  Then the writes, each a
 * step (8 bytes), a count byte (& 7) and that many scalars: a tag length
 * byte (& 63), the tag (up to a NUL), the value (a double, 8 bytes).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "log/events.h"
#include "tb_event.pb-c.h"
#include "vdl_record.pb-c.h"

#define MAX_WRITES  64
#define MAX_SCALARS 7
#define VDL_MARK    "vdlrecords"
#define TB_MARK     "events.out.tfevents."

static char dir[FUZZ_PATH_MAX];

/* CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), bit by bit. */
static uint32_t
crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;

    while (n-- > 0) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static uint32_t
masked(const unsigned char *p, size_t n)
{
    uint32_t c = crc32c(p, n);

    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* The check value of CRC-32C. */
    if (crc32c((const unsigned char *)"123456789", 9) != 0xe3069283u)
        abort();
    fuzz_tmp_path(dir, sizeof(dir), "runs");
    return 0;
}

static uint64_t
le(const unsigned char *p, int n)
{
    uint64_t v = 0;

    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The input, consumed from the front. */
struct in {
    const unsigned char *p;
    size_t n;
};

static const unsigned char *
take(struct in *in, size_t n)
{
    const unsigned char *p = in->p;

    if (in->n < n)
        return NULL;
    in->p += n;
    in->n -= n;
    return p;
}

/* A file name: prefix, then up to 63 bytes of the input with '/' and
 * NUL made '_'. */
static int
take_name(struct in *in, const char *prefix, char *out, size_t cap)
{
    const unsigned char *k = take(in, 1), *s;
    size_t len, at = strlen(prefix);

    if (k == NULL || (s = take(in, len = *k & 63)) == NULL)
        return -1;
    memcpy(out, prefix, at);
    for (size_t i = 0; i < len && at + 1 < cap; i++)
        out[at++] = s[i] == '/' || s[i] == '\0' ? '_' : (char)s[i];
    out[at] = '\0';
    return 0;
}

struct scalar_in {
    char tag[64];
    double value;
};

struct write_in {
    int64_t step;
    size_t n;
    struct scalar_in s[MAX_SCALARS];
};

static unsigned char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0, got;

    if (f == NULL)
        abort();
    do {
        if (cap - n < 4096) {
            cap = cap ? 2 * cap : 8192;
            if ((buf = realloc(buf, cap)) == NULL)
                abort();
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    if (ferror(f))
        abort();
    fclose(f);
    *len = n;
    return buf;
}

/* The float bits of a value as both formats store it. */
static int
same_float(float stored, double value)
{
    float want = (float)value;

    return memcmp(&stored, &want, sizeof(want)) == 0;
}

static void
check_tensorboard(const char *path, int64_t first_step,
                  const struct write_in *w, size_t n_writes)
{
    size_t len, at = 0, k = 0;
    unsigned char *buf = slurp(path, &len);

    while (at < len) {
        Tensorboard__Event *ev;
        uint64_t n;

        if (len - at < 12 || le(buf + at + 8, 4) != masked(buf + at, 8))
            abort();
        n = le(buf + at, 8);
        if (len - at - 12 < 4 || n > len - at - 16 ||
            le(buf + at + 12 + n, 4) != masked(buf + at + 12, (size_t)n))
            abort();
        ev = tensorboard__event__unpack(NULL, (size_t)n, buf + at + 12);
        if (ev == NULL || !(ev->wall_time > 0))
            abort();
        if (k == 0) {
            if (ev->what_case != TENSORBOARD__EVENT__WHAT_FILE_VERSION ||
                strcmp(ev->file_version, "brain.Event:2") != 0)
                abort();
        } else if (k == 1) {
            if (ev->what_case != TENSORBOARD__EVENT__WHAT_SESSION_LOG ||
                ev->session_log->status !=
                    TENSORBOARD__SESSION_LOG__SESSION_STATUS__START ||
                ev->step != first_step)
                abort();
        } else {
            const struct write_in *x = &w[k - 2];

            if (k - 2 >= n_writes ||
                ev->what_case != TENSORBOARD__EVENT__WHAT_SUMMARY ||
                ev->step != x->step || ev->summary->n_value != x->n)
                abort();
            for (size_t i = 0; i < x->n; i++) {
                const Tensorboard__Summary__Value *v = ev->summary->value[i];

                if (strcmp(v->tag, x->s[i].tag) != 0 ||
                    v->value_case !=
                        TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE ||
                    !same_float(v->simple_value, x->s[i].value))
                    abort();
            }
        }
        tensorboard__event__free_unpacked(ev, NULL);
        at += 16 + (size_t)n;
        k++;
    }
    if (k != n_writes + 2)
        abort();
    free(buf);
}

/* The bytes of an earlier VisualDL file that a resumed run keeps: its
 * records below first_step, up to the first that is damaged, truncated
 * or longer than 1 GiB. */
static size_t
vdl_kept(const unsigned char *p, size_t len, int64_t first_step,
         unsigned char *out)
{
    size_t at = 0, kept = 0;

    while (len - at >= 8) {
        uint64_t n = le(p + at, 8);
        Visualdl__Record *rec;
        int keep;

        if (n > ((uint64_t)1 << 30) || n > len - at - 8)
            break;
        rec = visualdl__record__unpack(NULL, (size_t)n, p + at + 8);
        if (rec == NULL)
            break;
        keep = rec->n_values == 0 || rec->values[0]->id < first_step;
        visualdl__record__free_unpacked(rec, NULL);
        if (keep) {
            memcpy(out + kept, p + at, 8 + (size_t)n);
            kept += 8 + (size_t)n;
        }
        at += 8 + (size_t)n;
    }
    return kept;
}

static void
check_visualdl(const char *path, const unsigned char *kept, size_t n_kept,
               int resumed, const struct write_in *w, size_t n_writes)
{
    size_t len, at = n_kept, k = 0, i = 0;
    unsigned char *buf = slurp(path, &len);
    int meta = !resumed; /* a new file starts with the meta record */

    if (len < n_kept || (n_kept > 0 && memcmp(buf, kept, n_kept) != 0))
        abort();
    for (;;) {
        Visualdl__Record *rec;
        const Visualdl__Record__Value *v;
        uint64_t n;

        /* The next scalar written, if any: w[k].s[i]. */
        while (k < n_writes && i == w[k].n) {
            k++;
            i = 0;
        }
        if (at == len)
            break;
        if (len - at < 8 || (n = le(buf + at, 8)) > len - at - 8)
            abort();
        rec = visualdl__record__unpack(NULL, (size_t)n, buf + at + 8);
        if (rec == NULL || rec->n_values != 1)
            abort();
        v = rec->values[0];
        if (meta) {
            if (strcmp(v->tag, "meta_data_tag") != 0 ||
                v->one_value_case !=
                    VISUALDL__RECORD__VALUE__ONE_VALUE_META_DATA)
                abort();
            meta = 0;
        } else {
            if (k == n_writes || v->id != w[k].step ||
                strcmp(v->tag, w[k].s[i].tag) != 0 ||
                v->one_value_case != VISUALDL__RECORD__VALUE__ONE_VALUE_VALUE ||
                !same_float(v->value, w[k].s[i].value))
                abort();
            i++;
        }
        visualdl__record__free_unpacked(rec, NULL);
        at += 8 + (size_t)n;
    }
    if (meta || k != n_writes)
        abort();
    free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct in in = { data, size };
    const unsigned char *p, *old = NULL;
    char vdl_name[128] = "", tb_name[128] = "", file[2 * FUZZ_PATH_MAX],
         err[512];
    char tb_path[2 * FUZZ_PATH_MAX] = "", vdl_path[2 * FUZZ_PATH_MAX] = "",
                     newest[128] = "";
    static struct write_in w[MAX_WRITES];
    size_t n_writes = 0, old_len = 0, n_kept = 0;
    unsigned char *kept = NULL;
    unsigned targets;
    int64_t first_step;
    struct events *ev;
    int flags;

    if ((p = take(&in, 9)) == NULL)
        return 0;
    flags = p[0];
    targets = flags & 3 ? (unsigned)(flags & 3) : 3u;
    first_step = (int64_t)le(p + 1, 8);
    if ((flags & 4) &&
        (take_name(&in, VDL_MARK, vdl_name, sizeof(vdl_name)) < 0 ||
         (p = take(&in, 2)) == NULL ||
         (old = take(&in, old_len = (size_t)le(p, 2))) == NULL))
        return 0;
    if ((flags & 8) && take_name(&in, TB_MARK, tb_name, sizeof(tb_name)) < 0)
        return 0;
    while (n_writes < MAX_WRITES && (p = take(&in, 9)) != NULL) {
        struct write_in *x = &w[n_writes++];

        x->step = (int64_t)le(p, 8);
        x->n = p[8] & MAX_SCALARS;
        for (size_t i = 0; i < x->n; i++) {
            const unsigned char *k = take(&in, 1), *t, *v;
            size_t tl;

            if (k == NULL || (t = take(&in, tl = *k & 63)) == NULL ||
                (v = take(&in, 8)) == NULL) {
                x->n = i;
                break;
            }
            memcpy(x->s[i].tag, t, tl);
            x->s[i].tag[tl] = '\0';
            memcpy(&x->s[i].value, v, 8);
        }
    }

    /* The directory as the earlier run left it. */
    nftw(dir, fuzz_tmp_remove_one, 16, FTW_DEPTH | FTW_PHYS);
    if (mkdir(dir, 0700) != 0)
        abort();
    if (vdl_name[0] != '\0') {
        snprintf(file, sizeof(file), "%s/%s", dir, vdl_name);
        fuzz_write_file(file, old, old_len);
        snprintf(newest, sizeof(newest), "%s", vdl_name);
    }
    if (tb_name[0] != '\0') {
        snprintf(file, sizeof(file), "%s/%s", dir, tb_name);
        fuzz_write_file(file, "", 0);
        /* A name holding both marks is VisualDL's newest if larger. */
        if (strstr(tb_name, VDL_MARK) != NULL && strcmp(tb_name, newest) > 0)
            snprintf(newest, sizeof(newest), "%s", tb_name);
    }

    if (events_open(&ev, targets, dir, first_step, err, sizeof(err)) < 0) {
        fprintf(stderr, "fuzz_tblog: %s\n", err);
        abort();
    }
    if (events_path(ev, EVENTS_TENSORBOARD) != NULL)
        snprintf(tb_path, sizeof(tb_path), "%s",
                 events_path(ev, EVENTS_TENSORBOARD));
    if (events_path(ev, EVENTS_VISUALDL) != NULL)
        snprintf(vdl_path, sizeof(vdl_path), "%s",
                 events_path(ev, EVENTS_VISUALDL));
    for (size_t k = 0; k < n_writes; k++) {
        struct event_scalar s[MAX_SCALARS];

        for (size_t i = 0; i < w[k].n; i++) {
            s[i].tag = w[k].s[i].tag;
            s[i].value = w[k].s[i].value;
        }
        if (events_write(ev, w[k].step, s, w[k].n, err, sizeof(err)) < 0) {
            fprintf(stderr, "fuzz_tblog: %s\n", err);
            abort();
        }
    }
    events_close(ev);

    if (!(targets & EVENTS_TENSORBOARD) != (tb_path[0] == '\0') ||
        !(targets & EVENTS_VISUALDL) != (vdl_path[0] == '\0'))
        abort();
    if (tb_path[0] != '\0')
        check_tensorboard(tb_path, first_step, w, n_writes);
    if (vdl_path[0] != '\0') {
        int resumed = newest[0] != '\0' && first_step > 1;

        snprintf(file, sizeof(file), "%s/%s", dir, newest);
        if (resumed != (strcmp(vdl_path, file) == 0))
            abort();
        if (resumed && strcmp(newest, vdl_name) == 0) {
            if ((kept = malloc(old_len ? old_len : 1)) == NULL)
                abort();
            n_kept = vdl_kept(old, old_len, first_step, kept);
        }
        check_visualdl(vdl_path, kept, n_kept, resumed, w, n_writes);
        free(kept);
    }
    return 0;
}

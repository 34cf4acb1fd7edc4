/* SPDX-License-Identifier: MIT */
/*
 * vdl_records.c: VisualDL's record files (see events.h).  A file is a
 * sequence of records, each a serialized Record (vdl_record.proto, packed
 * by protobuf-c) after its length as a little-endian uint64, the framing
 * of VisualDL's RecordWriter.write(); a scalar is a Record of one Value:
 * id = step, tag, timestamp = wall time in milliseconds, value (fp32).
 * VisualDL shows only the newest file of a directory, so a resumed run
 * continues that file rather than starting another.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events_int.h"
#include "util/tr_util.h"
#include "vdl_record.pb-c.h"
#include "banned.h"

#define VDL_MARK "vdlrecords"

static int
put_record(struct event_file *ef, const Visualdl__Record *rec, char *err,
           size_t errlen)
{
    size_t n = visualdl__record__get_packed_size(rec);
    unsigned char head[8], *data = malloc(n ? n : 1);
    int rc;

    if (data == NULL)
        return tr_fail(err, errlen, "out of memory");
    visualdl__record__pack(rec, data);
    for (int i = 0; i < 8; i++)
        head[i] = (unsigned char)((uint64_t)n >> (8 * i));
    rc = event_file_put(ef, head, sizeof(head), err, errlen) < 0 ||
                 event_file_put(ef, data, n, err, errlen) < 0
             ? -1
             : 0;
    free(data);
    return rc;
}

/* One record of one value. */
static int
put_value(struct event_file *ef, Visualdl__Record__Value *v, char *err,
          size_t errlen)
{
    Visualdl__Record rec = VISUALDL__RECORD__INIT;

    rec.n_values = 1;
    rec.values = &v;
    return put_record(ef, &rec, err, errlen);
}

/* Rewrite path keeping the records whose first value's step is below
 * first_step (a truncated last record, from a killed run, goes too):
 * into a temporary file, renamed over path. */
static int
drop_from_step(const char *path, int64_t first_step, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    FILE *in, *out;
    unsigned char head[8], *data = NULL;
    size_t cap = 0;
    int rc = -1;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >=
        (int)sizeof(tmp))
        return tr_fail(err, errlen, "'%s': path too long", path);
    if ((in = fopen(path, "rb")) == NULL)
        return tr_fail(err, errlen, "cannot open '%s': %s", path,
                       strerror(errno));
    if ((out = fopen(tmp, "wb")) == NULL) {
        tr_fail(err, errlen, "cannot create '%s': %s", tmp, strerror(errno));
        fclose(in);
        return -1;
    }
    while (fread(head, 1, 8, in) == 8) {
        uint64_t n = 0;
        Visualdl__Record *rec;
        int keep;

        for (int i = 0; i < 8; i++)
            n |= (uint64_t)head[i] << (8 * i);
        if (n > ((size_t)1 << 30)) /* not one of ours: stop here */
            break;
        /* (An empty record still gets a buffer: fread and fwrite take
         * none that is NULL.) */
        if (n > cap || data == NULL) {
            unsigned char *d = realloc(data, n > 0 ? (size_t)n : 1);

            if (d == NULL) {
                tr_fail(err, errlen, "out of memory");
                goto out;
            }
            data = d;
            cap = (size_t)n;
        }
        if (fread(data, 1, (size_t)n, in) != n)
            break; /* truncated */
        rec = visualdl__record__unpack(NULL, (size_t)n, data);
        if (rec == NULL)
            break; /* damaged: keep what came before */
        keep = rec->n_values == 0 || rec->values[0]->id < first_step;
        visualdl__record__free_unpacked(rec, NULL);
        if (keep && (fwrite(head, 1, 8, out) != 8 ||
                     fwrite(data, 1, (size_t)n, out) != n)) {
            tr_fail(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
            goto out;
        }
    }
    if (ferror(in)) {
        tr_fail(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        goto out;
    }
    if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
        tr_fail(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
        goto out;
    }
    if (rename(tmp, path) != 0) {
        tr_fail(err, errlen, "cannot rename '%s' to '%s': %s", tmp, path,
                strerror(errno));
        goto out;
    }
    rc = 0;
out:
    fclose(in);
    if (fclose(out) != 0 && rc == 0)
        rc =
            tr_fail(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
    if (rc < 0)
        unlink(tmp);
    free(data);
    return rc;
}

int
vdl_open(struct event_file *ef, const char *dir, int64_t first_step, char *err,
         size_t errlen)
{
    char *newest, path[PATH_MAX];
    long long secs = (long long)events_wall_time(), last;
    Visualdl__Record__Value v = VISUALDL__RECORD__VALUE__INIT;
    Visualdl__Record__MetaData meta = VISUALDL__RECORD__META_DATA__INIT;
    int n;

    if (events_newest(dir, VDL_MARK, &newest, err, errlen) < 0)
        return -1;
    if (newest && first_step > 1) { /* resuming: continue the run's file */
        n = snprintf(path, sizeof(path), "%s/%s", dir, newest);
        free(newest);
        if (n < 0 || (size_t)n >= sizeof(path))
            return tr_fail(err, errlen, "'%s': path too long", dir);
        if (drop_from_step(path, first_step, err, errlen) < 0)
            return -1;
        return event_file_open(ef, path, "ab", err, errlen);
    }
    /* A new file, named to be the newest (the one VisualDL shows). */
    if (newest && sscanf(newest, VDL_MARK ".%lld", &last) == 1 &&
        last >= secs && last < LLONG_MAX)
        secs = last + 1;
    free(newest);
    n = snprintf(path, sizeof(path), "%s/" VDL_MARK ".%010lld.log", dir, secs);
    if (n < 0 || (size_t)n >= sizeof(path))
        return tr_fail(err, errlen, "'%s': path too long", dir);
    if (event_file_open(ef, path, "wbx", err, errlen) < 0)
        return -1;
    /* VisualDL's LogWriter starts with this record (its run's name;
     * empty: the directory's). */
    v.tag = (char *)"meta_data_tag";
    v.timestamp = (int64_t)(events_wall_time() * 1000);
    v.one_value_case = VISUALDL__RECORD__VALUE__ONE_VALUE_META_DATA;
    v.meta_data = &meta;
    if (put_value(ef, &v, err, errlen) < 0)
        return -1;
    return event_file_flush(ef, err, errlen);
}

int
vdl_write(struct event_file *ef, int64_t step, double wall,
          const struct event_scalar *s, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        Visualdl__Record__Value v = VISUALDL__RECORD__VALUE__INIT;

        v.id = step;
        v.tag = (char *)s[i].tag;
        v.timestamp = (int64_t)(wall * 1000);
        v.one_value_case = VISUALDL__RECORD__VALUE__ONE_VALUE_VALUE;
        v.value = (float)s[i].value;
        if (put_value(ef, &v, err, errlen) < 0)
            return -1;
    }
    return 0;
}

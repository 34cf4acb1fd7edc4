/* SPDX-License-Identifier: MIT */
/*
 * tb_events.c: TensorBoard's event files (see events.h).  A file is a
 * sequence of TFRecords, each the serialized Event (tb_event.proto, packed
 * by protobuf-c) framed as
 *
 *   uint64 length, uint32 masked CRC-32C of those 8 bytes,
 *   the bytes, uint32 masked CRC-32C of the bytes
 *
 * (little-endian; masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8), the
 * framing TensorFlow's record_writer and TensorBoard's reader use.  The
 * CRC-32C comes from ISA-L (crc32_iscsi).
 */
#include <errno.h>
#include <isa-l/crc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events_int.h"
#include "util/tr_util.h"
#include "tb_event.pb-c.h"
#include "banned.h"

#define TB_MARK "events.out.tfevents."

/* The CRC-32C (Castagnoli) of p[0..n), masked as TFRecords store it. */
static uint32_t
masked_crc32c(const unsigned char *p, size_t n)
{
    uint32_t crc = 0xffffffffu;

    while (n > 0) { /* crc32_iscsi takes an int length */
        int k = n > (size_t)INT_MAX ? INT_MAX : (int)n;

        crc = crc32_iscsi((unsigned char *)p, k, crc);
        p += k;
        n -= (size_t)k;
    }
    crc ^= 0xffffffffu;
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static void
put_le(unsigned char *out, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

/* Pack ev and append it as one record. */
static int
put_event(struct event_file *ef, const Tensorboard__Event *ev, char *err,
          size_t errlen)
{
    size_t n = tensorboard__event__get_packed_size(ev);
    unsigned char head[12], tail[4], *data = malloc(n ? n : 1);
    int rc;

    if (data == NULL)
        return tr_fail(err, errlen, "out of memory");
    tensorboard__event__pack(ev, data);
    put_le(head, n, 8);
    put_le(head + 8, masked_crc32c(head, 8), 4);
    put_le(tail, masked_crc32c(data, n), 4);
    rc = event_file_put(ef, head, sizeof(head), err, errlen) < 0 ||
                 event_file_put(ef, data, n, err, errlen) < 0 ||
                 event_file_put(ef, tail, sizeof(tail), err, errlen) < 0
             ? -1
             : 0;
    free(data);
    return rc;
}

int
tb_open(struct event_file *ef, const char *dir, int64_t first_step, char *err,
        size_t errlen)
{
    char *newest, host[256], path[PATH_MAX];
    long long secs = (long long)events_wall_time(), last;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    Tensorboard__SessionLog start = TENSORBOARD__SESSION_LOG__INIT;
    int n;

    /* TensorBoard reads a run's files in name order: this one after the
     * earlier runs' (whose points its START may drop).  A name whose
     * number cannot be passed (LLONG_MAX) is no earlier run's. */
    if (events_newest(dir, TB_MARK, &newest, err, errlen) < 0)
        return -1;
    if (newest &&
        sscanf(strstr(newest, TB_MARK) + strlen(TB_MARK), "%lld", &last) == 1 &&
        last >= secs && last < LLONG_MAX)
        secs = last + 1;
    free(newest);
    if (gethostname(host, sizeof(host)) < 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    n = snprintf(path, sizeof(path), "%s/" TB_MARK "%010lld.%s.%ld", dir, secs,
                 host, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(path))
        return tr_fail(err, errlen, "'%s': path too long", dir);
    if (event_file_open(ef, path, "wbx", err, errlen) < 0)
        return -1;
    ev.wall_time = events_wall_time();
    ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
    ev.file_version = (char *)"brain.Event:2";
    if (put_event(ef, &ev, err, errlen) < 0)
        return -1;
    /* Points of this step and later in the files before this one belong
     * to an interrupted run: TensorBoard drops them at this record. */
    start.status = TENSORBOARD__SESSION_LOG__SESSION_STATUS__START;
    ev.step = first_step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SESSION_LOG;
    ev.session_log = &start;
    if (put_event(ef, &ev, err, errlen) < 0)
        return -1;
    return event_file_flush(ef, err, errlen);
}

int
tb_write(struct event_file *ef, int64_t step, double wall,
         const struct event_scalar *s, size_t n, char *err, size_t errlen)
{
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    Tensorboard__Summary sum = TENSORBOARD__SUMMARY__INIT;
    Tensorboard__Summary__Value *v = calloc(n ? n : 1, sizeof(*v));
    Tensorboard__Summary__Value **pv = calloc(n ? n : 1, sizeof(*pv));
    int rc = -1;

    if (v == NULL || pv == NULL) {
        tr_fail(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        tensorboard__summary__value__init(&v[i]);
        v[i].tag = (char *)s[i].tag;
        v[i].value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
        v[i].simple_value = (float)s[i].value;
        pv[i] = &v[i];
    }
    sum.n_value = n;
    sum.value = pv;
    ev.wall_time = wall;
    ev.step = step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    rc = put_event(ef, &ev, err, errlen);
out:
    free(v);
    free(pv);
    return rc;
}

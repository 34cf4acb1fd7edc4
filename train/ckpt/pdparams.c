/* SPDX-License-Identifier: MIT */
/*
 * pdparams.c: model_state.pdparams written as paddle.save() writes it, a
 * pickle (protocol 4) of a dict of numpy float32 arrays (see pdparams.h),
 * opcode by opcode: there is no C library for pickles, and the handful of
 * opcodes a dict of arrays needs is what Python's own pickler emits for
 * it (less the optional memo and framing).  The array data go out
 * unbuffered, straight from the caller's memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdparams.h"
#include "util/tr_util.h"

/* The opcodes used (Python's Lib/pickle.py names them). */
enum {
    OP_PROTO = 0x80,
    OP_EMPTY_DICT = '}',
    OP_MARK = '(',
    OP_SETITEMS = 'u',
    OP_STOP = '.',
    OP_SHORT_BINUNICODE = 0x8c,
    OP_BINUNICODE = 'X',
    OP_STACK_GLOBAL = 0x93,
    OP_BININT1 = 'K',
    OP_BININT2 = 'M',
    OP_BININT = 'J',
    OP_LONG1 = 0x8a,
    OP_NONE = 'N',
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
    OP_TUPLE = 't',
    OP_TUPLE1 = 0x85,
    OP_TUPLE2 = 0x86,
    OP_TUPLE3 = 0x87,
    OP_REDUCE = 'R',
    OP_BUILD = 'b',
    OP_SHORT_BINBYTES = 'C',
    OP_BINBYTES = 'B',
    OP_BINBYTES8 = 0x8e,
};

/* The output: a small buffer for the opcodes, flushed before each array's
 * data, which go out as they are. */
struct out {
    int fd;
    unsigned char buf[1 << 16];
    size_t len;
    int failed; /* errno of the first failed write, or 0 */
};

static void
flush(struct out *o)
{
    if (o->len > 0 && !o->failed && tr_write_all(o->fd, o->buf, o->len) < 0)
        o->failed = errno;
    o->len = 0;
}

static void
put(struct out *o, const void *p, size_t n)
{
    if (n > sizeof(o->buf) - o->len) {
        flush(o);
        if (n > sizeof(o->buf)) {
            if (!o->failed && tr_write_all(o->fd, p, n) < 0)
                o->failed = errno;
            return;
        }
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static void
op(struct out *o, int code)
{
    unsigned char c = (unsigned char)code;

    put(o, &c, 1);
}

/* x in n bytes, little-endian. */
static void
le(struct out *o, uint64_t x, int n)
{
    unsigned char b[8];

    for (int i = 0; i < n; i++)
        b[i] = (unsigned char)(x >> (8 * i));
    put(o, b, (size_t)n);
}

/* A non-negative int in the shortest of pickle's forms. */
static void
integer(struct out *o, uint64_t x)
{
    if (x < 0x100) {
        op(o, OP_BININT1);
        le(o, x, 1);
    } else if (x < 0x10000) {
        op(o, OP_BININT2);
        le(o, x, 2);
    } else if (x < 0x80000000u) {
        op(o, OP_BININT);
        le(o, x, 4);
    } else {
        /* LONG1: two's complement, little-endian, a 0 byte on top so the
         * sign bit stays clear. */
        op(o, OP_LONG1);
        le(o, 9, 1);
        le(o, x, 8);
        le(o, 0, 1);
    }
}

static void
str(struct out *o, const char *s)
{
    size_t n = strlen(s);

    if (n < 0x100) {
        op(o, OP_SHORT_BINUNICODE);
        le(o, n, 1);
    } else {
        op(o, OP_BINUNICODE);
        le(o, n, 4);
    }
    put(o, s, n);
}

/* module.name, pushed by STACK_GLOBAL. */
static void
global(struct out *o, const char *module, const char *name)
{
    str(o, module);
    str(o, name);
    op(o, OP_STACK_GLOBAL);
}

/* numpy's dtype('<f4'): dtype('f4', False, True) with the state
 * (3, '<', None, None, None, -1, -1, 0) that numpy 1.x and 2.x pickle. */
static void
dtype_f4(struct out *o)
{
    global(o, "numpy", "dtype");
    str(o, "f4");
    op(o, OP_NEWFALSE);
    op(o, OP_NEWTRUE);
    op(o, OP_TUPLE3);
    op(o, OP_REDUCE);
    op(o, OP_MARK);
    integer(o, 3);
    str(o, "<");
    op(o, OP_NONE);
    op(o, OP_NONE);
    op(o, OP_NONE);
    op(o, OP_BININT);
    le(o, 0xffffffffu, 4); /* -1 */
    op(o, OP_BININT);
    le(o, 0xffffffffu, 4);
    integer(o, 0);
    op(o, OP_TUPLE);
    op(o, OP_BUILD);
}

/* One array as ndarray.__reduce__ gives it. */
static void
array(struct out *o, const struct pd_tensor *t)
{
    size_t nbytes = sizeof(float);

    for (int d = 0; d < t->ndim; d++)
        nbytes *= (size_t)t->shape[d];
    global(o, "numpy.core.multiarray", "_reconstruct");
    global(o, "numpy", "ndarray");
    integer(o, 0);
    op(o, OP_TUPLE1);
    op(o, OP_SHORT_BINBYTES);
    le(o, 1, 1);
    put(o, "b", 1);
    op(o, OP_TUPLE3);
    op(o, OP_REDUCE);
    op(o, OP_MARK);
    integer(o, 1);
    for (int d = 0; d < t->ndim; d++)
        integer(o, (uint64_t)t->shape[d]);
    op(o, t->ndim == 1 ? OP_TUPLE1 : OP_TUPLE2);
    dtype_f4(o);
    op(o, OP_NEWFALSE); /* C order */
    if (nbytes < 0x100) {
        op(o, OP_SHORT_BINBYTES);
        le(o, nbytes, 1);
    } else if (nbytes <= 0xffffffffu) {
        op(o, OP_BINBYTES);
        le(o, nbytes, 4);
    } else {
        op(o, OP_BINBYTES8);
        le(o, nbytes, 8);
    }
    flush(o); /* the data straight from t, after the opcodes before */
    if (!o->failed && nbytes > 0 && tr_write_all(o->fd, t->data, nbytes) < 0)
        o->failed = errno;
    op(o, OP_TUPLE);
    op(o, OP_BUILD);
}

int
pdparams_write(const char *path, const struct pd_tensor *t, size_t n, char *err,
               size_t errlen)
{
    struct out *o;
    int failed;

    for (size_t i = 0; i < n; i++) {
        if (t[i].ndim < 1 || t[i].ndim > 2 || t[i].shape[0] < 0 ||
            (t[i].ndim == 2 && t[i].shape[1] < 0))
            return tr_fail(err, errlen, "'%s': tensor '%s' has %d dimensions",
                           path, t[i].name, t[i].ndim);
        for (size_t j = 0; j < i; j++)
            if (strcmp(t[i].name, t[j].name) == 0)
                return tr_fail(err, errlen, "'%s': tensor '%s' given twice",
                               path, t[i].name);
    }
    if ((o = calloc(1, sizeof(*o))) == NULL) /* (64 KiB: not on the stack) */
        return tr_fail(err, errlen, "out of memory");
    o->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (o->fd < 0) {
        free(o);
        return tr_fail(err, errlen, "cannot create '%s': %s", path,
                       strerror(errno));
    }
    op(o, OP_PROTO);
    le(o, 4, 1);
    op(o, OP_EMPTY_DICT);
    op(o, OP_MARK);
    for (size_t i = 0; i < n; i++) {
        str(o, t[i].name);
        array(o, &t[i]);
    }
    op(o, OP_SETITEMS);
    op(o, OP_STOP);
    flush(o);
    if (!o->failed && fsync(o->fd) < 0)
        o->failed = errno;
    if (close(o->fd) < 0 && !o->failed)
        o->failed = errno;
    failed = o->failed;
    free(o);
    if (failed) {
        unlink(path);
        return tr_fail(err, errlen, "cannot write '%s': %s", path,
                       strerror(failed));
    }
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * ds_dtype.c: the dtype codes of the .idx header (PaddleNLP's table, spec
 * section 5.4), their sizes, numpy names and numpy descr strings.
 */
#include "ds_int.h"

struct dtype_info {
    const char *name;
    const char *descr; /* as np.save writes it on a little-endian machine */
    size_t size;
};

/* Indexed by the code; 0 is no type. */
static const struct dtype_info dtypes[] = {
    { NULL, NULL, 0 },       { "uint8", "|u1", 1 },   { "int8", "|i1", 1 },
    { "int16", "<i2", 2 },   { "int32", "<i4", 4 },   { "int64", "<i8", 8 },
    { "float64", "<f8", 8 }, { "float32", "<f4", 4 }, { "uint16", "<u2", 2 },
    { "uint32", "<u4", 4 },  { "uint64", "<u8", 8 },
};

#define N_DTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

static const struct dtype_info *
info(enum ds_dtype t)
{
    if ((unsigned)t == 0 || (unsigned)t >= N_DTYPES)
        return NULL;
    return &dtypes[t];
}

size_t
ds_dtype_size(enum ds_dtype t)
{
    const struct dtype_info *i = info(t);

    return i ? i->size : 0;
}

const char *
ds_dtype_name(enum ds_dtype t)
{
    const struct dtype_info *i = info(t);

    return i ? i->name : "unknown";
}

bool
ds_dtype_is_int(enum ds_dtype t)
{
    return info(t) != NULL && t != DS_DTYPE_FLOAT32 && t != DS_DTYPE_FLOAT64;
}

const char *
ds_dtype_descr(enum ds_dtype t)
{
    const struct dtype_info *i = info(t);

    return i ? i->descr : NULL;
}

enum ds_dtype
ds_dtype_from_descr(const char *s, size_t len)
{
    char order = '=';

    if (len > 0 && (s[0] == '<' || s[0] == '|' || s[0] == '=')) {
        order = s[0];
        s++;
        len--;
    }
    if (len != 2)
        return 0;
    for (unsigned t = 1; t < N_DTYPES; t++) {
        const char *d = dtypes[t].descr;

        if (d[1] != s[0] || d[2] != s[1])
            continue;
        /* '|' means "no byte order" and numpy uses it only for one-byte
         * types; '<' and '=' (native, little-endian here) are fine for all,
         * since a byte has no order. */
        if (order == '|' && dtypes[t].size != 1)
            return 0;
        return (enum ds_dtype)t;
    }
    return 0;
}

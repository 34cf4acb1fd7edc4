/* SPDX-License-Identifier: MIT */
/*
 * ds_err.c: status strings, the error helper and the version query.
 */
#include <stdio.h>

#include "ds_int.h"

const char *
ds_version(void)
{
    return DS_VERSION_STRING;
}

const char *
ds_strerror(int code)
{
    switch (code) {
    case DS_OK:
        return "success";
    case DS_ENOMEM:
        return "out of memory";
    case DS_EIO:
        return "input/output error";
    case DS_EFORMAT:
        return "malformed dataset file";
    case DS_EINVAL:
        return "invalid argument";
    case DS_ERANGE:
        return "value out of range";
    }
    return "unknown error";
}

int
ds_err_set(struct ds_err *err, int code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

int
ds_err_nomem(struct ds_err *err)
{
    return ds_err_set(err, DS_ENOMEM, "%s", ds_strerror(DS_ENOMEM));
}

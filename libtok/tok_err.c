/* SPDX-License-Identifier: MIT */
/*
 * tok_err.c: status strings, the error helper and version queries.
 */
#include <stdio.h>
#include <utf8proc.h>

#include "tok_int.h"

const char *
tok_version(void)
{
    return TOK_VERSION_STRING;
}

const char *
tok_unicode_version(void)
{
    return utf8proc_unicode_version();
}

const char *
tok_strerror(int code)
{
    switch (code) {
    case TOK_OK:
        return "success";
    case TOK_ENOMEM:
        return "out of memory";
    case TOK_EIO:
        return "input/output error";
    case TOK_EFORMAT:
        return "malformed file";
    case TOK_EUTF8:
        return "invalid UTF-8";
    case TOK_ESPACE:
        return "buffer too small";
    case TOK_EINVAL:
        return "invalid argument";
    case TOK_ERANGE:
        return "value out of range";
    }
    return "unknown error";
}

int
tok_err_set(struct tok_err *err, int code, const char *fmt, ...)
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

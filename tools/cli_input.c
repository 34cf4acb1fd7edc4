/* SPDX-License-Identifier: MIT */
/*
 * cli_input.c: reading a file or stdin, plain or zstd-compressed.  The
 * format is recognised by the zstd frame magic, so "-" works for both;
 * concatenated frames (as `zstd -c a b` writes) are read in sequence.
 */
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cli.h"
#include "banned.h"

struct cli_input {
    FILE *fp;
    char *name;
    bool is_stdin;
    bool zst;
    ZSTD_DStream *zds;
    char *zbuf; /* compressed bytes */
    size_t zcap;
    ZSTD_inBuffer zin;
    bool zeof;        /* no more compressed bytes */
    size_t frame_end; /* last ZSTD_decompressStream result (0 = frame done) */
    unsigned char peek[4];
    size_t n_peek, peek_off;
    uint64_t stored; /* bytes read from fp */
    /* The JSON array filter (cli_input_json_array). */
    bool json_array;
    char *raw; /* raw bytes read ahead */
    size_t raw_len, raw_off;
    int phase, depth;
    bool in_string, escape, raw_eof;
    uint64_t raw_line;
};

enum { JA_BEFORE, JA_FIRST, JA_NEXT, JA_ELEM, JA_AFTER, JA_DONE };

struct cli_input *
cli_input_open(const char *path)
{
    struct cli_input *in = calloc(1, sizeof(*in));

    if (in == NULL) {
        warn(NULL);
        return NULL;
    }
    if (strcmp(path, "-") == 0) {
        in->fp = stdin;
        in->is_stdin = true;
        in->name = strdup("<stdin>");
    } else {
        in->fp = fopen(path, "rb");
        in->name = strdup(path);
        if (in->fp == NULL) {
            warn("cannot open '%s'", path);
            free(in->name);
            free(in);
            return NULL;
        }
    }
    if (in->name == NULL) {
        warn(NULL);
        cli_input_close(in);
        return NULL;
    }
    in->n_peek = fread(in->peek, 1, sizeof(in->peek), in->fp);
    in->stored = in->n_peek;
    if (ferror(in->fp)) {
        warn("cannot read '%s'", in->name);
        cli_input_close(in);
        return NULL;
    }
    if (in->n_peek == 4 && in->peek[0] == 0x28 && in->peek[1] == 0xB5 &&
        in->peek[2] == 0x2F && in->peek[3] == 0xFD) {
        in->zst = true;
        in->zds = ZSTD_createDStream();
        in->zcap = ZSTD_DStreamInSize();
        in->zbuf = malloc(in->zcap);
        if (in->zds == NULL || in->zbuf == NULL) {
            warnx("cannot read '%s': out of memory", in->name);
            cli_input_close(in);
            return NULL;
        }
        ZSTD_initDStream(in->zds);
        memcpy(in->zbuf, in->peek, 4);
        in->zin.src = in->zbuf;
        in->zin.size = 4;
        in->zin.pos = 0;
        in->n_peek = 0;
    }
    return in;
}

static long
read_plain(struct cli_input *in, char *buf, size_t n)
{
    size_t got = 0;

    while (in->peek_off < in->n_peek && got < n)
        buf[got++] = (char)in->peek[in->peek_off++];
    if (got < n) {
        size_t k = fread(buf + got, 1, n - got, in->fp);

        got += k;
        in->stored += k;
    }
    if (ferror(in->fp)) {
        warn("cannot read '%s'", in->name);
        return -1;
    }
    return (long)got;
}

static long
read_zst(struct cli_input *in, char *buf, size_t n)
{
    ZSTD_outBuffer zout = { buf, n, 0 };

    while (zout.pos == 0) {
        size_t r;

        if (in->zin.pos == in->zin.size && !in->zeof) {
            size_t got = fread(in->zbuf, 1, in->zcap, in->fp);

            in->stored += got;
            if (ferror(in->fp)) {
                warn("cannot read '%s'", in->name);
                return -1;
            }
            in->zin.size = got;
            in->zin.pos = 0;
            if (got == 0)
                in->zeof = true;
        }
        if (in->zeof && in->zin.pos == in->zin.size) {
            if (in->frame_end != 0) {
                warnx("'%s': truncated zstd stream", in->name);
                return -1;
            }
            return 0;
        }
        r = ZSTD_decompressStream(in->zds, &zout, &in->zin);
        if (ZSTD_isError(r)) {
            warnx("'%s': corrupt zstd data: %s", in->name,
                  ZSTD_getErrorName(r));
            return -1;
        }
        in->frame_end = r;
    }
    return (long)zout.pos;
}

static long
read_raw(struct cli_input *in, char *buf, size_t n)
{
    return in->zst ? read_zst(in, buf, n) : read_plain(in, buf, n);
}

void
cli_input_json_array(struct cli_input *in)
{
    in->json_array = true;
    in->phase = JA_BEFORE;
    in->raw_line = 1;
}

static bool
ja_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One JSON array in, one element a line out (see cli.h). */
static long
read_json_array(struct cli_input *in, char *buf, size_t n)
{
    size_t out = 0;

    if (in->raw == NULL && (in->raw = malloc(1 << 16)) == NULL) {
        warnx("'%s': out of memory", in->name);
        return -1;
    }
    while (out < n) {
        char c;

        if (in->raw_off == in->raw_len) {
            long got;

            if (in->raw_eof)
                break;
            got = read_raw(in, in->raw, 1 << 16);
            if (got < 0)
                return -1;
            in->raw_len = (size_t)got;
            in->raw_off = 0;
            if (got == 0) {
                in->raw_eof = true;
                break;
            }
        }
        c = in->raw[in->raw_off++];
        if (c == '\n')
            in->raw_line++;
        switch (in->phase) {
        case JA_BEFORE:
            if (ja_space(c))
                continue;
            if (c != '[')
                goto bad_start;
            in->phase = JA_FIRST;
            continue;
        case JA_FIRST:
        case JA_NEXT:
            if (ja_space(c))
                continue;
            if (c == ']' && in->phase == JA_FIRST) {
                in->phase = JA_DONE;
                continue;
            }
            in->phase = JA_ELEM;
            in->depth = 0;
            in->in_string = in->escape = false;
            break; /* c starts the element */
        case JA_ELEM:
            break;
        case JA_AFTER:
            if (ja_space(c))
                continue;
            if (c == ',') {
                in->phase = JA_NEXT;
                continue;
            }
            if (c == ']') {
                in->phase = JA_DONE;
                continue;
            }
            warnx("%s:%llu: expected ',' or ']' after an array element",
                  in->name, (unsigned long long)in->raw_line);
            return -1;
        case JA_DONE:
            if (ja_space(c))
                continue;
            warnx("%s:%llu: text after the JSON array", in->name,
                  (unsigned long long)in->raw_line);
            return -1;
        }
        /* Inside an element: copy it, one line per element. */
        if (in->in_string) {
            if (c == '\n' || c == '\r') {
                warnx("%s:%llu: newline inside a JSON string", in->name,
                      (unsigned long long)in->raw_line);
                return -1;
            }
            if (in->escape)
                in->escape = false;
            else if (c == '\\')
                in->escape = true;
            else if (c == '"')
                in->in_string = false;
            buf[out++] = c;
            continue;
        }
        if (in->depth == 0 && (c == ',' || c == ']')) {
            /* The end of a scalar element. */
            buf[out++] = '\n';
            in->raw_off--;
            if (c == '\n')
                in->raw_line--;
            in->phase = JA_AFTER;
            continue;
        }
        if (c == '"')
            in->in_string = true;
        else if (c == '{' || c == '[')
            in->depth++;
        else if (c == '}' || c == ']')
            in->depth--;
        buf[out++] = (c == '\n' || c == '\r') ? ' ' : c;
        if (in->depth == 0 && (c == '}' || c == ']')) {
            if (out == n) {
                /* No room for the newline: put the end back. */
                out--;
                in->raw_off--;
                in->depth++;
                break;
            }
            buf[out++] = '\n';
            in->phase = JA_AFTER;
        }
    }
    if (out == 0 && in->raw_eof && in->phase != JA_DONE) {
        if (in->phase == JA_BEFORE)
            goto bad_start;
        warnx("%s:%llu: truncated JSON array", in->name,
              (unsigned long long)in->raw_line);
        return -1;
    }
    return (long)out;
bad_start:
    warnx("%s:%llu: not a JSON array (expected '[')", in->name,
          (unsigned long long)in->raw_line);
    return -1;
}

long
cli_input_read(struct cli_input *in, char *buf, size_t n)
{
    if (in->json_array)
        return read_json_array(in, buf, n);
    return read_raw(in, buf, n);
}

uint64_t
cli_input_stored_bytes(const struct cli_input *in)
{
    return in->stored;
}

const char *
cli_input_name(const struct cli_input *in)
{
    return in->name;
}

void
cli_input_close(struct cli_input *in)
{
    if (in == NULL)
        return;
    if (in->fp && !in->is_stdin)
        fclose(in->fp);
    ZSTD_freeDStream(in->zds);
    free(in->zbuf);
    free(in->raw);
    free(in->name);
    free(in);
}

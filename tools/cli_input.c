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
};

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
    if (got < n)
        got += fread(buf + got, 1, n - got, in->fp);
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

long
cli_input_read(struct cli_input *in, char *buf, size_t n)
{
    return in->zst ? read_zst(in, buf, n) : read_plain(in, buf, n);
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
    free(in->name);
    free(in);
}

/* SPDX-License-Identifier: MIT */
/*
 * gen_reader.c: generate's inputs: the -p prompts, then text lines or
 * JSONL records of files (plain or zstd) or of standard input, read as
 * they arrive so that a terminal's line is answered at once.  Fuzzed by
 * tests/fuzz/fuzz_gen_prompts.c.
 */
#include <err.h>
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gen_reader.h"
#include "banned.h"

/* A source of lines: standard input read as it comes (read(2), so a
 * line is handed out as soon as it arrives), or a file through
 * cli_input (zstd-compressed or not). */
struct gen_reader {
    const char *const *prompts; /* -p, in order */
    size_t n_prompts, next_prompt;
    bool jsonl;
    const char *json_key;
    char **files;
    int n_files, next_file;
    uint64_t index;
    /* The source being read. */
    struct cli_input *in; /* a file, or NULL for stdin (fd 0) */
    bool open, is_stdin;
    const char *name;
    char *buf;
    size_t len, off, cap;
    bool eof;
    uint64_t line;
    struct json_tokener *jt;
    struct tok_buf field;
};

struct gen_reader *
gen_reader_new(const char *const *prompts, size_t n_prompts, bool jsonl,
               const char *json_key, int argc, char **argv)
{
    static char dash[] = "-";
    static char *just_stdin[] = { dash };
    struct gen_reader *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->prompts = prompts;
    r->n_prompts = n_prompts;
    r->jsonl = jsonl;
    r->json_key = json_key;
    r->files = argc > 0 ? argv : n_prompts > 0 ? NULL : just_stdin;
    r->n_files = argc > 0 ? argc : n_prompts > 0 ? 0 : 1;
    r->cap = 1 << 16;
    r->buf = malloc(r->cap);
    tok_buf_init(&r->field);
    if (r->buf == NULL) {
        free(r);
        return NULL;
    }
    return r;
}

static void
close_source(struct gen_reader *r)
{
    cli_input_close(r->in);
    r->in = NULL;
    r->open = false;
}

void
gen_reader_free(struct gen_reader *r)
{
    if (r == NULL)
        return;
    close_source(r);
    if (r->jt)
        json_tokener_free(r->jt);
    tok_buf_release(&r->field);
    free(r->buf);
    free(r);
}

/* More bytes into the buffer (keeping buf[off..len)); 0 at the end. */
static long
fill(struct gen_reader *r)
{
    long got;

    if (r->off > 0) {
        memmove(r->buf, r->buf + r->off, r->len - r->off);
        r->len -= r->off;
        r->off = 0;
    }
    if (r->len == r->cap) {
        char *p = realloc(r->buf, r->cap * 2);

        if (p == NULL) {
            warnx("'%s': out of memory", r->name);
            return -1;
        }
        r->buf = p;
        r->cap *= 2;
    }
    if (r->in == NULL) {
        ssize_t k;

        do
            k = read(STDIN_FILENO, r->buf + r->len, r->cap - r->len);
        while (k < 0 && errno == EINTR);
        if (k < 0) {
            warn("cannot read '%s'", r->name);
            return -1;
        }
        got = (long)k;
    } else {
        got = cli_input_read(r->in, r->buf + r->len, r->cap - r->len);
        if (got < 0)
            return -1;
    }
    r->len += (size_t)got;
    return got;
}

/* The next line of the open source (without its "\n" or "\r\n") at
 * *line, *n; 1, 0 at its end, -1 on a read error. */
static int
next_line(struct gen_reader *r, const char **line, size_t *n)
{
    for (;;) {
        char *nl = memchr(r->buf + r->off, '\n', r->len - r->off);

        if (nl != NULL || (r->eof && r->off < r->len)) {
            size_t end = nl ? (size_t)(nl - r->buf) : r->len;

            *line = r->buf + r->off;
            *n = end - r->off;
            if (*n > 0 && (*line)[*n - 1] == '\r')
                (*n)--;
            r->off = nl ? end + 1 : end;
            r->line++;
            return 1;
        }
        if (r->eof)
            return 0;
        {
            long got = fill(r);

            if (got < 0)
                return -1;
            if (got == 0)
                r->eof = true;
        }
    }
}

static bool
open_next(struct gen_reader *r)
{
    while (r->next_file < r->n_files) {
        const char *path = r->files[r->next_file++];

        r->len = r->off = 0;
        r->eof = false;
        r->line = 0;
        r->is_stdin = strcmp(path, "-") == 0;
        if (r->is_stdin) {
            r->name = "<stdin>";
            r->in = NULL;
        } else {
            r->name = path;
            if ((r->in = cli_input_open(path)) == NULL)
                continue; /* warned; the others still run */
        }
        r->open = true;
        return true;
    }
    return false;
}

static int
keep(struct gen_record *rec, const char *s, size_t n, const char *source,
     uint64_t line, uint64_t index)
{
    rec->text = malloc(n + 1);
    if (rec->text == NULL) {
        warnx("out of memory");
        return -1;
    }
    memcpy(rec->text, s, n);
    rec->text[n] = '\0';
    rec->len = n;
    rec->source = source;
    rec->line = line;
    rec->index = index;
    return 1;
}

int
gen_reader_next(struct gen_reader *r, struct gen_record *rec)
{
    const char *s;
    size_t n;
    int got;

    if (r->next_prompt < r->n_prompts) {
        const char *p = r->prompts[r->next_prompt++];

        return keep(rec, p, strlen(p), "-p", r->next_prompt, r->index++);
    }
    for (;;) {
        if (!r->open && !open_next(r))
            return 0;
        got = next_line(r, &s, &n);
        if (got < 0) {
            close_source(r);
            return -1;
        }
        if (got == 0) {
            close_source(r);
            continue;
        }
        if (tok_utf8_check(s, n) != n) {
            warnx("%s:%llu: invalid UTF-8 at byte %zu", r->name,
                  (unsigned long long)r->line, tok_utf8_check(s, n));
            r->index++;
            return -1;
        }
        if (!r->jsonl) {
            if (cli_is_blank_line(s, n))
                continue; /* no prompt */
            return keep(rec, s, n, r->name, r->line, r->index++);
        }
        {
            char why[256];
            int k;

            if (r->jt == NULL && (r->jt = json_tokener_new()) == NULL) {
                warnx("out of memory");
                return -1;
            }
            tok_buf_clear(&r->field);
            k = cli_json_field(&r->jt, s, n, r->json_key, &r->field, why,
                               sizeof(why));
            if (k == 0)
                continue;
            if (k < 0) {
                warnx("%s:%llu: %s", r->name, (unsigned long long)r->line, why);
                r->index++;
                return -1;
            }
            return keep(rec, r->field.data ? r->field.data : "", r->field.len,
                        r->name, r->line, r->index++);
        }
    }
}

bool
gen_reader_ready(struct gen_reader *r)
{
    struct pollfd p = { STDIN_FILENO, POLLIN, 0 };

    if (r->next_prompt < r->n_prompts)
        return true;
    if (!r->open || !r->is_stdin)
        return true; /* files: read on until the batch is full */
    if (memchr(r->buf + r->off, '\n', r->len - r->off) != NULL || r->eof)
        return true;
    return poll(&p, 1, 0) > 0;
}

void
gen_record_error(const struct gen_record *rec, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "generate: %s%s%llu: ",
            strcmp(rec->source, "-p") == 0 ? "prompt " : rec->source,
            strcmp(rec->source, "-p") == 0 ? "" : ":",
            (unsigned long long)rec->line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

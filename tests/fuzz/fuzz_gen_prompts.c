/* SPDX-License-Identifier: MIT */
/*
 * fuzz_gen_prompts.c: generate's input reader (tools/gen_reader.c) on
 * arbitrary bytes as its input files, against the records the bytes hold
 * when split by hand: every line ("\n", a "\r" before it dropped, the last
 * one without), a line that is not UTF-8 an error, a blank one skipped,
 * and with JSONL the field cli_json_field_jsonc() (json-c) finds, an error
 * or nothing.  The records and errors must come in that order with their
 * file, line and index; a -p prompt comes first.  The first byte picks
 * the mode: bit 0 JSONL, bit 1 two files (the rest cut in two at the
 * second byte's share), bit 2 a -p prompt before them.  A file that
 * starts with zstd's frame magic would be decompressed (cli_input's
 * job, not the reader's): such inputs are left out.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/cli.h"
#include "../../tools/gen_reader.h"
#include "fuzz.h"
#include "tok.h"

static char path_a[FUZZ_PATH_MAX], path_b[FUZZ_PATH_MAX];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_tmp_path(path_a, sizeof(path_a), "a.txt");
    fuzz_tmp_path(path_b, sizeof(path_b), "b.jsonl");
    return 0;
}

/* What the reader must give next: a record (text, len) or an error. */
struct want {
    int rc;
    const char *text;
    size_t len;
    const char *source;
    uint64_t line, index;
};

static void
expect(struct gen_reader *r, const struct want *w)
{
    struct gen_record rec;
    int got = gen_reader_next(r, &rec);

    if (got != w->rc) {
        fprintf(stderr, "record %llu: got %d, want %d\n",
                (unsigned long long)w->index, got, w->rc);
        abort();
    }
    if (got != 1)
        return;
    if (rec.len != w->len || memcmp(rec.text, w->text, w->len) != 0 ||
        rec.text[rec.len] != '\0' || strcmp(rec.source, w->source) != 0 ||
        rec.line != w->line || rec.index != w->index) {
        fprintf(stderr, "record %llu: %s:%llu #%llu '%.*s', want %s:%llu\n",
                (unsigned long long)w->index, rec.source,
                (unsigned long long)rec.line, (unsigned long long)rec.index,
                (int)rec.len, rec.text, w->source, (unsigned long long)w->line);
        abort();
    }
    free(rec.text);
}

/* The records of one file's bytes, checked as they are read. */
static void
check_file(struct gen_reader *r, const char *path, const char *s, size_t n,
           int jsonl, uint64_t *index)
{
    static struct json_tokener *jt;
    struct tok_buf field;
    size_t at = 0;
    uint64_t line = 0;

    if (jt == NULL && (jt = json_tokener_new()) == NULL)
        abort();
    tok_buf_init(&field);
    while (at < n) {
        const char *nl = memchr(s + at, '\n', n - at);
        size_t end = nl != NULL ? (size_t)(nl - s) : n, len = end - at;
        const char *l = s + at;
        struct want w = { 1, l, len, path, ++line, *index };
        char why[256];

        at = nl != NULL ? end + 1 : n;
        if (len > 0 && l[len - 1] == '\r')
            w.len = --len;
        if (tok_utf8_check(l, len) != len) {
            w.rc = -1;
        } else if (!jsonl) {
            if (cli_is_blank_line(l, len))
                continue;
        } else {
            int k;

            tok_buf_clear(&field);
            k = cli_json_field_jsonc(&jt, l, len, "text", &field, why,
                                     sizeof(why));
            if (k == 0)
                continue;
            w.rc = k < 0 ? -1 : 1;
            w.text = field.data != NULL ? field.data : "";
            w.len = field.len;
        }
        expect(r, &w);
        ++*index;
    }
    tok_buf_release(&field);
}

static int
is_zstd(const char *s, size_t n)
{
    return n >= 4 && memcmp(s, "\x28\xb5\x2f\xfd", 4) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const prompts[] = { "a prompt" };
    char *files[2] = { path_a, path_b };
    const char *s = (const char *)data + 2;
    size_t n, cut;
    int jsonl, two, with_prompt;
    uint64_t index = 0;
    struct gen_reader *r;
    struct want end = { 0, NULL, 0, NULL, 0, 0 };

    if (size < 2)
        return 0;
    jsonl = data[0] & 1;
    two = (data[0] >> 1) & 1;
    with_prompt = (data[0] >> 2) & 1;
    n = size - 2;
    cut = two ? n * data[1] / 255 : n;
    if (is_zstd(s, cut) || (two && is_zstd(s + cut, n - cut)))
        return 0;
    fuzz_write_file(path_a, s, cut);
    if (two)
        fuzz_write_file(path_b, s + cut, n - cut);
    r = gen_reader_new(prompts, with_prompt ? 1 : 0, jsonl, "text", two ? 2 : 1,
                       files);
    if (r == NULL)
        abort();
    if (with_prompt) {
        struct want p = { 1, prompts[0], strlen(prompts[0]), "-p", 1, 0 };

        expect(r, &p);
        index++;
    }
    check_file(r, path_a, s, cut, jsonl, &index);
    if (two)
        check_file(r, path_b, s + cut, n - cut, jsonl, &index);
    expect(r, &end);
    expect(r, &end); /* and stays at the end */
    gen_reader_free(r);
    return 0;
}

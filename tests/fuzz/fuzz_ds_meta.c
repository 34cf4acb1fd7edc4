/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ds_meta.c: the dataset sidecar reader (ds_meta_read, libdata's
 * ds_meta.c) on arbitrary bytes as PREFIX.json.  A refusal is DS_EFORMAT
 * with a message naming the file, and leaves the record all unrecorded.
 * What it accepts must be a record the writers could have made (a known
 * format, dtype and tokenizer, a vocab checksum of 64 hex digits), a
 * sidecar ds_meta_check_name() lets a new dataset replace, and written
 * back by ds_meta_write() it must read back the same, field for field.
 */
#include <stdlib.h>
#include <string.h>

#include "ds.h"
#include "fuzz.h"

static char prefix[FUZZ_PATH_MAX], again[FUZZ_PATH_MAX];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_tmp_path(prefix, sizeof(prefix), "input");
    fuzz_tmp_path(again, sizeof(again), "again");
    return 0;
}

static int
is_hex64(const char *s)
{
    size_t i = 0;

    for (; s[i] != '\0'; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return i == 64;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ds_meta m, back, none;
    struct ds_err e;
    char path[FUZZ_PATH_MAX + 64], diff[256];
    int rc;

    snprintf(path, sizeof(path), "%s.json", prefix);
    fuzz_write_file(path, data, size);
    memset(&e, 0, sizeof(e));
    rc = ds_meta_read(prefix, &m, &e);
    if (rc != 1) {
        ds_meta_init(&none, NULL, NULL);
        if (rc != DS_EFORMAT || e.code != DS_EFORMAT ||
            strstr(e.msg, path) == NULL || memcmp(&m, &none, sizeof(m)) != 0)
            abort();
        return 0;
    }
    if (ds_dtype_size(m.dtype) == 0 ||
        (m.format != DS_FORMAT_MMAP && m.format != DS_FORMAT_NPY) ||
        (strcmp(m.tokenizer, "ernie") != 0 &&
         strcmp(m.tokenizer, "bert") != 0 &&
         strcmp(m.tokenizer, "wordpiece") != 0 &&
         strcmp(m.tokenizer, "gpt2-bpe") != 0) ||
        m.vocab_size < 0 || !is_hex64(m.vocab_sha256) ||
        (m.merges_sha256[0] != '\0' && !is_hex64(m.merges_sha256)) ||
        m.lowercase < 0 || m.whole_word_marks < 0 || m.split_sentences < 0 ||
        m.append_eod < 0 || m.keep_whitespace < 0 || m.max_word_length < -1 ||
        m.max_repeated_len < -1)
        abort();
    if (ds_meta_check_name(prefix, &e) != 0)
        abort();
    /* The round trip. */
    if (ds_meta_write(again, &m, &e) != 0 ||
        ds_meta_read(again, &back, &e) != 1)
        abort();
    if (memcmp(&m, &back, sizeof(m)) != 0 ||
        ds_meta_compare(&m, &back, DS_META_ALL, diff, sizeof(diff)) != 0)
        abort();
    return 0;
}

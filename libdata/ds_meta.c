/* SPDX-License-Identifier: MIT */
/*
 * ds_meta.c: the sidecar PREFIX.json that records how a dataset was made
 * (ds-meta(5)): written by the tools that make datasets, read by those
 * that combine or train on them, compared field by field.  JSON through
 * json-c; the vocab checksum is a SHA-256 from nettle.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ds_int.h"

/* The key that makes a JSON file a sidecar. */
#define MAGIC_KEY "erniekit_dataset"
/* A sidecar is a few hundred bytes; anything this large is not one. */
#define MAX_SIDECAR (1u << 20)
/* The max_repeated_len of "none": runs are kept. */
#define RUNS_KEPT INT64_MAX

/* ------------------------------------------------------------------------ */
/* Building a record                                                         */

static void
copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* now, or $SOURCE_DATE_EPOCH when it is a number, as ISO 8601 UTC. */
static void
created_now(char out[24])
{
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    time_t t = time(NULL);
    struct tm tm;

    if (sde != NULL && *sde != '\0') {
        char *end;
        long long v;

        errno = 0;
        v = strtoll(sde, &end, 10);
        if (*end == '\0' && errno == 0 && v >= 0)
            t = (time_t)v;
    }
    if (gmtime_r(&t, &tm) == NULL ||
        strftime(out, 24, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        out[0] = '\0';
}

void
ds_meta_init(struct ds_meta *m, const char *tool, const char *version)
{
    memset(m, 0, sizeof(*m));
    copy_str(m->tool, sizeof(m->tool), tool);
    copy_str(m->tool_version, sizeof(m->tool_version), version);
    if (tool != NULL)
        created_now(m->created);
    m->format = DS_FORMAT_MMAP;
    m->vocab_size = -1;
    m->lowercase = m->whole_word_marks = m->split_sentences = -1;
    m->append_eod = m->keep_whitespace = -1;
    m->max_word_length = m->max_repeated_len = -1;
}

char *
ds_meta_path(const char *prefix)
{
    return ds_path_cat(prefix, ".json", NULL);
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

/* read(2) of up to n bytes, again when interrupted: the count, 0 at the
 * end, or DS_EIO (err names path). */
static ssize_t
read_some(int fd, void *buf, size_t n, const char *path, struct ds_err *err)
{
    ssize_t k;

    while ((k = read(fd, buf, n)) < 0 && errno == EINTR)
        ;
    if (k < 0)
        return ds_err_set(err, DS_EIO, "cannot read '%s': %s", path,
                          strerror(errno));
    return k;
}

/* Parse the file at path: *out is its JSON (the caller puts it), or NULL
 * when the file does not exist (returns 0).  Returns 0, DS_EIO,
 * DS_EFORMAT (not JSON: err says where) or DS_ENOMEM. */
static int
parse_file(const char *path, struct json_object **out, struct ds_err *err)
{
    struct json_tokener *jt;
    struct json_object *o;
    enum json_tokener_error je;
    char *buf;
    size_t len = 0;
    ssize_t k = 0;
    int fd;

    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return ds_err_set(err, DS_EIO, "cannot open '%s': %s", path,
                          strerror(errno));
    }
    buf = (char *)malloc(MAX_SIDECAR + 1);
    if (buf == NULL) {
        close(fd);
        return ds_err_nomem(err);
    }
    while (len <= MAX_SIDECAR &&
           (k = read_some(fd, buf + len, MAX_SIDECAR + 1 - len, path, err)) > 0)
        len += (size_t)k;
    if (k < 0) {
        close(fd);
        free(buf);
        return (int)k;
    }
    close(fd);
    if (len > MAX_SIDECAR) {
        free(buf);
        return ds_err_set(err, DS_EFORMAT,
                          "'%s' is not a dataset sidecar (larger than %u "
                          "bytes)",
                          path, MAX_SIDECAR);
    }
    jt = json_tokener_new();
    if (jt == NULL) {
        free(buf);
        return ds_err_nomem(err);
    }
    o = json_tokener_parse_ex(jt, buf, (int)len);
    je = json_tokener_get_error(jt);
    if (je == json_tokener_success) { /* o is NULL for a JSON null */
        /* Only blanks may follow the value. */
        for (size_t i = json_tokener_get_parse_end(jt); i < len; i++)
            if (buf[i] != ' ' && buf[i] != '\n' && buf[i] != '\t' &&
                buf[i] != '\r')
                je = json_tokener_error_parse_unexpected;
    } else if (je == json_tokener_continue) {
        je = json_tokener_error_parse_eof;
    }
    if (je != json_tokener_success) {
        int rc = ds_err_set(err, DS_EFORMAT, "'%s' is not JSON: %s at byte %zu",
                            path, json_tokener_error_desc(je),
                            json_tokener_get_parse_end(jt));

        json_object_put(o);
        json_tokener_free(jt);
        free(buf);
        return rc;
    }
    json_tokener_free(jt);
    free(buf);
    if (o == NULL) /* NULL out is a missing file */
        return ds_err_set(err, DS_EFORMAT,
                          "'%s' is not a dataset sidecar (null, not a JSON "
                          "object)",
                          path);
    *out = o;
    return 0;
}

/* The value of key in o; *present tells whether the key is there at all
 * (a null value is there, and returned as NULL). */
static struct json_object *
field(struct json_object *o, const char *key, bool *present)
{
    struct json_object *v = NULL;

    *present = json_object_object_get_ex(o, key, &v);
    return v;
}

static int
missing(const char *path, const char *key, struct ds_err *err)
{
    return ds_err_set(err, DS_EFORMAT, "'%s': no \"%s\" (a sidecar needs it)",
                      path, key);
}

static int
wrong_type(const char *path, const char *key, const char *want,
           struct ds_err *err)
{
    return ds_err_set(err, DS_EFORMAT, "'%s': \"%s\" is not %s", path, key,
                      want);
}

/* A string field into dst[0..cap); null or absent: "" (an error if
 * required). */
static int
get_string(struct json_object *o, const char *path, const char *key,
           bool required, char *dst, size_t cap, struct ds_err *err)
{
    bool present;
    struct json_object *v = field(o, key, &present);
    const char *s;
    size_t len;

    dst[0] = '\0';
    if (v == NULL)
        return required ? missing(path, key, err) : 0;
    if (!json_object_is_type(v, json_type_string))
        return wrong_type(path, key, "a string", err);
    s = json_object_get_string(v);
    len = (size_t)json_object_get_string_len(v);
    if (len >= cap || memchr(s, '\0', len) != NULL)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': \"%s\" is longer than %zu bytes or holds a "
                          "NUL",
                          path, key, cap - 1);
    memcpy(dst, s, len + 1);
    return 0;
}

/* An integer field >= 0; null or absent: -1 (an error if required). */
static int
get_count(struct json_object *o, const char *path, const char *key,
          bool required, int64_t *out, struct ds_err *err)
{
    bool present;
    struct json_object *v = field(o, key, &present);
    int64_t n;

    *out = -1;
    if (v == NULL)
        return required ? missing(path, key, err) : 0;
    if (!json_object_is_type(v, json_type_int))
        return wrong_type(path, key, "an integer", err);
    errno = 0;
    n = json_object_get_int64(v);
    /* json-c reads 2^63 and beyond (2^64 and beyond: as 2^64 - 1) as
     * 2^63 - 1 without a word: its unsigned value tells. */
    if (n < 0 || errno != 0 || json_object_get_uint64(v) > INT64_MAX)
        return wrong_type(path, key, "a count (0 to 2^63 - 1)", err);
    *out = n;
    return 0;
}

static int
get_u64(struct json_object *o, const char *path, const char *key, bool required,
        uint64_t *out, struct ds_err *err)
{
    int64_t v;
    int rc = get_count(o, path, key, required, &v, err);

    *out = v < 0 ? 0 : (uint64_t)v;
    return rc;
}

/* A boolean field; null or absent: -1 (an error if required). */
static int
get_bool(struct json_object *o, const char *path, const char *key,
         bool required, int *out, struct ds_err *err)
{
    bool present;
    struct json_object *v = field(o, key, &present);

    *out = -1;
    if (v == NULL)
        return required ? missing(path, key, err) : 0;
    if (!json_object_is_type(v, json_type_boolean))
        return wrong_type(path, key, "true or false", err);
    *out = json_object_get_boolean(v) ? 1 : 0;
    return 0;
}

static bool
is_sha256(const char *s)
{
    size_t i = 0;

    for (; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return i == 0 || i == 64;
}

static bool
is_tokenizer(const char *s)
{
    return strcmp(s, "ernie") == 0 || strcmp(s, "bert") == 0 ||
           strcmp(s, "wordpiece") == 0 || strcmp(s, "gpt2-bpe") == 0;
}

static enum ds_dtype
dtype_from_name(const char *s)
{
    for (int t = DS_DTYPE_UINT8; t <= DS_DTYPE_UINT64; t++)
        if (strcmp(ds_dtype_name((enum ds_dtype)t), s) == 0)
            return (enum ds_dtype)t;
    return (enum ds_dtype)0;
}

/* Every field of the sidecar o (from path) into m. */
static int
read_fields(struct json_object *o, const char *path, struct ds_meta *m,
            struct ds_err *err)
{
    char format[8], dtype[16], mrl[24];
    int64_t version;
    bool present;
    struct json_object *v;
    int rc = 0;

    if ((rc = get_count(o, path, MAGIC_KEY, true, &version, err)) < 0)
        return rc;
    if (version == 0 || version > DS_META_VERSION)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': sidecar version %" PRId64 " is not one this "
                          "erniekit reads (%d): it was written by another "
                          "version",
                          path, version, DS_META_VERSION);
    if ((rc = get_string(o, path, "tool", false, m->tool, sizeof(m->tool),
                         err)) < 0 ||
        (rc = get_string(o, path, "tool_version", false, m->tool_version,
                         sizeof(m->tool_version), err)) < 0 ||
        (rc = get_string(o, path, "created", false, m->created,
                         sizeof(m->created), err)) < 0 ||
        (rc = get_string(o, path, "format", true, format, sizeof(format),
                         err)) < 0 ||
        (rc = get_string(o, path, "dtype", true, dtype, sizeof(dtype), err)) <
            0 ||
        (rc = get_u64(o, path, "documents", true, &m->n_documents, err)) < 0 ||
        (rc = get_u64(o, path, "sentences", true, &m->n_sentences, err)) < 0 ||
        (rc = get_u64(o, path, "tokens", true, &m->n_tokens, err)) < 0 ||
        (rc = get_u64(o, path, "inputs", false, &m->n_inputs, err)) < 0 ||
        (rc = get_string(o, path, "tokenizer", true, m->tokenizer,
                         sizeof(m->tokenizer), err)) < 0 ||
        (rc = get_count(o, path, "vocab_size", true, &m->vocab_size, err)) <
            0 ||
        (rc = get_string(o, path, "vocab_sha256", true, m->vocab_sha256,
                         sizeof(m->vocab_sha256), err)) < 0 ||
        (rc = get_string(o, path, "merges_sha256", false, m->merges_sha256,
                         sizeof(m->merges_sha256), err)) < 0 ||
        (rc = get_bool(o, path, "lowercase", true, &m->lowercase, err)) < 0 ||
        (rc = get_bool(o, path, "whole_word_marks", true, &m->whole_word_marks,
                       err)) < 0 ||
        (rc = get_bool(o, path, "split_sentences", true, &m->split_sentences,
                       err)) < 0 ||
        (rc = get_bool(o, path, "append_eod", true, &m->append_eod, err)) < 0 ||
        (rc = get_bool(o, path, "keep_whitespace", true, &m->keep_whitespace,
                       err)) < 0 ||
        (rc = get_string(o, path, "vocab", false, m->vocab, sizeof(m->vocab),
                         err)) < 0 ||
        (rc = get_string(o, path, "sentence_splitter", false,
                         m->sentence_splitter, sizeof(m->sentence_splitter),
                         err)) < 0 ||
        (rc = get_string(o, path, "segmenter", false, m->segmenter,
                         sizeof(m->segmenter), err)) < 0 ||
        (rc = get_count(o, path, "max_word_length", false, &m->max_word_length,
                        err)) < 0)
        return rc;
    if (strcmp(format, "mmap") == 0)
        m->format = DS_FORMAT_MMAP;
    else if (strcmp(format, "npy") == 0)
        m->format = DS_FORMAT_NPY;
    else
        return wrong_type(path, "format", "\"mmap\" or \"npy\"", err);
    m->dtype = dtype_from_name(dtype);
    if (m->dtype == 0)
        return wrong_type(path, "dtype", "a numpy integer type", err);
    if (!is_tokenizer(m->tokenizer))
        return wrong_type(path, "tokenizer",
                          "\"ernie\", \"bert\", \"wordpiece\" or "
                          "\"gpt2-bpe\"",
                          err);
    if (!is_sha256(m->vocab_sha256) || m->vocab_sha256[0] == '\0')
        return wrong_type(path, "vocab_sha256", "64 lowercase hex digits", err);
    if (!is_sha256(m->merges_sha256))
        return wrong_type(path, "merges_sha256", "64 lowercase hex digits",
                          err);
    /* max_repeated_len: a count, or "none" (runs kept). */
    v = field(o, "max_repeated_len", &present);
    if (v != NULL && json_object_is_type(v, json_type_string)) {
        if ((rc = get_string(o, path, "max_repeated_len", false, mrl,
                             sizeof(mrl), err)) < 0)
            return rc;
        if (strcmp(mrl, "none") != 0)
            return wrong_type(path, "max_repeated_len", "a count or \"none\"",
                              err);
        m->max_repeated_len = RUNS_KEPT;
    } else if ((rc = get_count(o, path, "max_repeated_len", false,
                               &m->max_repeated_len, err)) < 0) {
        return rc;
    }
    return 0;
}

int
ds_meta_read(const char *prefix, struct ds_meta *m, struct ds_err *err)
{
    char *path = ds_meta_path(prefix);
    struct json_object *o = NULL;
    int rc;

    ds_meta_init(m, NULL, NULL);
    if (path == NULL)
        return ds_err_nomem(err);
    rc = parse_file(path, &o, err);
    if (rc == 0 && o == NULL) {
        free(path);
        return 0;
    }
    if (rc == 0 && !json_object_is_type(o, json_type_object))
        rc = ds_err_set(err, DS_EFORMAT,
                        "'%s' is not a dataset sidecar (not a JSON object)",
                        path);
    else if (rc == 0 && !json_object_object_get_ex(o, MAGIC_KEY, NULL))
        rc = ds_err_set(
            err, DS_EFORMAT,
            "'%s' is not a dataset sidecar (no \"" MAGIC_KEY "\" key)", path);
    if (rc == 0)
        rc = read_fields(o, path, m, err);
    json_object_put(o);
    free(path);
    if (rc < 0) {
        ds_meta_init(m, NULL, NULL);
        return rc;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

int
ds_meta_check_name(const char *prefix, struct ds_err *err)
{
    char *path = ds_meta_path(prefix);
    struct json_object *o = NULL;
    struct ds_err e;
    int rc;

    if (path == NULL)
        return ds_err_nomem(err);
    rc = parse_file(path, &o, &e);
    if (rc == DS_EIO || rc == DS_ENOMEM) {
        if (err != NULL)
            *err = e;
    } else if (rc == 0 && o == NULL) {
        rc = 0; /* no such file */
    } else if (rc == 0 && json_object_is_type(o, json_type_object) &&
               json_object_object_get_ex(o, MAGIC_KEY, NULL)) {
        rc = 0; /* an old sidecar */
    } else {
        rc = ds_err_set(err, DS_EINVAL,
                        "'%s' exists and is not a dataset sidecar; the "
                        "dataset's record would replace it: choose another "
                        "output prefix",
                        path);
    }
    json_object_put(o);
    free(path);
    return rc;
}

int
ds_meta_remove(const char *prefix, struct ds_err *err)
{
    char *path = ds_meta_path(prefix);
    int rc = 0;

    if (path == NULL)
        return ds_err_nomem(err);
    if (unlink(path) < 0 && errno != ENOENT)
        rc = ds_err_set(err, DS_EIO, "cannot remove '%s': %s", path,
                        strerror(errno));
    free(path);
    return rc;
}

static int
add(struct json_object *o, const char *key, struct json_object *v)
{
    return json_object_object_add(o, key, v);
}

static struct json_object *
string_or_null(const char *s)
{
    return s[0] ? json_object_new_string(s) : NULL;
}

static struct json_object *
bool_or_null(int v)
{
    return v < 0 ? NULL : json_object_new_boolean(v);
}

static struct json_object *
count_or_null(int64_t v)
{
    return v < 0 ? NULL : json_object_new_int64(v);
}

/* m as a JSON object, keys in the order of ds-meta(5). */
static struct json_object *
to_json(const struct ds_meta *m)
{
    struct json_object *o = json_object_new_object();

    if (o == NULL)
        return NULL;
    if (add(o, MAGIC_KEY, json_object_new_int(DS_META_VERSION)) ||
        add(o, "tool", string_or_null(m->tool)) ||
        add(o, "tool_version", string_or_null(m->tool_version)) ||
        add(o, "created", string_or_null(m->created)) ||
        add(o, "format",
            json_object_new_string(m->format == DS_FORMAT_NPY ? "npy"
                                                              : "mmap")) ||
        add(o, "dtype", json_object_new_string(ds_dtype_name(m->dtype))) ||
        add(o, "documents", json_object_new_uint64(m->n_documents)) ||
        add(o, "sentences", json_object_new_uint64(m->n_sentences)) ||
        add(o, "tokens", json_object_new_uint64(m->n_tokens)) ||
        (m->n_inputs > 0 &&
         add(o, "inputs", json_object_new_uint64(m->n_inputs))) ||
        add(o, "tokenizer", string_or_null(m->tokenizer)) ||
        add(o, "vocab_size", count_or_null(m->vocab_size)) ||
        add(o, "vocab_sha256", string_or_null(m->vocab_sha256)) ||
        add(o, "merges_sha256", string_or_null(m->merges_sha256)) ||
        add(o, "lowercase", bool_or_null(m->lowercase)) ||
        add(o, "whole_word_marks", bool_or_null(m->whole_word_marks)) ||
        add(o, "split_sentences", bool_or_null(m->split_sentences)) ||
        add(o, "append_eod", bool_or_null(m->append_eod)) ||
        add(o, "keep_whitespace", bool_or_null(m->keep_whitespace)) ||
        add(o, "vocab", string_or_null(m->vocab)) ||
        add(o, "sentence_splitter", string_or_null(m->sentence_splitter)) ||
        add(o, "segmenter", string_or_null(m->segmenter)) ||
        add(o, "max_word_length", count_or_null(m->max_word_length)) ||
        add(o, "max_repeated_len",
            m->max_repeated_len == RUNS_KEPT
                ? json_object_new_string("none")
                : count_or_null(m->max_repeated_len))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

int
ds_meta_write(const char *prefix, const struct ds_meta *m, struct ds_err *err)
{
    struct json_object *o;
    const char *text;
    char *path, *tmp;
    FILE *f;
    int rc;

    if ((rc = ds_meta_check_name(prefix, err)) < 0)
        return rc;
    if ((o = to_json(m)) == NULL)
        return ds_err_nomem(err);
    text = json_object_to_json_string_ext(
        o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
               JSON_C_TO_STRING_NOSLASHESCAPE);
    path = ds_meta_path(prefix);
    tmp = path ? ds_tmp_name(path) : NULL;
    if (text == NULL || tmp == NULL) {
        json_object_put(o);
        free(path);
        return ds_err_nomem(err);
    }
    f = fopen(tmp, "w");
    if (f == NULL) {
        rc = ds_err_set(err, DS_EIO, "cannot create '%s': %s", path,
                        strerror(errno));
        goto out;
    }
    if (fprintf(f, "%s\n", text) < 0 || fflush(f) != 0 ||
        fsync(fileno(f)) < 0) {
        rc = ds_err_set(err, DS_EIO, "cannot write '%s': %s", path,
                        strerror(errno));
        fclose(f);
        unlink(tmp);
        goto out;
    }
    if (fclose(f) != 0 || rename(tmp, path) < 0) {
        rc = ds_err_set(err, DS_EIO, "cannot write '%s': %s", path,
                        strerror(errno));
        unlink(tmp);
        goto out;
    }
    ds_fsync_dir(path);
    rc = 0;
out:
    json_object_put(o);
    free(path);
    free(tmp);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Checking                                                                  */

/* The size of an .npy file's header (magic, version, length, dict), from
 * its first bytes, or 0 if they are not an NPY header. */
static uint64_t
npy_data_offset(const char *path)
{
    unsigned char h[12];
    ssize_t k;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return 0;
    k = pread(fd, h, sizeof(h), 0);
    close(fd);
    if (k != (ssize_t)sizeof(h) || memcmp(h, "\x93NUMPY", 6) != 0)
        return 0;
    if (h[6] == 1)
        return 10 + (uint64_t)ds_le16(h + 8);
    return 12 + (uint64_t)ds_le32(h + 8);
}

static bool
is_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int
ds_meta_stale(const char *prefix, const struct ds_meta *m, struct ds_err *err)
{
    char *npy = ds_path_cat(prefix, "_ids.npy", NULL);
    char *npz = ds_path_cat(prefix, "_idx.npz", NULL);
    char *bin = ds_path_cat(prefix, ".bin", NULL);
    size_t itemsize = ds_dtype_size(m->dtype);
    const char *tokens;
    uint64_t off = 0, want;
    struct stat st;
    int rc;

    if (npy == NULL || npz == NULL || bin == NULL) {
        rc = ds_err_nomem(err);
        goto out;
    }
    tokens = is_file(npy) && is_file(npz) ? npy : bin;
    if (stat(tokens, &st) < 0) {
        rc = ds_err_set(err, DS_EIO, "cannot open '%s': %s", tokens,
                        strerror(errno));
        goto out;
    }
    if (tokens == npy)
        off = npy_data_offset(npy);
    want = off + m->n_tokens * itemsize;
    if ((uint64_t)st.st_size == want && (tokens == bin || off > 0)) {
        rc = 0;
    } else {
        rc = 1;
        ds_err_set(err, 0,
                   "'%s.json' records %" PRIu64 " %s tokens, which '%s' "
                   "does not hold (%lld bytes): it describes earlier files",
                   prefix, m->n_tokens, ds_dtype_name(m->dtype), tokens,
                   (long long)st.st_size);
    }
out:
    free(npy);
    free(npz);
    free(bin);
    return rc;
}

static bool
is_wordpiece(const char *t)
{
    return strcmp(t, "gpt2-bpe") != 0;
}

static const char *
bool_name(int v)
{
    return v ? "true" : "false";
}

int
ds_meta_compare(const struct ds_meta *a, const struct ds_meta *b,
                unsigned fields, char *diff, size_t len)
{
    static const struct {
        const char *name;
        size_t off;
    } opts[] = {
        { "lowercase", offsetof(struct ds_meta, lowercase) },
        { "whole_word_marks", offsetof(struct ds_meta, whole_word_marks) },
        { "split_sentences", offsetof(struct ds_meta, split_sentences) },
        { "append_eod", offsetof(struct ds_meta, append_eod) },
        { "keep_whitespace", offsetof(struct ds_meta, keep_whitespace) },
    };

    if ((fields & DS_META_TOKENIZER) && a->tokenizer[0] && b->tokenizer[0] &&
        is_wordpiece(a->tokenizer) != is_wordpiece(b->tokenizer)) {
        snprintf(diff, len, "tokenizer: %s vs %s", a->tokenizer, b->tokenizer);
        return 1;
    }
    if (fields & DS_META_VOCAB) {
        if (a->vocab_size >= 0 && b->vocab_size >= 0 &&
            a->vocab_size != b->vocab_size) {
            snprintf(diff, len, "vocab_size: %" PRId64 " vs %" PRId64,
                     a->vocab_size, b->vocab_size);
            return 1;
        }
        if (a->vocab_sha256[0] && b->vocab_sha256[0] &&
            strcmp(a->vocab_sha256, b->vocab_sha256) != 0) {
            snprintf(diff, len, "vocab_sha256: %s vs %s", a->vocab_sha256,
                     b->vocab_sha256);
            return 1;
        }
        if (a->merges_sha256[0] && b->merges_sha256[0] &&
            strcmp(a->merges_sha256, b->merges_sha256) != 0) {
            snprintf(diff, len, "merges_sha256: %s vs %s", a->merges_sha256,
                     b->merges_sha256);
            return 1;
        }
    }
    for (size_t i = 0; (fields & DS_META_OPTIONS) && i < 5; i++) {
        int va, vb;

        memcpy(&va, (const char *)a + opts[i].off, sizeof(va));
        memcpy(&vb, (const char *)b + opts[i].off, sizeof(vb));
        if (va >= 0 && vb >= 0 && va != vb) {
            snprintf(diff, len, "%s: %s vs %s", opts[i].name, bool_name(va),
                     bool_name(vb));
            return 1;
        }
    }
    return 0;
}

void
ds_meta_combine(struct ds_meta *acc, const struct ds_meta *in)
{
    if (strcmp(acc->tokenizer, in->tokenizer) != 0)
        copy_str(acc->tokenizer, sizeof(acc->tokenizer),
                 is_wordpiece(acc->tokenizer) ? "wordpiece" : "");
    if (strcmp(acc->vocab, in->vocab) != 0)
        acc->vocab[0] = '\0';
    if (strcmp(acc->sentence_splitter, in->sentence_splitter) != 0)
        acc->sentence_splitter[0] = '\0';
    if (strcmp(acc->segmenter, in->segmenter) != 0)
        acc->segmenter[0] = '\0';
    if (acc->max_word_length != in->max_word_length)
        acc->max_word_length = -1;
    if (acc->max_repeated_len != in->max_repeated_len)
        acc->max_repeated_len = -1;
}

/* ------------------------------------------------------------------------ */
/* Checksums                                                                 */

int
ds_meta_file_sha256(const char *path, char hex[DS_META_HEX], struct ds_err *err)
{
    static const char digits[] = "0123456789abcdef";
    struct sha256_ctx ctx;
    uint8_t digest[SHA256_DIGEST_SIZE];
    unsigned char *buf;
    ssize_t k;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    hex[0] = '\0';
    if (fd < 0)
        return ds_err_set(err, DS_EIO, "cannot open '%s': %s", path,
                          strerror(errno));
    buf = (unsigned char *)malloc(1u << 16);
    if (buf == NULL) {
        close(fd);
        return ds_err_nomem(err);
    }
    sha256_init(&ctx);
    while ((k = read_some(fd, buf, 1u << 16, path, err)) > 0)
        sha256_update(&ctx, (size_t)k, buf);
    if (k < 0) {
        close(fd);
        free(buf);
        return (int)k;
    }
    close(fd);
    free(buf);
    sha256_digest(&ctx, sizeof(digest), digest);
    for (size_t i = 0; i < sizeof(digest); i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = '\0';
    return 0;
}

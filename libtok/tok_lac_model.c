/* SPDX-License-Identifier: MIT */
/*
 * tok_lac_model.c: the LAC model file (lac-model(5)): compiling it from
 * the LAC 2.1.2 package (Paddle's parameter files and LAC's dictionaries,
 * read as LAC's Python code reads them), and mapping it, with every size,
 * index and checksum of the parts in use checked before anything is read
 * through them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tok_lac_int.h"

#define MODEL_MAGIC   "EKLACMDL"
#define MODEL_VERSION 1u
#define HEADER_SIZE   128u
#define ENTRY_SIZE    64u
#define ALIGN         64u
#define MAX_SECTIONS  256u

enum sec_type { SEC_BYTES = 0, SEC_F32 = 1, SEC_U32 = 2, SEC_F64 = 3 };

static const char *const mode_names[2] = { "seg", "lac" };

/* ------------------------------------------------------------------------ */
/* Checksums                                                                 */

/* A 64-bit checksum of bytes: four lanes of (h ^ word) * odd, each a
 * bijection of h, so one changed byte always changes the result. */
static uint64_t
checksum(const void *p, size_t len)
{
    const unsigned char *s = p;
    uint64_t h[4] = { 0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL,
                      0x165667B19E3779F9ULL, 0x27D4EB2F165667C5ULL };
    const uint64_t P = 0x100000001B3ULL;
    size_t i = 0;

    for (; i + 32 <= len; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;

            memcpy(&w, s + i + 8 * k, 8);
            h[k] = (h[k] ^ w) * P;
        }
    for (; i < len; i++)
        h[0] = (h[0] ^ s[i]) * P;
    return h[0] ^ ((h[1] << 17) | (h[1] >> 47)) ^
           ((h[2] << 31) | (h[2] >> 33)) ^ ((h[3] << 47) | (h[3] >> 17)) ^
           (uint64_t)len;
}

static void
put_u32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static void
put_u64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static uint32_t
get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint64_t
get_u64(const unsigned char *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* ------------------------------------------------------------------------ */
/* Reading the package                                                       */

struct file {
    char *data;
    size_t len;
    char path[PATH_MAX];
};

static int
read_whole(struct file *f, const char *dir, const char *sub, const char *name,
           struct tok_err *err)
{
    FILE *fp;
    struct stat st;

    f->data = NULL;
    f->len = 0;
    if ((size_t)snprintf(f->path, sizeof(f->path), "%s/%s/%s", dir, sub,
                         name) >= sizeof(f->path))
        return tok_err_set(err, TOK_EINVAL, "LAC package path '%s' too long",
                           dir);
    if ((fp = fopen(f->path, "rb")) == NULL)
        return tok_err_set(err, TOK_EIO, "cannot open '%s': %s", f->path,
                           strerror(errno));
    if (fstat(fileno(fp), &st) < 0 || !S_ISREG(st.st_mode)) {
        fclose(fp);
        return tok_err_set(err, TOK_EIO, "'%s' is not a regular file", f->path);
    }
    f->len = (size_t)st.st_size;
    f->data = malloc(f->len + 1);
    if (f->data == NULL) {
        fclose(fp);
        return tok_err_set(err, TOK_ENOMEM, "'%s': out of memory", f->path);
    }
    if (fread(f->data, 1, f->len, fp) != f->len) {
        fclose(fp);
        free(f->data);
        f->data = NULL;
        return tok_err_set(err, TOK_EIO, "cannot read '%s'", f->path);
    }
    f->data[f->len] = '\0';
    fclose(fp);
    return 0;
}

/* Python's str.isspace() for one code point. */
static bool
py_isspace(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
           cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* The lines of a text file as Python's text mode gives them (universal
 * newlines: \n, \r\n and \r end a line), without their ends.  *at is the
 * read position; returns false at the end. */
static bool
next_line(const char *s, size_t len, size_t *at, const char **line, size_t *n)
{
    size_t i = *at;

    if (i >= len)
        return false;
    *line = s + i;
    while (i < len && s[i] != '\n' && s[i] != '\r')
        i++;
    *n = (size_t)(s + i - *line);
    if (i < len && s[i] == '\r' && i + 1 < len && s[i + 1] == '\n')
        i++;
    *at = i < len ? i + 1 : i;
    return true;
}

/* Python's str.strip(): [*a, *b) without white space at either end. */
static void
py_strip(const char **a, const char **b)
{
    uint32_t cp;
    size_t k;

    while (*a < *b && (k = tok_utf8_decode(*a, (size_t)(*b - *a), &cp)) > 0 &&
           py_isspace(cp))
        *a += k;
    while (*b > *a) {
        const char *q = *b - 1;

        while (q > *a && ((unsigned char)*q & 0xC0) == 0x80)
            q--;
        if (tok_utf8_decode(q, (size_t)(*b - q), &cp) != (size_t)(*b - q) ||
            !py_isspace(cp))
            break;
        *b = q;
    }
}

/* Python's int() of s[0..n): white space around, a sign, ASCII digits
 * with single underscores between them.  Other digits (which Python also
 * takes) are refused. */
static bool
py_int(const char *s, size_t n, int64_t *out)
{
    const char *a = s, *b = s + n;
    bool neg = false, digit = false;
    uint64_t v = 0;

    py_strip(&a, &b);
    if (a < b && (*a == '+' || *a == '-'))
        neg = *a++ == '-';
    if (a == b)
        return false;
    for (; a < b; a++) {
        if (*a == '_' && digit && a + 1 < b && a[1] >= '0' && a[1] <= '9')
            continue;
        if (*a < '0' || *a > '9')
            return false;
        if (v > (uint64_t)INT64_MAX / 10)
            return false;
        v = v * 10 + (uint64_t)(*a - '0');
        if (v > (uint64_t)INT64_MAX)
            return false;
        digit = true;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

/* Check that a dictionary file is UTF-8 (Python would stop on it). */
static int
check_utf8(const struct file *f, struct tok_err *err)
{
    size_t bad = tok_utf8_check(f->data, f->len);
    size_t line = 1;

    if (bad == f->len)
        return 0;
    for (size_t i = 0; i < bad; i++)
        line +=
            f->data[i] == '\n' ||
            (f->data[i] == '\r' && (i + 1 == f->len || f->data[i + 1] != '\n'));
    return tok_err_set(err, TOK_EFORMAT,
                       "'%s' line %zu: invalid UTF-8 at byte offset %zu",
                       f->path, line, bad);
}

/* A string -> integer map for compiling (word.dic, q2b.dic). */
struct smap {
    struct sent {
        const char *s;
        size_t len;
        int64_t v;
        const char *vs; /* q2b: the value string */
        size_t vlen;
    } * e;
    size_t mask, n;
};

static int
smap_init(struct smap *m, size_t expect)
{
    size_t cap = 64;

    while (cap < 2 * expect + 2)
        cap *= 2;
    m->e = calloc(cap, sizeof(*m->e));
    m->mask = cap - 1;
    m->n = 0;
    return m->e ? 0 : TOK_ENOMEM;
}

static struct sent *
smap_slot(const struct smap *m, const char *s, size_t len)
{
    size_t i = tok_lac_hash_bytes(s, len) & m->mask;

    while (m->e[i].s != NULL &&
           (m->e[i].len != len || memcmp(m->e[i].s, s, len) != 0))
        i = (i + 1) & m->mask;
    return &m->e[i];
}

static const struct sent *
smap_get(const struct smap *m, const char *s, size_t len)
{
    const struct sent *e = smap_slot(m, s, len);

    return e->s ? e : NULL;
}

/* Put (later puts of the same key win, as in a Python dict); the map must
 * have room (sized for the file's lines). */
static struct sent *
smap_put(struct smap *m, const char *s, size_t len)
{
    struct sent *e = smap_slot(m, s, len);

    if (e->s == NULL) {
        e->s = s;
        e->len = len;
        m->n++;
    }
    return e;
}

static size_t
count_lines(const struct file *f)
{
    size_t at = 0, n = 0, len;
    const char *line;

    while (next_line(f->data, f->len, &at, &line, &len))
        n++;
    return n;
}

/* reader.load_kv_dict(): lines "a<TAB>b" (exactly two fields, else
 * skipped), each calling fn(ctx, a, b). */
static int
each_kv(const struct file *f,
        int (*fn)(void *, const struct file *, size_t, const char *, size_t,
                  const char *, size_t, struct tok_err *),
        void *ctx, struct tok_err *err)
{
    size_t at = 0, len, lineno = 0;
    const char *line;
    int rc;

    while (next_line(f->data, f->len, &at, &line, &len)) {
        const char *tab = memchr(line, '\t', len);

        lineno++;
        if (tab == NULL ||
            memchr(tab + 1, '\t', len - (size_t)(tab + 1 - line)))
            continue;
        rc = fn(ctx, f, lineno, line, (size_t)(tab - line), tab + 1,
                len - (size_t)(tab + 1 - line), err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* word.dic: "id<TAB>word", read reversed: word -> int(id). */
static int
word_kv(void *ctx, const struct file *f, size_t lineno, const char *a,
        size_t alen, const char *b, size_t blen, struct tok_err *err)
{
    struct smap *m = ctx;
    int64_t id;

    if (!py_int(a, alen, &id))
        return tok_err_set(err, TOK_EFORMAT,
                           "'%s' line %zu: id '%.*s' is not a number", f->path,
                           lineno, (int)(alen > 40 ? 40 : alen), a);
    smap_put(m, b, blen)->v = id;
    return 0;
}

/* q2b.dic: "from<TAB>to". */
static int
q2b_kv(void *ctx, const struct file *f, size_t lineno, const char *a,
       size_t alen, const char *b, size_t blen, struct tok_err *err)
{
    struct sent *e = smap_put(ctx, a, alen);

    (void)f;
    (void)lineno;
    (void)err;
    e->vs = b;
    e->vlen = blen;
    return 0;
}

/* tag.dic: "id<TAB>tag", looked up by str(id): only a key that is an id's
 * decimal form ever matches. */
struct tags_ctx {
    const char **name;
    size_t *len;
    size_t L;
};

static int
tag_kv(void *ctx, const struct file *f, size_t lineno, const char *a,
       size_t alen, const char *b, size_t blen, struct tok_err *err)
{
    struct tags_ctx *t = ctx;
    size_t id = 0;

    (void)f;
    (void)lineno;
    (void)err;
    if (alen == 0 || alen > 9 || (a[0] == '0' && alen > 1))
        return 0;
    for (size_t k = 0; k < alen; k++) {
        if (a[k] < '0' || a[k] > '9')
            return 0;
        id = id * 10 + (size_t)(a[k] - '0');
    }
    if (id < t->L) {
        t->name[id] = b;
        t->len[id] = blen;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Paddle parameter files                                                    */

/* A LoDTensor as Paddle 1.x saves one: u32 version 0, u64 LoD levels (each
 * a u64 byte count and that many bytes), u32 tensor version 0, i32 size
 * of a TensorDesc protobuf (field 1: data type, 5 = FP32; field 2: dims,
 * varints, packed or not), then the data, little-endian. */
struct tensor {
    const float *data; /* into the file's bytes (copied when unaligned) */
    float *own;
    uint64_t dims[4];
    size_t rank;
    size_t n;
};

static bool
varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return false;
        unsigned char c = *(*p)++;

        *v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80))
            return true;
    }
    return false;
}

int
tok_lac_tensor_parse(const void *bytes, size_t len, const char *name,
                     uint64_t *dims, size_t *rank, const unsigned char **data,
                     size_t *n, struct tok_err *err)
{
    const unsigned char *p = bytes, *end = p + len, *desc_end;
    uint64_t levels, type = 0, count = 1;
    int32_t desc_len;

    *rank = 0;
    if (len < 4 + 8 || get_u32(p) != 0)
        return tok_err_set(err, TOK_EFORMAT,
                           "'%s': not a Paddle tensor (version)", name);
    levels = get_u64(p + 4);
    p += 12;
    for (uint64_t l = 0; l < levels; l++) {
        uint64_t sz;

        if ((size_t)(end - p) < 8)
            return tok_err_set(err, TOK_EFORMAT, "'%s': truncated LoD", name);
        sz = get_u64(p);
        p += 8;
        if (sz > (uint64_t)(end - p))
            return tok_err_set(err, TOK_EFORMAT, "'%s': truncated LoD", name);
        p += sz;
    }
    if ((size_t)(end - p) < 8 || get_u32(p) != 0)
        return tok_err_set(err, TOK_EFORMAT,
                           "'%s': truncated or unknown tensor version", name);
    desc_len = (int32_t)get_u32(p + 4);
    p += 8;
    if (desc_len < 0 || (size_t)desc_len > (size_t)(end - p))
        return tok_err_set(err, TOK_EFORMAT,
                           "'%s': tensor description of %ld bytes", name,
                           (long)desc_len);
    desc_end = p + desc_len;
    while (p < desc_end) {
        uint64_t key, v;

        if (!varint(&p, desc_end, &key))
            return tok_err_set(err, TOK_EFORMAT, "'%s': bad tensor description",
                               name);
        switch (key) {
        case (1 << 3) | 0: /* data_type */
            if (!varint(&p, desc_end, &type))
                return tok_err_set(err, TOK_EFORMAT,
                                   "'%s': bad tensor description", name);
            break;
        case (2 << 3) | 0: /* dims, one */
            if (!varint(&p, desc_end, &v) || *rank == 4)
                return tok_err_set(err, TOK_EFORMAT, "'%s': bad tensor dims",
                                   name);
            dims[(*rank)++] = v;
            break;
        case (2 << 3) | 2: { /* dims, packed */
            uint64_t sz;
            const unsigned char *q;

            if (!varint(&p, desc_end, &sz) || sz > (uint64_t)(desc_end - p))
                return tok_err_set(err, TOK_EFORMAT, "'%s': bad tensor dims",
                                   name);
            q = p + sz;
            while (p < q) {
                if (!varint(&p, q, &v) || *rank == 4)
                    return tok_err_set(err, TOK_EFORMAT,
                                       "'%s': bad tensor dims", name);
                dims[(*rank)++] = v;
            }
            break;
        }
        default: { /* another field: skip it */
            uint64_t sz;

            if ((key & 7) == 0) {
                if (!varint(&p, desc_end, &sz))
                    return tok_err_set(err, TOK_EFORMAT,
                                       "'%s': bad tensor description", name);
            } else if ((key & 7) == 2) {
                if (!varint(&p, desc_end, &sz) || sz > (uint64_t)(desc_end - p))
                    return tok_err_set(err, TOK_EFORMAT,
                                       "'%s': bad tensor description", name);
                p += sz;
            } else if ((key & 7) == 5 && desc_end - p >= 4) {
                p += 4;
            } else if ((key & 7) == 1 && desc_end - p >= 8) {
                p += 8;
            } else {
                return tok_err_set(err, TOK_EFORMAT,
                                   "'%s': bad tensor description", name);
            }
        }
        }
    }
    if (type != 5)
        return tok_err_set(err, TOK_EFORMAT,
                           "'%s': data type %llu, not FP32 (5)", name,
                           (unsigned long long)type);
    if (*rank == 0)
        return tok_err_set(err, TOK_EFORMAT, "'%s': no dims", name);
    for (size_t k = 0; k < *rank; k++) {
        if (dims[k] == 0 || dims[k] > ((uint64_t)1 << 40) ||
            count > ((uint64_t)1 << 40) / dims[k])
            return tok_err_set(err, TOK_EFORMAT, "'%s': bad dims", name);
        count *= dims[k];
    }
    if ((uint64_t)(end - p) != count * 4)
        return tok_err_set(err, TOK_EFORMAT,
                           "'%s': %zu bytes of data for %llu floats", name,
                           (size_t)(end - p), (unsigned long long)count);
    *data = p;
    *n = (size_t)count;
    return 0;
}

static int
read_tensor(struct tensor *t, const char *dir, const char *mode,
            const char *name, struct tok_err *err)
{
    struct file f;
    const unsigned char *data;
    int rc;

    memset(t, 0, sizeof(*t));
    if ((rc = read_whole(&f, dir, mode, name, err)) < 0)
        return rc;
    rc = tok_lac_tensor_parse(f.data, f.len, f.path, t->dims, &t->rank, &data,
                              &t->n, err);
    if (rc == 0) {
        /* Little-endian floats, copied out (and so aligned). */
        if ((t->own = malloc(t->n * sizeof(float) + 1)) == NULL)
            rc = tok_err_set(err, TOK_ENOMEM, "'%s': out of memory", f.path);
        else
            for (size_t k = 0; k < t->n; k++) {
                uint32_t bits = get_u32(data + 4 * k);

                memcpy(&t->own[k], &bits, 4);
            }
        t->data = t->own;
    }
    free(f.data);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

struct section {
    char name[40];
    uint32_t type, rank;
    uint64_t dims[2];
    const void *data;
    void *own; /* freed after writing */
    uint64_t size;
};

struct writer {
    struct section s[MAX_SECTIONS];
    size_t n;
};

static int
add_section(struct writer *w, const char *name, uint32_t type, uint64_t d0,
            uint64_t d1, const void *data, void *own, struct tok_err *err)
{
    static const uint64_t elem[] = { 1, 4, 4, 8 };
    struct section *s;

    if (w->n == MAX_SECTIONS) {
        free(own);
        return tok_err_set(err, TOK_ERANGE, "too many model sections");
    }
    s = &w->s[w->n++];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->type = type;
    s->rank = d1 ? 2 : 1;
    s->dims[0] = d0;
    s->dims[1] = d1;
    s->data = data;
    s->own = own;
    s->size = d0 * (d1 ? d1 : 1) * elem[type];
    return 0;
}

static void
writer_release(struct writer *w)
{
    for (size_t k = 0; k < w->n; k++)
        free(w->s[k].own);
    w->n = 0;
}

static uint64_t
align_up(uint64_t v)
{
    return (v + ALIGN - 1) / ALIGN * ALIGN;
}

static int
write_model(struct writer *w, const char *out_path, struct tok_err *err)
{
    static const unsigned char zeros[ALIGN];
    unsigned char head[HEADER_SIZE], *table;
    uint64_t off, table_off = align_up(HEADER_SIZE);
    size_t tmp_len = strlen(out_path) + 32;
    char *tmp = malloc(tmp_len);
    FILE *fp;
    int rc = 0;

    table = calloc(w->n ? w->n : 1, ENTRY_SIZE);
    if (tmp == NULL || table == NULL) {
        free(tmp);
        free(table);
        return tok_err_set(err, TOK_ENOMEM, "out of memory");
    }
    snprintf(tmp, tmp_len, "%s.tmp.%ld", out_path, (long)getpid());
    off = align_up(table_off + w->n * ENTRY_SIZE);
    for (size_t k = 0; k < w->n; k++) {
        const struct section *s = &w->s[k];
        unsigned char *e = table + k * ENTRY_SIZE;

        memcpy(e, s->name, 16);
        put_u32(e + 16, s->type);
        put_u32(e + 20, s->rank);
        put_u64(e + 24, s->dims[0]);
        put_u64(e + 32, s->dims[1]);
        put_u64(e + 40, off);
        put_u64(e + 48, s->size);
        put_u64(e + 56, checksum(s->data, (size_t)s->size));
        off = align_up(off + s->size);
    }
    memset(head, 0, sizeof(head));
    memcpy(head, MODEL_MAGIC, 8);
    put_u32(head + 8, MODEL_VERSION);
    put_u32(head + 12, (uint32_t)w->n);
    put_u64(head + 16, off);
    put_u64(head + 24, table_off);
    put_u64(head + 32, checksum(table, w->n * ENTRY_SIZE));
    put_u64(head + 40, checksum(head, 40));
    if ((fp = fopen(tmp, "wb")) == NULL) {
        rc = tok_err_set(err, TOK_EIO, "cannot create '%s': %s", tmp,
                         strerror(errno));
        goto out;
    }
    fwrite(head, 1, HEADER_SIZE, fp);
    fwrite(zeros, 1, (size_t)(table_off - HEADER_SIZE), fp);
    fwrite(table, 1, w->n * ENTRY_SIZE, fp);
    off = table_off + w->n * ENTRY_SIZE;
    for (size_t k = 0; k < w->n; k++) {
        uint64_t to = align_up(off);

        fwrite(zeros, 1, (size_t)(to - off), fp);
        fwrite(w->s[k].data, 1, (size_t)w->s[k].size, fp);
        off = to + w->s[k].size;
    }
    fwrite(zeros, 1, (size_t)(align_up(off) - off), fp);
    if (ferror(fp) | (fclose(fp) != 0)) {
        remove(tmp);
        rc = tok_err_set(err, TOK_EIO, "cannot write '%s'", tmp);
        goto out;
    }
    if (rename(tmp, out_path) < 0) {
        remove(tmp);
        rc = tok_err_set(err, TOK_EIO, "cannot rename '%s' to '%s': %s", tmp,
                         out_path, strerror(errno));
    }
out:
    free(tmp);
    free(table);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Compiling one network                                                     */

struct compile {
    const char *dir;
    const char *mode; /* "seg_model" or "lac_model" */
    const char *tag;  /* "seg" or "lac" */
    struct writer *w;
    struct tok_err *err;
    struct file word_dic, tag_dic, q2b_dic, seg_dic;
    struct smap words, q2b;
    struct tensor t[32]; /* every parameter of a network (20) */
    size_t n_t;
};

static int
add_floats(struct compile *c, const char *part, const float *data, void *own,
           uint64_t d0, uint64_t d1)
{
    char name[40];

    snprintf(name, sizeof(name), "%s.%s", c->tag, part);
    return add_section(c->w, name, SEC_F32, d0, d1, data, own, c->err);
}

static int
add_raw(struct compile *c, const char *part, uint32_t type, const void *data,
        void *own, uint64_t d0, uint64_t d1)
{
    char name[40];

    snprintf(name, sizeof(name), "%s.%s", c->tag, part);
    return add_section(c->w, name, type, d0, d1, data, own, c->err);
}

/* Read parameter `name` and check its shape is d0 x d1 (d1 0: a vector,
 * which Paddle may store as 1 x d0). */
static int
param(struct compile *c, const char *name, uint64_t d0, uint64_t d1,
      struct tensor **out)
{
    struct tensor *t = &c->t[c->n_t];
    char sub[PATH_MAX];
    int rc;
    bool ok;

    snprintf(sub, sizeof(sub), "%s/model", c->mode);
    if ((rc = read_tensor(t, c->dir, sub, name, c->err)) < 0)
        return rc;
    c->n_t++;
    if (d1 == 0)
        ok = (t->rank == 1 && t->dims[0] == d0) ||
             (t->rank == 2 && t->dims[0] == 1 && t->dims[1] == d0);
    else
        ok = t->rank == 2 && t->dims[0] == d0 && t->dims[1] == d1;
    if (!ok)
        return tok_err_set(c->err, TOK_EFORMAT,
                           "'%s/%s/%s': shape [%llu, %llu], expected "
                           "[%llu, %llu]",
                           c->dir, sub, name, (unsigned long long)t->dims[0],
                           (unsigned long long)(t->rank > 1 ? t->dims[1] : 0),
                           (unsigned long long)d0, (unsigned long long)d1);
    *out = t;
    return 0;
}

/* The id of the string s[0..len) by word.dic after q2b, as LAC's
 * word_to_ids(): q2b.get(s, s), then word2id.get(that, OOV). */
static uint32_t
lookup_id(const struct compile *c, const char *s, size_t len, uint32_t oov)
{
    const struct sent *q = smap_get(&c->q2b, s, len), *w;

    if (q != NULL) {
        s = q->vs;
        len = q->vlen;
    }
    w = smap_get(&c->words, s, len);
    return w ? (uint32_t)w->v : oov;
}

static size_t
n_code_points(const char *s, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* The code point table of the network: every code point that is a key of
 * q2b.dic or a one-character word of word.dic gets lookup_id(). */
static int
char_table(struct compile *c, uint32_t oov)
{
    uint32_t *page = calloc(TOK_LAC_N_PAGES, sizeof(*page));
    uint32_t *ids = NULL;
    size_t n_pages = 1;
    int rc;

    if (page == NULL)
        return tok_err_set(c->err, TOK_ENOMEM, "out of memory");
    /* Which pages have such a code point. */
    for (int pass = 0; pass < 2; pass++) {
        const struct smap *m = pass ? &c->q2b : &c->words;

        for (size_t i = 0; i <= m->mask; i++) {
            uint32_t cp;
            const struct sent *e = &m->e[i];

            if (e->s == NULL || tok_utf8_decode(e->s, e->len, &cp) != e->len ||
                e->len == 0)
                continue;
            if (page[cp >> 8] == 0)
                page[cp >> 8] = (uint32_t)n_pages++;
        }
    }
    ids = malloc(n_pages * 256 * sizeof(*ids));
    if (ids == NULL) {
        free(page);
        return tok_err_set(c->err, TOK_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < n_pages * 256; k++)
        ids[k] = oov;
    for (uint32_t p = 0; p < TOK_LAC_N_PAGES; p++) {
        if (page[p] == 0)
            continue;
        for (uint32_t lo = 0; lo < 256; lo++) {
            uint32_t cp = p << 8 | lo;
            char u[4];
            size_t n = tok_utf8_encode(cp, u);

            if (n > 0)
                ids[page[p] * 256 + lo] = lookup_id(c, u, n, oov);
        }
    }
    if ((rc = add_raw(c, "cpage", SEC_U32, page, page, TOK_LAC_N_PAGES, 0)) <
        0) {
        free(ids);
        return rc;
    }
    return add_raw(c, "cids", SEC_U32, ids, ids, n_pages, 256);
}

/* word.dic's words of two characters or more, by their bytes, with
 * lookup_id() (LAC's text_to_ids(): a cut token found in word.dic). */
static int
words_table(struct compile *c, uint32_t oov, uint32_t V)
{
    size_t slots = 64, n = 0, pool_len = 0, at = 0, max_probe = 1;
    uint32_t *t;
    char *pool;

    for (size_t i = 0; i <= c->words.mask; i++) {
        const struct sent *e = &c->words.e[i];

        if (e->s && n_code_points(e->s, e->len) >= 2) {
            n++;
            pool_len += e->len;
        }
    }
    while (slots < 2 * n + 2)
        slots *= 2;
    if (pool_len > UINT32_MAX)
        return tok_err_set(c->err, TOK_ERANGE, "word.dic too large");
    t = calloc(slots * 4, sizeof(*t));
    pool = malloc(pool_len + 1);
    if (t == NULL || pool == NULL) {
        free(t);
        free(pool);
        return tok_err_set(c->err, TOK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i <= c->words.mask; i++) {
        const struct sent *e = &c->words.e[i];
        uint32_t h;
        size_t k, probes = 1;

        if (!e->s || n_code_points(e->s, e->len) < 2)
            continue;
        h = tok_lac_hash_bytes(e->s, e->len);
        for (k = h & (slots - 1); t[4 * k] != 0; k = (k + 1) & (slots - 1))
            probes++;
        if (probes > max_probe)
            max_probe = probes;
        t[4 * k] = h;
        t[4 * k + 1] = (uint32_t)at;
        t[4 * k + 2] = (uint32_t)e->len;
        t[4 * k + 3] = lookup_id(c, e->s, e->len, oov);
        if (t[4 * k + 3] >= V) {
            free(t);
            free(pool);
            return tok_err_set(c->err, TOK_EFORMAT,
                               "'%s': id of '%.*s' beyond the embedding",
                               c->word_dic.path, (int)e->len, e->s);
        }
        memcpy(pool + at, e->s, e->len);
        at += e->len;
    }
    {
        uint32_t *probe = malloc(sizeof(*probe));
        int rc;

        if (probe == NULL) {
            free(t);
            free(pool);
            return tok_err_set(c->err, TOK_ENOMEM, "out of memory");
        }
        *probe = (uint32_t)max_probe;
        if ((rc = add_raw(c, "words", SEC_U32, t, t, slots, 4)) < 0 ||
            (rc = add_raw(c, "wpool", SEC_BYTES, pool, pool, pool_len, 0)) <
                0) {
            free(probe);
            return rc;
        }
        return add_raw(c, "wprobe", SEC_U32, probe, probe, 1, 0);
    }
}

/* segment.load_seg_dict(): small_seg.dic, "word count" a line (split on
 * one space, exactly two fields), the words into a trie, log(total). */
static int
seg_dict(struct compile *c)
{
    struct tok_lac_trie trie;
    size_t at = 0, len, lineno = 0, max_len = 1;
    int64_t total = 0;
    const char *line;
    uint32_t *cps = NULL;
    size_t cps_cap = 0;
    double *logs;
    int rc;

    if ((rc = tok_lac_trie_init(&trie)) < 0)
        return tok_err_set(c->err, rc, "out of memory");
    while (next_line(c->seg_dic.data, c->seg_dic.len, &at, &line, &len)) {
        const char *a = line, *b = line + len, *sp;
        int64_t count;
        size_t n = 0;
        uint32_t node;

        lineno++;
        py_strip(&a, &b);
        sp = memchr(a, ' ', (size_t)(b - a));
        if (sp == NULL || sp == a ||
            memchr(sp + 1, ' ', (size_t)(b - sp - 1)) != NULL) {
            rc = tok_err_set(c->err, TOK_EFORMAT,
                             "'%s' line %zu: not \"word count\" (LAC "
                             "cannot load it either)",
                             c->seg_dic.path, lineno);
            goto out;
        }
        if (!py_int(sp + 1, (size_t)(b - sp - 1), &count) ||
            (count > 0 && total > INT64_MAX - count) ||
            (count < 0 && total < INT64_MIN - count)) {
            rc = tok_err_set(c->err, TOK_EFORMAT,
                             "'%s' line %zu: count is not a number",
                             c->seg_dic.path, lineno);
            goto out;
        }
        total += count;
        if ((size_t)(sp - a) > cps_cap) {
            uint32_t *p = realloc(cps, (size_t)(sp - a) * sizeof(*p));

            if (p == NULL) {
                rc = tok_err_set(c->err, TOK_ENOMEM, "out of memory");
                goto out;
            }
            cps = p;
            cps_cap = (size_t)(sp - a);
        }
        for (const char *q = a; q < sp;)
            q += tok_utf8_decode(q, (size_t)(sp - q), &cps[n++]);
        if (n > max_len)
            max_len = n;
        if (n > TOK_LAC_MAX_WORD) {
            rc = tok_err_set(c->err, TOK_EFORMAT,
                             "'%s' line %zu: a word of %zu characters "
                             "(at most %d)",
                             c->seg_dic.path, lineno, n, TOK_LAC_MAX_WORD);
            goto out;
        }
        if ((rc = tok_lac_trie_insert(&trie, cps, n, &node)) < 0) {
            rc = tok_err_set(c->err, rc, "'%s': trie too large",
                             c->seg_dic.path);
            goto out;
        }
    }
    if (total <= 0) {
        rc = tok_err_set(c->err, TOK_EFORMAT,
                         "'%s': total count %lld (LAC takes its log)",
                         c->seg_dic.path, (long long)total);
        goto out;
    }
    if ((logs = malloc((max_len + 1) * sizeof(*logs))) == NULL) {
        rc = tok_err_set(c->err, TOK_ENOMEM, "out of memory");
        goto out;
    }
    logs[0] = log((double)total);
    for (size_t k = 1; k <= max_len; k++)
        logs[k] = log((double)k);
    if ((rc = add_raw(c, "slogs", SEC_F64, logs, logs, max_len + 1, 0)) < 0)
        goto out;
    {
        uint32_t *meta = malloc(2 * sizeof(*meta));

        if (meta == NULL) {
            rc = tok_err_set(c->err, TOK_ENOMEM, "out of memory");
            goto out;
        }
        meta[0] = (uint32_t)trie.max_probe;
        meta[1] = (uint32_t)trie.n_nodes;
        if ((rc = add_raw(c, "strie", SEC_U32, meta, meta, 2, 0)) < 0)
            goto out;
    }
    if ((rc = add_raw(c, "skeys", SEC_BYTES, trie.keys, trie.keys,
                      (trie.mask + 1) * 8, 0)) < 0) {
        trie.keys = NULL;
        goto out;
    }
    trie.keys = NULL;
    rc = add_raw(c, "svals", SEC_U32, trie.vals, trie.vals, trie.mask + 1, 0);
    trie.vals = NULL;
out:
    free(cps);
    tok_lac_trie_release(&trie);
    return rc;
}

/* The seg network's first projections for every id: fc_k(emb[id]) plus
 * gru_k's bias, k = 0 (forward) then 1, summed in double. */
static float *
proj_table(const struct tensor *emb, const struct tensor *const *fc_w,
           const struct tensor *const *fc_b, const struct tensor *const *gb,
           size_t V, size_t E, size_t D)
{
    float *t = malloc(V * 6 * D * sizeof(*t));
    double *acc = malloc(3 * D * sizeof(*acc));

    if (t == NULL || acc == NULL) {
        free(t);
        free(acc);
        return NULL;
    }
    for (size_t id = 0; id < V; id++) {
        const float *x = emb->data + id * E;

        for (int d = 0; d < 2; d++) {
            for (size_t j = 0; j < 3 * D; j++)
                acc[j] = 0.0;
            for (size_t k = 0; k < E; k++) {
                const float *w = fc_w[d]->data + k * 3 * D;

                for (size_t j = 0; j < 3 * D; j++)
                    acc[j] += (double)x[k] * (double)w[j];
            }
            for (size_t j = 0; j < 3 * D; j++)
                t[(id * 2 + (size_t)d) * 3 * D + j] =
                    (float)(acc[j] + (double)fc_b[d]->data[j] +
                            (double)gb[d]->data[j]);
        }
    }
    free(acc);
    return t;
}

static void
compile_release(struct compile *c)
{
    free(c->word_dic.data);
    free(c->tag_dic.data);
    free(c->q2b_dic.data);
    free(c->seg_dic.data);
    free(c->words.e);
    free(c->q2b.e);
    for (size_t k = 0; k < c->n_t; k++)
        free(c->t[k].own);
}

static int
compile_mode(struct compile *c, bool table, bool dict)
{
    struct tensor *emb, *w_in[4], *b_in[4], *w_gru[4], *b_gru[4], *w_out,
        *b_out, *crf;
    const struct sent *oov_e;
    uint32_t V, E, D, L, oov;
    char conf[PATH_MAX];
    int rc;

    snprintf(conf, sizeof(conf), "%s/conf", c->mode);
    if ((rc = read_whole(&c->word_dic, c->dir, conf, "word.dic", c->err)) < 0 ||
        (rc = read_whole(&c->tag_dic, c->dir, conf, "tag.dic", c->err)) < 0 ||
        (rc = read_whole(&c->q2b_dic, c->dir, conf, "q2b.dic", c->err)) < 0 ||
        (dict && (rc = read_whole(&c->seg_dic, c->dir, conf, "small_seg.dic",
                                  c->err)) < 0))
        return rc;
    if ((rc = check_utf8(&c->word_dic, c->err)) < 0 ||
        (rc = check_utf8(&c->tag_dic, c->err)) < 0 ||
        (rc = check_utf8(&c->q2b_dic, c->err)) < 0 ||
        (dict && (rc = check_utf8(&c->seg_dic, c->err)) < 0))
        return rc;
    if (smap_init(&c->words, count_lines(&c->word_dic)) < 0 ||
        smap_init(&c->q2b, count_lines(&c->q2b_dic)) < 0)
        return tok_err_set(c->err, TOK_ENOMEM, "out of memory");
    if ((rc = each_kv(&c->word_dic, word_kv, &c->words, c->err)) < 0 ||
        (rc = each_kv(&c->q2b_dic, q2b_kv, &c->q2b, c->err)) < 0)
        return rc;
    if ((oov_e = smap_get(&c->words, "OOV", 3)) == NULL)
        return tok_err_set(c->err, TOK_EFORMAT, "'%s': no OOV entry",
                           c->word_dic.path);

    /* The shapes, from the embedding and the first GRU. */
    {
        struct tensor *g0;
        char sub[PATH_MAX];

        snprintf(sub, sizeof(sub), "%s/model", c->mode);
        emb = &c->t[c->n_t];
        if ((rc = read_tensor(emb, c->dir, sub, "word_emb", c->err)) < 0)
            return rc;
        c->n_t++;
        if (emb->rank != 2 || emb->dims[0] > UINT32_MAX ||
            emb->dims[1] > TOK_LAC_MAX_E)
            return tok_err_set(c->err, TOK_EFORMAT,
                               "'%s/%s/word_emb': not a [V, E] embedding",
                               c->dir, sub);
        V = (uint32_t)emb->dims[0];
        E = (uint32_t)emb->dims[1];
        g0 = &c->t[c->n_t];
        if ((rc = read_tensor(g0, c->dir, sub, "gru_0.w_0", c->err)) < 0)
            return rc;
        c->n_t++;
        if (g0->rank != 2 || g0->dims[0] > TOK_LAC_MAX_D ||
            g0->dims[1] != 3 * g0->dims[0])
            return tok_err_set(c->err, TOK_EFORMAT,
                               "'%s/%s/gru_0.w_0': not a [D, 3D] weight",
                               c->dir, sub);
        D = (uint32_t)g0->dims[0];
        w_gru[0] = g0;
        crf = &c->t[c->n_t];
        if ((rc = read_tensor(crf, c->dir, sub, "crfw", c->err)) < 0)
            return rc;
        c->n_t++;
        if (crf->rank != 2 || crf->dims[1] == 0 ||
            crf->dims[1] > TOK_LAC_MAX_L || crf->dims[0] != crf->dims[1] + 2)
            return tok_err_set(c->err, TOK_EFORMAT,
                               "'%s/%s/crfw': not a [L + 2, L] matrix", c->dir,
                               sub);
        L = (uint32_t)crf->dims[1];
    }
    if (oov_e->v < 0 || oov_e->v >= (int64_t)V)
        return tok_err_set(c->err, TOK_EFORMAT,
                           "'%s': OOV id %lld outside the embedding's %u rows",
                           c->word_dic.path, (long long)oov_e->v, V);
    oov = (uint32_t)oov_e->v;
    for (size_t i = 0; i <= c->words.mask; i++)
        if (c->words.e[i].s &&
            (c->words.e[i].v < 0 || c->words.e[i].v >= (int64_t)V))
            return tok_err_set(c->err, TOK_EFORMAT,
                               "'%s': id %lld of '%.*s' outside the "
                               "embedding's %u rows",
                               c->word_dic.path, (long long)c->words.e[i].v,
                               (int)c->words.e[i].len, c->words.e[i].s, V);
    for (int k = 0; k < 4; k++) {
        char n1[32], n2[32], n3[32], n4[32];
        uint64_t in = k < 2 ? E : 2 * (uint64_t)D;

        snprintf(n1, sizeof(n1), "fc_%d.w_0", k);
        snprintf(n2, sizeof(n2), "fc_%d.b_0", k);
        snprintf(n3, sizeof(n3), "gru_%d.w_0", k);
        snprintf(n4, sizeof(n4), "gru_%d.b_0", k);
        if ((rc = param(c, n1, in, 3 * (uint64_t)D, &w_in[k])) < 0 ||
            (rc = param(c, n2, 3 * (uint64_t)D, 0, &b_in[k])) < 0 ||
            (k > 0 && (rc = param(c, n3, D, 3 * (uint64_t)D, &w_gru[k])) < 0) ||
            (rc = param(c, n4, 3 * (uint64_t)D, 0, &b_gru[k])) < 0)
            return rc;
    }
    if ((rc = param(c, "fc_4.w_0", 2 * (uint64_t)D, L, &w_out)) < 0 ||
        (rc = param(c, "fc_4.b_0", L, 0, &b_out)) < 0)
        return rc;

    /* The tag names, id by id (the later of two lines wins). */
    {
        const char **name = calloc(L, sizeof(*name));
        size_t *nlen = calloc(L, sizeof(*nlen)), pool_len = 0, at = 0;
        struct tags_ctx tc = { name, nlen, L };
        char *pool;

        if (name == NULL || nlen == NULL) {
            free(name);
            free(nlen);
            return tok_err_set(c->err, TOK_ENOMEM, "out of memory");
        }
        each_kv(&c->tag_dic, tag_kv, &tc, c->err);
        for (uint32_t k = 0; k < L; k++) {
            if (name[k] == NULL || memchr(name[k], '\0', nlen[k])) {
                free(name);
                free(nlen);
                return tok_err_set(c->err, TOK_EFORMAT,
                                   "'%s': no tag for id %u (of %u)",
                                   c->tag_dic.path, k, L);
            }
            pool_len += nlen[k] + 1;
        }
        if ((pool = malloc(pool_len)) == NULL) {
            free(name);
            free(nlen);
            return tok_err_set(c->err, TOK_ENOMEM, "out of memory");
        }
        for (uint32_t k = 0; k < L; k++) {
            memcpy(pool + at, name[k], nlen[k]);
            at += nlen[k];
            pool[at++] = '\0';
        }
        free(name);
        free(nlen);
        if ((rc = add_raw(c, "tags", SEC_BYTES, pool, pool, pool_len, 0)) < 0)
            return rc;
    }
    {
        uint32_t *dims = malloc(8 * sizeof(*dims));

        if (dims == NULL)
            return tok_err_set(c->err, TOK_ENOMEM, "out of memory");
        dims[0] = V;
        dims[1] = table ? 0 : E;
        dims[2] = D;
        dims[3] = L;
        dims[4] = oov;
        dims[5] = table;
        dims[6] = dict;
        dims[7] = 0;
        if ((rc = add_raw(c, "dims", SEC_U32, dims, dims, 8, 0)) < 0)
            return rc;
    }
    if ((rc = char_table(c, oov)) < 0)
        return rc;
    if (table) {
        const struct tensor *fw[2] = { w_in[0], w_in[1] },
                            *fb[2] = { b_in[0], b_in[1] },
                            *gb[2] = { b_gru[0], b_gru[1] };
        float *t = proj_table(emb, fw, fb, gb, V, E, D);

        if (t == NULL)
            return tok_err_set(c->err, TOK_ENOMEM, "out of memory");
        if ((rc = add_floats(c, "proj0", t, t, V, 6 * (uint64_t)D)) < 0)
            return rc;
    } else {
        if ((rc = add_floats(c, "emb", emb->data, NULL, V, E)) < 0)
            return rc;
    }
    for (int k = 0; k < 4; k++) {
        char part[24];

        if (!(table && k < 2)) {
            snprintf(part, sizeof(part), "fc%d.w", k);
            if ((rc = add_floats(c, part, w_in[k]->data, NULL, w_in[k]->dims[0],
                                 3 * (uint64_t)D)) < 0)
                return rc;
            snprintf(part, sizeof(part), "fc%d.b", k);
            if ((rc = add_floats(c, part, b_in[k]->data, NULL, 3 * (uint64_t)D,
                                 0)) < 0)
                return rc;
        }
        snprintf(part, sizeof(part), "gru%d.w", k);
        if ((rc = add_floats(c, part, w_gru[k]->data, NULL, D,
                             3 * (uint64_t)D)) < 0)
            return rc;
        snprintf(part, sizeof(part), "gru%d.b", k);
        if ((rc = add_floats(c, part, b_gru[k]->data, NULL, 3 * (uint64_t)D,
                             0)) < 0)
            return rc;
    }
    if ((rc = add_floats(c, "fc4.w", w_out->data, NULL, 2 * (uint64_t)D, L)) <
            0 ||
        (rc = add_floats(c, "fc4.b", b_out->data, NULL, L, 0)) < 0 ||
        (rc = add_floats(c, "crfw", crf->data, NULL, L + 2, L)) < 0)
        return rc;
    if (dict && ((rc = words_table(c, oov, V)) < 0 || (rc = seg_dict(c)) < 0))
        return rc;
    return 0;
}

int
tok_lac_compile(const char *package_dir, const char *out_path,
                const char *provenance, struct tok_err *err)
{
    struct writer *w = calloc(1, sizeof(*w));
    struct compile c[2];
    const char *prov = provenance ? provenance : "";
    int rc;

    if (w == NULL)
        return tok_err_set(err, TOK_ENOMEM, "out of memory");
    memset(c, 0, sizeof(c));
    if ((rc = add_section(w, "info", SEC_BYTES, strlen(prov) + 1, 0, prov, NULL,
                          err)) < 0)
        goto out;
    for (int m = 0; m < 2; m++) {
        c[m].dir = package_dir;
        c[m].mode = m == 0 ? "seg_model" : "lac_model";
        c[m].tag = mode_names[m];
        c[m].w = w;
        c[m].err = err;
        /* seg: the table of first projections; lac: its dictionaries. */
        if ((rc = compile_mode(&c[m], m == 0, m == 1)) < 0)
            goto out;
    }
    rc = write_model(w, out_path, err);
out:
    writer_release(w);
    compile_release(&c[0]);
    compile_release(&c[1]);
    free(w);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */

struct mapped {
    const unsigned char *base;
    size_t len;
    size_t n;
    const unsigned char *table;
    const char *path;
};

static const unsigned char *
find_entry(const struct mapped *mp, const char *name)
{
    for (size_t k = 0; k < mp->n; k++) {
        const unsigned char *e = mp->table + k * ENTRY_SIZE;

        if (strncmp((const char *)e, name, 16) == 0)
            return e;
    }
    return NULL;
}

/* The section name, checked: type, dims (d1 0: a vector; any 0 dim of the
 * request: taken from the file into *got0, *got1), bounds and checksum. */
static int
section(const struct mapped *mp, const char *name, uint32_t type, uint64_t d0,
        uint64_t d1, const void **data, uint64_t *got0, uint64_t *got1,
        struct tok_err *err)
{
    static const uint64_t elem[] = { 1, 4, 4, 8 };
    const unsigned char *e = find_entry(mp, name);
    uint64_t rank, f0, f1, off, size, sum;

    if (e == NULL)
        return tok_err_set(err, TOK_EFORMAT, "model '%s': no part '%s'",
                           mp->path, name);
    rank = get_u32(e + 20);
    f0 = get_u64(e + 24);
    f1 = get_u64(e + 32);
    off = get_u64(e + 40);
    size = get_u64(e + 48);
    sum = get_u64(e + 56);
    if (get_u32(e + 16) != type || (rank != 1 && rank != 2) ||
        (rank == 1) != (d1 == 0 && (got1 == NULL)) || (rank == 1 && f1 != 0) ||
        (d0 && f0 != d0) || (d1 && f1 != d1) || f0 > ((uint64_t)1 << 40) ||
        f1 > ((uint64_t)1 << 40) ||
        size != f0 * (rank == 2 ? f1 : 1) * elem[type])
        return tok_err_set(err, TOK_EFORMAT,
                           "model '%s': part '%s' has the wrong type or shape",
                           mp->path, name);
    if (off % ALIGN != 0 || off > mp->len || size > mp->len - off)
        return tok_err_set(err, TOK_EFORMAT,
                           "model '%s': part '%s' lies outside the file "
                           "(truncated?)",
                           mp->path, name);
    if (checksum(mp->base + off, (size_t)size) != sum)
        return tok_err_set(err, TOK_EFORMAT,
                           "model '%s': part '%s' is damaged (checksum)",
                           mp->path, name);
    *data = mp->base + off;
    if (got0)
        *got0 = f0;
    if (got1)
        *got1 = f1;
    return 0;
}

static int
open_floats(const struct mapped *mp, const char *mode, const char *part,
            uint64_t d0, uint64_t d1, const float **out, struct tok_err *err)
{
    char name[40];
    const void *p;
    int rc;

    snprintf(name, sizeof(name), "%s.%s", mode, part);
    if ((rc = section(mp, name, SEC_F32, d0, d1, &p, NULL, NULL, err)) < 0)
        return rc;
    *out = p;
    return 0;
}

static int
open_mode(struct tok_lac *l, const struct mapped *mp, int m,
          struct tok_err *err)
{
    struct tok_lac_mode_data *md = &l->mode[m];
    struct tok_lac_net *net = &md->net;
    const char *mn = mode_names[m];
    const uint32_t *dims;
    const void *p;
    uint64_t n_pages;
    char name[40];
    int rc;

    snprintf(name, sizeof(name), "%s.dims", mn);
    if ((rc = section(mp, name, SEC_U32, 8, 0, &p, NULL, NULL, err)) < 0)
        return rc;
    dims = p;
    net->V = dims[0];
    net->E = dims[1];
    net->D = dims[2];
    net->L = dims[3];
    if (net->V == 0 || net->D == 0 || net->D > TOK_LAC_MAX_D ||
        net->E > TOK_LAC_MAX_E || net->L == 0 || net->L > TOK_LAC_MAX_L ||
        dims[4] >= net->V || dims[5] > 1 || dims[6] > 1 ||
        (dims[5] == 0 && net->E == 0))
        return tok_err_set(err, TOK_EFORMAT,
                           "model '%s': bad sizes of the %s network", mp->path,
                           mn);
    {
        uint64_t D = net->D, V = net->V, E = net->E, L = net->L;

        if (dims[5]) {
            if ((rc = open_floats(mp, mn, "proj0", V, 6 * D, &net->proj0,
                                  err)) < 0)
                return rc;
        } else if ((rc = open_floats(mp, mn, "emb", V, E, &net->emb, err)) <
                   0) {
            return rc;
        }
        for (int k = 0; k < 4; k++) {
            char part[24];

            if (!(dims[5] && k < 2)) {
                snprintf(part, sizeof(part), "fc%d.w", k);
                if ((rc = open_floats(mp, mn, part, k < 2 ? E : 2 * D, 3 * D,
                                      &net->w_in[k], err)) < 0)
                    return rc;
                snprintf(part, sizeof(part), "fc%d.b", k);
                if ((rc = open_floats(mp, mn, part, 3 * D, 0, &net->b_in[k],
                                      err)) < 0)
                    return rc;
            }
            snprintf(part, sizeof(part), "gru%d.w", k);
            if ((rc = open_floats(mp, mn, part, D, 3 * D, &net->w_gru[k],
                                  err)) < 0)
                return rc;
            snprintf(part, sizeof(part), "gru%d.b", k);
            if ((rc = open_floats(mp, mn, part, 3 * D, 0, &net->b_gru[k],
                                  err)) < 0)
                return rc;
            if (net->b_in[k] != NULL) {
                if ((net->b_gate[k] = malloc(3 * D * sizeof(float))) == NULL)
                    return tok_err_set(err, TOK_ENOMEM, "out of memory");
                for (size_t j = 0; j < 3 * D; j++)
                    net->b_gate[k][j] = net->b_in[k][j] + net->b_gru[k][j];
            }
        }
        if ((rc = open_floats(mp, mn, "fc4.w", 2 * D, L, &net->w_out, err)) <
                0 ||
            (rc = open_floats(mp, mn, "fc4.b", L, 0, &net->b_out, err)) < 0 ||
            (rc = open_floats(mp, mn, "crfw", L + 2, L, &net->crf, err)) < 0)
            return rc;
    }
    /* Code points. */
    snprintf(name, sizeof(name), "%s.cpage", mn);
    if ((rc = section(mp, name, SEC_U32, TOK_LAC_N_PAGES, 0, &p, NULL, NULL,
                      err)) < 0)
        return rc;
    md->char_page = p;
    snprintf(name, sizeof(name), "%s.cids", mn);
    if ((rc = section(mp, name, SEC_U32, 0, 256, &p, &n_pages, NULL, err)) < 0)
        return rc;
    md->char_ids = p;
    md->n_pages = (size_t)n_pages;
    for (size_t k = 0; k < TOK_LAC_N_PAGES; k++)
        if (md->char_page[k] >= n_pages)
            return tok_err_set(err, TOK_EFORMAT,
                               "model '%s': bad code point page", mp->path);
    for (size_t k = 0; k < n_pages * 256; k++)
        if (md->char_ids[k] >= net->V)
            return tok_err_set(err, TOK_EFORMAT,
                               "model '%s': code point id beyond the %s "
                               "embedding",
                               mp->path, mn);
    /* Tags. */
    {
        uint64_t len;
        const char *pool, *q;

        snprintf(name, sizeof(name), "%s.tags", mn);
        if ((rc = section(mp, name, SEC_BYTES, 0, 0, &p, &len, NULL, err)) < 0)
            return rc;
        pool = p;
        if ((md->tag_of = malloc(net->L * sizeof(*md->tag_of))) == NULL)
            return tok_err_set(err, TOK_ENOMEM, "out of memory");
        q = pool;
        for (uint32_t k = 0; k < net->L; k++) {
            const char *z = memchr(q, '\0', (size_t)(pool + len - q));

            if (z == NULL ||
                tok_utf8_check(q, (size_t)(z - q)) != (size_t)(z - q))
                return tok_err_set(err, TOK_EFORMAT,
                                   "model '%s': bad tag names", mp->path);
            if ((rc = tok_lac_tags_intern(&l->tags, q, (size_t)(z - q),
                                          &md->tag_of[k])) < 0)
                return tok_err_set(err, rc, "out of memory");
            q = z + 1;
        }
    }
    md->has_dict = dims[6];
    if (md->has_dict) {
        const uint32_t *meta;
        uint64_t slots, n, pool_len;
        const uint32_t *ws;

        snprintf(name, sizeof(name), "%s.strie", mn);
        if ((rc = section(mp, name, SEC_U32, 2, 0, &p, NULL, NULL, err)) < 0)
            return rc;
        meta = p;
        snprintf(name, sizeof(name), "%s.skeys", mn);
        if ((rc = section(mp, name, SEC_BYTES, 0, 0, &p, &slots, NULL, err)) <
            0)
            return rc;
        md->dict.trie.keys = (uint64_t *)p;
        slots /= 8;
        snprintf(name, sizeof(name), "%s.svals", mn);
        if ((rc = section(mp, name, SEC_U32, slots, 0, &p, NULL, NULL, err)) <
            0)
            return rc;
        md->dict.trie.vals = (uint32_t *)p;
        if (slots == 0 || (slots & (slots - 1)) != 0 || meta[0] == 0 ||
            meta[0] > slots)
            return tok_err_set(err, TOK_EFORMAT,
                               "model '%s': bad dictionary trie", mp->path);
        md->dict.trie.mask = (size_t)slots - 1;
        md->dict.trie.max_probe = meta[0];
        md->dict.trie.n_nodes = meta[1];
        snprintf(name, sizeof(name), "%s.slogs", mn);
        if ((rc = section(mp, name, SEC_F64, 0, 0, &p, &n, NULL, err)) < 0)
            return rc;
        if (n < 2 || n > TOK_LAC_MAX_WORD + 1)
            return tok_err_set(err, TOK_EFORMAT,
                               "model '%s': bad dictionary logs", mp->path);
        md->dict.logs = p;
        md->dict.max_len = (size_t)n - 1;
        snprintf(name, sizeof(name), "%s.wpool", mn);
        if ((rc = section(mp, name, SEC_BYTES, 0, 0, &p, &pool_len, NULL,
                          err)) < 0)
            return rc;
        md->words.pool = p;
        md->words.pool_len = (size_t)pool_len;
        snprintf(name, sizeof(name), "%s.words", mn);
        if ((rc = section(mp, name, SEC_U32, 0, 4, &p, &slots, NULL, err)) < 0)
            return rc;
        ws = p;
        if (slots == 0 || (slots & (slots - 1)) != 0)
            return tok_err_set(err, TOK_EFORMAT, "model '%s': bad word table",
                               mp->path);
        for (size_t k = 0; k < slots; k++)
            if (ws[4 * k] != 0 && (ws[4 * k + 1] > pool_len ||
                                   ws[4 * k + 2] > pool_len - ws[4 * k + 1] ||
                                   ws[4 * k + 3] >= net->V))
                return tok_err_set(err, TOK_EFORMAT,
                                   "model '%s': bad word table", mp->path);
        md->words.slots = ws;
        md->words.mask = (size_t)slots - 1;
        snprintf(name, sizeof(name), "%s.wprobe", mn);
        if ((rc = section(mp, name, SEC_U32, 1, 0, &p, NULL, NULL, err)) < 0)
            return rc;
        md->words.max_probe = *(const uint32_t *)p;
        if (md->words.max_probe == 0 || md->words.max_probe > slots)
            return tok_err_set(err, TOK_EFORMAT, "model '%s': bad word table",
                               mp->path);
    }
    md->present = true;
    return 0;
}

/* Check the header and the section table of data[0..len). */
static int
open_header(struct mapped *mp, struct tok_err *err)
{
    const unsigned char *h = mp->base;
    uint64_t n, table_off;

    if (mp->len < HEADER_SIZE || memcmp(h, MODEL_MAGIC, 8) != 0)
        return tok_err_set(err, TOK_EFORMAT,
                           "'%s' is not a LAC model (bad magic)", mp->path);
    if (get_u32(h + 8) != MODEL_VERSION)
        return tok_err_set(err, TOK_EFORMAT,
                           "model '%s': version %u, expected %u (rebuild it)",
                           mp->path, get_u32(h + 8), MODEL_VERSION);
    if (checksum(h, 40) != get_u64(h + 40))
        return tok_err_set(err, TOK_EFORMAT,
                           "model '%s': damaged header (checksum)", mp->path);
    if (get_u64(h + 16) != mp->len)
        return tok_err_set(err, TOK_EFORMAT,
                           "model '%s': %zu bytes, the header says %llu "
                           "(truncated?)",
                           mp->path, mp->len,
                           (unsigned long long)get_u64(h + 16));
    n = get_u32(h + 12);
    table_off = get_u64(h + 24);
    if (n > MAX_SECTIONS || table_off > mp->len ||
        n * ENTRY_SIZE > mp->len - table_off)
        return tok_err_set(err, TOK_EFORMAT, "model '%s': bad section table",
                           mp->path);
    mp->n = (size_t)n;
    mp->table = mp->base + table_off;
    if (checksum(mp->table, (size_t)n * ENTRY_SIZE) != get_u64(h + 32))
        return tok_err_set(err, TOK_EFORMAT,
                           "model '%s': damaged section table (checksum)",
                           mp->path);
    return 0;
}

/* Open from data[0..len) (the mapping, or a buffer for the fuzzer). */
int
tok_lac_open_mem(struct tok_lac *l, const void *data, size_t len,
                 const char *path, int modes, struct tok_err *err)
{
    struct mapped mp = { data, len, 0, NULL, path };
    const void *p;
    uint64_t n;
    int rc;

    if ((rc = open_header(&mp, err)) < 0)
        return rc;
    if ((rc = section(&mp, "info", SEC_BYTES, 0, 0, &p, &n, NULL, err)) < 0)
        return rc;
    if ((l->provenance = malloc((size_t)n + 1)) == NULL)
        return tok_err_set(err, TOK_ENOMEM, "out of memory");
    memcpy(l->provenance, p, (size_t)n);
    l->provenance[n] = '\0';
    if (modes == 0)
        modes = TOK_LAC_OPEN_SEG | TOK_LAC_OPEN_LAC;
    for (int m = 0; m < 2; m++)
        if ((modes & (1 << m)) && (rc = open_mode(l, &mp, m, err)) < 0)
            return rc;
    return 0;
}

/* Recompute every checksum of a model in memory (for the fuzzer, which
 * would otherwise rarely get past them). */
void
tok_lac_model_fix_checksums(unsigned char *data, size_t len)
{
    uint64_t n, table_off;

    if (len < HEADER_SIZE)
        return;
    n = get_u32(data + 12);
    table_off = get_u64(data + 24);
    if (n <= MAX_SECTIONS && table_off <= len &&
        n * ENTRY_SIZE <= len - table_off) {
        for (size_t k = 0; k < n; k++) {
            unsigned char *e = data + table_off + k * ENTRY_SIZE;
            uint64_t off = get_u64(e + 40), size = get_u64(e + 48);

            if (off <= len && size <= len - off)
                put_u64(e + 56, checksum(data + off, (size_t)size));
        }
        put_u64(data + 32, checksum(data + table_off, (size_t)n * ENTRY_SIZE));
    }
    put_u64(data + 40, checksum(data, 40));
}

int
tok_lac_open(struct tok_lac **out, const char *model_path, int modes,
             struct tok_err *err)
{
    struct tok_lac *l;
    struct stat st;
    int fd, rc;

    *out = NULL;
    if ((fd = open(model_path, O_RDONLY | O_CLOEXEC)) < 0)
        return tok_err_set(err, TOK_EIO, "cannot open LAC model '%s': %s",
                           model_path, strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tok_err_set(err, TOK_EIO, "LAC model '%s' is not a file",
                           model_path);
    }
    if ((l = calloc(1, sizeof(*l))) == NULL) {
        close(fd);
        return tok_err_set(err, TOK_ENOMEM, "out of memory");
    }
    l->map_len = (size_t)st.st_size;
    if (l->map_len > 0) {
        l->map = mmap(NULL, l->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (l->map == MAP_FAILED) {
            l->map = NULL;
            close(fd);
            tok_lac_close(l);
            return tok_err_set(err, TOK_EIO, "cannot map '%s': %s", model_path,
                               strerror(errno));
        }
    }
    close(fd);
    rc = tok_lac_open_mem(l, l->map ? l->map : "", l->map_len, model_path,
                          modes, err);
    if (rc < 0) {
        tok_lac_close(l);
        return rc;
    }
    *out = l;
    return 0;
}

void
tok_lac_close(struct tok_lac *l)
{
    if (l == NULL)
        return;
    for (int m = 0; m < 2; m++) {
        for (int k = 0; k < 4; k++)
            free(l->mode[m].net.b_gate[k]);
        free(l->mode[m].tag_of);
    }
    tok_lac_tags_release(&l->tags);
    if (l->custom) {
        tok_lac_custom_release(l->custom);
        free(l->custom);
    }
    free(l->provenance);
    if (l->map)
        munmap(l->map, l->map_len);
    free(l);
}

const char *
tok_lac_provenance(const struct tok_lac *l)
{
    return l->provenance ? l->provenance : "";
}

const char *
tok_lac_tag_name(const struct tok_lac *l, uint32_t tag, size_t *len)
{
    const struct tok_lac_tag *t;

    if (tag >= l->tags.n)
        return NULL;
    t = &l->tags.v[tag];
    if (len)
        *len = tok_lac_drop_last(t->s, t->len, 2);
    return t->s;
}

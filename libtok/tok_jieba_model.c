/* SPDX-License-Identifier: MIT */
/*
 * tok_jieba_model.c: jieba's prefix dictionary and HMM tables: compiling
 * them from Debian's python3-jieba files into one binary model, mapping that
 * model, and adding user dictionaries on top.
 *
 * The dictionary is a trie of code points (jieba's FREQ maps every word and
 * every prefix of a word; a node's freq is 0 for a prefix only).  Children
 * of the root in the BMP sit in a direct table; every other edge in one
 * open-addressing hash table keyed by (parent, code point), guarded by a
 * one-bit-per-edge filter.  The file layout
 * is documented in jieba-model(5).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tok_int.h"

#define MODEL_MAGIC   "EKJIEBA"
#define MODEL_VERSION 7u
#define HEADER_SIZE   256u
#define ROOT_N        0x10000u
#define MIN_FLOAT     (-3.14e100)
#define NO_PARENT     UINT32_MAX

/* ------------------------------------------------------------------------ */
/* The trie                                                                  */

/* Whether p points into [base, base + len): arrays of a model live in its
 * file mapping or on the heap, and only the latter are freed. */
static bool
in_region(const void *p, const void *base, size_t len)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;

    return base != NULL && a >= b && a - b < len;
}

static bool
is_heap(const struct tok_jieba *j, const void *p)
{
    return !in_region(p, j->map, j->map_len);
}

#define edge_key  tok_jedge_key
#define edge_hash tok_jedge_hash

uint32_t
tok_jieba_child(const struct tok_jieba *j, uint32_t node, uint32_t cp)
{
    const struct tok_jedge *e = tok_jieba_edge(j, node, cp);

    return e ? tok_jedge_child(e) : 0;
}

/* Put edge e into the first free slot from its home in table (mask + 1
 * slots, at least one free), as a search expects it. */
static void
edge_place(struct tok_jedge *table, size_t mask, const struct tok_jedge *e)
{
    size_t i = edge_hash((uint32_t)((e->key >> 21) & TOK_JNODE_MAX),
                         (uint32_t)(e->key & 0x1FFFFF)) &
               mask;

    while (table[i].key & TOK_JEDGE_USED)
        i = (i + 1) & mask;
    table[i] = *e;
}

/* ------------------------------------------------------------------------ */
/* The edge table's memory                                                   */

/* The DAG walk reads the 16 MB edge table at random.  On 4 KB pages that
 * is 4096 pages, twice what the second-level TLB holds, so most reads also
 * walk the page tables; on 2 MB pages the table takes 8 TLB entries
 * (segment: 5-8 % less CPU on 18.7 MB, BENCHMARKS.md).  The model is
 * mapped 2 MB aligned and advised MADV_HUGEPAGE: where the file system
 * keeps the file's cached pages in 2 MB folios (ext4 does on Linux 6.18,
 * when the file was read in through such a mapping), the
 * kernel maps them whole, with no copy and no extra memory.  Where it does
 * not, an open for a long input copies the table to anonymous memory
 * advised for huge pages. */
#define HUGE_PAGE ((size_t)2 << 20)

/* Whether the kernel backs memory advised MADV_HUGEPAGE with huge pages:
 * its THP mode is "always" or "madvise", not "never" (nor absent). */
static bool
huge_pages_offered(void)
{
    char mode[128];
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    bool offered;

    if (f == NULL)
        return false;
    offered =
        fgets(mode, sizeof(mode), f) != NULL && strstr(mode, "[never]") == NULL;
    fclose(f);
    return offered;
}

static size_t
edges_bytes(size_t slots)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    return (slots * sizeof(struct tok_jedge) + page - 1) / page * page;
}

/* A zeroed edge table of `slots` slots, 2 MB aligned and advised for huge
 * pages (the advice is best effort: on 4 KB pages the table works the
 * same); NULL when out of memory.  Free with edges_unmap(). */
static struct tok_jedge *
edges_map(size_t slots)
{
    size_t len = edges_bytes(slots), span = len + HUGE_PAGE;
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *a;

    if (p == MAP_FAILED)
        return NULL;
    /* Keep the aligned part of the span. */
    a = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (a > p)
        munmap(p, (size_t)(a - p));
    if (p + span > a + len)
        munmap(a + len, (size_t)(p + span - (a + len)));
#ifdef MADV_HUGEPAGE
    (void)madvise(a, len, MADV_HUGEPAGE);
#endif
    return (struct tok_jedge *)a;
}

static void
edges_unmap(struct tok_jedge *e, size_t slots)
{
    if (e != NULL)
        munmap(e, edges_bytes(slots));
}

static int
edges_resize(struct tok_jieba *j, size_t slots)
{
    struct tok_jedge *old = j->edges, *e;
    size_t old_n = old ? j->edge_mask + 1 : 0;

    e = edges_map(slots);
    if (e == NULL)
        return TOK_ENOMEM;
    j->edges = e;
    j->edge_mask = slots - 1;
    j->max_probe = slots; /* kept at most half full: every search ends */
    for (size_t k = 0; k < old_n; k++)
        if (old[k].key & TOK_JEDGE_USED)
            edge_place(e, j->edge_mask, &old[k]);
    if (is_heap(j, old))
        edges_unmap(old, old_n);
    return 0;
}

/* Let the kernel drop the pages of the mapping's bytes [p, p + len), read
 * once for a copy: they count in the process's resident set until then.
 * (The file's page cache keeps them.) */
static void
release_mapped(const struct tok_jieba *j, const void *p, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + page - 1) / page * page,
              b = ((uintptr_t)p + len) / page * page;

    if (in_region(p, j->map, j->map_len) && b > a)
        (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

/* Map the file fd of len bytes read-only at a 2 MB boundary, so that
 * each 2 MB of the file that the page cache holds in one folio can be
 * mapped by one huge page; MAP_FAILED on failure. */
static void *
map_model(int fd, size_t len)
{
    size_t span = len + HUGE_PAGE;
    char *r = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *a, *p;

    if (r == MAP_FAILED)
        return mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    a = (char *)(((uintptr_t)r + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    p = mmap(a, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        munmap(r, span);
        return MAP_FAILED;
    }
    /* Give back the reservation around it. */
    if (a > r)
        munmap(r, (size_t)(a - r));
    if (r + span > a + len)
        munmap(a + len, (size_t)(r + span - (a + len)));
#ifdef MADV_HUGEPAGE
    /* A cold file is then read in 2 MB folios. */
    if (huge_pages_offered())
        (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

/* How many kB of the mapping that starts at addr 2 MB pages of its file
 * map ("FilePmdMapped" in /proc/self/smaps), -1 if unknown. */
static long
file_pmd_mapped_kb(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512], perms[8];
    unsigned long start, end;
    bool in = false;
    long kb = -1;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3) {
            if (in)
                break; /* the next mapping */
            in = start == (uintptr_t)addr;
        } else if (in && sscanf(line, "FilePmdMapped: %ld kB", &kb) == 1) {
            break;
        }
    }
    fclose(f);
    return kb;
}

/* Whether 2 MB pages of the file map most of the edge table: read it in
 * (MADV_POPULATE_READ, Linux 5.14) and ask the kernel. */
static bool
edges_on_file_huge_pages(const struct tok_jieba *j)
{
#ifdef MADV_POPULATE_READ
    uintptr_t a = (uintptr_t)j->edges,
              b = a + (j->edge_mask + 1) * sizeof(*j->edges);
    uintptr_t a2 = (a + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1),
              b2 = b & ~(uintptr_t)(HUGE_PAGE - 1);
    long kb;

    if (b2 <= a2 || madvise((void *)a2, b2 - a2, MADV_POPULATE_READ) < 0)
        return false;
    kb = file_pmd_mapped_kb(j->map);
    /* The huge pages the table's aligned part can have, less one. */
    return kb >= 0 && (size_t)kb * 1024 + HUGE_PAGE >= b2 - a2;
#else
    (void)j;
    return false;
#endif
}

/* Give a mapped model's edge table huge pages, when the kernel offers
 * them: the file's own, else a copy (16 MB, and a few milliseconds to
 * fault in: worth it on a long input).  With copy, copy it in any case. */
static void
edges_to_huge_pages(struct tok_jieba *j, bool copy)
{
    size_t slots = j->edge_mask + 1;
    struct tok_jedge *e;

    if (!copy && (!huge_pages_offered() || edges_on_file_huge_pages(j)))
        return; /* the mapping serves */
    if ((e = edges_map(slots)) == NULL)
        return;
    /* By the huge page, each dropped from the mapping once copied, so the
     * resident set never holds the table twice. */
    for (size_t at = 0, len = slots * sizeof(*e); at < len; at += HUGE_PAGE) {
        size_t n = len - at < HUGE_PAGE ? len - at : HUGE_PAGE;

        memcpy((char *)e + at, (const char *)j->edges + at, n);
        release_mapped(j, (const char *)j->edges + at, n);
    }
    j->edges = e;
}

static int
node_new(struct tok_jieba *j, uint32_t *out)
{
    if (j->n_nodes > TOK_JNODE_MAX)
        return TOK_ERANGE;
    if (j->n_nodes == j->cap_nodes) {
        size_t cap = j->cap_nodes ? j->cap_nodes * 2 : 1 << 16;
        int64_t *f = realloc(j->freq, cap * sizeof(*f));

        if (f == NULL)
            return TOK_ENOMEM;
        j->freq = f;
        if (j->force_split) {
            uint8_t *fs = realloc(j->force_split, cap);
            if (fs == NULL)
                return TOK_ENOMEM;
            memset(fs + j->cap_nodes, 0, cap - j->cap_nodes);
            j->force_split = fs;
        }
        j->cap_nodes = cap;
    }
    j->freq[j->n_nodes] = 0;
    *out = (uint32_t)j->n_nodes++;
    return 0;
}

/* The edge into the node of prefix cps[0..n) (n >= 1), creating missing
 * nodes as prefix-only nodes; *fresh tells whether that node is new.  A
 * word node that gains a child stops being a leaf (its logf turns
 * positive).  Returns 0, TOK_ENOMEM or TOK_ERANGE (more than 2^21 nodes). */
static int
trie_insert(struct tok_jieba *j, const uint32_t *cps, size_t n,
            struct tok_jedge **out, bool *fresh)
{
    uint32_t node = 0;
    struct tok_jedge *e = NULL;

    *fresh = false;
    for (size_t k = 0; k < n; k++) {
        struct tok_jedge *into = e; /* the edge into node (NULL: root) */

        e = (struct tok_jedge *)tok_jieba_edge(j, node, cps[k]);
        *fresh = e == NULL;
        if (e == NULL) {
            uint32_t child;
            int rc = node_new(j, &child);

            if (rc < 0)
                return rc;
            /* Before the table may move: node has a child now. */
            if (into && !isnan(into->logf))
                into->logf = fabs(into->logf);
            if (node == 0 && cps[k] < ROOT_N) {
                e = &j->root[cps[k]];
            } else {
                size_t i;

                if (2 * (j->n_edges + 1) > j->edge_mask + 1 &&
                    edges_resize(j, 2 * (j->edge_mask + 1)) < 0)
                    return TOK_ENOMEM;
                i = edge_hash(node, cps[k]) & j->edge_mask;
                while (j->edges[i].key & TOK_JEDGE_USED)
                    i = (i + 1) & j->edge_mask;
                e = &j->edges[i];
                j->n_edges++;
                tok_bloom_set(j->bloom, node, cps[k]);
            }
            e->key = TOK_JEDGE_USED | ((uint64_t)child << 42) |
                     edge_key(node, cps[k]);
            e->logf = NAN;
        }
        node = tok_jedge_child(e);
    }
    *out = e;
    return 0;
}

/* Decode UTF-8 into code points; returns the count, or -1 if invalid. */
static long
decode_cps(const char *s, size_t len, uint32_t *cps, size_t max)
{
    size_t i = 0, n = 0;

    while (i < len) {
        size_t k = tok_utf8_decode(s + i, len - i, &cps[n]);

        if (k == 0 || n == max)
            return -1;
        i += k;
        n++;
    }
    return (long)n;
}

/* Set FREQ[word] = freq as jieba's dict loading and add_word() do: the
 * total grows by freq even when the word was there before. */
static int
add_word(struct tok_jieba *j, const uint32_t *cps, size_t n, int64_t freq)
{
    struct tok_jedge *e;
    uint32_t node;
    bool fresh, leaf;
    int rc = trie_insert(j, cps, n, &e, &fresh);

    if (rc < 0)
        return rc;
    /* A prefix-only node (NaN) has children; a fresh one has none. */
    leaf = fresh || (!isnan(e->logf) && signbit(e->logf));
    node = tok_jedge_child(e);
    if (j->freq[node] == 0 && freq > 0)
        j->n_words++;
    else if (j->freq[node] > 0 && freq == 0)
        j->n_words--;
    j->freq[node] = freq;
    /* A leaf word's weight is stored negated (-0.0 for freq 1), so the DAG
     * walk knows it can stop there; fabs() gives it back exactly. */
    if (freq > 0)
        e->logf = leaf ? -log((double)freq) : log((double)freq);
    else
        e->logf = NAN;
    j->total += freq;
    return 0;
}

static void
jieba_free_arrays(struct tok_jieba *j)
{
    if (is_heap(j, j->freq))
        free(j->freq);
    if (is_heap(j, j->edges))
        edges_unmap(j->edges, j->edge_mask + 1);
    if (is_heap(j, j->root))
        free(j->root);
    if (is_heap(j, j->bloom))
        free(j->bloom);
    free(j->force_split);
    free(j->emit_heap);
}

/* ------------------------------------------------------------------------ */
/* Regular expressions (shared, compiled once per segmenter)                 */

/* finalseg's re_skip, restated for PCRE2 in UTF mode (its \d only ever
 * sees ASCII digits).  jieba's other regexes are character classes (or,
 * for re_skip_default in accurate mode, change nothing: every character
 * between runs is a word of its own, "\r\n" aside), which the cutter
 * tests on the code points it decodes anyway (BENCHMARKS.md). */
static const char regex_hmm_skip[] = "[a-zA-Z0-9]+(?:\\.[0-9]+)?%?";

static int
compile_regexes(struct tok_jieba *j, struct tok_err *err)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)regex_hmm_skip, PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_NO_UTF_CHECK, &ec, &eo, NULL);

    if (re == NULL)
        return tok_err_set(err, TOK_ENOMEM, "cannot compile finalseg's regex");
    /* JIT is an optimization; the interpreter gives the same result. */
    j->re_hmm_skip_jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    j->re_hmm_skip = re;
    return 0;
}

void
tok_jieba_close(struct tok_jieba *j)
{
    if (j == NULL)
        return;
    jieba_free_arrays(j);
    pcre2_code_free(j->re_hmm_skip);
    if (j->map)
        munmap(j->map, j->map_len);
    free(j);
}

size_t
tok_jieba_n_words(const struct tok_jieba *j)
{
    return j->n_words;
}

/* ------------------------------------------------------------------------ */
/* Compiling: dict.txt and the finalseg tables                               */

static int
read_file(const char *path, char **data, size_t *len, struct tok_err *err)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 1 << 20, n = 0;
    char *d;

    if (f == NULL)
        return tok_err_set(err, TOK_EIO, "cannot open '%s': %s", path,
                           strerror(errno));
    d = malloc(cap + 1);
    for (;;) {
        size_t got;

        if (d == NULL) {
            fclose(f);
            return tok_err_set(err, TOK_ENOMEM, "cannot read '%s': %s", path,
                               tok_strerror(TOK_ENOMEM));
        }
        got = fread(d + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        cap *= 2;
        {
            char *nd = realloc(d, cap + 1);
            if (nd == NULL)
                free(d);
            d = nd;
        }
    }
    if (ferror(f)) {
        int e = errno;
        free(d);
        fclose(f);
        return tok_err_set(err, TOK_EIO, "cannot read '%s': %s", path,
                           strerror(e));
    }
    fclose(f);
    d[n] = '\0';
    *data = d;
    *len = n;
    return 0;
}

static bool
is_ascii_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

/* The next line of [*p, end), stripped of ASCII whitespace at both ends
 * (Python's bytes.strip()) into [*a, *b); advances *p past it.  Returns
 * false at the end. */
static bool
next_stripped_line(const char **p, const char *end, const char **a,
                   const char **b)
{
    const char *nl;

    if (*p >= end)
        return false;
    nl = memchr(*p, '\n', (size_t)(end - *p));
    *a = *p;
    *b = nl ? nl : end;
    *p = nl ? nl + 1 : end;
    while (*a < *b && is_ascii_space(**a))
        (*a)++;
    while (*b > *a && is_ascii_space((*b)[-1]))
        (*b)--;
    return true;
}

/* Parse a decimal integer the way jieba's int() sees dict.txt: optional
 * sign, digits, nothing else. */
static bool
parse_freq(const char *s, size_t len, int64_t *out)
{
    int64_t v = 0;
    size_t i = 0;
    bool neg = false;

    if (len > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == len || len - i > 15)
        return false;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return true;
}

static int
jieba_empty(struct tok_jieba **out, struct tok_err *err)
{
    struct tok_jieba *j = calloc(1, sizeof(*j));
    uint32_t root;

    *out = NULL;
    if (j == NULL)
        goto nomem;
    j->heap = true;
    j->root = calloc(ROOT_N, sizeof(*j->root));
    j->bloom = calloc((size_t)1 << (TOK_BLOOM_BITS - 6), sizeof(*j->bloom));
    if (j->root == NULL || j->bloom == NULL || edges_resize(j, 1 << 16) < 0 ||
        node_new(j, &root) < 0)
        goto nomem;
    *out = j;
    return 0;
nomem:
    tok_jieba_close(j);
    return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
}

/* gen_pfdict(): every line "word freq [tag]", stripped of ASCII space. */
static int
load_main_dict(struct tok_jieba *j, const char *path, struct tok_err *err)
{
    char *data;
    size_t len, line = 0;
    uint32_t cps[256];
    int rc = read_file(path, &data, &len, err);
    const char *p, *end, *a, *b;

    if (rc < 0)
        return rc;
    p = data;
    end = data + len;
    while (next_stripped_line(&p, end, &a, &b)) {
        const char *sp, *sp2;
        int64_t freq;
        long n;

        line++;
        sp = memchr(a, ' ', (size_t)(b - a));
        if (sp == NULL)
            goto bad;
        sp2 = memchr(sp + 1, ' ', (size_t)(b - sp - 1));
        if (sp2 == NULL)
            sp2 = b;
        if (!parse_freq(sp + 1, (size_t)(sp2 - sp - 1), &freq) || freq < 0)
            goto bad;
        n = decode_cps(a, (size_t)(sp - a), cps, 256);
        if (n < 0)
            goto bad;
        if ((rc = add_word(j, cps, (size_t)n, freq)) < 0) {
            free(data);
            return tok_err_set(
                err, rc, "dictionary '%s' line %zu: %s", path, line,
                rc == TOK_ERANGE ? "too many words" : tok_strerror(rc));
        }
        continue;
    bad:
        rc = tok_err_set(err, TOK_EFORMAT,
                         "invalid dictionary entry in '%s' at line %zu", path,
                         line);
        free(data);
        return rc;
    }
    free(data);
    if (j->total <= 0)
        return tok_err_set(err, TOK_EFORMAT, "dictionary '%s' is empty", path);
    return 0;
}

/* A tiny reader for the Python dict literals of finalseg's prob_*.py:
 * P={'B': number or {'key': number, ...}, ...}.  Keys are 'X' or '\uXXXX'. */
struct pyreader {
    const char *p, *end, *path;
};

static void
py_skip(struct pyreader *r)
{
    while (r->p < r->end && (is_ascii_space(*r->p)))
        r->p++;
}

static bool
py_char(struct pyreader *r, char c)
{
    py_skip(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return true;
    }
    return false;
}

static bool
py_key(struct pyreader *r, uint32_t *cp)
{
    py_skip(r);
    if (r->p >= r->end || *r->p != '\'')
        return false;
    r->p++;
    if (r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u') {
        char hex[5];
        char *e;

        memcpy(hex, r->p + 2, 4);
        hex[4] = '\0';
        *cp = (uint32_t)strtoul(hex, &e, 16);
        if (e != hex + 4)
            return false;
        r->p += 6;
    } else {
        size_t n = tok_utf8_decode(r->p, (size_t)(r->end - r->p), cp);
        if (n == 0)
            return false;
        r->p += n;
    }
    return r->p < r->end && *r->p++ == '\'';
}

static bool
py_number(struct pyreader *r, double *v)
{
    char *e;

    py_skip(r);
    *v = strtod(r->p, &e);
    if (e == r->p)
        return false;
    r->p = e;
    return true;
}

static int
state_index(uint32_t c)
{
    switch (c) {
    case 'B':
        return TOK_HMM_B;
    case 'M':
        return TOK_HMM_M;
    case 'E':
        return TOK_HMM_E;
    case 'S':
        return TOK_HMM_S;
    }
    return -1;
}

/* Parse one prob_*.py: depth 1 fills vec[state], depth 2 calls the table
 * for (state, key). */
static int
load_py_table(const char *dir, const char *name, int depth, double *vec,
              double (*trans)[4], double *emit, struct tok_err *err)
{
    char path[4096], *data;
    size_t len;
    struct pyreader r;
    int rc;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    rc = read_file(path, &data, &len, err);
    if (rc < 0)
        return rc;
    r.p = strstr(data, "P=");
    r.end = data + len;
    r.path = path;
    if (r.p == NULL)
        goto bad;
    r.p += 2;
    if (!py_char(&r, '{'))
        goto bad;
    do {
        uint32_t key;
        int s;

        if (!py_key(&r, &key) || (s = state_index(key)) < 0 ||
            !py_char(&r, ':'))
            goto bad;
        if (depth == 1) {
            if (!py_number(&r, &vec[s]))
                goto bad;
            continue;
        }
        if (!py_char(&r, '{'))
            goto bad;
        do {
            uint32_t k2;
            double v;

            if (!py_key(&r, &k2) || !py_char(&r, ':') || !py_number(&r, &v))
                goto bad;
            if (trans) {
                int s2 = state_index(k2);
                if (s2 < 0)
                    goto bad;
                trans[s][s2] = v;
            } else if (k2 >= TOK_HAN_LO && k2 <= TOK_HAN_HI) {
                emit[4 * (size_t)(k2 - TOK_HAN_LO) + (size_t)s] = v;
            }
        } while (py_char(&r, ','));
        if (!py_char(&r, '}'))
            goto bad;
    } while (py_char(&r, ','));
    if (!py_char(&r, '}'))
        goto bad;
    free(data);
    return 0;
bad : {
    size_t line = 1;
    for (const char *q = data; q < r.p && q < data + len; q++)
        line += *q == '\n';
    rc = tok_err_set(err, TOK_EFORMAT, "cannot parse '%s' at line %zu", path,
                     line);
}
    free(data);
    return rc;
}

static int
write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n) {
        ssize_t w = write(fd, c, n);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Drop the just written (and synced) model from the page cache: the
 * cutter that first maps it then reads it in through its mapping advised
 * for huge pages, which (on file systems with large folios) caches it in
 * 2 MB folios that every later open maps whole.  Written pages are cached
 * in whatever sizes the writes made.  Only a hint: 0 even if ignored. */
static int
drop_cached(int fd)
{
#ifdef POSIX_FADV_DONTNEED
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
#else
    (void)fd;
#endif
    return 0;
}

static void
put32(unsigned char *h, size_t off, uint32_t v)
{
    memcpy(h + off, &v, 4);
}

static void
put64(unsigned char *h, size_t off, uint64_t v)
{
    memcpy(h + off, &v, 8);
}

#define BLOOM_BYTES ((size_t)1 << (TOK_BLOOM_BITS - 3))

/* Section sizes for given counts: freq, edges, filter, root, emit. */
enum { SEC_FREQ, SEC_EDGES, SEC_FILTER, SEC_ROOT, SEC_EMIT, N_SEC };

static size_t
model_size(size_t n_nodes, size_t slots, size_t sec[N_SEC])
{
    sec[SEC_FREQ] = n_nodes * 8;
    sec[SEC_EDGES] = slots * sizeof(struct tok_jedge);
    sec[SEC_FILTER] = BLOOM_BYTES;
    sec[SEC_ROOT] = ROOT_N * sizeof(struct tok_jedge);
    sec[SEC_EMIT] = 4 * (size_t)TOK_EMIT_N * 8;
    return HEADER_SIZE + sec[SEC_FREQ] + sec[SEC_EDGES] + sec[SEC_FILTER] +
           sec[SEC_ROOT] + sec[SEC_EMIT];
}

/* The most slots any search of a table reads: the longest run of slots in
 * use (cyclically) plus the empty slot that ends it.  The table has an
 * empty slot (it is at most half full). */
static size_t
longest_probe(const struct tok_jedge *e, size_t slots)
{
    size_t first = 0, run = 0, longest = 0;

    while (e[first].key & TOK_JEDGE_USED)
        first++;
    for (size_t k = 1; k <= slots; k++) {
        if (e[(first + k) & (slots - 1)].key & TOK_JEDGE_USED) {
            if (++run > longest)
                longest = run;
        } else {
            run = 0;
        }
    }
    return longest + 1;
}

/* An edge and the weight order_edges() sorts it by. */
struct weighted_edge {
    double weight;
    struct tok_jedge edge;
};

/* Heaviest first; equal weights by key, so the model's bytes do not
 * depend on qsort. */
static int
by_weight(const void *a, const void *b)
{
    const struct weighted_edge *x = a, *y = b;

    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return (x->edge.key > y->edge.key) - (x->edge.key < y->edge.key);
}

/* Put the edges back into the table heaviest subtree first (the sum of
 * the dictionary frequencies of the words at and below the child), so
 * that the edges text walks through most often sit in their home slot:
 * a hit reads one slot and its key test goes the way the branch
 * predictor expects.  Same table, same edges, other slots: the format is
 * unchanged.  A child is created after its parent, so a pass over node
 * ids from the last adds each subtree into its parent (the root's
 * children, kept in root[], add into node 0, which nothing reads). */
static int
order_edges(struct tok_jieba *j)
{
    size_t slots = j->edge_mask + 1, n = 0;
    uint32_t *parent = calloc(j->n_nodes, sizeof(*parent));
    double *w = malloc(j->n_nodes * sizeof(*w));
    struct weighted_edge *all = malloc(j->n_edges * sizeof(*all));
    int rc = TOK_ENOMEM;

    if (parent == NULL || w == NULL || all == NULL)
        goto out;
    for (size_t k = 0; k < slots && n < j->n_edges; k++) {
        const struct tok_jedge *e = &j->edges[k];

        if (!(e->key & TOK_JEDGE_USED))
            continue;
        all[n++].edge = *e;
        parent[tok_jedge_child(e)] = (uint32_t)((e->key >> 21) & TOK_JNODE_MAX);
    }
    /* Sums of int64 frequencies stay below 2^53: exact in a double. */
    for (size_t k = 0; k < j->n_nodes; k++)
        w[k] = (double)j->freq[k];
    for (size_t k = j->n_nodes; k-- > 1;)
        w[parent[k]] += w[k];
    for (size_t k = 0; k < n; k++)
        all[k].weight = w[tok_jedge_child(&all[k].edge)];
    qsort(all, n, sizeof(*all), by_weight);
    memset(j->edges, 0, slots * sizeof(*j->edges));
    for (size_t k = 0; k < n; k++)
        edge_place(j->edges, j->edge_mask, &all[k].edge);
    rc = 0;
out:
    free(parent);
    free(w);
    free(all);
    return rc;
}

int
tok_jieba_compile(const char *dict_path, const char *hmm_dir,
                  const char *out_path, struct tok_err *err)
{
    struct tok_jieba *j;
    unsigned char h[HEADER_SIZE];
    size_t sec[N_SEC], total_size;
    char tmp[4096];
    double *emit;
    int rc, fd;

    rc = jieba_empty(&j, err);
    if (rc < 0)
        return rc;
    emit = malloc(4 * (size_t)TOK_EMIT_N * sizeof(*emit));
    if (emit == NULL) {
        tok_jieba_close(j);
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    }
    for (size_t i = 0; i < 4 * (size_t)TOK_EMIT_N; i++)
        emit[i] = MIN_FLOAT;
    j->emit_heap = emit;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            j->trans[a][b] = MIN_FLOAT;
    if ((rc = load_main_dict(j, dict_path, err)) < 0 ||
        (rc = load_py_table(hmm_dir, "prob_start.py", 1, j->start, NULL, NULL,
                            err)) < 0 ||
        (rc = load_py_table(hmm_dir, "prob_trans.py", 2, NULL, j->trans, NULL,
                            err)) < 0 ||
        (rc = load_py_table(hmm_dir, "prob_emit.py", 2, NULL, NULL, emit,
                            err)) < 0) {
        tok_jieba_close(j);
        return rc;
    }
    if ((rc = order_edges(j)) < 0) {
        tok_jieba_close(j);
        return tok_err_set(err, rc, "%s", tok_strerror(rc));
    }

    total_size = model_size(j->n_nodes, j->edge_mask + 1, sec);
    j->max_probe = longest_probe(j->edges, j->edge_mask + 1);
    memset(h, 0, sizeof(h));
    memcpy(h, MODEL_MAGIC, 8);
    put32(h, 8, MODEL_VERSION);
    put32(h, 12, HEADER_SIZE);
    put64(h, 16, j->n_nodes);
    put64(h, 24, j->edge_mask + 1);
    put64(h, 32, j->n_edges);
    put64(h, 40, j->n_words);
    put64(h, 48, (uint64_t)j->total);
    memcpy(h + 56, j->start, 32);
    memcpy(h + 88, j->trans, 128);
    put32(h, 216, TOK_HAN_LO);
    put32(h, 220, TOK_EMIT_N);
    put64(h, 224, total_size);
    put32(h, 232, TOK_BLOOM_BITS);
    put32(h, 236, (uint32_t)j->max_probe);

    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", out_path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        rc = tok_err_set(err, TOK_EIO, "cannot create '%s': %s", tmp,
                         strerror(errno));
        tok_jieba_close(j);
        return rc;
    }
    if (write_all(fd, h, sizeof(h)) < 0 ||
        write_all(fd, j->freq, sec[SEC_FREQ]) < 0 ||
        write_all(fd, j->edges, sec[SEC_EDGES]) < 0 ||
        write_all(fd, j->bloom, sec[SEC_FILTER]) < 0 ||
        write_all(fd, j->root, sec[SEC_ROOT]) < 0 ||
        write_all(fd, emit, sec[SEC_EMIT]) < 0 || fsync(fd) < 0 ||
        drop_cached(fd) < 0 || close(fd) < 0) {
        rc = tok_err_set(err, TOK_EIO, "cannot write '%s': %s", tmp,
                         strerror(errno));
        unlink(tmp);
        tok_jieba_close(j);
        return rc;
    }
    tok_jieba_close(j);
    if (rename(tmp, out_path) < 0) {
        rc = tok_err_set(err, TOK_EIO, "cannot rename '%s' to '%s': %s", tmp,
                         out_path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */

static uint64_t
get64(const unsigned char *h, size_t off)
{
    uint64_t v;

    memcpy(&v, h + off, 8);
    return v;
}

static uint32_t
get32(const unsigned char *h, size_t off)
{
    uint32_t v;

    memcpy(&v, h + off, 4);
    return v;
}

int
tok_jieba_open(struct tok_jieba **out, const char *path, struct tok_err *err)
{
    return tok_jieba_open_flags(out, path, 0, err);
}

int
tok_jieba_open_flags(struct tok_jieba **out, const char *path, int flags,
                     struct tok_err *err)
{
    struct tok_jieba *j;
    struct stat st;
    const unsigned char *h;
    size_t sec[N_SEC], n_nodes, slots, off;
    int fd, rc;

    *out = NULL;
    fd = open(path, O_RDONLY);
    if (fd < 0)
        return tok_err_set(err, TOK_EIO, "cannot open model '%s': %s", path,
                           strerror(errno));
    if (fstat(fd, &st) < 0) {
        rc = tok_err_set(err, TOK_EIO, "cannot stat model '%s': %s", path,
                         strerror(errno));
        close(fd);
        return rc;
    }
    if ((size_t)st.st_size < HEADER_SIZE) {
        close(fd);
        return tok_err_set(err, TOK_EFORMAT,
                           "model '%s' is too short (%lld bytes)", path,
                           (long long)st.st_size);
    }
    j = calloc(1, sizeof(*j));
    if (j == NULL) {
        close(fd);
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    }
    j->map_len = (size_t)st.st_size;
    j->map = map_model(fd, j->map_len);
    close(fd);
    if (j->map == MAP_FAILED) {
        j->map = NULL;
        free(j);
        return tok_err_set(err, TOK_EIO, "cannot map model '%s': %s", path,
                           strerror(errno));
    }
    h = j->map;
    if (memcmp(h, MODEL_MAGIC, 8) != 0) {
        rc = tok_err_set(err, TOK_EFORMAT,
                         "'%s' is not a jieba model (bad magic)", path);
        goto fail;
    }
    if (get32(h, 8) != MODEL_VERSION || get32(h, 12) != HEADER_SIZE) {
        rc = tok_err_set(err, TOK_EFORMAT,
                         "model '%s' has version %u, expected %u; rebuild it",
                         path, get32(h, 8), MODEL_VERSION);
        goto fail;
    }
    n_nodes = get64(h, 16);
    slots = get64(h, 24);
    if (n_nodes == 0 || n_nodes > (size_t)TOK_JNODE_MAX + 1 || slots == 0 ||
        (slots & (slots - 1)) != 0 || slots > ((size_t)1 << 32) ||
        get32(h, 216) != TOK_HAN_LO || get32(h, 220) != TOK_EMIT_N ||
        get64(h, 32) >= slots || (int64_t)get64(h, 48) <= 0 ||
        get32(h, 232) != TOK_BLOOM_BITS || get32(h, 236) == 0 ||
        get32(h, 236) > slots) {
        rc = tok_err_set(err, TOK_EFORMAT, "model '%s': corrupt header", path);
        goto fail;
    }
    if (model_size(n_nodes, slots, sec) != j->map_len ||
        get64(h, 224) != j->map_len) {
        rc = tok_err_set(err, TOK_EFORMAT,
                         "model '%s': size %zu does not match its header "
                         "(truncated?)",
                         path, j->map_len);
        goto fail;
    }
    j->n_nodes = j->cap_nodes = n_nodes;
    j->edge_mask = slots - 1;
    j->n_edges = get64(h, 32);
    j->n_words = get64(h, 40);
    j->total = (int64_t)get64(h, 48);
    memcpy(j->start, h + 56, 32);
    memcpy(j->trans, h + 88, 128);
    off = HEADER_SIZE;
    j->freq = (int64_t *)((char *)j->map + off);
    off += sec[SEC_FREQ];
    j->edges = (struct tok_jedge *)((char *)j->map + off);
    off += sec[SEC_EDGES];
    j->bloom = (uint64_t *)((char *)j->map + off);
    off += sec[SEC_FILTER];
    j->root = (struct tok_jedge *)((char *)j->map + off);
    off += sec[SEC_ROOT];
    j->emit = (const double *)((const char *)j->map + off);
    j->max_probe = get32(h, 236);
    j->logtotal = log((double)j->total);
    rc = compile_regexes(j, err);
    if (rc < 0)
        goto fail;
    if (!(flags & TOK_JIEBA_OPEN_MAPPED))
        edges_to_huge_pages(j, flags & TOK_JIEBA_OPEN_COPY);
    *out = j;
    return 0;
fail:
    j->freq = NULL;
    j->edges = NULL;
    j->bloom = NULL;
    j->root = NULL;
    tok_jieba_close(j);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* User dictionaries                                                         */

/* Copy the mapped arrays to the heap, so words can be added. */
/* Whether the node ids and the count of slots in use of a mapped model
 * are what a valid file has.  The segmenter never needs this (a node id
 * is only ever hashed, and searches are bounded by max_probe, so a damaged
 * table gives wrong words but cannot crash or hang it); adding words does,
 * since it indexes freq by node id and needs an empty slot to end each
 * search.  One pass over the 16 MB table: done only then, not at open. */
static int
check_node_ids(const struct tok_jieba *j, const char *dict_path,
               struct tok_err *err)
{
    size_t used = 0, slots = j->edge_mask + 1, n_nodes = j->n_nodes;
    uint64_t bad = 0;

    for (size_t i = 0; i < ROOT_N; i++) {
        uint64_t key = j->root[i].key, child = (key >> 42) & TOK_JNODE_MAX;

        bad |= (key >> 63) &
               ((uint64_t)(child >= n_nodes) | (uint64_t)(child == 0));
    }
    /* No branch a slot. */
    for (size_t i = 0; i < slots; i++) {
        uint64_t key = j->edges[i].key, u = key >> 63;
        uint64_t parent = (key >> 21) & TOK_JNODE_MAX;
        uint64_t child = (key >> 42) & TOK_JNODE_MAX;

        used += u;
        bad |= u & ((uint64_t)(parent >= n_nodes) |
                    (uint64_t)(child >= n_nodes) | (uint64_t)(child == 0) |
                    (uint64_t)((key & 0x1FFFFF) > 0x10FFFF));
    }
    if (bad)
        return tok_err_set(err, TOK_EFORMAT,
                           "cannot load user dictionary '%s': the model is "
                           "damaged (node id out of range)",
                           dict_path);
    if (used != j->n_edges)
        return tok_err_set(err, TOK_EFORMAT,
                           "cannot load user dictionary '%s': the model is "
                           "damaged (%zu edges in use, header says %zu)",
                           dict_path, used, j->n_edges);
    return 0;
}

/* Copy the mapped arrays to the heap, so words can be added (after
 * checking what adding words relies on: see check_node_ids). */
static int
make_private(struct tok_jieba *j, const char *dict_path, struct tok_err *err)
{
    int64_t *f;
    struct tok_jedge *root, *e = j->edges;
    uint64_t *bloom;
    size_t slots = j->edge_mask + 1;
    bool copy_edges = !is_heap(j, j->edges); /* still the mapping's */
    int rc;

    if (j->heap)
        return 0;
    if ((rc = check_node_ids(j, dict_path, err)) < 0)
        return rc;
    f = malloc(j->n_nodes * sizeof(*f));
    root = malloc(ROOT_N * sizeof(*root));
    bloom = malloc(BLOOM_BYTES);
    if (copy_edges)
        e = edges_map(slots);
    if (f == NULL || root == NULL || e == NULL || bloom == NULL) {
        free(f);
        free(root);
        if (copy_edges)
            edges_unmap(e, slots);
        free(bloom);
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    }
    memcpy(f, j->freq, j->n_nodes * sizeof(*f));
    memcpy(root, j->root, ROOT_N * sizeof(*root));
    if (copy_edges)
        memcpy(e, j->edges, slots * sizeof(*e));
    memcpy(bloom, j->bloom, BLOOM_BYTES);
    j->freq = f;
    j->root = root;
    j->edges = e;
    j->bloom = bloom;
    j->cap_nodes = j->n_nodes;
    j->max_probe = slots; /* n_edges < slots: every search ends */
    j->heap = true;
    return 0;
}

/* jieba's suggest_freq(word, tune=False) for a single string. */
static int
suggest_freq(struct tok_jieba *j, const char *w, size_t len,
             const uint32_t *cps, size_t n, int64_t *out)
{
    struct tok_words ws;
    double ftotal = (double)j->total, freq = 1.0;
    uint32_t node = 0;
    int64_t fw, f;
    int rc;

    tok_words_init(&ws);
    rc = tok_jieba_cut(j, w, len, TOK_JIEBA_TRUSTED, &ws, NULL);
    if (rc < 0) {
        tok_words_release(&ws);
        return rc;
    }
    for (size_t k = 0; k < ws.n; k++) {
        uint32_t seg[256];
        long m =
            decode_cps(w + ws.starts[k], ws.ends[k] - ws.starts[k], seg, 256);
        uint32_t nd = 0;
        int64_t fs = 1;

        for (long i = 0; i < m && (i == 0 || nd); i++)
            nd = tok_jieba_child(j, nd, seg[i]);
        if (m > 0 && nd)
            fs = j->freq[nd]; /* FREQ.get(seg, 1): a prefix gives 0 */
        freq *= (double)fs / ftotal;
    }
    tok_words_release(&ws);
    for (size_t i = 0; i < n && (i == 0 || node); i++)
        node = tok_jieba_child(j, node, cps[i]);
    fw = (n > 0 && node) ? j->freq[node] : 1;
    f = (int64_t)(freq * (double)j->total) + 1;
    *out = f > fw ? f : fw;
    return 0;
}

int64_t
tok_jieba_load_userdict(struct tok_jieba *j, const char *path,
                        struct tok_err *err)
{
    char *data;
    size_t len, line = 0;
    int64_t n_added = 0;
    int rc = read_file(path, &data, &len, err);
    const char *p, *end, *a, *b;

    if (rc < 0)
        return rc;
    if ((rc = make_private(j, path, err)) < 0) {
        free(data);
        return rc;
    }
    p = data;
    end = data + len;
    while (next_stripped_line(&p, end, &a, &b)) {
        const char *word_end, *q;
        uint32_t cps[256];
        int64_t freq = -1;
        long n;

        line++;
        if (tok_utf8_check(a, (size_t)(b - a)) != (size_t)(b - a)) {
            free(data);
            return tok_err_set(err, TOK_EFORMAT,
                               "user dictionary '%s' line %zu: not UTF-8", path,
                               line);
        }
        if (line == 1 && b - a >= 3 && memcmp(a, "\xEF\xBB\xBF", 3) == 0)
            a += 3;
        if (a == b)
            continue;
        /* re_userdict: ^(.+?)( [0-9]+)?( [a-z]+)?$ -- the lazy word takes
         * the shortest prefix, so peel a tag, then a freq, off the end, as
         * long as a word of at least one character remains. */
        word_end = b;
        q = word_end;
        while (q > a && *(q - 1) >= 'a' && *(q - 1) <= 'z')
            q--;
        if (q < word_end && q - 1 > a && *(q - 1) == ' ')
            word_end = q - 1;
        q = word_end;
        while (q > a && *(q - 1) >= '0' && *(q - 1) <= '9')
            q--;
        if (q < word_end && q - 1 > a && *(q - 1) == ' ') {
            if (!parse_freq(q, (size_t)(word_end - q), &freq)) {
                free(data);
                return tok_err_set(err, TOK_EFORMAT,
                                   "user dictionary '%s' line %zu: frequency "
                                   "too large",
                                   path, line);
            }
            word_end = q - 1;
        }
        n = decode_cps(a, (size_t)(word_end - a), cps, 256);
        if (n <= 0) {
            free(data);
            return tok_err_set(err, TOK_EFORMAT,
                               "user dictionary '%s' line %zu: word longer "
                               "than 256 characters",
                               path, line);
        }
        if (freq < 0 && suggest_freq(j, a, (size_t)(word_end - a), cps,
                                     (size_t)n, &freq) < 0)
            goto nomem;
        if ((rc = add_word(j, cps, (size_t)n, freq)) < 0) {
            free(data);
            return tok_err_set(
                err, rc, "user dictionary '%s' line %zu: %s", path, line,
                rc == TOK_ERANGE ? "too many words" : tok_strerror(rc));
        }
        if (freq == 0) {
            uint32_t node = 0;

            if (j->force_split == NULL) {
                j->force_split = calloc(j->cap_nodes, 1);
                if (j->force_split == NULL)
                    goto nomem;
            }
            for (long i = 0; i < n; i++)
                node = tok_jieba_child(j, node, cps[i]);
            j->force_split[node] = 1;
        }
        j->logtotal = log((double)j->total);
        n_added++;
    }
    free(data);
    return n_added;
nomem:
    free(data);
    return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
}

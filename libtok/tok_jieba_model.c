/* SPDX-License-Identifier: MIT */
/*
 * tok_jieba_model.c: jieba's prefix dictionary and HMM tables: compiling
 * them from Debian's python3-jieba files into one binary model, mapping that
 * model, and adding user dictionaries on top.
 *
 * The dictionary is a trie of code points (jieba's FREQ maps every word and
 * every prefix of a word; a node's freq is 0 for a prefix only).  Its
 * edges sit in one open-addressing hash table keyed by (parent, code
 * point), guarded by a blocked Bloom filter, a node's id being its edge's
 * slot; the root's children in the BMP also in a direct table.  Each slot
 * holds an index into a table of the dictionary's distinct frequencies
 * (about 5,000) and their logarithms.  The file layout is documented in
 * jieba-model(5).
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
#define MODEL_VERSION 8u
#define HEADER_SIZE   256u
#define ROOT_N        TOK_JROOT_N
#define MIN_FLOAT     (-3.14e100)
#define BLOOM_BYTES   ((size_t)1 << (TOK_BLOOM_BITS - 3))

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

uint32_t
tok_jieba_child(const struct tok_jieba *j, uint32_t node, uint32_t cp)
{
    uint32_t child = 0;
    uint64_t v = tok_jieba_step(j, node, cp, &child);

    return (v & TOK_JSLOT_USED) ? child : 0;
}

/* FREQ of a node: 0 for the root and for a prefix only. */
static int64_t
node_freq(const struct tok_jieba *j, uint32_t node)
{
    if (node == 0)
        return 0;
    return j->freqv[tok_jslot_val(j->slots[node]) & j->vals_mask];
}

/* ------------------------------------------------------------------------ */
/* The edge table's memory                                                   */

/* The DAG walk reads the 8 MB edge table at random.  On 4 KB pages that
 * is 2048 pages, as many as the second-level TLB holds, so most reads also
 * walk the page tables; on 2 MB pages the table takes 4 TLB entries
 * (segment: 5-8 % less CPU on 18.7 MB, docs/benchmarks-history.md).  The
 * model is mapped 2 MB aligned and advised MADV_HUGEPAGE: where the file
 * system keeps the file's cached pages in 2 MB folios (ext4 does on Linux
 * 6.18, when the file was read in through such a mapping), the kernel
 * maps them whole, with no copy and no extra memory.  Where it does
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

    return (slots * sizeof(uint64_t) + page - 1) / page * page;
}

/* A zeroed edge table of `slots` slots, 2 MB aligned and advised for huge
 * pages (the advice is best effort: on 4 KB pages the table works the
 * same); NULL when out of memory.  Free with edges_unmap(). */
static uint64_t *
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
    return (uint64_t *)a;
}

static void
edges_unmap(uint64_t *e, size_t slots)
{
    if (e != NULL)
        munmap(e, edges_bytes(slots));
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
    uintptr_t a = (uintptr_t)j->slots,
              b = a + (j->edge_mask + 1) * sizeof(*j->slots);
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
 * them: the file's own, else a copy (8 MB, and a few milliseconds to
 * fault in: worth it on a long input).  With copy, copy it in any case. */
static void
edges_to_huge_pages(struct tok_jieba *j, bool copy)
{
    size_t slots = j->edge_mask + 1;
    uint64_t *e;

    if (!copy && (!huge_pages_offered() || edges_on_file_huge_pages(j)))
        return; /* the mapping serves */
    if ((e = edges_map(slots)) == NULL)
        return;
    /* By the huge page, each dropped from the mapping once copied, so the
     * resident set never holds the table twice. */
    for (size_t at = 0, len = slots * sizeof(*e); at < len; at += HUGE_PAGE) {
        size_t n = len - at < HUGE_PAGE ? len - at : HUGE_PAGE;

        memcpy((char *)e + at, (const char *)j->slots + at, n);
        release_mapped(j, (const char *)j->slots + at, n);
    }
    j->slots = e;
}

/* ------------------------------------------------------------------------ */
/* Building the trie (heap mode: compiling, adding user words)              */

/* The value index of freq (> 0), added to the value tables if new:
 * TOK_ERANGE past TOK_JVAL_MAX distinct frequencies. */
static void
val_of_put(struct tok_jieba *j, int64_t freq, uint32_t index)
{
    size_t at = (size_t)(((uint64_t)freq * 0x9E3779B97F4A7C15ULL) >> 32) &
                j->val_of_mask;

    while (j->val_of[at])
        at = (at + 1) & j->val_of_mask;
    j->val_of[at] = index;
}

/* The hash of frequencies to value indexes, for cap entries (a power of
 * two above twice the count). */
static int
val_of_rebuild(struct tok_jieba *j, size_t cap)
{
    uint32_t *t = calloc(cap, sizeof(*t));

    if (t == NULL)
        return TOK_ENOMEM;
    free(j->val_of);
    j->val_of = t;
    j->val_of_mask = cap - 1;
    for (size_t k = 1; k <= j->n_vals; k++)
        val_of_put(j, j->freqv[k], (uint32_t)k);
    return 0;
}

static int
value_index(struct tok_jieba *j, int64_t freq, uint32_t *out)
{
    size_t at = (size_t)(((uint64_t)freq * 0x9E3779B97F4A7C15ULL) >> 32) &
                j->val_of_mask;
    size_t cap = j->vals_mask + 1;
    int rc;

    for (; j->val_of[at]; at = (at + 1) & j->val_of_mask) {
        if (j->freqv[j->val_of[at]] == freq) {
            *out = j->val_of[at];
            return 0;
        }
    }
    if (j->n_vals == TOK_JVAL_MAX)
        return TOK_ERANGE;
    if (j->n_vals + 1 == cap) {
        /* The arrays are the heap's (make_private() copied them). */
        double *lf = realloc((double *)j->logf, 2 * cap * sizeof(*lf));
        int64_t *fv;

        if (lf == NULL)
            return TOK_ENOMEM;
        j->logf = lf;
        fv = realloc((int64_t *)j->freqv, 2 * cap * sizeof(*fv));
        if (fv == NULL)
            return TOK_ENOMEM;
        j->freqv = fv;
        memset(lf + cap, 0, cap * sizeof(*lf));
        memset(fv + cap, 0, cap * sizeof(*fv));
        j->vals_mask = 2 * cap - 1;
    }
    ((double *)j->logf)[j->n_vals + 1] = log((double)freq);
    ((int64_t *)j->freqv)[j->n_vals + 1] = freq;
    j->n_vals++;
    if (2 * j->n_vals > j->val_of_mask) {
        if ((rc = val_of_rebuild(j, 2 * (j->val_of_mask + 1))) < 0)
            return rc;
    } else {
        val_of_put(j, freq, (uint32_t)j->n_vals);
    }
    *out = (uint32_t)j->n_vals;
    return 0;
}

/* Set the value index and leafness of node (not the root), in its slot
 * and, for a child of the root by a BMP code point, in root[]. */
static void
set_node(struct tok_jieba *j, uint32_t node, uint32_t val, bool leaf)
{
    uint64_t v = (j->slots[node] & (TOK_JSLOT_USED | TOK_JSLOT_KEY)) |
                 ((uint64_t)val << TOK_JSLOT_VAL_SHIFT) |
                 (leaf ? TOK_JSLOT_LEAF : 0);

    j->slots[node] = v;
    if (tok_jslot_parent(v) == 0 && tok_jslot_cp(v) < ROOT_N)
        j->root[tok_jslot_cp(v)] = (v & ~TOK_JSLOT_KEY) | node;
}

/* Put the edge (parent, cp) into the first free slot from its home (the
 * table has one), with the child's value and leafness; returns the
 * slot, the child's id. */
static uint32_t
edge_insert(struct tok_jieba *j, uint32_t parent, uint32_t cp, uint64_t bits)
{
    size_t i = tok_jedge_hash(parent, cp) & j->edge_mask;
    uint64_t v = TOK_JSLOT_USED | bits | tok_jedge_key(parent, cp);

    while (j->slots[i] & TOK_JSLOT_USED)
        i = (i + 1) & j->edge_mask;
    j->slots[i] = v;
    if (parent == 0 && cp < ROOT_N)
        j->root[cp] = (v & ~TOK_JSLOT_KEY) | i;
    else
        tok_bloom_set(j->bloom, parent, cp);
    return (uint32_t)i;
}

/* Each node's depth (the root's 0) into depth[slots], from the parent
 * ids in the slots; TOK_EFORMAT if a parent is not a node or the parents
 * go round in a circle (a damaged file). */
static int
node_depths(const struct tok_jieba *j, uint32_t *depth)
{
    size_t slots = j->edge_mask + 1;
    uint32_t *chain = malloc(slots * sizeof(*chain));

    if (chain == NULL)
        return TOK_ENOMEM;
    /* UINT32_MAX: not known yet. */
    memset(depth, 0xff, slots * sizeof(*depth));
    depth[0] = 0;
    for (size_t q = 1; q < slots; q++) {
        size_t n = 0;
        uint32_t at = (uint32_t)q, d;

        if (!(j->slots[q] & TOK_JSLOT_USED) || depth[q] != UINT32_MAX)
            continue;
        /* Up to a node of known depth, then back down. */
        while (depth[at] == UINT32_MAX) {
            uint32_t parent = tok_jslot_parent(j->slots[at]);

            if (n == slots || parent >= slots ||
                !(j->slots[parent] & TOK_JSLOT_USED)) {
                free(chain);
                return TOK_EFORMAT;
            }
            chain[n++] = at;
            at = parent;
        }
        for (d = depth[at]; n > 0; n--)
            depth[chain[n - 1]] = ++d;
    }
    free(chain);
    return 0;
}

/* A node to place, and the order relayout() places them in. */
struct placing {
    double weight; /* the frequencies at and below it, or 0 */
    uint32_t depth, node;
};

static int
by_placing(const void *a, const void *b)
{
    const struct placing *x = a, *y = b;

    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* Lay the edges out again in a table of `slots` slots (heap mode), every
 * parent before its children, as the ids are the slots: heaviest subtree
 * first (the sum of the frequencies of the words at and below the child)
 * when by_weight, so that the edges text walks through most often sit in
 * their home slot, else by depth.  Ties by depth, then by old id: the
 * same trie gives the same table.  The filter, root[] and force_split
 * follow the new ids. */
static int
relayout(struct tok_jieba *j, size_t slots, bool by_weight)
{
    size_t old_slots = j->edge_mask + 1, n = 0;
    uint64_t *old = j->slots, *fresh;
    uint32_t *depth = malloc(old_slots * sizeof(*depth));
    uint32_t *newid = malloc(old_slots * sizeof(*newid));
    struct placing *all = malloc((j->n_edges + 1) * sizeof(*all));
    double *w = NULL;
    uint8_t *fs = NULL;
    int rc = TOK_ENOMEM;

    if (slots - 1 > TOK_JNODE_MAX) {
        rc = TOK_ERANGE;
        goto out;
    }
    if (depth == NULL || newid == NULL || all == NULL ||
        (by_weight && (w = calloc(old_slots, sizeof(*w))) == NULL) ||
        (j->force_split && (fs = calloc(slots, 1)) == NULL))
        goto out;
    if ((rc = node_depths(j, depth)) < 0)
        goto out;
    for (size_t q = 1; q < old_slots; q++) {
        if (!(old[q] & TOK_JSLOT_USED))
            continue;
        all[n].depth = depth[q];
        all[n].node = (uint32_t)q;
        all[n].weight = 0;
        n++;
    }
    if (by_weight) {
        /* Sums of int64 frequencies stay below 2^53: exact in a double.
         * Deepest first, each node adds its sum into its parent's. */
        for (size_t k = 0; k < n; k++)
            w[all[k].node] = (double)node_freq(j, all[k].node);
        for (size_t k = 0; k < n; k++)
            all[k].weight = (double)all[k].depth; /* deepest first */
        qsort(all, n, sizeof(*all), by_placing);
        for (size_t k = 0; k < n; k++) {
            uint32_t q = all[k].node, parent = tok_jslot_parent(old[q]);

            if (parent)
                w[parent] += w[q];
        }
        for (size_t k = 0; k < n; k++)
            all[k].weight = w[all[k].node];
    }
    qsort(all, n, sizeof(*all), by_placing);
    if ((fresh = edges_map(slots)) == NULL) {
        rc = TOK_ENOMEM;
        goto out;
    }
    j->slots = fresh;
    j->edge_mask = slots - 1;
    j->slots[0] = TOK_JSLOT_SENTINEL;
    memset(j->root, 0, ROOT_N * sizeof(*j->root));
    memset(j->bloom, 0, BLOOM_BYTES);
    newid[0] = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t q = all[k].node;
        uint64_t v = old[q];

        newid[q] = edge_insert(j, newid[tok_jslot_parent(v)], tok_jslot_cp(v),
                               v & (TOK_JSLOT_LEAF | ((uint64_t)TOK_JVAL_MAX
                                                      << TOK_JSLOT_VAL_SHIFT)));
        if (fs)
            fs[newid[q]] = j->force_split[q];
    }
    if (fs) {
        free(j->force_split);
        j->force_split = fs;
        fs = NULL;
    }
    j->max_probe = slots; /* kept at most half full: every search ends */
    if (is_heap(j, old))
        edges_unmap(old, old_slots);
    rc = 0;
out:
    free(depth);
    free(newid);
    free(all);
    free(w);
    free(fs);
    return rc;
}

/* The node of prefix cps[0..n) (n >= 1), creating missing nodes as
 * prefix-only leaves; *fresh tells whether that node is new.  A node that
 * gains a child stops being a leaf.  The table grows first if the n edges
 * could take it past half full (growing changes every id).  Returns 0,
 * TOK_ENOMEM or TOK_ERANGE (more than 2^22 slots). */
static int
trie_insert(struct tok_jieba *j, const uint32_t *cps, size_t n, uint32_t *out,
            bool *fresh)
{
    uint32_t node = 0;
    size_t slots = j->edge_mask + 1;

    while (2 * (j->n_edges + 1 + n) > slots)
        slots *= 2;
    if (slots > j->edge_mask + 1) {
        int rc = relayout(j, slots, false);

        if (rc < 0)
            return rc;
    }
    *fresh = false;
    for (size_t k = 0; k < n; k++) {
        uint32_t child;
        uint64_t v = tok_jieba_step(j, node, cps[k], &child);

        *fresh = !(v & TOK_JSLOT_USED);
        if (*fresh) {
            if (node != 0 && (j->slots[node] & TOK_JSLOT_LEAF))
                set_node(j, node, tok_jslot_val(j->slots[node]), false);
            child = edge_insert(j, node, cps[k], TOK_JSLOT_LEAF);
            j->n_edges++;
        }
        node = child;
    }
    *out = node;
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
    uint32_t node, val = 0;
    bool fresh;
    int64_t old;
    int rc = trie_insert(j, cps, n, &node, &fresh);

    if (rc < 0 || (freq > 0 && (rc = value_index(j, freq, &val)) < 0))
        return rc;
    old = node_freq(j, node);
    if (old == 0 && freq > 0)
        j->n_words++;
    else if (old > 0 && freq == 0)
        j->n_words--;
    set_node(j, node, val, (j->slots[node] & TOK_JSLOT_LEAF) != 0);
    j->total += freq;
    return 0;
}

static void
jieba_free_arrays(struct tok_jieba *j)
{
    if (is_heap(j, j->slots))
        edges_unmap(j->slots, j->edge_mask + 1);
    if (is_heap(j, j->root))
        free(j->root);
    if (is_heap(j, j->bloom))
        free(j->bloom);
    if (is_heap(j, j->logf))
        free((double *)j->logf);
    if (is_heap(j, j->freqv))
        free((int64_t *)j->freqv);
    free(j->val_of);
    free(j->force_split);
    free(j->emit_heap);
}

/* ------------------------------------------------------------------------ */
/* Regular expressions (shared, compiled once per segmenter)                 */

/* finalseg's re_skip, restated for PCRE2 in UTF mode (its \d only ever
 * sees ASCII digits).  jieba's other regexes are character classes (or,
 * for re_skip_default in accurate mode, change nothing: every character
 * between runs is a word of its own, "\r\n" aside), which the cutter
 * tests on the code points it decodes anyway
 * (docs/benchmarks-history.md). */
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
    const size_t vals = 1024;

    *out = NULL;
    if (j == NULL)
        goto nomem;
    j->heap = true;
    j->root = calloc(ROOT_N, sizeof(*j->root));
    j->bloom = calloc(BLOOM_BYTES, 1);
    j->logf = calloc(vals, sizeof(*j->logf));
    j->freqv = calloc(vals, sizeof(*j->freqv));
    j->vals_mask = vals - 1;
    j->slots = edges_map((size_t)1 << 16);
    if (j->slots != NULL) {
        j->edge_mask = ((size_t)1 << 16) - 1;
        j->max_probe = j->edge_mask + 1;
        j->slots[0] = TOK_JSLOT_SENTINEL;
    }
    if (j->root == NULL || j->bloom == NULL || j->logf == NULL ||
        j->freqv == NULL || j->slots == NULL || val_of_rebuild(j, 64) < 0)
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

/* Section sizes for given counts: edges, filter, root, the two value
 * tables, emit. */
enum { SEC_EDGES, SEC_FILTER, SEC_ROOT, SEC_LOGF, SEC_FREQ, SEC_EMIT, N_SEC };

static size_t
model_size(size_t slots, size_t vals, size_t sec[N_SEC])
{
    size_t total = HEADER_SIZE;

    sec[SEC_EDGES] = slots * sizeof(uint64_t);
    sec[SEC_FILTER] = BLOOM_BYTES;
    sec[SEC_ROOT] = ROOT_N * sizeof(uint64_t);
    sec[SEC_LOGF] = vals * sizeof(double);
    sec[SEC_FREQ] = vals * sizeof(int64_t);
    sec[SEC_EMIT] = 4 * (size_t)TOK_EMIT_N * 8;
    for (int k = 0; k < N_SEC; k++)
        total += sec[k];
    return total;
}

/* The most slots any search of a table reads: the longest run of slots in
 * use (cyclically) plus the empty slot that ends it.  The table has an
 * empty slot (it is at most half full). */
static size_t
longest_probe(const uint64_t *e, size_t slots)
{
    size_t first = 0, run = 0, longest = 0;

    while (e[first] & TOK_JSLOT_USED)
        first++;
    for (size_t k = 1; k <= slots; k++) {
        if (e[(first + k) & (slots - 1)] & TOK_JSLOT_USED) {
            if (++run > longest)
                longest = run;
        } else {
            run = 0;
        }
    }
    return longest + 1;
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
    /* Heaviest first, in the table's final size. */
    if ((rc = relayout(j, j->edge_mask + 1, true)) < 0) {
        tok_jieba_close(j);
        return tok_err_set(err, rc, "%s", tok_strerror(rc));
    }

    total_size = model_size(j->edge_mask + 1, j->vals_mask + 1, sec);
    j->max_probe = longest_probe(j->slots, j->edge_mask + 1);
    memset(h, 0, sizeof(h));
    memcpy(h, MODEL_MAGIC, 8);
    put32(h, 8, MODEL_VERSION);
    put32(h, 12, HEADER_SIZE);
    put64(h, 16, j->n_edges + 1);
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
    put32(h, 240, (uint32_t)j->n_vals);
    put32(h, 244, (uint32_t)(j->vals_mask + 1));

    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", out_path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        rc = tok_err_set(err, TOK_EIO, "cannot create '%s': %s", tmp,
                         strerror(errno));
        tok_jieba_close(j);
        return rc;
    }
    if (write_all(fd, h, sizeof(h)) < 0 ||
        write_all(fd, j->slots, sec[SEC_EDGES]) < 0 ||
        write_all(fd, j->bloom, sec[SEC_FILTER]) < 0 ||
        write_all(fd, j->root, sec[SEC_ROOT]) < 0 ||
        write_all(fd, j->logf, sec[SEC_LOGF]) < 0 ||
        write_all(fd, j->freqv, sec[SEC_FREQ]) < 0 ||
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
    size_t sec[N_SEC], n_edges, slots, vals, n_vals, off;
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
    n_edges = get64(h, 32);
    slots = get64(h, 24);
    n_vals = get32(h, 240);
    vals = get32(h, 244);
    if (get64(h, 16) != n_edges + 1 || slots < 2 ||
        (slots & (slots - 1)) != 0 || slots - 1 > TOK_JNODE_MAX ||
        n_edges >= slots || get32(h, 216) != TOK_HAN_LO ||
        get32(h, 220) != TOK_EMIT_N || (int64_t)get64(h, 48) <= 0 ||
        get32(h, 232) != TOK_BLOOM_BITS || get32(h, 236) == 0 ||
        get32(h, 236) > slots || vals == 0 || (vals & (vals - 1)) != 0 ||
        vals - 1 > TOK_JVAL_MAX || n_vals >= vals) {
        rc = tok_err_set(err, TOK_EFORMAT, "model '%s': corrupt header", path);
        goto fail;
    }
    if (model_size(slots, vals, sec) != j->map_len ||
        get64(h, 224) != j->map_len) {
        rc = tok_err_set(err, TOK_EFORMAT,
                         "model '%s': size %zu does not match its header "
                         "(truncated?)",
                         path, j->map_len);
        goto fail;
    }
    j->edge_mask = slots - 1;
    j->n_edges = n_edges;
    j->n_vals = n_vals;
    j->vals_mask = vals - 1;
    j->n_words = get64(h, 40);
    j->total = (int64_t)get64(h, 48);
    memcpy(j->start, h + 56, 32);
    memcpy(j->trans, h + 88, 128);
    off = HEADER_SIZE;
    j->slots = (uint64_t *)((char *)j->map + off);
    off += sec[SEC_EDGES];
    j->bloom = (uint64_t *)((char *)j->map + off);
    off += sec[SEC_FILTER];
    j->root = (uint64_t *)((char *)j->map + off);
    off += sec[SEC_ROOT];
    j->logf = (const double *)((const char *)j->map + off);
    off += sec[SEC_LOGF];
    j->freqv = (const int64_t *)((const char *)j->map + off);
    off += sec[SEC_FREQ];
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
    j->slots = NULL;
    j->bloom = NULL;
    j->root = NULL;
    j->logf = NULL;
    j->freqv = NULL;
    tok_jieba_close(j);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* User dictionaries                                                         */

/* Whether the slots of a mapped model are what a valid file has.  The
 * segmenter never needs this (a node id is only ever hashed, a value index
 * is masked into its table, and searches are bounded by max_probe, so a
 * damaged table gives wrong words but cannot crash or hang it); adding
 * words does: growing the table follows each node's parent to the root
 * (see relayout), and every search must end at an empty slot.  One pass
 * over the 8 MB table: done only then, not at open. */
static int
check_model(const struct tok_jieba *j, const char *dict_path,
            struct tok_err *err)
{
    size_t used = 0, slots = j->edge_mask + 1;
    uint64_t bad = j->slots[0] != TOK_JSLOT_SENTINEL;
    uint32_t *depth;
    int rc;

    for (size_t cp = 0; cp < ROOT_N; cp++) {
        uint64_t r = j->root[cp];
        size_t child = r & TOK_JNODE_MAX;

        if (!(r & TOK_JSLOT_USED))
            continue;
        bad |=
            child == 0 || child >= slots ||
            (j->slots[child] & ~(uint64_t)TOK_JNODE_MAX) !=
                (r & ~(uint64_t)TOK_JNODE_MAX) ||
            (j->slots[child] & TOK_JSLOT_KEY) != tok_jedge_key(0, (uint32_t)cp);
    }
    /* No branch a slot. */
    for (size_t i = 1; i < slots; i++) {
        uint64_t v = j->slots[i], u = v >> 63;

        used += u;
        bad |= u & ((uint64_t)(tok_jslot_parent(v) >= slots) |
                    (uint64_t)(tok_jslot_cp(v) > 0x10FFFF) |
                    (uint64_t)(tok_jslot_val(v) > j->n_vals));
    }
    if (bad)
        return tok_err_set(err, TOK_EFORMAT,
                           "cannot load user dictionary '%s': the model is "
                           "damaged (a slot out of range)",
                           dict_path);
    if (used != j->n_edges)
        return tok_err_set(err, TOK_EFORMAT,
                           "cannot load user dictionary '%s': the model is "
                           "damaged (%zu edges in use, header says %zu)",
                           dict_path, used, j->n_edges);
    if ((depth = malloc(slots * sizeof(*depth))) == NULL)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    rc = node_depths(j, depth);
    free(depth);
    if (rc == TOK_ENOMEM)
        return tok_err_set(err, rc, "%s", tok_strerror(rc));
    if (rc < 0)
        return tok_err_set(err, TOK_EFORMAT,
                           "cannot load user dictionary '%s': the model is "
                           "damaged (a node's parents do not reach the root)",
                           dict_path);
    return 0;
}

/* Copy the mapped arrays to the heap, so words can be added (after
 * checking what adding words relies on: see check_model). */
static int
make_private(struct tok_jieba *j, const char *dict_path, struct tok_err *err)
{
    uint64_t *root, *bloom, *e = j->slots;
    double *logf;
    int64_t *freqv;
    size_t slots = j->edge_mask + 1, vals = j->vals_mask + 1;
    bool copy_edges = !is_heap(j, j->slots); /* still the mapping's */
    int rc;

    if (j->heap)
        return 0;
    if ((rc = check_model(j, dict_path, err)) < 0)
        return rc;
    root = malloc(ROOT_N * sizeof(*root));
    bloom = malloc(BLOOM_BYTES);
    logf = malloc(vals * sizeof(*logf));
    freqv = malloc(vals * sizeof(*freqv));
    if (copy_edges)
        e = edges_map(slots);
    if (root == NULL || e == NULL || bloom == NULL || logf == NULL ||
        freqv == NULL) {
        free(root);
        free(bloom);
        free(logf);
        free(freqv);
        if (copy_edges)
            edges_unmap(e, slots);
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    }
    memcpy(root, j->root, ROOT_N * sizeof(*root));
    if (copy_edges)
        memcpy(e, j->slots, slots * sizeof(*e));
    memcpy(bloom, j->bloom, BLOOM_BYTES);
    memcpy(logf, j->logf, vals * sizeof(*logf));
    memcpy(freqv, j->freqv, vals * sizeof(*freqv));
    j->root = root;
    j->slots = e;
    j->bloom = bloom;
    j->logf = logf;
    j->freqv = freqv;
    j->max_probe = slots; /* n_edges < slots: every search ends */
    j->heap = true;
    {
        size_t cap = 64;

        while (cap < 4 * (j->n_vals + 1))
            cap *= 2;
        if (val_of_rebuild(j, cap) < 0)
            return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    }
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
            fs = node_freq(j, nd); /* FREQ.get(seg, 1): a prefix gives 0 */
        freq *= (double)fs / ftotal;
    }
    tok_words_release(&ws);
    for (size_t i = 0; i < n && (i == 0 || node); i++)
        node = tok_jieba_child(j, node, cps[i]);
    fw = (n > 0 && node) ? node_freq(j, node) : 1;
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
                j->force_split = calloc(j->edge_mask + 1, 1);
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

/* SPDX-License-Identifier: MIT */
/*
 * tok_lac_custom.c: LAC's user dictionaries (custom.py's Customization):
 * loading them as load_customization() reads its file, and rewriting a
 * text's tags as parse_customization() does, with its search
 * (prefix_tree.py's TriedTree.search(): from every start, each phrase that
 * ends past the last one found, longest last; so found phrases overlap).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tok_lac_int.h"

void
tok_lac_custom_release(struct tok_lac_custom *c)
{
    tok_lac_trie_release(&c->trie);
    free(c->phrase_of);
    free(c->first);
    free(c->count);
    free(c->pieces);
    memset(c, 0, sizeof(*c));
}

static bool
py_isspace(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
           cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* The code points of s[0..len) (valid UTF-8) into cps (room for len). */
static size_t
decode_all(const char *s, size_t len, uint32_t *cps)
{
    size_t n = 0;

    for (size_t i = 0; i < len;)
        i += tok_utf8_decode_valid(s + i, &cps[n++]);
    return n;
}

/* The phrase being read from one line. */
struct line_phrase {
    uint32_t *cps; /* the phrase's text */
    size_t n, cap;
    struct tok_lac_piece *pieces;
    size_t n_pieces, cap_pieces;
    bool first_untagged;
};

static int
push_piece(struct tok_lac *l, struct line_phrase *p, const char *w, size_t len)
{
    /* word.rfind('/') < 1: no tag. */
    const char *slash = NULL;
    size_t text_len = len;
    uint32_t tag = TOK_LAC_NO_TAG;
    int rc;

    for (size_t i = len; i-- > 0;)
        if (w[i] == '/') {
            slash = w + i;
            break;
        }
    if (slash != NULL && slash > w) {
        size_t tlen = len - (size_t)(slash + 1 - w);
        char *t = malloc(tlen + 3);

        if (t == NULL)
            return TOK_ENOMEM;
        text_len = (size_t)(slash - w);
        if (tlen > 0) {
            memcpy(t, slash + 1, tlen);
            memcpy(t + tlen, "-I", 2);
            rc = tok_lac_tags_intern(&l->tags, t, tlen + 2, &tag);
            free(t);
            if (rc < 0)
                return rc;
        } else {
            free(t);
        }
    }
    if (p->n + text_len > p->cap) {
        size_t cap = 2 * (p->n + text_len) + 16;
        uint32_t *c = realloc(p->cps, cap * sizeof(*c));

        if (c == NULL)
            return TOK_ENOMEM;
        p->cps = c;
        p->cap = cap;
    }
    if (text_len > 0)
        p->n += decode_all(w, text_len, p->cps + p->n);
    if (p->n_pieces == p->cap_pieces) {
        size_t cap = p->cap_pieces ? 2 * p->cap_pieces : 8;
        struct tok_lac_piece *q = realloc(p->pieces, cap * sizeof(*q));

        if (q == NULL)
            return TOK_ENOMEM;
        p->pieces = q;
        p->cap_pieces = cap;
    }
    if (p->n_pieces == 0)
        p->first_untagged = tag == TOK_LAC_NO_TAG;
    p->pieces[p->n_pieces].end = (uint32_t)p->n;
    p->pieces[p->n_pieces].tag = tag;
    p->n_pieces++;
    return 0;
}

/* dictitem[phrase] = (tags, offsets); ac.add_word(phrase). */
static int
add_phrase(struct tok_lac_custom *c, const struct line_phrase *p)
{
    uint32_t node;
    int rc;

    if ((rc = tok_lac_trie_insert(&c->trie, p->cps, p->n, &node)) < 0)
        return rc;
    if (c->trie.n_nodes > c->phrase_of_cap) {
        size_t cap = 2 * c->trie.n_nodes;
        uint32_t *q = realloc(c->phrase_of, cap * sizeof(*q));

        if (q == NULL)
            return TOK_ENOMEM;
        memset(q + c->phrase_of_cap, 0xff,
               (cap - c->phrase_of_cap) * sizeof(*q));
        c->phrase_of = q;
        c->phrase_of_cap = cap;
    }
    if (c->n_phrases == c->cap_phrases) {
        size_t cap = c->cap_phrases ? 2 * c->cap_phrases : 64;
        uint32_t *f = realloc(c->first, cap * sizeof(*f)), *n;

        if (f == NULL)
            return TOK_ENOMEM;
        c->first = f;
        if ((n = realloc(c->count, cap * sizeof(*n))) == NULL)
            return TOK_ENOMEM;
        c->count = n;
        c->cap_phrases = cap;
    }
    if (c->n_pieces + p->n_pieces > c->cap_pieces) {
        size_t cap = 2 * (c->n_pieces + p->n_pieces) + 64;
        struct tok_lac_piece *q = realloc(c->pieces, cap * sizeof(*q));

        if (q == NULL)
            return TOK_ENOMEM;
        c->pieces = q;
        c->cap_pieces = cap;
    }
    if (c->n_pieces + p->n_pieces > UINT32_MAX ||
        c->n_phrases >= UINT32_MAX - 1)
        return TOK_ERANGE;
    memcpy(c->pieces + c->n_pieces, p->pieces,
           p->n_pieces * sizeof(*p->pieces));
    c->first[c->n_phrases] = (uint32_t)c->n_pieces;
    c->count[c->n_phrases] = (uint32_t)p->n_pieces;
    c->n_pieces += p->n_pieces;
    c->phrase_of[node] = (uint32_t)c->n_phrases++;
    return 0;
}

/* One line: its pieces split at white space (Python's str.split()), or at
 * sep (str.split(sep)), after str.strip(). */
static int
parse_line(struct tok_lac *l, struct tok_lac_custom *c, struct line_phrase *p,
           const char *s, size_t len, const char *sep, size_t sep_len)
{
    const char *a = s, *b = s + len;
    uint32_t cp;
    size_t k;
    int rc;

    p->n = 0;
    p->n_pieces = 0;
    /* strip() */
    while (a < b && (k = tok_utf8_decode(a, (size_t)(b - a), &cp)) > 0 &&
           py_isspace(cp))
        a += k;
    while (b > a) {
        const char *q = b - 1;

        while (q > a && ((unsigned char)*q & 0xC0) == 0x80)
            q--;
        if (!py_isspace(tok_utf8_decode(q, (size_t)(b - q), &cp) ? cp : 0))
            break;
        b = q;
    }
    if (sep == NULL) {
        const char *w = NULL;

        for (const char *q = a; q <= b;) {
            bool space = q == b;

            k = 1;
            if (q < b) {
                k = tok_utf8_decode(q, (size_t)(b - q), &cp);
                space = py_isspace(cp);
            }
            if (space && w != NULL) {
                if ((rc = push_piece(l, p, w, (size_t)(q - w))) < 0)
                    return rc;
                w = NULL;
            } else if (!space && w == NULL) {
                w = q;
            }
            q += k;
        }
    } else {
        const char *w = a;

        for (;;) {
            const char *hit = (size_t)(b - w) >= sep_len
                                  ? memmem(w, (size_t)(b - w), sep, sep_len)
                                  : NULL;
            const char *we = hit ? hit : b;

            if ((rc = push_piece(l, p, w, (size_t)(we - w))) < 0)
                return rc;
            if (hit == NULL)
                break;
            w = hit + sep_len;
        }
    }
    if (p->n_pieces == 0 || (p->n < 2 && p->first_untagged))
        return 0;
    return add_phrase(c, p) < 0 ? TOK_ENOMEM : 1;
}

int64_t
tok_lac_load_customization(struct tok_lac *l, const char *path, const char *sep,
                           struct tok_err *err)
{
    struct tok_lac_custom *c = calloc(1, sizeof(*c));
    struct line_phrase p;
    FILE *fp = NULL;
    struct stat st;
    char *data = NULL;
    size_t len = 0, bad, at = 0, lineno = 0, sep_len = sep ? strlen(sep) : 0;
    int64_t n = 0;
    int rc;

    memset(&p, 0, sizeof(p));
    if (c == NULL || tok_lac_trie_init(&c->trie) < 0) {
        free(c);
        return tok_err_set(err, TOK_ENOMEM, "out of memory");
    }
    if (sep != NULL && sep_len == 0) {
        rc = tok_err_set(err, TOK_EINVAL,
                         "user dictionary '%s': empty separator", path);
        goto fail;
    }
    if ((fp = fopen(path, "rb")) == NULL) {
        rc = tok_err_set(err, TOK_EIO, "cannot open user dictionary '%s': %s",
                         path, strerror(errno));
        goto fail;
    }
    if (fstat(fileno(fp), &st) < 0 || S_ISDIR(st.st_mode)) {
        rc = tok_err_set(err, TOK_EIO, "user dictionary '%s' is a directory",
                         path);
        goto fail;
    }
    /* The whole file (a pipe too). */
    for (size_t cap = 0;;) {
        size_t got;

        if (len == cap) {
            char *d = realloc(data, cap = cap ? 2 * cap : 65536);

            if (d == NULL) {
                rc = tok_err_set(err, TOK_ENOMEM, "out of memory");
                goto fail;
            }
            data = d;
        }
        got = fread(data + len, 1, cap - len, fp);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(fp)) {
        rc =
            tok_err_set(err, TOK_EIO, "cannot read user dictionary '%s'", path);
        goto fail;
    }
    if ((bad = tok_utf8_check(data ? data : "", len)) != len) {
        size_t line = 1;

        for (size_t i = 0; i < bad; i++)
            line += data[i] == '\n' ||
                    (data[i] == '\r' && (i + 1 == len || data[i + 1] != '\n'));
        rc = tok_err_set(err, TOK_EFORMAT,
                         "user dictionary '%s' line %zu: invalid UTF-8 at "
                         "byte offset %zu",
                         path, line, bad);
        goto fail;
    }
    /* Python's text lines: \n, \r\n or \r ends one. */
    while (at < len) {
        const char *line = data + at;
        size_t i = at;

        while (i < len && data[i] != '\n' && data[i] != '\r')
            i++;
        lineno++;
        rc =
            parse_line(l, c, &p, line, (size_t)(data + i - line), sep, sep_len);
        if (rc < 0) {
            rc = tok_err_set(err, rc,
                             rc == TOK_ERANGE
                                 ? "user dictionary '%s' line %zu: too many "
                                   "phrases"
                                 : "user dictionary '%s' line %zu: out of "
                                   "memory",
                             path, lineno);
            goto fail;
        }
        if (i < len && data[i] == '\r' && i + 1 < len && data[i + 1] == '\n')
            i++;
        at = i + 1;
    }
    fclose(fp);
    free(data);
    free(p.cps);
    free(p.pieces);
    /* Count the phrases the trie holds (a repeated one counts once). */
    for (size_t k = 0; k < c->trie.n_nodes && k < c->phrase_of_cap; k++)
        n += c->phrase_of[k] != UINT32_MAX;
    if (l->custom) {
        tok_lac_custom_release(l->custom);
        free(l->custom);
    }
    l->custom = c;
    return n;
fail:
    if (fp)
        fclose(fp);
    free(data);
    free(p.cps);
    free(p.pieces);
    tok_lac_custom_release(c);
    free(c);
    return rc;
}

/* Rewrite tags[begin..) for phrase ph found at [begin, end). */
static void
apply_phrase(const struct tok_lac *l, const struct tok_lac_custom *c,
             uint32_t ph, size_t begin, size_t n, uint32_t *tags)
{
    const struct tok_lac_tag *t = l->tags.v;
    const struct tok_lac_piece *pc = c->pieces + c->first[ph];
    size_t np = c->count[ph], index = begin;

    for (size_t k = 0; k < np; k++)
        for (; index < begin + pc[k].end; index++)
            tags[index] =
                pc[k].tag == TOK_LAC_NO_TAG ? t[tags[index]].to_i : pc[k].tag;
    tags[begin] = t[tags[begin]].to_b;
    for (size_t k = 0; k < np; k++) {
        size_t i = begin + pc[k].end;

        if (i < n)
            tags[i] = t[tags[i]].to_b;
    }
}

void
tok_lac_custom_apply(const struct tok_lac *l, const char *s, size_t len,
                     uint32_t *tags)
{
    const struct tok_lac_custom *c = l->custom;
    size_t last_end = 0, n = 0;
    bool any = false;

    if (c == NULL)
        return;
    for (size_t at = 0; at < len; at++)
        n += ((unsigned char)s[at] & 0xC0) != 0x80;
    for (size_t start = 0, at = 0; start < n; start++) {
        uint32_t node = 0, cp;
        size_t q = at;

        for (size_t end = start + 1; end <= n; end++) {
            uint32_t v;

            q += tok_utf8_decode_valid(s + q, &cp);
            if ((v = tok_lac_trie_step(&c->trie, node, cp)) == 0)
                break;
            node = v & ~TOK_LAC_TRIE_WORD;
            if ((v & TOK_LAC_TRIE_WORD) && (!any || end > last_end)) {
                apply_phrase(l, c, c->phrase_of[node], start, n, tags);
                last_end = end;
                any = true;
            }
        }
        at += tok_utf8_decode_valid(s + at, &cp);
    }
}

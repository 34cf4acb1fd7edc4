/* SPDX-License-Identifier: MIT */
/*
 * gen_mask.c: generate's ERNIE job (--fill_mask): each text becomes
 * [CLS] text [SEP] (as transformers' BertTokenizer makes it, [MASK] one
 * token), the texts go through the model in padded batches, and each
 * [MASK] gets its top_k tokens with their probabilities
 * (ErnieForMaskedLM's softmax); a run of adjacent masks (a whole word
 * masked) also gets the word its best tokens spell.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "generate/gen_fill.h"
#include "model/model.h"
#include "banned.h"

/* A text ready to run. */
struct masked {
    struct gen_record rec;
    int32_t *ids; /* [CLS] ... [SEP] */
    int n;
    int *pos; /* the [MASK] positions */
    int n_mask;
};

struct cand {
    float p;
    int32_t id;
};

static int
by_prob(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;

    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The k likeliest tokens of probs[0..V), best first (ties: lower id). */
static void
top_tokens(const float *probs, int V, int k, struct cand *best)
{
    int have = 0;

    for (int i = 0; i < V; i++) {
        struct cand c = { probs[i], i };
        int j;

        if (have == k && by_prob(&c, &best[k - 1]) >= 0)
            continue;
        j = have < k ? have++ : k - 1;
        while (j > 0 && by_prob(&c, &best[j - 1]) < 0) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = c;
    }
}

static const char *
token_of(const struct gen_checkpoint *c, int32_t id, size_t *len)
{
    const char *t = tok_vocab_token(c->vocab, id, len);

    if (t == NULL) {
        *len = 5;
        return "[UNK]";
    }
    return t;
}

/* Tokenize rec; 0, or -1 after an error about it. */
static int
prepare(const struct gen_checkpoint *c, struct gen_record *rec,
        struct masked *t)
{
    int32_t cls = tok_vocab_special(c->vocab, TOK_SPECIAL_CLS);
    int32_t sep = tok_vocab_special(c->vocab, TOK_SPECIAL_SEP);
    int32_t mask = tok_vocab_special(c->vocab, TOK_SPECIAL_MASK);
    int max_T = c->cfg.max_position;
    char msg[512];
    int32_t *ids;
    size_t n;

    memset(t, 0, sizeof(*t));
    if (gen_encode(c, rec->text, rec->len, &ids, &n, msg, sizeof(msg)) < 0) {
        gen_record_error(rec, "%s", msg);
        return -1;
    }
    if (n + 2 > (size_t)max_T) {
        gen_record_error(rec,
                         "a text of %zu tokens: with [CLS] and [SEP] the "
                         "model takes at most %d",
                         n, max_T - 2);
        free(ids);
        return -1;
    }
    t->ids = malloc((n + 2) * sizeof(int32_t));
    t->pos = malloc((n + 1) * sizeof(int));
    if (t->ids == NULL || t->pos == NULL)
        err(1, "out of memory");
    t->ids[0] = cls;
    memcpy(t->ids + 1, ids, n * sizeof(int32_t));
    t->ids[n + 1] = sep;
    t->n = (int)n + 2;
    free(ids);
    for (int i = 1; i <= (int)n; i++)
        if (t->ids[i] == mask)
            t->pos[t->n_mask++] = i;
    if (t->n_mask == 0) {
        gen_record_error(rec, "no [MASK] in the text");
        free(t->ids);
        free(t->pos);
        return -1;
    }
    t->rec = *rec;
    return 0;
}

/* The last of the run of adjacent masks that starts with mask i (i
 * itself when the next one is not adjacent). */
static int
run_end(const struct masked *t, int i)
{
    while (i + 1 < t->n_mask && t->pos[i + 1] == t->pos[i] + 1)
        i++;
    return i;
}

/* The word that the best tokens of masks first..last spell ("##" pieces
 * joined), and its probability (their product). */
static int
word_of(const struct gen_checkpoint *c, const struct cand *best, int k,
        int first, int last, struct tok_buf *w, double *p)
{
    tok_buf_clear(w);
    *p = 1.0;
    for (int i = first; i <= last; i++) {
        size_t len;
        const char *t = token_of(c, best[(size_t)i * k].id, &len);

        if (len > 2 && t[0] == '#' && t[1] == '#')
            t += 2, len -= 2;
        if (tok_buf_append(w, t, len) < 0)
            return -1;
        *p *= best[(size_t)i * k].p;
    }
    return 0;
}

static int
write_text(const struct gen_checkpoint *c, const struct masked *t,
           const struct cand *best, int k, struct tok_buf *line)
{
    struct tok_buf w;
    int rc = 0;

    tok_buf_init(&w);
    rc |= tok_buf_append(line, t->rec.text, t->rec.len);
    rc |= tok_buf_append(line, "\n", 1);
    for (int i = 0; i < t->n_mask; i++) {
        rc |= gen_buf_printf(line, "  [MASK] %d:", i + 1);
        for (int j = 0; j < k; j++) {
            size_t len;
            const char *s = token_of(c, best[(size_t)i * k + j].id, &len);

            rc |= gen_buf_printf(line, "%s %.*s %.4f", j ? "," : "", (int)len,
                                 s, best[(size_t)i * k + j].p);
        }
        rc |= tok_buf_append(line, "\n", 1);
    }
    for (int i = 0; i < t->n_mask;) {
        int e = run_end(t, i);
        double p;

        if (e > i) {
            rc |= word_of(c, best, k, i, e, &w, &p);
            rc |= gen_buf_printf(line, "  word %d-%d: %.*s %.4f\n", i + 1,
                                 e + 1, (int)w.len, w.data ? w.data : "", p);
        }
        i = e + 1;
    }
    tok_buf_release(&w);
    return rc ? -1 : 0;
}

static int
write_jsonl(const struct gen_checkpoint *c, const struct masked *t,
            const struct cand *best, int k, struct tok_buf *line)
{
    struct tok_buf w;
    int rc = 0, n_words = 0;

    tok_buf_init(&w);
    rc |= gen_buf_printf(
        line, "{\"index\": %llu, \"text\": ", (unsigned long long)t->rec.index);
    rc |= tok_json_string(line, t->rec.text, t->rec.len);
    rc |= tok_buf_append(line, ", \"ids\": ", 9);
    rc |= gen_json_ids(line, t->ids, (size_t)t->n);
    rc |= tok_buf_append(line, ", \"masks\": [", 12);
    for (int i = 0; i < t->n_mask; i++) {
        rc |= gen_buf_printf(line, "%s{\"position\": %d, \"candidates\": [",
                             i ? ", " : "", t->pos[i]);
        for (int j = 0; j < k; j++) {
            size_t len;
            const struct cand *b = &best[(size_t)i * k + j];
            const char *s = token_of(c, b->id, &len);

            rc |= gen_buf_printf(
                line, "%s{\"id\": %d, \"token\": ", j ? ", " : "", b->id);
            rc |= tok_json_string(line, s, len);
            rc |= gen_buf_printf(line, ", \"prob\": %.9g}", b->p);
        }
        rc |= tok_buf_append(line, "]}", 2);
    }
    rc |= tok_buf_append(line, "], \"words\": [", 13);
    for (int i = 0; i < t->n_mask;) {
        int e = run_end(t, i);
        double p;

        if (e > i) {
            rc |= word_of(c, best, k, i, e, &w, &p);
            rc |= gen_buf_printf(line, "%s{\"masks\": [%d, %d], \"text\": ",
                                 n_words++ ? ", " : "", i, e);
            rc |= tok_json_string(line, w.data ? w.data : "", w.len);
            rc |= gen_buf_printf(line, ", \"prob\": %.9g}", p);
        }
        i = e + 1;
    }
    rc |= tok_buf_append(line, "]}\n", 3);
    tok_buf_release(&w);
    return rc ? -1 : 0;
}

/* Texts t[0..n) through the model; their results out. */
static int
run_batch(const struct gen_opts *o, const struct gen_checkpoint *c,
          struct model *m, const struct masked *t, int n, int k,
          struct cli_output *out)
{
    int V = c->cfg.vocab_size, T = 0, M = 0, rc = -1;
    int32_t pad = tok_vocab_special(c->vocab, TOK_SPECIAL_PAD);
    int32_t *ids, *types, *mask, *mpos, *mlab, *sop;
    float *probs;
    struct cand *best;
    struct batch b;
    struct tok_buf line;
    char msg[1024];

    for (int i = 0; i < n; i++) {
        T = t[i].n > T ? t[i].n : T;
        M += t[i].n_mask;
    }
    ids = calloc((size_t)n * T, sizeof(int32_t));
    types = calloc((size_t)n * T, sizeof(int32_t));
    mask = calloc((size_t)n * T, sizeof(int32_t));
    mpos = malloc((size_t)M * sizeof(int32_t));
    mlab = malloc((size_t)M * sizeof(int32_t));
    sop = calloc((size_t)n, sizeof(int32_t));
    probs = malloc((size_t)M * (size_t)V * sizeof(float));
    best = malloc((size_t)M * (size_t)k * sizeof(*best));
    if (!ids || !types || !mask || !mpos || !mlab || !sop || !probs || !best)
        err(1, "out of memory");
    M = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < T; j++) {
            ids[i * T + j] = j < t[i].n ? t[i].ids[j] : pad >= 0 ? pad : 0;
            mask[i * T + j] = j < t[i].n;
        }
        for (int j = 0; j < t[i].n_mask; j++) {
            mpos[M] = i * T + t[i].pos[j];
            mlab[M++] = -1;
        }
    }
    memset(&b, 0, sizeof(b));
    b.B = n, b.T = T, b.M = M;
    b.input_ids = ids, b.token_type_ids = types, b.attention_mask = mask;
    b.masked_positions = mpos, b.masked_labels = mlab, b.sop_labels = sop;
    if (gen_fill_probs(m, &b, probs, msg, sizeof(msg)) < 0) {
        warnx("%s", msg);
        goto done;
    }
    for (int r = 0; r < M; r++)
        top_tokens(probs + (size_t)r * V, V, k, best + (size_t)r * k);
    tok_buf_init(&line);
    rc = 0;
    for (int i = 0, r = 0; i < n && rc == 0; r += t[i].n_mask, i++) {
        tok_buf_clear(&line);
        if ((o->format == FORMAT_JSONL
                 ? write_jsonl(c, &t[i], best + (size_t)r * k, k, &line)
                 : write_text(c, &t[i], best + (size_t)r * k, k, &line)) < 0)
            err(1, "out of memory");
        rc = cli_output_write(out, line.data, line.len);
    }
    tok_buf_release(&line);
done:
    free(ids), free(types), free(mask), free(mpos), free(mlab), free(sop);
    free(probs), free(best);
    return rc;
}

int
gen_mask_run(const struct gen_opts *o, struct gen_checkpoint *c,
             const struct ops *ops, struct gen_reader *rd,
             struct cli_output *out)
{
    struct masked *t = NULL;
    size_t n = 0, n_run, cap = 0;
    int rval = 0, max_T = 1, max_M = 1, k, B = o->batch_size;
    struct model *m = NULL;
    char msg[1024];

    k = o->top_k_set ? o->gp.filter.top_k : 5;
    if (k < 1 || k > c->cfg.vocab_size) {
        warnx("--top_k %d: fill-mask shows 1 to %d tokens a mask", k,
              c->cfg.vocab_size);
        return EXIT_USAGE;
    }
    if (tok_vocab_special(c->vocab, TOK_SPECIAL_MASK) < 0 ||
        tok_vocab_special(c->vocab, TOK_SPECIAL_CLS) < 0 ||
        tok_vocab_special(c->vocab, TOK_SPECIAL_SEP) < 0) {
        warnx("'%s/vocab.txt' lacks [MASK], [CLS] or [SEP]", c->dir);
        return 1;
    }
    /* Every text first: the model is made for the largest batch. */
    for (;;) {
        struct gen_record rec;
        int got = gen_reader_next(rd, &rec);

        if (got == 0)
            break;
        if (got < 0) {
            rval = 1;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            if ((t = realloc(t, cap * sizeof(*t))) == NULL)
                err(1, "out of memory");
        }
        if (prepare(c, &rec, &t[n]) < 0) {
            free(rec.text);
            rval = 1;
            continue;
        }
        n++;
    }
    for (size_t i = 0; i < n; i += (size_t)B) {
        int M = 0;

        for (size_t j = i; j < n && j < i + (size_t)B; j++) {
            max_T = t[j].n > max_T ? t[j].n : max_T;
            M += t[j].n_mask;
        }
        max_M = M > max_M ? M : max_M;
    }
    n_run = n;
    if (n > 0 &&
        gen_checkpoint_model(c, ops, (int)(n < (size_t)B ? n : (size_t)B),
                             max_T, max_M, &m, msg, sizeof(msg)) < 0) {
        warnx("%s", msg);
        rval = 1;
        n_run = 0;
    }
    for (size_t i = 0; i < n_run; i += (size_t)B) {
        int nb = (int)(n_run - i < (size_t)B ? n_run - i : (size_t)B);

        if (run_batch(o, c, m, t + i, nb, k, out) < 0) {
            rval = 1;
            break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(t[i].rec.text);
        free(t[i].ids);
        free(t[i].pos);
    }
    free(t);
    model_free(m);
    return rval;
}

/* SPDX-License-Identifier: MIT */
/*
 * gen_text.c: generate's GPT job: prompts in batches through the search
 * of libtrain's generate/ (gen_search.h) with a key/value cache, and the
 * sequences out as text (the prompt and its continuation, a line each;
 * streamed token by token to a terminal) or as JSONL records with their
 * ids.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "generate.h"
#include "generate/gen_gpt.h"
#include "model/model.h"
#include "banned.h"

/* Rows a decoder call may take besides one per sequence: prompts go
 * through in chunks of about this many tokens. */
#define PREFILL_ROWS 1024

/* A batch: its records and their ids. */
struct batch_in {
    struct gen_record *rec;
    int32_t **ids;
    size_t *n_ids;
    struct gen_prompt *prompts;
    int n, cap;
};

/* Streaming: the bytes of the tokens so far that do not yet end a UTF-8
 * character are held back. */
struct streamer {
    const struct gen_checkpoint *c;
    struct cli_output *out;
    int32_t eos;
    struct tok_buf pending;
    int failed;
};

static const char *const finish_names[] = { "eos", "length", "context" };

/* The process's CPU time, all threads. */
static double
cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Where the bytes b[0..len) can be cut so that the part before goes out
 * now: before a last character whose bytes are not all there yet (a lead
 * byte in the last three, short of its length).  Cut at a lead byte, the
 * invalid sequences of either part are those of the whole, so the
 * streamed text is the whole text's with U+FFFD for them, as the
 * non-streamed output has it. */
static size_t
stream_cut(const unsigned char *b, size_t len)
{
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = b[len - back];
        size_t need;

        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: look further back */
        if (c < 0xC0)
            break; /* ASCII: every character is whole */
        need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        return need > back ? len - back : len;
    }
    return len;
}

static void
stream_token(void *ctx, int p, int seq, int32_t token)
{
    struct streamer *s = ctx;
    struct tok_err te;
    struct tok_buf out;
    size_t cut;

    (void)p, (void)seq;
    if (s->failed || token == s->eos || token == s->c->endoftext ||
        tok_bpe_token(s->c->bpe, token, NULL) == NULL)
        return;
    if (tok_bpe_decode(s->c->bpe, &token, 1, &s->pending, &te) < 0) {
        s->failed = 1;
        return;
    }
    cut = stream_cut((const unsigned char *)s->pending.data, s->pending.len);
    if (cut == 0)
        return;
    tok_buf_init(&out);
    if (tok_utf8_sanitize(s->pending.data, cut, TOK_UTF8_REPLACE, &out, NULL,
                          &te) < 0 ||
        cli_output_write(s->out, out.data, out.len) < 0 ||
        fflush(s->out->fp) != 0)
        s->failed = 1;
    tok_buf_release(&out);
    memmove(s->pending.data, s->pending.data + cut, s->pending.len - cut);
    s->pending.len -= cut;
}

/* The text of a sequence: its new tokens decoded, the eos left out. */
static int
sequence_text(const struct gen_checkpoint *c, const struct gen_output *g,
              struct tok_buf *text)
{
    char err[512];

    tok_buf_clear(text);
    if (gen_decode(c, g->ids, (size_t)g->n, 1, text, err, sizeof(err)) < 0) {
        warnx("%s", err);
        return -1;
    }
    return 0;
}

static int
write_jsonl(const struct gen_opts *o, const struct gen_checkpoint *c,
            const struct batch_in *b, int p, const struct gen_output *g, int j,
            struct tok_buf *text, struct cli_output *out)
{
    struct tok_buf line;
    int rc = -1;

    tok_buf_init(&line);
    if (sequence_text(c, g, text) < 0)
        goto done;
    if (gen_buf_printf(&line,
                       "{\"index\": %llu, \"sequence\": %d, "
                       "\"prompt\": ",
                       (unsigned long long)b->rec[p].index, j) < 0 ||
        tok_json_string(&line, b->rec[p].text, b->rec[p].len) < 0 ||
        tok_buf_append(&line, ", \"text\": ", 10) < 0 ||
        tok_json_string(&line, text->data ? text->data : "", text->len) < 0 ||
        tok_buf_append(&line, ", \"prompt_ids\": ", 16) < 0 ||
        gen_json_ids(&line, b->prompts[p].ids, (size_t)b->prompts[p].n) < 0 ||
        tok_buf_append(&line, ", \"ids\": ", 9) < 0 ||
        gen_json_ids(&line, g->ids, (size_t)g->n) < 0 ||
        gen_buf_printf(&line, ", \"finish_reason\": \"%s\"",
                       finish_names[g->finish]) < 0 ||
        (o->gp.strategy == GEN_BEAM &&
         gen_buf_printf(&line, ", \"score\": %.9g", g->score) < 0) ||
        tok_buf_append(&line, "}\n", 2) < 0) {
        warnx("out of memory");
        goto done;
    }
    rc = cli_output_write(out, line.data, line.len);
done:
    tok_buf_release(&line);
    return rc;
}

/* The batch's sequences, in input order. */
static int
write_batch(const struct gen_opts *o, const struct gen_checkpoint *c,
            const struct batch_in *b, const struct gen_output *res,
            struct cli_output *out)
{
    struct tok_buf text;
    int R = o->gp.num_return, rc = 0;

    tok_buf_init(&text);
    for (int p = 0; p < b->n && rc == 0; p++)
        for (int j = 0; j < R && rc == 0; j++) {
            const struct gen_output *g = &res[p * R + j];

            if (o->format == FORMAT_JSONL) {
                rc = write_jsonl(o, c, b, p, g, j, &text, out);
                continue;
            }
            if (sequence_text(c, g, &text) < 0 ||
                cli_output_write(out, b->rec[p].text, b->rec[p].len) < 0 ||
                cli_output_write(out, text.data ? text.data : "", text.len) <
                    0 ||
                cli_output_write(out, "\n", 1) < 0)
                rc = -1;
        }
    tok_buf_release(&text);
    return rc;
}

static void
batch_clear(struct batch_in *b)
{
    for (int i = 0; i < b->n; i++) {
        free(b->rec[i].text);
        free(b->ids[i]);
    }
    b->n = 0;
}

/* Tokenize rec into the batch; 0, or -1 after an error about it (the
 * record is left out). */
static int
batch_add(struct batch_in *b, const struct gen_checkpoint *c, int32_t bos,
          int ctx, struct gen_record *rec)
{
    char msg[512];
    int32_t *ids;
    size_t n;
    int i = b->n;

    if (gen_encode(c, rec->text, rec->len, &ids, &n, msg, sizeof(msg)) < 0) {
        gen_record_error(rec, "%s", msg);
        return -1;
    }
    if (n == 0) { /* an empty prompt starts from the first token */
        if (bos < 0) {
            gen_record_error(rec, "an empty prompt, and the model has no "
                                  "bos_token_id to start from");
            free(ids);
            return -1;
        }
        free(ids);
        if ((ids = malloc(sizeof(int32_t))) == NULL)
            err(1, "out of memory");
        ids[0] = bos;
        n = 1;
    }
    if (n >= (size_t)ctx) {
        gen_record_error(rec,
                         "a prompt of %zu tokens: the model's context is %d "
                         "positions, so a prompt takes at most %d",
                         n, ctx, ctx - 1);
        free(ids);
        return -1;
    }
    b->rec[i] = *rec;
    b->ids[i] = ids;
    b->n_ids[i] = n;
    b->prompts[i].ids = ids;
    b->prompts[i].n = (int)n;
    b->prompts[i].key = rec->index;
    b->n++;
    return 0;
}

int
gen_text_run(const struct gen_opts *o, struct gen_checkpoint *c,
             const struct ops *ops, struct gen_reader *rd,
             struct cli_output *out)
{
    struct gen_params gp = o->gp;
    const struct model_config *k = &c->cfg;
    int32_t bos = k->bos_token_id >= 0 ? k->bos_token_id : c->endoftext;
    struct model *m = NULL;
    struct gen_gpt *g = NULL;
    struct batch_in b;
    struct streamer st;
    struct gen_output *res;
    char msg[1024];
    int rval = 0, per, batch, stream, done = 0;
    uint64_t n_prompts = 0, n_prompt_tokens = 0, n_new = 0;
    double t_gen = 0, cpu_gen = 0;

    gp.filter.eos_id = o->eos_set             ? o->eos
                       : k->eos_token_id >= 0 ? k->eos_token_id
                                              : c->endoftext;
    if (gp.filter.eos_id >= k->vocab_size) {
        warnx("--eos_token_id %d: outside the vocabulary of %d",
              gp.filter.eos_id, k->vocab_size);
        return EXIT_USAGE;
    }
    per = gp.strategy == GEN_BEAM ? gp.num_beams : gp.num_return;
    stream =
        o->stream >= 0 ? o->stream : isatty(STDOUT_FILENO) && o->output == NULL;
    stream = stream && o->format == FORMAT_TEXT && gp.strategy != GEN_BEAM &&
             gp.num_return == 1 && out->fp != NULL && out->path == NULL;
    batch = stream ? 1 : o->batch_size;
    memset(&b, 0, sizeof(b));
    b.cap = batch;
    b.rec = calloc((size_t)batch, sizeof(*b.rec));
    b.ids = calloc((size_t)batch, sizeof(*b.ids));
    b.n_ids = calloc((size_t)batch, sizeof(*b.n_ids));
    b.prompts = calloc((size_t)batch, sizeof(*b.prompts));
    res = calloc((size_t)batch * (size_t)gp.num_return, sizeof(*res));
    if (!b.rec || !b.ids || !b.n_ids || !b.prompts || !res)
        err(1, "out of memory");
    if (gen_checkpoint_model(c, ops, 1, 1, 0, &m, msg, sizeof(msg)) < 0 ||
        gen_gpt_new(&g, m, batch * per, k->max_position,
                    batch * per > PREFILL_ROWS ? batch * per : PREFILL_ROWS,
                    msg, sizeof(msg)) < 0) {
        warnx("%s", msg);
        rval = 1;
        goto out;
    }
    memset(&st, 0, sizeof(st));
    st.c = c;
    st.out = out;
    st.eos = gp.filter.eos_id;
    tok_buf_init(&st.pending);
    while (!done) {
        struct gen_record rec;
        int got;

        /* A batch: full, or all that standard input has for now. */
        while (b.n < batch && (b.n == 0 || gen_reader_ready(rd))) {
            got = gen_reader_next(rd, &rec);
            if (got == 0) {
                done = 1;
                break;
            }
            if (got < 0 || batch_add(&b, c, bos, k->max_position, &rec) < 0) {
                if (got > 0)
                    free(rec.text);
                rval = 1;
            }
        }
        if (b.n == 0)
            continue;
        if (stream && (cli_output_write(out, b.rec[0].text, b.rec[0].len) < 0 ||
                       fflush(out->fp) != 0)) {
            rval = 1;
            break;
        }
        {
            double t0 = cli_now(), c0 = cpu_seconds();
            int rc =
                gen_run(g, &gp, b.prompts, b.n, res,
                        stream ? stream_token : NULL, &st, msg, sizeof(msg));

            t_gen += cli_now() - t0;
            cpu_gen += cpu_seconds() - c0;
            if (rc < 0) {
                warnx("%s", msg);
                rval = 1;
                break;
            }
        }
        n_prompts += (uint64_t)b.n;
        for (int i = 0; i < b.n; i++) {
            n_prompt_tokens += (uint64_t)b.prompts[i].n;
            for (int j = 0; j < gp.num_return; j++)
                n_new += (uint64_t)res[i * gp.num_return + j].n;
        }
        if (stream) {
            /* What was held back (a character cut short), then the end
             * of the line. */
            struct tok_buf tail;
            struct tok_err te;

            tok_buf_init(&tail);
            if (tok_utf8_sanitize(st.pending.data ? st.pending.data : "",
                                  st.pending.len, TOK_UTF8_REPLACE, &tail, NULL,
                                  &te) < 0 ||
                cli_output_write(out, tail.data ? tail.data : "", tail.len) <
                    0 ||
                cli_output_write(out, "\n", 1) < 0 || fflush(out->fp) != 0 ||
                st.failed)
                rval = 1;
            tok_buf_release(&tail);
            tok_buf_clear(&st.pending);
        } else if (write_batch(o, c, &b, res, out) < 0) {
            rval = 1;
            done = 1; /* the output fails: no use going on */
        }
        gen_outputs_release(res, (size_t)b.n * (size_t)gp.num_return);
        batch_clear(&b);
    }
    tok_buf_release(&st.pending);
    /* What generation took (the model's loading aside). */
    if (!o->quiet && n_prompts > 0)
        fprintf(stderr,
                "generate: %llu prompts (%llu tokens), %llu new tokens in "
                "%.3f s: %.2f tokens/s, %.2f tokens per CPU second\n",
                (unsigned long long)n_prompts,
                (unsigned long long)n_prompt_tokens, (unsigned long long)n_new,
                t_gen, t_gen > 0 ? (double)n_new / t_gen : 0.0,
                cpu_gen > 0 ? (double)n_new / cpu_gen : 0.0);
out:
    batch_clear(&b);
    free(b.rec);
    free(b.ids);
    free(b.n_ids);
    free(b.prompts);
    free(res);
    gen_gpt_free(g);
    model_free(m);
    return rval;
}

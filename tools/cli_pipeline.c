/* SPDX-License-Identifier: MIT */
/*
 * cli_pipeline.c: the ordered parallel pipeline of the tools.
 *
 * The main thread reads the input into chunks of whole lines and writes
 * results; N worker threads process chunks.  Chunks sit in a ring of slots
 * and are written strictly in the order they were read, so the output is
 * byte-identical for any number of threads, and memory is bounded by the
 * ring (a few chunks per thread), not by the input size.
 */
#include <err.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "banned.h"

enum { SLOT_FREE, SLOT_READY, SLOT_DONE };

struct slot {
    struct tok_buf in;
    uint64_t first_line;
    struct cli_chunk_result res;
    int state;
};

struct pipeline {
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    struct slot *slots;
    size_t n_slots;
    size_t n_taken, n_filled; /* monotonic chunk counters */
    bool quit;
    cli_chunk_fn fn;
    void *ctx;
};

struct worker_arg {
    struct pipeline *p;
    unsigned id;
};

static void
run_chunk(struct pipeline *p, unsigned worker, struct slot *s)
{
    struct cli_chunk_result *r = &s->res;

    tok_buf_clear(&r->out);
    r->status = 0;
    r->err_line = 0;
    r->err_msg[0] = '\0';
    r->n_skipped = 0;
    r->n_records = 0;
    p->fn(p->ctx, worker, s->in.data, s->in.len, s->first_line, r);
}

static void *
worker_main(void *arg)
{
    struct worker_arg *wa = arg;
    struct pipeline *p = wa->p;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        struct slot *s;

        while (!p->quit && p->n_taken == p->n_filled)
            pthread_cond_wait(&p->cv_work, &p->mu);
        if (p->n_taken == p->n_filled)
            break; /* quit and nothing left */
        s = &p->slots[p->n_taken % p->n_slots];
        p->n_taken++;
        pthread_mutex_unlock(&p->mu);
        run_chunk(p, wa->id, s);
        pthread_mutex_lock(&p->mu);
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* The reader: moves whole lines into slots, keeping the partial last line
 * in `carry` for the next chunk. */
struct reader {
    struct cli_input *in;
    enum cli_records records;
    struct tok_buf carry;
    bool eof;
    int error;
    uint64_t next_line;
};

static size_t
count_newlines(const char *s, size_t len)
{
    size_t n = 0;
    const char *end = s + len;

    while ((s = memchr(s, '\n', (size_t)(end - s))) != NULL) {
        n++;
        s++;
    }
    return n;
}

/* The end of the last whole record in b[0..len), or 0 if there is none:
 * after the last newline, or after the last blank line. */
static size_t
records_end(enum cli_records records, const char *b, size_t len)
{
    const char *nl = memrchr(b, '\n', len);

    if (nl == NULL)
        return 0;
    if (records == CLI_RECORDS_LINES)
        return (size_t)(nl - b) + 1;
    /* The last line that is blank and ends with a newline. */
    while (nl != NULL) {
        const char *start = memrchr(b, '\n', (size_t)(nl - b));
        const char *ls = start ? start + 1 : b;

        if (start != NULL && cli_is_blank_line(ls, (size_t)(nl - ls)))
            return (size_t)(nl - b) + 1;
        nl = start;
    }
    return 0;
}

/* Fill s with at least chunk_size bytes of whole records (or the rest of
 * the input).  Returns true if the slot holds data. */
static bool
fill(struct reader *rd, struct slot *s, size_t chunk_size,
     struct cli_progress *prog)
{
    struct tok_buf *b = &s->in;

    tok_buf_clear(b);
    if (rd->carry.len && tok_buf_append(b, rd->carry.data, rd->carry.len) < 0)
        goto nomem;
    tok_buf_clear(&rd->carry);
    while (!rd->eof) {
        size_t keep;
        long got;

        if (b->len >= chunk_size &&
            (keep = records_end(rd->records, b->data, b->len)) > 0) {
            if (tok_buf_append(&rd->carry, b->data + keep, b->len - keep) < 0)
                goto nomem;
            b->len = keep;
            break;
        }
        if (b->cap < b->len + chunk_size + 1) {
            size_t old = b->len;
            /* Reserve room, then read straight into the buffer. */
            if (tok_buf_append(b, NULL, 0) < 0)
                goto nomem;
            while (b->cap < old + chunk_size + 1) {
                char *d = realloc(b->data, b->cap * 2);
                if (d == NULL)
                    goto nomem;
                b->data = d;
                b->cap *= 2;
            }
        }
        got = cli_input_read(rd->in, b->data + b->len, chunk_size);
        if (got < 0) {
            rd->error = 1;
            rd->eof = true;
            break;
        }
        if (got == 0) {
            rd->eof = true;
            break;
        }
        b->len += (size_t)got;
        b->data[b->len] = '\0';
        cli_progress_add(prog, (uint64_t)got);
    }
    s->first_line = rd->next_line;
    rd->next_line += count_newlines(b->data, b->len);
    return b->len > 0;
nomem:
    warnx("'%s': out of memory", cli_input_name(rd->in));
    rd->error = 1;
    rd->eof = true;
    return false;
}

/* Write a finished slot; returns 0, or 1 if the run must stop. */
static int
drain(struct reader *rd, struct slot *s, struct cli_output *out,
      struct cli_pipeline_stats *stats, struct cli_progress *prog)
{
    struct cli_chunk_result *r = &s->res;

    if (cli_output_write(out, r->out.data, r->out.len) < 0)
        return 1;
    cli_progress_records(prog, r->n_records);
    stats->n_records += r->n_records;
    stats->n_skipped += r->n_skipped;
    stats->bytes_in += s->in.len;
    if (r->status != 0) {
        warnx("%s:%llu: %s", cli_input_name(rd->in),
              (unsigned long long)r->err_line, r->err_msg);
        return 1;
    }
    return 0;
}

int
cli_pipeline_run(struct cli_input *in, struct cli_output *out,
                 unsigned n_threads, size_t chunk_size,
                 enum cli_records records, cli_chunk_fn fn, void *ctx,
                 struct cli_progress *prog, struct cli_pipeline_stats *stats)
{
    struct pipeline p;
    struct reader rd;
    pthread_t *tids = NULL;
    struct worker_arg *args = NULL;
    unsigned n_started = 0;
    size_t n_written = 0;
    int rc = 0;

    memset(&p, 0, sizeof(p));
    memset(&rd, 0, sizeof(rd));
    rd.in = in;
    rd.records = records;
    rd.next_line = 1;
    tok_buf_init(&rd.carry);
    p.fn = fn;
    p.ctx = ctx;
    p.n_slots = n_threads <= 1 ? 1 : 2 * (size_t)n_threads + 2;
    p.slots = calloc(p.n_slots, sizeof(*p.slots));
    if (p.slots == NULL) {
        warn(NULL);
        return 1;
    }

    if (n_threads <= 1) {
        /* One thread: read, process and write in turn. */
        struct slot *s = &p.slots[0];

        while (rc == 0 && fill(&rd, s, chunk_size, prog)) {
            run_chunk(&p, 0, s);
            rc = drain(&rd, s, out, stats, prog);
        }
        goto done;
    }

    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv_work, NULL);
    pthread_cond_init(&p.cv_done, NULL);
    tids = calloc(n_threads, sizeof(*tids));
    args = calloc(n_threads, sizeof(*args));
    if (tids == NULL || args == NULL) {
        warn(NULL);
        rc = 1;
        goto join;
    }
    for (unsigned i = 0; i < n_threads; i++) {
        args[i].p = &p;
        args[i].id = i;
        if (pthread_create(&tids[i], NULL, worker_main, &args[i]) != 0) {
            warnx("cannot start thread %u", i);
            rc = 1;
            goto join;
        }
        n_started++;
    }
    for (;;) {
        struct slot *s;

        /* Keep every free slot filled, so the workers never wait on I/O. */
        while (!rd.eof && p.n_filled - n_written < p.n_slots) {
            s = &p.slots[p.n_filled % p.n_slots];
            if (!fill(&rd, s, chunk_size, prog))
                break;
            pthread_mutex_lock(&p.mu);
            s->state = SLOT_READY;
            p.n_filled++;
            pthread_cond_signal(&p.cv_work);
            pthread_mutex_unlock(&p.mu);
        }
        if (n_written == p.n_filled)
            break;
        s = &p.slots[n_written % p.n_slots];
        pthread_mutex_lock(&p.mu);
        while (s->state != SLOT_DONE)
            pthread_cond_wait(&p.cv_done, &p.mu);
        pthread_mutex_unlock(&p.mu);
        rc = drain(&rd, s, out, stats, prog);
        s->state = SLOT_FREE;
        n_written++;
        if (rc != 0)
            break;
    }
join:
    pthread_mutex_lock(&p.mu);
    p.quit = true;
    if (rc != 0)
        p.n_filled = p.n_taken; /* abandon chunks nobody has started */
    pthread_cond_broadcast(&p.cv_work);
    pthread_mutex_unlock(&p.mu);
    for (unsigned i = 0; i < n_started; i++)
        pthread_join(tids[i], NULL);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv_work);
    pthread_cond_destroy(&p.cv_done);
done:
    if (rd.error)
        rc = 1;
    for (size_t i = 0; i < p.n_slots; i++) {
        tok_buf_release(&p.slots[i].in);
        tok_buf_release(&p.slots[i].res.out);
    }
    free(p.slots);
    free(tids);
    free(args);
    tok_buf_release(&rd.carry);
    return rc;
}

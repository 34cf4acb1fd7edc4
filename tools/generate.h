/* SPDX-License-Identifier: MIT */
/*
 * generate.h: what the files of the generate command share: its options,
 * the records it reads (prompts, or texts with [MASK]), and its output.
 * generate.c parses the options and reads the inputs; gen_text.c
 * generates with a GPT checkpoint, gen_mask.c fills masks with an ERNIE
 * one.
 */
#ifndef GENERATE_H
#define GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "generate/gen_load.h"
#include "generate/gen_search.h"

enum gen_format { FORMAT_TEXT, FORMAT_JSONL };

struct gen_opts {
    const char *model;
    const char **prompts; /* -p, in order */
    size_t n_prompts;
    bool jsonl;
    const char *json_key;
    enum gen_format format;
    const char *output;
    int batch_size;
    bool quiet, fill_mask;
    int stream; /* 1 --stream, 0 --no_stream, -1 auto (a terminal) */
    bool top_k_set;
    struct gen_params gp; /* the strategy and its settings */
    bool num_beams_set, eos_set;
    int32_t eos; /* --eos_token_id */
    const char *device, *dtype;
    int threads;
};

/* One prompt or text: a copy of its text, where it comes from. */
struct gen_record {
    char *text;
    size_t len;
    const char *source; /* the input's name, "-p" for a prompt flag */
    uint64_t line;      /* 1-based; the flag's number for -p */
    uint64_t index;     /* 0-based, over all the inputs */
};

struct gen_reader;

/* gen_reader_new: the records of the -p prompts, then of the files (none,
 * or "-": standard input).  NULL when out of memory. */
struct gen_reader *gen_reader_new(const struct gen_opts *o, int argc,
                                  char **argv);
void gen_reader_free(struct gen_reader *r);

/* gen_reader_next: the next record into *rec (its text owned by the
 * caller: free()).  Returns 1, 0 at the end of every input, or -1 after a
 * warning (an input that cannot be read, a bad JSONL record); reading
 * goes on after an error. */
int gen_reader_next(struct gen_reader *r, struct gen_record *rec);

/* gen_reader_ready: whether the next record can be read without waiting
 * (standard input from a terminal or a pipe: a line is there already);
 * a batch is run as soon as this is false. */
bool gen_reader_ready(struct gen_reader *r);

/* The commands' two jobs; each returns the exit status. */
int gen_text_run(const struct gen_opts *o, struct gen_checkpoint *c,
                 const struct ops *ops, struct gen_reader *rd,
                 struct cli_output *out);
int gen_mask_run(const struct gen_opts *o, struct gen_checkpoint *c,
                 const struct ops *ops, struct gen_reader *rd,
                 struct cli_output *out);

/* JSON output: an array of ids appended to b (strings:
 * cli_json_string()); -1 when out of memory. */
int gen_json_ids(struct tok_buf *b, const int32_t *ids, size_t n);
/* printf into b; -1 when out of memory. */
int gen_buf_printf(struct tok_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* gen_record_error: warn "<source>:<line>: <msg>" about a record. */
void gen_record_error(const struct gen_record *rec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* GENERATE_H */

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
#include "gen_reader.h"
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

/* The commands' two jobs; each returns the exit status. */
int gen_text_run(const struct gen_opts *o, struct gen_checkpoint *c,
                 const struct ops *ops, struct gen_reader *rd,
                 struct cli_output *out);
int gen_mask_run(const struct gen_opts *o, struct gen_checkpoint *c,
                 const struct ops *ops, struct gen_reader *rd,
                 struct cli_output *out);

/* JSON output: an array of ids appended to b (strings:
 * tok_json_string()); -1 when out of memory. */
int gen_json_ids(struct tok_buf *b, const int32_t *ids, size_t n);
/* printf into b; -1 when out of memory. */
int gen_buf_printf(struct tok_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* GENERATE_H */

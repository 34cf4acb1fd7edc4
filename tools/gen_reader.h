/* SPDX-License-Identifier: MIT */
/*
 * gen_reader.h: the records generate reads: prompts, or texts with
 * [MASK] (gen_reader.c).
 */
#ifndef GEN_READER_H
#define GEN_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One prompt or text: a copy of its text, where it comes from. */
struct gen_record {
    char *text;
    size_t len;
    const char *source; /* the input's name, "-p" for a prompt flag */
    uint64_t line;      /* 1-based; the flag's number for -p */
    uint64_t index;     /* 0-based, over all the inputs */
};

struct gen_reader;

/* gen_reader_new: the records of the n_prompts prompts (-p), then of the
 * files argv[0..argc) (none and no prompts: standard input; "-":
 * standard input), each line a record, or with jsonl the string field
 * json_key of each JSONL record.  NULL when out of memory. */
struct gen_reader *gen_reader_new(const char *const *prompts, size_t n_prompts,
                                  bool jsonl, const char *json_key, int argc,
                                  char **argv);
void gen_reader_free(struct gen_reader *r);

/* gen_reader_next: the next record into *rec (its text owned by the
 * caller: free()).  Blank text lines are skipped.  Returns 1, 0 at the
 * end of every input, or -1 after a warning (an input that cannot be
 * read, a line that is not UTF-8, a bad JSONL record); reading goes on
 * after an error. */
int gen_reader_next(struct gen_reader *r, struct gen_record *rec);

/* gen_reader_ready: whether the next record can be read without waiting
 * (standard input from a terminal or a pipe: a line is there already);
 * a batch is run as soon as this is false. */
bool gen_reader_ready(struct gen_reader *r);

/* gen_record_error: warn "<source>:<line>: <msg>" about a record. */
void gen_record_error(const struct gen_record *rec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* GEN_READER_H */

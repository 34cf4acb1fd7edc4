/* SPDX-License-Identifier: MIT */
/*
 * vocab_build_ernie.h: what the ERNIE recipe's subcommands of
 * vocab-build(1) share: `all` runs the steps of `chars` and `merge` in one
 * process, so each step is also available without the exit handling of
 * its main (which closes stdout).
 */
#ifndef VOCAB_BUILD_ERNIE_H
#define VOCAB_BUILD_ERNIE_H

#include <stdbool.h>

#include "cli.h"
#include "tok.h"
#include "vocab.h"

/* vb_read_input: read all of path ("-" is stdin; zstd by its magic) into
 * out.  Returns 0, or -1 after a warning naming the input. */
int vb_read_input(const char *path, struct tok_buf *out);

/* vb_chars_count: count the characters of the files or directories
 * paths[0..n_paths) (none: stdin), or of shard's part of them (NULL or
 * n 0: all), into counts, with n_threads workers.  skip_bad skips lines
 * with invalid UTF-8 (counted and reported) instead of failing.  Returns
 * 0, 1 after warnings, or 2 after a message on the shard (a usage
 * error). */
int vb_chars_count(char *const *paths, int n_paths,
                   const struct cli_shard *shard, unsigned n_threads,
                   bool skip_bad, bool quiet, bool progress,
                   struct vocab_counts *counts);

/* vb_chars_write: write counts to out (opened by cli_output_open()) as
 * vocab-charcount(5) and commit it; an empty table is refused ("the input
 * is empty") and out removed.  Returns 0, or 1 after a warning. */
int vb_chars_write(const struct vocab_counts *counts, struct cli_output *out);

/* vb_merge_write: vocab_merge() of counts[0..n_counts) and the English
 * pieces eng[0..eng_len) (named eng_name), written to out (opened by
 * cli_output_open()) and committed, or removed after an error; a summary
 * on stderr unless quiet.  Returns 0, or 1 after a warning. */
int vb_merge_write(const struct vocab_charcount *counts, size_t n_counts,
                   const char *eng, size_t eng_len, const char *eng_name,
                   uint64_t threshold, struct cli_output *out, bool quiet);

#endif /* VOCAB_BUILD_ERNIE_H */

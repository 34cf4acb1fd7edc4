/* SPDX-License-Identifier: MIT */
/*
 * vocab_build.h: the subcommands of vocab-build(1), one file each
 * (tools/vocab_build_<sub>.c); tools/vocab-build.c dispatches.  Each
 * takes argc/argv with argv[0] the subcommand name and returns the exit
 * status (0, 1 failure, 2 usage).
 */
#ifndef VOCAB_BUILD_H
#define VOCAB_BUILD_H

int vb_chars_main(int argc, char **argv);
int vb_english_main(int argc, char **argv);
int vb_merge_main(int argc, char **argv);
int vb_bpe_main(int argc, char **argv);
int vb_all_main(int argc, char **argv);

#endif /* VOCAB_BUILD_H */

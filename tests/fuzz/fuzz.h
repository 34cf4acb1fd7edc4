/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h: the libFuzzer entry point every fuzz_*.c target defines.  Built
 * with clang -fsanitize=fuzzer by `make fuzz`, and with gcc against
 * replay.c by `make test`, which replays testdata/fuzz/<target>/.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* FUZZ_H */

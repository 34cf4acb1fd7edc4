/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h: the libFuzzer entry points every fuzz_*.c target defines (and
 * the optional initialisation), and what targets that read through files
 * share: a private scratch directory.  Built with clang -fsanitize=fuzzer
 * by `make fuzz`, and with gcc against replay.c by `make test`, which
 * replays testdata/fuzz/<target>/.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Optional: run once before the first input, by libFuzzer and by
 * replay.c alike.  A target whose setup needs something from outside (a
 * model) checks it here and exits with a message when it is missing, so
 * that no input is blamed for it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* Room for a path in the scratch directory (whose own path, $TMPDIR's
 * and a dozen bytes, must leave half of it). */
#define FUZZ_PATH_MAX 512

static char fuzz_tmp[FUZZ_PATH_MAX / 2];

static inline int
fuzz_tmp_remove_one(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static inline void
fuzz_tmp_remove(void)
{
    if (fuzz_tmp[0] != '\0')
        nftw(fuzz_tmp, fuzz_tmp_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* fuzz_tmp_dir: a directory of this process's own under $TMPDIR (else
 * /tmp), made on the first call and removed with everything in it when
 * the process exits normally; targets that read through files put them
 * there, so that campaigns running side by side (libFuzzer's -fork and
 * -jobs start processes) never share one and any directory works as the
 * current one.  Aborts when it cannot be made. */
static inline const char *
fuzz_tmp_dir(void)
{
    if (fuzz_tmp[0] == '\0') {
        const char *t = getenv("TMPDIR");

        if ((size_t)snprintf(
                fuzz_tmp, sizeof(fuzz_tmp), "%s/erniekit-fuzz.XXXXXX",
                t != NULL && t[0] != '\0' ? t : "/tmp") >= sizeof(fuzz_tmp)) {
            fprintf(stderr, "$TMPDIR is longer than %zu bytes\n",
                    sizeof(fuzz_tmp) - 24);
            abort();
        }
        if (mkdtemp(fuzz_tmp) == NULL) {
            perror(fuzz_tmp);
            abort();
        }
        atexit(fuzz_tmp_remove);
    }
    return fuzz_tmp;
}

/* fuzz_tmp_path: name's path in fuzz_tmp_dir(), into out[0..cap). */
static inline const char *
fuzz_tmp_path(char *out, size_t cap, const char *name)
{
    if ((size_t)snprintf(out, cap, "%s/%s", fuzz_tmp_dir(), name) >= cap)
        abort();
    return out;
}

/* fuzz_write_file: data[0..size) as the whole file at path; aborts when
 * it cannot be written (the scratch directory is the target's own). */
static inline void
fuzz_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");

    if (f == NULL || (size > 0 && fwrite(data, 1, size, f) != size) ||
        fclose(f) != 0) {
        perror(path);
        abort();
    }
}

#endif /* FUZZ_H */

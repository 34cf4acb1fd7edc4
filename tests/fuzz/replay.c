/* SPDX-License-Identifier: MIT */
/*
 * replay.c: a plain main() that feeds every file of a directory (or the
 * files named) to a fuzz target, so the committed corpus runs in
 * `make test` without clang.  A crash (or an unreadable file) is the
 * failure; the whole corpus counts as one test: "<target>: 1 passed,
 * 0 failed, 0 skipped (N inputs)".  A target's LLVMFuzzerInitialize(),
 * if it has one, runs first, as libFuzzer runs it.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int
run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long len;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0) {
        perror(path);
        if (f)
            fclose(f);
        return -1;
    }
    rewind(f);
    buf = malloc(len ? (size_t)len : 1);
    if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        perror(path);
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    return 0;
}

int
main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    const char *name = argc > 0 ? strrchr(argv[0], '/') : NULL;

    name = name ? name + 1 : "replay";
    if (LLVMFuzzerInitialize != NULL)
        LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        DIR *d;
        struct dirent *de;

        if (stat(argv[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) == 0)
                passed++;
            else
                failed++;
            continue;
        }
        d = opendir(argv[i]);
        if (d == NULL) {
            perror(argv[i]);
            failed++;
            continue;
        }
        while ((de = readdir(d)) != NULL) {
            char path[4096];

            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
            if (run_file(path) == 0)
                passed++;
            else
                failed++;
        }
        closedir(d);
    }
    printf("%s: %d passed, %d failed, 0 skipped (%d inputs)\n", name,
           failed ? 0 : 1, failed ? 1 : 0, passed + failed);
    return failed ? 1 : 0;
}

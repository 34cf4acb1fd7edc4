/* SPDX-License-Identifier: MIT */
/*
 * harness_files.h: file helpers of the unit tests that write files: a
 * fresh directory per test under $TMPDIR (default /tmp), named after the
 * program and removed at exit; reading and writing whole files; counting
 * the leftovers of interrupted writes; and CHECK_MSG for error messages.
 * Include after harness.h.
 */
#ifndef HARNESS_FILES_H
#define HARNESS_FILES_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The message string msg contains sub (printed if not). */
#define CHECK_MSG_STR(msg, sub)                                               \
    do {                                                                      \
        if (strstr((msg), (sub)) == NULL) {                                   \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, \
                    __LINE__, (msg), (sub));                                  \
            harness_failed_checks++;                                          \
        }                                                                     \
    } while (0)

/* The message of the error struct e (e.msg) contains sub. */
#define CHECK_MSG(e, sub) CHECK_MSG_STR((e).msg, (sub))

static char harness_tmp_root[4096];

static inline void remove_tree(const char *dir);

static inline void
harness_cleanup(void)
{
    remove_tree(harness_tmp_root);
}

/* A fresh empty directory for one test; returns its path (static). */
static inline const char *
test_dir(const char *name)
{
    static char dir[4200];

    if (harness_tmp_root[0] == '\0') {
        const char *t = getenv("TMPDIR");

        snprintf(harness_tmp_root, sizeof(harness_tmp_root), "%s/%s.XXXXXX",
                 t && *t ? t : "/tmp", program_invocation_short_name);
        if (mkdtemp(harness_tmp_root) == NULL) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(harness_cleanup);
    }
    snprintf(dir, sizeof(dir), "%s/%s", harness_tmp_root, name);
    mkdir(dir, 0777);
    return dir;
}

/* dir/file in one of 8 rotating buffers; dir may be an earlier result. */
static inline char *
path_of(const char *dir, const char *file)
{
    static char p[8][4400];
    static int k;
    char tmp[sizeof(p[0])];

    snprintf(tmp, sizeof(tmp), "%s/%s", dir, file);
    k = (k + 1) % 8;
    memcpy(p[k], tmp, sizeof(tmp));
    return p[k];
}

static inline unsigned char *
read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n;

    *len = 0;
    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0) {
        rewind(f);
        buf = malloc((size_t)n + 1);
        if (buf != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n)
            *len = (size_t)n;
    }
    fclose(f);
    return buf;
}

static inline void
write_file(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");

    if (f == NULL || fwrite(p, 1, len, f) != len) {
        perror(path);
        exit(1);
    }
    fclose(f);
}

/* The number of entries in dir, and how many of them have ".tmp." or
 * ".old." in their names. */
static inline int
count_files(const char *dir, int *n_tmp)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    *n_tmp = 0;
    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        n++;
        if (strstr(de->d_name, ".tmp.") != NULL ||
            strstr(de->d_name, ".old.") != NULL)
            (*n_tmp)++;
    }
    closedir(d);
    return n;
}

static inline void
remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        char p[8192];
        struct stat st;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >= (int)sizeof(p))
            continue;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

#endif /* HARNESS_FILES_H */

/* SPDX-License-Identifier: MIT */
/*
 * cli_path.c: where the installed programs and their data are, relative to
 * the running program.  `make install` puts the front command in BINDIR,
 * the commands in LIBEXECDIR/erniekit and the data in DATADIR; the build
 * compiles in the relative paths between them (which do not depend on
 * PREFIX), so an installed tree works wherever it is: any PREFIX, a
 * DESTDIR staging area, a tree moved elsewhere.  Needs only libc (the
 * front command links it alone).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "banned.h"

#ifndef ERNIEKIT_TOOLDIR_REL
#    define ERNIEKIT_TOOLDIR_REL "../libexec/erniekit"
#endif
#ifndef ERNIEKIT_DATADIR_REL
#    define ERNIEKIT_DATADIR_REL "../../share/erniekit"
#endif

const char cli_tooldir_rel[] = ERNIEKIT_TOOLDIR_REL;
const char cli_datadir_rel[] = ERNIEKIT_DATADIR_REL;

char *
cli_exe_dir(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char *slash;

    if (n < 0)
        return NULL;
    if ((size_t)n >= sizeof(exe) - 1) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (slash == NULL) {
        errno = ENOENT;
        return NULL;
    }
    /* The root directory stays "/"; any other keeps no trailing slash. */
    slash[slash == exe ? 1 : 0] = '\0';
    return strdup(exe);
}

char *
cli_path_join(const char *dir, const char *rel)
{
    size_t dlen = strlen(dir), cap;
    char *path;

    /* Each leading "../" of rel takes the last component off dir, so the
     * path printed in messages reads /usr/share/erniekit, not
     * /usr/libexec/erniekit/../../share/erniekit. */
    while (dlen > 0 && dir[dlen - 1] == '/')
        dlen--;
    while (strncmp(rel, "../", 3) == 0 || strcmp(rel, "..") == 0) {
        const char *up = memrchr(dir, '/', dlen);

        if (up == NULL)
            break;
        dlen = (size_t)(up - dir);
        rel += rel[2] == '/' ? 3 : 2;
    }
    while (strncmp(rel, "./", 2) == 0)
        rel += 2;
    if (strcmp(rel, ".") == 0)
        rel = "";
    cap = dlen + 1 + strlen(rel) + 1;
    path = malloc(cap);
    if (path == NULL)
        return NULL;
    snprintf(path, cap, "%.*s%s%s", (int)dlen, dir, *rel ? "/" : "", rel);
    if (path[0] == '\0')
        snprintf(path, cap, "/");
    return path;
}

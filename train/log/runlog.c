/* SPDX-License-Identifier: MIT */
/*
 * runlog.c: trimming the trainer's JSON log back to the step a run
 * resumes from (see runlog.h), so that no step appears twice.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runlog.h"
#include "banned.h"

/* Whether the line line[0..len) stays in a log resumed at step. */
static bool
keep(const char *line, size_t len, int64_t step)
{
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o;
    bool ok;

    if (tok == NULL)
        return true;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    o = json_tokener_parse_ex(tok, line, (int)len);
    ok = o != NULL && json_tokener_get_error(tok) == json_tokener_success &&
         json_tokener_get_parse_end(tok) == len &&
         json_object_is_type(o, json_type_object);
    json_tokener_free(tok);
    if (ok) {
        json_object_object_foreach(o, key, val)
        {
            size_t k = strlen(key);
            int64_t s;

            if (k < 5 || strcmp(key + k - 5, "_step") != 0 ||
                !json_object_is_type(val, json_type_int))
                continue;
            s = json_object_get_int64(val);
            ok = strcmp(key, "test_step") == 0 ? s < step : s <= step;
            break;
        }
    }
    json_object_put(o);
    return ok;
}

int
runlog_trim(const char *path, int64_t step, size_t *dropped, char *err,
            size_t errlen)
{
    FILE *in = fopen(path, "rb"), *out = NULL;
    char *line = NULL, *kept = NULL, tmp[4200];
    size_t cap = 0, n_kept = 0, kept_cap = 0, n_dropped = 0;
    ssize_t len;
    int rc = -1;

    if (dropped != NULL)
        *dropped = 0;
    if (in == NULL && errno == ENOENT)
        return 0;
    if (in == NULL) {
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    while ((len = getline(&line, &cap, in)) >= 0) {
        size_t l = (size_t)len;

        while (l > 0 && (line[l - 1] == '\n' || line[l - 1] == '\r'))
            l--;
        if (l == 0)
            continue; /* blank: gone if the file is rewritten */
        if (!keep(line, l, step)) {
            n_dropped++;
            continue;
        }
        if (n_kept + l + 1 > kept_cap) {
            size_t c = 2 * (n_kept + l + 1) + 4096;
            char *k = (char *)realloc(kept, c);

            if (k == NULL) {
                snprintf(err, errlen, "'%s': out of memory", path);
                goto out;
            }
            kept = k;
            kept_cap = c;
        }
        memcpy(kept + n_kept, line, l);
        kept[n_kept + l] = '\n';
        n_kept += l + 1;
    }
    if (ferror(in)) {
        snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        goto out;
    }
    if (n_dropped == 0) {
        rc = 0;
        goto out;
    }
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >=
        (int)sizeof(tmp)) {
        snprintf(err, errlen, "'%s': path too long", path);
        goto out;
    }
    out = fopen(tmp, "wb");
    if (out == NULL) {
        snprintf(err, errlen, "cannot create '%s': %s", tmp, strerror(errno));
        goto out;
    }
    if ((n_kept > 0 && fwrite(kept, 1, n_kept, out) != n_kept) ||
        fflush(out) != 0 || fsync(fileno(out)) != 0) {
        snprintf(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
        fclose(out);
        unlink(tmp);
        goto out;
    }
    if (fclose(out) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot replace '%s': %s", path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    if (dropped != NULL)
        *dropped = n_dropped;
    rc = 0;
out:
    fclose(in);
    free(line);
    free(kept);
    return rc;
}

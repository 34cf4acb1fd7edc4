/* SPDX-License-Identifier: MIT */
/*
 * fuzz_json.c: cli_json_field(), whose fast path reads flat objects of
 * strings by hand, against cli_json_field_jsonc(), which hands every
 * record to json-c: the same result, the same field bytes, the same
 * message.  The first byte picks the key ("text", "content", "a/b" or
 * ""); the rest is the record, kept only if it is valid UTF-8 (the tools
 * validate records before parsing them).  Records are mostly built from
 * the fast path's own alphabet (quotes, braces, colons, commas, spaces,
 * backslashes, the keys' letters), so the corpus reaches both paths.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/cli.h"
#include "fuzz.h"
#include "tok.h"

static const char *const keys[4] = { "text", "content", "a/b", "" };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct json_tokener *jt;
    struct tok_buf fast, slow;
    char why_fast[200], why_slow[200];
    const char *rec = (const char *)data + 1, *key;
    size_t len;
    int a, b;

    if (size < 1)
        return 0;
    len = size - 1;
    key = keys[data[0] & 3];
    if (tok_utf8_check(rec, len) != len)
        return 0;
    if (jt == NULL && (jt = json_tokener_new()) == NULL)
        abort();
    tok_buf_init(&fast);
    tok_buf_init(&slow);
    why_fast[0] = why_slow[0] = '\0';
    a = cli_json_field(&jt, rec, len, key, &fast, why_fast, sizeof(why_fast));
    b = cli_json_field_jsonc(&jt, rec, len, key, &slow, why_slow,
                             sizeof(why_slow));
    if (a != b || strcmp(why_fast, why_slow) != 0 ||
        (a == 1 && (fast.len != slow.len ||
                    memcmp(fast.data, slow.data, fast.len) != 0))) {
        fprintf(stderr,
                "fuzz_json: key '%s': fast path %d '%s' (%zu bytes), "
                "json-c %d '%s' (%zu bytes)\n",
                key, a, why_fast, fast.len, b, why_slow, slow.len);
        abort();
    }
    tok_buf_release(&fast);
    tok_buf_release(&slow);
    return 0;
}

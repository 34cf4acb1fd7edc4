/* SPDX-License-Identifier: MIT */
/*
 * cli_json.c: one string field out of one JSONL record, as the tools that
 * read JSONL (tokenize -k, segment -f jsonl/wudao) need it, with the same
 * errors for all of them.
 */
#include <json-c/json.h>
#include <stdio.h>

#include "cli.h"
#include "banned.h"

static bool
json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

int
cli_json_field(struct json_tokener *jt, const char *s, size_t len,
               const char *key, struct tok_buf *out, char *why, size_t why_len)
{
    struct json_object *obj, *field;
    enum json_tokener_error je;
    const char *p = s, *end = s + len;
    int rc = 1;

    while (p < end && json_space(*p))
        p++;
    if (p == end)
        return 0; /* a blank line carries no record */
    json_tokener_reset(jt);
    obj = json_tokener_parse_ex(jt, p, (int)(end - p));
    je = json_tokener_get_error(jt);
    if (obj == NULL || je != json_tokener_success) {
        json_object_put(obj);
        snprintf(why, why_len, "invalid JSON: %s",
                 je == json_tokener_continue ? "unexpected end of record"
                                             : json_tokener_error_desc(je));
        return -1;
    }
    for (p += json_tokener_get_parse_end(jt); p < end && json_space(*p); p++)
        ;
    if (p != end) {
        snprintf(why, why_len, "invalid JSON: text after the value");
        rc = -1;
    } else if (!json_object_is_type(obj, json_type_object) ||
               !json_object_object_get_ex(obj, key, &field) ||
               !json_object_is_type(field, json_type_string)) {
        snprintf(why, why_len, "no string field '%s'", key);
        rc = -1;
    } else {
        /* json-c 0.16 turns a lone surrogate escape into U+FFFD, which
         * both tools then treat as the Python references treat the
         * surrogate; bytes another library might leave that are not UTF-8
         * are dropped here, so the text is always valid. */
        tok_buf_clear(out);
        if (tok_utf8_sanitize(json_object_get_string(field),
                              (size_t)json_object_get_string_len(field),
                              TOK_UTF8_SKIP, out, NULL, NULL) < 0 ||
            tok_buf_append(out, "", 0) < 0) {
            snprintf(why, why_len, "out of memory");
            rc = -2;
        }
    }
    json_object_put(obj);
    return rc;
}

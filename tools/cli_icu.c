/* SPDX-License-Identifier: MIT */
/*
 * cli_icu.c: ICU's sentence break iterator, loaded when first asked for.
 *
 * Linking libicuuc (and, through it, libstdc++) cost every process of the
 * tools 0.85 ms of start-up, most of a run on a small file, while only
 * `segment -r icu` and `create-pretraining-data -S` without --chinese
 * break sentences with ICU.  So the library is opened with dlopen() on
 * first use, by the soname and the versioned symbol names of the ICU the
 * tools were compiled against (ICU renames its C API per major version:
 * ubrk_open is ubrk_open_72 in ICU 72).
 */
#include <dlfcn.h>
#include <err.h>
#include <pthread.h>
#include <stdlib.h>

#include <unicode/ubrk.h>
#include <unicode/utext.h>
#include <unicode/uversion.h>

#include "cli.h"
#include "banned.h"

/* The linker name of a renamed ICU function: expand, then stringify. */
#define ICU_SYMBOL(f) ICU_STRING(f)
#define ICU_STRING(f) #f
#define ICU_LIBRARY   "libicuuc.so." U_ICU_VERSION_SHORT

static struct {
    UText *(*utext_open_utf8)(UText *, const char *, int64_t, UErrorCode *);
    UText *(*utext_close)(UText *);
    UBreakIterator *(*ubrk_open)(UBreakIteratorType, const char *,
                                 const UChar *, int32_t, UErrorCode *);
    void (*ubrk_set_utext)(UBreakIterator *, UText *, UErrorCode *);
    int32_t (*ubrk_first)(UBreakIterator *);
    int32_t (*ubrk_next)(UBreakIterator *);
    void (*ubrk_close)(UBreakIterator *);
    const char *(*u_error_name)(UErrorCode);
} icu;

static pthread_once_t icu_once = PTHREAD_ONCE_INIT;
static const char *icu_error; /* why loading failed, or NULL */

static void *
icu_symbol(void *lib, const char *name)
{
    void *f = dlsym(lib, name);

    if (f == NULL && icu_error == NULL)
        icu_error = dlerror();
    return f;
}

static void
icu_load(void)
{
    void *lib = dlopen(ICU_LIBRARY, RTLD_NOW | RTLD_LOCAL);

    if (lib == NULL) {
        icu_error = dlerror();
        return;
    }
    /* POSIX's way to assign a function pointer from dlsym()'s void *. */
#define LOAD(field, f) *(void **)&icu.field = icu_symbol(lib, ICU_SYMBOL(f))
    LOAD(utext_open_utf8, utext_openUTF8);
    LOAD(utext_close, utext_close);
    LOAD(ubrk_open, ubrk_open);
    LOAD(ubrk_set_utext, ubrk_setUText);
    LOAD(ubrk_first, ubrk_first);
    LOAD(ubrk_next, ubrk_next);
    LOAD(ubrk_close, ubrk_close);
    LOAD(u_error_name, u_errorName);
#undef LOAD
    /* The library stays open for the life of the process. */
}

struct cli_sentences {
    UBreakIterator *brk;
};

struct cli_sentences *
cli_sentences_new(void)
{
    struct cli_sentences *s;
    UErrorCode ec = U_ZERO_ERROR;

    pthread_once(&icu_once, icu_load);
    if (icu_error != NULL)
        errx(1, "cannot load ICU (%s) for sentence breaks: %s", ICU_LIBRARY,
             icu_error);
    if ((s = calloc(1, sizeof(*s))) == NULL)
        err(1, NULL);
    s->brk = icu.ubrk_open(UBRK_SENTENCE, "", NULL, 0, &ec);
    if (U_FAILURE(ec))
        errx(1, "cannot open ICU's sentence breaker: %s", icu.u_error_name(ec));
    return s;
}

int
cli_sentences_each(struct cli_sentences *s, const char *text, size_t len,
                   int (*fn)(void *ctx, size_t start, size_t end), void *ctx)
{
    UErrorCode ec = U_ZERO_ERROR;
    UText *ut;
    int32_t a, b;
    int rc = 0;

    if (len > INT32_MAX)
        return CLI_SENTENCES_TOO_LONG; /* ICU's offsets are 32-bit */
    ut = icu.utext_open_utf8(NULL, text, (int64_t)len, &ec);
    if (U_FAILURE(ec))
        return -1;
    icu.ubrk_set_utext(s->brk, ut, &ec);
    if (U_FAILURE(ec)) {
        icu.utext_close(ut);
        return -1;
    }
    a = icu.ubrk_first(s->brk);
    while (rc == 0 && (b = icu.ubrk_next(s->brk)) != UBRK_DONE) {
        rc = fn(ctx, (size_t)a, (size_t)b);
        a = b;
    }
    icu.utext_close(ut);
    return rc;
}

void
cli_sentences_free(struct cli_sentences *s)
{
    if (s == NULL)
        return;
    icu.ubrk_close(s->brk);
    free(s);
}

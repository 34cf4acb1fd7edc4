/* SPDX-License-Identifier: MIT */
/*
 * harness.h: the unit-test harness.  CHECK macros print file:line and the
 * values on failure and keep going; a static table of test functions feeds
 * main(), which ends with "<suite>: N passed, N failed, N skipped" and exits
 * 1 if anything failed.  No fork, so sanitizers and debuggers behave.
 *
 *     static void test_vocab_load(void) { CHECK_EQ_INT(f(), 3); }
 *     TESTS(tok, TEST(test_vocab_load))
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int harness_failed_checks; /* in the current test */
static int harness_skipped;       /* the current test was skipped */

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            harness_failed_checks++;                                         \
        }                                                                    \
    } while (0)

#define CHECK_EQ_INT(a, b)                                            \
    do {                                                              \
        long long a_ = (long long)(a), b_ = (long long)(b);           \
        if (a_ != b_) {                                               \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", \
                    __FILE__, __LINE__, #a, #b, a_, b_);              \
            harness_failed_checks++;                                  \
        }                                                             \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                \
    do {                                                                  \
        const char *a_ = (a), *b_ = (b);                                  \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {            \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", \
                    __FILE__, __LINE__, #a, #b, a_ ? a_ : "(null)",       \
                    b_ ? b_ : "(null)");                                  \
            harness_failed_checks++;                                      \
        }                                                                 \
    } while (0)

#define CHECK_EQ_MEM(a, b, n)                                                 \
    do {                                                                      \
        if (memcmp((a), (b), (n)) != 0) {                                     \
            fprintf(stderr, "%s:%d: %s == %s (%zu bytes) failed\n", __FILE__, \
                    __LINE__, #a, #b, (size_t)(n));                           \
            harness_failed_checks++;                                          \
        }                                                                     \
    } while (0)

#define SKIP(reason)                                                         \
    do {                                                                     \
        fprintf(stderr, "%s:%d: skipped: %s\n", __FILE__, __LINE__, reason); \
        harness_skipped = 1;                                                 \
        return;                                                              \
    } while (0)

struct harness_test {
    const char *name;
    void (*fn)(void);
};

#define TEST(fn) \
    {            \
#        fn, fn  \
    }

#define TESTS(suite, ...)                                                     \
    static const struct harness_test harness_tests[] = { __VA_ARGS__ };       \
    int main(void)                                                            \
    {                                                                         \
        int passed = 0, failed = 0, skipped = 0;                              \
        size_t n = sizeof(harness_tests) / sizeof(harness_tests[0]);          \
        for (size_t i = 0; i < n; i++) {                                      \
            harness_failed_checks = 0;                                        \
            harness_skipped = 0;                                              \
            harness_tests[i].fn();                                            \
            if (harness_failed_checks) {                                      \
                failed++;                                                     \
                printf("FAIL %s\n", harness_tests[i].name);                   \
            } else if (harness_skipped) {                                     \
                skipped++;                                                    \
                printf("skip %s\n", harness_tests[i].name);                   \
            } else {                                                          \
                passed++;                                                     \
            }                                                                 \
        }                                                                     \
        printf(#suite ": %d passed, %d failed, %d skipped\n", passed, failed, \
               skipped);                                                      \
        return failed ? 1 : 0;                                                \
    }

#endif /* HARNESS_H */

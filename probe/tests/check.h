/* The C unit tests' checks: each test file is its own program (meson test), built against the
 * probe's library; CHECK counts, CHECK_REPORT prints the tally and gives the exit status. */
#ifndef LATSCOPE_TEST_CHECK_H
#define LATSCOPE_TEST_CHECK_H

#include <stdio.h>

static int failures = 0, passed = 0;
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            passed++;                                                                \
        } else {                                                                     \
            failures++;                                                              \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
        }                                                                            \
    } while (0)

static inline int check_report(void) {
    printf("%d passed, %d failed\n", passed, failures);
    return failures ? 1 : 0;
}

#endif

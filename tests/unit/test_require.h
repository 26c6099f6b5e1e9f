/* The rule for unit tests that need a model file: a missing or unloadable
 * model fails the test, unless the caller opts out explicitly with
 * NUCLEUS_TESTS_WITHOUT_MODEL=1, which turns it into a skip that says why.
 * `make unit` fetches the default model first (it depends on `make model`),
 * so a skip there always names a condition someone chose. Include after
 * <cmocka.h>. */
#ifndef NC_TEST_REQUIRE_H
#define NC_TEST_REQUIRE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True when the caller opted out of the model requirement. */
static inline bool nc_test_without_model(void) {
  const char *v = getenv("NUCLEUS_TESTS_WITHOUT_MODEL");
  return v && strcmp(v, "1") == 0;
}

/* Ends the current test: skipped when NUCLEUS_TESTS_WITHOUT_MODEL=1, else
 * failed; what says which model and why (its path, the load error). */
#define NC_MODEL_UNAVAILABLE(what)                                             \
  do {                                                                         \
    if (nc_test_without_model()) {                                             \
      print_message("skipped: %s (NUCLEUS_TESTS_WITHOUT_MODEL=1)\n", (what));  \
      skip();                                                                  \
    }                                                                          \
    fail_msg("%s (set NUCLEUS_TESTS_WITHOUT_MODEL=1 to skip the tests that "   \
             "need it)",                                                       \
             (what));                                                          \
  } while (0)

/* Skips the current test for a condition the test checked, and says so. */
#define NC_SKIP_BECAUSE(...)                                                   \
  do {                                                                         \
    print_message("skipped: ");                                                \
    print_message(__VA_ARGS__);                                                \
    print_message("\n");                                                       \
    skip();                                                                    \
  } while (0)

/* 1 in the AddressSanitizer build: long checks run a shorter version. */
#if defined(__SANITIZE_ADDRESS__)
#define NC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NC_SANITIZED 1
#endif
#endif
#ifndef NC_SANITIZED
#define NC_SANITIZED 0
#endif

/* Long checks (goldens over many prompts and positions) run their shorter
 * version in the sanitizer build and in the short tier: `make check` sets
 * NUCLEUS_TEST_SHORT=1; `make test` runs them whole in the release build. */
static inline bool nc_test_short(void) {
  const char *e = getenv("NUCLEUS_TEST_SHORT");
  return NC_SANITIZED || (e && *e && strcmp(e, "0") != 0);
}
#define NC_SHORT nc_test_short()

#endif

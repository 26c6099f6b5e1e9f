/* The request-parsing fuzz harness (fuzz/fuzz_request.c) on its committed
 * corpus (fuzz/corpus/request: the e2e tests' request bodies and what the
 * fuzzer found), so every unit-test build (release and ASan+UBSan) replays
 * it; plus a few bodies that must pass its checks. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../fuzz/fuzz_request.c"
#include "fuzz_corpus.h"

static void replay(const uint8_t *data, size_t len, void *ctx) {
  (void)ctx;
  LLVMFuzzerTestOneInput(data, len);
}

static void one(const char *body) {
  LLVMFuzzerTestOneInput((const uint8_t *)body, strlen(body));
}

static void test_known_bodies(void **state) {
  (void)state;
  one("{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
      "\"max_tokens\": 4, \"stop\": [\"a\", \"bc\"], \"logit_bias\": "
      "{\"5\": 3.5}, \"tools\": [{\"type\": \"function\", \"function\": "
      "{\"name\": \"f\"}}]}");
  one("{\"prompt\": [1, 2, 3], \"n\": 2, \"logprobs\": 3}");
  one("{\"prompt\": [[7, 8]], \"stop_token_ids\": [1, 49151]}");
  one("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
      "\"text\", \"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]}]}");
  one("{\"prompt\": \"x\", \"logit_bias\": {\"49152\": 1}}");
  one("{\"input\": [[1, 2], [3]], \"dimensions\": 8, \"truncate\": true, "
      "\"encoding_format\": \"base64\"}");
  one("{\"input\": \"a\", \"dimensions\": 385}");
  one("{\"query\": \"q\", \"documents\": [\"a\", {\"text\": \"b\"}], "
      "\"top_n\": 1, \"return_documents\": false}");
  one("{\"query\": \"q\", \"documents\": [{\"txt\": \"b\"}]}");
  one("{\"messages\": []}");
  one("[1, 2]");
  one("{");
}

static void test_fuzz_corpus_replay(void **state) {
  (void)state;
  int n = fuzz_corpus_replay("request", replay, NULL);
  print_message("replayed %d inputs\n", n);
  assert_true(n >= 50);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_bodies),
      cmocka_unit_test(test_fuzz_corpus_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

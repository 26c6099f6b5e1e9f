/* nucleus serve: the request-head checker (http_head.c) and the origin
 * checks (origin_guard.c), without a server; the fuzz seeds replayed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz_corpus.h"
#include "http/http_body.h"
#include "http/http_head.h"
#include "http/origin_guard.h"

static http_head_result check(const char *s, unsigned *status) {
  http_head_verdict v = {0};
  http_head_result r = http_head_check(s, strlen(s), 4096, &v);
  if (status) *status = r == HTTP_HEAD_BAD ? v.status : 0;
  if (r == HTTP_HEAD_BAD) assert_true(v.message[0] != '\0');
  return r;
}

static void bad_with(const char *s, unsigned want) {
  unsigned status;
  assert_int_equal(check(s, &status), HTTP_HEAD_BAD);
  assert_int_equal(status, want);
}

static void test_good_heads(void **state) {
  (void)state;
  assert_int_equal(check("GET /health HTTP/1.1\r\nHost: a\r\n\r\n", NULL),
                   HTTP_HEAD_OK);
  assert_int_equal(check("\r\nGET / HTTP/1.0\n\n", NULL), HTTP_HEAD_OK);
  assert_int_equal(check("POST /v1/x?y=1 HTTP/1.1\r\nContent-Length: 12\r\n"
                         "Content-Length: 12\r\n\r\n",
                         NULL),
                   HTTP_HEAD_OK);
  assert_int_equal(check("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n"
                         "\r\n1a;ext=1\r\n",
                         NULL),
                   HTTP_HEAD_OK);
}

static void test_incomplete_heads_wait(void **state) {
  (void)state;
  const char *prefixes[] = {"",
                            "\r\n",
                            "GE",
                            "GET /",
                            "GET / HTTP/1.1",
                            "GET / HTTP/1.1\r\nHost: a",
                            "GET / HTTP/1.1\r\n"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    assert_int_equal(check(prefixes[i], NULL), HTTP_HEAD_INCOMPLETE);
}

static void test_bad_heads(void **state) {
  (void)state;
  bad_with("\x01\x02 garbage\r\n\r\n", 400);
  bad_with("\x01", 400); /* known bad before the line ends */
  bad_with("GET /health\r\n\r\n", 400);
  bad_with("GET  / HTTP/1.1\r\n\r\n", 400);
  bad_with("GET / HTTP/2.0\r\n\r\n", 505);
  bad_with("GET / HTTP/1.2\r\n\r\n", 505);
  bad_with("GET / HTTPS/1.1\r\n\r\n", 400);
  bad_with("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400);
  bad_with("GET / HTTP/1.1\r\nX: 1\r\n 2\r\n\r\n", 400);
  bad_with("GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400);
  bad_with("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400);
  bad_with("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400);
  bad_with("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
           400);
  bad_with("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
           400);
  bad_with("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501);
  bad_with("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
           "Content-Length: 3\r\n\r\n",
           400);
  bad_with("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400);
  bad_with("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nz", 400);
}

/* Issue 38: one Host (RFC 9112 3.2), at most HTTP_HEAD_MAX_FIELDS fields
 * (thousands of tiny ones ran libmicrohttpd out of memory), and the same
 * rules field by field for heads libmicrohttpd has split. */
static void test_hosts_and_field_count(void **state) {
  (void)state;
  bad_with("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
  bad_with("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400);
  char head[4096] = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < HTTP_HEAD_MAX_FIELDS; i++)
    strcat(head, "a:\r\n");
  assert_int_equal(check(strcat(head, "\r\n"), NULL), HTTP_HEAD_OK);
  head[strlen(head) - 2] = '\0';
  bad_with(strcat(head, "b:\r\n\r\n"), 431);

  http_head_fields f = {0};
  http_head_verdict v = {0};
  assert_int_equal(http_head_field(&f, "Content-Length", 14, "2", 1, &v),
                   HTTP_HEAD_OK);
  assert_int_equal(http_head_field(&f, "content-length", 14, "45", 2, &v),
                   HTTP_HEAD_BAD);
  assert_int_equal(v.status, 400);
  memset(&f, 0, sizeof f);
  assert_int_equal(http_head_field(&f, "Content-Length", 14, "2", 1, &v),
                   HTTP_HEAD_OK);
  assert_int_equal(
      http_head_field(&f, "Transfer-Encoding", 17, "chunked", 7, &v),
      HTTP_HEAD_OK);
  assert_int_equal(http_head_fields_end(&f, &v), HTTP_HEAD_BAD);
  memset(&f, 0, sizeof f);
  assert_int_equal(
      http_head_field(&f, "Transfer-Encoding", 17, "xchunked", 8, &v),
      HTTP_HEAD_BAD);
  assert_int_equal(v.status, 501);
}

static void test_oversized_head_is_431(void **state) {
  (void)state;
  char *big = malloc(6000);
  memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
  memset(big + 19, 'a', 6000 - 20);
  big[5999] = '\0';
  bad_with(big, 431);
  memcpy(big, "GET /", 5);
  memset(big + 5, 'a', 5000); /* a request line that never ends */
  big[5005] = '\0';
  bad_with(big, 414);
  free(big);
}

static void test_content_type(void **state) {
  (void)state;
  assert_true(content_type_is_json("application/json"));
  assert_true(content_type_is_json(" Application/JSON ; charset=utf-8"));
  assert_false(content_type_is_json(NULL));
  assert_false(content_type_is_json("text/plain"));
  assert_false(content_type_is_json("application/jsonp"));
  assert_false(content_type_is_json("application/x-www-form-urlencoded"));
}

static void test_host(void **state) {
  (void)state;
  server_config cfg = {0};
  cfg.host = "127.0.0.1";
  const char *ok[] = {NULL,         "127.0.0.1",   "127.0.0.1:8080",
                      "localhost",  "LocalHost.",  "localhost:1",
                      "[::1]:8080", "192.168.1.9", "[2001:db8::1]"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
    assert_true(host_allowed(&cfg, ok[i]));
  const char *bad[] = {"",
                       "evil.example",
                       "evil.example:8080",
                       "127.0.0.1.evil.example",
                       "localhost.evil.example",
                       "[::1",
                       "[not-an-ip]",
                       "a:b:c",
                       "127.0.0.1:80:80"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_false(host_allowed(&cfg, bad[i]));
  cfg.allowed_hosts[cfg.n_allowed_hosts++] = "box.internal";
  assert_true(host_allowed(&cfg, "BOX.internal:9"));
  assert_false(host_allowed(&cfg, "evil.example"));
  cfg.allowed_hosts[cfg.n_allowed_hosts++] = "*";
  assert_true(host_allowed(&cfg, "evil.example"));
}

/* Every seed of the fuzz target gets a verdict at every prefix length. */
static void verdicts(const uint8_t *data, size_t len, void *ctx) {
  (void)ctx;
  for (size_t k = 0; k <= len; k++) {
    http_head_verdict v;
    http_head_result r = http_head_check((const char *)data, k, 4096, &v);
    assert_true(r == HTTP_HEAD_OK || r == HTTP_HEAD_BAD ||
                r == HTTP_HEAD_INCOMPLETE);
  }
}

/* A head's framing: where it ends and how its body is framed. */
static void test_head_frame(void **state) {
  (void)state;
  http_head_verdict v;
  http_head_info info;
  const char *h = "\r\nPOST / HTTP/1.1\r\nContent-Length: 12\r\n\r\nbody";
  assert_int_equal(http_head_frame(h, strlen(h), 4096, &v, &info),
                   HTTP_HEAD_OK);
  assert_int_equal(info.head_len, strlen(h) - 4);
  assert_false(info.chunked);
  assert_int_equal(info.length, 12);
  h = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
  /* the first chunk is the body's to check, not the head's */
  assert_int_equal(http_head_frame(h, strlen(h), 4096, &v, &info),
                   HTTP_HEAD_OK);
  assert_true(info.chunked);
  assert_int_equal(check(h, NULL), HTTP_HEAD_BAD);
}

/* Feeds s to a body of the given framing one byte at a time and whole;
 * both give the same verdict and end at the same byte. Returns the bytes
 * used (the body's length when it ended). */
static size_t feed(const char *s, bool chunked, unsigned long long length,
                   http_head_result want, unsigned status) {
  http_head_info info = {.chunked = chunked, .length = length};
  http_body whole, bytes;
  http_head_verdict v = {0}, vb = {0};
  http_body_start(&whole, &info);
  http_body_start(&bytes, &info);
  size_t used = 0, n = strlen(s);
  http_head_result r = http_body_feed(&whole, s, n, &used, &v);
  assert_int_equal(r, want);
  size_t at = 0;
  http_head_result rb = HTTP_HEAD_OK;
  while (at < n && rb == HTTP_HEAD_OK && !http_body_done(&bytes)) {
    size_t u = 0;
    rb = http_body_feed(&bytes, s + at, 1, &u, &vb);
    at += u;
  }
  assert_int_equal(rb, want);
  assert_int_equal(at, used);
  if (want == HTTP_HEAD_BAD) {
    assert_int_equal(v.status, status);
    assert_true(v.message[0] != '\0');
  }
  assert_int_equal(http_body_done(&whole), http_body_done(&bytes));
  return used;
}

static void test_body_framing(void **state) {
  (void)state;
  /* Content-Length: the body ends after that many bytes */
  assert_int_equal(feed("{}GET", false, 2, HTTP_HEAD_OK, 0), 2);
  assert_int_equal(feed("", false, 0, HTTP_HEAD_OK, 0), 0);
  /* chunks, extensions, trailers; the next request's bytes are left */
  const char *good = "2\r\n{}\r\nA;x=1;y\r\n0123456789\r\n1 ; e\r\nz\r\n"
                     "0\r\nX-T: 1\r\nY: 2\r\n\r\nGET";
  assert_int_equal(feed(good, true, 0, HTTP_HEAD_OK, 0), strlen(good) - 3);
  assert_int_equal(feed("0\r\n\r\n", true, 0, HTTP_HEAD_OK, 0), 5);
  assert_int_equal(feed("0\n\n", true, 0, HTTP_HEAD_OK, 0), 3);
  /* an unfinished body waits: everything is used, it has not ended */
  assert_int_equal(feed("5\r\nab", true, 0, HTTP_HEAD_OK, 0), 5);
  /* malformed anywhere, first chunk or later */
  feed("zz\r\n", true, 0, HTTP_HEAD_BAD, 400);
  feed("2\r\n{}\r\nzz\r\n", true, 0, HTTP_HEAD_BAD, 400);
  feed("1\r\n{XX", true, 0, HTTP_HEAD_BAD, 400);  /* no CRLF */
  feed("1\r\n{\rX", true, 0, HTTP_HEAD_BAD, 400); /* CR, no LF */
  feed("1 2\r\n", true, 0, HTTP_HEAD_BAD, 400);   /* junk after size */
  feed("\r\n", true, 0, HTTP_HEAD_BAD, 400);      /* no size */
  feed(";x\r\n", true, 0, HTTP_HEAD_BAD, 400);    /* no size */
  feed("1\rx\n", true, 0, HTTP_HEAD_BAD, 400);    /* CR, no LF */
  feed("11111111111111111\r\n", true, 0, HTTP_HEAD_BAD, 400); /* 17 */
  feed("0\r\nX-T: 1\r\n 2\r\n\r\n", true, 0, HTTP_HEAD_BAD, 400);
  feed("0\r\nno colon\r\n\r\n", true, 0, HTTP_HEAD_BAD, 400);
  feed("1;\x01\r\n", true, 0, HTTP_HEAD_BAD, 400); /* control char */
  char line[HTTP_BODY_MAX_LINE + 8];
  memset(line, ' ', sizeof line);
  line[0] = '1';
  line[sizeof line - 1] = '\0';
  feed(line, true, 0, HTTP_HEAD_BAD, 400);
  char many[HTTP_BODY_MAX_TRAILERS * 6 + 16] = "0\r\n";
  for (int i = 0; i <= HTTP_BODY_MAX_TRAILERS; i++)
    strcat(many, "a: b\r\n");
  feed(many, true, 0, HTTP_HEAD_BAD, 431);
}

static void test_fuzz_seeds(void **state) {
  (void)state;
  assert_true(fuzz_corpus_replay("http_head", verdicts, NULL) >= 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_good_heads),
      cmocka_unit_test(test_incomplete_heads_wait),
      cmocka_unit_test(test_bad_heads),
      cmocka_unit_test(test_hosts_and_field_count),
      cmocka_unit_test(test_oversized_head_is_431),
      cmocka_unit_test(test_content_type),
      cmocka_unit_test(test_host),
      cmocka_unit_test(test_head_frame),
      cmocka_unit_test(test_body_framing),
      cmocka_unit_test(test_fuzz_seeds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* json_compact: compact JSON text whose reals read back as the same
 * doubles in the fewest digits (see json_compact.h). */
#include "json_compact.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool put_text(char **t, size_t *len, size_t *cap, const char *p,
                     size_t n) {
  if (*len + n + 1 > *cap) {
    size_t nc = *cap ? *cap * 2 : 256;
    while (nc < *len + n + 1)
      nc *= 2;
    char *nt = realloc(*t, nc);
    if (!nt) return false;
    *t = nt;
    *cap = nc;
  }
  memcpy(*t + *len, p, n);
  *len += n;
  (*t)[*len] = '\0';
  return true;
}

/* v appended to *t (*len bytes of *cap); false when out of memory. */
static bool put_json(char **t, size_t *len, size_t *cap, const json_t *v) {
  if (json_is_object(v)) {
    const char *k;
    const json_t *x;
    bool first = true;
    if (!put_text(t, len, cap, "{", 1)) return false;
    json_object_foreach((json_t *)v, k, x) {
      json_t *key = json_string(k);
      char *ks = key ? json_dumps(key, JSON_ENCODE_ANY) : NULL;
      json_decref(key);
      bool ok = ks && (first || put_text(t, len, cap, ",", 1)) &&
                put_text(t, len, cap, ks, strlen(ks)) &&
                put_text(t, len, cap, ":", 1) && put_json(t, len, cap, x);
      free(ks);
      if (!ok) return false;
      first = false;
    }
    return put_text(t, len, cap, "}", 1);
  }
  if (json_is_array(v)) {
    size_t i;
    const json_t *x;
    if (!put_text(t, len, cap, "[", 1)) return false;
    json_array_foreach(v, i, x) {
      if ((i && !put_text(t, len, cap, ",", 1)) || !put_json(t, len, cap, x))
        return false;
    }
    return put_text(t, len, cap, "]", 1);
  }
  if (json_is_real(v)) {
    const double d = json_real_value(v);
    char num[40];
    for (int p = 1; p <= 17; p++) {
      snprintf(num, sizeof num, "%.*g", p, d);
      if (strtod(num, NULL) == d) break;
    }
    if (!strpbrk(num, ".eE")) strcat(num, ".0"); /* a real stays one */
    return put_text(t, len, cap, num, strlen(num));
  }
  char *js = json_dumps(v, JSON_ENCODE_ANY);
  bool ok = js && put_text(t, len, cap, js, strlen(js));
  free(js);
  return ok;
}

char *nc_json_compact(const json_t *v) {
  char *out = NULL;
  size_t len = 0, cap = 0;
  if (!put_json(&out, &len, &cap, v)) {
    free(out);
    return NULL;
  }
  return out;
}

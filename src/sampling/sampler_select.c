/* sampler_select: ordering candidates and selecting the smallest prefix of
 * a given mass without sorting everything (a quickselect on mass). */
#include "sampler_select.h"

#include <stdlib.h>

static inline bool before(const nc_cand *a, const nc_cand *b) {
  return a->key < b->key || (a->key == b->key && a->id < b->id);
}

static int cmp_cand(const void *pa, const void *pb) {
  const nc_cand *a = pa, *b = pb;
  return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

static void swap(nc_cand *a, nc_cand *b) {
  nc_cand t = *a;
  *a = *b, *b = t;
}

void nc_cand_sort(nc_cand *a, size_t n) {
  if (n < 2) return;
  if (n <= 16) {
    for (size_t i = 1; i < n; i++)
      for (size_t j = i; j > 0 && before(&a[j], &a[j - 1]); j--)
        swap(&a[j], &a[j - 1]);
    return;
  }
  qsort(a, n, sizeof *a, cmp_cand);
}

/* Sorts a[lo..hi) and returns the end of the smallest prefix of a reaching
 * target, given that a[0..lo) holds mass acc. */
static size_t finish_by_sort(nc_cand *a, size_t lo, size_t hi, double acc,
                             double target) {
  nc_cand_sort(a + lo, hi - lo);
  for (size_t i = lo; i < hi; i++) {
    acc += a[i].w;
    if (acc >= target) return i + 1;
  }
  return hi;
}

size_t nc_cand_select_mass(nc_cand *a, size_t n, double target) {
  if (n == 0) return 0;
  size_t lo = 0, hi = n;
  double acc = 0.0; /* mass of a[0..lo), all of which is in the prefix */
  int budget = 64;  /* partitions before falling back to a sort */
  while (hi - lo > 16 && budget-- > 0) {
    size_t mid = lo + (hi - lo) / 2, last = hi - 1;
    /* median of three, moved to last */
    if (before(&a[mid], &a[lo])) swap(&a[mid], &a[lo]);
    if (before(&a[last], &a[lo])) swap(&a[last], &a[lo]);
    if (before(&a[mid], &a[last])) swap(&a[mid], &a[last]);
    nc_cand pivot = a[last];
    size_t j = lo;
    double below = 0.0;
    for (size_t i = lo; i < last; i++)
      if (before(&a[i], &pivot)) {
        below += a[i].w;
        swap(&a[i], &a[j++]);
      }
    swap(&a[j], &a[last]); /* pivot at j */
    if (acc + below >= target) {
      hi = j;
    } else if (acc + below + pivot.w >= target) {
      return j + 1;
    } else {
      acc += below + pivot.w;
      lo = j + 1;
    }
  }
  size_t r = finish_by_sort(a, lo, hi, acc, target);
  return r > 0 ? r : 1;
}

/* sampler_select: order candidates by (key ascending, id ascending) and find
 * the smallest prefix in that order that reaches a mass, in expected linear
 * time. Internal to the sampler. */
#ifndef NC_SAMPLER_SELECT_H
#define NC_SAMPLER_SELECT_H

#include "sampler_math.h"

/* Sorts a[0..n) by (key, id) ascending. */
void nc_cand_sort(nc_cand *a, size_t n);

/* Rearranges a[0..n) so that a[0..r) holds the smallest prefix, in (key, id)
 * order, whose weights w sum to at least target (in any order inside), and
 * returns r: at least 1 when n >= 1, n when the whole does not reach
 * target. */
size_t nc_cand_select_mass(nc_cand *a, size_t n, double target);

#endif

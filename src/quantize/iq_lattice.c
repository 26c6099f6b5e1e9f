/* iq_lattice: ggml's quantizer search tables, rebuilt from our codebooks.
 * The neighbour lists hold, for a lattice point off the grid, every grid
 * point at one of its nwant smallest distinct squared distances, ordered by
 * distance and then by grid index (the order of ggml's qsort by that
 * pair); found here by a linear scan per distance instead of a sort. */
#include "iq_lattice.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/iq_grids.h"
#include "quant_round.h"

bool nc_iq_lattice_needed(nc_type t) {
  switch (t) {
  case NC_TYPE_IQ2_XXS:
  case NC_TYPE_IQ2_XS:
  case NC_TYPE_IQ2_S:
  case NC_TYPE_IQ3_XXS:
  case NC_TYPE_IQ3_S:
  case NC_TYPE_IQ1_S:
  case NC_TYPE_IQ1_M: return true;
  default: return false;
  }
}

/* The level of coordinate value v among the codebook's values vals[n]. */
static int level_of(const uint8_t *vals, int n, uint8_t v) {
  for (int l = 0; l < n; l++)
    if (vals[l] == v) return l;
  return -1;
}

/* Fills lat->levels from t's codebook; false on a value outside it (a
 * broken generated table). */
static bool fill_levels(nc_iq_lattice *lat) {
  static const uint8_t iq2_vals[3] = {8, 25, 43};
  static const uint8_t iq1_vals[3] = {0xff, 0, 1};
  static const uint8_t iq3xxs_vals[8] = {4, 12, 20, 28, 36, 44, 52, 62};
  static const uint8_t iq3s_vals[8] = {1, 3, 5, 7, 9, 11, 13, 15};
  const uint8_t *vals = iq2_vals;
  int nvals = 3;
  for (int g = 0; g < lat->n_grid; g++) {
    uint64_t point = 0;
    switch (lat->type) {
    case NC_TYPE_IQ2_XXS: point = nc_iq2xxs_grid[g]; break;
    case NC_TYPE_IQ2_XS: point = nc_iq2xs_grid[g]; break;
    case NC_TYPE_IQ2_S: point = nc_iq2s_grid[g]; break;
    case NC_TYPE_IQ1_S:
    case NC_TYPE_IQ1_M:
      point = nc_iq1s_grid[g];
      vals = iq1_vals;
      break;
    case NC_TYPE_IQ3_XXS:
      point = nc_iq3xxs_grid[g];
      vals = iq3xxs_vals;
      nvals = 8;
      break;
    default:
      point = nc_iq3s_grid[g];
      vals = iq3s_vals;
      nvals = 8;
      break;
    }
    for (int j = 0; j < lat->dim; j++) {
      const int l = level_of(vals, nvals, (uint8_t)(point >> (8 * j)));
      if (l < 0) return false;
      lat->levels[g * lat->dim + j] = (uint8_t)l;
    }
  }
  return true;
}

/* The squared distances d[n_grid] from lattice point key to every grid
 * point, in coordinates 2 * level + 1. */
static void distances(const nc_iq_lattice *lat, int32_t key, int *d) {
  const int mask = (1 << lat->bits) - 1;
  int pos[8];
  for (int j = 0; j < lat->dim; j++)
    pos[j] = 2 * ((key >> (lat->bits * j)) & mask) + 1;
  for (int g = 0; g < lat->n_grid; g++) {
    const uint8_t *p = lat->levels + g * lat->dim;
    int s = 0;
    for (int j = 0; j < lat->dim; j++) {
      const int diff = 2 * p[j] + 1 - pos[j];
      s += diff * diff;
    }
    d[g] = s;
  }
}

/* The largest of the nwant smallest distinct values of d[n]. */
static int nth_distinct(const int *d, int n, int nwant) {
  int best[4];
  int have = 0;
  for (int g = 0; g < n; g++) {
    int k = 0;
    while (k < have && best[k] < d[g])
      k++;
    if (k < have && best[k] == d[g]) continue;
    if (k >= nwant) continue;
    if (have < nwant) have++;
    memmove(best + k + 1, best + k, sizeof(int) * (size_t)(have - 1 - k));
    best[k] = d[g];
  }
  return best[have - 1];
}

/* Appends key's neighbour list at lat->neighbours + *used (grown as
 * needed); false when memory runs out. */
static bool add_neighbours(nc_iq_lattice *lat, int32_t key, int nwant, int *d,
                           size_t *used, size_t *cap) {
  distances(lat, key, d);
  const int limit = nth_distinct(d, lat->n_grid, nwant);
  size_t count = 0;
  for (int g = 0; g < lat->n_grid; g++)
    count += d[g] <= limit;
  if (*used + count + 1 > *cap) {
    size_t ncap = *cap * 2;
    while (ncap < *used + count + 1)
      ncap *= 2;
    uint16_t *nb = realloc(lat->neighbours, ncap * sizeof *nb);
    if (!nb) return false;
    lat->neighbours = nb;
    *cap = ncap;
  }
  lat->map[key] = -(int32_t)(*used + 1);
  uint16_t *out = lat->neighbours + *used;
  *out++ = (uint16_t)count;
  /* by distance, then by index: one pass per distance up to limit */
  for (int v = 0; v <= limit; v += 4)
    for (int g = 0; g < lat->n_grid; g++)
      if (d[g] == v) *out++ = (uint16_t)g;
  *used += count + 1;
  return true;
}

/* Whether the quantizers can look key up: IQ2/IQ1 levels are 0..2 in 2
 * bits, so keys with a field of 3 never are (ggml lists their neighbours
 * too; here their map entry stays -1, the first list). */
static bool reachable(const nc_iq_lattice *lat, int32_t key) {
  if (lat->bits != 2) return true;
  for (int j = 0; j < lat->dim; j++)
    if (((key >> (2 * j)) & 3) == 3) return false;
  return true;
}

nc_code nc_iq_lattice_build(nc_type t, nc_iq_lattice **out, nc_error *err) {
  *out = NULL;
  if (!nc_iq_lattice_needed(t))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "type %s has no lattice search table (IQ1_S, IQ1_M, "
                   "IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S have)",
                   nc_type_name(t));
  nc_iq_lattice *lat = calloc(1, sizeof *lat);
  if (!lat) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  lat->type = t;
  const bool iq3 = t == NC_TYPE_IQ3_XXS || t == NC_TYPE_IQ3_S;
  const bool iq1 = t == NC_TYPE_IQ1_S || t == NC_TYPE_IQ1_M;
  lat->dim = iq3 ? 4 : 8;
  lat->bits = iq3 ? 3 : 2;
  lat->n_grid = t == NC_TYPE_IQ2_XXS || t == NC_TYPE_IQ3_XXS ? 256
                : t == NC_TYPE_IQ2_XS || t == NC_TYPE_IQ3_S  ? 512
                : t == NC_TYPE_IQ2_S                         ? 1024
                                                             : 2048;
  /* every key with levels up to 2 (IQ2, IQ1: ggml's 43692) or 7 (IQ3) */
  lat->n_keys = iq3 ? 4096 : 43692;
  const int nwant = iq1                         ? 3
                    : t == NC_TYPE_IQ2_S        ? 1
                    : iq3 && lat->n_grid == 512 ? 3
                                                : 2;
  size_t cap = 1u << 16, used = 0;
  lat->levels = malloc((size_t)lat->n_grid * (size_t)lat->dim);
  lat->map = malloc(sizeof(int32_t) * (size_t)lat->n_keys);
  lat->neighbours = malloc(cap * sizeof(uint16_t));
  int *d = malloc(sizeof(int) * (size_t)lat->n_grid);
  bool ok = lat->levels && lat->map && lat->neighbours && d;
  if (ok && !fill_levels(lat)) {
    free(d);
    nc_iq_lattice_free(lat);
    return nc_fail(err, NC_ERR_INTERNAL,
                   "the %s codebook holds a value outside its levels",
                   nc_type_name(t));
  }
  if (ok) {
    for (int32_t k = 0; k < lat->n_keys; k++)
      lat->map[k] = -1;
    for (int g = 0; g < lat->n_grid; g++) {
      int32_t key = 0;
      for (int j = 0; j < lat->dim; j++)
        key |= (int32_t)lat->levels[g * lat->dim + j] << (lat->bits * j);
      lat->map[key] = g;
    }
    for (int32_t k = 0; ok && k < lat->n_keys; k++)
      if (lat->map[k] < 0 && reachable(lat, k))
        ok = add_neighbours(lat, k, nwant, d, &used, &cap);
  }
  free(d);
  if (!ok) {
    nc_iq_lattice_free(lat);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory building the %s tables",
                   nc_type_name(t));
  }
  *out = lat;
  return NC_OK;
}

void nc_iq_lattice_free(nc_iq_lattice *lat) {
  if (!lat) return;
  free(lat->levels);
  free(lat->map);
  free(lat->neighbours);
  free(lat);
}

/* ggml's iq2/iq3_find_best_neighbour: the listed grid point of least
 * weighted squared error at scale (the first on ties); its levels to L. */
static void best_neighbour(const nc_iq_lattice *lat, const uint16_t *nb,
                           const float *xval, const float *w, float scale,
                           int8_t *L) {
  float best_d2 = FLT_MAX;
  int best = nb[1]; /* ggml aborts when no distance is below FLT_MAX */
  for (int j = 1; j <= nb[0]; j++) {
    const uint8_t *p = lat->levels + nb[j] * lat->dim;
    float d2 = 0;
    for (int i = 0; i < lat->dim; i++) {
      const float q = (float)(2 * p[i] + 1);
      const float diff = scale * q - xval[i];
      d2 += w[i] * diff * diff;
    }
    if (d2 < best_d2) {
      best_d2 = d2;
      best = nb[j];
    }
  }
  for (int i = 0; i < lat->dim; i++)
    L[i] = (int8_t)lat->levels[best * lat->dim + i];
}

bool nc_iq_lattice_snap(const nc_iq_lattice *lat, int nlev, const float *xval,
                        const float *wsq, float id, float scale, int8_t *L) {
  for (int i = 0; i < lat->dim; i++) {
    const int l = nc_nearest_int(0.5f * (id * xval[i] - 1));
    L[i] = (int8_t)(l < 0 ? 0 : l > nlev - 1 ? nlev - 1 : l);
  }
  const uint16_t *nb = NULL;
  if (nc_iq_lattice_find(lat, L, &nb) >= 0) return true;
  best_neighbour(lat, nb, xval, wsq, scale, L);
  return false;
}

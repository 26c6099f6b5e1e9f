/* iq_lattice: the search tables of the IQ1/IQ2/IQ3 quantizers (ggml's
 * iq2xs_init_impl / iq3xs_init_impl, built from the codebooks of
 * gguf/iq_grids.h): each grid point as its levels, a map from every point
 * of the full level lattice to its grid index, and for the lattice points
 * off the grid the list of grid points nearest to them, the points at the
 * closest few squared distances, as llama.cpp's quantizer searches them.
 *
 * One table per codebook, built on demand by whoever quantizes (the
 * quantize driver builds those its recipe needs before its threads start),
 * immutable afterwards and shared read-only by the threads, freed by its
 * owner: no state outside the object. Internal to src/quantize/. */
#ifndef NC_IQ_LATTICE_H
#define NC_IQ_LATTICE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "gguf/quant.h"

typedef struct nc_iq_lattice {
  nc_type type; /* the type it was built for */
  int dim;      /* coordinates per point: 8 (IQ2, IQ1) or 4 (IQ3) */
  int bits;     /* bits per level in a map key: 2 or 3 */
  int n_grid;
  /* n_grid * dim levels (0..2 or 0..7): coordinate value 2 * level + 1 */
  uint8_t *levels;
  /* key (level j at bits [bits * j, bits * (j + 1))) -> grid index >= 0, or
   * -(start + 1): neighbours[start] is the count, the indices follow (keys
   * with a 2-bit level of 3, never looked up, point at the first list) */
  int32_t *map;
  int32_t n_keys;
  uint16_t *neighbours;
} nc_iq_lattice;

/* Whether type t's quantizer searches a lattice (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S, IQ1_M). */
bool nc_iq_lattice_needed(nc_type t);

/* Builds the table of t's codebook (IQ1_S and IQ1_M share one); an error
 * when t searches none or memory runs out. */
nc_code nc_iq_lattice_build(nc_type t, nc_iq_lattice **out, nc_error *err);
void nc_iq_lattice_free(nc_iq_lattice *lat);

/* The grid index of levels L[0..dim), or -1 with *neighbours set to the
 * count-prefixed list of the grid points nearest to it. */
static inline int nc_iq_lattice_find(const nc_iq_lattice *lat, const int8_t *L,
                                     const uint16_t **neighbours) {
  int32_t key = 0;
  for (int j = 0; j < lat->dim; j++)
    key |= (int32_t)L[j] << (lat->bits * j);
  const int32_t g = lat->map[key];
  if (g >= 0) return g;
  *neighbours = lat->neighbours + (-g - 1);
  return -1;
}

/* Snaps dim values xval (non-negative) to the lattice at inverse scale id:
 * level nearest_int((id * x - 1) / 2) clamped to [0, nlev); when that point
 * is off the grid, the grid point nearest to xval at scale (by squared
 * difference weighted wsq) instead, as ggml's quantizers search. Writes
 * the levels to L; returns whether the first point was on the grid. */
bool nc_iq_lattice_snap(const nc_iq_lattice *lat, int nlev, const float *xval,
                        const float *wsq, float id, float scale, int8_t *L);

#endif

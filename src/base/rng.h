/* rng: randomness that belongs to a request. A counter-based generator
 * (Philox4x32-10, Salmon et al. 2011, as in Random123) keyed on the
 * request's seed and addressed by (stream, step, draw), so a draw depends on
 * nothing but those four numbers: not on the batch, the thread, or what was
 * drawn before. stream tells completions of one request apart (n > 1),
 * step is the output position, draw numbers the draws within one step. */
#ifndef NC_RNG_H
#define NC_RNG_H

#include <stdint.h>

/* One Philox4x32-10 block: out = bijection_key(ctr). */
void nc_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                      uint32_t out[4]);

/* Uniform double in [0, 1) with 53 random bits. The Philox key is the seed;
 * the counter is (step low 32 bits, step high 32 bits, stream low 32 bits,
 * stream high 32 bits XOR draw * 0x9E3779B9) so distinct (stream, step)
 * pairs never share a counter while draw < 2^32 and streams stay below
 * 2^32; draw 0 is what the sampler uses. */
double nc_rng_uniform(uint64_t seed, uint64_t stream, uint64_t step,
                      uint32_t draw);

/* A fresh seed from the OS (getrandom(2)); falls back to a mix of the clock
 * and the address space when getrandom is unavailable. Never fails. */
uint64_t nc_seed_from_os(void);

/* splitmix64 finaliser: a strong 64-bit mix, for deriving keys. */
uint64_t nc_mix64(uint64_t x);

#endif

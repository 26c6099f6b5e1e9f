#include "rng.h"

#include <stddef.h>
#include <sys/random.h>
#include <time.h>

enum {
  PHILOX_M0 = 0xD2511F53u,
  PHILOX_M1 = 0xCD9E8D57u,
  PHILOX_W0 = 0x9E3779B9u,
  PHILOX_W1 = 0xBB67AE85u,
};

void nc_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                      uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = (uint32_t)p0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

double nc_rng_uniform(uint64_t seed, uint64_t stream, uint64_t step,
                      uint32_t draw) {
  const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  const uint32_t ctr[4] = {(uint32_t)step, (uint32_t)(step >> 32),
                           (uint32_t)stream,
                           (uint32_t)(stream >> 32) ^ (draw * PHILOX_W0)};
  uint32_t out[4];
  nc_philox4x32_10(ctr, key, out);
  uint64_t bits = ((uint64_t)out[0] << 32 | out[1]) >> 11; /* 53 bits */
  return (double)bits * (1.0 / 9007199254740992.0);        /* / 2^53 */
}

uint64_t nc_mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t nc_seed_from_os(void) {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) == (ssize_t)sizeof seed) return seed;
  /* No entropy source: still distinct per call and per process. */
  struct timespec ts = {0};
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t local = 0;
  return nc_mix64((uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
                  (uint64_t)(uintptr_t)&local);
}

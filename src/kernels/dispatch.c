/* dispatch: picks a kernel table from the CPU's features (cpuid, with the
 * operating system's register-state support, via __builtin_cpu_supports). */
#include <cpuid.h>
#include <stdlib.h>
#include <string.h>

#include "tables.h"

/* F16C from cpuid leaf 1 (clang's __builtin_cpu_supports lacks "f16c");
 * the AVX register state it needs is covered by the avx2 check. */
static bool cpu_has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

static bool cpu_has_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         cpu_has_f16c();
}

static bool cpu_has_avx512(void) {
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("bmi2");
}

const nc_kernels *nc_kernels_by_name(const char *name) {
  if (!name) return NULL;
  if (strcmp(name, "ref") == 0) return nc_kernels_ref();
  if (strcmp(name, "avx2") == 0)
    return cpu_has_avx2() ? nc_kernels_avx2_table() : NULL;
  if (strcmp(name, "avx512") == 0)
    return cpu_has_avx512() ? nc_kernels_avx512_table() : NULL;
  return NULL;
}

const nc_kernels *nc_kernels_best(void) {
  /* $NUCLEUS_KERNELS names a table to use instead (when this CPU has it),
   * for comparing tables end to end. */
  const nc_kernels *forced = nc_kernels_by_name(getenv("NUCLEUS_KERNELS"));
  if (forced) return forced;
  /* Fastest first. Both SIMD tables add in llama.cpp's x86 order (the
   * avx512 table only adds VNNI matmuls bit-identical to the avx2 dots), so
   * the choice changes speed, never logits. */
  static const char *const order[] = {"avx512", "avx2"};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    const nc_kernels *k = nc_kernels_by_name(order[i]);
    if (k) return k;
  }
  return nc_kernels_ref();
}

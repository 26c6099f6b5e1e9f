/* dispatch: picks a kernel table from the CPU's features (cpuid, with the
 * operating system's register-state support, via __builtin_cpu_supports). */
#include <cpuid.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* AMX-TILE and AMX-INT8 (cpuid leaf 7, edx bits 24 and 25), with the
 * tile state enabled by the operating system (XCR0 bits 17 and 18) and, on
 * Linux, granted to this process: the tile data state is off by default
 * and a process must ask for it (arch_prctl ARCH_REQ_XCOMP_PERM) before its
 * first tile instruction, else that instruction faults. The grant is for
 * the whole process and asking again is harmless. */
static bool cpu_has_amx(void) {
  enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
  unsigned a, b, c, d;
  if (!cpu_has_avx512() || !__get_cpuid_count(7, 0, &a, &b, &c, &d) ||
      !(d & (1u << 24)) || !(d & (1u << 25)))
    return false;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
  return false;
#endif
}

const nc_kernels *nc_kernels_by_name(const char *name) {
  if (!name) return NULL;
  if (strcmp(name, "ref") == 0) return nc_kernels_ref();
  if (strcmp(name, "avx2") == 0)
    return cpu_has_avx2() ? nc_kernels_avx2_table() : NULL;
  if (strcmp(name, "avx512") == 0)
    return cpu_has_avx512() ? nc_kernels_avx512_table() : NULL;
  if (strcmp(name, "amx") == 0)
    return cpu_has_amx() ? nc_kernels_amx_table() : NULL;
  return NULL;
}

const nc_kernels *nc_kernels_best(bool no_repack) {
  /* $NUCLEUS_KERNELS names a table to use instead (when this CPU has it),
   * for comparing tables end to end. */
  const nc_kernels *forced = nc_kernels_by_name(getenv("NUCLEUS_KERNELS"));
  if (forced) return forced;
  /* Fastest first. Each table adds in the order of one llama.cpp build on
   * this CPU, so its logits are that build's to the last bits: amx follows
   * llama.cpp's default on AMX CPUs (weights repacked for the tile unit,
   * Q4_0/Q4_1/Q8_0 per 32-block, the K-quants per superblock); avx512 (VNNI
   * matmuls bit-identical
   * to the avx2 dots) and avx2 follow llama.cpp with --no-repack (and its
   * default on CPUs without AMX). The two orders differ in the last bits of
   * a dot, which grow through the layers to top-1 ~98%, so a caller
   * comparing against a --no-repack run asks for no_repack. */
  static const char *const order[] = {"amx", "avx512", "avx2"};
  for (size_t i = no_repack ? 1 : 0; i < sizeof order / sizeof order[0]; i++) {
    const nc_kernels *k = nc_kernels_by_name(order[i]);
    if (k) return k;
  }
  return nc_kernels_ref();
}

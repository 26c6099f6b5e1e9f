/* tables.h: the SIMD kernel tables, for dispatch.c and the tests. Each may
 * be called only when the CPU has its instructions (see nc_kernels_by_name).
 * Internal to src/kernels/. */
#ifndef NC_KERNELS_TABLES_H
#define NC_KERNELS_TABLES_H

#include "kernels.h"

const nc_kernels *nc_kernels_avx2_table(void);   /* AVX2, FMA, F16C */
const nc_kernels *nc_kernels_avx512_table(void); /* + AVX-512 F/BW/VL/VNNI */

#endif

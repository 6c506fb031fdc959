// ell_block.h: the block of rows shared by the CPU ELL, HLL and HYB kernels.
#ifndef MSP_CPU_ELL_BLOCK_H
#define MSP_CPU_ELL_BLOCK_H

#include "dispatch.h"

// Partial sums of n consecutive rows of a column-major slab whose slot k of row r is value
// v0 + k * ld + r of va, with its column at col[k * ld + r]:
// t[r] = sum over k ascending of va[v0 + k * ld + r] * x[col[k * ld + r]]. One thread sums each
// row in this fixed order, so the bits do not depend on the thread count; padding slots add
// 0 * x[a valid column]. PA and PX are constants at every call (dispatch.h).
MSP__CPU_INLINE void msp__cpu_ell_rows(msp_precision PA, msp_precision PX, const msp_acc *va,
                                       int64_t v0, const int32_t *col, int64_t ld, int64_t width,
                                       int64_t n, const msp_acc *xa, double *t) {
  for (int64_t r = 0; r < n; r++)
    t[r] = 0.0;
  for (int64_t k = 0; k < width; k++) {
    const int32_t *c = col + k * ld;
    const int64_t vk = v0 + k * ld;
    for (int64_t r = 0; r < n; r++)
      t[r] += msp_acc_load_p(PA, va, vk + r) * msp_acc_load_p(PX, xa, c[r]);
  }
}

#endif

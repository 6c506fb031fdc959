// ell_block.h: the block of rows shared by the CPU ELL, HLL and HYB kernels.
#ifndef MSP_CPU_ELL_BLOCK_H
#define MSP_CPU_ELL_BLOCK_H

#include <stdint.h>

// Partial sums of n consecutive rows of a column-major slab (slot k of row r at k * ld + r):
// t[r] = sum over k ascending of val[k * ld + r] * x[col[k * ld + r]]. One thread sums each row
// in this fixed order, so the bits do not depend on the thread count; padding slots add
// 0 * x[a valid column].
static inline void msp__cpu_ell_rows(const int32_t *col, const double *val, int64_t ld,
                                     int64_t width, int64_t n, const double *x, double *t) {
  for (int64_t r = 0; r < n; r++)
    t[r] = 0.0;
  for (int64_t k = 0; k < width; k++) {
    const int32_t *c = col + k * ld;
    const double *v = val + k * ld;
    for (int64_t r = 0; r < n; r++)
      t[r] += v[r] * x[c[r]];
  }
}

// y[r] = alpha t[r] + beta y[r] for r < n; y is not read when beta == 0.
static inline void msp__cpu_store_rows(double *y, const double *t, int64_t n, double alpha,
                                       double beta) {
  for (int64_t r = 0; r < n; r++)
    y[r] = beta == 0.0 ? alpha * t[r] : alpha * t[r] + beta * y[r];
}

#endif

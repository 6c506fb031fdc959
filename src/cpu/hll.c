// hll.c: CPU hacked-ELL SpMV (hacks over OpenMP threads, column-major slots inside a hack).
#include "internal.h"

#include "ell_block.h"

// Rows summed together inside a hack (hack sizes are multiples of 32).
#define HLL_BLOCK 32

// Each row is summed by one thread over its hack's slots in ascending order, so the bits do
// not depend on the thread count. Padding slots add 0 * x[a valid column].
msp_status msp__cpu_hll_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const msp__hll *H = (const msp__hll *)A->fmt;
  const double *xv = x->h_data;
  double *yv = y->h_data;
  int64_t rows = A->rows, hack = H->hack, nhacks = H->nhacks;
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < nhacks; h++) {
    int64_t width = (H->off[h + 1] - H->off[h]) / hack;
    for (int64_t r0 = 0; r0 < hack && h * hack + r0 < rows; r0 += HLL_BLOCK) {
      int64_t i0 = h * hack + r0;
      int64_t n = rows - i0 < HLL_BLOCK ? rows - i0 : HLL_BLOCK;
      double t[HLL_BLOCK];
      msp__cpu_ell_rows(H->col + H->off[h] + r0, H->val + H->off[h] + r0, hack, width, n, xv, t);
      msp__cpu_store_rows(yv + i0, t, n, alpha, beta);
    }
  }
  return MSP_SUCCESS;
}

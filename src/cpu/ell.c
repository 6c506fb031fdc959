// ell.c: CPU ELL SpMV (blocks of rows over OpenMP threads, slots in column-major order).
#include "internal.h"

#include "ell_block.h"

// Rows per block: the block's partial sums stay in registers/L1 while the slots stream by.
#define ELL_BLOCK 64

// y_i = alpha * sum_k val[k * rows + i] * x[col[k * rows + i]] (+ beta y_i), k ascending: one
// thread sums each row in a fixed order, so the bits do not depend on the thread count.
// Padding slots add 0 * x[a valid column].
msp_status msp__cpu_ell_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const msp__ell *e = (const msp__ell *)A->fmt;
  const int32_t *col = e->col;
  const double *val = e->val, *xv = x->h_data;
  double *yv = y->h_data;
  int64_t rows = A->rows, width = e->width, nblocks = (rows + ELL_BLOCK - 1) / ELL_BLOCK;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t r0 = b * ELL_BLOCK, n = rows - r0 < ELL_BLOCK ? rows - r0 : ELL_BLOCK;
    double t[ELL_BLOCK];
    msp__cpu_ell_rows(col + r0, val + r0, rows, width, n, xv, t);
    msp__cpu_store_rows(yv + r0, t, n, alpha, beta);
  }
  return MSP_SUCCESS;
}

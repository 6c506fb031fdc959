// dia.c: CPU DIA SpMV (blocks of rows over OpenMP threads, diagonals in ascending order).
#include "internal.h"

// Rows per block: partial sums of a block stay in L1 while every diagonal passes over it.
#define DIA_BLOCK 256

// y_i = alpha * sum_d val[d * rows + i] * x[i + off[d]] (+ beta y_i), d ascending, over the
// diagonals that meet row i inside the matrix. No column indices are read (PSBLAS Alg. 2).
// One thread sums each row in a fixed order: the bits do not depend on the thread count.
msp_status msp__cpu_dia_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const msp__dia *D = (const msp__dia *)A->fmt;
  const double *xv = x->h_data;
  double *yv = y->h_data;
  int64_t rows = A->rows, cols = A->cols, nblocks = (rows + DIA_BLOCK - 1) / DIA_BLOCK;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t i0 = b * DIA_BLOCK, i1 = i0 + DIA_BLOCK < rows ? i0 + DIA_BLOCK : rows;
    double t[DIA_BLOCK];
    for (int64_t i = i0; i < i1; i++)
      t[i - i0] = 0.0;
    for (int64_t d = 0; d < D->ndiag; d++) {
      int64_t o = D->offsets[d];
      // Rows where column i + o lies in 0..cols-1.
      int64_t lo = -o > i0 ? -o : i0, hi = cols - o < i1 ? cols - o : i1;
      const double *v = D->val + d * rows;
      for (int64_t i = lo; i < hi; i++)
        t[i - i0] += v[i] * xv[i + o];
    }
    for (int64_t i = i0; i < i1; i++)
      yv[i] = beta == 0.0 ? alpha * t[i - i0] : alpha * t[i - i0] + beta * yv[i];
  }
  return MSP_SUCCESS;
}

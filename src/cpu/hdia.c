// hdia.c: CPU hacked-DIA SpMV (hacks over OpenMP threads, each hack's diagonals ascending).
#include "internal.h"

// Rows summed together inside a hack (hack sizes are multiples of 32).
#define HDIA_BLOCK 64

// Each row is summed by one thread over its hack's diagonals in ascending order, so the bits
// do not depend on the thread count. No column indices are read.
msp_status msp__cpu_hdia_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                              double beta, msp_vector y) {
  const msp__hdia *H = (const msp__hdia *)A->fmt;
  const double *xv = x->h_data;
  double *yv = y->h_data;
  int64_t rows = A->rows, cols = A->cols, hack = H->hack, nhacks = H->nhacks;
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < nhacks; h++) {
    const int64_t *off = H->offsets + H->doff[h];
    int64_t nd = H->doff[h + 1] - H->doff[h];
    for (int64_t r0 = 0; r0 < hack && h * hack + r0 < rows; r0 += HDIA_BLOCK) {
      int64_t i0 = h * hack + r0;
      int64_t i1 = i0 + HDIA_BLOCK < rows ? i0 + HDIA_BLOCK : rows;
      if (i1 > h * hack + hack) i1 = h * hack + hack;
      double t[HDIA_BLOCK];
      for (int64_t i = i0; i < i1; i++)
        t[i - i0] = 0.0;
      for (int64_t d = 0; d < nd; d++) {
        int64_t o = off[d];
        int64_t lo = -o > i0 ? -o : i0, hi = cols - o < i1 ? cols - o : i1;
        // Row i's value on the hack's diagonal d: val[voff[h] + d * hack + (i - h * hack)].
        const double *v = H->val + H->voff[h] + d * hack;
        for (int64_t i = lo; i < hi; i++)
          t[i - i0] += v[i - h * hack] * xv[i + o];
      }
      for (int64_t i = i0; i < i1; i++)
        yv[i] = beta == 0.0 ? alpha * t[i - i0] : alpha * t[i - i0] + beta * yv[i];
    }
  }
  return MSP_SUCCESS;
}

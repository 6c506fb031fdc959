// hyb.c: CPU HYB SpMV: per block of rows, the ELL part then the row's COO entries (no atomics).
#include "internal.h"

#include "ell_block.h"

#define HYB_BLOCK 64

// First COO entry whose row is >= r (the COO part is sorted by row).
static int64_t coo_lower_bound(const int32_t *row, int64_t n, int64_t r) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (row[mid] < r)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Each row is summed by one thread: its K ELL slots in order, then its COO entries in order
// (a block finds its COO range by binary search, so no thread writes another's rows). The
// bits do not depend on the thread count.
msp_status msp__cpu_hyb_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const msp__hyb *H = (const msp__hyb *)A->fmt;
  const int32_t *col = H->ell.col, *crow = H->coo.row, *ccol = H->coo.col;
  const double *val = H->ell.val, *cval = H->coo.val, *xv = x->h_data;
  double *yv = y->h_data;
  int64_t rows = A->rows, width = H->ell.width, cn = H->coo_nnz;
  int64_t nblocks = (rows + HYB_BLOCK - 1) / HYB_BLOCK;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t r0 = b * HYB_BLOCK, n = rows - r0 < HYB_BLOCK ? rows - r0 : HYB_BLOCK;
    double t[HYB_BLOCK];
    msp__cpu_ell_rows(col + r0, val + r0, rows, width, n, xv, t);
    for (int64_t p = coo_lower_bound(crow, cn, r0); p < cn && crow[p] < r0 + n; p++)
      t[crow[p] - r0] += cval[p] * xv[ccol[p]];
    msp__cpu_store_rows(yv + r0, t, n, alpha, beta);
  }
  return MSP_SUCCESS;
}

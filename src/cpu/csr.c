// csr.c: CPU CSR SpMV (one row per iteration, rows split statically over OpenMP threads).
#include "internal.h"

// Each y_i is summed by one thread in column order, so the bits do not depend on the thread
// count. The GPU kernel choice (scalar / vector / merge) does not change the CPU algorithm.
msp_status msp__cpu_csr_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const int64_t *rp = A->rowptr;
  const int32_t *ci = A->colind;
  const double *v = A->val, *xv = x->h_data;
  double *yv = y->h_data;
  int64_t rows = A->rows;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; i++) {
    double t = 0.0;
    for (int64_t k = rp[i]; k < rp[i + 1]; k++)
      t += v[k] * xv[ci[k]];
    yv[i] = beta == 0.0 ? alpha * t : alpha * t + beta * yv[i];
  }
  return MSP_SUCCESS;
}

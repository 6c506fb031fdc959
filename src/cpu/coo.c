// coo.c: CPU COO SpMV over row-sorted triples, split at row boundaries into fixed chunks.
#include "internal.h"

// The triples are cut into MSP__COO_CHUNKS pieces whose boundaries are moved forward to the
// next row start, so each row belongs to exactly one piece and is summed in triple order by
// one thread: same bits for any thread count.
#define MSP__COO_CHUNKS 256

static int64_t row_start_at_or_after(const int32_t *row, int64_t nnz, int64_t k) {
  if (k <= 0) return 0;
  if (k >= nnz) return nnz;
  while (k < nnz && row[k] == row[k - 1])
    k++;
  return k;
}

msp_status msp__cpu_coo_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const msp__coo *c = (const msp__coo *)A->fmt;
  const double *xv = x->h_data;
  double *yv = y->h_data;
  int64_t rows = A->rows, nnz = A->nnz;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; i++)
    yv[i] = beta == 0.0 ? 0.0 : beta * yv[i];
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < MSP__COO_CHUNKS; p++) {
    int64_t b = row_start_at_or_after(c->row, nnz, nnz * p / MSP__COO_CHUNKS);
    int64_t e = row_start_at_or_after(c->row, nnz, nnz * (p + 1) / MSP__COO_CHUNKS);
    int64_t k = b;
    while (k < e) {
      int32_t r = c->row[k];
      double t = 0.0;
      for (; k < e && c->row[k] == r; k++)
        t += c->val[k] * xv[c->col[k]];
      yv[r] += alpha * t;
    }
  }
  return MSP_SUCCESS;
}

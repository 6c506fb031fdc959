// csr_prec.c: CPU CSR SpMV with values stored in any precision, read through the accessors.
#include "internal.h"
#include "precision.h"

// One row per iteration, columns in order, accumulation in fp64 (the arithmetic precision):
// only the loads of the values change with the storage, so the bits of y do not depend on the
// thread count. `prec` is a constant at each call below, so the accessor's switch folds away.
static inline void csr_prec_rows(msp_precision prec, const msp_acc *acc, const int64_t *rp,
                                 const int32_t *ci, const double *xv, double alpha, double beta,
                                 double *yv, int64_t rows) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; i++) {
    double t = 0.0;
    for (int64_t k = rp[i]; k < rp[i + 1]; k++)
      t += msp_acc_load_p(prec, acc, k) * xv[ci[k]];
    yv[i] = beta == 0.0 ? alpha * t : alpha * t + beta * yv[i];
  }
}

msp_status msp__cpu_csr_prec_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                                  double beta, msp_vector y) {
  if (A->pval == NULL) {
    return msp__error(MSP_ERR_INTERNAL, "msp_spmv: CSR matrix with %s values has no encoded values",
                      msp_precision_name(A->precision));
  }
  msp_acc acc = msp__prec_view(A->pval, A->opts.cpms_segments);
  switch (A->precision) {
#define MSP_CSR_PREC_CASE_(name, tag, bytes)                                                       \
  case MSP_PRECISION_##name:                                                                       \
    csr_prec_rows(MSP_PRECISION_##name, &acc, A->rowptr, A->colind, x->h_data, alpha, beta,        \
                  y->h_data, A->rows);                                                             \
    break;
    MSP_PRECISION_LIST(MSP_CSR_PREC_CASE_)
#undef MSP_CSR_PREC_CASE_
  default:
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "msp_spmv: unknown precision %d",
                      (int)A->precision);
  }
  return MSP_SUCCESS;
}

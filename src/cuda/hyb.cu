// hyb.cu: HYB (ELL + COO) on CUDA: upload and SpMV as two launches, without atomics on y.
//
// The ELL part (the first K entries of each row) runs first and writes every row:
// y_i = alpha * ell_i + beta * y_i. The COO part (the rest, sorted by row) then runs the
// segmented reduction of coo.cu with beta = 1, so each row with a tail gets
// y_i = alpha * coo_i + y_i written by exactly one thread (the lane where its run ends, or the
// fix-up of a row straddling tiles), in an order fixed by the data: deterministic, and rows
// without a tail are left as the ELL pass wrote them.
//
// Device slots of a HYB matrix:
//   0 .. 2  the ELL part, as in ell.cu (col, val, rowlen when used)
//   3 .. 8  the COO part, as in coo.cu (row, col, val, head, tail, fix)
// Scalars: i64[0 .. 2] the ELL part's (width, ld, rowlen used), i64[3 .. 5] the COO part's
// (tiles, short fix-ups, long fix-ups).
#include "formats.cuh"

#define HYB_ELL_SLOT 0
#define HYB_ELL_Q 0
#define HYB_COO_SLOT 3
#define HYB_COO_Q 3

extern "C" msp_status msp__cuda_hyb_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  MSP_TRY(msp__fmt_check(A, "hyb"));
  {
    const msp__hyb *H = (const msp__hyb *)A->fmt;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    // On failure backend.cu frees what A->dev holds.
    MSP_TRY(msp__cuda_ell_part_upload(ctx, m, HYB_ELL_SLOT, HYB_ELL_Q, A->rows, &H->ell,
                                      A->nnz - H->coo_nnz));
    MSP_TRY(msp__cuda_coo_part_upload(ctx, m, HYB_COO_SLOT, HYB_COO_Q, H->coo_nnz, H->coo.row,
                                      H->coo.col, H->coo.val));
  }
exit:
  return st;
}

extern "C" msp_status msp__cuda_hyb_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  cudaStream_t s = msp__cuda(ctx)->stream;
  MSP_TRY(msp__cuda_ell_part_spmv(s, m, HYB_ELL_SLOT, HYB_ELL_Q, A->rows, alpha, x->d_data, beta,
                                  y->d_data));
  // Same stream: the COO pass sees the ELL pass's y.
  MSP_TRY(msp__cuda_coo_part_spmv(s, m, HYB_COO_SLOT, HYB_COO_Q, alpha, x->d_data, 1.0, y->d_data));
exit:
  return st;
}

// hyb.cu: HYB (ELL + COO) on CUDA: upload and SpMV as two launches, without atomics on y.
//
// The ELL part (the first K entries of each row) runs first and writes every row without a COO
// tail: y_i = alpha * ell_i + beta * y_i. A row with a tail (its bit set in a mask of one bit per
// row, made at upload) gets its partial alpha * ell_i + beta * y_i in an fp64 array `part`
// instead. The COO part (the rest, sorted by row) then runs the segmented reduction of coo.cu, so
// each row with a tail gets y_i = alpha * coo_i + part_i, written by exactly one thread (the lane
// where its run ends, in the tile where it ends), in an order fixed by the data:
// deterministic, rounded into y's precision once from the whole row (an overflow counted once),
// and in f64 the same bits as adding the tail to the ELL pass's y. Both parts are the ELL and
// COO kernels, one template each over the loaders of the values and of x.
//
// One value array for both parts, as A->pval holds it in every precision (the ELL part's stride *
// K values, then the COO part's): the f64 upload joins the two host arrays the same way, so the
// kernels have one addressing (the COO part's triple k is value stride * K + k). A fixed-point y
// goes through msp__cuda_spmv_fixed_y: the COO part finishes rows one at a time (coo.cu).
//
// Device slots of a HYB matrix:
//   0 .. 1  the ELL part, as in ell.cu (col, rowlen when used)
//   2 .. 6  the COO part, as in coo.cu (row, col, head and pre, tail, look-back flags)
//   7       the values [stride * K + coo_nnz] in the matrix's precision
//   8       fixed point: the scales, f64 [ceil((stride * K + coo_nnz) / 256)]
//   9       uint32 [ceil(rows / 32)]  bit i: row i has a COO tail
//   10      f64 [rows]                scratch: the ELL partial of the rows with a tail
// Scalars: i64[0 .. 2] the ELL part's (width, rowlen used, stride), i64[3 .. 7] the COO part's
// (tiles, absorbed rows, look-back rows, nnz, warps per block).
#include "formats.cuh"

enum {
  HYB_ELL_SLOT = 0,
  HYB_COO_SLOT = 2,
  HYB_VAL_SLOT = 7,
  HYB_SCALES_SLOT,
  HYB_TAIL_SLOT,
  HYB_PART_SLOT
};
enum { HYB_ELL_Q = 0, HYB_COO_Q = 3 }; // the ELL part's 3 scalars, then the COO part's 5

extern "C" msp_status msp__cuda_hyb_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  uint32_t *mask = NULL;
  MSP_TRY(msp__fmt_check(A, "hyb"));
  {
    const msp__hyb *H = (const msp__hyb *)A->fmt;
    const int64_t words = (A->rows + 31) / 32;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    // On failure backend.cu frees what A->dev holds.
    MSP_TRY(msp__cuda_ell_part_upload(ctx, m, HYB_ELL_SLOT, HYB_ELL_Q, A->rows, &H->ell,
                                      A->nnz - H->coo_nnz));
    MSP_TRY(msp__cuda_coo_part_upload(ctx, m, HYB_COO_SLOT, HYB_COO_Q, H->coo_nnz, H->coo.row,
                                      H->coo.col));
    MSP_TRY(msp__fmt_put_values(ctx, m, A, HYB_VAL_SLOT, HYB_SCALES_SLOT, H->ell.val,
                                H->ell.stride * H->ell.width, H->coo.val, H->coo_nnz));
    if (H->coo_nnz > 0) {
      MSP_TRY(MSP_ALLOC_ZERO(mask, words, "HYB tail mask"));
      for (int64_t k = 0; k < H->coo_nnz; k++)
        mask[H->coo.row[k] >> 5] |= 1u << (H->coo.row[k] & 31);
      // Pageable source: staged before the put returns.
      MSP_TRY(msp__cuda_matrix_put(ctx, m, HYB_TAIL_SLOT, mask, (size_t)words * sizeof(uint32_t)));
      MSP_TRY(msp__cuda_matrix_put(ctx, m, HYB_PART_SLOT, NULL, (size_t)A->rows * sizeof(double)));
    }
  }
exit:
  msp__free(mask);
  return st;
}

extern "C" msp_status msp__cuda_hyb_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  if (msp_prec_is_fixed(y->prec))
    return msp__cuda_spmv_fixed_y(ctx, alpha, A, x, beta, y, msp__cuda_hyb_spmv);
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const msp_acc va = msp__fmt_values(A, m, HYB_VAL_SLOT, HYB_SCALES_SLOT);
  const msp_acc xa = msp__vector_acc(x, 1);
  const ystore ys = msp__vector_ystore(y);
  const uint32_t *tail = (const uint32_t *)m->d[HYB_TAIL_SLOT]; // NULL: no COO part
  double *part = (double *)m->d[HYB_PART_SLOT];
  MSP_TRY(msp__cuda_ell_part_spmv(s, m, HYB_ELL_SLOT, HYB_ELL_Q, A->rows, va, xa, ys, alpha, beta,
                                  tail, part));
  // Same stream: the COO pass sees the ELL pass's partials.
  if (tail)
    MSP_TRY(msp__cuda_coo_part_spmv(s, m, HYB_COO_SLOT, HYB_COO_Q, va,
                                    ((const msp__hyb *)A->fmt)->ell.stride *
                                        ((const msp__hyb *)A->fmt)->ell.width,
                                    xa, ys, alpha, beta, part));
exit:
  return st;
}

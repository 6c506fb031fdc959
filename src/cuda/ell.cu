// ell.cu: ELL on CUDA: upload and SpMV, one thread per row over column-major slots (HYB's too).
//
// Slot k of row i sits at k * ld + i, so a warp's 32 rows read 32 consecutive values and columns
// per slot (coalesced). The device leading dimension ld is rows rounded up to 32, which puts every
// warp's slot on a 256-byte boundary (the host layout uses ld = rows). When the padding is large
// (more than two padded slots per row on average, msp__fmt_use_rowlen) the kernel also reads each
// row's length and stops there: lanes past their row's end issue no loads, so padding costs
// traffic only where a whole sector's rows are still running.
//
// Device slots of an ELL matrix (the ELL part of HYB uses the same three):
//   0 col    int32 [width * ld]  column indices (padding: the row's last column, as on the host)
//   1 val    f64   [width * ld]  values (padding 0)
//   2 rowlen int32 [rows]        entries of each row; present only when the kernel reads it
// Scalars: i64[0] width, i64[1] ld, i64[2] whether rowlen is used.
#include "formats.cuh"

enum { ELL_COL = 0, ELL_VAL, ELL_ROWLEN };
enum { ELL_Q_WIDTH = 0, ELL_Q_LD, ELL_Q_ROWLEN };

template <typename V, bool ROWLEN, int BLOCK>
__global__ void __launch_bounds__(BLOCK, MSP__FMT_MIN_BLOCKS)
    ell_kernel(int64_t rows, int64_t width, int64_t ld, const int32_t *__restrict__ col,
               const V *__restrict__ val, const int32_t *__restrict__ rowlen,
               const double *__restrict__ x, double alpha, double beta, double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i >= rows) return;
  const int64_t len = ROWLEN ? (int64_t)msp__ld(rowlen + i) : width;
  const double sum = msp__ell_row_sum<V>(col + i, val + i, ld, len, x);
  msp__y_update(y, i, alpha, sum, beta);
}

msp_status msp__cuda_ell_part_upload(msp_context ctx, msp__cuda_matrix *m, int s0, int q0,
                                     int64_t rows, const msp__ell *e, int64_t stored_nnz) {
  msp_status st = MSP_SUCCESS;
  const int64_t width = e->width, ld = msp__fmt_round_up(rows, 32);
  const int use = width > 0 && msp__fmt_use_rowlen(rows, rows * width, stored_nnz);
  m->i64[q0 + ELL_Q_WIDTH] = width;
  m->i64[q0 + ELL_Q_LD] = ld;
  m->i64[q0 + ELL_Q_ROWLEN] = use;
  MSP_TRY(msp__fmt_put_2d(ctx, m, s0 + ELL_COL, e->col, sizeof(int32_t), rows, width, ld));
  MSP_TRY(msp__fmt_put_2d(ctx, m, s0 + ELL_VAL, e->val, sizeof(double), rows, width, ld));
  if (use) {
    if (!e->rowlen) {
      st = msp__error(MSP_ERR_INTERNAL, "CUDA ELL upload: the host row lengths are missing");
      goto exit;
    }
    MSP_TRY(
        msp__cuda_matrix_put(ctx, m, s0 + ELL_ROWLEN, e->rowlen, (size_t)rows * sizeof(int32_t)));
  }
exit:
  return st;
}

template <typename V, bool ROWLEN>
static msp_status ell_launch(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                             int64_t rows, double alpha, const double *x, double beta, double *y) {
  msp_status st = MSP_SUCCESS;
  if (rows == 0) return MSP_SUCCESS;
  ell_kernel<V, ROWLEN, MSP__FMT_BLOCK>
      <<<msp__cuda_blocks(rows, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
          rows, m->i64[q0 + ELL_Q_WIDTH], m->i64[q0 + ELL_Q_LD],
          (const int32_t *)m->d[s0 + ELL_COL], (const V *)m->d[s0 + ELL_VAL],
          (const int32_t *)m->d[s0 + ELL_ROWLEN], x, alpha, beta, y);
  MSP_CUDA_CHECK_LAUNCH("ell_kernel");
exit:
  return st;
}

msp_status msp__cuda_ell_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   int64_t rows, double alpha, const double *x, double beta,
                                   double *y) {
  // Values are fp64 (msp__fmt_check refuses the rest at upload).
  if (m->i64[q0 + ELL_Q_ROWLEN])
    return ell_launch<double, true>(s, m, s0, q0, rows, alpha, x, beta, y);
  return ell_launch<double, false>(s, m, s0, q0, rows, alpha, x, beta, y);
}

extern "C" msp_status msp__cuda_ell_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  MSP_TRY(msp__fmt_check(A, "ell"));
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  // On failure backend.cu frees what A->dev holds.
  MSP_TRY(msp__cuda_ell_part_upload(ctx, m, 0, 0, A->rows, (const msp__ell *)A->fmt, A->nnz));
exit:
  return st;
}

extern "C" msp_status msp__cuda_ell_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  return msp__cuda_ell_part_spmv(msp__cuda(ctx)->stream, (const msp__cuda_matrix *)A->dev, 0, 0,
                                 A->rows, alpha, x->d_data, beta, y->d_data);
}

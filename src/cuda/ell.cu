// ell.cu: ELL on CUDA: upload and SpMV, one thread per row over column-major slots (HYB's too).
//
// Slot k of row i sits at k * stride + i (the host layout, stride = msp__col_stride(rows), so the
// value array is the host array or A->pval as it is, in every precision), and a warp's 32 rows
// read 32 consecutive values and columns per slot (coalesced; aligned to the warp when the stride
// is a multiple of 32, otherwise a warp's values may touch one more sector, shared with its
// neighbour in L2). With a stride of whole scale blocks and CPMS groups (internal.h), fixed-point
// and CPMS values are read through the aligned cursor (formats.cuh). When the padding is
// large (more than two padded slots per row on average, msp__fmt_use_rowlen) the kernel also
// reads each row's length and stops there: lanes past their row's end issue no loads, so padding
// costs traffic only where a whole sector's rows are still running. One kernel template over the
// loaders of the values and of x; y through ystore_thread_row, so a fixed-point y gets one scale
// per 32 rows from the warp that holds them.
//
// Device slots of an ELL matrix (the ELL part of HYB uses the first two):
//   0 col    int32 [stride * width]  column indices (padding: the row's last column, as on the
//            host)
//   1 rowlen int32 [rows]            entries of each row; present only when the kernel reads it
//   2 val    the values [stride * width] in the matrix's precision (padding 0)
//   3 scales f64 [ceil(stride * width / 256)]  fixed point only
// Scalars: i64[0] width, i64[1] whether rowlen is used, i64[2] the stride.
#include "formats.cuh"

enum { ELL_COL = 0, ELL_ROWLEN, ELL_VAL, ELL_SCALES };
enum { ELL_Q_WIDTH = 0, ELL_Q_ROWLEN, ELL_Q_STRIDE };

// No early return: every lane of a warp reaches the store (a fixed-point y shuffles there).
// HYB (tail != NULL): a row whose bit is set in tail (one bit per row) goes on in the COO part,
// which finishes it; its partial alpha * sum + beta * y_i goes to part[i] in fp64 instead of y,
// so that y is rounded (and an overflow counted) once, from the whole row.
template <class LA, class LX, bool ALIGNED, bool ROWLEN, int BLOCK>
__global__ void __launch_bounds__(BLOCK, MSP__FMT_MIN_BLOCKS)
    ell_kernel(int64_t rows, int64_t width, int64_t stride, const int32_t *__restrict__ col, LA va,
               const int32_t *__restrict__ rowlen, LX x, ystore y, double alpha, double beta,
               const uint32_t *__restrict__ tail, double *__restrict__ part) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  const bool valid = i < rows;
  const int64_t len = !valid ? 0 : ROWLEN ? (int64_t)msp__ld_once(rowlen + i) : width;
  const double sum = msp__ell_row_sum<LA, LX, ALIGNED>(col, va, i, stride, len, x);
  const bool goes_on = tail && valid && ((msp__ld(tail + (i >> 5)) >> (i & 31)) & 1u);
  if (goes_on) part[i] = beta == 0.0 ? alpha * sum : alpha * sum + beta * ystore_load(y, i);
  ystore_thread_row(y, i, valid && !goes_on, alpha, sum, beta);
}

msp_status msp__cuda_ell_part_upload(msp_context ctx, msp__cuda_matrix *m, int s0, int q0,
                                     int64_t rows, const msp__ell *e, int64_t stored_nnz) {
  msp_status st = MSP_SUCCESS;
  const int64_t width = e->width;
  const int use = width > 0 && msp__fmt_use_rowlen(rows, rows * width, stored_nnz);
  m->i64[q0 + ELL_Q_WIDTH] = width;
  m->i64[q0 + ELL_Q_ROWLEN] = use;
  m->i64[q0 + ELL_Q_STRIDE] = e->stride;
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + ELL_COL, e->col,
                               (size_t)(e->stride * width) * sizeof(int32_t)));
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

template <class LA, class LX, bool ALIGNED, bool ROWLEN>
static msp_status ell_launch(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                             int64_t rows, const LA &va, const LX &x, const ystore &y, double alpha,
                             double beta, const uint32_t *tail, double *part) {
  msp_status st = MSP_SUCCESS;
  ell_kernel<LA, LX, ALIGNED, ROWLEN, MSP__FMT_BLOCK>
      <<<msp__cuda_blocks(rows, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
          rows, m->i64[q0 + ELL_Q_WIDTH], m->i64[q0 + ELL_Q_STRIDE],
          (const int32_t *)m->d[s0 + ELL_COL], va, (const int32_t *)m->d[s0 + ELL_ROWLEN], x, y,
          alpha, beta, tail, part);
  MSP_CUDA_CHECK_LAUNCH("ell_kernel");
exit:
  return st;
}

msp_status msp__cuda_ell_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   int64_t rows, const msp_acc &va, const msp_acc &xa,
                                   const ystore &y, double alpha, double beta, const uint32_t *tail,
                                   double *part) {
  if (rows == 0) return MSP_SUCCESS;
  const bool use = m->i64[q0 + ELL_Q_ROWLEN] != 0;
  return msp__fmt_dispatch2(va, xa, [&](auto la, auto lx) {
    return msp__with_cursor(la, m->i64[q0 + ELL_Q_STRIDE], [&](auto aligned) {
      using LA = decltype(la);
      using LX = decltype(lx);
      constexpr bool AL = decltype(aligned)::value;
      return use ? ell_launch<LA, LX, AL, true>(s, m, s0, q0, rows, la, lx, y, alpha, beta, tail,
                                                part)
                 : ell_launch<LA, LX, AL, false>(s, m, s0, q0, rows, la, lx, y, alpha, beta, tail,
                                                 part);
    });
  });
}

extern "C" msp_status msp__cuda_ell_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  MSP_TRY(msp__fmt_check(A, "ell"));
  {
    const msp__ell *e = (const msp__ell *)A->fmt;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    // On failure backend.cu frees what A->dev holds.
    MSP_TRY(msp__cuda_ell_part_upload(ctx, m, ELL_COL, 0, A->rows, e, A->nnz));
    MSP_TRY(
        msp__fmt_put_values(ctx, m, A, ELL_VAL, ELL_SCALES, e->val, e->stride * e->width, NULL, 0));
  }
exit:
  return st;
}

extern "C" msp_status msp__cuda_ell_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  return msp__cuda_ell_part_spmv(msp__cuda(ctx)->stream, m, ELL_COL, 0, A->rows,
                                 msp__fmt_values(A, m, ELL_VAL, ELL_SCALES), msp__vector_acc(x, 1),
                                 msp__vector_ystore(y), alpha, beta, NULL, NULL);
}

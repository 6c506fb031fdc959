// hll.cu: hacked ELL (HLL) on CUDA: upload and SpMV, one thread per row within its hack.
//
// Hack h holds rows h*hack .. h*hack+hack-1 as an ELL block of width (off[h+1] - off[h]) / hack,
// column-major inside the hack (slot k of row r at off[h] + k * hack + r: the host layout, so the
// value array is the host array or A->pval as it is, in every precision). The hack size is a
// multiple of 32, so each warp's 32 rows lie in one hack and read 32 consecutive values and
// columns per slot (off[h] is a multiple of hack). A long row only widens its own hack
// (Filippone, PSBLAS-Extensions reference guide 2.1, Hacked ELLPACK). When the padding is large
// (msp__fmt_use_rowlen) the kernel stops each row at its length, so the short rows sharing a hack
// with a long one issue no loads for their padding. One kernel template over the loaders of the
// values and of x; y through ystore_thread_row (a warp holds 32 rows from a multiple of 32, so a
// fixed-point y gets its block scales from the warp).
//
// Device slots of an HLL matrix:
//   0 off    int64 [nhacks + 1]     first slot of each hack
//   1 col    int32 [off[nhacks]]    column indices (padding: the row's last column)
//   2 val    the values [off[nhacks]] in the matrix's precision (padding 0)
//   3 rowlen int32 [rows]           entries of each row; present only when the kernel reads it
//   4 scales f64 [ceil(off[nhacks] / 256)]  fixed point only
// Scalars: i64[0] hack, i64[1] nhacks, i64[2] whether rowlen is used.
#include "formats.cuh"

enum { HLL_OFF = 0, HLL_COL, HLL_VAL, HLL_ROWLEN, HLL_SCALES };
enum { HLL_Q_HACK = 0, HLL_Q_NHACKS, HLL_Q_ROWLEN };

// No early return: every lane of a warp reaches the store (a fixed-point y shuffles there); rows
// of the last hack past the matrix read nothing.
template <class LA, class LX, bool ROWLEN, int BLOCK>
__global__ void __launch_bounds__(BLOCK, MSP__FMT_MIN_BLOCKS)
    hll_kernel(int32_t rows, int32_t hack, const int64_t *__restrict__ off,
               const int32_t *__restrict__ col, LA va, const int32_t *__restrict__ rowlen, LX x,
               ystore y, double alpha, double beta) {
  const int64_t gi = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  const bool valid = gi < rows;
  const int32_t i = valid ? (int32_t)gi : 0;
  const int32_t h = i / hack, r = i - h * hack;
  const int64_t o0 = msp__ld(off + h);
  const int64_t len = !valid   ? 0
                      : ROWLEN ? (int64_t)msp__ld_once(rowlen + i)
                               : (msp__ld(off + h + 1) - o0) / hack;
  const double sum = msp__ell_row_sum<LA, LX, false>(col, va, o0 + r, hack, len, x);
  ystore_thread_row(y, gi, valid, alpha, sum, beta);
}

extern "C" msp_status msp__cuda_hll_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  MSP_TRY(msp__fmt_check(A, "hll"));
  {
    const msp__hll *H = (const msp__hll *)A->fmt;
    if (H->hack <= 0 || H->hack % 32 != 0 || H->nhacks != (A->rows + H->hack - 1) / H->hack) {
      st = msp__error(MSP_ERR_INTERNAL,
                      "CUDA hll upload: hack size %d with %lld hacks for %lld rows", H->hack,
                      (long long)H->nhacks, (long long)A->rows);
      goto exit;
    }
    const int64_t slots = H->off[H->nhacks];
    const int use = msp__fmt_use_rowlen(A->rows, slots, A->nnz);
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    // On failure backend.cu frees what A->dev holds.
    m->i64[HLL_Q_HACK] = H->hack;
    m->i64[HLL_Q_NHACKS] = H->nhacks;
    m->i64[HLL_Q_ROWLEN] = use;
    MSP_TRY(
        msp__cuda_matrix_put(ctx, m, HLL_OFF, H->off, (size_t)(H->nhacks + 1) * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, HLL_COL, H->col, (size_t)slots * sizeof(int32_t)));
    MSP_TRY(msp__fmt_put_values(ctx, m, A, HLL_VAL, HLL_SCALES, H->val, slots, NULL, 0));
    if (use) {
      if (!H->rowlen) {
        st = msp__error(MSP_ERR_INTERNAL, "CUDA hll upload: the host row lengths are missing");
        goto exit;
      }
      MSP_TRY(
          msp__cuda_matrix_put(ctx, m, HLL_ROWLEN, H->rowlen, (size_t)A->rows * sizeof(int32_t)));
    }
  }
exit:
  return st;
}

template <class LA, class LX, bool ROWLEN>
static msp_status hll_launch(cudaStream_t s, const msp_matrix A, const LA &va, const LX &x,
                             const ystore &y, double alpha, double beta) {
  msp_status st = MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  hll_kernel<LA, LX, ROWLEN, MSP__FMT_BLOCK>
      <<<msp__cuda_blocks(A->rows, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
          (int32_t)A->rows, (int32_t)m->i64[HLL_Q_HACK], (const int64_t *)m->d[HLL_OFF],
          (const int32_t *)m->d[HLL_COL], va, (const int32_t *)m->d[HLL_ROWLEN], x, y, alpha, beta);
  MSP_CUDA_CHECK_LAUNCH("hll_kernel");
exit:
  return st;
}

extern "C" msp_status msp__cuda_hll_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const bool use = m->i64[HLL_Q_ROWLEN] != 0;
  const ystore ys = msp__vector_ystore(y);
  if (A->rows == 0) return MSP_SUCCESS;
  return msp__fmt_dispatch2(
      msp__fmt_values(A, m, HLL_VAL, HLL_SCALES), msp__vector_acc(x, 1), [&](auto la, auto lx) {
        return use ? hll_launch<decltype(la), decltype(lx), true>(s, A, la, lx, ys, alpha, beta)
                   : hll_launch<decltype(la), decltype(lx), false>(s, A, la, lx, ys, alpha, beta);
      });
}

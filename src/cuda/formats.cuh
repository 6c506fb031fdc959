// formats.cuh: shared by the CUDA COO, ELL, HLL, DIA, HDIA, HYB files (and HYB's ELL, COO parts).
#ifndef MSP_CUDA_FORMATS_CUH
#define MSP_CUDA_FORMATS_CUH

#include "cuda_internal.cuh"

#include <limits.h>
#include <stdint.h>

// Threads per block of every kernel here: 8 warps.
#define MSP__FMT_BLOCK 256
// Blocks per SM the row kernels ask the compiler to fit (__launch_bounds__): 4 x 256 threads caps
// them at 64 registers, half the SM's 2048 threads resident, which with MSP__FMT_UNROLL loads in
// flight per thread covers HBM latency (checked with -Xptxas -v: no spills).
#define MSP__FMT_MIN_BLOCKS 4
// Slots (diagonals, ELL columns) whose loads a thread issues before the first use: a memory-bound
// kernel needs several independent loads in flight per thread to cover HBM latency
// (/work/.library/device/HOPPER.md, "several independent loads in flight").
#define MSP__FMT_UNROLL 8

// ---- device helpers -----------------------------------------------------------------------------
// Matrix arrays and x are read-only during a product: the non-coherent read-only path.
template <typename T> __device__ __forceinline__ T msp__ld(const T *p) {
  return __ldg(p);
}
__device__ __forceinline__ int64_t msp__ld(const int64_t *p) {
  return (int64_t)__ldg((const long long *)p);
}
// A stored value widened to the fp64 arithmetic (one place to put a storage accessor later).
__device__ __forceinline__ double msp__widen(double v) {
  return v;
}

// y_i = alpha * sum + beta * y_i; y_i is not read when beta == 0 (NaN in y must not propagate).
__device__ __forceinline__ void msp__y_update(double *y, int64_t i, double alpha, double sum,
                                              double beta) {
  y[i] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[i];
}

// Sum of len slots of an ELL-like row: slot k holds value vp[k * stride] and column cp[k * stride]
// (column-major: consecutive threads read consecutive memory). Loads of MSP__FMT_UNROLL slots are
// issued before their products; slots past len are predicated off, so a short row still has all
// of its loads in flight at once. Sums in slot order.
template <typename V>
__device__ __forceinline__ double msp__ell_row_sum(const int32_t *__restrict__ cp,
                                                   const V *__restrict__ vp, int64_t stride,
                                                   int64_t len, const double *__restrict__ x) {
  double sum = 0.0;
  for (int64_t k = 0; k < len; k += MSP__FMT_UNROLL) {
    V v[MSP__FMT_UNROLL];
    int32_t c[MSP__FMT_UNROLL];
    // Walking pointers (one add per slot) instead of k * stride products keep few 64-bit
    // addresses live, which keeps the kernels at 64 registers without spills.
#pragma unroll
    for (int u = 0; u < MSP__FMT_UNROLL; u++) {
      const bool ok = k + u < len;
      v[u] = ok ? msp__ld(vp) : V(0);
      c[u] = ok ? msp__ld(cp) : -1;
      vp += stride;
      cp += stride;
    }
    double xv[MSP__FMT_UNROLL];
#pragma unroll
    for (int u = 0; u < MSP__FMT_UNROLL; u++)
      xv[u] = c[u] >= 0 ? msp__ld(x + c[u]) : 0.0;
#pragma unroll
    for (int u = 0; u < MSP__FMT_UNROLL; u++)
      sum += msp__widen(v[u]) * xv[u];
  }
  return sum;
}

// ---- host helpers for the uploads ---------------------------------------------------------------
// The formats here store fp64 values only: msp_matrix_convert encodes other precisions for CSR
// alone (msp__matrix_encode_values), so anything else reaching an upload is refused clearly. Row
// indices and diagonal offsets travel as int32 on the device, so rows must fit an int32.
static inline msp_status msp__fmt_check(const msp_matrix A, const char *fmt) {
  if (A->precision != MSP_PRECISION_F64)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "CUDA %s upload: %s values are not supported (f64 only)", fmt,
                      msp_precision_name(A->precision) ? msp_precision_name(A->precision) : "?");
  if (A->rows > INT32_MAX || A->cols > INT32_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "CUDA %s upload: %lld x %lld matrix; rows and columns must fit in int32", fmt,
                      (long long)A->rows, (long long)A->cols);
  if (!A->fmt) return msp__error(MSP_ERR_INTERNAL, "CUDA %s upload: no host format data", fmt);
  return MSP_SUCCESS;
}

// Put an array of `ncols` columns of `rows` elements (column-major, host leading dimension rows)
// into slot `slot` with device leading dimension ld >= rows; rows ld-rows..ld-1 of each column are
// zero. A leading dimension that is a multiple of 32 makes each warp's 32 consecutive rows start
// on a 256-byte boundary for 8-byte elements, so no load straddles an extra sector.
static inline msp_status msp__fmt_put_2d(msp_context ctx, msp__cuda_matrix *m, int slot,
                                         const void *host, size_t elem, int64_t rows, int64_t ncols,
                                         int64_t ld) {
  msp_status st = MSP_SUCCESS;
  size_t bytes = (size_t)ncols * (size_t)ld * elem;
  if (bytes == 0) return MSP_SUCCESS;
  if (ld == rows) return msp__cuda_matrix_put(ctx, m, slot, host, bytes);
  MSP_TRY(msp__cuda_matrix_put(ctx, m, slot, NULL, bytes));
  if (rows == 0) goto exit;
  if ((size_t)ld * elem <= (size_t)INT32_MAX) {
    MSP_CUDA_TRY(cudaMemcpy2DAsync(m->d[slot], (size_t)ld * elem, host, (size_t)rows * elem,
                                   (size_t)rows * elem, (size_t)ncols, cudaMemcpyHostToDevice,
                                   msp__cuda(ctx)->stream));
  } else {
    // Pitches above the 2D copy's limit (cudaDevAttrMaxPitch): one copy per column.
    for (int64_t k = 0; k < ncols; k++)
      MSP_CUDA_TRY(cudaMemcpyAsync((char *)m->d[slot] + (size_t)k * (size_t)ld * elem,
                                   (const char *)host + (size_t)k * (size_t)rows * elem,
                                   (size_t)rows * elem, cudaMemcpyHostToDevice,
                                   msp__cuda(ctx)->stream));
  }
exit:
  return st;
}

static inline int64_t msp__fmt_round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

// Whether an ELL-like kernel should read per-row lengths (int32 per row) and stop at them instead
// of running over every padded slot: worth it when the padding is more than two slots per row on
// average (a padded slot costs 12 bytes, the length 4 bytes per row; lanes past their length skip
// whole sectors only where their neighbours are past theirs too, hence the margin).
static inline int msp__fmt_use_rowlen(int64_t rows, int64_t slots, int64_t nnz) {
  return rows > 0 && slots - nnz > 2 * rows;
}

// ---- parts shared with HYB ----------------------------------------------------------------------
// An ELL part: `rows` x `width`, column-major with leading dimension ld (a multiple of 32), and
// per-row lengths when use_rowlen. Fills slots s0 (col, int32), s0+1 (val), s0+2 (rowlen, int32,
// only when used) and the scalars i64[q0] = width, i64[q0+1] = ld, i64[q0+2] = use_rowlen.
msp_status msp__cuda_ell_part_upload(msp_context ctx, msp__cuda_matrix *m, int s0, int q0,
                                     int64_t rows, const msp__ell *e, int64_t stored_nnz);
// y = alpha * ELL * x + beta * y over all rows, from the slots written above.
msp_status msp__cuda_ell_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   int64_t rows, double alpha, const double *x, double beta,
                                   double *y);

// A COO part (triples sorted by row, then column), reduced by equal shares of MSP__COO_TILE
// triples per warp without atomics. Fills slots s0 .. s0+5 (row, col, val, head partials, tail
// partials, fix-up list) and the scalars i64[q0] = tiles, i64[q0+1] = short fix-ups,
// i64[q0+2] = long fix-ups. coo.cu documents the scheme.
#define MSP__COO_ITEMS 8                    // consecutive triples per lane
#define MSP__COO_TILE (32 * MSP__COO_ITEMS) // triples per warp
msp_status msp__cuda_coo_part_upload(msp_context ctx, msp__cuda_matrix *m, int s0, int q0,
                                     int64_t nnz, const int32_t *row, const int32_t *col,
                                     const double *val);
// For every row r with triples: y_r = alpha * sum_r + beta * y_r (y_r not read when beta == 0).
// Rows without triples are not touched.
msp_status msp__cuda_coo_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   double alpha, const double *x, double beta, double *y);

#endif

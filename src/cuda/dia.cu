// dia.cu: DIA on CUDA: upload and SpMV, one thread per row over the stored diagonals (no indices).
//
// Diagonal d is one column of values, val[d * stride + i] = A(i, i + off[d]) (the host layout,
// stride = msp__col_stride(rows), so the value array is the host array or A->pval as it is, in
// every precision), so a warp reads 32 consecutive values per diagonal and x[i + off[d]] for 32
// consecutive i: both coalesced, and no column index is moved at all
// (Filippone, PSBLAS-Extensions reference guide 2.1, DIA). A block stages the offsets in shared
// memory, BLOCK at a time, and each thread issues the loads of msp__fmt_unroll diagonals before
// using them (several loads in flight per thread: the kernel is a pure read stream and must reach
// the bandwidth ceiling). Where the block's rows meet every diagonal of the chunk inside the
// matrix (all but the first and last few blocks of a banded matrix), the loads go without tests;
// the others test each column. (Tried and not taken: persistent blocks, as many as fit, each
// staging the offsets once for all its tiles: faster for f16 and fixed point, but slower for f64
// and cpms4.) One kernel template over the loaders of the values and of x; y is written once per
// row through ystore_thread_row (a warp holds 32 rows from a multiple of 32, so a fixed-point y
// gets its block scales from the warp).
//
// Device slots of a DIA matrix:
//   0 off    int32 [ndiag]         diagonal offsets j - i, ascending
//   1 val    the values [ndiag * stride] in the matrix's precision (0 where the diagonal leaves
//            the matrix or is not stored)
//   2 scales f64 [ceil(ndiag * stride / 256)]  fixed point only
// Scalars: i64[0] ndiag, i64[1] stride.
#include "formats.cuh"

enum { DIA_OFF = 0, DIA_VAL, DIA_SCALES };
enum { DIA_Q_NDIAG = 0, DIA_Q_STRIDE };

// The sum over cnt diagonals with offsets s_off[0 .. cnt) of row i, values from the cursor, in
// diagonal order: whole groups of U (msp__fmt_unroll) diagonals, then the rest predicated. CHECK:
// test that column i + off lies in 0 .. cols - 1 (outside, the stored value is 0 and x is not
// read).
template <bool CHECK, int U, class C, class LX>
__device__ __forceinline__ double dia_rows(C &vc, const int32_t *s_off, int cnt, int64_t i,
                                           int64_t cols, const LX &x, double sum) {
  // U diagonals from d; FULL (a compile-time constant): all U inside the chunk, no predicates
  auto group = [&](auto full, int d) {
    constexpr bool FULL = decltype(full)::value;
    decltype(vc.load()) v[U];
    double xv[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const bool ok = FULL || d + u < cnt;
      v[u] = ok ? vc.load() : 0;
      vc.step();
      const int64_t c = i + (ok ? s_off[d + u] : 0);
      xv[u] = ok && (!CHECK || (uint64_t)c < (uint64_t)cols) ? x(c) : 0.0;
    }
#pragma unroll
    for (int u = 0; u < U; u++)
      sum += (double)v[u] * xv[u];
  };
  int d = 0;
  for (; d + U <= cnt; d += U)
    group(std::true_type{}, d);
  if (d < cnt) group(std::false_type{}, d);
  return sum;
}

template <class LA, class LX, bool ALIGNED, int BLOCK>
__global__ void __launch_bounds__(BLOCK, MSP__FMT_MIN_BLOCKS)
    dia_kernel(int64_t rows, int64_t cols, int64_t ndiag, int64_t stride,
               const int32_t *__restrict__ off, LA va, LX x, ystore y, double alpha, double beta) {
  __shared__ int32_t s_off[BLOCK];
  const int64_t i0 = (int64_t)blockIdx.x * BLOCK, i = i0 + threadIdx.x;
  const int64_t last = (i0 + BLOCK < rows ? i0 + BLOCK : rows) - 1; // the block's last row
  const bool active = i < rows; // inactive threads still take part in the barriers and the store
  double sum = 0.0;
  for (int64_t c0 = 0; c0 < ndiag; c0 += BLOCK) {
    const int cnt = (int)(ndiag - c0 < BLOCK ? ndiag - c0 : BLOCK);
    __syncthreads(); // every thread is done with the previous chunk's offsets
    if ((int)threadIdx.x < cnt) s_off[threadIdx.x] = msp__ld(off + c0 + threadIdx.x);
    __syncthreads();
    if (active) {
      msp__cursor<LA, ALIGNED> vc(va, c0 * stride + i, stride); // a walking pointer
      // Offsets ascend: the block's rows meet every diagonal of the chunk inside the matrix when
      // its first row meets the lowest and its last row the highest.
      const bool inside = i0 + s_off[0] >= 0 && last + s_off[cnt - 1] < cols;
      constexpr int U = msp__fmt_unroll<LA>;
      sum = inside ? dia_rows<false, U>(vc, s_off, cnt, i, cols, x, sum)
                   : dia_rows<true, U>(vc, s_off, cnt, i, cols, x, sum);
    }
  }
  ystore_thread_row(y, i, active, alpha, sum, beta);
}

extern "C" msp_status msp__cuda_dia_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  int32_t *off = NULL;
  MSP_TRY(msp__fmt_check(A, "dia"));
  {
    const msp__dia *D = (const msp__dia *)A->fmt;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    // On failure backend.cu frees what A->dev holds.
    m->i64[DIA_Q_NDIAG] = D->ndiag;
    m->i64[DIA_Q_STRIDE] = D->stride;
    if (D->ndiag > 0) {
      // j - i lies in -(rows - 1) .. cols - 1, inside int32 (msp__fmt_check).
      MSP_TRY(MSP_ALLOC(off, D->ndiag, "DIA device offsets"));
      for (int64_t d = 0; d < D->ndiag; d++)
        off[d] = (int32_t)D->offsets[d];
      MSP_TRY(msp__cuda_matrix_put(ctx, m, DIA_OFF, off, (size_t)D->ndiag * sizeof(int32_t)));
    }
    MSP_TRY(
        msp__fmt_put_values(ctx, m, A, DIA_VAL, DIA_SCALES, D->val, D->stride * D->ndiag, NULL, 0));
  }
exit:
  // The offsets were copied from pageable memory: staged before the put returned.
  msp__free(off);
  return st;
}

template <class LA, class LX, bool ALIGNED>
static msp_status dia_launch(cudaStream_t s, const msp_matrix A, const LA &va, const LX &x,
                             const ystore &y, double alpha, double beta) {
  msp_status st = MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  dia_kernel<LA, LX, ALIGNED, MSP__FMT_BLOCK>
      <<<msp__cuda_blocks(A->rows, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
          A->rows, A->cols, m->i64[DIA_Q_NDIAG], m->i64[DIA_Q_STRIDE],
          (const int32_t *)m->d[DIA_OFF], va, x, y, alpha, beta);
  MSP_CUDA_CHECK_LAUNCH("dia_kernel");
exit:
  return st;
}

extern "C" msp_status msp__cuda_dia_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const ystore ys = msp__vector_ystore(y);
  if (A->rows == 0) return MSP_SUCCESS;
  return msp__fmt_dispatch2(
      msp__fmt_values(A, m, DIA_VAL, DIA_SCALES), msp__vector_acc(x, 1), [&](auto la, auto lx) {
        return msp__with_cursor(la, m->i64[DIA_Q_STRIDE], [&](auto aligned) {
          return dia_launch<decltype(la), decltype(lx), decltype(aligned)::value>(s, A, la, lx, ys,
                                                                                  alpha, beta);
        });
      });
}

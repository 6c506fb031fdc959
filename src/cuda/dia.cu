// dia.cu: DIA on CUDA: upload and SpMV, one thread per row over the stored diagonals (no indices).
//
// Diagonal d is one column of values, val[d * ld + i] = A(i, i + off[d]), so a warp reads 32
// consecutive values per diagonal and x[i + off[d]] for 32 consecutive i: both coalesced, and no
// column index is moved at all (papers/psblas-ext-gpu-formats-reference.txt 2.1, DIA). The
// device leading dimension ld is rows rounded up to 32 so that every warp's values start on a
// 256-byte boundary. A block stages the offsets in shared memory, BLOCK at a time, and each
// thread issues the loads of MSP__FMT_UNROLL diagonals before using them (several loads in
// flight per thread: the kernel is a pure read stream and must reach the bandwidth ceiling).
// y is written once per row, from a register.
//
// Device slots of a DIA matrix:
//   0 off int32 [ndiag]       diagonal offsets j - i, ascending
//   1 val f64   [ndiag * ld]  values (0 where the diagonal leaves the matrix or is not stored)
// Scalars: i64[0] ndiag, i64[1] ld.
#include "formats.cuh"

enum { DIA_OFF = 0, DIA_VAL };
enum { DIA_Q_NDIAG = 0, DIA_Q_LD };

template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK, MSP__FMT_MIN_BLOCKS)
    dia_kernel(int64_t rows, int64_t cols, int64_t ndiag, int64_t ld,
               const int32_t *__restrict__ off, const V *__restrict__ val,
               const double *__restrict__ x, double alpha, double beta, double *__restrict__ y) {
  __shared__ int32_t s_off[BLOCK];
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  const bool active = i < rows; // inactive threads still take part in the barriers
  double sum = 0.0;
  for (int64_t c0 = 0; c0 < ndiag; c0 += BLOCK) {
    const int cnt = (int)(ndiag - c0 < BLOCK ? ndiag - c0 : BLOCK);
    __syncthreads(); // every thread is done with the previous chunk's offsets
    if ((int)threadIdx.x < cnt) s_off[threadIdx.x] = msp__ld(off + c0 + threadIdx.x);
    __syncthreads();
    if (active) {
      const V *__restrict__ vp = val + c0 * ld + i;
      for (int d = 0; d < cnt; d += MSP__FMT_UNROLL) {
        V v[MSP__FMT_UNROLL];
        double xv[MSP__FMT_UNROLL];
#pragma unroll
        for (int u = 0; u < MSP__FMT_UNROLL; u++) {
          const bool ok = d + u < cnt;
          v[u] = ok ? msp__ld(vp) : V(0);
          vp += ld; // walking pointer: few 64-bit addresses live
          const int64_t j = i + (ok ? s_off[d + u] : 0);
          // Outside the matrix the stored value is 0: only x must not be read there.
          xv[u] = ok && (uint64_t)j < (uint64_t)cols ? msp__ld(x + j) : 0.0;
        }
#pragma unroll
        for (int u = 0; u < MSP__FMT_UNROLL; u++)
          sum += msp__widen(v[u]) * xv[u];
      }
    }
  }
  if (active) msp__y_update(y, i, alpha, sum, beta);
}

extern "C" msp_status msp__cuda_dia_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  int32_t *off = NULL;
  MSP_TRY(msp__fmt_check(A, "dia"));
  {
    const msp__dia *D = (const msp__dia *)A->fmt;
    const int64_t ld = msp__fmt_round_up(A->rows, 32);
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    // On failure backend.cu frees what A->dev holds.
    m->i64[DIA_Q_NDIAG] = D->ndiag;
    m->i64[DIA_Q_LD] = ld;
    if (D->ndiag > 0) {
      // j - i lies in -(rows - 1) .. cols - 1, inside int32 (msp__fmt_check).
      MSP_TRY(MSP_ALLOC(off, D->ndiag, "DIA device offsets"));
      for (int64_t d = 0; d < D->ndiag; d++)
        off[d] = (int32_t)D->offsets[d];
      MSP_TRY(msp__cuda_matrix_put(ctx, m, DIA_OFF, off, (size_t)D->ndiag * sizeof(int32_t)));
      MSP_TRY(msp__fmt_put_2d(ctx, m, DIA_VAL, D->val, sizeof(double), A->rows, D->ndiag, ld));
    }
  }
exit:
  // The offsets were copied from pageable memory: staged before the put returned.
  msp__free(off);
  return st;
}

template <typename V>
static msp_status dia_launch(cudaStream_t s, const msp_matrix A, double alpha, const double *x,
                             double beta, double *y) {
  msp_status st = MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  if (A->rows == 0) return MSP_SUCCESS;
  dia_kernel<V, MSP__FMT_BLOCK>
      <<<msp__cuda_blocks(A->rows, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
          A->rows, A->cols, m->i64[DIA_Q_NDIAG], m->i64[DIA_Q_LD], (const int32_t *)m->d[DIA_OFF],
          (const V *)m->d[DIA_VAL], x, alpha, beta, y);
  MSP_CUDA_CHECK_LAUNCH("dia_kernel");
exit:
  return st;
}

extern "C" msp_status msp__cuda_dia_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  // Values are fp64 (msp__fmt_check refuses the rest at upload).
  return dia_launch<double>(msp__cuda(ctx)->stream, A, alpha, x->d_data, beta, y->d_data);
}

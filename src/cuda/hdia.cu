// hdia.cu: hacked DIA (HDIA) on CUDA: upload and SpMV, one thread per row over its hack's offsets.
//
// Hack h of `hack` rows (a multiple of 32) is a DIA block with its own diagonals offsets[doff[h]
// .. doff[h+1]) and values at voff[h] + d * hack + r, so a few entries off the main band cost
// padding in their own hack only (papers/psblas-ext-gpu-formats-reference.txt 2.1, Hacked DIA).
// Each warp's 32 rows lie inside one hack (hack is a multiple of 32), so the hack's offsets are
// warp-uniform: every lane loads the same offset, which the hardware serves as one broadcast
// from L1, without staging through shared memory and without barriers (the hack size is a
// run-time parameter, so a block cannot be sized to whole hacks at compile time). Values are read
// 32 consecutive per diagonal (coalesced, 256-byte aligned: voff[h] is a multiple of hack), no
// column indices are moved, and each thread issues the loads of MSP__FMT_UNROLL diagonals
// before using them.
//
// Device slots of an HDIA matrix:
//   0 doff    int64 [nhacks + 1]     first diagonal of each hack in `off`
//   1 off     int32 [doff[nhacks]]   diagonal offsets j - i of each hack, ascending
//   2 voff    int64 [nhacks + 1]     first value of each hack
//   3 val     f64   [voff[nhacks]]   values (0 where not stored; the last hack padded to hack rows)
// Scalars: i64[0] hack, i64[1] nhacks.
#include "formats.cuh"

enum { HDIA_DOFF = 0, HDIA_OFF, HDIA_VOFF, HDIA_VAL };
enum { HDIA_Q_HACK = 0, HDIA_Q_NHACKS };

template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK, MSP__FMT_MIN_BLOCKS)
    hdia_kernel(int64_t rows, int64_t cols, int32_t hack, const int64_t *__restrict__ doff,
                const int32_t *__restrict__ off, const int64_t *__restrict__ voff,
                const V *__restrict__ val, const double *__restrict__ x, double alpha, double beta,
                double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i >= rows) return; // no barriers below
  const int32_t h = (int32_t)i / hack, r = (int32_t)i - h * hack;
  const int64_t d0 = msp__ld(doff + h), nd = msp__ld(doff + h + 1) - d0;
  const int32_t *__restrict__ op = off + d0;
  const V *__restrict__ vp = val + msp__ld(voff + h) + r;
  double sum = 0.0;
  for (int64_t d = 0; d < nd; d += MSP__FMT_UNROLL) {
    int32_t o[MSP__FMT_UNROLL];
    V v[MSP__FMT_UNROLL];
    double xv[MSP__FMT_UNROLL];
#pragma unroll
    for (int u = 0; u < MSP__FMT_UNROLL; u++) {
      const bool ok = d + u < nd;
      o[u] = ok ? msp__ld(op + u) : 0;
      v[u] = ok ? msp__ld(vp) : V(0);
      vp += hack; // walking pointers keep few 64-bit addresses live (no spills at 64 registers)
    }
    op += MSP__FMT_UNROLL;
#pragma unroll
    for (int u = 0; u < MSP__FMT_UNROLL; u++) {
      const int64_t j = i + o[u];
      // Outside the matrix the stored value is 0: only x must not be read there.
      xv[u] = d + u < nd && (uint64_t)j < (uint64_t)cols ? msp__ld(x + j) : 0.0;
    }
#pragma unroll
    for (int u = 0; u < MSP__FMT_UNROLL; u++)
      sum += msp__widen(v[u]) * xv[u];
  }
  msp__y_update(y, i, alpha, sum, beta);
}

extern "C" msp_status msp__cuda_hdia_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  int32_t *off = NULL;
  MSP_TRY(msp__fmt_check(A, "hdia"));
  {
    const msp__hdia *H = (const msp__hdia *)A->fmt;
    if (H->hack <= 0 || H->hack % 32 != 0 || H->nhacks != (A->rows + H->hack - 1) / H->hack) {
      st = msp__error(MSP_ERR_INTERNAL,
                      "CUDA hdia upload: hack size %d with %lld hacks for %lld rows", H->hack,
                      (long long)H->nhacks, (long long)A->rows);
      goto exit;
    }
    const int64_t ndiag = H->doff[H->nhacks], nval = H->voff[H->nhacks];
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    // On failure backend.cu frees what A->dev holds.
    m->i64[HDIA_Q_HACK] = H->hack;
    m->i64[HDIA_Q_NHACKS] = H->nhacks;
    MSP_TRY(msp__cuda_matrix_put(ctx, m, HDIA_DOFF, H->doff,
                                 (size_t)(H->nhacks + 1) * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, HDIA_VOFF, H->voff,
                                 (size_t)(H->nhacks + 1) * sizeof(int64_t)));
    if (ndiag > 0) {
      // j - i lies in -(rows - 1) .. cols - 1, inside int32 (msp__fmt_check).
      MSP_TRY(MSP_ALLOC(off, ndiag, "HDIA device offsets"));
      for (int64_t d = 0; d < ndiag; d++)
        off[d] = (int32_t)H->offsets[d];
      MSP_TRY(msp__cuda_matrix_put(ctx, m, HDIA_OFF, off, (size_t)ndiag * sizeof(int32_t)));
      MSP_TRY(msp__cuda_matrix_put(ctx, m, HDIA_VAL, H->val, (size_t)nval * sizeof(double)));
    }
  }
exit:
  // The offsets were copied from pageable memory: staged before the put returned.
  msp__free(off);
  return st;
}

template <typename V>
static msp_status hdia_launch(cudaStream_t s, const msp_matrix A, double alpha, const double *x,
                              double beta, double *y) {
  msp_status st = MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  if (A->rows == 0) return MSP_SUCCESS;
  hdia_kernel<V, MSP__FMT_BLOCK>
      <<<msp__cuda_blocks(A->rows, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
          A->rows, A->cols, (int32_t)m->i64[HDIA_Q_HACK], (const int64_t *)m->d[HDIA_DOFF],
          (const int32_t *)m->d[HDIA_OFF], (const int64_t *)m->d[HDIA_VOFF],
          (const V *)m->d[HDIA_VAL], x, alpha, beta, y);
  MSP_CUDA_CHECK_LAUNCH("hdia_kernel");
exit:
  return st;
}

extern "C" msp_status msp__cuda_hdia_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                          msp_vector x, double beta, msp_vector y) {
  // Values are fp64 (msp__fmt_check refuses the rest at upload).
  return hdia_launch<double>(msp__cuda(ctx)->stream, A, alpha, x->d_data, beta, y->d_data);
}

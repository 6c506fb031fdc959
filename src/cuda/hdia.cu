// hdia.cu: hacked DIA (HDIA) on CUDA: upload and SpMV, one thread per row over its hack's offsets.
//
// Hack h of `hack` rows (a multiple of 32) is a DIA block with its own diagonals offsets[doff[h]
// .. doff[h+1]) and values at voff[h] + d * hack + r (the host layout, so the value array is the
// host array or A->pval as it is, in every precision), so a few entries off the main band cost
// padding in their own hack only (Filippone, PSBLAS-Extensions reference guide 2.1, Hacked DIA).
// Each warp's 32 rows lie inside one hack (hack is a multiple of 32), so the hack's offsets are
// warp-uniform: every lane loads the same offset, which the hardware serves as one broadcast
// from L1, without staging through shared memory and without barriers (the hack size is a
// run-time parameter, so a block cannot be sized to whole hacks at compile time). Values are read
// 32 consecutive per diagonal (coalesced: voff[h] is a multiple of hack), no column indices are
// moved, and each thread issues the loads of MSP__FMT_UNROLL diagonals before using them. One
// kernel template over the loaders of the values and of x; y through ystore_thread_row (a
// fixed-point y gets its block scales from the warp that holds the block's 32 rows).
//
// Device slots of an HDIA matrix:
//   0 doff    int64 [nhacks + 1]     first diagonal of each hack in `off`
//   1 off     int32 [doff[nhacks]]   diagonal offsets j - i of each hack, ascending
//   2 voff    int64 [nhacks + 1]     first value of each hack
//   3 val     the values [voff[nhacks]] in the matrix's precision (0 where not stored; the last
//             hack padded to hack rows)
//   4 scales  f64 [ceil(voff[nhacks] / 256)]  fixed point only
// Scalars: i64[0] hack, i64[1] nhacks.
#include "formats.cuh"

enum { HDIA_DOFF = 0, HDIA_OFF, HDIA_VOFF, HDIA_VAL, HDIA_SCALES };
enum { HDIA_Q_HACK = 0, HDIA_Q_NHACKS };

// No early return: every lane of a warp reaches the store (a fixed-point y shuffles there).
template <class LA, class LX, int BLOCK>
__global__ void __launch_bounds__(BLOCK, MSP__FMT_MIN_BLOCKS)
    hdia_kernel(int64_t rows, int64_t cols, int32_t hack, const int64_t *__restrict__ doff,
                const int32_t *__restrict__ off, const int64_t *__restrict__ voff, LA va, LX x,
                ystore y, double alpha, double beta) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  const bool valid = i < rows;
  const int32_t h = valid ? (int32_t)i / hack : 0, r = (int32_t)i - h * hack;
  const int64_t d0 = msp__ld(doff + h), nd = valid ? msp__ld(doff + h + 1) - d0 : 0;
  const int32_t *__restrict__ op = off + d0;
  // walking pointers keep few 64-bit values live (no spills at 64 registers)
  msp__cursor<LA> vc(va, msp__ld(voff + h) + r, hack);
  double sum = 0.0;
  for (int64_t d = 0; d < nd; d += MSP__FMT_UNROLL) {
    int32_t o[MSP__FMT_UNROLL];
    decltype(vc.load()) v[MSP__FMT_UNROLL];
    double xv[MSP__FMT_UNROLL];
#pragma unroll
    for (int u = 0; u < MSP__FMT_UNROLL; u++) {
      const bool ok = d + u < nd;
      o[u] = ok ? msp__ld(op + u) : 0;
      v[u] = ok ? vc.load() : 0;
      vc.step();
    }
    op += MSP__FMT_UNROLL;
#pragma unroll
    for (int u = 0; u < MSP__FMT_UNROLL; u++) {
      const int64_t c = i + o[u];
      // Outside the matrix the stored value is 0: only x must not be read there.
      xv[u] = d + u < nd && (uint64_t)c < (uint64_t)cols ? x(c) : 0.0;
    }
#pragma unroll
    for (int u = 0; u < MSP__FMT_UNROLL; u++)
      sum += (double)v[u] * xv[u];
  }
  ystore_thread_row(y, i, valid, alpha, sum, beta);
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
    }
    MSP_TRY(msp__fmt_put_values(ctx, m, A, HDIA_VAL, HDIA_SCALES, H->val, nval, NULL, 0));
  }
exit:
  // The offsets were copied from pageable memory: staged before the put returned.
  msp__free(off);
  return st;
}

template <class LA, class LX>
static msp_status hdia_launch(cudaStream_t s, const msp_matrix A, const LA &va, const LX &x,
                              const ystore &y, double alpha, double beta) {
  msp_status st = MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  hdia_kernel<LA, LX, MSP__FMT_BLOCK>
      <<<msp__cuda_blocks(A->rows, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
          A->rows, A->cols, (int32_t)m->i64[HDIA_Q_HACK], (const int64_t *)m->d[HDIA_DOFF],
          (const int32_t *)m->d[HDIA_OFF], (const int64_t *)m->d[HDIA_VOFF], va, x, y, alpha, beta);
  MSP_CUDA_CHECK_LAUNCH("hdia_kernel");
exit:
  return st;
}

extern "C" msp_status msp__cuda_hdia_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                          msp_vector x, double beta, msp_vector y) {
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const ystore ys = msp__vector_ystore(y);
  if (A->rows == 0) return MSP_SUCCESS;
  return msp__fmt_dispatch2(
      msp__fmt_values(A, m, HDIA_VAL, HDIA_SCALES), msp__vector_acc(x, 1),
      [&](auto la, auto lx) { return hdia_launch(s, A, la, lx, ys, alpha, beta); });
}

// bdmp.cu: CUDA BDMP-PBP (the CSR kernels of csr.cuh over a loader of two value streams) and
// BDMP-TCKI (warp per tile run).
//
// PBP device arrays: the CSR slots of csr.cu (row pointers, columns, merge-path plan; vector group
// size in i64[0]), with the values of the layout of bdmp.h: SLOT_VAL its fp64 values, SLOT_VAL2
// its fp32 values, SLOT_META its precision words (uint32 pairs: mask, fp64 count before) or, rows
// in two parts, the fp64 entries before each row; i64[6] which layout (msp__cuda_bdmp_pbp_upload).
// TCKI device arrays (OFF: uint32 when every offset and count fits, else int64; i64[2] says which):
//   d[0] chunk_part int32[nchunks]: the chunk's slot in `part`, -1 when its block row is one chunk
//   d[1] tile_col int32[ntiles]
//   d[2] tinfo uint16[ntiles]: format | fp64 flag | CSR-like segment flag (low byte, tile_fmt),
//        ELL width (high byte)
//   d[3] chunk_br int32[nchunks]   d[4] eoff OFF[ntiles+1]   d[5] voff OFF[ntiles]
//   d[6] idx uint8[]   d[7] val32 float[]   d[8] val64 double[]   (tiles and CSR-like segments
//        as in bdmp.h: a segment's 16 uint16 row ends and int32 columns at its eoff rounded up
//        to 4 bytes)
//   d[9] chunk_t0 OFF[nchunks+1]: chunk k covers tiles chunk_t0[k] .. chunk_t0[k+1]
//   d[10] runs int64[3 * nsplit]: per split block row: block row, first part slot, slot count
//   d[11] part double[nparts * 16]: partial sums of block rows split over several chunks
//   i64[0] nchunks, i64[1] nsplit, i64[2] sizeof(OFF)
// A chunk is the run of tiles one warp takes (msp__bdmp_tcki_chunks in bdmp.c, whose counts
// tcki_bytes uses): at most TCKI_CHUNK_TILES tiles and about MSP__TCKI_CHUNK_WORK entries of one
// block row, so a long block row is shared by several warps (balanced work per warp, paper
// 3.2.2). Their partial sums go to `part` and a second kernel adds
// them in chunk order: no atomics, the same bits on every run. Every block row has at least one
// chunk (an empty one for an empty block row) so that every y_i is written. The tile pointers of
// the host layout are not needed on the device (chunks carry their tile ranges). A CSR-like
// block row's segments (bdmp.h) are chunked like tiles, by their work (msp__bdmp_tile_work: a
// segment with a long row share counts as its two lanes' serial work).
#include "csr.cuh"

#include "bdmp.h"

#include <string.h>

#define TCKI_WARPS 8
#define TCKI_THREADS (TCKI_WARPS * 32)
#define TCKI_CHUNK_TILES MSP__TCKI_CHUNK_TILES // at most a warp: lane j holds tile j's metadata
#define FIX_THREADS 256

// ---- PBP ---------------------------------------------------------------------------------------
// Value j of a PBP matrix (bdmp.h): its word (the precision bits of 32 consecutive entries and the
// fp64 entries before them: one 8-byte read through the read-only cache serves 32 entries), then
// the value from its stream, widened. PBP is CSR with this loader: the tuned kernels of csr.cuh
// (scalar, vector, merge-path; chosen by the CSR rule) read each row once, whatever mix of the
// two precisions it holds, and write y once (papers/bdmp-block-wise-dynamic-mixed-precision-
// spmv.txt 3.2.1 runs two sub-matrices and adds them). Compile-time tuning: that of f32 values.
struct pbp_loader {
  static constexpr msp_precision prec = MSP_PRECISION_F32;
  const uint2 *meta;
  const float *v32;
  const double *v64;
  template <bool STREAM> __device__ __forceinline__ double load(int64_t j) const {
    const uint2 w = __ldg(meta + (j >> 5));
    const unsigned b = (unsigned)j & 31u;
    const int64_t c = (int64_t)w.y + __popc(w.x & ((1u << b) - 1u));
    if ((w.x >> b) & 1u) return STREAM ? __ldcs(v64 + c) : __ldg(v64 + c);
    return (double)(STREAM ? __ldcs(v32 + (j - c)) : __ldg(v32 + (j - c)));
  }
  __device__ __forceinline__ double operator()(int64_t j) const { return load<false>(j); }
  __device__ __forceinline__ double stream(int64_t j) const { return load<true>(j); }
};

// Device layout by the mix and the kernel (m->i64[6]):
//   PBP_UNIFORM: one precision only: CSR with that precision's plain loader;
//   PBP_WORDS:   both, merge-path kernel: the host layout (columns in order, precision words in
//                SLOT_META), read by pbp_loader;
//   PBP_SPLIT:   both, scalar or vector kernel: each row's fp64 entries first (its columns
//                reordered so, in SLOT_COLIND), SLOT_META the fp64 entries before each row
//                (int64[rows + 1]): rows in two parts, each read by its plain loader
//                (csr_no_split in csr.cuh), no dependent load. The vector kernel walks the two
//                parts one after the other where rows are longer than its group (more than one
//                step per row), else both in one loop (csr_select).
// Measured on the H100 (ms; cuSPARSE CSR fp64 in brackets): all fp32, banded:1000000:64: words
// 0.382, uniform 0.224 (CSR f32 0.224) [0.313]. Mixed, stencil27:160 (89% fp32, 27 a row, group
// 16): words 0.796, one loop 0.884, parts in turn 0.740 [0.597]; random:4000000:16 (68% fp32, 16 a
// row, group 16): words 1.084, one loop 0.888, parts in turn 1.571 [0.786]. One loop with two
// slots per step (as the plain loaders have) spilled in the loop: 1.041 and 1.723. Mixed rows stay
// slower than cuSPARSE's fp64 with every layout tried.
enum { PBP_UNIFORM = MSP__PBP_UNIFORM, PBP_WORDS = MSP__PBP_WORDS, PBP_SPLIT = MSP__PBP_SPLIT };

extern "C" msp_status msp__cuda_bdmp_pbp_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  int32_t *cols = NULL;
  int64_t *split = NULL;
  const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)A->fmt;
  if (!P) return msp__error(MSP_ERR_INTERNAL, "bdmp-pbp upload (cuda): no host data");
  const int64_t rows = A->rows, words = (A->nnz + MSP__PBP_WORD - 1) / MSP__PBP_WORD;
  const msp_kernel k = msp__cuda_csr_kernel(A);
  const int layout = msp__pbp_layout(P->info.nnz32, P->info.nnz64, k);
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_VAL, P->v64, (size_t)P->info.nnz64 * sizeof(double)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_VAL2, P->v32, (size_t)P->info.nnz32 * sizeof(float)));
  if (layout == PBP_WORDS)
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_META, P->meta, (size_t)words * 2 * sizeof(uint32_t)));
  if (layout == PBP_SPLIT) {
    MSP_TRY(MSP_ALLOC(cols, A->nnz, "BDMP-PBP columns in two parts"));
    MSP_TRY(MSP_ALLOC(split, rows + 1, "BDMP-PBP fp64 entries before each row"));
    split[0] = 0;
    for (int64_t i = 0; i < rows; i++) {
      const int64_t b = P->rowptr[i], e = P->rowptr[i + 1];
      int64_t n64 = 0;
      for (int64_t j = b; j < e; j++) {
        int64_t at;
        n64 += msp__pbp_split(P->meta, j, &at);
      }
      int64_t o64 = b, o32 = b + n64;
      for (int64_t j = b; j < e; j++) {
        int64_t at;
        if (msp__pbp_split(P->meta, j, &at))
          cols[o64++] = P->colind[j];
        else
          cols[o32++] = P->colind[j];
      }
      split[i + 1] = split[i] + n64;
    }
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_META, split, (size_t)(rows + 1) * sizeof(int64_t)));
  }
  MSP_TRY(msp__cuda_csr_structure_upload(ctx, m, rows, A->nnz, P->rowptr,
                                         layout == PBP_SPLIT ? cols : P->colind));
  m->i64[6] = layout;
exit:
  msp__free(cols);
  msp__free(split);
  return st;
}

template <msp_precision P> static loader<P> plain_loader(const void *data) {
  loader<P> l;
  memset(&l, 0, sizeof l);
  l.a.data = (void *)data;
  l.a.prec = P;
  return l;
}

// Every storage precision of x and y, as CSR (the merge-path kernel writes a fixed-point y through
// msp__cuda_spmv_fixed_y).
extern "C" msp_status msp__cuda_bdmp_pbp_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                              msp_vector x, double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  if (A->rows == 0) return MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)A->fmt;
  if (!m || !P) return msp__error(MSP_ERR_INTERNAL, "bdmp-pbp spmv (cuda): no device data");
  const msp_kernel k = msp__cuda_csr_kernel(A);
  if (msp__cuda_csr_via_f64_y(k, y))
    return msp__cuda_spmv_fixed_y(ctx, alpha, A, x, beta, y, msp__cuda_bdmp_pbp_spmv);
  {
    const int layout = (int)m->i64[6];
    const auto v64 = plain_loader<MSP_PRECISION_F64>(m->d[SLOT_VAL]);
    const auto v32 = plain_loader<MSP_PRECISION_F32>(m->d[SLOT_VAL2]);
    pbp_loader words;
    words.meta = (const uint2 *)m->d[SLOT_META];
    words.v32 = (const float *)m->d[SLOT_VAL2];
    words.v64 = (const double *)m->d[SLOT_VAL];
    st = msp__prec_dispatch(x->prec, [&](auto px) {
      constexpr msp_precision PX = decltype(px)::value;
      return msp__ystore_dispatch(y, [&](const auto &ys) {
        if (layout == PBP_SPLIT && (double)A->nnz <= (double)A->rows * (double)m->i64[0]) {
          const csr_select<decltype(v32)> sel = {v32};
          return msp__cuda_csr_launch<decltype(v64), PX>(ctx, k, m, A->rows, v64, x, alpha, beta,
                                                         ys, sel, (const int64_t *)m->d[SLOT_META]);
        }
        if (layout == PBP_SPLIT)
          return msp__cuda_csr_launch<decltype(v64), PX>(ctx, k, m, A->rows, v64, x, alpha, beta,
                                                         ys, v32, (const int64_t *)m->d[SLOT_META]);
        if (layout == PBP_WORDS)
          return msp__cuda_csr_launch<pbp_loader, PX>(ctx, k, m, A->rows, words, x, alpha, beta,
                                                      ys);
        if (P->info.nnz64 > 0)
          return msp__cuda_csr_launch<decltype(v64), PX>(ctx, k, m, A->rows, v64, x, alpha, beta,
                                                         ys);
        return msp__cuda_csr_launch<decltype(v32), PX>(ctx, k, m, A->rows, v32, x, alpha, beta, ys);
      });
    });
  }
  return st;
}

// ---- TCKI --------------------------------------------------------------------------------------
__device__ __forceinline__ int64_t ld_off(const uint32_t *p) {
  return (int64_t)__ldg(p);
}
__device__ __forceinline__ int64_t ld_off(const int64_t *p) {
  return (int64_t)__ldg((const long long *)p);
}

// One warp per chunk (at most 32 tiles). Lane j first loads the metadata of the chunk's tile j,
// so the per-tile loop reads it with shuffles instead of a chain of dependent global loads, and
// the x segment of the next tile is loaded while the current one is computed. For a tile, lane l
// works on in-tile row r = l & 15 with half h = l >> 4: ELL slots k = h, h + 2, ... (the 32 lanes
// read 32 consecutive slots: coalesced, paper Algorithm 4), CSR entries rp[r] + h, + 2, ... (two
// lanes per row, Algorithm 3), COO entries (at most 5: density below 0.02) by the lanes of half
// 0, each picking its row's entries in order. The 16-entry x segment is staged in shared memory
// (zeros past the last column). Padding slots are skipped. A CSR-like segment (bdmp.h) is read
// like a CSR tile with full columns: lane (r, h) takes row r's entries ends[r - 1] + h, + 2, ...
// and gathers x directly (no segment of x to stage, none prefetched). Each lane sums its tiles
// in order and the halves are added at the end (lane r gets lane r + 16's sum): a fixed order,
// so repeated runs give the same bits. x is read through the loader of its precision and y
// written through its store Y (ystore_f64 for an f64 y; a fixed-point y goes through
// msp__cuda_spmv_fixed_y, since a warp finishes 16 rows, not an aligned block of 32).
//
// Measured and not taken (H100, 27 Nov; ms, this kernel first): a half-warp per tile (half h
// taking tiles h, h + 2, ..., lane r row r over all its slots, x gathered directly, no shared
// memory and no synchronisation per tile) was faster on narrow tiles and slower on wide ones and
// on segments: laplace2d:3000 0.407 / 0.370, stencil27:128 0.609 / 0.521, wave 0.050 / 0.043,
// web-NotreDame 0.088 / 0.078, banded:1000000:64 0.200 / 0.312, rmat:21:16 0.584 / 0.656. Both
// paths in one kernel, chosen per chunk, ran no faster than this one (0.410, 0.585, 0.049, 0.088),
// and two kernels over two chunk lists (narrow, other) were slower than either (0.457 on
// laplace2d:3000, 0.071 on wave, 0.130 on web-NotreDame); neither was profiled further.
template <typename OFF, msp_precision PX, class Y>
__global__ void __launch_bounds__(TCKI_THREADS)
    tcki_kernel(int64_t nchunks, int64_t rows, int64_t cols, const int32_t *__restrict__ chunk_br,
                const OFF *__restrict__ chunk_t0, const int32_t *__restrict__ chunk_part,
                const int32_t *__restrict__ tile_col, const uint16_t *__restrict__ tinfo,
                const OFF *__restrict__ eoff, const OFF *__restrict__ voff,
                const uint8_t *__restrict__ idx, const float *__restrict__ val32,
                const double *__restrict__ val64, const loader<PX> x, double alpha, double beta,
                const Y y, double *__restrict__ part) {
  __shared__ double xs_all[TCKI_WARPS][MSP_BDMP_TILE];
  const unsigned full = 0xffffffffu;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t chunk = (int64_t)blockIdx.x * TCKI_WARPS + warp;
  if (chunk >= nchunks) return; // the whole warp leaves together
  double *xs = xs_all[warp];
  const int r = lane & 15, h = lane >> 4;
  const int64_t t0 = ld_off(chunk_t0 + chunk);
  const int nt = (int)(ld_off(chunk_t0 + chunk + 1) - t0); // <= TCKI_CHUNK_TILES = 32
  int my_col = 0, my_n = 0;
  unsigned my_info = 0;
  long long my_e = 0, my_v = 0;
  if (lane < nt) {
    const int64_t t = t0 + lane;
    my_col = __ldg(tile_col + t);
    my_info = __ldg(tinfo + t);
    my_e = ld_off(eoff + t);
    my_n = (int)(ld_off(eoff + t + 1) - my_e);
    my_v = ld_off(voff + t);
  }
  double xn = 0.0; // x segment of the next tile, one entry per lane < 16
  if (nt > 0 && !(__shfl_sync(full, my_info, 0) & MSP__TILE_ROWS)) {
    const int64_t c = (int64_t)__shfl_sync(full, my_col, 0) * MSP_BDMP_TILE + r;
    if (h == 0 && c < cols) xn = x(c);
  }
  double acc = 0.0;
  for (int j = 0; j < nt; j++) {
    const unsigned info = __shfl_sync(full, my_info, j);
    const int64_t eo = __shfl_sync(full, my_e, j);
    const int64_t vo = __shfl_sync(full, my_v, j);
    const int n = __shfl_sync(full, my_n, j);
    __syncwarp();
    if (h == 0) xs[r] = xn;
    __syncwarp();
    xn = 0.0;
    if (j + 1 < nt && !(__shfl_sync(full, my_info, j + 1) & MSP__TILE_ROWS)) { // warp-uniform
      const int64_t c = (int64_t)__shfl_sync(full, my_col, j + 1) * MSP_BDMP_TILE + r;
      if (h == 0 && c < cols) xn = x(c);
    }
    const int fmt = (int)(info & 3u), w = (int)(info >> 8);
    const bool f64 = (info & MSP__TILE_F64) != 0;
    const uint8_t *ix = idx + eo;
    const float *v32 = val32 + vo;
    const double *v64 = val64 + vo;
    if (info & MSP__TILE_ROWS) {
      const uint16_t *ends = (const uint16_t *)(idx + ((eo + 3) & ~(int64_t)3));
      const int32_t *sc = (const int32_t *)(ends + MSP_BDMP_TILE);
      const int q0 = r > 0 ? (int)__ldg(ends + r - 1) : 0, q1 = (int)__ldg(ends + r);
      for (int q = q0 + h; q < q1; q += 2)
        acc += (f64 ? __ldg(v64 + q) : (double)__ldg(v32 + q)) * x(__ldg(sc + q));
      continue;
    }
    if (fmt == MSP__TILE_COO) {
      if (h == 0) {
        for (int e = 0; e < n; e++) {
          const unsigned b = __ldg(ix + e);
          if ((int)(b >> 4) == r)
            acc += (f64 ? __ldg(v64 + e) : (double)__ldg(v32 + e)) * xs[b & 15u];
        }
      }
      continue;
    }
    const int ew = fmt == MSP__TILE_CSR ? 0 : w;
#pragma unroll 4
    for (int k = h; k < ew; k += 2) {
      const int s = k * MSP_BDMP_TILE + r;
      const unsigned b = __ldg(ix + s);
      const double v = f64 ? __ldg(v64 + s) : (double)__ldg(v32 + s);
      if (!(b & MSP__TILE_PAD)) acc += v * xs[b & 15u];
    }
    if (fmt == MSP__TILE_ELL) continue;
    const uint8_t *rp = ix + MSP_BDMP_TILE * ew;
    const uint8_t *cx = rp + MSP_BDMP_TILE + 1;
    const int base = MSP_BDMP_TILE * ew;
    const int q1 = __ldg(rp + r + 1);
    for (int q = __ldg(rp + r) + h; q < q1; q += 2) {
      acc +=
          (f64 ? __ldg(v64 + base + q) : (double)__ldg(v32 + base + q)) * xs[__ldg(cx + q) & 15u];
    }
  }
  acc += __shfl_down_sync(full, acc, 16);
  if (lane >= MSP_BDMP_TILE) return;
  const int cp = __ldg(chunk_part + chunk);
  if (cp >= 0) {
    part[(int64_t)cp * MSP_BDMP_TILE + r] = acc;
  } else {
    const int64_t i = (int64_t)__ldg(chunk_br + chunk) * MSP_BDMP_TILE + r;
    if (i < rows) ystore_row(y, i, alpha, acc, beta);
  }
}

// Rows of block rows split over several chunks: their partial sums in chunk order.
template <class Y>
__global__ void tcki_fixup(int64_t nsplit, int64_t rows, const int64_t *__restrict__ runs,
                           const double *__restrict__ part, double alpha, double beta, const Y y) {
  const int64_t tid = (int64_t)blockIdx.x * FIX_THREADS + threadIdx.x;
  const int64_t q = tid / MSP_BDMP_TILE;
  const int r = (int)(tid % MSP_BDMP_TILE);
  if (q >= nsplit) return;
  const int64_t br = runs[3 * q], p0 = runs[3 * q + 1], np = runs[3 * q + 2];
  const int64_t i = br * MSP_BDMP_TILE + r;
  if (i >= rows) return;
  double s = 0.0;
  for (int64_t k = 0; k < np; k++)
    s += part[(p0 + k) * MSP_BDMP_TILE + r];
  ystore_row(y, i, alpha, s, beta);
}

// Device copy of an int64 host array as OFF (uint32 when it fits, checked by the caller).
static msp_status put_off(msp_context ctx, msp__cuda_matrix *m, int slot, const int64_t *h,
                          int64_t n, int narrow) {
  msp_status st = MSP_SUCCESS;
  uint32_t *tmp = NULL;
  if (!narrow) return msp__cuda_matrix_put(ctx, m, slot, h, (size_t)n * sizeof(int64_t));
  MSP_TRY(MSP_ALLOC(tmp, n > 0 ? n : 1, "TCKI 32-bit offsets"));
  for (int64_t i = 0; i < n; i++)
    tmp[i] = (uint32_t)h[i];
  MSP_TRY(msp__cuda_matrix_put(ctx, m, slot, tmp, (size_t)n * sizeof(uint32_t)));
  // put copies asynchronously from pageable memory: staged before it returns, but wait anyway
  // before freeing (uploads are not on the hot path)
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  msp__free(tmp);
  return st;
}

extern "C" msp_status msp__cuda_bdmp_tcki_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  uint16_t *tinfo = NULL;
  int32_t *chunk_br = NULL, *chunk_part = NULL;
  int64_t *chunk_t0 = NULL, *runs = NULL;
  const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)A->fmt;
  if (!T) return msp__error(MSP_ERR_INTERNAL, "bdmp-tcki upload (cuda): no host data");
  const int64_t nt = T->ntiles;
  int64_t nchunks = 0, nsplit = 0, nparts = 0;
  msp__bdmp_tcki_chunks(T, NULL, NULL, NULL, NULL, &nchunks, &nsplit, &nparts);
  if (nchunks > INT32_MAX || T->nbrows > INT32_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED, "bdmp-tcki upload (cuda): %lld chunks exceed int32",
                      (long long)nchunks);
  const int narrow = T->eoff[nt] <= (int64_t)UINT32_MAX && T->n32 <= (int64_t)UINT32_MAX &&
                     T->n64 <= (int64_t)UINT32_MAX && nt <= (int64_t)UINT32_MAX;
  MSP_TRY(MSP_ALLOC(chunk_br, nchunks > 0 ? nchunks : 1, "TCKI chunk block rows"));
  MSP_TRY(MSP_ALLOC(chunk_part, nchunks > 0 ? nchunks : 1, "TCKI chunk part slots"));
  MSP_TRY(MSP_ALLOC(chunk_t0, nchunks + 1, "TCKI chunk tiles"));
  MSP_TRY(MSP_ALLOC(runs, 3 * nsplit > 0 ? 3 * nsplit : 1, "TCKI split runs"));
  msp__bdmp_tcki_chunks(T, chunk_br, chunk_t0, chunk_part, runs, &nchunks, &nsplit, &nparts);
  MSP_TRY(MSP_ALLOC(tinfo, nt > 0 ? nt : 1, "TCKI tile info"));
  for (int64_t t = 0; t < nt; t++)
    tinfo[t] = (uint16_t)(T->tile_fmt[t] | (T->tile_width[t] << 8));
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 0, chunk_part, (size_t)nchunks * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 1, T->tile_col, (size_t)nt * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 2, tinfo, (size_t)nt * sizeof(uint16_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 3, chunk_br, (size_t)nchunks * sizeof(int32_t)));
  MSP_TRY(put_off(ctx, m, 4, T->eoff, nt + 1, narrow));
  MSP_TRY(put_off(ctx, m, 5, T->voff, nt, narrow));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 6, T->idx, (size_t)T->eoff[nt]));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 7, T->val32, (size_t)T->n32 * sizeof(float)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 8, T->val64, (size_t)T->n64 * sizeof(double)));
  MSP_TRY(put_off(ctx, m, 9, chunk_t0, nchunks + 1, narrow));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 10, runs, (size_t)(3 * nsplit) * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 11, NULL, (size_t)nparts * MSP_BDMP_TILE * sizeof(double)));
  m->i64[0] = nchunks;
  m->i64[1] = nsplit;
  m->i64[2] = narrow ? 4 : 8;
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  msp__free(tinfo);
  msp__free(chunk_br);
  msp__free(chunk_part);
  msp__free(chunk_t0);
  msp__free(runs);
  return st;
}

template <typename OFF, msp_precision PX, class Y>
static msp_status launch_tcki(const msp__cuda_matrix *m, const msp_matrix A, const loader<PX> &x,
                              double alpha, double beta, const Y &y, cudaStream_t s) {
  msp_status st = MSP_SUCCESS;
  const int64_t nchunks = m->i64[0];
  tcki_kernel<OFF, PX, Y><<<msp__cuda_blocks(nchunks, TCKI_WARPS), TCKI_THREADS, 0, s>>>(
      nchunks, A->rows, A->cols, (const int32_t *)m->d[3], (const OFF *)m->d[9],
      (const int32_t *)m->d[0], (const int32_t *)m->d[1], (const uint16_t *)m->d[2],
      (const OFF *)m->d[4], (const OFF *)m->d[5], (const uint8_t *)m->d[6], (const float *)m->d[7],
      (const double *)m->d[8], x, alpha, beta, y, (double *)m->d[11]);
  MSP_CUDA_CHECK_LAUNCH("tcki_kernel");
exit:
  return st;
}

// Every precision of x, and of y (a fixed-point one through msp__cuda_spmv_fixed_y).
extern "C" msp_status msp__cuda_bdmp_tcki_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                               msp_vector x, double beta, msp_vector y) {
  if (A->rows == 0) return MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  if (!m || !A->fmt) return msp__error(MSP_ERR_INTERNAL, "bdmp-tcki spmv (cuda): no device data");
  if (msp_prec_is_fixed(y->prec))
    return msp__cuda_spmv_fixed_y(ctx, alpha, A, x, beta, y, msp__cuda_bdmp_tcki_spmv);
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t nchunks = m->i64[0], nsplit = m->i64[1];
  return msp__prec_dispatch(x->prec, [&](auto px) {
    constexpr msp_precision PX = decltype(px)::value;
    const loader<PX> xl = msp__vector_loader<PX>(x);
    return msp__ystore_dispatch(y, [&](const auto &ys) {
      using Y = typename std::decay<decltype(ys)>::type;
      msp_status st = MSP_SUCCESS;
      if (nchunks > 0) {
        if (m->i64[2] == 4)
          MSP_TRY(launch_tcki<uint32_t>(m, A, xl, alpha, beta, ys, s));
        else
          MSP_TRY(launch_tcki<int64_t>(m, A, xl, alpha, beta, ys, s));
      }
      if (nsplit > 0) {
        tcki_fixup<Y><<<msp__cuda_blocks(nsplit * MSP_BDMP_TILE, FIX_THREADS), FIX_THREADS, 0, s>>>(
            nsplit, A->rows, (const int64_t *)m->d[10], (const double *)m->d[11], alpha, beta, ys);
        MSP_CUDA_CHECK_LAUNCH("tcki_fixup");
      }
    exit:
      return st;
    });
  });
}

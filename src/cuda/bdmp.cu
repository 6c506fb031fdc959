// bdmp.cu: CUDA BDMP-PBP (the CSR kernels of csr.cuh over a loader of two value streams) and
// BDMP-TCKI (a half-warp per chunk of a block row's tiles, read as a row slab).
//
// PBP device arrays: the CSR slots of csr.cu (row pointers, columns, merge-path plan; vector group
// size in i64[0]), with the values of the layout of bdmp.h: SLOT_VAL its fp64 values, SLOT_VAL2
// its fp32 values, SLOT_META its precision words (uint32 pairs: mask, fp64 count before) or, rows
// in two parts, the fp64 entries before each row; i64[6] which layout (msp__cuda_bdmp_pbp_upload).
// TCKI: the tile part (a half-warp per chunk) and the CSR-like part (PBP's CSR kernels) of bdmp.h,
// slots below.
#include "csr.cuh"

#include "bdmp.h"

#include <stddef.h>
#include <string.h>

#define FIX_THREADS 256

// ---- PBP ---------------------------------------------------------------------------------------
// Value j of a PBP matrix (bdmp.h): its word (the precision bits of 32 consecutive entries and the
// fp64 entries before them: one 8-byte read through the read-only cache serves 32 entries), then
// the value from its stream, widened. PBP is CSR with this loader: the tuned kernels of csr.cuh
// (scalar, vector, merge-path; chosen by the CSR rule) read each row once, whatever mix of the
// two precisions it holds, and write y once (Zhao et al., "Block-wise dynamic mixed-precision
// SpMV", 3.2.1 runs two sub-matrices and adds them). Compile-time tuning: that of f32 values.
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
// A uniform matrix runs as fast as plain CSR of its precision, where the words cost it their
// dependent load; on mixed rows the parts in turn win where a row takes several steps and one
// loop where it takes one. One loop with two slots per step (as the plain loaders have) spilled,
// and a group of 32 for a row in one step was slower. Mixed rows stay slower than cuSPARSE's fp64
// CSR with every layout tried.
enum { PBP_UNIFORM = MSP__PBP_UNIFORM, PBP_WORDS = MSP__PBP_WORDS, PBP_SPLIT = MSP__PBP_SPLIT };

// A PBP record P over `rows` rows (nnz entries) into m's CSR slots, in the device layout of
// kernel k (BDMP-PBP itself, and TCKI's CSR-like part): i64[6] the layout.
static msp_status pbp_put(msp_context ctx, msp__cuda_matrix *m, int64_t rows, int64_t nnz,
                          const msp__bdmp_pbp *P, msp_kernel k) {
  msp_status st = MSP_SUCCESS;
  int32_t *cols = NULL;
  int64_t *split = NULL;
  const int64_t words = (nnz + MSP__PBP_WORD - 1) / MSP__PBP_WORD;
  const int layout = msp__pbp_layout(P->info.nnz32, P->info.nnz64, k);
  MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_VAL, P->v64, (size_t)P->info.nnz64 * sizeof(double)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_VAL2, P->v32, (size_t)P->info.nnz32 * sizeof(float)));
  if (layout == PBP_WORDS)
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_META, P->meta, (size_t)words * 2 * sizeof(uint32_t)));
  if (layout == PBP_SPLIT) {
    MSP_TRY(MSP_ALLOC(cols, nnz, "BDMP-PBP columns in two parts"));
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
  MSP_TRY(msp__cuda_csr_structure_upload(ctx, m, rows, nnz, P->rowptr,
                                         layout == PBP_SPLIT ? cols : P->colind));
  m->i64[6] = layout;
  // put copies asynchronously from pageable memory: wait before the host arrays are freed
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  msp__free(cols);
  msp__free(split);
  return st;
}

extern "C" msp_status msp__cuda_bdmp_pbp_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)A->fmt;
  if (!P) return msp__error(MSP_ERR_INTERNAL, "bdmp-pbp upload (cuda): no host data");
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(pbp_put(ctx, m, A->rows, A->nnz, P, msp__cuda_csr_kernel(A)));
exit:
  return st;
}

template <msp_precision P> static loader<P> plain_loader(const void *data) {
  loader<P> l;
  memset(&l, 0, sizeof l);
  l.a.data = (void *)data;
  l.a.prec = P;
  return l;
}

// The product over the PBP slots of m (pbp_put) with kernel k, nnz entries over rows rows; y's
// store ys (not one that kernel k must write through an f64 y: msp__cuda_csr_via_f64_y).
template <msp_precision PX, class Y>
static msp_status pbp_launch(msp_context ctx, msp_kernel k, const msp__cuda_matrix *m, int64_t rows,
                             int64_t nnz, msp_vector x, double alpha, double beta, const Y &ys) {
  const int layout = (int)m->i64[6];
  const auto v64 = plain_loader<MSP_PRECISION_F64>(m->d[SLOT_VAL]);
  const auto v32 = plain_loader<MSP_PRECISION_F32>(m->d[SLOT_VAL2]);
  pbp_loader words;
  words.meta = (const uint2 *)m->d[SLOT_META];
  words.v32 = (const float *)m->d[SLOT_VAL2];
  words.v64 = (const double *)m->d[SLOT_VAL];
  if (layout == PBP_SPLIT && (double)nnz <= (double)rows * (double)m->i64[0]) {
    const csr_select<decltype(v32)> sel = {v32};
    return msp__cuda_csr_launch<decltype(v64), PX>(ctx, k, m, rows, v64, x, alpha, beta, ys, sel,
                                                   (const int64_t *)m->d[SLOT_META]);
  }
  if (layout == PBP_SPLIT)
    return msp__cuda_csr_launch<decltype(v64), PX>(ctx, k, m, rows, v64, x, alpha, beta, ys, v32,
                                                   (const int64_t *)m->d[SLOT_META]);
  if (layout == PBP_WORDS)
    return msp__cuda_csr_launch<pbp_loader, PX>(ctx, k, m, rows, words, x, alpha, beta, ys);
  if (m->bytes[SLOT_VAL] > 0) // one precision: fp64 (also where bdmp_convert.cu built m)
    return msp__cuda_csr_launch<decltype(v64), PX>(ctx, k, m, rows, v64, x, alpha, beta, ys);
  return msp__cuda_csr_launch<decltype(v32), PX>(ctx, k, m, rows, v32, x, alpha, beta, ys);
}

// Every storage precision of x and y, as CSR (the merge-path kernel writes a fixed-point y through
// msp__cuda_spmv_fixed_y); the kernels are compiled for the x of values in f64
// (msp__pair_compiled), other x precisions come as an f64 copy (msp__cuda_spmv_x).
extern "C" msp_status msp__cuda_bdmp_pbp_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                              msp_vector x, double beta, msp_vector y) {
  if (A->rows == 0) return MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  if (!m || !A->fmt) return msp__error(MSP_ERR_INTERNAL, "bdmp-pbp spmv (cuda): no device data");
  const msp_kernel k = msp__cuda_csr_kernel(A);
  if (msp__cuda_csr_via_f64_y(k, y))
    return msp__cuda_spmv_fixed_y(ctx, alpha, A, x, beta, y, msp__cuda_bdmp_pbp_spmv);
  return msp__x_dispatch<MSP_PRECISION_F64>(x->prec, [&](auto px) {
    constexpr msp_precision PX = decltype(px)::value;
    return msp__ystore_dispatch(y, [&](const auto &ys) {
      return pbp_launch<PX>(ctx, k, m, A->rows, A->nnz, x, alpha, beta, ys);
    });
  });
}

// ---- TCKI --------------------------------------------------------------------------------------
// The tile part (bdmp.h, msp__bdmp_tcki_device): a half-warp per chunk, lane r for row r of the
// block row. The lanes first read the chunk's 40-byte record (a word each) and lane j the block
// column of the chunk's tile j. Lane r then reads slots k * 16 + r (the 16 lanes read 16
// consecutive index bytes and values: coalesced), takes the tile's block column from lane (index
// byte >> 4) by a shuffle and gathers x at block column * 16 + (index byte & 15) through the
// read-only cache; padding is skipped. The loads of a row's slots do not depend on each other (no
// per-tile loop, no staging, no synchronisation), so a lane has several in flight. Each lane sums
// its row's fp64 slot columns, then its fp32 ones, in order: a fixed order, so repeated runs give
// the same bits. x is read through the loader of its precision and y written through its store
// Y (ystore_f64 for an f64 y; a fixed-point y goes through msp__cuda_spmv_fixed_y, since a
// half-warp finishes 16 rows, not an aligned block of 32).
//
// Replaced: a warp per chunk of up to 32 tiles walked the tiles one after the other, in each
// tile's own format (COO, ELL, CSR, HYB), with the tile's x segment staged in shared memory, and
// a CSR-like block row's segments two lanes per row: a chain of dependent loads and two warp
// synchronisations per tile, on tiles of 16-80 entries, slower than cuSPARSE's fp64 CSR on most
// matrices. A half-warp per tile (x gathered, no staging) was faster on narrow tiles and slower
// on wide ones. The row slab first read the CSR-like segments a lane per row; they now run on
// PBP's kernels. (The ratios to cuSPARSE: docs/design.md, "Kernel choices and what was
// measured".)
//
// Device slots: the CSR-like part in the CSR slots of csr.cuh (pbp_put; none without CSR-like
// block rows), the tile part from MSP__TCKI_SLOT: chunks msp__tcki_chunk[nchunks], tcol
// int32[ntcol], runs int64[3 * nsplit], idx uint8[nidx], val32 float[n32], val64 double[n64], part
// double[nparts * 16]; i64[8] nchunks, i64[9] nsplit, i64[10] 1 when there is a CSR-like part.
#define TCKI_THREADS 256
#define TCKI_CHUNKS_PER_BLOCK (TCKI_THREADS / MSP_BDMP_TILE)
static_assert(MSP__TCKI_SLOT + 7 <= MSP__CUDA_MAX_ARRAYS, "TCKI's slots");
static_assert(sizeof(msp__tcki_chunk) == 40 && offsetof(msp__tcki_chunk, part) == 4 &&
                  offsetof(msp__tcki_chunk, first) == 8 &&
                  offsetof(msp__tcki_chunk, packed) == 12 &&
                  offsetof(msp__tcki_chunk, ioff) == 16 &&
                  offsetof(msp__tcki_chunk, v64off) == 24 &&
                  offsetof(msp__tcki_chunk, v32off) == 32,
              "the kernel reads a chunk record as 10 words");

template <msp_precision PX, class Y>
__global__ void __launch_bounds__(TCKI_THREADS)
    tcki_kernel(int64_t nchunks, int64_t rows, const msp__tcki_chunk *__restrict__ chunks,
                const int32_t *__restrict__ tcol, const uint8_t *__restrict__ idx,
                const float *__restrict__ val32, const double *__restrict__ val64,
                const loader<PX> x, double alpha, double beta, const Y y,
                double *__restrict__ part) {
  const int lane = threadIdx.x & 31, r = lane & 15, base = lane & 16;
  const unsigned hm = 0xffffu << base; // this half-warp
  const int64_t chunk = ((int64_t)blockIdx.x * TCKI_THREADS + threadIdx.x) / MSP_BDMP_TILE;
  if (chunk >= nchunks) return; // the whole half-warp leaves together
  const uint32_t word = r < 10 ? __ldg((const uint32_t *)(chunks + chunk) + r) : 0u;
  const auto w = [&](int k) { return __shfl_sync(hm, word, base + k); };
  const auto w64 = [&](int k) { return (int64_t)((uint64_t)w(k) | (uint64_t)w(k + 1) << 32); };
  const int br = (int)w(0), pslot = (int)w(1), first = (int)w(2);
  const uint32_t packed = w(3);
  const int n = (int)(packed & 0xffu), n64 = (int)((packed >> 8) & 0xffu),
            n32 = (int)((packed >> 16) & 0xffu);
  const int64_t ioff = w64(4), v64off = w64(6), v32off = w64(8);
  double acc = 0.0;
  // The top byte of packed is 0 (msp__bdmp_tcki_device writes no other). Testing it before the
  // slab costs nothing and makes the kernel faster (the compiler schedules the loads
  // differently), more so than unrolling by 8 instead.
  if ((packed >> 24) == 0) {
    const int tc = r < n ? __ldg(tcol + first + r) : 0;
    const uint8_t *ix = idx + ioff + r;
    const double *a64 = val64 + v64off + r;
#pragma unroll 4
    for (int k = 0; k < n64; k++) {
      const unsigned b = __ldg(ix + k * MSP_BDMP_TILE);
      const int64_t c = (int64_t)__shfl_sync(hm, tc, base + (int)(b >> 4));
      if (b != MSP__TCKI_PAD)
        acc += __ldg(a64 + k * MSP_BDMP_TILE) * x(c * MSP_BDMP_TILE + (b & 15u));
    }
    ix += n64 * MSP_BDMP_TILE;
    const float *a32 = val32 + v32off + r;
#pragma unroll 4
    for (int k = 0; k < n32; k++) {
      const unsigned b = __ldg(ix + k * MSP_BDMP_TILE);
      const int64_t c = (int64_t)__shfl_sync(hm, tc, base + (int)(b >> 4));
      if (b != MSP__TCKI_PAD)
        acc += (double)__ldg(a32 + k * MSP_BDMP_TILE) * x(c * MSP_BDMP_TILE + (b & 15u));
    }
  }
  if (pslot >= 0) {
    part[(int64_t)pslot * MSP_BDMP_TILE + r] = acc;
  } else {
    const int64_t i = (int64_t)br * MSP_BDMP_TILE + r;
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

extern "C" msp_status msp__cuda_bdmp_tcki_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  msp__tcki_dev h;
  msp__tcki_dev_size z;
  msp__bdmp_pbp P;
  memset(&h, 0, sizeof h);
  memset(&P, 0, sizeof P);
  const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)A->fmt;
  if (!T) return msp__error(MSP_ERR_INTERNAL, "bdmp-tcki upload (cuda): no host data");
  z = T->dev;
  if (z.nchunks > INT32_MAX || z.ntcol > INT32_MAX || T->nbrows > INT32_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "bdmp-tcki upload (cuda): %lld chunks or %lld block rows exceed int32",
                      (long long)z.nchunks, (long long)T->nbrows);
  MSP_TRY(MSP_ALLOC(h.chunk, z.nchunks > 0 ? z.nchunks : 1, "TCKI chunk records"));
  MSP_TRY(MSP_ALLOC(h.tcol, z.ntcol > 0 ? z.ntcol : 1, "TCKI tile columns"));
  MSP_TRY(MSP_ALLOC(h.runs, z.nsplit > 0 ? 3 * z.nsplit : 1, "TCKI split runs"));
  MSP_TRY(MSP_ALLOC(h.idx, z.nidx > 0 ? z.nidx : 1, "TCKI index bytes"));
  MSP_TRY(MSP_ALLOC(h.val32, z.n32 > 0 ? z.n32 : 1, "TCKI fp32 values"));
  MSP_TRY(MSP_ALLOC(h.val64, z.n64 > 0 ? z.n64 : 1, "TCKI fp64 values"));
  msp__bdmp_tcki_device(T, &z, &h);
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, MSP__TCKI_SLOT, h.chunk,
                               (size_t)z.nchunks * sizeof(msp__tcki_chunk)));
  MSP_TRY(
      msp__cuda_matrix_put(ctx, m, MSP__TCKI_SLOT + 1, h.tcol, (size_t)z.ntcol * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, MSP__TCKI_SLOT + 2, h.runs,
                               (size_t)(3 * z.nsplit) * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, MSP__TCKI_SLOT + 3, h.idx, (size_t)z.nidx));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, MSP__TCKI_SLOT + 4, h.val32, (size_t)z.n32 * sizeof(float)));
  MSP_TRY(
      msp__cuda_matrix_put(ctx, m, MSP__TCKI_SLOT + 5, h.val64, (size_t)z.n64 * sizeof(double)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, MSP__TCKI_SLOT + 6, NULL,
                               (size_t)z.nparts * MSP_BDMP_TILE * sizeof(double)));
  m->i64[8] = z.nchunks;
  m->i64[9] = z.nsplit;
  m->i64[10] = z.rows_brows > 0;
  if (z.rows_brows > 0) {
    MSP_TRY(msp__bdmp_tcki_rows(T, A->rows, &P));
    MSP_TRY(pbp_put(ctx, m, A->rows, P.rowptr[A->rows], &P, msp__cuda_csr_kernel(A)));
  }
  // put copies asynchronously from pageable memory: wait before the host arrays are freed
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  msp__bdmp_pbp_clear(&P);
  msp__free(h.chunk);
  msp__free(h.tcol);
  msp__free(h.runs);
  msp__free(h.idx);
  msp__free(h.val32);
  msp__free(h.val64);
  return st;
}

// Every precision of x and y. The CSR-like part first (alpha, beta), then the tile part (beta 1
// where the CSR-like part has written every row: alpha * s + 1 * (beta * y_i) is the one-pass
// alpha * s + beta * y_i in f64). A y in another precision, where both parts exist or where the
// CSR kernel or the half-warps cannot store it themselves, goes through msp__cuda_spmv_fixed_y
// (the product into an f64 work vector, then y = t + beta * y), so that y is rounded once.
extern "C" msp_status msp__cuda_bdmp_tcki_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                               msp_vector x, double beta, msp_vector y) {
  if (A->rows == 0) return MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  if (!m || !A->fmt) return msp__error(MSP_ERR_INTERNAL, "bdmp-tcki spmv (cuda): no device data");
  const int64_t nchunks = m->i64[8], nsplit = m->i64[9];
  const bool rows_part = m->i64[10] != 0;
  const msp_kernel k = rows_part ? msp__cuda_csr_kernel(A) : MSP_KERNEL_SCALAR; // (no CSR part)
  if (msp_prec_is_fixed(y->prec) ||
      (y->prec != MSP_PRECISION_F64 && rows_part && (nchunks > 0 || msp__cuda_csr_via_f64_y(k, y))))
    return msp__cuda_spmv_fixed_y(ctx, alpha, A, x, beta, y, msp__cuda_bdmp_tcki_spmv);
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const double tbeta = rows_part ? 1.0 : beta;
  return msp__x_dispatch<MSP_PRECISION_F64>(x->prec, [&](auto px) {
    constexpr msp_precision PX = decltype(px)::value;
    const loader<PX> xl = msp__vector_loader<PX>(x);
    return msp__ystore_dispatch(y, [&](const auto &ys) {
      using Y = typename std::decay<decltype(ys)>::type;
      msp_status st = MSP_SUCCESS;
      if (rows_part) // its entries: its columns
        MSP_TRY(pbp_launch<PX>(ctx, k, m, A->rows,
                               (int64_t)(m->bytes[SLOT_COLIND] / sizeof(int32_t)), x, alpha, beta,
                               ys));
      if (nchunks > 0) {
        tcki_kernel<PX, Y>
            <<<msp__cuda_blocks(nchunks, TCKI_CHUNKS_PER_BLOCK), TCKI_THREADS, 0, s>>>(
                nchunks, A->rows, (const msp__tcki_chunk *)m->d[MSP__TCKI_SLOT],
                (const int32_t *)m->d[MSP__TCKI_SLOT + 1],
                (const uint8_t *)m->d[MSP__TCKI_SLOT + 3], (const float *)m->d[MSP__TCKI_SLOT + 4],
                (const double *)m->d[MSP__TCKI_SLOT + 5], xl, alpha, tbeta, ys,
                (double *)m->d[MSP__TCKI_SLOT + 6]);
        MSP_CUDA_CHECK_LAUNCH("tcki_kernel");
      }
      if (nsplit > 0) {
        tcki_fixup<Y><<<msp__cuda_blocks(nsplit * MSP_BDMP_TILE, FIX_THREADS), FIX_THREADS, 0, s>>>(
            nsplit, A->rows, (const int64_t *)m->d[MSP__TCKI_SLOT + 2],
            (const double *)m->d[MSP__TCKI_SLOT + 6], alpha, tbeta, ys);
        MSP_CUDA_CHECK_LAUNCH("tcki_fixup");
      }
    exit:
      return st;
    });
  });
}

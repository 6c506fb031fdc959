// csr.cu: CSR on the GPU: upload, and the scalar, vector and merge-path kernels for y = aAx + by.
//
// Device arrays of a CSR matrix (msp__cuda_matrix slots):
//   d[0] rowptr   int64[rows + 1]
//   d[1] colind   int32[nnz]
//   d[2] val      the values as stored: double[nnz] for f64 (A->val); otherwise the encoded
//                 array A->pval->data (src/common/precision.h layout, msp__prec_bytes each)
//   d[3] tile_row int64[tiles + 1]: merge-path row coordinate where each tile starts (and ends)
//   d[4] tile_nz  int64[tiles + 1]: merge-path nonzero coordinate where each tile starts
//   d[5] carry    double[tiles]: each tile's partial sum of the row it leaves unfinished
//   d[6] runs     int64[3 * nruns]: fix-up runs of at most FIXUP_LONG tiles (first tile, tile
//                 count, row): rows that continue across tiles, see csr_merge_fixup
//   d[7] scales   double[nscales]: fixed-point scales of the values (fx32, fx16 only)
//   d[8] long     int64[3 * nlong]: the runs of more than FIXUP_LONG tiles (very long rows)
//   d[9]  tile_run int32[tiles]: fused fix-up only: the run whose row tile k's carry belongs to,
//                 or -1 (see csr_merge_kernel's last-block epilogue)
//   d[10] run_row  int64[runs]: fused fix-up only: the row of each run
//   d[11] counter  unsigned[1]: fused fix-up only: blocks done in the current launch (0 between)
//   i64[0] vector group size G, i64[1] tiles, i64[2] nruns, i64[3] scale_shift, i64[4] bank_shift,
//   i64[5] nlong, i64[6] variant (MSP_CSR_VARIANT, see csr_variant), i64[7] fused run count (> 0:
//   the merge kernel applies the carries itself, no fix-up launches)
// The kernels are templates over a loader (value index -> double): one instantiation per storage
// precision, reading through the accessors of src/common/precision.h; arithmetic is fp64.
// Everything the merge-path kernel needs (tile coordinates, fix-up plan, carry scratch) is made
// here, once, so a product only enqueues kernels: no allocation, no host synchronisation.
// Variants (MSP_CSR_VARIANT, read once at upload, for benchmark A/B only): 1, the default, runs
// csr_vector2_kernel and, for at most MERGE_FUSE_TILES tiles, the merge path in one launch (the
// last block applies the carries); 0 runs csr_vector_kernel and the separate fix-up launches.
// Scalar is the same in both.
#include "cuda_internal.cuh"
#include "precision.h"

#include <stdlib.h>
#include <string.h>

#define SCALAR_THREADS 256
#define VECTOR_THREADS 256
#define VECTOR_ROWS 4 // rows a vector group works on at once
// 4 blocks of 256 per SM: the compiler keeps the vector kernels at 64 registers without spills
// (-Xptxas -v, every precision); 6 or 8 blocks would spill.
#define VECTOR_MIN_BLOCKS 4
// Merge path (Merrill and Garland, "Merge-based parallel sparse matrix-vector multiplication",
// SC16): a tile of MERGE_THREADS * MERGE_IPT items of the merged list (row ends + nonzeros) per
// block, MERGE_IPT consecutive items per thread, so every block and thread does the same work
// whatever the row lengths (a row of 10^6 nonzeros next to 10^6 empty rows included).
#define MERGE_THREADS 128
#define MERGE_IPT 8
#define MERGE_TILE (MERGE_THREADS * MERGE_IPT)
// 8 blocks (at most 64 registers): without it ptxas chose 32 registers and spilled for cpms4.
#define MERGE_MIN_BLOCKS 8
#define FIXUP_THREADS 128
// Runs of more than FIXUP_LONG tiles (rows longer than about FIXUP_LONG * MERGE_TILE items) are
// summed by a block each rather than by one thread walking them.
#define FIXUP_LONG 32

enum {
  SLOT_ROWPTR,
  SLOT_COLIND,
  SLOT_VAL,
  SLOT_TILE_ROW,
  SLOT_TILE_NZ,
  SLOT_CARRY,
  SLOT_RUNS,
  SLOT_SCALES,
  SLOT_LONG_RUNS,
  SLOT_TILE_RUN,
  SLOT_RUN_ROW,
  SLOT_COUNTER
};

// Value loaders: stored value j as a double. f64 and f32 read through the read-only cache; the
// other precisions decode with the shared accessor, bit for bit as the CPU backend does.
// stream(j) is the same value read with an evict-first hint (ld.global.cs), for kernels that read
// each value once: it leaves L2 to x (the 32 MB x of a 4M-row matrix fits H100's 50 MB L2 only if
// the streamed columns and values do not push it out).
template <msp_precision P> struct loader {
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const { return msp_acc_load_p(P, &a, j); }
  __device__ __forceinline__ double stream(int64_t j) const { return msp_acc_load_p(P, &a, j); }
};
template <> struct loader<MSP_PRECISION_F64> {
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const {
    return __ldg((const double *)a.data + j);
  }
  __device__ __forceinline__ double stream(int64_t j) const {
    return __ldcs((const double *)a.data + j);
  }
};
template <> struct loader<MSP_PRECISION_F32> {
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const {
    return (double)__ldg((const float *)a.data + j);
  }
  __device__ __forceinline__ double stream(int64_t j) const {
    return (double)__ldcs((const float *)a.data + j);
  }
};

// y[row] = alpha * s + beta * y[row]; y is not read when beta == 0 (NaN in y stays out).
__device__ __forceinline__ void store_row(double *y, int64_t row, double alpha, double s,
                                          double beta) {
  y[row] = beta == 0.0 ? alpha * s : alpha * s + beta * y[row];
}

// ---- scalar: one thread per row ----------------------------------------------------------------
template <typename L>
__global__ void __launch_bounds__(SCALAR_THREADS)
    csr_scalar_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                      const int32_t *__restrict__ colind, const L val, const double *__restrict__ x,
                      double alpha, double beta, double *__restrict__ y) {
  const int64_t row = (int64_t)blockIdx.x * SCALAR_THREADS + threadIdx.x;
  if (row >= rows) return;
  const int64_t end = __ldg(rowptr + row + 1);
  double s = 0.0;
#pragma unroll 4
  for (int64_t j = __ldg(rowptr + row); j < end; j++)
    s += val(j) * __ldg(x + __ldg(colind + j));
  store_row(y, row, alpha, s, beta);
}

// ---- vector: a group of G lanes per row (G divides 32) -----------------------------------------
// Each group works on VECTOR_ROWS rows at once, each row still summed by the G lanes in
// lane-strided order: the loads of the rows are issued together, so a warp has several rows'
// bytes in flight instead of one (a short row alone leaves a warp waiting on three dependent
// loads: row pointers, columns, x). A warp covers GPW * VECTOR_ROWS consecutive rows, its GPW =
// 32 / G groups interleaved (group q takes rows q, q + GPW, ...), so that each load instruction
// of the warp reads GPW consecutive rows: contiguous memory. The per-row order is fixed:
// deterministic.
template <typename L, int G>
__global__ void __launch_bounds__(VECTOR_THREADS, VECTOR_MIN_BLOCKS)
    csr_vector_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                      const int32_t *__restrict__ colind, const L val, const double *__restrict__ x,
                      double alpha, double beta, double *__restrict__ y) {
  constexpr int GPW = 32 / G;
  const int64_t warp_id = ((int64_t)blockIdx.x * VECTOR_THREADS + threadIdx.x) / 32;
  const int lane = threadIdx.x & (G - 1);
  const int64_t base = warp_id * (GPW * VECTOR_ROWS) + (threadIdx.x & 31) / G;
  // Groups leave together (the same rows for all lanes), so the shuffles name only the group's
  // own lanes.
  if (base >= rows) return;
  const unsigned mask =
      G == 32 ? 0xffffffffu : (((1u << G) - 1u) << ((threadIdx.x & 31) & ~(G - 1)));
  int64_t b[VECTOR_ROWS], e[VECTOR_ROWS];
#pragma unroll
  for (int r = 0; r < VECTOR_ROWS; r++) {
    const int64_t row = base + r * GPW;
    b[r] = row < rows ? __ldg(rowptr + row) : 0;
    e[r] = row < rows ? __ldg(rowptr + row + 1) : 0;
  }
  int64_t longest = 0;
#pragma unroll
  for (int r = 0; r < VECTOR_ROWS; r++)
    longest = e[r] - b[r] > longest ? e[r] - b[r] : longest;
  double s[VECTOR_ROWS];
#pragma unroll
  for (int r = 0; r < VECTOR_ROWS; r++)
    s[r] = 0.0;
  for (int64_t k = lane; k < longest; k += G) {
#pragma unroll
    for (int r = 0; r < VECTOR_ROWS; r++) {
      const int64_t j = b[r] + k;
      if (j < e[r]) s[r] += val(j) * __ldg(x + __ldg(colind + j));
    }
  }
  // Fixed butterfly: the same bits on every run (addition is commutative, so all lanes agree).
#pragma unroll
  for (int r = 0; r < VECTOR_ROWS; r++) {
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1)
      s[r] += __shfl_xor_sync(mask, s[r], off);
  }
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < VECTOR_ROWS; r++)
      if (base + r * GPW < rows) store_row(y, base + r * GPW, alpha, s[r], beta);
  }
}

// ---- vector, variant 1 (default; MSP_CSR_VARIANT=0 selects the kernel above) -------------------
// The same layout of groups and rows, with three changes meant to keep more bytes in flight:
//  - G is the largest power of two <= the mean row length (vector_group), not the smallest >=:
//    twice the rows per warp for the same lane use (a row of 27 on 16 lanes fills 27 of 32
//    slots, as it does on 32 lanes);
//  - each step issues VECTOR2_UNROLL slots per lane and row (k, k + G) before adding, so a lane
//    has VECTOR_ROWS * VECTOR2_UNROLL independent loads in flight (f64 and f32: a row of up to 2G
//    is one step);
//  - columns and values are streamed (evict-first) so that x stays in L2.
// Each lane still adds its slots in the order k, k + G, k + 2G, ...; then the same fixed
// butterfly: deterministic.
// Slots per lane and row and step: 2 for f64 and f32; the decoding loaders of the other
// precisions need the registers (2 spills there under the 64-register cap, -Xptxas -v).
template <typename L> struct vector2_unroll { static constexpr int value = 1; };
template <> struct vector2_unroll<loader<MSP_PRECISION_F64>> { static constexpr int value = 2; };
template <> struct vector2_unroll<loader<MSP_PRECISION_F32>> { static constexpr int value = 2; };
template <typename L, int G>
__global__ void __launch_bounds__(VECTOR_THREADS, VECTOR_MIN_BLOCKS)
    csr_vector2_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                       const int32_t *__restrict__ colind, const L val,
                       const double *__restrict__ x, double alpha, double beta,
                       double *__restrict__ y) {
  constexpr int GPW = 32 / G, VECTOR2_UNROLL = vector2_unroll<L>::value;
  const int64_t warp_id = ((int64_t)blockIdx.x * VECTOR_THREADS + threadIdx.x) / 32;
  const int lane = threadIdx.x & (G - 1);
  const int64_t base = warp_id * (GPW * VECTOR_ROWS) + (threadIdx.x & 31) / G;
  if (base >= rows) return; // the whole group leaves (same rows for all its lanes)
  const unsigned mask =
      G == 32 ? 0xffffffffu : (((1u << G) - 1u) << ((threadIdx.x & 31) & ~(G - 1)));
  int64_t b[VECTOR_ROWS], len[VECTOR_ROWS];
#pragma unroll
  for (int r = 0; r < VECTOR_ROWS; r++) {
    const int64_t row = base + r * GPW;
    b[r] = row < rows ? __ldg(rowptr + row) : 0;
    len[r] = row < rows ? __ldg(rowptr + row + 1) - b[r] : 0;
  }
  int64_t longest = 0;
#pragma unroll
  for (int r = 0; r < VECTOR_ROWS; r++)
    longest = len[r] > longest ? len[r] : longest;
  double s[VECTOR_ROWS];
#pragma unroll
  for (int r = 0; r < VECTOR_ROWS; r++)
    s[r] = 0.0;
  for (int64_t k = lane; k < longest; k += G * VECTOR2_UNROLL) {
    if constexpr (VECTOR2_UNROLL == 1) { // as csr_vector_kernel (buffered, it spills)
#pragma unroll
      for (int r = 0; r < VECTOR_ROWS; r++)
        if (k < len[r]) s[r] += val.stream(b[r] + k) * __ldg(x + __ldcs(colind + b[r] + k));
    } else {
      double p[VECTOR_ROWS][VECTOR2_UNROLL];
      // All loads of the step first (predicated: no load past a row's end), then the sums.
#pragma unroll
      for (int r = 0; r < VECTOR_ROWS; r++) {
#pragma unroll
        for (int u = 0; u < VECTOR2_UNROLL; u++) {
          const int64_t kk = k + u * G;
          p[r][u] =
              kk < len[r] ? val.stream(b[r] + kk) * __ldg(x + __ldcs(colind + b[r] + kk)) : 0.0;
        }
      }
#pragma unroll
      for (int r = 0; r < VECTOR_ROWS; r++) {
#pragma unroll
        for (int u = 0; u < VECTOR2_UNROLL; u++)
          if (k + u * G < len[r]) s[r] += p[r][u];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < VECTOR_ROWS; r++) {
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1)
      s[r] += __shfl_xor_sync(mask, s[r], off);
  }
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < VECTOR_ROWS; r++)
      if (base + r * GPW < rows) store_row(y, base + r * GPW, alpha, s[r], beta);
  }
}

// ---- merge path --------------------------------------------------------------------------------
// Shared arrays are padded by one slot per MERGE_IPT entries: a thread walks MERGE_IPT
// consecutive entries, so unpadded, the lanes of a warp would hit the same banks.
__device__ __forceinline__ int pad(int k) {
  return k + k / MERGE_IPT;
}

// Fused fix-up (variant 1, at most MERGE_FUSE_TILES tiles): the last block of the launch to finish
// adds the carries to their rows, so a product is one launch instead of two or three (a launch
// costs a few microseconds, a large share of a small product). Every block makes its y and carry
// stores visible (__threadfence) before taking a ticket from the integer counter; the block with
// the last ticket fences again, reads all carries from L2 (__ldcg: never a stale L1 line), and
// resets the counter for the next launch. The carries of a run (tiles of one row, contiguous) are
// summed by a segmented reduction in a fixed order: contiguous chunks per thread, then a scan
// over the threads as in the main kernel. No floating-point atomics: deterministic.
#define MERGE_FUSE_TILES MERGE_TILE // the carries and run ids fit in s_prod and s_end
__device__ __forceinline__ void merge_fixup_last(unsigned *counter, const int32_t *tile_run,
                                                 const int64_t *run_row, const double *carry,
                                                 double alpha, double *y, int *s_key, double *s_val,
                                                 unsigned *s_ticket) {
  const int t = threadIdx.x, T = (int)gridDim.x;
  __threadfence(); // this thread's y stores and carry, device-wide, before the ticket
  __syncthreads(); // s_end / s_prod are free again after this
  if (t == 0) *s_ticket = atomicAdd(counter, 1u);
  __syncthreads();
  if (*s_ticket != (unsigned)T - 1u) return; // block-uniform
  __threadfence(); // acquire: the other blocks' stores are visible from here on
  for (int k = t; k < T; k += MERGE_THREADS) {
    s_key[pad(k)] = __ldg(tile_run + k);
    s_val[pad(k)] = __ldcg(carry + k);
  }
  __syncthreads();
  const int C = (T + MERGE_THREADS - 1) / MERGE_THREADS; // <= MERGE_IPT
  const int a = t * C < T ? t * C : T, e = a + C < T ? a + C : T;
  // This thread's chunk [a, e): the first segment (may continue earlier threads' runs), inner
  // segments (complete: applied here), the trailing one (scanned over the threads).
  int cur = -1, fk = -1;
  bool first_done = false;
  double cs = 0.0, fv = 0.0;
  for (int i = a; i < e; i++) {
    const int k = s_key[pad(i)];
    const double c = s_val[pad(i)];
    if (i == a) {
      cur = k;
      cs = c;
    } else if (k == cur) {
      cs += c;
    } else {
      if (!first_done) {
        first_done = true;
        fk = cur;
        fv = cs;
      } else if (cur >= 0) {
        const int64_t row = __ldg(run_row + cur);
        y[row] = __ldcg(y + row) + alpha * cs;
      }
      cur = k;
      cs = c;
    }
  }
  // Inclusive segmented scan of the trailing segments (keys: run ids, contiguous per run).
  const int lane = t & 31, warp = t >> 5;
  double v = cs;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const double vo = __shfl_up_sync(0xffffffffu, v, off);
    const int ko = __shfl_up_sync(0xffffffffu, cur, off);
    if (lane >= off && ko == cur) v = vo + v;
  }
  __shared__ int w_key[MERGE_THREADS / 32];
  __shared__ double w_val[MERGE_THREADS / 32];
  if (lane == 31) {
    w_key[warp] = cur;
    w_val[warp] = v;
  }
  double ev = __shfl_up_sync(0xffffffffu, v, 1);
  int ek = __shfl_up_sync(0xffffffffu, cur, 1);
  __syncthreads();
  int pk = -1;
  double pv = 0.0;
  for (int w = 0; w < warp; w++) {
    const int kw = w_key[w];
    pv = kw == pk ? pv + w_val[w] : w_val[w];
    pk = kw;
  }
  if (lane == 0) {
    ek = pk;
    ev = pv;
  } else if (ek == pk) {
    ev = pv + ev;
  }
  if (pk == cur) v = pv + v; // inclusive, over the whole block
  if (first_done && fk >= 0) {
    const int64_t row = __ldg(run_row + fk);
    y[row] = __ldcg(y + row) + alpha * (ek == fk ? ev + fv : fv);
  }
  // The trailing run ends here unless the next chunk starts with it.
  if (a < e && cur >= 0 && (e >= T || s_key[pad(e)] != cur)) {
    const int64_t row = __ldg(run_row + cur);
    y[row] = __ldcg(y + row) + alpha * v;
  }
  if (t == 0) *counter = 0u; // no block of this launch reads it again
}

// One block per tile. Tile b covers rows [r0, r1] and nonzeros [n0, n1) of the merged list;
// locally, row ends are s_end[0..R] (clamped to the tile's nonzeros) and nonzeros 0..N-1.
// Rows that end in the tile are written by the thread that consumes their end; the partial sums
// that threads carry across their boundaries are combined by a segmented scan in a fixed order;
// the tile's own carry-out (row r1, unfinished) goes to carry[b] for csr_merge_fixup, or, with
// counter (fused plan), to merge_fixup_last. No floating-point atomics: every sum has a fixed
// order. stream (variant 1): columns and values read evict-first, so that x stays in L2.
template <typename L>
__global__ void __launch_bounds__(MERGE_THREADS, MERGE_MIN_BLOCKS)
    csr_merge_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                     const int32_t *__restrict__ colind, const L val, const double *__restrict__ x,
                     double alpha, double beta, double *__restrict__ y,
                     const int64_t *__restrict__ tile_row, const int64_t *__restrict__ tile_nz,
                     double *carry, const int32_t *__restrict__ tile_run,
                     const int64_t *__restrict__ run_row, unsigned *counter, bool stream) {
  __shared__ int s_end[MERGE_TILE + MERGE_THREADS + 1];
  __shared__ double s_prod[MERGE_TILE + MERGE_THREADS];
  __shared__ int s_wkey[MERGE_THREADS / 32];
  __shared__ double s_wval[MERGE_THREADS / 32];
  __shared__ unsigned s_ticket;

  const int64_t r0 = __ldg(tile_row + blockIdx.x), r1 = __ldg(tile_row + blockIdx.x + 1);
  const int64_t n0 = __ldg(tile_nz + blockIdx.x), n1 = __ldg(tile_nz + blockIdx.x + 1);
  const int R = (int)(r1 - r0), N = (int)(n1 - n0); // R + N <= MERGE_TILE
  const int t = threadIdx.x;

  // Stage the row ends (clamped to n1, relative to n0) and the products a_ij * x_j.
#pragma unroll
  for (int i = 0; i <= MERGE_IPT; i++) {
    const int k = t + i * MERGE_THREADS;
    if (k <= R) {
      const int64_t r = r0 + k + 1;
      const int64_t e = r <= rows ? __ldg(rowptr + r) : n1;
      s_end[pad(k)] = (int)((e < n1 ? e : n1) - n0);
    }
  }
#pragma unroll
  for (int i = 0; i < MERGE_IPT; i++) {
    const int k = t + i * MERGE_THREADS;
    if (k < N)
      s_prod[pad(k)] = stream ? val.stream(n0 + k) * __ldg(x + __ldcs(colind + n0 + k))
                              : val(n0 + k) * __ldg(x + __ldg(colind + n0 + k));
  }
  __syncthreads();

  // This thread's start on the tile's merge path: the split (xr, yn) of diagonal d.
  const int d = t * MERGE_IPT < R + N ? t * MERGE_IPT : R + N;
  const int dend = d + MERGE_IPT < R + N ? d + MERGE_IPT : R + N;
  int lo = d > N ? d - N : 0, hi = d < R ? d : R;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (s_end[pad(mid)] <= d - mid - 1)
      lo = mid + 1;
    else
      hi = mid;
  }
  int xr = lo, yn = d - lo;

  // Consume MERGE_IPT items: a nonzero adds its product; a row end finishes the row.
  double sum = 0.0, first_val = 0.0;
  int first_row = -1;
  for (int item = d; item < dend; item++) {
    if (yn < s_end[pad(xr)]) {
      sum += s_prod[pad(yn)];
      yn++;
    } else {
      if (first_row < 0) {
        // May continue a row begun by earlier threads: written after the scan.
        first_row = xr;
        first_val = sum;
      } else {
        store_row(y, r0 + xr, alpha, sum, beta);
      }
      sum = 0.0;
      xr++;
    }
  }

  // Segmented inclusive scan of the carries (key = row the thread ends in, value = its partial
  // sum); keys do not decrease with t. In-warp Hillis-Steele, then warp totals in warp order.
  const int lane = t & 31, warp = t >> 5;
  int key = xr;
  double v = sum;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const double vo = __shfl_up_sync(0xffffffffu, v, off);
    const int ko = __shfl_up_sync(0xffffffffu, key, off);
    if (lane >= off && ko == key) v = vo + v;
  }
  if (lane == 31) {
    s_wkey[warp] = key;
    s_wval[warp] = v;
  }
  double ev = __shfl_up_sync(0xffffffffu, v, 1); // exclusive prefix inside the warp
  int ek = __shfl_up_sync(0xffffffffu, key, 1);
  __syncthreads();
  int pk = -1;
  double pv = 0.0;
  for (int w = 0; w < warp; w++) {
    const int kw = s_wkey[w];
    pv = kw == pk ? pv + s_wval[w] : s_wval[w];
    pk = kw;
  }
  if (lane == 0) {
    ek = pk;
    ev = pv;
  } else if (ek == pk) {
    ev = pv + ev;
  }
  if (first_row >= 0)
    store_row(y, r0 + first_row, alpha, ek == first_row ? ev + first_val : first_val, beta);
  if (t == MERGE_THREADS - 1) carry[blockIdx.x] = pk == key ? pv + v : v; // key == R here
  if (counter)
    merge_fixup_last(counter, tile_run, run_row, carry, alpha, y, s_end, s_prod, &s_ticket);
}

// Add each split row's carries, in tile order, to the value its last tile wrote. One thread per
// run (a row continued across tiles); the runs name distinct rows, so there are no races.
__global__ void __launch_bounds__(FIXUP_THREADS)
    csr_merge_fixup(int64_t nruns, const int64_t *__restrict__ runs,
                    const double *__restrict__ carry, double alpha, double *__restrict__ y) {
  const int64_t r = (int64_t)blockIdx.x * FIXUP_THREADS + threadIdx.x;
  if (r >= nruns) return;
  const int64_t first = __ldg(runs + 3 * r), count = __ldg(runs + 3 * r + 1);
  const int64_t row = __ldg(runs + 3 * r + 2);
  double s = 0.0;
  for (int64_t k = 0; k < count; k++)
    s += carry[first + k];
  y[row] += alpha * s;
}

// The same for one long run per block: threads sum strided carries, then a fixed tree.
__global__ void __launch_bounds__(FIXUP_THREADS)
    csr_merge_fixup_long(const int64_t *__restrict__ runs, const double *__restrict__ carry,
                         double alpha, double *__restrict__ y) {
  __shared__ double s_part[FIXUP_THREADS / 32];
  const int64_t first = __ldg(runs + 3 * blockIdx.x), count = __ldg(runs + 3 * blockIdx.x + 1);
  const int64_t row = __ldg(runs + 3 * blockIdx.x + 2);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double s = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += FIXUP_THREADS)
    s += carry[first + k];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    s += __shfl_down_sync(0xffffffffu, s, off);
  if (lane == 0) s_part[warp] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0.0;
    for (int w = 0; w < FIXUP_THREADS / 32; w++)
      t += s_part[w];
    y[row] += alpha * t;
  }
}

// ---- upload
// -------------------------------------------------------------------------------------- The split
// of diagonal d of the merge of the row ends (rowptr[1..rows]) with the nonzero indices 0..nnz-1: x
// row ends and y nonzeros come before it (CUB's MergePathSearch).
static void merge_search(int64_t d, const int64_t *rowptr, int64_t rows, int64_t nnz, int64_t *x,
                         int64_t *y) {
  int64_t lo = d > nnz ? d - nnz : 0, hi = d < rows ? d : rows;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (rowptr[mid + 1] <= d - mid - 1)
      lo = mid + 1;
    else
      hi = mid;
  }
  *x = lo;
  *y = d - lo;
}

// Vector group: variant 0, the smallest power of two >= the mean row length; variant 1
// (csr_vector2_kernel), the largest power of two <= it; in 2..32 either way.
static int vector_group(int64_t rows, int64_t nnz, int variant) {
  const double mean = rows > 0 ? (double)nnz / (double)rows : 0.0;
  int g = 2;
  if (variant == 0) {
    while (g < 32 && (double)g < mean)
      g *= 2;
  } else {
    while (g < 32 && (double)(2 * g) <= mean)
      g *= 2;
  }
  return g;
}

// Kernel variant, read once per upload from the environment: MSP_CSR_VARIANT=0 selects the
// previous kernels (vector group >= mean, one load per lane and row; merge path with separate
// fix-up launches), anything else or unset the current ones. For benchmarking (A/B on one build)
// only: the variants compute the same products (each deterministic), they differ in speed.
// Measured on the H100 (mixsparse-bench, same run): the current vector kernel was 1.08x-1.17x
// faster on the balanced matrices the rule gives it (stencil27:160 0.579 ms against 0.644,
// banded:1000000:64 0.317 against 0.363), the current merge path 1.05x in geometric mean.
static int csr_variant(void) {
  const char *v = getenv("MSP_CSR_VARIANT");
  return v && v[0] == '0' && v[1] == '\0' ? 0 : 1;
}

extern "C" msp_status msp__cuda_csr_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  int64_t *trow = NULL, *tnz = NULL, *runs = NULL, *lruns = NULL, *rrow = NULL;
  int32_t *trun = NULL;
  const int64_t rows = A->rows, nnz = A->nnz;
  const int64_t tiles = (rows + nnz + MERGE_TILE - 1) / MERGE_TILE;
  const int variant = csr_variant();
  int64_t nruns = 0, nlong = 0, nfused = 0;

  if ((unsigned)A->precision >= MSP_PRECISION_COUNT ||
      (A->precision != MSP_PRECISION_F64 && (!A->pval || A->pval->n != nnz)))
    return msp__error(MSP_ERR_INTERNAL, "csr upload: %s values were not encoded before the upload",
                      msp_precision_name(A->precision) ? msp_precision_name(A->precision) : "?");
  if (tiles > INT32_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "csr upload: %lld rows + %lld nonzeros exceed the merge-path grid",
                      (long long)rows, (long long)nnz);
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(
      msp__cuda_matrix_put(ctx, m, SLOT_ROWPTR, A->rowptr, (size_t)(rows + 1) * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_COLIND, A->colind, (size_t)nnz * sizeof(int32_t)));
  if (A->precision == MSP_PRECISION_F64) {
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_VAL, A->val, (size_t)nnz * sizeof(double)));
  } else {
    // The encoded array as it is (one layout for CPU and GPU), and its fixed-point scales.
    const msp__prec_array *pa = A->pval;
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_VAL, pa->data,
                                 (size_t)nnz * msp__prec_bytes(A->precision)));
    if (pa->scales)
      MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_SCALES, pa->scales,
                                   (size_t)pa->nscales * sizeof(double)));
    m->i64[3] = pa->scale_shift;
    m->i64[4] = pa->bank_shift;
  }

  // Merge-path plan: tile coordinates, then the runs of tiles whose carry-out belongs to the
  // same row (a carry counts when the tile consumed at least one nonzero of that row).
  if (tiles > 0) {
    MSP_TRY(MSP_ALLOC(trow, tiles + 1, "csr merge tile rows"));
    MSP_TRY(MSP_ALLOC(tnz, tiles + 1, "csr merge tile nonzeros"));
    MSP_TRY(MSP_ALLOC(runs, 3 * tiles, "csr merge fix-up runs"));
    MSP_TRY(MSP_ALLOC(lruns, 3 * tiles, "csr merge long fix-up runs"));
    for (int64_t k = 0; k <= tiles; k++) {
      const int64_t dg = k * MERGE_TILE < rows + nnz ? k * MERGE_TILE : rows + nnz;
      merge_search(dg, A->rowptr, rows, nnz, &trow[k], &tnz[k]);
    }
    for (int64_t k = 0; k < tiles; k++) {
      const int64_t r = trow[k + 1], n0 = tnz[k], n1 = tnz[k + 1];
      if (r >= rows) continue;
      const int64_t from = A->rowptr[r] > n0 ? A->rowptr[r] : n0;
      if (n1 <= from) continue; // the tile holds no nonzero of its unfinished row
      if (nruns > 0 && runs[3 * (nruns - 1) + 2] == r &&
          runs[3 * (nruns - 1)] + runs[3 * (nruns - 1) + 1] == k) {
        runs[3 * (nruns - 1) + 1]++;
      } else {
        runs[3 * nruns] = k;
        runs[3 * nruns + 1] = 1;
        runs[3 * nruns + 2] = r;
        nruns++;
      }
    }
    MSP_TRY(
        msp__cuda_matrix_put(ctx, m, SLOT_TILE_ROW, trow, (size_t)(tiles + 1) * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_TILE_NZ, tnz, (size_t)(tiles + 1) * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_CARRY, NULL, (size_t)tiles * sizeof(double)));
    if (variant != 0 && tiles <= MERGE_FUSE_TILES && nruns > 0) {
      // Fused fix-up: each tile's run id (or -1), each run's row, and the zeroed block counter.
      MSP_TRY(MSP_ALLOC(trun, tiles, "csr merge tile runs"));
      MSP_TRY(MSP_ALLOC(rrow, nruns, "csr merge run rows"));
      for (int64_t k = 0; k < tiles; k++)
        trun[k] = -1;
      for (int64_t q = 0; q < nruns; q++) {
        rrow[q] = runs[3 * q + 2];
        for (int64_t k = runs[3 * q]; k < runs[3 * q] + runs[3 * q + 1]; k++)
          trun[k] = (int32_t)q;
      }
      nfused = nruns;
      MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_TILE_RUN, trun, (size_t)tiles * sizeof(int32_t)));
      MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_RUN_ROW, rrow, (size_t)nfused * sizeof(int64_t)));
      MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_COUNTER, NULL, sizeof(unsigned)));
    }
    // Move the long runs to their own list (order kept in both).
    int64_t nshort = 0;
    for (int64_t q = 0; q < nruns; q++) {
      int64_t *dst = runs[3 * q + 1] > FIXUP_LONG ? lruns + 3 * nlong++ : runs + 3 * nshort++;
      if (dst != runs + 3 * q) memmove(dst, runs + 3 * q, 3 * sizeof(int64_t));
    }
    nruns = nshort;
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_RUNS, runs, (size_t)(3 * nruns) * sizeof(int64_t)));
    MSP_TRY(
        msp__cuda_matrix_put(ctx, m, SLOT_LONG_RUNS, lruns, (size_t)(3 * nlong) * sizeof(int64_t)));
  }
  m->i64[0] = vector_group(rows, nnz, variant);
  m->i64[1] = tiles;
  m->i64[2] = nruns;
  m->i64[5] = nlong;
  m->i64[6] = variant;
  m->i64[7] = nfused;
  // Copies from pageable memory are staged before cudaMemcpyAsync returns; waiting here anyway
  // keeps the host buffers freed below out of any doubt (uploads are not on the hot path).
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  msp__free(trow);
  msp__free(tnz);
  msp__free(runs);
  msp__free(lruns);
  msp__free(trun);
  msp__free(rrow);
  return st;
}

// ---- launch ------------------------------------------------------------------------------------
template <typename L>
static msp_status launch_vector2(int g, cudaStream_t s, int64_t rows, const int64_t *rp,
                                 const int32_t *ci, const L va, const double *x, double alpha,
                                 double beta, double *y) {
  msp_status st = MSP_SUCCESS;
  const int64_t per_warp = (int64_t)(32 / g) * VECTOR_ROWS;
  const unsigned blocks = msp__cuda_blocks((rows + per_warp - 1) / per_warp * 32, VECTOR_THREADS);
  switch (g) {
  case 2:
    csr_vector2_kernel<L, 2><<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  case 4:
    csr_vector2_kernel<L, 4><<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  case 8:
    csr_vector2_kernel<L, 8><<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  case 16:
    csr_vector2_kernel<L, 16>
        <<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  default:
    csr_vector2_kernel<L, 32>
        <<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  }
  MSP_CUDA_CHECK_LAUNCH("csr_vector2_kernel");
exit:
  return st;
}

template <typename L>
static msp_status launch_vector(int g, cudaStream_t s, int64_t rows, const int64_t *rp,
                                const int32_t *ci, const L va, const double *x, double alpha,
                                double beta, double *y) {
  msp_status st = MSP_SUCCESS;
  // One warp per 32 / g * VECTOR_ROWS consecutive rows.
  const int64_t per_warp = (int64_t)(32 / g) * VECTOR_ROWS;
  const unsigned blocks = msp__cuda_blocks((rows + per_warp - 1) / per_warp * 32, VECTOR_THREADS);
  switch (g) {
  case 2:
    csr_vector_kernel<L, 2><<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  case 4:
    csr_vector_kernel<L, 4><<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  case 8:
    csr_vector_kernel<L, 8><<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  case 16:
    csr_vector_kernel<L, 16><<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  default:
    csr_vector_kernel<L, 32><<<blocks, VECTOR_THREADS, 0, s>>>(rows, rp, ci, va, x, alpha, beta, y);
    break;
  }
  MSP_CUDA_CHECK_LAUNCH("csr_vector_kernel");
exit:
  return st;
}

// Enqueue the product with A->kernel on ctx's stream; nothing waits for it.
template <msp_precision P>
static msp_status launch(msp_context ctx, double alpha, const msp_matrix A, const double *x,
                         double beta, double *y) {
  msp_status st = MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t rows = A->rows;
  const int64_t *rp = (const int64_t *)m->d[SLOT_ROWPTR];
  const int32_t *ci = (const int32_t *)m->d[SLOT_COLIND];
  // The device view of the stored values; CPMS reads the segments the matrix asks for now
  // (msp_matrix_set_cpms_segments may change them after the upload).
  loader<P> va;
  memset(&va, 0, sizeof va);
  va.a.data = m->d[SLOT_VAL];
  va.a.n = A->nnz;
  va.a.prec = P;
  va.a.scale_shift = (int)m->i64[3];
  va.a.scales = (const double *)m->d[SLOT_SCALES];
  va.a.bank_shift = (int)m->i64[4];
  {
    const int all = P == MSP_PRECISION_CPMS2 ? 2 : P == MSP_PRECISION_CPMS4 ? 4 : 1;
    const int k = A->opts.cpms_segments;
    va.a.read_segments = k <= 0 || k > all ? all : k;
  }
  msp_kernel k = A->kernel;
  if (k == MSP_KERNEL_AUTO) k = msp_choose_kernel(&A->stats, NULL, 0);
  switch (k) {
  case MSP_KERNEL_SCALAR:
    csr_scalar_kernel<loader<P>><<<msp__cuda_blocks(rows, SCALAR_THREADS), SCALAR_THREADS, 0, s>>>(
        rows, rp, ci, va, x, alpha, beta, y);
    MSP_CUDA_CHECK_LAUNCH("csr_scalar_kernel");
    break;
  case MSP_KERNEL_VECTOR:
    if (m->i64[6] == 0)
      MSP_TRY(launch_vector<loader<P>>((int)m->i64[0], s, rows, rp, ci, va, x, alpha, beta, y));
    else
      MSP_TRY(launch_vector2<loader<P>>((int)m->i64[0], s, rows, rp, ci, va, x, alpha, beta, y));
    break;
  default: {
    const int64_t tiles = m->i64[1], nruns = m->i64[2], nlong = m->i64[5];
    const bool fused = m->i64[7] > 0; // the kernel applies the carries: no fix-up launch
    csr_merge_kernel<loader<P>><<<(unsigned)tiles, MERGE_THREADS, 0, s>>>(
        rows, rp, ci, va, x, alpha, beta, y, (const int64_t *)m->d[SLOT_TILE_ROW],
        (const int64_t *)m->d[SLOT_TILE_NZ], (double *)m->d[SLOT_CARRY],
        fused ? (const int32_t *)m->d[SLOT_TILE_RUN] : NULL,
        fused ? (const int64_t *)m->d[SLOT_RUN_ROW] : NULL,
        fused ? (unsigned *)m->d[SLOT_COUNTER] : NULL, m->i64[6] != 0);
    MSP_CUDA_CHECK_LAUNCH("csr_merge_kernel");
    if (fused) break;
    if (nruns > 0) {
      csr_merge_fixup<<<msp__cuda_blocks(nruns, FIXUP_THREADS), FIXUP_THREADS, 0, s>>>(
          nruns, (const int64_t *)m->d[SLOT_RUNS], (const double *)m->d[SLOT_CARRY], alpha, y);
      MSP_CUDA_CHECK_LAUNCH("csr_merge_fixup");
    }
    if (nlong > 0) {
      csr_merge_fixup_long<<<(unsigned)nlong, FIXUP_THREADS, 0, s>>>(
          (const int64_t *)m->d[SLOT_LONG_RUNS], (const double *)m->d[SLOT_CARRY], alpha, y);
      MSP_CUDA_CHECK_LAUNCH("csr_merge_fixup_long");
    }
    break;
  }
  }
exit:
  return st;
}

// Every storage precision through one launcher (the switch over MSP_PRECISION_LIST): spmv[CSR]
// for f64, and csr_prec.cu's spmv_prec[CSR] hands f32 here.
extern "C" msp_status msp__cuda_csr_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  if (A->rows == 0) return MSP_SUCCESS;
  if (!A->dev)
    return msp__error(MSP_ERR_INTERNAL, "csr spmv (cuda): the matrix has no device data");
  switch (A->precision) {
#define CSR_PREC_CASE_(name, tag, bytes)                                                           \
  case MSP_PRECISION_##name:                                                                       \
    return launch<MSP_PRECISION_##name>(ctx, alpha, A, x->d_data, beta, y->d_data);
    MSP_PRECISION_LIST(CSR_PREC_CASE_)
#undef CSR_PREC_CASE_
  default:
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "csr spmv (cuda): unknown precision %d",
                      (int)A->precision);
  }
}

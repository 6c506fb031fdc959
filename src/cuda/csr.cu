// csr.cu: CSR on the GPU: upload, and the scalar, vector and merge-path kernels for y = aAx + by.
//
// Device arrays of a CSR matrix (msp__cuda_matrix slots), one layout for every storage precision:
//   d[0] rowptr   int64[rows + 1]
//   d[1] colind   int32[nnz]
//   d[2] val      the values as stored: double[nnz] for f64 (A->val); otherwise the encoded
//                 array A->pval->data (src/common/precision.h layout, msp__prec_bytes each)
//   d[3] tile_row int64[tiles + 1]: merge-path row coordinate where each tile starts (and ends)
//   d[4] tile_nz  int64[tiles + 1]: merge-path nonzero coordinate where each tile starts
//   d[5] carry    double[2 * tiles]: carry[b], tile b's partial sum of the row it leaves
//                 unfinished; head[b] = carry[tiles + b], alpha * (tile b's part of the row it
//                 finishes) + beta * y_old when that row began in an earlier tile (see the
//                 fix-ups: such a row is stored into y once, complete, so a reduced-precision y
//                 is rounded and range-checked once)
//   d[6] runs     int64[3 * nruns]: fix-up runs of at most FIXUP_LONG tiles (first tile, tile
//                 count, row): rows that continue across tiles, see csr_merge_fixup
//   d[7] scales   double[nscales]: fixed-point scales of the values (fx32, fx16 only)
//   d[8] long     int64[3 * nlong]: the runs of more than FIXUP_LONG tiles (very long rows)
//   d[9]  tile_run int32[tiles]: fused fix-up only: the run whose row tile k's carry belongs to,
//                 or -1 (see csr_merge_kernel's last-block epilogue)
//   d[10] run_row  int64[runs]: fused fix-up only: the row of each run
//   d[11] counter  unsigned[1]: fused fix-up only: blocks done in the current launch (0 between)
//   i64[0] vector group size G, i64[1] tiles, i64[2] nruns, i64[5] nlong, i64[7] fused run count
//   (> 0: the merge kernel applies the carries itself, no fix-up launches). The values' view
//   (precision, scales, CPMS banks and segments read) comes from A->pval at each product
//   (msp__fmt_values), as for the other formats.
// Each kernel is one template over the loader of the matrix values and the loader of x
// (src/cuda/access.cuh, reading through the accessors of src/common/precision.h), instantiated
// for every pair of MSP_PRECISION_LIST by two nested msp__prec_dispatch; arithmetic is fp64 and
// y is written through its store Y: ystore_f64 for an f64 y, else ystore, which rounds into y's
// precision (chosen at run time). Everything the merge-path kernel needs (tile coordinates,
// fix-up plan, carry scratch) is made here, once, so a product only enqueues kernels: no
// allocation, no host synchronisation.
//
// Fixed-point y (one scale per 32 rows, set from those rows' results): the scalar and vector
// kernels finish aligned blocks of 32 rows inside one CUDA block and set the scales in the same
// pass. The merge path does not (a block of 32 rows may straddle tiles): it returns
// MSP_ERR_NOT_SUPPORTED for a fixed-point y; choose the vector kernel (or f32 for y) there.
#include "formats.cuh"

#include <string.h>

#define SCALAR_THREADS 256
#define VECTOR_THREADS 256
#define VECTOR_ROWS 4 // rows a vector group works on at once
// 4 blocks of 256 per SM: the compiler keeps the vector kernels at 64 registers without spills
// (-Xptxas -v, every pair of precisions); 6 or 8 blocks would spill.
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

// ---- scalar: one thread per row ----------------------------------------------------------------
// A warp holds 32 consecutive rows from a multiple of 32, so a fixed-point y gets its block
// scales in the same pass (ystore_thread_row): no lane leaves early.
template <msp_precision PA, msp_precision PX, class Y>
__global__ void __launch_bounds__(SCALAR_THREADS)
    csr_scalar_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                      const int32_t *__restrict__ colind, const loader<PA> val, const loader<PX> x,
                      double alpha, double beta, const Y y) {
  const int64_t row = (int64_t)blockIdx.x * SCALAR_THREADS + threadIdx.x;
  const bool valid = row < rows;
  double s = 0.0;
  if (valid) {
    const int64_t end = __ldg(rowptr + row + 1);
#pragma unroll 4
    for (int64_t j = __ldg(rowptr + row); j < end; j++)
      s += val(j) * x(__ldg(colind + j));
  }
  ystore_thread_row(y, row, valid, alpha, s, beta);
}

// ---- vector: a group of G lanes per row (G divides 32) -----------------------------------------
// Each group works on VECTOR_ROWS rows at once, each row still summed by the G lanes in
// lane-strided order: the loads of the rows are issued together, so a warp has several rows'
// bytes in flight instead of one (a short row alone leaves a warp waiting on three dependent
// loads: row pointers, columns, x). A warp covers GPW * VECTOR_ROWS consecutive rows, its GPW =
// 32 / G groups interleaved (group q takes rows q, q + GPW, ...), so that each load instruction
// of the warp reads GPW consecutive rows: contiguous memory. Further:
//  - G is the largest power of two <= the mean row length (vector_group): a row of 27 on 16
//    lanes fills 27 of 32 slots, as it does on 32 lanes, with twice the rows per warp;
//  - each step issues vector_unroll slots per lane and row (k, k + G) before adding, so a lane
//    has VECTOR_ROWS * unroll independent loads in flight (a row of up to 2G is one step);
//  - columns and values are streamed (evict-first) so that x stays in L2.
// Each lane adds its slots in the order k, k + G, k + 2G, ...; then a fixed butterfly: the same
// bits on every run (addition is commutative, so all lanes of a group agree).
// Slots per lane and row and step: 2 where the loaders leave the registers for it, 1 elsewhere
// (the 64-register cap of VECTOR_MIN_BLOCKS): 2 for the pairs of f64, f32 and bf16 (but bf16
// values with an f32 or bf16 x: 1), and, from G = 4 on, for f64, f16, bf16, fx16 and cpms4 values
// with an f64, f32, f16, bf16, fx16 or fx32 x (with G = 2 the four rows' pointers take the
// registers); fx32 and cpms2 values and a CPMS x: 1. cpms4 values take 2 (with 32-bit row
// indices, below): 1.43x-1.56x faster than 1 on gen:stencil27:128 and 1.18x-1.19x on
// gen:random:4000000:16 (H100, f64 x and y, reading 1, 2 or 4 segments); fx32 values do not (1.31x
// faster on the stencil, 1.13x slower on the random matrix: 1 keeps them never slower than f64).
// Spills left (-Xptxas -v, CUDA 13.0, sm_90), 87 of the 900 kernels of this file, all through L1:
// none with an f64 x whatever the values and y; 4-24 bytes for f64, f16 and bf16 values with a
// fixed-point x, f32, f16 and bf16 values with a 2-byte or f32 x, cpms4 or cpms2 values with a
// cpms2 x; 16-52 bytes for f64 values with a 2-byte or f32 x at G = 2; 8 bytes in the scalar kernel
// for cpms2 values into a reduced-precision y.
//
// Row indices in the loop: 32 bits (a row is at most the column count long, an int32) save
// registers and integer work, but ptxas then schedules some loaders' loops worse. Measured per
// value precision (H100, gen:stencil27:128, f64 x and y, ms, 64-bit against 32-bit): f64 0.314
// against 0.436, f16 and bf16 0.223 against 0.296; f32 0.315 against 0.258, fx32 0.512 against
// 0.498, CPMS 0.38-0.81 against 0.37-0.66, fx16 equal; on gen:random:4000000:16 within 3%
// either way. So 64-bit for f64, f16 and bf16 values with an f64 x (where it was measured), 32-bit
// for the others (with a 2-byte or f32 x the 64-bit indices made f16 and bf16 values spill).
__host__ __device__ constexpr bool vector_index64(msp_precision pa, msp_precision px) {
  return px == MSP_PRECISION_F64 &&
         (pa == MSP_PRECISION_F64 || pa == MSP_PRECISION_F16 || pa == MSP_PRECISION_BF16);
}
__host__ __device__ constexpr bool vector_light(msp_precision p) {
  return p == MSP_PRECISION_F64 || p == MSP_PRECISION_F32 || p == MSP_PRECISION_BF16;
}
__host__ __device__ constexpr int vector_unroll(msp_precision pa, msp_precision px, int g) {
  if (vector_light(pa) && vector_light(px))
    return pa == MSP_PRECISION_BF16 && px != MSP_PRECISION_F64 ? 1 : 2;
  const bool va = pa == MSP_PRECISION_F64 || pa == MSP_PRECISION_F16 || pa == MSP_PRECISION_BF16 ||
                  pa == MSP_PRECISION_FX16 || pa == MSP_PRECISION_CPMS4;
  const bool vx = vector_light(px) || px == MSP_PRECISION_F16 || px == MSP_PRECISION_FX16 ||
                  px == MSP_PRECISION_FX32;
  return g >= 4 && va && vx ? 2 : 1;
}
// A fixed-point y is staged per CUDA block (VECTOR_THREADS / 32 * GPW * VECTOR_ROWS consecutive
// rows from a multiple of 32, in dynamic shared memory: the f64 launch asks for none, so its
// L1 carve-out is untouched), then each warp stores whole blocks of 32 rows (ystore_warp).
template <msp_precision PA, msp_precision PX, int G, class Y>
__global__ void __launch_bounds__(VECTOR_THREADS, VECTOR_MIN_BLOCKS)
    csr_vector_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                      const int32_t *__restrict__ colind, const loader<PA> val, const loader<PX> x,
                      double alpha, double beta, const Y y) {
  constexpr int GPW = 32 / G, UNROLL = vector_unroll(PA, PX, G);
  constexpr int BLOCK_ROWS = VECTOR_THREADS / 32 * GPW * VECTOR_ROWS;
  static_assert(BLOCK_ROWS % 32 == 0, "a CUDA block must finish whole fixed-point blocks of y");
  const int64_t warp_id = ((int64_t)blockIdx.x * VECTOR_THREADS + threadIdx.x) / 32;
  const int lane = threadIdx.x & (G - 1);
  const int64_t base = warp_id * (GPW * VECTOR_ROWS) + (threadIdx.x & 31) / G;
  double s[VECTOR_ROWS];
#pragma unroll
  for (int r = 0; r < VECTOR_ROWS; r++)
    s[r] = 0.0;
  if (base < rows) { // the whole group or none (same rows for all its lanes)
    const unsigned mask =
        G == 32 ? 0xffffffffu : (((1u << G) - 1u) << ((threadIdx.x & 31) & ~(G - 1)));
    using I = typename std::conditional<vector_index64(PA, PX), int64_t, int>::type;
    int64_t b[VECTOR_ROWS];
    I len[VECTOR_ROWS];
#pragma unroll
    for (int r = 0; r < VECTOR_ROWS; r++) {
      const int64_t row = base + r * GPW;
      b[r] = row < rows ? __ldg(rowptr + row) : 0;
      len[r] = row < rows ? (I)(__ldg(rowptr + row + 1) - b[r]) : 0;
    }
    I longest = 0;
#pragma unroll
    for (int r = 0; r < VECTOR_ROWS; r++)
      longest = len[r] > longest ? len[r] : longest;
    for (I k = lane; k < longest; k += G * UNROLL) {
      if constexpr (UNROLL == 1) { // one load per lane and row (buffered, it would spill)
#pragma unroll
        for (int r = 0; r < VECTOR_ROWS; r++)
          if (k < len[r]) s[r] += val.stream(b[r] + k) * x(__ldcs(colind + b[r] + k));
      } else {
        double p[VECTOR_ROWS][UNROLL];
        // All loads of the step first (predicated: no load past a row's end), then the sums.
#pragma unroll
        for (int r = 0; r < VECTOR_ROWS; r++) {
#pragma unroll
          for (int u = 0; u < UNROLL; u++) {
            const I kk = k + u * G;
            p[r][u] = kk < len[r] ? val.stream(b[r] + kk) * x(__ldcs(colind + b[r] + kk)) : 0.0;
          }
        }
#pragma unroll
        for (int r = 0; r < VECTOR_ROWS; r++) {
#pragma unroll
          for (int u = 0; u < UNROLL; u++)
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
  }
  if constexpr (!ystore_is_f64<Y>) {
    if (msp_prec_is_fixed(y.a.prec)) {    // uniform over the launch
      extern __shared__ double s_stage[]; // BLOCK_ROWS results of this CUDA block's rows
      const int64_t row0 = (int64_t)blockIdx.x * BLOCK_ROWS;
      if (lane == 0) {
#pragma unroll
        for (int r = 0; r < VECTOR_ROWS; r++)
          s_stage[base + r * GPW - row0] = s[r]; // rows past the end hold 0 and stay unused
      }
      __syncthreads();
      for (int c = threadIdx.x >> 5; c < BLOCK_ROWS / 32; c += VECTOR_THREADS / 32) {
        const int i = c * 32 + (threadIdx.x & 31);
        ystore_warp(y, row0 + i, row0 + i < rows, alpha, s_stage[i], beta);
      }
      return;
    }
  }
  if (base < rows && lane == 0) {
#pragma unroll
    for (int r = 0; r < VECTOR_ROWS; r++)
      if (base + r * GPW < rows) ystore_row(y, base + r * GPW, alpha, s[r], beta);
  }
}

// ---- merge path --------------------------------------------------------------------------------
// Shared arrays are padded by one slot per MERGE_IPT entries: a thread walks MERGE_IPT
// consecutive entries, so unpadded, the lanes of a warp would hit the same banks.
__device__ __forceinline__ int pad(int k) {
  return k + k / MERGE_IPT;
}

// A row split over tiles (first tile, count, row) is finished by tile first + count, which wrote
// head[first + count] = alpha * (its part) + beta * y_old instead of y; the fix-up stores
// head + alpha * (the carries, in tile order) into y once. For an f64 y these are the same
// operations in the same order as adding the carries to y afterwards: the same bits.
template <class Y>
__device__ __forceinline__ void merge_store_split(const Y &y, int64_t row, const double *head,
                                                  int64_t end_tile, double alpha, double carries) {
  ystore_row(y, row, 1.0, __ldcg(head + end_tile) + alpha * carries, 0.0);
}

// Fused fix-up (at most MERGE_FUSE_TILES tiles): the last block of the launch to finish stores
// the split rows, so a product is one launch instead of two or three (a launch costs a few
// microseconds, a large share of a small product). Every block makes its y, carry and head
// stores visible (__threadfence) before taking a ticket from the integer counter; the block with
// the last ticket fences again, reads all carries and heads from L2 (__ldcg: never a stale L1
// line), and resets the counter for the next launch. The carries of a run (tiles of one row,
// contiguous) are summed by a segmented reduction in a fixed order: contiguous chunks per
// thread, then a scan over the threads as in the main kernel. A run that ends with tile k - 1
// was finished by tile k (its head). No floating-point atomics: deterministic.
#define MERGE_FUSE_TILES MERGE_TILE // the carries and run ids fit in s_prod and s_end
template <class Y>
__device__ __forceinline__ void merge_fixup_last(unsigned *counter, const int32_t *tile_run,
                                                 const int64_t *run_row, const double *carry,
                                                 const double *head, double alpha, const Y &y,
                                                 int *s_key, double *s_val, unsigned *s_ticket) {
  const int t = threadIdx.x, T = (int)gridDim.x;
  __threadfence(); // this thread's y stores, carry and head, device-wide, before the ticket
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
  // segments (complete: stored here), the trailing one (scanned over the threads). A segment
  // that ends before index i belongs to a run finished by tile i.
  int cur = -1, fk = -1, fe = -1;
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
        fe = i;
      } else if (cur >= 0) {
        merge_store_split(y, __ldg(run_row + cur), head, i, alpha, cs);
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
  if (first_done && fk >= 0)
    merge_store_split(y, __ldg(run_row + fk), head, fe, alpha, ek == fk ? ev + fv : fv);
  // The trailing run ends here unless the next chunk starts with it (the last tile has no
  // carry, so e < T here and tile e finished it).
  if (a < e && cur >= 0 && (e >= T || s_key[pad(e)] != cur))
    merge_store_split(y, __ldg(run_row + cur), head, e, alpha, v);
  if (t == 0) *counter = 0u; // no block of this launch reads it again
}

// One block per tile. Tile b covers rows [r0, r1] and nonzeros [n0, n1) of the merged list;
// locally, row ends are s_end[0..R] (clamped to the tile's nonzeros) and nonzeros 0..N-1.
// Rows that end in the tile are written by the thread that consumes their end, except row r0
// when it began in an earlier tile (n0 > rowptr[r0]): its part goes to head[b] for the fix-up.
// The partial sums that threads carry across their boundaries are combined by a segmented scan
// in a fixed order; the tile's own carry-out (row r1, unfinished) goes to carry[b] for
// csr_merge_fixup, or, with counter (fused plan), to merge_fixup_last. No floating-point
// atomics: every sum has a fixed order. Columns and values are read evict-first, so that x stays
// in L2.
template <msp_precision PA, msp_precision PX, class Y>
__global__ void __launch_bounds__(MERGE_THREADS, MERGE_MIN_BLOCKS)
    csr_merge_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                     const int32_t *__restrict__ colind, const loader<PA> val, const loader<PX> x,
                     double alpha, double beta, const Y y, const int64_t *__restrict__ tile_row,
                     const int64_t *__restrict__ tile_nz, double *carry, double *head,
                     const int32_t *__restrict__ tile_run, const int64_t *__restrict__ run_row,
                     unsigned *counter) {
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
    if (k < N) s_prod[pad(k)] = val.stream(n0 + k) * x(__ldcs(colind + n0 + k));
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
        ystore_row(y, r0 + xr, alpha, sum, beta);
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
  if (first_row >= 0) {
    const double part = ek == first_row ? ev + first_val : first_val;
    // Row r0 is only ever a thread's first row; it began in an earlier tile exactly when that
    // tile consumed some of its nonzeros, i.e. n0 > rowptr[r0] (then a fix-up run ends at b - 1).
    if (first_row == 0 && r0 < rows && n0 > __ldg(rowptr + r0))
      head[blockIdx.x] = beta == 0.0 ? alpha * part : alpha * part + beta * ystore_load(y, r0);
    else
      ystore_row(y, r0 + first_row, alpha, part, beta);
  }
  if (t == MERGE_THREADS - 1) carry[blockIdx.x] = pk == key ? pv + v : v; // key == R here
  if (counter)
    merge_fixup_last(counter, tile_run, run_row, carry, head, alpha, y, s_end, s_prod, &s_ticket);
}

// Store each split row: its head plus its carries in tile order. One thread per run (a row
// continued across tiles); the runs name distinct rows, so there are no races.
template <class Y>
__global__ void __launch_bounds__(FIXUP_THREADS)
    csr_merge_fixup(int64_t nruns, const int64_t *__restrict__ runs,
                    const double *__restrict__ carry, const double *head, double alpha, const Y y) {
  const int64_t r = (int64_t)blockIdx.x * FIXUP_THREADS + threadIdx.x;
  if (r >= nruns) return;
  const int64_t first = __ldg(runs + 3 * r), count = __ldg(runs + 3 * r + 1);
  const int64_t row = __ldg(runs + 3 * r + 2);
  double s = 0.0;
  for (int64_t k = 0; k < count; k++)
    s += carry[first + k];
  merge_store_split(y, row, head, first + count, alpha, s);
}

// The same for one long run per block: threads sum strided carries, then a fixed tree.
template <class Y>
__global__ void __launch_bounds__(FIXUP_THREADS)
    csr_merge_fixup_long(const int64_t *__restrict__ runs, const double *__restrict__ carry,
                         const double *head, double alpha, const Y y) {
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
    merge_store_split(y, row, head, first + count, alpha, t);
  }
}

// ---- upload ------------------------------------------------------------------------------------
// The split of diagonal d of the merge of the row ends (rowptr[1..rows]) with the nonzero
// indices 0..nnz-1: x row ends and y nonzeros come before it (CUB's MergePathSearch).
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

// Vector group: the largest power of two <= the mean row length, in 2..32. Measured on the H100
// against the smallest power of two >= the mean (the kernel this file had before): 1.08x-1.17x
// faster on the balanced matrices the rule gives the vector kernel (stencil27:160 0.579 ms
// against 0.644, banded:1000000:64 0.317 against 0.363).
static int vector_group(int64_t rows, int64_t nnz) {
  const double mean = rows > 0 ? (double)nnz / (double)rows : 0.0;
  int g = 2;
  while (g < 32 && (double)(2 * g) <= mean)
    g *= 2;
  return g;
}

// One upload for every storage precision: the CSR structure, the value array as stored (f64:
// A->val; otherwise A->pval, the same bytes as the CPU reads, with its fixed-point scales), and
// the merge-path plan.
extern "C" msp_status msp__cuda_csr_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  int64_t *trow = NULL, *tnz = NULL, *runs = NULL, *lruns = NULL, *rrow = NULL;
  int32_t *trun = NULL;
  const int64_t rows = A->rows, nnz = A->nnz;
  const int64_t tiles = (rows + nnz + MERGE_TILE - 1) / MERGE_TILE;
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
  MSP_TRY(msp__fmt_put_values(ctx, m, A, SLOT_VAL, SLOT_SCALES, A->val, nnz, NULL, 0));

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
    // carry (tiles) and head (tiles): written by every product before they are read
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_CARRY, NULL, (size_t)(2 * tiles) * sizeof(double)));
    if (tiles <= MERGE_FUSE_TILES && nruns > 0) {
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
  m->i64[0] = vector_group(rows, nnz);
  m->i64[1] = tiles;
  m->i64[2] = nruns;
  m->i64[5] = nlong;
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
template <msp_precision PA, msp_precision PX, int G, class Y>
static void launch_vector_g(cudaStream_t s, int64_t rows, const int64_t *rp, const int32_t *ci,
                            const loader<PA> &va, const loader<PX> &xa, double alpha, double beta,
                            const Y &y) {
  constexpr int64_t per_warp = (int64_t)(32 / G) * VECTOR_ROWS;
  constexpr size_t block_rows = VECTOR_THREADS / 32 * per_warp;
  const unsigned blocks = msp__cuda_blocks((rows + per_warp - 1) / per_warp * 32, VECTOR_THREADS);
  size_t smem = 0;
  if constexpr (!ystore_is_f64<Y>)
    if (msp_prec_is_fixed(y.a.prec)) smem = block_rows * sizeof(double);
  csr_vector_kernel<PA, PX, G, Y>
      <<<blocks, VECTOR_THREADS, smem, s>>>(rows, rp, ci, va, xa, alpha, beta, y);
}

// Enqueue the product with kernel k on ctx's stream; nothing waits for it.
template <msp_precision PA, msp_precision PX, class Y>
static msp_status launch(msp_context ctx, msp_kernel k, double alpha, const msp_matrix A,
                         const msp_vector x, double beta, const Y &y) {
  msp_status st = MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t rows = A->rows;
  const int64_t *rp = (const int64_t *)m->d[SLOT_ROWPTR];
  const int32_t *ci = (const int32_t *)m->d[SLOT_COLIND];
  const loader<PX> xa = msp__vector_loader<PX>(x);
  // The device view of the stored values; CPMS reads the segments the matrix asks for now
  // (msp_matrix_set_cpms_segments may change them after the upload).
  loader<PA> va;
  va.a = msp__fmt_values(A, m, SLOT_VAL, SLOT_SCALES);
  switch (k) {
  case MSP_KERNEL_SCALAR:
    csr_scalar_kernel<PA, PX, Y><<<msp__cuda_blocks(rows, SCALAR_THREADS), SCALAR_THREADS, 0, s>>>(
        rows, rp, ci, va, xa, alpha, beta, y);
    MSP_CUDA_CHECK_LAUNCH("csr_scalar_kernel");
    break;
  case MSP_KERNEL_VECTOR:
    switch ((int)m->i64[0]) {
    case 2:
      launch_vector_g<PA, PX, 2, Y>(s, rows, rp, ci, va, xa, alpha, beta, y);
      break;
    case 4:
      launch_vector_g<PA, PX, 4, Y>(s, rows, rp, ci, va, xa, alpha, beta, y);
      break;
    case 8:
      launch_vector_g<PA, PX, 8, Y>(s, rows, rp, ci, va, xa, alpha, beta, y);
      break;
    case 16:
      launch_vector_g<PA, PX, 16, Y>(s, rows, rp, ci, va, xa, alpha, beta, y);
      break;
    default:
      launch_vector_g<PA, PX, 32, Y>(s, rows, rp, ci, va, xa, alpha, beta, y);
      break;
    }
    MSP_CUDA_CHECK_LAUNCH("csr_vector_kernel");
    break;
  default: {
    const int64_t tiles = m->i64[1], nruns = m->i64[2], nlong = m->i64[5];
    const bool fused = m->i64[7] > 0; // the kernel applies the carries: no fix-up launch
    double *carry = (double *)m->d[SLOT_CARRY], *head = carry + tiles;
    csr_merge_kernel<PA, PX, Y><<<(unsigned)tiles, MERGE_THREADS, 0, s>>>(
        rows, rp, ci, va, xa, alpha, beta, y, (const int64_t *)m->d[SLOT_TILE_ROW],
        (const int64_t *)m->d[SLOT_TILE_NZ], carry, head,
        fused ? (const int32_t *)m->d[SLOT_TILE_RUN] : NULL,
        fused ? (const int64_t *)m->d[SLOT_RUN_ROW] : NULL,
        fused ? (unsigned *)m->d[SLOT_COUNTER] : NULL);
    MSP_CUDA_CHECK_LAUNCH("csr_merge_kernel");
    if (fused) break;
    if (nruns > 0) {
      csr_merge_fixup<Y><<<msp__cuda_blocks(nruns, FIXUP_THREADS), FIXUP_THREADS, 0, s>>>(
          nruns, (const int64_t *)m->d[SLOT_RUNS], carry, head, alpha, y);
      MSP_CUDA_CHECK_LAUNCH("csr_merge_fixup");
    }
    if (nlong > 0) {
      csr_merge_fixup_long<Y><<<(unsigned)nlong, FIXUP_THREADS, 0, s>>>(
          (const int64_t *)m->d[SLOT_LONG_RUNS], carry, head, alpha, y);
      MSP_CUDA_CHECK_LAUNCH("csr_merge_fixup_long");
    }
    break;
  }
  }
exit:
  return st;
}

// Every storage precision of A and of x through one launcher: the two nested switches over
// MSP_PRECISION_LIST instantiate the kernels for each pair, each with y's store as a type
// (msp__ystore_dispatch: a plain store for an f64 y, the rounding store of y's precision
// otherwise).
extern "C" msp_status msp__cuda_csr_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  if (A->rows == 0) return MSP_SUCCESS;
  if (!A->dev)
    return msp__error(MSP_ERR_INTERNAL, "csr spmv (cuda): the matrix has no device data");
  msp_kernel k = A->kernel;
  if (k == MSP_KERNEL_AUTO) k = msp_choose_kernel(&A->stats, NULL, 0);
  if (k != MSP_KERNEL_SCALAR && k != MSP_KERNEL_VECTOR && msp_prec_is_fixed(y->prec))
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "csr spmv (cuda): the merge-path kernel cannot write a fixed-point y (%s: "
                      "one scale per 32 rows, which may straddle its tiles); use the scalar or "
                      "vector kernel, or another precision for y",
                      msp_precision_name(y->prec));
  return msp__prec_dispatch(A->precision, [&](auto pa) {
    return msp__prec_dispatch(x->prec, [&](auto px) {
      return msp__ystore_dispatch(y, [&](const auto &ys) {
        return launch<decltype(pa)::value, decltype(px)::value>(ctx, k, alpha, A, x, beta, ys);
      });
    });
  });
}

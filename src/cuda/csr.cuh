// csr.cuh: the CSR kernels (scalar, vector; the merge path in csr_merge.cuh) as templates over the
// loader of the values, and their launcher. csr.cu instantiates them for every storage precision
// (src/cuda/access.cuh loaders); BDMP-PBP (bdmp.cu) runs the same kernels over its loader of two
// value streams. The device layout and the kernels' design are described in csr.cu.
#ifndef MSP_CUDA_CSR_CUH
#define MSP_CUDA_CSR_CUH

#include "csr_merge.cuh"

#define SCALAR_THREADS 256
#define VECTOR_THREADS 256
#define VECTOR_ROWS 4 // rows a vector group works on at once
// 4 blocks of 256 per SM: the compiler keeps the vector kernels at 64 registers without spills
// (-Xptxas -v, every pair of precisions); 6 or 8 blocks would spill.
#define VECTOR_MIN_BLOCKS 4

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
  SLOT_COUNTER,
  SLOT_VAL2, // BDMP-PBP: its fp32 values (its fp64 values are in SLOT_VAL)
  SLOT_META, // BDMP-PBP: its precision words
  // BDMP-TCKI's tile part from here (bdmp.cu; its CSR-like part in the slots above)
  MSP__TCKI_SLOT
};

// ---- values of a row in two parts ---------------------------------------------------------------
// BDMP-PBP on the scalar and vector kernels (src/cuda/bdmp.cu) keeps each row's entries in two
// parts, its fp64 entries first, then its fp32 entries (columns ordered so), with the values in
// two streams: split[row] (int64[rows + 1]) counts the fp64 entries before the row, so the row's
// k-th entry (k from 0) is val at split[row] + k while k < n64 = split[row + 1] - split[row], and
// vb at rowptr[row] - split[row] - n64 + k after (the fp32 entries before the row, plus k - n64).
// Each part is read by its own loader: no per-entry precision test or dependent load. VB =
// csr_no_split (the default): one part, val at rowptr[row] + k. The vector kernel walks the parts
// one after the other (VB a loader), or, VB = csr_select<loader>, both in one loop that picks the
// loader per entry (a row of at most G entries takes one step instead of two; see bdmp.cu for
// the measurements behind the choice).
struct csr_no_split {
  __device__ __forceinline__ double operator()(int64_t) const { return 0.0; }
  __device__ __forceinline__ double stream(int64_t) const { return 0.0; }
};
template <class L> struct csr_select {
  L l;
  __device__ __forceinline__ double operator()(int64_t j) const { return l(j); }
  __device__ __forceinline__ double stream(int64_t j) const { return l.stream(j); }
};
template <class T> struct csr_is_select : std::false_type {};
template <class L> struct csr_is_select<csr_select<L>> : std::true_type {};

// ---- scalar: one thread per row ----------------------------------------------------------------
// A warp holds 32 consecutive rows from a multiple of 32, so a fixed-point y gets its block
// scales in the same pass (ystore_thread_row): no lane leaves early.
template <class VA, msp_precision PX, class Y, class VB = csr_no_split>
__global__ void __launch_bounds__(SCALAR_THREADS)
    csr_scalar_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                      const int32_t *__restrict__ colind, const VA val, const loader<PX> x,
                      double alpha, double beta, const Y y, const VB vb = VB(),
                      const int64_t *__restrict__ split = nullptr) {
  const int64_t row = (int64_t)blockIdx.x * SCALAR_THREADS + threadIdx.x;
  const bool valid = row < rows;
  double s = 0.0;
  if (valid) {
    const int64_t b = __ldg(rowptr + row), end = __ldg(rowptr + row + 1);
    if constexpr (std::is_same<VB, csr_no_split>::value) {
      // the CPU's row sum (msp__cpu_row_sum): the even and the odd entries apart, each product
      // rounded and then added, their sums added, then an odd row's last entry: the same bits as
      // the CPU backend, which solvers whose iterations amplify last-bit differences need
      // (GMRES with a compressed basis, tests/cuda_gmres.c)
      double s0 = 0.0, s1 = 0.0;
      int64_t j = b;
#pragma unroll 2
      for (; j + 2 <= end; j += 2) {
        s0 = __dadd_rn(s0, __dmul_rn(val(j), x(__ldg(colind + j))));
        s1 = __dadd_rn(s1, __dmul_rn(val(j + 1), x(__ldg(colind + j + 1))));
      }
      s = __dadd_rn(s0, s1);
      if (j < end) s = __dadd_rn(s, __dmul_rn(val(j), x(__ldg(colind + j))));
    } else { // the row's first part from val, then the rest from vb (csr_no_split)
      const int64_t s0 = __ldg(split + row), e0 = b + (__ldg(split + row + 1) - s0);
#pragma unroll 4
      for (int64_t j = b; j < e0; j++)
        s += val(s0 + (j - b)) * x(__ldg(colind + j));
#pragma unroll 4
      for (int64_t j = e0; j < end; j++)
        s += vb(j - (e0 - b) - s0) * x(__ldg(colind + j));
    }
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
//  - G is the largest power of two <= the mean row length (msp__vector_group): a row of 27 on 16
//    lanes fills 27 of 32 slots, as it does on 32 lanes, with twice the rows per warp;
//  - each step issues vector_unroll slots per lane and row (k, k + G) before adding, so a lane
//    has VECTOR_ROWS * unroll independent loads in flight (a row of up to 2G is one step);
//  - columns and values are streamed (evict-first) so that x stays in L2.
// Each lane adds its slots in the order k, k + G, k + 2G, ...; then a fixed butterfly: the same
// bits on every run (addition is commutative, so all lanes of a group agree).
// Slots per lane and row and step: 2 where the loaders leave the registers for it, 1 elsewhere
// (the 64-register cap of VECTOR_MIN_BLOCKS): 2 for the pairs of f64, f32 and bf16 (but bf16
// values with an f32 or bf16 x: 1), and, from G = 4 on, for f64, f16, bf16, fx16 and cpms4 values
// with an f64, f32, f16, bf16, fx16 or fx32 x and f32 values with an f16 x (with G = 2 the four
// rows' pointers take the registers); fx32 and cpms2 values and a CPMS x: 1. cpms4 values take 2
// (with 32-bit row indices, below), faster than 1 however many segments are read.
// Where rows are longer than G (long_rows), fx32 values with an f64, f32 or f16 x and bf16 values
// with an f32 x take 2 as well: a second slot then has entries to load, and where rows are G long
// (16 a row on 16 lanes) it is an empty step that costs registers. "Longer" is tested two ways
// (vector_long_rows), each where it did better: for fx32, at least half of the rows longer than
// G, since the mean alone also gave 2 slots to power-law graphs, whose rows are mostly short, and
// made fx32 slower there; for bf16 values with an f32 x, the mean, since 2 slots pay on those
// graphs as well. cpms2 values gain on some matrices and lose on others with 2 slots, and keep 1.
// The measurements behind these choices and those below are in docs/design.md ("Kernel choices
// and what was measured").
//
// Tried and not taken:
//  - 8 rows a group instead of 4 (it spills or runs fewer blocks per SM) was slower for every
//    value precision: the kernel is bound by the L1/TEX pipeline of its x gathers, which touch
//    several lines per load whatever the value precision, so narrower values do not shorten them;
//  - each warp copying 32 rows' columns and decoded values into shared memory, so that a load of x
//    reads the k-th columns of 32 consecutive rows (as the scalar kernel does), was slower for
//    nearly every precision: shared memory goes through the same L1/TEX path as the gathers, so
//    the copies add to the pipeline they were to relieve (it gained only for CPMS values read in
//    one segment and on a stencil with f32 x and y, where the scalar kernel with 2-byte values was
//    faster still: the CSR rule gives it those, src/core/matrix.c);
//  - for G >= 8, one coalesced load of 32 rows' pointers per warp, shuffled to the groups: fewer
//    warps in flight cost more than the latency of the row pointers.
// Under the 64-register cap a few pairs of loaders still spill a few bytes, through L1 (ptxas -v
// lists them).
//
// Fixed-point values load their block's scale with every value (loader<FX*>): a per-lane reader
// that keeps the scale and reloads it only at a block's first value made fx32 faster but fx16
// slower, and the scalar kernel's fx16 much slower (the conditional load holds back the unrolled
// loads).
//
// Row indices in the loop: 32 bits (a row is at most the column count long, an int32) save
// registers and integer work, but ptxas then schedules some loaders' loops worse. So 64-bit
// indices for f64, f16 and bf16 values with an f64, f32, f16 or bf16 x, where they are faster
// (a bf16 x by analogy with f16), and 32-bit for the others. f64 values with an f32 x remain
// slower than with an f64 x on some matrices.
__host__ __device__ constexpr bool vector_index64(msp_precision pa, msp_precision px) {
  return (px == MSP_PRECISION_F64 || px == MSP_PRECISION_F32 || px == MSP_PRECISION_F16 ||
          px == MSP_PRECISION_BF16) &&
         (pa == MSP_PRECISION_F64 || pa == MSP_PRECISION_F16 || pa == MSP_PRECISION_BF16);
}
__host__ __device__ constexpr bool vector_light(msp_precision p) {
  return p == MSP_PRECISION_F64 || p == MSP_PRECISION_F32 || p == MSP_PRECISION_BF16;
}
// long_rows: a second slot per step has entries to load, by the test vector_long_rows picks for
// the pair; the launcher instantiates the kernel for it only where the answer differs
// (vector_unroll_differs).
__host__ __device__ constexpr int vector_unroll(msp_precision pa, msp_precision px, int g,
                                                bool long_rows) {
  if (g >= 4 && long_rows &&
      ((pa == MSP_PRECISION_FX32 &&
        (px == MSP_PRECISION_F64 || px == MSP_PRECISION_F32 || px == MSP_PRECISION_F16)) ||
       (pa == MSP_PRECISION_BF16 && px == MSP_PRECISION_F32)))
    return 2;
  if (g >= 4 && pa == MSP_PRECISION_F32 && px == MSP_PRECISION_F16) return 2;
  if (vector_light(pa) && vector_light(px))
    return pa == MSP_PRECISION_BF16 && px != MSP_PRECISION_F64 ? 1 : 2;
  const bool va = pa == MSP_PRECISION_F64 || pa == MSP_PRECISION_F16 || pa == MSP_PRECISION_BF16 ||
                  pa == MSP_PRECISION_FX16 || pa == MSP_PRECISION_CPMS4;
  const bool vx = vector_light(px) || px == MSP_PRECISION_F16 || px == MSP_PRECISION_FX16 ||
                  px == MSP_PRECISION_FX32;
  return g >= 4 && va && vx ? 2 : 1;
}
// The long-rows test of a pair: the mean row length above G (m->i64[3], csr.cu) for bf16 values
// with an f32 x, at least half of the rows longer than G (m->i64[4]) for the others.
__host__ __device__ constexpr bool vector_long_by_mean(msp_precision pa, msp_precision px) {
  return pa == MSP_PRECISION_BF16 && px == MSP_PRECISION_F32;
}
static inline bool vector_long_rows(const msp__cuda_matrix *m, msp_precision pa, msp_precision px) {
  return m->i64[vector_long_by_mean(pa, px) ? 3 : 4] != 0;
}
__host__ __device__ constexpr bool vector_unroll_differs(msp_precision pa, msp_precision px,
                                                         int g) {
  return vector_unroll(pa, px, g, true) != vector_unroll(pa, px, g, false);
}
// A fixed-point y is staged per CUDA block (VECTOR_THREADS / 32 * GPW * VECTOR_ROWS consecutive
// rows from a multiple of 32, in dynamic shared memory: the f64 launch asks for none, so its
// L1 carve-out is untouched), then each warp stores whole blocks of 32 rows (ystore_warp).
template <class VA, msp_precision PX, int G, class Y, class VB = csr_no_split, bool LONG = false>
__global__ void __launch_bounds__(VECTOR_THREADS, VECTOR_MIN_BLOCKS)
    csr_vector_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                      const int32_t *__restrict__ colind, const VA val, const loader<PX> x,
                      double alpha, double beta, const Y y, const VB vb = VB(),
                      const int64_t *__restrict__ split = nullptr) {
  constexpr msp_precision PA = VA::prec;
  constexpr bool SPLIT = !std::is_same<VB, csr_no_split>::value;
  constexpr bool SELECT = csr_is_select<VB>::value;
  // Rows in two parts (PBP), one after the other: ptxas spills 72-84 bytes (the second part's
  // row data while the first is summed; with one slot per step, 116-124 bytes). In one loop
  // (SELECT): one slot per step, without spills (with two, 104-112 bytes).
  constexpr int GPW = 32 / G, UNROLL = SELECT ? 1 : vector_unroll(PA, PX, G, LONG);
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
    // rows in two parts: 32-bit row indices (with 64-bit ones ptxas spilled)
    using I = typename std::conditional<vector_index64(PA, PX) && !SPLIT, int64_t, int>::type;
    // One part of the rows: row r's entries k < n[r], value at vb0[r] + k, column at
    // cb0[r] + k, read by ld.
    auto part = [&](const auto &ld, const int64_t(&vb0)[VECTOR_ROWS],
                    const int64_t(&cb0)[VECTOR_ROWS], const I(&n)[VECTOR_ROWS]) {
      I longest = 0;
#pragma unroll
      for (int r = 0; r < VECTOR_ROWS; r++)
        longest = n[r] > longest ? n[r] : longest;
      for (I k = lane; k < longest; k += G * UNROLL) {
        if constexpr (UNROLL == 1) { // one load per lane and row (buffered, it would spill)
#pragma unroll
          for (int r = 0; r < VECTOR_ROWS; r++)
            if (k < n[r]) s[r] += ld.stream(vb0[r] + k) * x(__ldcs(colind + cb0[r] + k));
        } else {
          double p[VECTOR_ROWS][UNROLL];
          // All loads of the step first (predicated: no load past a row's end), then the sums.
#pragma unroll
          for (int r = 0; r < VECTOR_ROWS; r++) {
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
              const I kk = k + u * G;
              p[r][u] = kk < n[r] ? ld.stream(vb0[r] + kk) * x(__ldcs(colind + cb0[r] + kk)) : 0.0;
            }
          }
#pragma unroll
          for (int r = 0; r < VECTOR_ROWS; r++) {
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
              if (k + u * G < n[r]) s[r] += p[r][u];
          }
        }
      }
    };
    // Each row's start ptr[row] and length ptr[row + 1] - ptr[row] (0 past the last row).
    auto spans = [&](const int64_t *ptr, int64_t(&start)[VECTOR_ROWS], I(&n)[VECTOR_ROWS]) {
#pragma unroll
      for (int r = 0; r < VECTOR_ROWS; r++) {
        const int64_t row = base + r * GPW;
        start[r] = row < rows ? __ldg(ptr + row) : 0;
        n[r] = row < rows ? (I)(__ldg(ptr + row + 1) - start[r]) : 0;
      }
    };
    int64_t b[VECTOR_ROWS];
    I len[VECTOR_ROWS];
    spans(rowptr, b, len);
    if constexpr (!SPLIT) {
      part(val, b, b, len);
    } else {
      // rows in two parts: v0 the first part's start in val, n0 its length
      int64_t v0[VECTOR_ROWS];
      I n0[VECTOR_ROWS];
      spans(split, v0, n0);
      if constexpr (SELECT) { // both parts in one loop
        I longest = 0;
#pragma unroll
        for (int r = 0; r < VECTOR_ROWS; r++)
          longest = len[r] > longest ? len[r] : longest;
        for (I k = lane; k < longest; k += G) {
#pragma unroll
          for (int r = 0; r < VECTOR_ROWS; r++)
            if (k < len[r]) {
              const double a =
                  k < n0[r] ? val.stream(v0[r] + k) : vb.stream(b[r] - v0[r] - n0[r] + k);
              s[r] += a * x(__ldcs(colind + b[r] + k));
            }
        }
      } else {
        // the fp64 part, then the rest: each row's sum keeps its order (entry by entry per lane)
        int64_t c1[VECTOR_ROWS];
        part(val, v0, b, n0);
#pragma unroll
        for (int r = 0; r < VECTOR_ROWS; r++) {
          v0[r] = b[r] - v0[r]; // the fp32 entries before the row
          c1[r] = b[r] + n0[r];
          len[r] -= n0[r];
        }
        part(vb, v0, c1, len);
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

// ---- launch ------------------------------------------------------------------------------------

template <class VA, msp_precision PX, int G, class Y, class VB>
static void launch_vector_g(cudaStream_t s, int64_t rows, const int64_t *rp, const int32_t *ci,
                            const VA &va, const VB &vb, const int64_t *split, const loader<PX> &xa,
                            double alpha, double beta, const Y &y, bool long_rows) {
  constexpr int64_t per_warp = (int64_t)(32 / G) * VECTOR_ROWS;
  constexpr size_t block_rows = VECTOR_THREADS / 32 * per_warp;
  const unsigned blocks = msp__cuda_blocks((rows + per_warp - 1) / per_warp * 32, VECTOR_THREADS);
  size_t smem = 0;
  if constexpr (!ystore_is_f64<Y>)
    if (msp_prec_is_fixed(y.a.prec)) smem = block_rows * sizeof(double);
  if constexpr (vector_unroll_differs(VA::prec, PX, G) && std::is_same<VB, csr_no_split>::value) {
    if (long_rows) {
      csr_vector_kernel<VA, PX, G, Y, VB, true>
          <<<blocks, VECTOR_THREADS, smem, s>>>(rows, rp, ci, va, xa, alpha, beta, y, vb, split);
      return;
    }
  }
  csr_vector_kernel<VA, PX, G, Y, VB>
      <<<blocks, VECTOR_THREADS, smem, s>>>(rows, rp, ci, va, xa, alpha, beta, y, vb, split);
}

// Enqueue the product with kernel k on ctx's stream; nothing waits for it. m holds the CSR
// structure and merge-path plan of msp__cuda_csr_structure_upload; va reads the values (with vb
// and split, rows in two parts: scalar and vector kernels only, see csr_no_split).
template <class VA, msp_precision PX, class Y, class VB = csr_no_split>
static msp_status msp__cuda_csr_launch(msp_context ctx, msp_kernel k, const msp__cuda_matrix *m,
                                       int64_t rows, const VA &va, const msp_vector x, double alpha,
                                       double beta, const Y &y, const VB &vb = VB(),
                                       const int64_t *split = nullptr) {
  msp_status st = MSP_SUCCESS;
  constexpr bool SPLIT = !std::is_same<VB, csr_no_split>::value;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t *rp = (const int64_t *)m->d[SLOT_ROWPTR];
  const int32_t *ci = (const int32_t *)m->d[SLOT_COLIND];
  const loader<PX> xa = msp__vector_loader<PX>(x);
  switch (k) {
  case MSP_KERNEL_SCALAR:
    csr_scalar_kernel<VA, PX, Y, VB>
        <<<msp__cuda_blocks(rows, SCALAR_THREADS), SCALAR_THREADS, 0, s>>>(
            rows, rp, ci, va, xa, alpha, beta, y, vb, split);
    MSP_CUDA_CHECK_LAUNCH("csr_scalar_kernel");
    break;
  case MSP_KERNEL_VECTOR: {
    const bool lr = vector_long_rows(m, VA::prec, PX);
    switch ((int)m->i64[0]) {
    case 2:
      launch_vector_g<VA, PX, 2, Y>(s, rows, rp, ci, va, vb, split, xa, alpha, beta, y, lr);
      break;
    case 4:
      launch_vector_g<VA, PX, 4, Y>(s, rows, rp, ci, va, vb, split, xa, alpha, beta, y, lr);
      break;
    case 8:
      launch_vector_g<VA, PX, 8, Y>(s, rows, rp, ci, va, vb, split, xa, alpha, beta, y, lr);
      break;
    case 16:
      launch_vector_g<VA, PX, 16, Y>(s, rows, rp, ci, va, vb, split, xa, alpha, beta, y, lr);
      break;
    default:
      launch_vector_g<VA, PX, 32, Y>(s, rows, rp, ci, va, vb, split, xa, alpha, beta, y, lr);
      break;
    }
    MSP_CUDA_CHECK_LAUNCH("csr_vector_kernel");
    break;
  }
  default: {
    if constexpr (SPLIT) {
      return msp__error(MSP_ERR_INTERNAL, "csr launch: rows in two parts need the scalar or "
                                          "vector kernel");
    } else {
      const int64_t tiles = m->i64[1], nruns = m->i64[2], nlong = m->i64[5];
      const bool fused = m->i64[7] > 0; // the kernel applies the carries: no fix-up launch
      double *carry = (double *)m->d[SLOT_CARRY], *head = carry + tiles;
      csr_merge_kernel<VA, PX, Y><<<(unsigned)tiles, MERGE_THREADS, 0, s>>>(
          rows, rp, ci, va, xa, alpha, beta, y, (const int64_t *)m->d[SLOT_TILE_ROW],
          (const int64_t *)m->d[SLOT_TILE_NZ], carry, head,
          fused ? (const int32_t *)m->d[SLOT_TILE_RUN] : NULL,
          fused ? (const int64_t *)m->d[SLOT_RUN_ROW] : NULL,
          fused ? (unsigned *)m->d[SLOT_COUNTER] : NULL, csr_merge_ipt(m));
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
    }
    break;
  }
  }
exit:
  return st;
}

// The kernel A's products run (A->kernel, or the CSR rule's choice). The merge path cannot write
// a fixed-point y itself (a block of 32 rows may straddle its tiles): 1 when the product must go
// through msp__cuda_spmv_fixed_y.
static inline msp_kernel msp__cuda_csr_kernel(const msp_matrix A) {
  const msp_kernel k = A->kernel;
  return k == MSP_KERNEL_SCALAR || k == MSP_KERNEL_VECTOR || k == MSP_KERNEL_MERGE
             ? k
             : msp_choose_kernel(&A->stats, NULL, 0);
}
static inline bool msp__cuda_csr_via_f64_y(msp_kernel k, const msp_vector y) {
  return k == MSP_KERNEL_MERGE && msp_prec_is_fixed(y->prec);
}

// Vector group: the largest power of two <= the mean row length, in 2..32. The smallest power of
// two >= the mean (the rule before) was slower on the balanced matrices the rule gives the vector
// kernel: a row of 27 on 16 lanes fills 27 of 32 slots, as on 32 lanes, with twice the rows per
// warp.
__host__ __device__ static inline int msp__vector_group(int64_t rows, int64_t nnz) {
  const double mean = rows > 0 ? (double)nnz / (double)rows : 0.0;
  int g = 2;
  while (g < 32 && (double)(2 * g) <= mean)
    g *= 2;
  return g;
}

// ---- the product, one value precision per instantiation -----------------------------------------
// y = alpha A x + beta y with kernel k, for A's values stored in precision PA, x in the
// precisions compiled with PA (msp__pair_compiled) and every store of y. csr.cu dispatches over the
// values' precision; the instantiations are compiled in their own files (csr_values_*.cu), so that
// a build with several cores compiles the CSR kernels in parallel. A missing one is a link error.
template <msp_precision PA>
msp_status msp__cuda_csr_spmv_values(msp_context ctx, msp_kernel k, const msp_matrix A,
                                     msp_vector x, double alpha, double beta, msp_vector y) {
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  // The device view of the stored values; CPMS reads the segments the matrix asks for now
  // (msp_matrix_set_cpms_segments may change them after the upload).
  loader<PA> va;
  va.a = msp__fmt_values(A, m, SLOT_VAL, SLOT_SCALES);
  return msp__x_dispatch<PA>(x->prec, [&](auto px) {
    return msp__ystore_dispatch(y, [&](const auto &ys) {
      return msp__cuda_csr_launch<decltype(va), decltype(px)::value>(ctx, k, m, A->rows, va, x,
                                                                     alpha, beta, ys);
    });
  });
}
#define MSP__CSR_VALUES(P)                                                                         \
  template msp_status msp__cuda_csr_spmv_values<P>(msp_context, msp_kernel, const msp_matrix,      \
                                                   msp_vector, double, double, msp_vector)
#define MSP__CSR_VALUES_EXTERN_(name, tag, bytes) extern MSP__CSR_VALUES(MSP_PRECISION_##name);
MSP_PRECISION_LIST(MSP__CSR_VALUES_EXTERN_)
#undef MSP__CSR_VALUES_EXTERN_

// CSR structure of a matrix on the device (slots ROWPTR, COLIND and the merge-path plan) and its
// vector group size in m->i64[0] (csr.cu). Slots ROWPTR and COLIND already filled (a structure
// built on the device) are kept, and colind may then be NULL; the plan is made from the host
// rowptr either way.
extern "C" msp_status msp__cuda_csr_structure_upload(msp_context ctx, msp__cuda_matrix *m,
                                                     int64_t rows, int64_t nnz,
                                                     const int64_t *rowptr, const int32_t *colind);
// The same with the tiles' merge-path coordinates (trow, tnz: host arrays of MERGE_TILE-item
// tiles + 1, as msp__merge_search gives them) and the rows longer than the vector group (>= 0)
// made elsewhere, so that rowptr is read on the host only at the tiles' rows.
extern "C" int msp__cuda_csr_merge_ipt(msp_context ctx, int64_t rows, int64_t nnz);
extern "C" msp_status msp__cuda_csr_structure_planned(msp_context ctx, msp__cuda_matrix *m,
                                                      int64_t rows, int64_t nnz,
                                                      const int64_t *rowptr, const int32_t *colind,
                                                      const int64_t *trow, const int64_t *tnz,
                                                      int64_t longer);

#endif

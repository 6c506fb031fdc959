// bdmp_convert.cu: BDMP-PBP built on the device: the per-tile precision
// selection (the paper's threshold rule and the error-bounded --digits rule), the packing of the
// two value streams with their precision words, and the device layout of bdmp.cu, from the fp64
// CSR arrays of the source on the device. The result is the host build's, bit for bit
// (src/core/bdmp.c; tests/cuda_bdmp.c compares them): the same tiles go to fp32, and the
// threshold and the bound come from the same operations in the same order:
//   - lambda = f (mean|a| + 3 std|a|) from the deterministic sums of bdmp.h (a warp per chunk,
//     then the chunks' sums level by level), every operation rounded on its own;
//   - tiles are found by a 16-way merge of the block row's rows (a warp per block row, lane r
//     walking row r), as the host's tiling does; threshold mode decides each tile at once;
//   - the error-bounded mode's greedy pass is taken block row by block row (a block row's tiles
//     use only its own rows' budgets, bdmp.c): tile costs, a stable sort of each block row's
//     tiles by cost (cub::DeviceSegmentedSort), then the warp takes them in that order;
//   - the bound, each row's fp32 entries in column order (a thread per row).
// Then: a warp's ballot per 32 entries gives the precision words, a scan their running fp64
// counts, and each entry goes to its stream. The host record (bdmp.h) is read back from the
// device, so every host path (CPU products, msp_matrix_to_csr, the report) sees the same matrix.
// The device time of all this (event-timed, from the first copy or kernel to the finished
// device layout, the host's merge-path plan included) is the report's convert_device_ms.
#include "bdmp_convert.cuh"
#include "precision.h"

#include <cub/device/device_segmented_sort.cuh>
#include <float.h>
#include <string.h>

// The scalars of the selection (one read-back): tiles, fp32 tiles, the bound's bits, lambda's
// bits, the mean's bits, long block rows.
enum { SC_TILES, SC_TILES32, SC_BOUND, SC_LAMBDA, SC_MEAN, SC_NLONG, SC_COUNT };

// ---- value tests (bdmp.c's, on the device) -----------------------------------------------------
__device__ __forceinline__ bool exact_f32(double a) {
  return (double)__double2float_rn(a) == a;
}
__device__ __forceinline__ bool fits_f32(double a) {
  const double m = fabs(a);
  return m == 0.0 || (m >= (double)FLT_MIN && m <= (double)FLT_MAX);
}
// What storing a in fp32 may cost: |a|, or 0 when fp32 holds it exactly (not under the paper's
// rule, PAPER).
template <bool PAPER> __device__ __forceinline__ double cost_of(double a) {
  return !PAPER && exact_f32(a) ? 0.0 : fabs(a);
}

// ---- the threshold's statistics (bdmp.h: deterministic sums) -----------------------------------
template <int MODE>
__global__ void __launch_bounds__(CV_THREADS)
    det_sum_kernel(int64_t n, const double *__restrict__ v, const unsigned long long *sc,
                   double *__restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int64_t c = MSP__BDMP_SUM_CHUNK, q = (int64_t)blockIdx.x * CV_WARPS + (threadIdx.x >> 5);
  if (q * c >= n) return; // the whole warp
  const double mean = MODE == MSP__BDMP_SUM_DEV2 ? __longlong_as_double((long long)sc[SC_MEAN]) : 0;
  const int64_t end = q * c + c < n ? q * c + c : n;
  double s = 0.0;
  for (int64_t k = q * c + lane; k < end; k += 32) {
    const double a = v[k];
    double t = a;
    if (MODE == MSP__BDMP_SUM_ABS) t = fabs(a);
    if (MODE == MSP__BDMP_SUM_DEV2) {
      const double d = __dsub_rn(fabs(a), mean);
      t = __dmul_rn(d, d);
    }
    s = __dadd_rn(s, t);
  }
  for (int off = 16; off > 0; off >>= 1)
    s = __dadd_rn(s, __shfl_xor_sync(CV_FULL, s, off));
  if (lane == 0) out[q] = s;
}

__global__ void set_mean(const double *sum, int64_t nnz, unsigned long long *sc) {
  sc[SC_MEAN] = (unsigned long long)__double_as_longlong(__ddiv_rn(*sum, (double)nnz));
}
__global__ void set_lambda(const double *sq, int64_t nnz, double f, unsigned long long *sc) {
  const double mean = __longlong_as_double((long long)sc[SC_MEAN]);
  const double sd = __dsqrt_rn(__ddiv_rn(*sq, (double)nnz));
  sc[SC_LAMBDA] =
      (unsigned long long)__double_as_longlong(__dmul_rn(f, __dadd_rn(mean, __dmul_rn(3.0, sd))));
}

// The sum of n terms of v (mode) into *out (a device pointer into buf), levels as in bdmp.h. buf
// holds 2 ceil(n / chunk) doubles.
static msp_status dev_sum(int64_t n, const double *v, int mode, const unsigned long long *sc,
                          double *buf, const double **out, cudaStream_t s) {
  msp_status st = MSP_SUCCESS;
  const int64_t c = MSP__BDMP_SUM_CHUNK, half = (n + c - 1) / c;
  for (int level = 0;; level++) {
    double *part = buf + (level & 1) * half;
    const int64_t nc = (n + c - 1) / c;
    const unsigned blocks = msp__cuda_blocks(nc, CV_WARPS);
    if (mode == MSP__BDMP_SUM_ABS)
      det_sum_kernel<MSP__BDMP_SUM_ABS><<<blocks, CV_THREADS, 0, s>>>(n, v, sc, part);
    else if (mode == MSP__BDMP_SUM_DEV2)
      det_sum_kernel<MSP__BDMP_SUM_DEV2><<<blocks, CV_THREADS, 0, s>>>(n, v, sc, part);
    else
      det_sum_kernel<MSP__BDMP_SUM_ID><<<blocks, CV_THREADS, 0, s>>>(n, v, sc, part);
    MSP_CUDA_CHECK_LAUNCH("det_sum_kernel");
    if (nc == 1) {
      *out = part;
      break;
    }
    v = part;
    n = nc;
    mode = MSP__BDMP_SUM_ID;
  }
exit:
  return st;
}

// ---- tiles -----------------------------------------------------------------------------------
// Threshold mode: a tile is fp32 when each of its values is exact in fp32 (not under the
// paper's rule) or below lambda and in fp32's normal range (bdmp.c select_precision). e64: 1 for
// an fp64 entry.
// A block row of more than LONG_BROW entries (power-law rows) would keep its warp walking its
// tiles one by one long after the others are done: with long_list, such block rows are listed
// instead and decided by tile_threshold_long, a thread block each.
#define LONG_BROW 4096
#define LONG_THREADS 512
#define LONG_SMEM_MAX (200 * 1024) // the bitmaps' bytes at most (and the device's opt-in limit)
template <bool PAPER>
__global__ void __launch_bounds__(CV_THREADS)
    tile_threshold(int64_t rows, int64_t nbrows, const int64_t *__restrict__ rowptr,
                   const int32_t *__restrict__ colind, const double *__restrict__ val,
                   double lambda_fixed, unsigned long long *sc, uint8_t *__restrict__ e64,
                   int64_t *__restrict__ long_list) {
  const int lane = threadIdx.x & 31;
  const int64_t br = (int64_t)blockIdx.x * CV_WARPS + (threadIdx.x >> 5);
  if (br >= nbrows) return;
  if (long_list) {
    const int64_t r0 = br * MSP_BDMP_TILE;
    const int64_t r1 = r0 + MSP_BDMP_TILE < rows ? r0 + MSP_BDMP_TILE : rows;
    if (rowptr[r1] - rowptr[r0] > LONG_BROW) { // warp-uniform
      if (lane == 0) long_list[atomicAdd(sc + SC_NLONG, 1ull)] = br;
      return;
    }
  }
  const double lambda =
      lambda_fixed > 0 ? lambda_fixed : __longlong_as_double((long long)sc[SC_LAMBDA]);
  brow_cursor c(rows, rowptr, br, lane);
  unsigned long long nt = 0, n32 = 0;
  for (unsigned bc; (bc = c.next(colind)) != CV_NONE;) {
    const int64_t s0 = c.cur;
    bool ok = true;
    for (; c.in(colind, bc); c.cur++) {
      const double a = __ldg(val + c.cur);
      ok &= (!PAPER && exact_f32(a)) || (fabs(a) < lambda && fits_f32(a));
    }
    const bool f32 = __all_sync(CV_FULL, ok);
    for (int64_t k = s0; k < c.cur; k++)
      e64[k] = f32 ? 0 : 1;
    nt++;
    n32 += f32;
  }
  if (lane == 0) {
    atomicAdd(sc + SC_TILES, nt);
    atomicAdd(sc + SC_TILES32, n32);
  }
}

// The listed long block rows (threshold mode), a thread block each: every entry marks its block
// column in a bitmap of the tiles present and, when its value does not qualify, in a bitmap of
// the tiles kept in fp64; then each entry takes its tile's bit. The same decision as the warp's
// (a tile is fp32 when all its values qualify), in any order. Shared memory: the two bitmaps,
// words = ceil(block columns / 32) each.
template <bool PAPER>
__global__ void __launch_bounds__(LONG_THREADS)
    tile_threshold_long(int64_t rows, int64_t words, const int64_t *__restrict__ rowptr,
                        const int32_t *__restrict__ colind, const double *__restrict__ val,
                        double lambda_fixed, unsigned long long *sc,
                        const int64_t *__restrict__ long_list, uint8_t *__restrict__ e64) {
  extern __shared__ unsigned bits[]; // present[words], then fp64[words]
  unsigned *present = bits, *fail = bits + words;
  const double lambda =
      lambda_fixed > 0 ? lambda_fixed : __longlong_as_double((long long)sc[SC_LAMBDA]);
  const int64_t nlong = (int64_t)sc[SC_NLONG];
  for (int64_t q = blockIdx.x; q < nlong; q += gridDim.x) {
    const int64_t r0 = long_list[q] * MSP_BDMP_TILE;
    const int64_t r1 = r0 + MSP_BDMP_TILE < rows ? r0 + MSP_BDMP_TILE : rows;
    const int64_t lo = rowptr[r0], hi = rowptr[r1];
    for (int64_t w = threadIdx.x; w < 2 * words; w += blockDim.x)
      bits[w] = 0;
    __syncthreads();
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) {
      const unsigned bc = (unsigned)__ldg(colind + k) >> 4;
      const double a = __ldg(val + k);
      atomicOr(present + (bc >> 5), 1u << (bc & 31));
      if (!((!PAPER && exact_f32(a)) || (fabs(a) < lambda && fits_f32(a))))
        atomicOr(fail + (bc >> 5), 1u << (bc & 31));
    }
    __syncthreads();
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) {
      const unsigned bc = (unsigned)__ldg(colind + k) >> 4;
      e64[k] = (uint8_t)((fail[bc >> 5] >> (bc & 31)) & 1u);
    }
    unsigned nt = 0, n32 = 0;
    for (int64_t w = threadIdx.x; w < words; w += blockDim.x) {
      nt += __popc(present[w]);
      n32 += __popc(present[w] & ~fail[w]);
    }
    nt = __reduce_add_sync(CV_FULL, nt);
    n32 = __reduce_add_sync(CV_FULL, n32);
    if ((threadIdx.x & 31) == 0) {
      atomicAdd(sc + SC_TILES, (unsigned long long)nt);
      atomicAdd(sc + SC_TILES32, (unsigned long long)n32);
    }
    __syncthreads(); // the bitmaps are cleared for the next block row
  }
}

// Error-bounded mode. Row sums and budgets (budget_i = rel * S_i, bdmp.c).
__global__ void row_budgets(int64_t rows, const int64_t *__restrict__ rowptr,
                            const double *__restrict__ val, double rel,
                            double *__restrict__ budget) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  double s = 0.0;
  for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
    s = __dadd_rn(s, fabs(val[k]));
  budget[i] = __dmul_rn(rel, s);
}

// Tiles per block row (tcount[br]) and in all (sc).
__global__ void __launch_bounds__(CV_THREADS)
    tile_count(int64_t rows, int64_t nbrows, const int64_t *__restrict__ rowptr,
               const int32_t *__restrict__ colind, int64_t *__restrict__ tcount,
               unsigned long long *sc) {
  const int lane = threadIdx.x & 31;
  const int64_t br = (int64_t)blockIdx.x * CV_WARPS + (threadIdx.x >> 5);
  if (br >= nbrows) return;
  brow_cursor c(rows, rowptr, br, lane);
  int64_t nt = 0;
  for (unsigned bc; (bc = c.next(colind)) != CV_NONE; nt++) {
    while (c.in(colind, bc))
      c.cur++;
  }
  if (lane == 0) {
    tcount[br] = nt;
    atomicAdd(sc + SC_TILES, (unsigned long long)nt);
  }
}

// Each tile's cost (the largest share of a row's budget it would use; +inf when a value is
// neither exact in fp32 nor in its normal range), its place in the block row and its block
// column, at toff[br] + j for the block row's j-th tile.
template <bool PAPER>
__global__ void __launch_bounds__(CV_THREADS)
    tile_costs(int64_t rows, int64_t nbrows, const int64_t *__restrict__ rowptr,
               const int32_t *__restrict__ colind, const double *__restrict__ val,
               const double *__restrict__ budget, const int64_t *__restrict__ toff,
               double *__restrict__ key, int32_t *__restrict__ tidx, uint32_t *__restrict__ tbc) {
  const int lane = threadIdx.x & 31;
  const int64_t br = (int64_t)blockIdx.x * CV_WARPS + (threadIdx.x >> 5);
  if (br >= nbrows) return;
  brow_cursor c(rows, rowptr, br, lane);
  const int64_t i = br * MSP_BDMP_TILE + (lane & 15);
  const double b = c.cur < c.end ? budget[i] : 0.0;
  const int64_t t0 = toff[br];
  int32_t j = 0;
  for (unsigned bc; (bc = c.next(colind)) != CV_NONE; j++) {
    double ti = 0.0;
    bool ok = true;
    for (; c.in(colind, bc); c.cur++) {
      const double a = __ldg(val + c.cur), ca = cost_of<PAPER>(a);
      ok &= ca == 0.0 || fits_f32(a);
      ti = __dadd_rn(ti, ca);
    }
    double cost = ti > 0 ? (b > 0 ? __ddiv_rn(ti, b) : HUGE_VAL) : 0.0;
    for (int off = 16; off > 0; off >>= 1)
      cost = fmax(cost, __shfl_xor_sync(CV_FULL, cost, off));
    if (!__all_sync(CV_FULL, ok)) cost = HUGE_VAL;
    if (lane == 0) {
      key[t0 + j] = cost;
      tidx[t0 + j] = j;
      tbc[t0 + j] = bc;
    }
  }
}

// The greedy pass of one block row over its tiles sorted by (cost, place): a tile goes to fp32
// when every row it touches keeps its fp32 cost within its budget.
template <bool PAPER>
__global__ void __launch_bounds__(CV_THREADS)
    tile_accept(int64_t rows, int64_t nbrows, const int64_t *__restrict__ rowptr,
                const int32_t *__restrict__ colind, const double *__restrict__ val,
                const double *__restrict__ budget, const int64_t *__restrict__ toff,
                const double *__restrict__ key, const int32_t *__restrict__ tidx,
                const uint32_t *__restrict__ tbc, unsigned long long *sc,
                uint8_t *__restrict__ e64) {
  const int lane = threadIdx.x & 31;
  const int64_t br = (int64_t)blockIdx.x * CV_WARPS + (threadIdx.x >> 5);
  if (br >= nbrows) return;
  const brow_cursor row(rows, rowptr, br, lane);
  const int64_t i = br * MSP_BDMP_TILE + (lane & 15);
  const double b = row.cur < row.end ? budget[i] : 0.0;
  const int64_t t0 = toff[br], t1 = toff[br + 1];
  double used = 0.0;
  unsigned long long n32 = 0;
  for (int64_t q = t0; q < t1 && key[q] <= 1.0; q++) {
    const uint32_t bc = tbc[t0 + tidx[q]];
    // the tile's entries in this row: the first column >= 16 bc, then while in the block column
    int64_t lo = row.cur, hi = row.end;
    const int64_t first = (int64_t)bc * MSP_BDMP_TILE;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if ((int64_t)__ldg(colind + mid) < first)
        lo = mid + 1;
      else
        hi = mid;
    }
    double ti = 0.0;
    int64_t k = lo;
    for (; k < row.end && ((uint32_t)__ldg(colind + k) >> 4) == bc; k++)
      ti = __dadd_rn(ti, cost_of<PAPER>(__ldg(val + k)));
    const bool ok = !(ti > 0) || __dadd_rn(used, ti) <= b;
    if (!__all_sync(CV_FULL, ok)) continue;
    if (ti > 0) used = __dadd_rn(used, ti);
    for (int64_t e = lo; e < k; e++)
      e64[e] = 0;
    n32++;
  }
  if (lane == 0) atomicAdd(sc + SC_TILES32, n32);
}

// ---- per row: the bound reached and the fp64 entries ------------------------------------------
// bound = max over rows with S_i > 0 of u32 * F_i / S_i, F_i the sum of |a| over the row's
// inexact fp32 entries in column order (bdmp.c); n64[i] the row's fp64 entries. A warp combines
// its rows first (one atomic each).
__global__ void row_final(int64_t rows, const int64_t *__restrict__ rowptr,
                          const double *__restrict__ val, const uint8_t *__restrict__ e64,
                          int64_t *__restrict__ n64, unsigned long long *sc) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  double bound = 0.0;
  if (i < rows) {
    double s = 0.0, used = 0.0;
    int64_t n = 0;
    const int64_t k0 = rowptr[i], k1 = rowptr[i + 1];
    for (int64_t k = k0; k < k1; k++) {
      const double a = val[k];
      s = __dadd_rn(s, fabs(a));
      if (e64[k])
        n++;
      else
        used = __dadd_rn(used, cost_of<false>(a));
    }
    n64[i] = n;
    if (s > 0) bound = __ddiv_rn(__dmul_rn(MSP_U_F32, used), s);
  }
  for (int off = 16; off > 0; off >>= 1)
    bound = fmax(bound, __shfl_xor_sync(CV_FULL, bound, off));
  if ((threadIdx.x & 31) == 0 && bound > 0)
    atomicMax(sc + SC_BOUND, (unsigned long long)__double_as_longlong(bound));
}

// Rows longer than the vector group (csr.cu's plan), one atomic per warp.
__global__ void rows_longer(int64_t rows, const int64_t *__restrict__ rowptr, int64_t group,
                            unsigned long long *count) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned longer = __reduce_add_sync(CV_FULL, i < rows && rowptr[i + 1] - rowptr[i] > group);
  if ((threadIdx.x & 31) == 0 && longer) atomicAdd(count, (unsigned long long)longer);
}

// The merge-path coordinates of the tiles of csr.cu's plan (tiles + 1 diagonals); tstart (may be
// NULL): the row pointer of each tile's row, rowptr[trow[k]].
__global__ void merge_plan(int64_t tiles, int64_t tile, int64_t rows, int64_t nnz,
                           const int64_t *__restrict__ rowptr, int64_t *__restrict__ trow,
                           int64_t *__restrict__ tnz, int64_t *__restrict__ tstart) {
  const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (k > tiles) return;
  const int64_t dg = k * tile < rows + nnz ? k * tile : rows + nnz;
  msp__merge_search(dg, rowptr, rows, nnz, trow + k, tnz + k);
  if (tstart) tstart[k] = rowptr[trow[k]];
}

// ---- packing -----------------------------------------------------------------------------------
// A warp per 32 entries: the word's precision bits and their count (the grid covers whole warps;
// every lane takes part in the ballot).
__global__ void pack_words(int64_t nnz, const uint8_t *__restrict__ e64,
                           uint32_t *__restrict__ mask, unsigned long long *__restrict__ count) {
  const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned m = __ballot_sync(CV_FULL, k < nnz && e64[k] != 0);
  if ((k & 31) == 0 && k < nnz) {
    mask[k >> 5] = m;
    count[k >> 5] = (unsigned long long)__popc(m);
  }
}

// Each entry to its stream: entry k is fp64 number c = before[g] + (fp64 entries of its word
// below it), else fp32 number k - c; the host layout's words (mask, fp64 count before).
__global__ void pack_values(int64_t nnz, const double *__restrict__ val,
                            const uint32_t *__restrict__ mask,
                            const unsigned long long *__restrict__ before, uint2 *__restrict__ meta,
                            float *__restrict__ v32, double *__restrict__ v64) {
  const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= nnz) return;
  const int64_t g = k >> 5;
  const unsigned b = (unsigned)k & 31u, m = mask[g];
  const int64_t c = (int64_t)before[g] + __popc(m & ((1u << b) - 1u));
  if ((m >> b) & 1u)
    v64[c] = val[k];
  else
    v32[k - c] = __double2float_rn(val[k]);
  if (b == 0) meta[g] = make_uint2(m, (uint32_t)before[g]);
}

// PBP_SPLIT: each row's fp64 entries' columns first, then its fp32 entries' (order kept in each).
__global__ void split_columns(int64_t rows, const int64_t *__restrict__ rowptr,
                              const int32_t *__restrict__ colind, const uint8_t *__restrict__ e64,
                              const int64_t *__restrict__ n64, int32_t *__restrict__ out) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  int64_t o64 = rowptr[i], o32 = rowptr[i] + n64[i];
  for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
    if (e64[k])
      out[o64++] = colind[k];
    else
      out[o32++] = colind[k];
  }
}

// ---- the conversion ----------------------------------------------------------------------------
static double bits_double(unsigned long long b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

static msp_status cv_source(msp_context ctx, msp__cv_scratch &tmp, const msp_matrix A,
                            const msp_matrix B, const int64_t **rowptr, const int32_t **colind,
                            const double **val) {
  msp_status st = MSP_SUCCESS;
  const int64_t rows = B->rows, nnz = B->nnz;
  // A's device CSR when it has one on this context (a CUDA matrix record: A's context is the
  // CUDA backend's, not a table derived from it), else A's host CSR (B's copy).
  *rowptr = NULL;
  if (A->ctx == ctx && ctx->backend == msp__backend_cuda() && A->dev &&
      A->format == MSP_FORMAT_CSR && A->precision == MSP_PRECISION_F64) {
    const msp__cuda_matrix *a = (const msp__cuda_matrix *)A->dev;
    *rowptr = (const int64_t *)a->d[SLOT_ROWPTR];
    *colind = (const int32_t *)a->d[SLOT_COLIND];
    *val = (const double *)a->d[SLOT_VAL];
  }
  if (!*rowptr || (nnz > 0 && (!*colind || !*val))) {
    int64_t *rp = NULL;
    int32_t *ci = NULL;
    double *v = NULL;
    MSP_TRY(tmp.get(&rp, rows + 1, "the source's row pointers"));
    MSP_TRY(tmp.get(&ci, nnz, "the source's columns"));
    MSP_TRY(tmp.get(&v, nnz, "the source's values"));
    MSP_CUDA_TRY(cudaMemcpyAsync(rp, B->rowptr, (size_t)(rows + 1) * sizeof(int64_t),
                                 cudaMemcpyHostToDevice, tmp.s));
    if (nnz > 0) {
      MSP_CUDA_TRY(cudaMemcpyAsync(ci, B->colind, (size_t)nnz * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, tmp.s));
      MSP_CUDA_TRY(
          cudaMemcpyAsync(v, B->val, (size_t)nnz * sizeof(double), cudaMemcpyHostToDevice, tmp.s));
    }
    *rowptr = rp;
    *colind = ci;
    *val = v;
  }
exit:
  return st;
}

// The selection (bdmp.c's) on the device: e64, n64 and the scalars SC_* in h_sc.
static msp_status cv_select(msp_context ctx, msp__cv_scratch &tmp, const msp_matrix B,
                            const int64_t *rowptr, const int32_t *colind, const double *val,
                            uint8_t *e64, int64_t *n64, unsigned long long h_sc[SC_COUNT]) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = tmp.s;
  const int64_t rows = B->rows, nnz = B->nnz, nbrows = (rows + MSP_BDMP_TILE - 1) / MSP_BDMP_TILE;
  const msp_convert_options *o = &B->opts;
  const bool paper = o->bdmp_paper_rule != 0;
  const int digits = o->bdmp_digits > 0 ? o->bdmp_digits : 0;
  unsigned long long *sc = NULL;
  MSP_TRY(tmp.get(&sc, SC_COUNT, "the conversion's counters"));
  MSP_CUDA_TRY(cudaMemsetAsync(sc, 0, SC_COUNT * sizeof *sc, s));
  // ---- selection
  if (nnz > 0 && digits == 0) {
    if (!(o->bdmp_lambda > 0)) {
      double *buf = NULL;
      const double *sum = NULL;
      const int64_t half = (nnz + MSP__BDMP_SUM_CHUNK - 1) / MSP__BDMP_SUM_CHUNK;
      MSP_TRY(tmp.get(&buf, 2 * half, "the threshold's partial sums"));
      MSP_TRY(dev_sum(nnz, val, MSP__BDMP_SUM_ABS, sc, buf, &sum, s));
      set_mean<<<1, 1, 0, s>>>(sum, nnz, sc);
      MSP_CUDA_CHECK_LAUNCH("set_mean");
      MSP_TRY(dev_sum(nnz, val, MSP__BDMP_SUM_DEV2, sc, buf, &sum, s));
      set_lambda<<<1, 1, 0, s>>>(sum, nnz, o->bdmp_f, sc);
      MSP_CUDA_CHECK_LAUNCH("set_lambda");
    }
    const double fixed = o->bdmp_lambda > 0 ? o->bdmp_lambda : 0;
    const unsigned blocks = msp__cuda_blocks(nbrows, CV_WARPS);
    // long block rows by thread blocks when the bitmaps fit the shared memory
    const int64_t bwords = ((B->cols + MSP_BDMP_TILE - 1) / MSP_BDMP_TILE + 31) / 32;
    const size_t smem = (size_t)(2 * bwords) * sizeof(unsigned);
    int64_t *long_list = NULL;
    int optin = 0; // the device's shared memory per block with opt-in
    MSP_CUDA_TRY(
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx->device));
    if (smem <= LONG_SMEM_MAX && smem <= (size_t)optin) {
      MSP_TRY(tmp.get(&long_list, nbrows, "the long block rows"));
      if (smem > 48 * 1024) {
        MSP_CUDA_TRY(cudaFuncSetAttribute(tile_threshold_long<true>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        MSP_CUDA_TRY(cudaFuncSetAttribute(tile_threshold_long<false>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
      }
    }
    if (paper)
      tile_threshold<true><<<blocks, CV_THREADS, 0, s>>>(rows, nbrows, rowptr, colind, val, fixed,
                                                         sc, e64, long_list);
    else
      tile_threshold<false><<<blocks, CV_THREADS, 0, s>>>(rows, nbrows, rowptr, colind, val, fixed,
                                                          sc, e64, long_list);
    MSP_CUDA_CHECK_LAUNCH("tile_threshold");
    if (long_list) {
      const unsigned lb = (unsigned)(2 * msp__cuda(ctx)->sm_count);
      if (paper)
        tile_threshold_long<true><<<lb, LONG_THREADS, smem, s>>>(rows, bwords, rowptr, colind, val,
                                                                 fixed, sc, long_list, e64);
      else
        tile_threshold_long<false><<<lb, LONG_THREADS, smem, s>>>(rows, bwords, rowptr, colind, val,
                                                                  fixed, sc, long_list, e64);
    }
    MSP_CUDA_CHECK_LAUNCH("tile_threshold");
  } else if (nnz > 0) {
    double *budget = NULL, *key = NULL, *key2 = NULL;
    int64_t *tcount = NULL, *toff = NULL, ntiles = 0;
    int32_t *tidx = NULL, *tidx2 = NULL;
    uint32_t *tbc = NULL;
    const double rel = 5.0 * pow(10.0, -(double)digits) / MSP_U_F32; // as bdmp.c
    const unsigned blocks = msp__cuda_blocks(nbrows, CV_WARPS);
    MSP_TRY(tmp.get(&budget, rows, "the rows' budgets"));
    MSP_TRY(tmp.get(&tcount, nbrows + 1, "the tiles per block row"));
    MSP_TRY(tmp.get(&toff, nbrows + 1, "the block rows' first tiles"));
    MSP_CUDA_TRY(cudaMemsetAsync(e64, 1, (size_t)nnz, s));
    MSP_CUDA_TRY(cudaMemsetAsync(tcount + nbrows, 0, sizeof *tcount, s));
    row_budgets<<<msp__cuda_blocks(rows, 256), 256, 0, s>>>(rows, rowptr, val, rel, budget);
    MSP_CUDA_CHECK_LAUNCH("row_budgets");
    tile_count<<<blocks, CV_THREADS, 0, s>>>(rows, nbrows, rowptr, colind, tcount, sc);
    MSP_CUDA_CHECK_LAUNCH("tile_count");
    MSP_CUDA_TRY(msp__cv_exclusive_sum(tmp, tcount, toff, nbrows + 1, &st));
    MSP_TRY(st);
    MSP_CUDA_TRY(cudaMemcpyAsync(&ntiles, toff + nbrows, sizeof ntiles, cudaMemcpyDeviceToHost, s));
    MSP_CUDA_TRY(cudaStreamSynchronize(s));
    MSP_TRY(tmp.get(&key, ntiles, "the tiles' costs"));
    MSP_TRY(tmp.get(&key2, ntiles, "the tiles' sorted costs"));
    MSP_TRY(tmp.get(&tidx, ntiles, "the tiles' places"));
    MSP_TRY(tmp.get(&tidx2, ntiles, "the tiles' sorted places"));
    MSP_TRY(tmp.get(&tbc, ntiles, "the tiles' block columns"));
    if (paper)
      tile_costs<true><<<blocks, CV_THREADS, 0, s>>>(rows, nbrows, rowptr, colind, val, budget,
                                                     toff, key, tidx, tbc);
    else
      tile_costs<false><<<blocks, CV_THREADS, 0, s>>>(rows, nbrows, rowptr, colind, val, budget,
                                                      toff, key, tidx, tbc);
    MSP_CUDA_CHECK_LAUNCH("tile_costs");
    if (ntiles > 0) {
      size_t bytes = 0;
      char *t = NULL;
      MSP_CUDA_TRY(cub::DeviceSegmentedSort::StableSortPairs(NULL, bytes, key, key2, tidx, tidx2,
                                                             ntiles, nbrows, toff, toff + 1, s));
      MSP_TRY(tmp.get(&t, (int64_t)bytes, "the tiles' sort"));
      MSP_CUDA_TRY(cub::DeviceSegmentedSort::StableSortPairs(t, bytes, key, key2, tidx, tidx2,
                                                             ntiles, nbrows, toff, toff + 1, s));
    }
    if (paper)
      tile_accept<true><<<blocks, CV_THREADS, 0, s>>>(rows, nbrows, rowptr, colind, val, budget,
                                                      toff, key2, tidx2, tbc, sc, e64);
    else
      tile_accept<false><<<blocks, CV_THREADS, 0, s>>>(rows, nbrows, rowptr, colind, val, budget,
                                                       toff, key2, tidx2, tbc, sc, e64);
    MSP_CUDA_CHECK_LAUNCH("tile_accept");
  }
  if (rows > 0) {
    row_final<<<msp__cuda_blocks(rows, 256), 256, 0, s>>>(rows, rowptr, val, e64, n64, sc);
    MSP_CUDA_CHECK_LAUNCH("row_final");
  }
  MSP_CUDA_TRY(cudaMemcpyAsync(h_sc, sc, SC_COUNT * sizeof *sc, cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
exit:
  return st;
}

msp_status msp__cv_timer::start(cudaStream_t s) {
  msp_status st = MSP_SUCCESS;
  MSP_CUDA_TRY(cudaEventCreate(&ev[0]));
  MSP_CUDA_TRY(cudaEventCreate(&ev[1]));
  MSP_CUDA_TRY(cudaEventRecord(ev[0], s));
exit:
  return st;
}

msp_status msp__cv_timer::stop(cudaStream_t s, double *ms) {
  msp_status st = MSP_SUCCESS;
  float t = 0;
  MSP_CUDA_TRY(cudaEventRecord(ev[1], s));
  MSP_CUDA_TRY(cudaEventSynchronize(ev[1]));
  MSP_CUDA_TRY(cudaEventElapsedTime(&t, ev[0], ev[1]));
  *ms = t;
exit:
  return st;
}

msp_status msp__cv_begin(msp_context ctx, msp__cv_scratch &tmp, msp__cv_timer &timer,
                         const msp_matrix A, const msp_matrix B, const int64_t **rowptr,
                         const int32_t **colind, const double **val, uint8_t **e64, int64_t **n64,
                         msp__bdmp_info *info) {
  msp_status st = MSP_SUCCESS;
  const msp_convert_options *o = &B->opts;
  const int digits = o->bdmp_digits > 0 ? o->bdmp_digits : 0;
  unsigned long long h_sc[SC_COUNT];
  MSP_CUDA_TRY(cudaSetDevice(ctx->device));
  MSP_TRY(timer.start(tmp.s));
  MSP_TRY(cv_source(ctx, tmp, A, B, rowptr, colind, val));
  MSP_TRY(tmp.get(e64, B->nnz, "the entries' precisions"));
  MSP_TRY(tmp.get(n64, B->rows, "the rows' fp64 entries"));
  MSP_TRY(cv_select(ctx, tmp, B, *rowptr, *colind, *val, *e64, *n64, h_sc));
  memset(info, 0, sizeof *info);
  info->lambda = digits               ? 0.0
                 : o->bdmp_lambda > 0 ? o->bdmp_lambda
                                      : (B->nnz > 0 ? bits_double(h_sc[SC_LAMBDA]) : 0.0);
  info->digits = digits;
  info->bound = bits_double(h_sc[SC_BOUND]);
  info->tiles = (int64_t)h_sc[SC_TILES];
  info->tiles32 = (int64_t)h_sc[SC_TILES32];
exit:
  return st;
}

msp_status msp__cv_pbp_pack(msp_context ctx, msp__cv_scratch &tmp, msp__cuda_matrix *m,
                            msp_kernel k, int64_t rows, int64_t nnz, const int64_t *rowptr,
                            const int64_t *h_rowptr, const int32_t *colind, const double *val,
                            const uint8_t *e64, const int64_t *n64, uint2 **meta_out,
                            int64_t *nnz64) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = tmp.s;
  const int64_t words = (nnz + MSP__PBP_WORD - 1) / MSP__PBP_WORD;
  // csr.cu's tile size for this matrix, so that the plan is the upload's
  const int64_t tile = (int64_t)msp__cuda_csr_merge_ipt(ctx, rows, nnz) * MERGE_THREADS;
  const int64_t tiles = (rows + nnz + tile - 1) / tile;
  uint32_t *mask = NULL;
  unsigned long long *count = NULL, *before = NULL, *longer = NULL;
  uint2 *meta = NULL;
  int64_t *h_plan = NULL, *h_sparse = NULL;
  unsigned long long h2[2] = {0, 0}; // fp64 entries, rows longer than the vector group
  MSP_TRY(tmp.get(&mask, words, "the precision words"));
  MSP_TRY(tmp.get(&count, words + 2, "the words' fp64 counts"));
  MSP_TRY(tmp.get(&before, words + 1, "the fp64 entries before each word"));
  MSP_TRY(tmp.get(&meta, words, "the precision words and counts"));
  MSP_CUDA_TRY(cudaMemsetAsync(count + words, 0, 2 * sizeof *count, s));
  if (nnz > 0) {
    pack_words<<<msp__cuda_blocks(words * 32, 256), 256, 0, s>>>(nnz, e64, mask, count);
    MSP_CUDA_CHECK_LAUNCH("pack_words");
  }
  MSP_CUDA_TRY(msp__cv_exclusive_sum(tmp, count, before, words + 1, &st));
  MSP_TRY(st);
  longer = count + words + 1; // the longer rows' count, after the scan's input
  if (rows > 0) {
    rows_longer<<<msp__cuda_blocks(rows, 256), 256, 0, s>>>(
        rows, rowptr, (int64_t)msp__vector_group(rows, nnz), longer);
    MSP_CUDA_CHECK_LAUNCH("rows_longer");
  }
  // csr.cu's merge-path plan: the tiles' coordinates searched on the device, read back with the
  // scalars (rowptr is then read on the host only at the tiles' rows)
  if (tiles > 0) {
    int64_t *d_plan = NULL;
    const int64_t parts = h_rowptr ? 2 : 3; // rows, nonzeros (and row pointers) at the tiles
    MSP_TRY(tmp.get(&d_plan, parts * (tiles + 1), "the merge-path plan"));
    merge_plan<<<msp__cuda_blocks(tiles + 1, 256), 256, 0, s>>>(
        tiles, tile, rows, nnz, rowptr, d_plan, d_plan + tiles + 1,
        h_rowptr ? NULL : d_plan + 2 * (tiles + 1));
    MSP_CUDA_CHECK_LAUNCH("merge_plan");
    MSP_TRY(MSP_ALLOC(h_plan, parts * (tiles + 1), "the merge-path plan"));
    MSP_CUDA_TRY(cudaMemcpyAsync(h_plan, d_plan, (size_t)(parts * (tiles + 1)) * sizeof *h_plan,
                                 cudaMemcpyDeviceToHost, s));
  }
  MSP_CUDA_TRY(cudaMemcpyAsync(&h2[0], before + words, sizeof h2[0], cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaMemcpyAsync(&h2[1], longer, sizeof h2[1], cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
  *nnz64 = (int64_t)h2[0];
  if (*nnz64 > (int64_t)UINT32_MAX) {
    st = msp__error(MSP_ERR_NOT_SUPPORTED,
                    "msp_matrix_convert: bdmp holds at most %lu fp64 entries in PBP's layout, this "
                    "matrix would store %lld",
                    (unsigned long)UINT32_MAX, (long long)*nnz64);
    goto exit;
  }
  {
    const int64_t nnz32 = nnz - *nnz64;
    const int layout = msp__pbp_layout(nnz32, *nnz64, k);
    MSP_TRY(msp__cuda_matrix_reserve(m, SLOT_VAL, (size_t)*nnz64 * sizeof(double)));
    MSP_TRY(msp__cuda_matrix_reserve(m, SLOT_VAL2, (size_t)nnz32 * sizeof(float)));
    MSP_TRY(msp__cuda_matrix_reserve(m, SLOT_ROWPTR, (size_t)(rows + 1) * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_reserve(m, SLOT_COLIND, (size_t)nnz * sizeof(int32_t)));
    if (nnz > 0) {
      pack_values<<<msp__cuda_blocks(nnz, 256), 256, 0, s>>>(
          nnz, val, mask, before, meta, (float *)m->d[SLOT_VAL2], (double *)m->d[SLOT_VAL]);
      MSP_CUDA_CHECK_LAUNCH("pack_values");
    }
    if (layout == MSP__PBP_WORDS) {
      MSP_TRY(msp__cuda_matrix_reserve(m, SLOT_META, (size_t)words * sizeof(uint2)));
      MSP_CUDA_TRY(cudaMemcpyAsync(m->d[SLOT_META], meta, (size_t)words * sizeof(uint2),
                                   cudaMemcpyDeviceToDevice, s));
    }
    if (layout == MSP__PBP_SPLIT) {
      MSP_TRY(msp__cuda_matrix_reserve(m, SLOT_META, (size_t)(rows + 1) * sizeof(int64_t)));
      int64_t *n64z = NULL; // n64 with a last element for the exclusive sum's total
      MSP_TRY(tmp.get(&n64z, rows + 1, "the rows' fp64 entries"));
      MSP_CUDA_TRY(
          cudaMemcpyAsync(n64z, n64, (size_t)rows * sizeof(int64_t), cudaMemcpyDeviceToDevice, s));
      MSP_CUDA_TRY(cudaMemsetAsync(n64z + rows, 0, sizeof *n64z, s));
      MSP_CUDA_TRY(msp__cv_exclusive_sum(tmp, n64z, (int64_t *)m->d[SLOT_META], rows + 1, &st));
      MSP_TRY(st);
      split_columns<<<msp__cuda_blocks(rows, 256), 256, 0, s>>>(rows, rowptr, colind, e64, n64,
                                                                (int32_t *)m->d[SLOT_COLIND]);
      MSP_CUDA_CHECK_LAUNCH("split_columns");
    } else if (nnz > 0) {
      MSP_CUDA_TRY(cudaMemcpyAsync(m->d[SLOT_COLIND], colind, (size_t)nnz * sizeof(int32_t),
                                   cudaMemcpyDeviceToDevice, s));
    }
    MSP_CUDA_TRY(cudaMemcpyAsync(m->d[SLOT_ROWPTR], rowptr, (size_t)(rows + 1) * sizeof(int64_t),
                                 cudaMemcpyDeviceToDevice, s));
    if (!h_rowptr) {
      // csr.cu's plan reads the host row pointers at the tiles' rows only (the structure is on
      // the device and the longer rows are counted): an array with those entries set, the rest
      // never read (nor touched: no page of it but theirs is written)
      MSP_TRY(MSP_ALLOC(h_sparse, rows + 1, "the row pointers at the merge-path tiles"));
      for (int64_t k = 0; tiles > 0 && k <= tiles; k++)
        h_sparse[h_plan[k]] = h_plan[2 * (tiles + 1) + k];
      h_rowptr = h_sparse;
    }
    MSP_TRY(msp__cuda_csr_structure_planned(ctx, m, rows, nnz, h_rowptr, NULL, h_plan,
                                            h_plan ? h_plan + tiles + 1 : NULL, (int64_t)h2[1]));
    m->i64[6] = layout;
  }
  *meta_out = meta;
exit:
  msp__free(h_plan);
  msp__free(h_sparse);
  return st;
}

extern "C" msp_status msp__cuda_bdmp_pbp_convert(msp_context ctx, const msp_matrix A,
                                                 msp_matrix B) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  msp__cv_scratch tmp;
  tmp.s = s;
  msp__cv_timer timer;
  msp__cuda_matrix *m = NULL;
  msp__bdmp_pbp *P = NULL;
  msp__bdmp_info info;
  const int64_t rows = B->rows, nnz = B->nnz;
  const int64_t words = (nnz + MSP__PBP_WORD - 1) / MSP__PBP_WORD;
  const int64_t *rowptr = NULL;
  const int32_t *colind = NULL;
  const double *val = NULL;
  uint8_t *e64 = NULL;
  int64_t *n64 = NULL, nnz64 = 0;
  uint2 *meta = NULL;
  MSP_TRY(msp__cv_begin(ctx, tmp, timer, A, B, &rowptr, &colind, &val, &e64, &n64, &info));
  MSP_TRY(msp__cuda_matrix_new(B, &m));
  MSP_TRY(msp__cv_pbp_pack(ctx, tmp, m, msp__cuda_csr_kernel(B), rows, nnz, rowptr, B->rowptr,
                           colind, val, e64, n64, &meta, &nnz64));
  MSP_TRY(timer.stop(s, &info.convert_ms));
  info.nnz64 = nnz64;
  info.nnz32 = nnz - nnz64;

  // ---- the host record, read back
  MSP_TRY(MSP_ALLOC_ZERO(P, 1, "BDMP-PBP header"));
  P->info = info;
  MSP_TRY(MSP_ALLOC(P->rowptr, rows + 1, "BDMP-PBP row pointers"));
  MSP_TRY(MSP_ALLOC(P->colind, nnz, "BDMP-PBP columns"));
  MSP_TRY(MSP_ALLOC(P->meta, 2 * words, "BDMP-PBP precision words"));
  MSP_TRY(MSP_ALLOC(P->v32, P->info.nnz32, "BDMP-PBP fp32 values"));
  MSP_TRY(MSP_ALLOC(P->v64, P->info.nnz64, "BDMP-PBP fp64 values"));
  memcpy(P->rowptr, B->rowptr, (size_t)(rows + 1) * sizeof *P->rowptr);
  if (nnz > 0) {
    memcpy(P->colind, B->colind, (size_t)nnz * sizeof *P->colind);
    MSP_CUDA_TRY(
        cudaMemcpyAsync(P->meta, meta, (size_t)words * sizeof(uint2), cudaMemcpyDeviceToHost, s));
  }
  if (P->info.nnz32 > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(P->v32, m->d[SLOT_VAL2], (size_t)P->info.nnz32 * sizeof(float),
                                 cudaMemcpyDeviceToHost, s));
  if (P->info.nnz64 > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(P->v64, m->d[SLOT_VAL], (size_t)P->info.nnz64 * sizeof(double),
                                 cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
  B->fmt = P;
  P = NULL;
exit:
  if (P) msp__format_free(MSP_FORMAT_BDMP_PBP, P);
  return st; // tmp frees its scratch (stream-ordered); B->dev is the caller's to free on failure
}

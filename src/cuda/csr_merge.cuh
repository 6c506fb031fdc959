// csr_merge.cuh: CSR's merge-path kernel and its fix-ups (rows split over tiles), as templates over
// the loader of the values and y's store, and the merge-path search the plan uses (csr.cu, on the
// host; bdmp_convert.cu, on the device). csr.cuh launches them.
#ifndef MSP_CUDA_CSR_MERGE_CUH
#define MSP_CUDA_CSR_MERGE_CUH

#include "formats.cuh"

// Merge path (Merrill and Garland, "Merge-based parallel sparse matrix-vector multiplication",
// SC16): a tile of MERGE_THREADS * MERGE_IPT items of the merged list (row ends + nonzeros) per
// block, MERGE_IPT consecutive items per thread, so every block and thread does the same work
// whatever the row lengths (a row of 10^6 nonzeros next to 10^6 empty rows included).
// MERGE_IPT is the most items per thread; a matrix whose tiles would leave SMs idle gets fewer
// (4 or 2, chosen at upload: csr_merge_ipt), so that its tiles spread over all SMs.
#define MERGE_THREADS 128
#define MERGE_IPT 8
#define MERGE_TILE (MERGE_THREADS * MERGE_IPT)
// 8 blocks (at most 64 registers): without it ptxas chose 32 registers and spilled for cpms4.
#define MERGE_MIN_BLOCKS 8
#define FIXUP_THREADS 128
// Runs of more than FIXUP_LONG tiles (rows longer than about FIXUP_LONG * MERGE_TILE items) are
// summed by a block each rather than by one thread walking them.
#define FIXUP_LONG 32

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

// Segmented scan over the block (MERGE_THREADS threads, keys not decreasing with the thread):
// v, the thread's sum over its key's segment within its warp (inclusive, Hillis-Steele); (ek, ev)
// the key and sum of the segment of all threads before it in the block (exclusive); (pk, pv)
// those of the warps before its warp, added in warp order. A fixed order: the same bits on every
// run. s_key, s_val: MERGE_THREADS / 32 slots of shared memory.
struct merge_scan {
  double v, ev, pv;
  int ek, pk;
};
__device__ __forceinline__ merge_scan merge_block_scan(int key, double v, int *s_key,
                                                       double *s_val) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const double vo = __shfl_up_sync(0xffffffffu, v, off);
    const int ko = __shfl_up_sync(0xffffffffu, key, off);
    if (lane >= off && ko == key) v = vo + v;
  }
  if (lane == 31) {
    s_key[warp] = key;
    s_val[warp] = v;
  }
  merge_scan r;
  r.v = v;
  r.ev = __shfl_up_sync(0xffffffffu, v, 1); // exclusive prefix inside the warp
  r.ek = __shfl_up_sync(0xffffffffu, key, 1);
  __syncthreads();
  r.pk = -1;
  r.pv = 0.0;
  for (int w = 0; w < warp; w++) {
    const int kw = s_key[w];
    r.pv = kw == r.pk ? r.pv + s_val[w] : s_val[w];
    r.pk = kw;
  }
  if (lane == 0) {
    r.ek = r.pk;
    r.ev = r.pv;
  } else if (r.ek == r.pk) {
    r.ev = r.pv + r.ev;
  }
  return r;
}
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
  __shared__ int w_key[MERGE_THREADS / 32];
  __shared__ double w_val[MERGE_THREADS / 32];
  const merge_scan sc = merge_block_scan(cur, cs, w_key, w_val);
  const double v = sc.pk == cur ? sc.pv + sc.v : sc.v; // inclusive, over the whole block
  if (first_done && fk >= 0)
    merge_store_split(y, __ldg(run_row + fk), head, fe, alpha, sc.ek == fk ? sc.ev + fv : fv);
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
template <class VA, msp_precision PX, class Y>
__global__ void __launch_bounds__(MERGE_THREADS, MERGE_MIN_BLOCKS)
    csr_merge_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                     const int32_t *__restrict__ colind, const VA val, const loader<PX> x,
                     double alpha, double beta, const Y y, const int64_t *__restrict__ tile_row,
                     const int64_t *__restrict__ tile_nz, double *carry, double *head,
                     const int32_t *__restrict__ tile_run, const int64_t *__restrict__ run_row,
                     unsigned *counter, int ipt) {
  __shared__ int s_end[MERGE_TILE + MERGE_THREADS + 1];
  __shared__ double s_prod[MERGE_TILE + MERGE_THREADS];
  __shared__ int s_wkey[MERGE_THREADS / 32];
  __shared__ double s_wval[MERGE_THREADS / 32];
  __shared__ unsigned s_ticket;

  const int64_t r0 = __ldg(tile_row + blockIdx.x), r1 = __ldg(tile_row + blockIdx.x + 1);
  const int64_t n0 = __ldg(tile_nz + blockIdx.x), n1 = __ldg(tile_nz + blockIdx.x + 1);
  const int R = (int)(r1 - r0), N = (int)(n1 - n0); // R + N <= ipt * MERGE_THREADS
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
  const int d = t * ipt < R + N ? t * ipt : R + N;
  const int dend = d + ipt < R + N ? d + ipt : R + N;
  int lo = d > N ? d - N : 0, hi = d < R ? d : R;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (s_end[pad(mid)] <= d - mid - 1)
      lo = mid + 1;
    else
      hi = mid;
  }
  int xr = lo, yn = d - lo;

  // Consume ipt items: a nonzero adds its product; a row end finishes the row.
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
  // sum); keys do not decrease with t.
  const int key = xr;
  const merge_scan sc = merge_block_scan(key, sum, s_wkey, s_wval);
  if (first_row >= 0) {
    const double part = sc.ek == first_row ? sc.ev + first_val : first_val;
    // Row r0 is only ever a thread's first row; it began in an earlier tile exactly when that
    // tile consumed some of its nonzeros, i.e. n0 > rowptr[r0] (then a fix-up run ends at b - 1).
    if (first_row == 0 && r0 < rows && n0 > __ldg(rowptr + r0))
      head[blockIdx.x] = beta == 0.0 ? alpha * part : alpha * part + beta * ystore_load(y, r0);
    else
      ystore_row(y, r0 + first_row, alpha, part, beta);
  }
  if (t == MERGE_THREADS - 1) carry[blockIdx.x] = sc.pk == key ? sc.pv + sc.v : sc.v; // key == R
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

// Items per thread of the merge path (m->i64[11], set with the plan; 0 in a record made before it
// was kept: MERGE_IPT).
static inline int csr_merge_ipt(const msp__cuda_matrix *m) {
  return m->i64[11] > 0 ? (int)m->i64[11] : MERGE_IPT;
}

// The split of diagonal d of the merge of the row ends (rowptr[1..rows]) with the nonzero
// indices 0..nnz-1: x row ends and y nonzeros come before it (CUB's MergePathSearch). On the host
// (the merge-path plan of csr.cu) and on the device (bdmp_convert.cu).
__host__ __device__ static inline void msp__merge_search(int64_t d, const int64_t *rowptr,
                                                         int64_t rows, int64_t nnz, int64_t *x,
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

#endif // MSP_CUDA_CSR_MERGE_CUH

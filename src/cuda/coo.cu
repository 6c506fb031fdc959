// coo.cu: COO on CUDA: upload and a deterministic segmented-reduction SpMV (no FP atomics).
//
// The triples (sorted by row, then column) are cut into tiles of MSP__COO_TILE = 256 triples, one
// tile per warp, so every warp gets the same work whatever the row lengths (the point of COO for
// very irregular matrices). Lane l takes the 8 consecutive triples l*8 .. l*8+7 of its tile with
// 16-byte loads, multiplies, and sums its runs of equal row; a segmented scan over the lanes'
// trailing runs (5 shuffles) gives each lane the part of its first row held by earlier lanes.
// The lane where a row ends writes y_r = alpha * sum + beta * y_r, unless the row also has
// triples in another tile. Such a row (it straddles a tile boundary) is finished by a fix-up:
//   tile t writes head[t], the sum of its first row's triples, when that row started in an
//   earlier tile, and tail[t], the sum of its last row's triples, when that row goes on in a
//   later tile and did not start earlier (a tile inside one long row writes only head[t]).
//   A straddling row r with first tile t0 and last tile t1 gets
//     y_r = alpha * (tail[t0] + head[t0+1] + ... + head[t1]) + beta * y_r,
//   summed in that fixed order by one thread (spans of at most MSP__COO_SHORT_SPAN tiles) or by
//   a block in a fixed tree (longer spans: a row of 10^6 entries spans ~4000 tiles).
// The list of straddling rows (row, t0, t1) is computed once at upload, short spans first. Every
// sum is formed in an order fixed by the data alone, so the same product gives the same bits.
// Empty rows get y_i = beta * y_i from a precomputed list (COO only: HYB's COO part leaves the
// rows it does not hold as the ELL part wrote them).
//
// Device slots of a COO matrix:
//   0 row   int32 [tiles * 256]  row indices, padded with INT32_MAX (above every row: stays sorted)
//   1 col   int32 [tiles * 256]  column indices, padded with 0
//   2 val   f64   [tiles * 256]  values, padded with 0
//   3 head  f64   [tiles]        scratch: partial sums of rows started in an earlier tile
//   4 tail  f64   [tiles]        scratch: partial sums of rows going on in a later tile
//   5 fix   int64 [3 * fixes]    (row, t0, t1) of each straddling row, short spans first
//   6 empty int32 [empties]      rows without entries
//   7..10                        COO format, variant 1: the fused fix-up plan and block counter
//                                (see coo_fused_kernel and the COO_*_SLOT defines)
// Scalars: i64[0] tiles, i64[1] short fix-ups, i64[2] long fix-ups, i64[3] empty rows,
// i64[4..6] variant 1 (MSP_COO_VARIANT, fused fix-up terms, fused grid).
// The COO format runs variant 1 by default: one launch (coo_fused_kernel: tiles, empty rows and,
// for small fix-ups, the fix-up by the last block), the fix-up kernels only for large fix-ups.
// MSP_COO_VARIANT=0 at upload selects the separate launches (benchmark A/B only). HYB's COO part
// always uses the separate launches (msp__cuda_coo_part_spmv).
#include "formats.cuh"

#include <stdlib.h>
#include <string.h>

#define MSP__COO_SHORT_SPAN 32 // straddling rows over at most this many tiles: one thread each

enum { COO_ROW = 0, COO_COL, COO_VAL, COO_HEAD, COO_TAIL, COO_FIX, COO_NSLOTS };
enum { COO_Q_TILES = 0, COO_Q_SHORT, COO_Q_LONG, COO_NQ };
#define COO_EMPTY_SLOT 6
#define COO_EMPTY_Q 3
// COO format, variant 1 (coo_fused_kernel): fused fix-up plan and the block counter.
#define COO_TERM_SRC_SLOT 7 // int32 [terms] head[t] as t, tail[t] as tiles + t
#define COO_TERM_FIX_SLOT 8 // int32 [terms] straddling-row id of each term
#define COO_FIX_ROW_SLOT 9  // int32 [ids]   row of each id
#define COO_COUNTER_SLOT 10 // unsigned [1]  blocks done in the current launch (0 between)
#define COO_VARIANT_Q 4     // MSP_COO_VARIANT (coo_variant)
#define COO_NTERMS_Q 5      // fused fix-up terms (0: the fix-up kernels run, if any)
#define COO_BLOCKS_Q 6      // grid of coo_fused_kernel

// ---- kernels ------------------------------------------------------------------------------------
// 8 consecutive int32 / f64 items of one lane with 16-byte loads (the tile base and l*8 keep them
// 32- and 64-byte aligned: cudaMalloc returns 256-byte aligned arrays). STREAM: evict-first loads
// (read once), so that x keeps its place in L2.
template <bool STREAM>
__device__ __forceinline__ void coo_load8(const int32_t *p, int32_t (&r)[MSP__COO_ITEMS]) {
  const int4 *q = reinterpret_cast<const int4 *>(p);
#pragma unroll
  for (int c = 0; c < MSP__COO_ITEMS / 4; c++) {
    int4 u = STREAM ? __ldcs(q + c) : __ldg(q + c);
    r[4 * c] = u.x;
    r[4 * c + 1] = u.y;
    r[4 * c + 2] = u.z;
    r[4 * c + 3] = u.w;
  }
}
template <bool STREAM>
__device__ __forceinline__ void coo_load8(const double *p, double (&v)[MSP__COO_ITEMS]) {
  const double2 *q = reinterpret_cast<const double2 *>(p);
#pragma unroll
  for (int c = 0; c < MSP__COO_ITEMS / 2; c++) {
    double2 u = STREAM ? __ldcs(q + c) : __ldg(q + c);
    v[2 * c] = u.x;
    v[2 * c + 1] = u.y;
  }
}

// Tile t (< ntiles) by the calling warp.
template <typename V, bool STREAM>
__device__ __forceinline__ void coo_tile(int64_t t, int64_t ntiles, const int32_t *__restrict__ row,
                                         const int32_t *__restrict__ col, const V *__restrict__ val,
                                         const double *__restrict__ x, double alpha, double beta,
                                         double *__restrict__ y, double *head, double *tail) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int64_t base = t * MSP__COO_TILE;
  // Does the tile's first row start in an earlier tile? Which row follows the tile?
  const int32_t first_row = msp__ld(row + base);
  const bool started_before = base > 0 && msp__ld(row + base - 1) == first_row;
  const int32_t after = t + 1 < ntiles ? msp__ld(row + base + MSP__COO_TILE) : INT32_MAX;

  int32_t r[MSP__COO_ITEMS], c[MSP__COO_ITEMS];
  V v[MSP__COO_ITEMS];
  const int64_t mine = base + (int64_t)lane * MSP__COO_ITEMS;
  coo_load8<STREAM>(row + mine, r);
  coo_load8<STREAM>(col + mine, c);
  coo_load8<STREAM>(val + mine, v);
  double p[MSP__COO_ITEMS];
#pragma unroll
  for (int k = 0; k < MSP__COO_ITEMS; k++)
    p[k] = msp__widen(v[k]) * msp__ld(x + c[k]);

  // The lane's trailing run (the triples of its last row), summed in order.
  const int32_t last = r[MSP__COO_ITEMS - 1];
  double trail = 0.0;
#pragma unroll
  for (int k = 0; k < MSP__COO_ITEMS; k++)
    if (r[k] == last) trail += p[k];
  // Inclusive segmented scan of the trailing runs over the lanes, keyed by row. Rows are sorted,
  // so equal keys o lanes apart mean one run through all lanes between them.
  double s = trail;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    double so = __shfl_up_sync(full, s, o);
    int32_t ko = __shfl_up_sync(full, last, o);
    if (lane >= o && ko == last) s += so;
  }
  // Carry into this lane: what earlier lanes hold of this lane's first row.
  const double prev_s = __shfl_up_sync(full, s, 1);
  const int32_t prev_key = __shfl_up_sync(full, last, 1);
  double run = (lane > 0 && prev_key == r[0]) ? prev_s : 0.0;
  int32_t next = __shfl_down_sync(full, r[0], 1);
  if (lane == 31) next = after;

#pragma unroll
  for (int k = 0; k < MSP__COO_ITEMS; k++) {
    run += p[k];
    const int32_t nr = k + 1 < MSP__COO_ITEMS ? r[k + 1] : next;
    if (nr != r[k]) { // row r[k] ends here
      if (r[k] != INT32_MAX) {
        if (started_before && r[k] == first_row)
          head[t] = run;
        else
          msp__y_update(y, r[k], alpha, run, beta);
      }
      run = 0.0;
    }
  }
  // The tile's last row goes on in the next tile: hand its part to the fix-up.
  if (lane == 31 && next == last && last != INT32_MAX) {
    if (started_before && last == first_row)
      head[t] = run;
    else
      tail[t] = run;
  }
}

template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    coo_tiles_kernel(int64_t ntiles, const int32_t *__restrict__ row,
                     const int32_t *__restrict__ col, const V *__restrict__ val,
                     const double *__restrict__ x, double alpha, double beta,
                     double *__restrict__ y, double *__restrict__ head, double *__restrict__ tail) {
  const int64_t t = (int64_t)blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
  if (t >= ntiles) return; // the whole warp leaves together
  coo_tile<V, false>(t, ntiles, row, col, val, x, alpha, beta, y, head, tail);
}

// One thread per straddling row of a short span: tail[t0] + head[t0+1] + ... + head[t1].
__global__ void __launch_bounds__(MSP__FMT_BLOCK)
    coo_fix_short_kernel(int64_t nfix, const int64_t *__restrict__ fix,
                         const double *__restrict__ head, const double *__restrict__ tail,
                         double alpha, double beta, double *__restrict__ y) {
  const int64_t q = (int64_t)blockIdx.x * MSP__FMT_BLOCK + threadIdx.x;
  if (q >= nfix) return;
  const int64_t r = msp__ld(fix + 3 * q), t0 = msp__ld(fix + 3 * q + 1),
                t1 = msp__ld(fix + 3 * q + 2);
  double s = tail[t0];
  for (int64_t t = t0 + 1; t <= t1; t++)
    s += head[t];
  msp__y_update(y, r, alpha, s, beta);
}

// One block per straddling row of a long span: thread k sums elements k, k + BLOCK, ... in order
// (element 0 is tail[t0], element e > 0 is head[t0 + e]), then a fixed tree over the block.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    coo_fix_long_kernel(const int64_t *__restrict__ fix, const double *__restrict__ head,
                        const double *__restrict__ tail, double alpha, double beta,
                        double *__restrict__ y) {
  __shared__ double warp_sum[BLOCK / 32];
  const int64_t q = blockIdx.x;
  const int64_t r = msp__ld(fix + 3 * q), t0 = msp__ld(fix + 3 * q + 1),
                t1 = msp__ld(fix + 3 * q + 2);
  const int64_t n = t1 - t0 + 1;
  double s = 0.0;
#pragma unroll 4
  for (int64_t e = threadIdx.x; e < n; e += BLOCK)
    s += e == 0 ? tail[t0] : head[t0 + e];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
#pragma unroll
    for (int w = 0; w < BLOCK / 32; w++)
      total += warp_sum[w];
    msp__y_update(y, r, alpha, total, beta);
  }
}

// Rows without entries: y_i = beta * y_i (0 when beta == 0, y not read).
__global__ void __launch_bounds__(MSP__FMT_BLOCK)
    coo_empty_kernel(int64_t n, const int32_t *__restrict__ rows, double beta,
                     double *__restrict__ y) {
  const int64_t k = (int64_t)blockIdx.x * MSP__FMT_BLOCK + threadIdx.x;
  if (k >= n) return;
  msp__y_update(y, msp__ld(rows + k), 0.0, 0.0, beta);
}

// ---- COO format, variant 1 (default; MSP_COO_VARIANT=0 selects the launches above) --------------
// One launch instead of up to four: the tiles as coo_tiles_kernel (with evict-first loads of the
// triples, so that x stays in L2), the empty rows (a grid-stride
// share per thread), and, when the fix-up has at most COO_FUSE_ITEMS terms in a grid of at most
// COO_FUSE_BLOCKS blocks, the fix-up by the last block to finish. Every block makes its head and
// tail stores visible (__threadfence) before taking a ticket from the integer counter; the block
// with the last ticket fences again, gathers the terms from L2 (__ldcg), sums each straddling
// row's terms (tail[t0], head[t0+1..t1]: contiguous in the term list built at upload) by a
// segmented reduction in a fixed order, and resets the counter for the next launch. No
// floating-point atomics: deterministic (the order differs from the fix-up kernels' sequential
// one, so the bits may differ from variant 0).
#define COO_FUSE_CHUNK 8 // terms per thread
#define COO_FUSE_ITEMS (MSP__FMT_BLOCK * COO_FUSE_CHUNK)
#define COO_FUSE_BLOCKS 1024 // one same-address integer atomic per block: keep it cheap
__device__ __forceinline__ int coo_pad(int k) {
  return k + k / COO_FUSE_CHUNK; // a thread reads COO_FUSE_CHUNK consecutive slots
}

template <int BLOCK>
__device__ __forceinline__ void
coo_fixup_last(int64_t ntiles, int nterms, const int32_t *__restrict__ term_src,
               const int32_t *__restrict__ term_fix, const int32_t *__restrict__ fix_row,
               const double *head, const double *tail, double alpha, double beta, double *y,
               unsigned *counter) {
  __shared__ int s_key[BLOCK * COO_FUSE_CHUNK + BLOCK];
  __shared__ double s_val[BLOCK * COO_FUSE_CHUNK + BLOCK];
  __shared__ int w_key[BLOCK / 32];
  __shared__ double w_val[BLOCK / 32];
  __shared__ unsigned s_ticket;
  const int t = threadIdx.x;
  __threadfence(); // this thread's head / tail stores, device-wide, before the ticket
  __syncthreads();
  if (t == 0) s_ticket = atomicAdd(counter, 1u);
  __syncthreads();
  if (s_ticket != gridDim.x - 1u) return; // block-uniform
  __threadfence(); // acquire: the other blocks' stores are visible from here on
  for (int k = t; k < nterms; k += BLOCK) {
    const int src = __ldg(term_src + k);
    s_key[coo_pad(k)] = __ldg(term_fix + k);
    s_val[coo_pad(k)] = src < ntiles ? __ldcg(head + src) : __ldcg(tail + (src - ntiles));
  }
  __syncthreads();
  const int C = (nterms + BLOCK - 1) / BLOCK; // <= COO_FUSE_CHUNK
  const int a = t * C < nterms ? t * C : nterms, e = a + C < nterms ? a + C : nterms;
  // This thread's terms [a, e): the first segment (may continue earlier threads' rows), inner
  // segments (complete: applied here), the trailing one (scanned over the threads).
  int cur = -1, fk = -1;
  bool first_done = false;
  double cs = 0.0, fv = 0.0;
  for (int i = a; i < e; i++) {
    const int k = s_key[coo_pad(i)];
    const double c = s_val[coo_pad(i)];
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
      } else {
        msp__y_update(y, __ldg(fix_row + cur), alpha, cs, beta);
      }
      cur = k;
      cs = c;
    }
  }
  // Inclusive segmented scan of the trailing segments (keys: straddling-row ids, contiguous).
  const int lane = t & 31, warp = t >> 5;
  double v = cs;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const double vo = __shfl_up_sync(0xffffffffu, v, off);
    const int ko = __shfl_up_sync(0xffffffffu, cur, off);
    if (lane >= off && ko == cur) v = vo + v;
  }
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
    msp__y_update(y, __ldg(fix_row + fk), alpha, ek == fk ? ev + fv : fv, beta);
  // The trailing row ends here unless the next thread's terms start with it.
  if (a < e && cur >= 0 && (e >= nterms || s_key[coo_pad(e)] != cur))
    msp__y_update(y, __ldg(fix_row + cur), alpha, v, beta);
  if (t == 0) *counter = 0u; // no block of this launch reads it again
}

// counter == NULL: no fused fix-up (the fix-up kernels follow, or there is nothing to fix).
// 48 registers (5 blocks of 256 per SM, coo_tiles_kernel has 6): a cap for 6 spills, and 5 blocks
// still have over 150 KB of loads in flight per SM (8 triples per lane in 16-byte loads).
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    coo_fused_kernel(int64_t ntiles, const int32_t *__restrict__ row,
                     const int32_t *__restrict__ col, const V *__restrict__ val,
                     const double *__restrict__ x, double alpha, double beta,
                     double *__restrict__ y, double *head, double *tail, int64_t nempty,
                     const int32_t *__restrict__ empty, int nterms,
                     const int32_t *__restrict__ term_src, const int32_t *__restrict__ term_fix,
                     const int32_t *__restrict__ fix_row, unsigned *counter) {
  const int64_t t = (int64_t)blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
  if (t < ntiles) coo_tile<V, true>(t, ntiles, row, col, val, x, alpha, beta, y, head, tail);
  // Empty rows (not rows of any tile): y_i = beta * y_i, y not read when beta == 0.
  const int64_t stride = (int64_t)gridDim.x * BLOCK;
  for (int64_t k = (int64_t)blockIdx.x * BLOCK + threadIdx.x; k < nempty; k += stride)
    msp__y_update(y, msp__ld(empty + k), 0.0, 0.0, beta);
  if (counter)
    coo_fixup_last<BLOCK>(ntiles, nterms, term_src, term_fix, fix_row, head, tail, alpha, beta, y,
                          counter);
}

// ---- the COO part (shared with HYB) -------------------------------------------------------------
msp_status msp__cuda_coo_part_upload(msp_context ctx, msp__cuda_matrix *m, int s0, int q0,
                                     int64_t nnz, const int32_t *row, const int32_t *col,
                                     const double *val) {
  msp_status st = MSP_SUCCESS;
  int64_t *all = NULL, *fix = NULL;
  const int64_t T = MSP__COO_TILE;
  const int64_t tiles = (nnz + T - 1) / T, padded = tiles * T;
  int64_t nall = 0, nshort = 0, nlong = 0;
  cudaStream_t s = msp__cuda(ctx)->stream;
  m->i64[q0 + COO_Q_TILES] = tiles;
  m->i64[q0 + COO_Q_SHORT] = 0;
  m->i64[q0 + COO_Q_LONG] = 0;
  if (tiles == 0) return MSP_SUCCESS;

  // Triples padded to whole tiles: rows INT32_MAX (after every real row), column 0, value 0.
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + COO_ROW, NULL, (size_t)padded * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + COO_COL, NULL, (size_t)padded * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + COO_VAL, NULL, (size_t)padded * sizeof(double)));
  MSP_CUDA_TRY(cudaMemcpyAsync(m->d[s0 + COO_ROW], row, (size_t)nnz * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
  MSP_CUDA_TRY(cudaMemcpyAsync(m->d[s0 + COO_COL], col, (size_t)nnz * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
  MSP_CUDA_TRY(cudaMemcpyAsync(m->d[s0 + COO_VAL], val, (size_t)nnz * sizeof(double),
                               cudaMemcpyHostToDevice, s));
  if (padded > nnz) {
    // Pageable source: the copy returns once the data is staged, so a stack buffer is fine.
    int32_t pad[MSP__COO_TILE];
    for (int64_t k = 0; k < padded - nnz; k++)
      pad[k] = INT32_MAX;
    MSP_CUDA_TRY(cudaMemcpyAsync((int32_t *)m->d[s0 + COO_ROW] + nnz, pad,
                                 (size_t)(padded - nnz) * sizeof(int32_t), cudaMemcpyHostToDevice,
                                 s));
  }
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + COO_HEAD, NULL, (size_t)tiles * sizeof(double)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + COO_TAIL, NULL, (size_t)tiles * sizeof(double)));

  // Straddling rows: walk the tile boundaries; consecutive boundaries inside one row extend it.
  if (tiles > 1) {
    MSP_TRY(MSP_ALLOC(all, 3 * (tiles - 1), "COO fix-up list"));
    for (int64_t t = 0; t + 1 < tiles; t++) {
      const int64_t b = (t + 1) * T; // < nnz, since t + 1 < tiles
      if (row[b - 1] != row[b]) continue;
      if (nall > 0 && all[3 * (nall - 1)] == row[b] && all[3 * (nall - 1) + 2] == t) {
        all[3 * (nall - 1) + 2] = t + 1;
      } else {
        all[3 * nall] = row[b];
        all[3 * nall + 1] = t;
        all[3 * nall + 2] = t + 1;
        nall++;
      }
    }
    for (int64_t q = 0; q < nall; q++) {
      if (all[3 * q + 2] - all[3 * q + 1] <= MSP__COO_SHORT_SPAN)
        nshort++;
      else
        nlong++;
    }
    if (nall > 0) {
      MSP_TRY(MSP_ALLOC(fix, 3 * nall, "COO fix-up list"));
      int64_t a = 0, b = nshort;
      for (int64_t q = 0; q < nall; q++) {
        int64_t *dst =
            all[3 * q + 2] - all[3 * q + 1] <= MSP__COO_SHORT_SPAN ? fix + 3 * a++ : fix + 3 * b++;
        memcpy(dst, all + 3 * q, 3 * sizeof(int64_t));
      }
      MSP_TRY(
          msp__cuda_matrix_put(ctx, m, s0 + COO_FIX, fix, (size_t)(3 * nall) * sizeof(int64_t)));
      // The host list must outlive the (pageable, staged) copy only until the call returns.
    }
  }
  m->i64[q0 + COO_Q_SHORT] = nshort;
  m->i64[q0 + COO_Q_LONG] = nlong;
exit:
  msp__free(all);
  msp__free(fix);
  return st;
}

template <typename V>
static msp_status coo_part_launch(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                  double alpha, const double *x, double beta, double *y) {
  msp_status st = MSP_SUCCESS;
  const int64_t tiles = m->i64[q0 + COO_Q_TILES], nshort = m->i64[q0 + COO_Q_SHORT],
                nlong = m->i64[q0 + COO_Q_LONG];
  double *head = (double *)m->d[s0 + COO_HEAD], *tail = (double *)m->d[s0 + COO_TAIL];
  const int64_t *fix = (const int64_t *)m->d[s0 + COO_FIX];
  if (tiles == 0) return MSP_SUCCESS;
  coo_tiles_kernel<V, MSP__FMT_BLOCK>
      <<<msp__cuda_blocks(tiles, MSP__FMT_BLOCK / 32), MSP__FMT_BLOCK, 0, s>>>(
          tiles, (const int32_t *)m->d[s0 + COO_ROW], (const int32_t *)m->d[s0 + COO_COL],
          (const V *)m->d[s0 + COO_VAL], x, alpha, beta, y, head, tail);
  MSP_CUDA_CHECK_LAUNCH("coo_tiles_kernel");
  if (nshort > 0) {
    coo_fix_short_kernel<<<msp__cuda_blocks(nshort, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
        nshort, fix, head, tail, alpha, beta, y);
    MSP_CUDA_CHECK_LAUNCH("coo_fix_short_kernel");
  }
  if (nlong > 0) {
    coo_fix_long_kernel<MSP__FMT_BLOCK>
        <<<(unsigned)nlong, MSP__FMT_BLOCK, 0, s>>>(fix + 3 * nshort, head, tail, alpha, beta, y);
    MSP_CUDA_CHECK_LAUNCH("coo_fix_long_kernel");
  }
exit:
  return st;
}

msp_status msp__cuda_coo_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   double alpha, const double *x, double beta, double *y) {
  // Values are fp64 (msp__fmt_check refuses the rest at upload).
  return coo_part_launch<double>(s, m, s0, q0, alpha, x, beta, y);
}

// ---- the COO format -----------------------------------------------------------------------------
// Kernel variant, read once per upload from the environment: 0 (the default) runs the separate
// launches (tiles, fix-ups, empty rows: up to four); MSP_COO_VARIANT=1 the fused single-launch
// kernel. For benchmarking (A/B on one build) only: both compute the same products
// deterministically, they differ in speed (and possibly in the last bits of straddling rows).
// Measured on the H100 (mixsparse-bench, 33 matrices, same run): the fused kernel was 0.90x the
// separate launches in geometric mean (0.71x on laplace2d:3000, 1.19x on fe_body), so the
// separate launches stay the default.
static int coo_variant(void) {
  const char *v = getenv("MSP_COO_VARIANT");
  return v && v[0] == '1' && v[1] == '\0' ? 1 : 0;
}

// Variant 1's fused fix-up plan: the terms of each straddling row in summation order (tail[t0],
// head[t0+1], ..., head[t1]; source index t for head[t], tiles + t for tail[t]), each term's row
// id, and each id's row. Left out (*nterms = 0) when there is nothing to fix or when the terms
// or the blocks exceed what one block may finish (the fix-up kernels run instead).
static msp_status coo_fuse_plan(msp_context ctx, msp__cuda_matrix *m, int64_t nnz,
                                const int32_t *row, int64_t blocks, int64_t *nterms) {
  msp_status st = MSP_SUCCESS;
  int32_t *src = NULL, *key = NULL, *frow = NULL;
  const int64_t T = MSP__COO_TILE, tiles = (nnz + T - 1) / T;
  int64_t n = 0, nfix = 0;
  *nterms = 0;
  if (tiles < 2 || blocks > COO_FUSE_BLOCKS) return MSP_SUCCESS;
  // Count first: a straddling row over tiles t0..t1 has t1 - t0 + 1 terms.
  for (int64_t t = 0; t + 1 < tiles; t++) {
    const int64_t b = (t + 1) * T;
    if (row[b - 1] != row[b]) continue;
    n += (t == 0 || row[t * T - 1] != row[b]) ? 2 : 1; // a new row: tail[t] and head[t + 1]
    if (n > COO_FUSE_ITEMS) return MSP_SUCCESS;
  }
  if (n == 0) return MSP_SUCCESS;
  MSP_TRY(MSP_ALLOC(src, n, "COO fused fix-up terms"));
  MSP_TRY(MSP_ALLOC(key, n, "COO fused fix-up terms"));
  MSP_TRY(MSP_ALLOC(frow, n, "COO fused fix-up rows"));
  n = 0;
  for (int64_t t = 0; t + 1 < tiles; t++) {
    const int64_t b = (t + 1) * T;
    if (row[b - 1] != row[b]) continue;
    if (t == 0 || row[t * T - 1] != row[b]) { // the row starts in tile t (or earlier: not a fix)
      frow[nfix++] = row[b];
      src[n] = (int32_t)(tiles + t);
      key[n++] = (int32_t)(nfix - 1);
    }
    src[n] = (int32_t)(t + 1);
    key[n++] = (int32_t)(nfix - 1);
  }
  MSP_TRY(msp__cuda_matrix_put(ctx, m, COO_TERM_SRC_SLOT, src, (size_t)n * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, COO_TERM_FIX_SLOT, key, (size_t)n * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, COO_FIX_ROW_SLOT, frow, (size_t)nfix * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, COO_COUNTER_SLOT, NULL, sizeof(unsigned)));
  *nterms = n;
exit:
  msp__free(src);
  msp__free(key);
  msp__free(frow);
  return st;
}

extern "C" msp_status msp__cuda_coo_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  int32_t *empty = NULL;
  int64_t nempty = 0;
  const int variant = coo_variant();
  MSP_TRY(msp__fmt_check(A, "coo"));
  {
    const msp__coo *c = (const msp__coo *)A->fmt;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    MSP_TRY(msp__cuda_coo_part_upload(ctx, m, 0, 0, A->nnz, c->row, c->col, c->val));
  }
  for (int64_t i = 0; i < A->rows; i++)
    nempty += A->rowptr[i + 1] == A->rowptr[i];
  if (nempty > 0) {
    int64_t n = 0;
    MSP_TRY(MSP_ALLOC(empty, nempty, "COO empty-row list"));
    for (int64_t i = 0; i < A->rows; i++)
      if (A->rowptr[i + 1] == A->rowptr[i]) empty[n++] = (int32_t)i;
    MSP_TRY(msp__cuda_matrix_put(ctx, m, COO_EMPTY_SLOT, empty, (size_t)nempty * sizeof(int32_t)));
  }
  m->i64[COO_EMPTY_Q] = nempty;
  m->i64[COO_VARIANT_Q] = variant;
  m->i64[COO_NTERMS_Q] = 0;
  if (variant != 0) {
    // Grid of the fused kernel: a warp per tile, and at most 4 empty rows per thread.
    const int64_t tiles = m->i64[COO_Q_TILES], wpb = MSP__FMT_BLOCK / 32;
    const int64_t eb = (nempty + 4 * MSP__FMT_BLOCK - 1) / (4 * MSP__FMT_BLOCK);
    int64_t blocks = (tiles + wpb - 1) / wpb;
    blocks = blocks > eb ? blocks : eb;
    m->i64[COO_BLOCKS_Q] = blocks > 0 ? blocks : 1;
    MSP_TRY(coo_fuse_plan(ctx, m, A->nnz, ((const msp__coo *)A->fmt)->row, m->i64[COO_BLOCKS_Q],
                          &m->i64[COO_NTERMS_Q]));
  }
exit:
  // On failure backend.cu frees what A->dev holds.
  msp__free(empty);
  return st;
}

extern "C" msp_status msp__cuda_coo_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t nempty = m->i64[COO_EMPTY_Q];
  if (m->i64[COO_VARIANT_Q] != 0) {
    const int64_t tiles = m->i64[COO_Q_TILES], nshort = m->i64[COO_Q_SHORT],
                  nlong = m->i64[COO_Q_LONG], nterms = m->i64[COO_NTERMS_Q];
    double *head = (double *)m->d[COO_HEAD], *tail = (double *)m->d[COO_TAIL];
    const int64_t *fix = (const int64_t *)m->d[COO_FIX];
    if (tiles == 0 && nempty == 0) goto exit;
    coo_fused_kernel<double, MSP__FMT_BLOCK>
        <<<(unsigned)m->i64[COO_BLOCKS_Q], MSP__FMT_BLOCK, 0, s>>>(
            tiles, (const int32_t *)m->d[COO_ROW], (const int32_t *)m->d[COO_COL],
            (const double *)m->d[COO_VAL], x->d_data, alpha, beta, y->d_data, head, tail, nempty,
            (const int32_t *)m->d[COO_EMPTY_SLOT], (int)nterms,
            (const int32_t *)m->d[COO_TERM_SRC_SLOT], (const int32_t *)m->d[COO_TERM_FIX_SLOT],
            (const int32_t *)m->d[COO_FIX_ROW_SLOT],
            nterms > 0 ? (unsigned *)m->d[COO_COUNTER_SLOT] : NULL);
    MSP_CUDA_CHECK_LAUNCH("coo_fused_kernel");
    if (nterms > 0) goto exit;
    if (nshort > 0) {
      coo_fix_short_kernel<<<msp__cuda_blocks(nshort, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
          nshort, fix, head, tail, alpha, beta, y->d_data);
      MSP_CUDA_CHECK_LAUNCH("coo_fix_short_kernel");
    }
    if (nlong > 0) {
      coo_fix_long_kernel<MSP__FMT_BLOCK><<<(unsigned)nlong, MSP__FMT_BLOCK, 0, s>>>(
          fix + 3 * nshort, head, tail, alpha, beta, y->d_data);
      MSP_CUDA_CHECK_LAUNCH("coo_fix_long_kernel");
    }
    goto exit;
  }
  MSP_TRY(msp__cuda_coo_part_spmv(s, m, 0, 0, alpha, x->d_data, beta, y->d_data));
  if (nempty > 0) {
    coo_empty_kernel<<<msp__cuda_blocks(nempty, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
        nempty, (const int32_t *)m->d[COO_EMPTY_SLOT], beta, y->d_data);
    MSP_CUDA_CHECK_LAUNCH("coo_empty_kernel");
  }
exit:
  return st;
}

// coo.cu: COO on CUDA: upload and a deterministic segmented-reduction SpMV (no FP atomics).
//
// The triples (sorted by row, then column) are cut into tiles of MSP__COO_TILE = 256 triples, one
// tile per warp, so every warp gets the same work whatever the row lengths (the point of COO for
// very irregular matrices), in every storage precision: the kernel is one template over the
// loaders of the values and of x. Lane l takes the 8 consecutive triples l*8 .. l*8+7 of its tile
// with 16-byte evict-first loads (msp__load8 for the values, decoded as the loader decodes them),
// multiplies, and sums its runs of equal row; a segmented scan over the lanes' trailing runs (5
// shuffles) gives each lane the part of its first row held by earlier lanes. The lane where a row
// ends writes y_r = alpha * sum + beta * y_r (through ystore_row: rounded into y's precision),
// unless the row also has triples in another tile. Such a row (it straddles a tile boundary) is
// finished by a fix-up:
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
// rows it does not hold as the ELL part wrote them). The fix-ups and the empty rows are separate
// launches: a single fused launch (fix-up by the last block to finish) measured 0.90x of them in
// geometric mean on the H100 (33 matrices), so it was removed.
//
// A fixed-point y goes through msp__cuda_spmv_fixed_y (blas1.cu: this product into an fp64 work
// vector, then a warp per block of 32 rows stores y): its scale per block of 32 rows needs the
// block's 32 results at once, and here a row is finished by one lane or by a fix-up, never by a
// warp holding a whole block.
//
// Device slots of a COO matrix:
//   0 row    int32 [tiles * 256]  row indices, padded with INT32_MAX (above every row: sorted)
//   1 col    int32 [tiles * 256]  column indices, padded with 0
//   2 head   f64   [tiles]        scratch: partial sums of rows started in an earlier tile
//   3 tail   f64   [tiles]        scratch: partial sums of rows going on in a later tile
//   4 fix    int64 [3 * fixes]    (row, t0, t1) of each straddling row, short spans first
//   5 empty  int32 [empties]      rows without entries
//   6 val    the values [nnz] in the matrix's precision (not padded: loads past nnz read 0)
//   7 scales f64 [ceil(nnz / 256)]  fixed point only
// Scalars: i64[0] tiles, i64[1] short fix-ups, i64[2] long fix-ups, i64[3] nnz, i64[4] empty rows.
#include "formats.cuh"

#define MSP__COO_SHORT_SPAN 32 // straddling rows over at most this many tiles: one thread each

enum { COO_ROW = 0, COO_COL, COO_HEAD, COO_TAIL, COO_FIX };
enum { COO_Q_TILES = 0, COO_Q_SHORT, COO_Q_LONG, COO_Q_NNZ };
enum { COO_EMPTY_SLOT = 5, COO_VAL_SLOT, COO_SCALES_SLOT };
#define COO_EMPTY_Q 4

// ---- kernels ------------------------------------------------------------------------------------
// 8 consecutive int32 items of one lane with 16-byte evict-first loads (read once per product:
// x keeps its place in L2). The tile base and l*8 keep them 32-byte aligned (cudaMalloc returns
// 256-byte aligned arrays).
__device__ __forceinline__ void coo_load8(const int32_t *p, int32_t (&r)[MSP__COO_ITEMS]) {
  const int4 *q = reinterpret_cast<const int4 *>(p);
#pragma unroll
  for (int c = 0; c < MSP__COO_ITEMS / 4; c++) {
    const int4 u = __ldcs(q + c);
    r[4 * c] = u.x;
    r[4 * c + 1] = u.y;
    r[4 * c + 2] = u.z;
    r[4 * c + 3] = u.w;
  }
}

// Row r finished with sum s: y_r = alpha * s + beta * y_r, or, HYB (part != NULL), alpha * s +
// part[r], the ELL part's fp64 partial: one rounding into y's precision from the whole row. One
// call site per place a row ends (the store into y's precision is chosen at run time).
template <class Y>
__device__ __forceinline__ void coo_finish(const Y &y, int64_t r, double alpha, double s,
                                           double beta, const double *part) {
  const bool hyb = part != nullptr;
  ystore_row(y, r, hyb ? 1.0 : alpha, hyb ? alpha * s + part[r] : s, hyb ? 0.0 : beta);
}

// Tile t (< ntiles) by the calling warp; triple k's value is va[voff + k], k < nnz.
template <class LA, class LX, class Y>
__device__ __forceinline__ void
coo_tile(int64_t t, int64_t ntiles, const int32_t *__restrict__ row,
         const int32_t *__restrict__ col, const LA &va, int64_t voff, int64_t nnz, const LX &x,
         const Y &y, double alpha, double beta, const double *part, double *head, double *tail) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int64_t base = t * MSP__COO_TILE;
  // Does the tile's first row start in an earlier tile? Which row follows the tile?
  const int32_t first_row = msp__ld(row + base);
  const bool started_before = base > 0 && msp__ld(row + base - 1) == first_row;
  const int32_t after = t + 1 < ntiles ? msp__ld(row + base + MSP__COO_TILE) : INT32_MAX;

  int32_t r[MSP__COO_ITEMS], c[MSP__COO_ITEMS];
  double v[MSP__COO_ITEMS];
  const int64_t mine = base + (int64_t)lane * MSP__COO_ITEMS;
  coo_load8(row + mine, r);
  coo_load8(col + mine, c);
  msp__load8(va, voff + mine, voff + nnz, v);
  double p[MSP__COO_ITEMS];
#pragma unroll
  for (int k = 0; k < MSP__COO_ITEMS; k++)
    p[k] = v[k] * x(c[k]);

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
          coo_finish(y, r[k], alpha, run, beta, part);
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

// 64 registers (MSP__FMT_MIN_BLOCKS blocks of 256 per SM; with a reduced-precision y the run-time
// store costs registers at each of a lane's 8 possible row ends): no spills, and 4 blocks keep over
// 128 KB of loads in flight per SM (8 triples per lane in 16-byte loads), far above what HBM
// latency asks.
template <class LA, class LX, int BLOCK, class Y>
__global__ void __launch_bounds__(BLOCK, MSP__FMT_MIN_BLOCKS)
    coo_tiles_kernel(int64_t ntiles, const int32_t *__restrict__ row,
                     const int32_t *__restrict__ col, LA va, int64_t voff, int64_t nnz, LX x, Y y,
                     double alpha, double beta, const double *__restrict__ part,
                     double *__restrict__ head, double *__restrict__ tail) {
  const int64_t t = (int64_t)blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
  if (t >= ntiles) return; // the whole warp leaves together
  coo_tile(t, ntiles, row, col, va, voff, nnz, x, y, alpha, beta, part, head, tail);
}

// One thread per straddling row of a short span: tail[t0] + head[t0+1] + ... + head[t1].
template <class Y>
__global__ void __launch_bounds__(MSP__FMT_BLOCK)
    coo_fix_short_kernel(int64_t nfix, const int64_t *__restrict__ fix,
                         const double *__restrict__ head, const double *__restrict__ tail, Y y,
                         double alpha, double beta, const double *__restrict__ part) {
  const int64_t q = (int64_t)blockIdx.x * MSP__FMT_BLOCK + threadIdx.x;
  if (q >= nfix) return;
  const int64_t r = msp__ld(fix + 3 * q), t0 = msp__ld(fix + 3 * q + 1),
                t1 = msp__ld(fix + 3 * q + 2);
  double s = tail[t0];
  for (int64_t t = t0 + 1; t <= t1; t++)
    s += head[t];
  coo_finish(y, r, alpha, s, beta, part);
}

// One block per straddling row of a long span: thread k sums elements k, k + BLOCK, ... in order
// (element 0 is tail[t0], element e > 0 is head[t0 + e]), then a fixed tree over the block.
template <int BLOCK, class Y>
__global__ void __launch_bounds__(BLOCK)
    coo_fix_long_kernel(const int64_t *__restrict__ fix, const double *__restrict__ head,
                        const double *__restrict__ tail, Y y, double alpha, double beta,
                        const double *__restrict__ part) {
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
    coo_finish(y, r, alpha, total, beta, part);
  }
}

// Rows without entries: y_i = beta * y_i (0 when beta == 0, y not read).
template <class Y>
__global__ void __launch_bounds__(MSP__FMT_BLOCK)
    coo_empty_kernel(int64_t n, const int32_t *__restrict__ rows, Y y, double beta) {
  const int64_t k = (int64_t)blockIdx.x * MSP__FMT_BLOCK + threadIdx.x;
  if (k >= n) return;
  ystore_row(y, msp__ld(rows + k), 0.0, 0.0, beta);
}

// ---- the COO part (shared with HYB) -------------------------------------------------------------
msp_status msp__cuda_coo_part_upload(msp_context ctx, msp__cuda_matrix *m, int s0, int q0,
                                     int64_t nnz, const int32_t *row, const int32_t *col) {
  msp_status st = MSP_SUCCESS;
  int64_t *all = NULL, *fix = NULL;
  const int64_t T = MSP__COO_TILE;
  const int64_t tiles = (nnz + T - 1) / T, padded = tiles * T;
  int64_t nall = 0, nshort = 0, nlong = 0;
  cudaStream_t s = msp__cuda(ctx)->stream;
  m->i64[q0 + COO_Q_TILES] = tiles;
  m->i64[q0 + COO_Q_SHORT] = 0;
  m->i64[q0 + COO_Q_LONG] = 0;
  m->i64[q0 + COO_Q_NNZ] = nnz;
  if (tiles == 0) return MSP_SUCCESS;

  // Indices padded to whole tiles: rows INT32_MAX (after every real row), column 0. The values
  // are not padded: the kernel reads those past nnz as 0.
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + COO_ROW, NULL, (size_t)padded * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + COO_COL, NULL, (size_t)padded * sizeof(int32_t)));
  MSP_CUDA_TRY(cudaMemcpyAsync(m->d[s0 + COO_ROW], row, (size_t)nnz * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s));
  MSP_CUDA_TRY(cudaMemcpyAsync(m->d[s0 + COO_COL], col, (size_t)nnz * sizeof(int32_t),
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

template <class LA, class LX, class Y>
static msp_status coo_tiles_launch(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   const LA &va, int64_t voff, const LX &x, const Y &y,
                                   double alpha, double beta, const double *part) {
  msp_status st = MSP_SUCCESS;
  const int64_t tiles = m->i64[q0 + COO_Q_TILES];
  coo_tiles_kernel<LA, LX, MSP__FMT_BLOCK, Y>
      <<<msp__cuda_blocks(tiles, MSP__FMT_BLOCK / 32), MSP__FMT_BLOCK, 0, s>>>(
          tiles, (const int32_t *)m->d[s0 + COO_ROW], (const int32_t *)m->d[s0 + COO_COL], va, voff,
          m->i64[q0 + COO_Q_NNZ], x, y, alpha, beta, part, (double *)m->d[s0 + COO_HEAD],
          (double *)m->d[s0 + COO_TAIL]);
  MSP_CUDA_CHECK_LAUNCH("coo_tiles_kernel");
exit:
  return st;
}

template <class Y>
static msp_status coo_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                const msp_acc &va, int64_t voff, const msp_acc &xa, const Y &y,
                                double alpha, double beta, const double *part) {
  msp_status st = MSP_SUCCESS;
  const int64_t tiles = m->i64[q0 + COO_Q_TILES], nshort = m->i64[q0 + COO_Q_SHORT],
                nlong = m->i64[q0 + COO_Q_LONG];
  const double *head = (const double *)m->d[s0 + COO_HEAD],
               *tail = (const double *)m->d[s0 + COO_TAIL];
  const int64_t *fix = (const int64_t *)m->d[s0 + COO_FIX];
  if (tiles == 0) return MSP_SUCCESS;
  MSP_TRY(msp__fmt_dispatch2(va, xa, [&](auto la, auto lx) {
    return coo_tiles_launch(s, m, s0, q0, la, voff, lx, y, alpha, beta, part);
  }));
  if (nshort > 0) {
    coo_fix_short_kernel<Y><<<msp__cuda_blocks(nshort, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
        nshort, fix, head, tail, y, alpha, beta, part);
    MSP_CUDA_CHECK_LAUNCH("coo_fix_short_kernel");
  }
  if (nlong > 0) {
    coo_fix_long_kernel<MSP__FMT_BLOCK, Y><<<(unsigned)nlong, MSP__FMT_BLOCK, 0, s>>>(
        fix + 3 * nshort, head, tail, y, alpha, beta, part);
    MSP_CUDA_CHECK_LAUNCH("coo_fix_long_kernel");
  }
exit:
  return st;
}

// An f64 y gets the plain store (ystore_f64): a lane of the tile kernel may finish 8 rows, and
// the run-time tests of ystore at each of them cost time on graphs whose rows end every few
// triples (as in the CSR kernels, access.cuh). The same operations: the same bits.
msp_status msp__cuda_coo_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   const msp_acc &va, int64_t voff, const msp_acc &xa,
                                   const ystore &y, double alpha, double beta, const double *part) {
  if (y.a.prec == MSP_PRECISION_F64) {
    ystore_f64 yf;
    yf.d = (double *)y.a.data;
    return coo_part_spmv(s, m, s0, q0, va, voff, xa, yf, alpha, beta, part);
  }
  return coo_part_spmv(s, m, s0, q0, va, voff, xa, y, alpha, beta, part);
}

// ---- the COO format -----------------------------------------------------------------------------
extern "C" msp_status msp__cuda_coo_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  int32_t *empty = NULL;
  int64_t nempty = 0;
  MSP_TRY(msp__fmt_check(A, "coo"));
  {
    const msp__coo *c = (const msp__coo *)A->fmt;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    MSP_TRY(msp__cuda_coo_part_upload(ctx, m, 0, 0, A->nnz, c->row, c->col));
    MSP_TRY(msp__fmt_put_values(ctx, m, A, COO_VAL_SLOT, COO_SCALES_SLOT, c->val, A->nnz, NULL, 0));
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
exit:
  // On failure backend.cu frees what A->dev holds.
  msp__free(empty);
  return st;
}

extern "C" msp_status msp__cuda_coo_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  if (msp_prec_is_fixed(y->prec))
    return msp__cuda_spmv_fixed_y(ctx, alpha, A, x, beta, y, msp__cuda_coo_spmv);
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t nempty = m->i64[COO_EMPTY_Q];
  const ystore ys = msp__vector_ystore(y);
  MSP_TRY(msp__cuda_coo_part_spmv(s, m, 0, 0, msp__fmt_values(A, m, COO_VAL_SLOT, COO_SCALES_SLOT),
                                  0, msp__vector_acc(x, 1), ys, alpha, beta, NULL));
  if (nempty > 0) {
    coo_empty_kernel<ystore><<<msp__cuda_blocks(nempty, MSP__FMT_BLOCK), MSP__FMT_BLOCK, 0, s>>>(
        nempty, (const int32_t *)m->d[COO_EMPTY_SLOT], ys, beta);
    MSP_CUDA_CHECK_LAUNCH("coo_empty_kernel");
  }
exit:
  return st;
}

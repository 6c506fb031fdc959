// coo.cu: COO on CUDA: upload and a deterministic segmented-reduction SpMV (no FP atomics).
//
// The triples (sorted by row, then column) are cut into tiles of MSP__COO_TILE = 256 triples, one
// tile per warp, so every warp gets the same work whatever the row lengths (the point of COO for
// very irregular matrices), in every storage precision: the kernel is one template over the
// loaders of the values and of x. Lane l takes the 8 consecutive triples l*8 .. l*8+7 of its tile
// with 16-byte evict-first loads (msp__load8 for the values, decoded as the loader decodes them),
// multiplies, and sums its runs of equal row; a segmented scan over the lanes' trailing runs (5
// shuffles) gives each lane the part of its first row held by earlier lanes. The lane where a row
// ends writes y_r = alpha * sum + beta * y_r (through ystore_row: rounded into y's precision).
//
// A row that straddles tile boundaries (tiles t0 .. t1) is finished by its last tile t1, in the
// same launch, so a product is one launch:
//   - with at most MSP__COO_ABSORB triples before tile t1, that tile's warp sums them itself
//     (lane l takes every 32nd from l, then a butterfly: the same sum on every lane and every
//     run); the earlier tiles skip the row;
//   - a longer row is summed by look-back (Merrill and Garland, "Single-pass parallel prefix scan
//     with decoupled look-back"): tile t0 publishes tail[t0], the sum of the row's triples it
//     holds, and each tile strictly inside the row publishes head[t], each behind a flag
//     (value, fence, flag); tile t1's warp waits for the flags of tiles t0 .. t1 - 1 (lane l
//     every 32nd), adds tail[t0] + head[t0+1] + ... in a fixed order (then a butterfly) and
//     clears the flags for the next product. A tile publishes before it waits, and waits only
//     on tiles before it, which were started no later than its own block, so the wait ends and
//     is never a chain; it comes after the tile's own products, which overlap it.
// The lane where the row ends stores alpha * (earlier part + the tile's part) + beta * y_r.
// pre[t] (computed once at upload) says what tile t's first row is, when it started in an
// earlier tile: >= 0, an absorbed row whose first triple is pre[t]; -2, a look-back row going on
// after tile t; <= -3, a look-back row ending in tile t whose first tile is -3 - pre[t]; -1
// otherwise. Every sum is formed in an order fixed by the data alone, so the same product gives
// the same bits. Empty rows get y_i = beta * y_i from a precomputed list, by warps of the same
// launch past the tiles (COO only: HYB's COO part leaves the rows it does not hold as the ELL
// part wrote them). The block size is chosen at upload so that a small matrix's tiles spread
// over all SMs.
//
// A fixed-point y goes through msp__cuda_spmv_fixed_y (blas1.cu: this product into an fp64 work
// vector, then a warp per block of 32 rows stores y): its scale per block of 32 rows needs the
// block's 32 results at once, and here a row is finished by one lane, never by a
// warp holding a whole block.
//
// Device slots of a COO matrix:
//   0 row    int32 [tiles * 256]  row indices, padded with INT32_MAX (above every row: sorted)
//   1 col    int32 [tiles * 256]  column indices, padded with 0
//   2 head   f64   [tiles]        scratch: look-back sums of tiles inside a row,
//            then int64 [tiles]   pre (see above)
//   3 tail   f64   [tiles]        scratch: look-back sums of a row's first tile
//   4 flag   uint32 [2 * tiles]   look-back flags: 2t head[t] published, 2t+1 tail[t]; 0 between
//                                 products
//   5 empty  int32 [empties]      rows without entries
//   6 val    the values [nnz] in the matrix's precision (not padded: loads past nnz read 0)
//   7 scales f64 [ceil(nnz / 256)]  fixed point only
// Scalars: i64[0] tiles, i64[1] absorbed rows, i64[2] look-back rows, i64[3] nnz, i64[4] warps
// per block, i64[5] empty rows.
#include "formats.cuh"

// Straddling rows with at most this many triples before their last tile are absorbed by it: at
// most 4 loads per lane, one round issued beside the tile's own (fewer than a tile, so such a
// row spans two tiles). Longer ones are summed by look-back, whose wait overlaps the tile's own
// work, where each further round of absorbed loads would add two memory latencies to the tile.
#define MSP__COO_ABSORB 128
static_assert(MSP__COO_ABSORB % 32 == 0 && MSP__COO_ABSORB < MSP__COO_TILE,
              "an absorbed row spans two tiles, its part before the last one read in whole rounds");

enum { COO_ROW = 0, COO_COL, COO_HEAD, COO_TAIL, COO_FLAG };
enum { COO_Q_TILES = 0, COO_Q_ABSORBED, COO_Q_LOOKBACK, COO_Q_NNZ, COO_Q_WARPS };
enum { COO_EMPTY_SLOT = 5, COO_VAL_SLOT, COO_SCALES_SLOT };
#define COO_EMPTY_Q 5

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
         const Y &y, double alpha, double beta, const double *part, double *head, double *tail,
         const int64_t *__restrict__ pre, unsigned *flag) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int64_t base = t * MSP__COO_TILE;
  // The tile's own triples, then what the tile needs to know of its neighbours: every load here
  // depends on t alone, so they all go out at once (pre[t] is read whatever the first row does).
  int32_t r[MSP__COO_ITEMS], c[MSP__COO_ITEMS];
  double v[MSP__COO_ITEMS];
  const int64_t mine = base + (int64_t)lane * MSP__COO_ITEMS;
  coo_load8(row + mine, r);
  coo_load8(col + mine, c);
  msp__load8(va, voff + mine, voff + nnz, v);
  // Does the tile's first row start in an earlier tile (absorbed: from >= 0; finished here by
  // look-back: t0 >= 0)? Which row follows the tile, and does a later tile wait for this tile's
  // part of its last row?
  const int32_t first_row = msp__ld(row + base);
  const int32_t row_before = base > 0 ? msp__ld(row + base - 1) : -1;
  const int64_t pre_t = msp__ld(pre + t);
  const int64_t pre_next = t + 1 < ntiles ? msp__ld(pre + t + 1) : -1;
  const int32_t after = t + 1 < ntiles ? msp__ld(row + base + MSP__COO_TILE) : INT32_MAX;
  const bool started_before = base > 0 && row_before == first_row;
  const int64_t pt = started_before ? pre_t : -1;
  const int64_t from = pt >= 0 ? pt : -1, t0 = pt <= -3 ? -3 - pt : -1;
  const bool next_waits = pre_next <= -2;
  // The absorbed row's triples before this tile: lane l sums every 32nd from from + l (at most
  // MSP__COO_ABSORB / 32 each, unrolled and predicated, so their loads go out beside the tile's
  // own gathers of x), then a butterfly gives every lane the same sum.
  double earlier = 0.0;
  {
    const int64_t k0 = (from >= 0 ? from : base) + lane;
#pragma unroll
    for (int j = 0; j < MSP__COO_ABSORB / 32; j++) {
      const int64_t k = k0 + 32 * j;
      if (k < base) earlier += va.stream(voff + k) * x(msp__ld(col + k));
    }
  }
  if (from >= 0) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      earlier += __shfl_xor_sync(full, earlier, o);
  }
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

  // Every row ending here is stored at once but a look-back row (t0 >= 0), whose part here the
  // lane where it ends keeps (held) until the earlier tiles' parts are in.
  double held = 0.0;
  bool holds = false;
#pragma unroll
  for (int k = 0; k < MSP__COO_ITEMS; k++) {
    run += p[k];
    const int32_t nr = k + 1 < MSP__COO_ITEMS ? r[k + 1] : next;
    if (nr != r[k]) { // row r[k] ends here
      if (t0 >= 0 && r[k] == first_row) {
        held = run;
        holds = true;
      } else if (r[k] != INT32_MAX) {
        coo_finish(y, r[k], alpha, started_before && r[k] == first_row ? earlier + run : run, beta,
                   part);
      }
      run = 0.0;
    }
  }
  // The tile's last row goes on in the next tile and is finished by look-back: publish its part
  // (value, fence, flag). This comes before the tile's own wait below, so no tile waits on a
  // tile that waits: the wait is one step, never a chain.
  if (lane == 31 && next == last && last != INT32_MAX && next_waits) {
    const bool inside = started_before && last == first_row;
    (inside ? head : tail)[t] = run;
    __threadfence();
    atomicExch(flag + 2 * t + !inside, 1u);
  }
  // Look-back (warp-uniform branch), after the tile's own products, so their loads and the
  // earlier tiles' work overlap: tile t0's tail, then the heads of the tiles inside the row; wait
  // for each flag, read the value from L2 (never a stale L1 line), clear the flag; a butterfly
  // gives every lane the same sum, in a fixed order.
  if (t0 >= 0) {
    for (int64_t u = t0 + lane; u < t; u += 32) {
      unsigned *f = flag + 2 * u + (u == t0);
      while (atomicAdd(f, 0u) == 0u) {
      }
      __threadfence();
      earlier += __ldcg(u == t0 ? tail + u : head + u);
      atomicExch(f, 0u);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      earlier += __shfl_xor_sync(full, earlier, o);
    if (holds) coo_finish(y, (int64_t)first_row, alpha, earlier + held, beta, part);
  }
}

// 64 registers (MSP__FMT_MIN_BLOCKS blocks of 256 per SM; with a reduced-precision y the run-time
// store costs registers at each of a lane's 8 possible row ends): no spills, and 4 blocks keep over
// 128 KB of loads in flight per SM (8 triples per lane in 16-byte loads), far above what HBM
// latency asks. Warps past the tiles (COO only) store the empty rows, 256 per warp:
// y_i = beta * y_i. The block size (a multiple of 32, at most BLOCK) is chosen at upload.
template <class LA, class LX, int BLOCK, class Y>
__global__ void __launch_bounds__(BLOCK, MSP__FMT_MIN_BLOCKS)
    coo_tiles_kernel(int64_t ntiles, const int32_t *__restrict__ row,
                     const int32_t *__restrict__ col, LA va, int64_t voff, int64_t nnz, LX x, Y y,
                     double alpha, double beta, const double *__restrict__ part,
                     double *__restrict__ head, double *__restrict__ tail,
                     const int64_t *__restrict__ pre, unsigned *flag, int64_t nempty,
                     const int32_t *__restrict__ empty) {
  const int64_t t = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (t < ntiles) {
    coo_tile(t, ntiles, row, col, va, voff, nnz, x, y, alpha, beta, part, head, tail, pre, flag);
    return; // the whole warp leaves together
  }
  const int64_t e0 = (t - ntiles) * MSP__COO_TILE + (threadIdx.x & 31);
#pragma unroll
  for (int k = 0; k < MSP__COO_ITEMS; k++)
    if (e0 + 32 * k < nempty) ystore_row(y, msp__ld(empty + e0 + 32 * k), 0.0, 0.0, beta);
}

// ---- the COO part (shared with HYB) -------------------------------------------------------------
msp_status msp__cuda_coo_part_upload(msp_context ctx, msp__cuda_matrix *m, int s0, int q0,
                                     int64_t nnz, const int32_t *row, const int32_t *col) {
  msp_status st = MSP_SUCCESS;
  int64_t *pre = NULL;
  const int64_t T = MSP__COO_TILE;
  const int64_t tiles = (nnz + T - 1) / T, padded = tiles * T;
  int64_t nabsorbed = 0, nlookback = 0;
  cudaStream_t s = msp__cuda(ctx)->stream;
  m->i64[q0 + COO_Q_TILES] = tiles;
  m->i64[q0 + COO_Q_ABSORBED] = 0;
  m->i64[q0 + COO_Q_LOOKBACK] = 0;
  m->i64[q0 + COO_Q_NNZ] = nnz;
  { // Warps per block: 8, fewer when that leaves SMs idle (a small matrix's tiles spread wider).
    const int64_t sms = msp__cuda(ctx)->sm_count > 0 ? msp__cuda(ctx)->sm_count : 1;
    int64_t w = MSP__FMT_BLOCK / 32;
    while (w > 1 && (tiles + w - 1) / w < 2 * sms)
      w /= 2;
    m->i64[q0 + COO_Q_WARPS] = w;
  }
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
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + COO_TAIL, NULL, (size_t)tiles * sizeof(double)));
  MSP_TRY(
      msp__cuda_matrix_put(ctx, m, s0 + COO_FLAG, NULL, (size_t)(2 * tiles) * sizeof(unsigned)));

  // Straddling rows: row r starts in tile t0, goes on over the boundary after it and ends in
  // tile t1 (the boundaries after t0 .. t1 - 1 are inside it).
  MSP_TRY(MSP_ALLOC(pre, tiles, "COO straddling rows"));
  for (int64_t t = 0; t < tiles; t++)
    pre[t] = -1;
  for (int64_t t0 = 0; t0 + 1 < tiles; t0++) {
    const int64_t b = (t0 + 1) * T; // < nnz, since t0 + 1 < tiles
    const int32_t r = row[b - 1];
    if (row[b] != r) continue;
    int64_t first = b - 1; // the row's first triple, inside tile t0
    while (first > t0 * T && row[first - 1] == r)
      first--;
    int64_t t1 = t0 + 1;
    while (t1 + 1 < tiles && row[(t1 + 1) * T - 1] == r && row[(t1 + 1) * T] == r)
      t1++;
    if (t1 * T - first <= MSP__COO_ABSORB) {
      for (int64_t t = t0 + 1; t <= t1; t++)
        pre[t] = first;
      nabsorbed++;
    } else {
      for (int64_t t = t0 + 1; t < t1; t++)
        pre[t] = -2;
      pre[t1] = -3 - t0;
      nlookback++;
    }
    t0 = t1 - 1; // the loop's t0++ moves to tile t1, whose first row is this one
  }
  // head (scratch, written by the kernel before it is read), then pre.
  MSP_TRY(msp__cuda_matrix_put(ctx, m, s0 + COO_HEAD, NULL,
                               (size_t)tiles * (sizeof(double) + sizeof(int64_t))));
  MSP_CUDA_TRY(cudaMemcpyAsync((double *)m->d[s0 + COO_HEAD] + tiles, pre,
                               (size_t)tiles * sizeof(int64_t), cudaMemcpyHostToDevice, s));
  m->i64[q0 + COO_Q_ABSORBED] = nabsorbed;
  m->i64[q0 + COO_Q_LOOKBACK] = nlookback;
  // pre is freed below: wait for the copy from it (uploads are not on the hot path).
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
exit:
  msp__free(pre);
  return st;
}

template <class LA, class LX, class Y>
static msp_status coo_tiles_launch(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   const LA &va, int64_t voff, const LX &x, const Y &y,
                                   double alpha, double beta, const double *part, int64_t nempty,
                                   const int32_t *empty) {
  msp_status st = MSP_SUCCESS;
  const int64_t tiles = m->i64[q0 + COO_Q_TILES], w = m->i64[q0 + COO_Q_WARPS];
  const int64_t warps = tiles + (nempty + MSP__COO_TILE - 1) / MSP__COO_TILE;
  double *head = (double *)m->d[s0 + COO_HEAD];
  coo_tiles_kernel<LA, LX, MSP__FMT_BLOCK, Y>
      <<<msp__cuda_blocks(warps, (int)w), (unsigned)(32 * w), 0, s>>>(
          tiles, (const int32_t *)m->d[s0 + COO_ROW], (const int32_t *)m->d[s0 + COO_COL], va, voff,
          m->i64[q0 + COO_Q_NNZ], x, y, alpha, beta, part, head, (double *)m->d[s0 + COO_TAIL],
          (const int64_t *)(head + tiles), (unsigned *)m->d[s0 + COO_FLAG], nempty, empty);
  MSP_CUDA_CHECK_LAUNCH("coo_tiles_kernel");
exit:
  return st;
}

template <class Y>
static msp_status coo_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                const msp_acc &va, int64_t voff, const msp_acc &xa, const Y &y,
                                double alpha, double beta, const double *part, int64_t nempty,
                                const int32_t *empty) {
  if (m->i64[q0 + COO_Q_TILES] == 0 && nempty == 0) return MSP_SUCCESS;
  return msp__fmt_dispatch2(va, xa, [&](auto la, auto lx) {
    return coo_tiles_launch(s, m, s0, q0, la, voff, lx, y, alpha, beta, part, nempty, empty);
  });
}

// An f64 y gets the plain store (ystore_f64): a lane of the tile kernel may finish 8 rows, and
// the run-time tests of ystore at each of them cost time on graphs whose rows end every few
// triples (as in the CSR kernels, access.cuh). The same operations: the same bits. nempty rows
// listed in empty (device) get y_i = beta * y_i in the same launch.
static msp_status coo_part_spmv_y(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                  const msp_acc &va, int64_t voff, const msp_acc &xa,
                                  const ystore &y, double alpha, double beta, const double *part,
                                  int64_t nempty, const int32_t *empty) {
  if (y.a.prec == MSP_PRECISION_F64) {
    ystore_f64 yf;
    yf.d = (double *)y.a.data;
    return coo_part_spmv(s, m, s0, q0, va, voff, xa, yf, alpha, beta, part, nempty, empty);
  }
  return coo_part_spmv(s, m, s0, q0, va, voff, xa, y, alpha, beta, part, nempty, empty);
}

msp_status msp__cuda_coo_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   const msp_acc &va, int64_t voff, const msp_acc &xa,
                                   const ystore &y, double alpha, double beta, const double *part) {
  return coo_part_spmv_y(s, m, s0, q0, va, voff, xa, y, alpha, beta, part, 0, NULL);
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
  MSP_TRY(coo_part_spmv_y(s, m, 0, 0, msp__fmt_values(A, m, COO_VAL_SLOT, COO_SCALES_SLOT), 0,
                          msp__vector_acc(x, 1), msp__vector_ystore(y), alpha, beta, NULL,
                          m->i64[COO_EMPTY_Q], (const int32_t *)m->d[COO_EMPTY_SLOT]));
exit:
  return st;
}

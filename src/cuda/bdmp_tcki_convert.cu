// bdmp_tcki_convert.cu: BDMP-TCKI built on the device: from the precision
// selection of bdmp_convert.cu (the same tiles in fp32 as PBP's), the tile formats, the block-row
// kinds, the host record of bdmp.h and the GPU layout of bdmp.cu (tile chunks as row slabs, the
// CSR-like part as PBP), from the fp64 CSR of the source on the device. The result is the host
// build's (src/core/bdmp_tcki.c) followed by its upload (bdmp.cu), bit for bit:
// tests/cuda_bdmp.c compares the host records and every device array. Steps:
//   1. a warp per block row walks its tiles (lane r on row r, the 16-way merge of the tiling):
//      each tile's format (msp__tcki_plan_tile), the greedy chunks of the tile part
//      (msp__tcki_slab_add) and both kinds' costs; the cost sums by integer atomics (exact in any
//      order), read back, give the matrix's kind choice (msp__tcki_choice, on the host);
//   2. a thread per block row: its kind and its counts (stored entries, chunks, slab sizes,
//      values, the host record's index bytes), one scan over the block rows gives every offset
//      (the index bytes' offsets compose "round up to 4" for CSR-like block rows, whose segments
//      start 4-aligned);
//   3. a warp per block row walks its tiles again: each chunk twice (its tiles and row lengths,
//      then its slab), writing the host record's tiles in their formats and the chunk's slab and
//      record; a CSR-like block row writes its segments, and its rows into the CSR of the
//      CSR-like part, which is then packed as PBP (msp__cv_pbp_pack);
//   4. the host record is read back.
// The device time of all this (event-timed) is the report's convert_device_ms.
#include "bdmp_convert.cuh"

#include "precision.h"

#include <string.h>

// Step 1's counts per block row (int64 each), the scan's fields of step 2 and the scalars.
enum {
  B_NTILE,  // tiles
  B_HBYTES, // the host record's index bytes of its tiles
  B_HV64,   // the host record's fp64 values of its tiles (padding included)
  B_HV32,
  B_NCH, // tile chunks
  B_NIDX,
  B_S64, // slab values, fp64 and fp32 (padding included)
  B_S32,
  B_N64, // entries by precision
  B_N32,
  B_NS64, // segments by precision, were it CSR-like
  B_NS32,
  B_COUNT
};
enum {
  F_OUT, // stored tiles or segments
  F_CH,
  F_TCOL,
  F_IDX,
  F_S64,
  F_S32,
  F_SPLIT,
  F_PARTS,
  F_HV64,
  F_HV32,
  F_CSR, // CSR-like block rows, their segments and entries
  F_SEGS,
  F_CSRNNZ,
  F_COUNT
};
enum {
  T_TILES_ONLY,
  T_ROWS_ONLY,
  T_MIXED,
  T_NCSR,
  T_NTILE,
  T_NNZ64,
  T_EARLY, // block rows whose walk stopped early (their tile cost a lower bound)
  T_FMT,
  T_COUNT = T_FMT + 4
};

// A block row's counts with the offset of its host record index bytes as a function of the
// offset before it: x + a (r = 0), or round_up_4(x + a) + b (r = 1).
struct tk_cnt {
  long long c[F_COUNT];
  long long a, b;
  int r;
};
__host__ __device__ static inline long long up4(long long x) {
  return (x + 3) & ~3ll;
}
__host__ __device__ static inline long long tk_apply(const tk_cnt &f, long long x) {
  return f.r ? up4(x + f.a) + f.b : x + f.a;
}
struct tk_cnt_op { // x before y
  __host__ __device__ tk_cnt operator()(const tk_cnt &x, const tk_cnt &y) const {
    tk_cnt z;
    for (int k = 0; k < F_COUNT; k++)
      z.c[k] = x.c[k] + y.c[k];
    if (!y.r) {
      z.r = x.r;
      z.a = x.r ? x.a : x.a + y.a;
      z.b = x.r ? x.b + y.a : 0;
    } else {
      z.r = 1;
      z.a = x.r ? x.a : x.a + y.a;
      z.b = x.r ? up4(x.b + y.a) + y.b : y.b;
    }
    return z;
  }
};

// The 16 lanes' values of v (lanes >= 16 hold 0) in len[0..15], on every lane.
__device__ static inline void gather16(int v, int len[MSP_BDMP_TILE]) {
  for (int r = 0; r < MSP_BDMP_TILE; r++)
    len[r] = __shfl_sync(CV_FULL, v, r);
}
// The sum of v over the warp's 32 lanes (int64).
__device__ static inline int64_t warp_sum(int64_t v) {
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_xor_sync(CV_FULL, v, off);
  return v;
}
// Exclusive prefix of v over lanes 0..31.
__device__ static inline int64_t excl_scan(int64_t v, int lane) {
  int64_t s = v;
  for (int off = 1; off < 32; off <<= 1) {
    const int64_t t = __shfl_up_sync(CV_FULL, s, off);
    if (lane >= off) s += t;
  }
  return s - v;
}

// The tile at the cursor: lane's entries [s0, c.cur) of block column bc, its precision p (0 fp64,
// 1 fp32) and every lane's row lengths.
struct tk_tile {
  int64_t s0;
  int len, p, n;
  int lens[MSP_BDMP_TILE];
};
__device__ static inline void take_tile(brow_cursor &c, const int32_t *colind, const uint8_t *e64,
                                        unsigned bc, tk_tile &t) {
  t.s0 = c.cur;
  while (c.in(colind, bc))
    c.cur++;
  t.len = (int)(c.cur - t.s0);
  t.p = __any_sync(CV_FULL, t.len > 0 && e64[t.s0] == 0) ? 1 : 0;
  t.n = __reduce_add_sync(CV_FULL, (unsigned)t.len);
  gather16(t.len, t.lens);
}

// Step 1.
__global__ void __launch_bounds__(CV_THREADS)
    tk_brow(int64_t rows, int64_t nbrows, const int64_t *__restrict__ rowptr,
            const int32_t *__restrict__ colind, const uint8_t *__restrict__ e64,
            const int64_t *__restrict__ n64, int early, long long *__restrict__ info,
            uint8_t *__restrict__ pref, unsigned long long *__restrict__ tsc) {
  const int lane = threadIdx.x & 31;
  const int64_t br = (int64_t)blockIdx.x * CV_WARPS + (threadIdx.x >> 5);
  if (br >= nbrows) return;
  brow_cursor c(rows, rowptr, br, lane);
  const int64_t i = br * MSP_BDMP_TILE + lane;
  const int64_t rl = c.end - c.cur, r64 = lane < MSP_BDMP_TILE && i < rows ? n64[i] : 0;
  const int64_t n[2] = {warp_sum(r64), warp_sum(rl - r64)};
  const int64_t cr = msp__tcki_rows_cost(n[0], n[1]);
  int64_t ct = 0; // the tiles' cost, or (cut short) a lower bound above cr
  bool cut = false;
  // Before the walk: a chunk's slab is as wide as its longest row, so the slabs hold at least
  // 16 (1 + 4) bytes per entry of the block row's longest row (a power-law row alone in its
  // tiles: no walk at all).
  const int64_t lb0 = msp__tcki_tiles_cost((int64_t)MSP_BDMP_TILE * (1 + 4) *
                                           (int64_t)__reduce_max_sync(CV_FULL, (unsigned)rl));
  if (early && lb0 > cr) {
    ct = lb0;
    cut = true;
  }
  int64_t ntile = 0, hbytes = 0, hv[2] = {0, 0}, nch = 0, nidx = 0, s[2] = {0, 0}, tb = 0;
  int L[2] = {0, 0};
  msp__tcki_slab ch; // n and w only (the lanes hold the lengths)
  ch.n = ch.w[0] = ch.w[1] = 0;
  const auto close = [&]() {
    tb += msp__tcki_slab_bytes(&ch);
    nch++;
    nidx += (int64_t)MSP_BDMP_TILE * (ch.w[0] + ch.w[1]);
    s[0] += (int64_t)MSP_BDMP_TILE * ch.w[0];
    s[1] += (int64_t)MSP_BDMP_TILE * ch.w[1];
  };
  tk_tile t;
  for (unsigned bc; !cut && (bc = c.next(colind)) != CV_NONE;) {
    take_tile(c, colind, e64, bc, t);
    const msp__tcki_tile_plan pl = msp__tcki_plan_tile(t.lens, t.n);
    ntile++;
    hbytes += pl.bytes;
    hv[t.p] += pl.vals;
    const int a = L[0] + (t.p == 0 ? t.len : 0), b = L[1] + (t.p == 1 ? t.len : 0);
    const int w64 = (int)__reduce_max_sync(CV_FULL, (unsigned)a),
              w = (int)__reduce_max_sync(CV_FULL, (unsigned)(a + b));
    if (ch.n > 0 && (ch.n >= MSP__TCKI_CHUNK_TILES || w > MSP__TCKI_CHUNK_WIDTH)) {
      close();
      L[0] = t.p == 0 ? t.len : 0;
      L[1] = t.p == 1 ? t.len : 0;
      ch.n = 1;
      ch.w[0] = (int)__reduce_max_sync(CV_FULL, (unsigned)L[0]);
      ch.w[1] = (int)__reduce_max_sync(CV_FULL, (unsigned)(L[0] + L[1])) - ch.w[0];
    } else {
      L[0] = a;
      L[1] = b;
      ch.n++;
      ch.w[0] = w64;
      ch.w[1] = w - w64;
    }
    // early: the tiles cost at least the closed chunks and this one as it is (a chunk only grows,
    // a split only adds); once that is above the CSR-like cost, the block row is CSR-like in
    // every choice but "all tiles" (the caller walks again where that one may win)
    const int64_t lb = msp__tcki_tiles_cost(tb + msp__tcki_slab_bytes(&ch));
    if (early && lb > cr) {
      ct = lb;
      cut = true;
      break;
    }
  }
  if (!cut) {
    if (ch.n > 0) close();
    if (nch > 1) tb += 3 * 8 + nch * MSP_BDMP_TILE * 8 * 2;
    ct = msp__tcki_tiles_cost(tb);
  }
  const int64_t ns64 = msp__tcki_nsegs(n[0], __reduce_max_sync(CV_FULL, (unsigned)r64)),
                ns32 = msp__tcki_nsegs(n[1], __reduce_max_sync(CV_FULL, (unsigned)(rl - r64)));
  if (lane == 0) {
    long long *o = info + br * B_COUNT;
    o[B_NTILE] = ntile;
    o[B_HBYTES] = hbytes;
    o[B_HV64] = hv[0];
    o[B_HV32] = hv[1];
    o[B_NCH] = nch;
    o[B_NIDX] = nidx;
    o[B_S64] = s[0];
    o[B_S32] = s[1];
    o[B_N64] = n[0];
    o[B_N32] = n[1];
    o[B_NS64] = ns64;
    o[B_NS32] = ns32;
    const bool csr = ct > cr;
    pref[br] = csr;
    if (n[0] + n[1] > 0) {
      atomicAdd(tsc + T_TILES_ONLY, (unsigned long long)ct);
      atomicAdd(tsc + T_ROWS_ONLY, (unsigned long long)cr);
      atomicAdd(tsc + T_MIXED, (unsigned long long)(csr ? cr : ct));
      atomicAdd(tsc + (csr ? T_NCSR : T_NTILE), 1ull);
      atomicAdd(tsc + T_NNZ64, (unsigned long long)n[0]);
      if (cut) atomicAdd(tsc + T_EARLY, 1ull);
    }
  }
}

// Step 2: kinds (kind[br] 1: CSR-like) and counts.
__global__ void tk_count(int64_t nbrows, int choice, int64_t csr_brows,
                         const long long *__restrict__ info, const uint8_t *__restrict__ pref,
                         uint8_t *__restrict__ kind, tk_cnt *__restrict__ cnt) {
  const int64_t br = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (br > nbrows) return;
  tk_cnt z;
  for (int k = 0; k < F_COUNT; k++)
    z.c[k] = 0;
  z.a = z.b = 0;
  z.r = 0;
  if (br < nbrows) {
    const long long *o = info + br * B_COUNT;
    const bool nonempty = o[B_N64] + o[B_N32] > 0;
    const bool csr = nonempty && (choice == 2 || (choice == 1 && pref[br]));
    kind[br] = csr;
    if (csr) {
      z.c[F_OUT] = z.c[F_SEGS] = o[B_NS64] + o[B_NS32];
      z.c[F_HV64] = o[B_N64];
      z.c[F_HV32] = o[B_N32];
      z.c[F_CSR] = 1;
      z.c[F_CSRNNZ] = o[B_N64] + o[B_N32];
      z.r = 1;
      z.b = 2 * MSP_BDMP_TILE * z.c[F_SEGS] + 4 * z.c[F_CSRNNZ];
    } else {
      const long long nch = o[B_NTILE] > 0 ? o[B_NCH] : (csr_brows > 0 ? 0 : 1);
      z.c[F_OUT] = o[B_NTILE];
      z.c[F_CH] = nch;
      z.c[F_TCOL] = o[B_NTILE];
      z.c[F_IDX] = o[B_NIDX];
      z.c[F_S64] = o[B_S64];
      z.c[F_S32] = o[B_S32];
      z.c[F_SPLIT] = nch > 1;
      z.c[F_PARTS] = nch > 1 ? nch : 0;
      z.c[F_HV64] = o[B_HV64];
      z.c[F_HV32] = o[B_HV32];
      z.a = o[B_HBYTES];
    }
  }
  cnt[br] = z;
}

// The CSR-like part's rows: their entries (0 in tile block rows) and fp64 entries.
__global__ void tk_rows(int64_t rows, const int64_t *__restrict__ rowptr,
                        const int64_t *__restrict__ n64, const uint8_t *__restrict__ kind,
                        int64_t *__restrict__ rlen, int64_t *__restrict__ rn64) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i > rows) return;
  const bool in = i < rows && kind[i / MSP_BDMP_TILE];
  rlen[i] = in ? rowptr[i + 1] - rowptr[i] : 0;
  if (i < rows) rn64[i] = in ? n64[i] : 0;
}

// Where step 3 writes.
struct tk_out {
  // host record
  int32_t *tile_col;
  uint8_t *tile_fmt, *tile_width;
  int64_t *eoff, *voff;
  uint8_t *idx;
  float *val32;
  double *val64;
  unsigned long long *tsc;
  // tile part
  msp__tcki_chunk *chunk;
  int32_t *tcol;
  int64_t *runs;
  uint8_t *didx;
  float *dval32;
  double *dval64;
  // CSR-like part
  const int64_t *rrowptr;
  int32_t *rcol;
  double *rval;
  uint8_t *re64;
};

// Lane r's entries [t.s0, t.s0 + t.len) of a tile into the host record: its index bytes from eo,
// its values from vo.
__device__ static inline void put_tile(const tk_tile &t, const int32_t *colind, const double *val,
                                       const msp__tcki_tile_plan &pl, int64_t eo, int64_t vo,
                                       int lane, const tk_out &w) {
  const bool f64 = t.p == 0;
  uint8_t *ix = w.idx + eo;
  const auto put = [&](int64_t pos, double a) {
    if (f64)
      w.val64[vo + pos] = a;
    else
      w.val32[vo + pos] = msp_f32_from_double(a);
  };
  const int r = lane;
  if (pl.fmt == MSP__TILE_COO) { // row then column: the rows before this one, then in order
    const int64_t at = excl_scan(t.len, lane);
    for (int q = 0; q < t.len; q++) {
      ix[at + q] = (uint8_t)(r << 4 | (colind[t.s0 + q] & 15));
      put(at + q, val[t.s0 + q]);
    }
    return;
  }
  const int wd = pl.fmt == MSP__TILE_CSR ? 0 : pl.width;
  if (lane < MSP_BDMP_TILE) { // ELL slots (ELL, HYB's first wd of each row), padding flagged
    for (int q = 0; q < wd; q++) {
      const int64_t sl = (int64_t)q * MSP_BDMP_TILE + r;
      ix[sl] = q < t.len ? (uint8_t)(colind[t.s0 + q] & 15) : (uint8_t)MSP__TILE_PAD;
      put(sl, q < t.len ? val[t.s0 + q] : 0.0);
    }
  }
  if (pl.fmt == MSP__TILE_ELL) return;
  // CSR (or HYB's CSR part): 17 row pointers, then the rest in row order
  const int rest = t.len > wd ? t.len - wd : 0;
  const int64_t base = (int64_t)MSP_BDMP_TILE * wd, at = excl_scan(rest, lane);
  uint8_t *rp = ix + base, *cx = rp + MSP_BDMP_TILE + 1;
  if (lane == 0) rp[0] = 0;
  if (lane < MSP_BDMP_TILE) rp[r + 1] = (uint8_t)(at + rest);
  for (int q = 0; q < rest; q++) {
    cx[at + q] = (uint8_t)(r << 4 | (colind[t.s0 + wd + q] & 15));
    put(base + at + q, val[t.s0 + wd + q]);
  }
}

// Step 3, a tile block row: its chunks (records, tile columns, slabs, run) and host tiles.
__device__ static void fill_tiles(int64_t br, const tk_cnt &f, int64_t own_nch, brow_cursor &c,
                                  const int32_t *colind, const double *val, const uint8_t *e64,
                                  int lane, const tk_out &w) {
  int64_t o = f.c[F_OUT], ch = f.c[F_CH], tc = f.c[F_TCOL], ioff = f.c[F_IDX], v64 = f.c[F_S64],
          v32 = f.c[F_S32], part = f.c[F_PARTS], hv[2] = {f.c[F_HV64], f.c[F_HV32]};
  long long eoff = tk_apply(f, 0); // this block row's first index byte
  const int64_t ch0 = ch;
  unsigned long long fmt[4] = {0, 0, 0, 0};
  tk_tile t;
  bool any = false;
  for (;;) {
    // the chunk's tiles: pass 1 their row lengths and widths, pass 2 the slab
    const int64_t start = c.cur;
    int L[2] = {0, 0}, n = 0, W[2] = {0, 0};
    for (unsigned bc; (bc = c.next(colind)) != CV_NONE;) {
      const int64_t back = c.cur;
      take_tile(c, colind, e64, bc, t);
      const int a = L[0] + (t.p == 0 ? t.len : 0), b = L[1] + (t.p == 1 ? t.len : 0);
      const int w64 = (int)__reduce_max_sync(CV_FULL, (unsigned)a),
                wd = (int)__reduce_max_sync(CV_FULL, (unsigned)(a + b));
      if (n > 0 && (n >= MSP__TCKI_CHUNK_TILES || wd > MSP__TCKI_CHUNK_WIDTH)) {
        c.cur = back; // the next chunk's
        break;
      }
      L[0] = a;
      L[1] = b;
      W[0] = w64;
      W[1] = wd - w64;
      n++;
    }
    if (n == 0 && any) break;
    any = true;
    const int64_t stop = c.cur;
    c.cur = start;
    const int64_t s64 = (int64_t)MSP_BDMP_TILE * W[0];
    if (lane < MSP_BDMP_TILE) { // padding: the row's slots after its entries
      for (int k = L[0] + L[1]; k < W[0] + W[1]; k++) {
        const int64_t sl = (int64_t)k * MSP_BDMP_TILE + lane;
        w.didx[ioff + sl] = MSP__TCKI_PAD;
        if (k < W[0])
          w.dval64[v64 + sl] = 0.0;
        else
          w.dval32[v32 + sl - s64] = 0.0f;
      }
    }
    int k64 = 0, k32 = L[0];
    for (int j = 0; j < n; j++) {
      const unsigned bc = c.next(colind);
      take_tile(c, colind, e64, bc, t);
      const msp__tcki_tile_plan pl = msp__tcki_plan_tile(t.lens, t.n);
      if (lane == 0) {
        w.tile_col[o] = (int32_t)bc;
        w.tile_fmt[o] = (uint8_t)(pl.fmt | (t.p == 0 ? MSP__TILE_F64 : 0));
        w.tile_width[o] = pl.width;
        w.eoff[o] = eoff;
        w.voff[o] = hv[t.p];
        w.tcol[tc + j] = (int32_t)bc;
      }
      fmt[pl.fmt]++;
      put_tile(t, colind, val, pl, eoff, hv[t.p], lane, w);
      for (int q = 0; q < t.len; q++) {
        const int kk = t.p == 0 ? k64++ : k32++;
        const int64_t sl = (int64_t)kk * MSP_BDMP_TILE + lane;
        const double v = val[t.s0 + q];
        const double a = t.p == 0 ? v : (double)msp_f32_from_double(v); // as stored
        w.didx[ioff + sl] = (uint8_t)(j << 4 | (colind[t.s0 + q] & 15));
        if (kk < W[0])
          w.dval64[v64 + sl] = a;
        else
          w.dval32[v32 + sl - s64] = (float)a; // an fp32 tile's value: exact
      }
      eoff += pl.bytes;
      hv[t.p] += pl.vals;
      o++;
    }
    c.cur = stop;
    if (lane == 0) {
      msp__tcki_chunk r;
      r.br = (int32_t)br;
      r.part = own_nch > 1 ? (int32_t)(part + (ch - ch0)) : -1;
      r.first = (int32_t)tc;
      r.packed = (uint32_t)n | (uint32_t)W[0] << 8 | (uint32_t)W[1] << 16;
      r.ioff = ioff;
      r.v64off = v64;
      r.v32off = v32;
      w.chunk[ch] = r;
    }
    ch++;
    tc += n;
    ioff += (int64_t)MSP_BDMP_TILE * (W[0] + W[1]);
    v64 += s64;
    v32 += (int64_t)MSP_BDMP_TILE * W[1];
    if (n == 0) break; // an empty block row's one chunk
  }
  if (lane == 0) {
    if (own_nch > 1) { // split: its run
      w.runs[3 * f.c[F_SPLIT]] = br;
      w.runs[3 * f.c[F_SPLIT] + 1] = part;
      w.runs[3 * f.c[F_SPLIT] + 2] = own_nch;
    }
    for (int k = 0; k < 4; k++)
      if (fmt[k]) atomicAdd(w.tsc + T_FMT + k, fmt[k]);
  }
}

// Step 3, a CSR-like block row: its segments in the host record (each precision's, fp64 first,
// every row's entries of that precision dealt in column order) and its rows in the CSR-like
// part's CSR. The segments' headers first (row ends, offsets), then each row by the whole warp:
// its entries of a precision ranked by a ballot per 32, entry c of len going to segment
// s = floor(((c + 1) ns - 1) / len), the last whose first entry floor(len s / ns) is <= c.
__device__ static void fill_rows(int64_t rows, int64_t br, const tk_cnt &f, const long long *own,
                                 const int64_t *rowptr, const int32_t *colind, const double *val,
                                 const uint8_t *e64, const int64_t *n64, int lane,
                                 const tk_out &w) {
  const int64_t i = br * MSP_BDMP_TILE + lane;
  const bool mine = lane < MSP_BDMP_TILE && i < rows;
  const int64_t k0 = mine ? rowptr[i] : 0, k1 = mine ? rowptr[i + 1] : 0;
  const int64_t r64 = mine ? n64[i] : 0;
  int64_t o = f.c[F_OUT], hv[2] = {f.c[F_HV64], f.c[F_HV32]};
  long long eoff = tk_apply(f, 0);
  for (int p = 0; p < 2; p++) { // headers
    const int64_t ns = own[p == 0 ? B_NS64 : B_NS32];
    const int64_t len = p == 0 ? r64 : (k1 - k0) - r64;
    for (int64_t s = 0; s < ns; s++) {
      const int64_t share = mine ? msp__tcki_seg_share(len, s, ns) : 0;
      const int64_t before = excl_scan(share, lane);
      const int64_t total = __shfl_sync(CV_FULL, before + share, MSP_BDMP_TILE - 1);
      const long long a = up4(eoff);
      uint16_t *ends = (uint16_t *)(void *)(w.idx + a);
      if (lane < MSP_BDMP_TILE) ends[lane] = (uint16_t)(before + share);
      if (lane < a - eoff) w.idx[eoff + lane] = 0;
      if (lane == 0) {
        w.tile_col[o] = 0;
        w.tile_fmt[o] = (uint8_t)(MSP__TILE_ROWS | (p == 0 ? MSP__TILE_F64 : 0));
        w.tile_width[o] = 0;
        w.eoff[o] = eoff;
        w.voff[o] = hv[p];
      }
      eoff = a + 2 * MSP_BDMP_TILE + 4 * total;
      hv[p] += total;
      o++;
    }
  }
  __syncwarp(); // the headers, read below by every lane
  for (int r = 0; r < MSP_BDMP_TILE && br * MSP_BDMP_TILE + r < rows; r++) {
    const int64_t a = __shfl_sync(CV_FULL, k0, r), b = __shfl_sync(CV_FULL, k1, r),
                  na = __shfl_sync(CV_FULL, r64, r);
    const int64_t at = w.rrowptr[br * MSP_BDMP_TILE + r];
    for (int64_t k = a + lane; k < b; k += 32) { // the CSR-like part: the row as it is
      w.rcol[at + (k - a)] = colind[k];
      w.rval[at + (k - a)] = val[k];
      w.re64[at + (k - a)] = e64[k];
    }
    for (int p = 0; p < 2; p++) {
      const int64_t ns = own[p == 0 ? B_NS64 : B_NS32], len = p == 0 ? na : (b - a) - na;
      const int64_t first = f.c[F_OUT] + (p == 0 ? 0 : own[B_NS64]); // p's first segment
      int64_t cbase = 0;
      for (int64_t kb = a; kb < b && len > 0; kb += 32) {
        const int64_t k = kb + lane;
        const bool in = k < b && ((e64[k] != 0) == (p == 0));
        const unsigned bal = __ballot_sync(CV_FULL, in);
        if (in) {
          const int64_t c = cbase + __popc(bal & ((1u << lane) - 1u));
          const int64_t s = ((c + 1) * ns - 1) / len, so = first + s;
          const long long sa = up4(w.eoff[so]);
          const uint16_t *ends = (const uint16_t *)(const void *)(w.idx + sa);
          const int64_t pos = (r > 0 ? ends[r - 1] : 0) + (c - len * s / ns);
          ((int32_t *)(void *)(w.idx + sa + 2 * MSP_BDMP_TILE))[pos] = colind[k];
          if (p == 0)
            w.val64[w.voff[so] + pos] = val[k];
          else
            w.val32[w.voff[so] + pos] = msp_f32_from_double(val[k]);
        }
        cbase += __popc(bal);
      }
    }
  }
}

// Step 3: a warp per block row.
__global__ void __launch_bounds__(CV_THREADS)
    tk_fill(int64_t rows, int64_t nbrows, const int64_t *__restrict__ rowptr,
            const int32_t *__restrict__ colind, const double *__restrict__ val,
            const uint8_t *__restrict__ e64, const int64_t *__restrict__ n64,
            const long long *__restrict__ info, const uint8_t *__restrict__ kind,
            const tk_cnt *__restrict__ pre, int64_t csr_brows, tk_out w) {
  const int lane = threadIdx.x & 31;
  const int64_t br = (int64_t)blockIdx.x * CV_WARPS + (threadIdx.x >> 5);
  if (br >= nbrows) return;
  const long long *own = info + br * B_COUNT;
  const tk_cnt f = pre[br];
  if (kind[br]) {
    fill_rows(rows, br, f, own, rowptr, colind, val, e64, n64, lane, w);
    return;
  }
  const int64_t own_nch = own[B_NTILE] > 0 ? own[B_NCH] : (csr_brows > 0 ? 0 : 1);
  if (own_nch == 0) return;
  brow_cursor c(rows, rowptr, br, lane);
  fill_tiles(br, f, own_nch, c, colind, val, e64, lane, w);
}

// The host record's tile_ptr: the block rows' first stored tiles.
__global__ void tk_tile_ptr(int64_t nbrows, const tk_cnt *__restrict__ pre,
                            int64_t *__restrict__ out) {
  const int64_t br = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (br <= nbrows) out[br] = pre[br].c[F_OUT];
}

// ---- the conversion ----------------------------------------------------------------------------
template <typename T>
static msp_status to_host(T **out, const T *dev, int64_t n, const char *what, cudaStream_t s) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(MSP_ALLOC(*out, n > 0 ? n : 1, what));
  if (n > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(*out, dev, (size_t)n * sizeof(T), cudaMemcpyDeviceToHost, s));
exit:
  return st;
}

extern "C" msp_status msp__cuda_bdmp_tcki_convert(msp_context ctx, const msp_matrix A,
                                                  msp_matrix B) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  msp__cv_scratch tmp;
  tmp.s = s;
  msp__cuda_matrix *m = NULL;
  msp__bdmp_tcki *T = NULL;
  msp__cv_timer timer;
  msp__bdmp_info sel;
  const int64_t rows = B->rows, nnz = B->nnz, nbrows = (rows + MSP_BDMP_TILE - 1) / MSP_BDMP_TILE;
  const int64_t *rowptr = NULL;
  const int32_t *colind = NULL;
  const double *val = NULL;
  unsigned long long h_t[T_COUNT], *tsc = NULL;
  uint8_t *e64 = NULL, *pref = NULL, *kind = NULL;
  int64_t *n64 = NULL, rnnz = 0, *tile_ptr = NULL;
  long long *info = NULL;
  tk_cnt *cnt = NULL, *pre = NULL, tot;
  tk_out w;
  msp__tcki_dev_size dev;
  int choice = 0;
  long long ebytes = 0;
  memset(&w, 0, sizeof w);
  memset(&dev, 0, sizeof dev);
  MSP_TRY(msp__cv_begin(ctx, tmp, timer, A, B, &rowptr, &colind, &val, &e64, &n64, &sel));

  // ---- 1: tiles, chunks and costs per block row; the kind choice
  MSP_TRY(tmp.get(&info, nbrows * B_COUNT, "the block rows' counts"));
  MSP_TRY(tmp.get(&pref, nbrows, "the block rows' cheaper kinds"));
  MSP_TRY(tmp.get(&kind, nbrows, "the block rows' kinds"));
  MSP_TRY(tmp.get(&tsc, T_COUNT, "the TCKI counters"));
  MSP_TRY(tmp.get(&cnt, nbrows + 1, "the block rows' sizes"));
  MSP_TRY(tmp.get(&pre, nbrows + 1, "the block rows' offsets"));
  // Walked with the early stop first (without it where every block row must be tiles); a
  // matrix that then still chooses "all tiles" (the stopped block rows' costs are lower bounds,
  // and only that choice depends on them) is walked again without it.
  for (int early = msp__bdmp_keep_tiles ? 0 : 1;; early = 0) {
    MSP_CUDA_TRY(cudaMemsetAsync(tsc, 0, T_COUNT * sizeof *tsc, s));
    if (nbrows > 0) {
      tk_brow<<<msp__cuda_blocks(nbrows, CV_WARPS), CV_THREADS, 0, s>>>(
          rows, nbrows, rowptr, colind, e64, n64, early, info, pref, tsc);
      MSP_CUDA_CHECK_LAUNCH("tk_brow");
    }
    MSP_CUDA_TRY(cudaMemcpyAsync(h_t, tsc, sizeof h_t, cudaMemcpyDeviceToHost, s));
    MSP_CUDA_TRY(cudaStreamSynchronize(s));
    choice = msp__tcki_choice(msp__bdmp_keep_tiles, rows, (int64_t)h_t[T_TILES_ONLY],
                              (int64_t)h_t[T_ROWS_ONLY], (int64_t)h_t[T_MIXED],
                              (int64_t)h_t[T_NCSR], (int64_t)h_t[T_NTILE]);
    if (choice != 0 || h_t[T_EARLY] == 0) break;
  }
  {
    const int64_t csr_brows = choice == 0   ? 0
                              : choice == 1 ? (int64_t)h_t[T_NCSR]
                                            : (int64_t)(h_t[T_NCSR] + h_t[T_NTILE]);
    // ---- 2: kinds, sizes, offsets
    tk_count<<<msp__cuda_blocks(nbrows + 1, 256), 256, 0, s>>>(nbrows, choice, csr_brows, info,
                                                               pref, kind, cnt);
    MSP_CUDA_CHECK_LAUNCH("tk_count");
    {
      size_t bytes = 0;
      char *t = NULL;
      tk_cnt zero;
      memset(&zero, 0, sizeof zero);
      MSP_CUDA_TRY(
          cub::DeviceScan::ExclusiveScan(NULL, bytes, cnt, pre, tk_cnt_op(), zero, nbrows + 1, s));
      MSP_TRY(tmp.get(&t, (int64_t)bytes, "the block rows' scan"));
      MSP_CUDA_TRY(
          cub::DeviceScan::ExclusiveScan(t, bytes, cnt, pre, tk_cnt_op(), zero, nbrows + 1, s));
    }
    MSP_CUDA_TRY(cudaMemcpyAsync(&tot, pre + nbrows, sizeof tot, cudaMemcpyDeviceToHost, s));
    MSP_CUDA_TRY(cudaStreamSynchronize(s));
    ebytes = tk_apply(tot, 0);
    if (tot.c[F_CH] > INT32_MAX || tot.c[F_TCOL] > INT32_MAX || nbrows > INT32_MAX) {
      st = msp__error(MSP_ERR_NOT_SUPPORTED,
                      "bdmp-tcki conversion (cuda): %lld chunks or %lld block rows exceed int32",
                      (long long)tot.c[F_CH], (long long)nbrows);
      goto exit;
    }
    // the CSR-like part's rows
    int64_t *rn64 = NULL;
    if (tot.c[F_CSR] > 0) {
      int64_t *rlen = NULL, *rrowptr = NULL;
      MSP_TRY(tmp.get(&rlen, rows + 1, "the CSR-like part's row lengths"));
      MSP_TRY(tmp.get(&rn64, rows, "the CSR-like part's fp64 entries"));
      MSP_TRY(tmp.get(&rrowptr, rows + 1, "the CSR-like part's row pointers"));
      tk_rows<<<msp__cuda_blocks(rows + 1, 256), 256, 0, s>>>(rows, rowptr, n64, kind, rlen, rn64);
      MSP_CUDA_CHECK_LAUNCH("tk_rows");
      MSP_CUDA_TRY(msp__cv_exclusive_sum(tmp, rlen, rrowptr, rows + 1, &st));
      MSP_TRY(st);
      MSP_CUDA_TRY(cudaMemcpyAsync(&rnnz, rrowptr + rows, sizeof rnnz, cudaMemcpyDeviceToHost, s));
      MSP_CUDA_TRY(cudaStreamSynchronize(s));
      w.rrowptr = rrowptr;
      MSP_TRY(tmp.get(&w.rcol, rnnz, "the CSR-like part's columns"));
      MSP_TRY(tmp.get(&w.rval, rnnz, "the CSR-like part's values"));
      MSP_TRY(tmp.get(&w.re64, rnnz, "the CSR-like part's precisions"));
    }
    // ---- 3: the host record (in scratch) and the tile part (in the matrix's slots)
    const int64_t nout = tot.c[F_OUT];
    MSP_TRY(tmp.get(&tile_ptr, nbrows + 1, "the block rows' first tiles"));
    MSP_TRY(tmp.get(&w.tile_col, nout, "the tiles' block columns"));
    MSP_TRY(tmp.get(&w.tile_fmt, nout, "the tiles' formats"));
    MSP_TRY(tmp.get(&w.tile_width, nout, "the tiles' widths"));
    MSP_TRY(tmp.get(&w.eoff, nout, "the tiles' index offsets"));
    MSP_TRY(tmp.get(&w.voff, nout, "the tiles' value offsets"));
    MSP_TRY(tmp.get(&w.idx, ebytes, "the tiles' index bytes"));
    MSP_TRY(tmp.get(&w.val32, tot.c[F_HV32], "the tiles' fp32 values"));
    MSP_TRY(tmp.get(&w.val64, tot.c[F_HV64], "the tiles' fp64 values"));
    w.tsc = tsc;
    MSP_TRY(msp__cuda_matrix_new(B, &m));
    MSP_TRY(
        msp__cuda_matrix_reserve(m, MSP__TCKI_SLOT, (size_t)tot.c[F_CH] * sizeof(msp__tcki_chunk)));
    MSP_TRY(
        msp__cuda_matrix_reserve(m, MSP__TCKI_SLOT + 1, (size_t)tot.c[F_TCOL] * sizeof(int32_t)));
    MSP_TRY(msp__cuda_matrix_reserve(m, MSP__TCKI_SLOT + 2,
                                     (size_t)(3 * tot.c[F_SPLIT]) * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_reserve(m, MSP__TCKI_SLOT + 3, (size_t)tot.c[F_IDX]));
    MSP_TRY(msp__cuda_matrix_reserve(m, MSP__TCKI_SLOT + 4, (size_t)tot.c[F_S32] * sizeof(float)));
    MSP_TRY(msp__cuda_matrix_reserve(m, MSP__TCKI_SLOT + 5, (size_t)tot.c[F_S64] * sizeof(double)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, MSP__TCKI_SLOT + 6, NULL,
                                 (size_t)tot.c[F_PARTS] * MSP_BDMP_TILE * sizeof(double)));
    w.chunk = (msp__tcki_chunk *)m->d[MSP__TCKI_SLOT];
    w.tcol = (int32_t *)m->d[MSP__TCKI_SLOT + 1];
    w.runs = (int64_t *)m->d[MSP__TCKI_SLOT + 2];
    w.didx = (uint8_t *)m->d[MSP__TCKI_SLOT + 3];
    w.dval32 = (float *)m->d[MSP__TCKI_SLOT + 4];
    w.dval64 = (double *)m->d[MSP__TCKI_SLOT + 5];
    if (nbrows > 0) {
      tk_fill<<<msp__cuda_blocks(nbrows, CV_WARPS), CV_THREADS, 0, s>>>(
          rows, nbrows, rowptr, colind, val, e64, n64, info, kind, pre, csr_brows, w);
      MSP_CUDA_CHECK_LAUNCH("tk_fill");
    }
    tk_tile_ptr<<<msp__cuda_blocks(nbrows + 1, 256), 256, 0, s>>>(nbrows, pre, tile_ptr);
    MSP_CUDA_CHECK_LAUNCH("tk_tile_ptr");
    m->i64[8] = tot.c[F_CH];
    m->i64[9] = tot.c[F_SPLIT];
    m->i64[10] = tot.c[F_CSR] > 0;
    // the CSR-like part as PBP, on PBP's CSR slots
    if (tot.c[F_CSR] > 0) {
      uint2 *meta = NULL;
      MSP_TRY(msp__cv_pbp_pack(ctx, tmp, m, msp__cuda_csr_kernel(B), rows, rnnz, w.rrowptr, NULL,
                               w.rcol, w.rval, w.re64, rn64, &meta, &dev.rows_n64));
    }
    dev.nchunks = tot.c[F_CH];
    dev.nsplit = tot.c[F_SPLIT];
    dev.nparts = tot.c[F_PARTS];
    dev.ntcol = tot.c[F_TCOL];
    dev.nidx = tot.c[F_IDX];
    dev.n32 = tot.c[F_S32];
    dev.n64 = tot.c[F_S64];
    dev.rows_brows = tot.c[F_CSR];
    dev.rows_nnz = rnnz;
  }
  MSP_TRY(timer.stop(s, &sel.convert_ms));

  // ---- 4: the host record, read back
  MSP_CUDA_TRY(cudaMemcpyAsync(h_t, tsc, sizeof h_t, cudaMemcpyDeviceToHost, s));
  MSP_TRY(MSP_ALLOC_ZERO(T, 1, "BDMP-TCKI header"));
  T->info = sel;
  T->nbrows = nbrows;
  T->ntiles = tot.c[F_OUT];
  T->n32 = tot.c[F_HV32];
  T->n64 = tot.c[F_HV64];
  T->csr_brows = tot.c[F_CSR];
  T->csr_nnz = tot.c[F_CSRNNZ];
  T->nsegs = tot.c[F_SEGS];
  T->dev = dev;
  MSP_TRY(to_host(&T->tile_ptr, tile_ptr, nbrows + 1, "BDMP-TCKI tile pointers", s));
  MSP_TRY(to_host(&T->tile_col, w.tile_col, T->ntiles, "BDMP-TCKI tile columns", s));
  MSP_TRY(to_host(&T->tile_fmt, w.tile_fmt, T->ntiles, "BDMP-TCKI tile formats", s));
  MSP_TRY(to_host(&T->tile_width, w.tile_width, T->ntiles, "BDMP-TCKI tile widths", s));
  MSP_TRY(MSP_ALLOC(T->eoff, T->ntiles + 1, "BDMP-TCKI entry offsets"));
  if (T->ntiles > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(T->eoff, w.eoff, (size_t)T->ntiles * sizeof *T->eoff,
                                 cudaMemcpyDeviceToHost, s));
  T->eoff[T->ntiles] = ebytes;
  MSP_TRY(to_host(&T->voff, w.voff, T->ntiles, "BDMP-TCKI value offsets", s));
  MSP_TRY(to_host(&T->idx, w.idx, ebytes, "BDMP-TCKI indices", s));
  MSP_TRY(to_host(&T->val32, w.val32, T->n32, "BDMP-TCKI fp32 values", s));
  MSP_TRY(to_host(&T->val64, w.val64, T->n64, "BDMP-TCKI fp64 values", s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
  for (int k = 0; k < 4; k++)
    T->fmt_count[k] = (int64_t)h_t[T_FMT + k];
  T->info.nnz64 = (int64_t)h_t[T_NNZ64];
  T->info.nnz32 = nnz - T->info.nnz64;
  B->fmt = T;
  T = NULL;
exit:
  if (T) msp__bdmp_tcki_free(T);
  return st; // tmp frees its scratch (stream-ordered); B->dev is the caller's to free on failure
}

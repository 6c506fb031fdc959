// bdmp.h: host layouts of BDMP-PBP and BDMP-TCKI (block-wise dynamic mixed precision, 16x16 tiles).
//
// Zhao et al., "Block-wise dynamic mixed-precision SpMV" section 3. The matrix is cut into
// 16 x 16 tiles (block height = width = 16: a multiple of 16 for coalesced 64/128-byte
// transactions and at most 32 to limit error growth, 3.1.1). Every nonempty tile is stored in
// fp32 or fp64 as a whole (see bdmp.c for the rule); PBP keeps the CSR structure with the fp32
// and fp64 values in two streams (the paper splits the matrix into two CSR sub-matrices), TCKI
// stores each tile in its own small format with 4-bit indices (and block rows whose tiles are too
// sparse to gain CSR-like, see msp__bdmp_tcki).
#ifndef MSP_BDMP_H
#define MSP_BDMP_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MSP_BDMP_TILE 16
// Host and device (src/cuda/bdmp_tcki_convert.cu build TCKI from the same helpers below).
#ifdef __CUDACC__
#define MSP__HD __host__ __device__
#else
#define MSP__HD
#endif
// TCKI tile-format rule (paper 3.2.2, Fig. 3; thresholds of 4.4.2): density below 0.02: COO;
// else the coefficient of variation of the 16 row lengths: below t_l = 0.2 ELL, above t_u = 0.9
// HYB (ELL + CSR), between: CSR. Decided in integers (msp__tcki_tile_plan), so that the host and
// the device take the same formats.
#define MSP_BDMP_COO_DENSITY 0.02
#define MSP_BDMP_TL 0.2
#define MSP_BDMP_TU 0.9
// TCKI block-row kind (bytes a product reads, bdmp_tcki.c): a block row's tiles count 1 /
// MSP_BDMP_ROWS_GAIN times their bytes against the same entries stored CSR-like, and the matrix
// takes the least of all tiles, all CSR-like or each block row's cheaper kind. The margin (tiles
// must save 10%) pays for the tile kernel's extra work per byte (x gathered per entry through
// the tile column). The costs are integers in 1/36 of a byte (MSP__TCKI_UNIT): tiles
// MSP__TCKI_TILE_COST = 36 / 0.9 per byte, so every sum is exact, in any order.
#define MSP_BDMP_ROWS_GAIN 0.9
#define MSP__TCKI_UNIT 36
#define MSP__TCKI_TILE_COST 40
// For tests of the tile formats on small hand-built matrices: nonzero keeps every block row's
// tiles (the byte model is not consulted). Set it before a conversion, never during one.
extern int msp__bdmp_keep_tiles;
// For tests of the device builds: nonzero builds BDMP on the host (then uploads it) on every
// backend, as a backend without a device build does (src/core/convert.c).
extern int msp__bdmp_host_build;
#define MSP_BDMP_SEG_ENTRIES 512 // entries per CSR-like segment (about; rows are cut evenly)
#define MSP_BDMP_SEG_ROW 128     // at most this many entries of one row per segment

// What the precision selection did (both variants).
typedef struct {
  double lambda; // threshold used (threshold mode), 0 in error-bounded mode
  int digits;    // error-bounded mode D, 0 in threshold mode
  double bound;  // guaranteed: max over rows of u32 * sum_{fp32 entries} |a_ij| / sum_j |a_ij|;
                 // |y_i - y_i(fp64 storage)| <= bound * sum_j |a_ij| * max|x| for every x
  int64_t tiles, tiles32; // nonempty tiles, of which fp32
  int64_t nnz32, nnz64;   // nonzeros stored in fp32 / fp64
  double convert_ms;      // built on the device (src/cuda/bdmp_convert.cu): the device time of
                          // the conversion, event-timed; 0 when built on the host
} msp__bdmp_info;

// Deterministic sums (the threshold's statistics, paper Eq. 5): the same bits on the host, with
// any number of threads, and on the device. The n terms are cut into chunks of
// MSP__BDMP_SUM_CHUNK; a chunk is summed as a warp sums it: lane l adds terms l, l + 32, l + 64,
// ... of the chunk in order (from 0), then the 32 lane sums are combined by an xor butterfly
// (s_l + s_(l^16), then ^8, ^4, ^2, ^1) and lane 0's value is the chunk's sum. The chunks' sums
// are summed the same way, level after level, until one value is left. Terms: |v_k|
// (MSP__BDMP_SUM_ABS), (|v_k| - mean)^2 (MSP__BDMP_SUM_DEV2), v_k (MSP__BDMP_SUM_ID); every
// product and sum rounded on its own (no fused multiply-add).
#define MSP__BDMP_SUM_CHUNK 1024
enum { MSP__BDMP_SUM_ABS = 0, MSP__BDMP_SUM_DEV2 = 1, MSP__BDMP_SUM_ID = 2 };
// The paper's threshold lambda = f (mean |a| + 3 std |a|) over the nnz stored values, with the
// sums above (0 values: lambda = 0).
msp_status msp__bdmp_lambda(const double *val, int64_t nnz, double f, double *lambda);

// BDMP-PBP: the matrix's CSR structure (row pointers, columns sorted in each row) with its values
// kept apart by precision, in the CSR's order: the fp64 entries in v64, the fp32 entries in v32.
// Which is which is a bit per entry, in words of 32 entries: meta[2g] holds the bits of entries
// 32g .. 32g + 31 (bit b set: entry 32g + b is fp64), meta[2g + 1] the number of fp64 entries
// before entry 32g. So entry j is v64[c] with c = meta[2g + 1] + (set bits below b) when its bit
// is set, else v32[j - c] (msp__pbp_split): one 8-byte word per 32 entries (0.25 bytes per
// nonzero) instead of the paper's second set of row pointers and columns, and one CSR that the
// tuned CSR kernels run over in one pass over x and y (src/cuda/bdmp.cu, with its device layouts
// by precision mix and kernel; the CPU sums each row in column order). At most UINT32_MAX fp64
// entries (the conversion refuses more).
typedef struct {
  msp__bdmp_info info;
  int64_t *rowptr; // rows + 1
  int32_t *colind; // nnz
  uint32_t *meta;  // 2 * ceil(nnz / 32)
  float *v32;      // info.nnz32
  double *v64;     // info.nnz64
} msp__bdmp_pbp;
#define MSP__PBP_WORD 32

// PBP's device layout (src/cuda/bdmp.cu) by its precision mix and CSR kernel: one precision only
// (plain CSR of that precision), the precision words (merge-path kernel), or each row's fp64
// entries first (scalar and vector kernels).
enum { MSP__PBP_UNIFORM = 0, MSP__PBP_WORDS = 1, MSP__PBP_SPLIT = 2 };
static inline int msp__pbp_layout(int64_t nnz32, int64_t nnz64, msp_kernel k) {
  return nnz32 == 0 || nnz64 == 0 ? MSP__PBP_UNIFORM
         : k == MSP_KERNEL_MERGE  ? MSP__PBP_WORDS
                                  : MSP__PBP_SPLIT;
}

// The number of fp64 entries of a PBP matrix before entry j.
static inline int64_t msp__pbp_f64_before(const uint32_t *meta, int64_t j) {
  const int64_t g = j / MSP__PBP_WORD;
  const uint32_t below = (1u << (j % MSP__PBP_WORD)) - 1u;
  return (int64_t)meta[2 * g + 1] + __builtin_popcount(meta[2 * g] & below);
}
// Entry j of a PBP matrix: 1 when it is fp64, with *at its position in v64 (else in v32).
static inline int msp__pbp_split(const uint32_t *meta, int64_t j, int64_t *at) {
  const int64_t c = msp__pbp_f64_before(meta, j);
  const int f64 = (int)((meta[2 * (j / MSP__PBP_WORD)] >> (j % MSP__PBP_WORD)) & 1u);
  *at = f64 ? c : j - c;
  return f64;
}

// TCKI tile formats (the low 2 bits of tile_fmt; bit 2 set: fp64 values; bit 3 set: not a tile
// but a CSR-like segment of a block row, see below).
enum { MSP__TILE_COO = 0, MSP__TILE_ELL = 1, MSP__TILE_CSR = 2, MSP__TILE_HYB = 3 };
#define MSP__TILE_F64 4
#define MSP__TILE_ROWS 8
// ELL entries: the row is the slot's position; the index byte holds the column in its low
// nibble and MSP__TILE_PAD for padding (value 0), so padding is known without row lengths.
#define MSP__TILE_PAD 16

// BDMP-TCKI. Tiles are ordered by block row, then block column. Tile t's bytes in `idx` are
// [eoff[t], eoff[t+1]) and its values start at voff[t] in val32 (fp32 tile) or val64:
//   COO: nnz bytes (row << 4 | col), sorted by row then column; nnz values.
//   ELL: 16 * w bytes, slot k of row r at k * 16 + r (column-major, paper Algorithm 4); byte =
//        col, or MSP__TILE_PAD; 16 * w values.
//   CSR: 17 row pointers (uint8: a CSR tile never holds 256 entries, that tile would be ELL),
//        then nnz bytes (row << 4 | col); nnz values.
//   HYB: an ELL part of width w = tile_width[t] (16 * w bytes, as ELL), then a CSR part of the
//        remaining entries (17 row pointers + bytes); 16 * w + remainder values.
//
// CSR-like block rows. Where a block row's tiles hold few entries each (random
// and power-law patterns), per-tile metadata (a tile column, a share of a chunk record) and slab
// padding cost more than CSR's 4-byte column, so each block row has a kind, chosen by the byte
// model of bdmp_tcki.c
// (MSP_BDMP_ROWS_GAIN): tiles, or CSR-like. A CSR-like block row keeps every entry's precision
// from its tile (the selection is the same) and is stored as "segments" in place of its tiles:
// entries of tile_fmt with MSP__TILE_ROWS set (| MSP__TILE_F64 for fp64 values), width 0,
// tile_col 0 (the GPU reads them as CSR, msp__bdmp_tcki_rows). The
// block row's fp64 segments come first, then its fp32 segments; each precision's entries are split
// over ceil(n / MSP_BDMP_SEG_ENTRIES) segments, or more where a row has more than
// MSP_BDMP_SEG_ROW entries per segment, each segment taking a contiguous share of every row (row
// r's entries of that precision, in column order, cut evenly), so a long block row or a long row
// is shared by several threads. A block row is tiles or CSR-like as a whole: the
// kind is the MSP__TILE_ROWS bit of its stored entries (msp__bdmp_brow_csr).
//   segment: its data start at a = msp__bdmp_seg_at(eoff[t]) (eoff[t] rounded up to 4 bytes:
//        0..3 padding bytes): 16 uint16 row ends (row r's entries are [ends[r-1], ends[r]), with
//        ends[-1] = 0), then ends[15] int32 matrix columns, ascending within each row; the
//        values (ends[15] of them) start at voff[t]. eoff[t+1] = a + 32 + 4 * ends[15].
// The sizes of TCKI's GPU layout (see msp__bdmp_tcki_device below): the tile part's chunks,
// split block rows, part slots, tile columns, index bytes and slab values; the CSR-like part's
// block rows, entries and fp64 entries.
typedef struct {
  int64_t nchunks, nsplit, nparts, ntcol, nidx, n32, n64; // the tile part
  int64_t rows_brows, rows_nnz, rows_n64;                 // the CSR-like part
} msp__tcki_dev_size;
typedef struct {
  msp__bdmp_info info;
  int64_t nbrows, ntiles; // ntiles: stored entries of the tile arrays, tiles and segments
  int64_t *tile_ptr;      // nbrows + 1
  int32_t *tile_col;      // block column of each tile (0 for a segment)
  uint8_t *tile_fmt;      // MSP__TILE_* | MSP__TILE_F64, or MSP__TILE_ROWS | MSP__TILE_F64
  uint8_t *tile_width;    // ELL width (ELL), ELL part width (HYB), 0 otherwise
  int64_t *eoff;          // ntiles + 1
  int64_t *voff;          // ntiles
  uint8_t *idx;           // eoff[ntiles] bytes
  float *val32;
  double *val64;
  int64_t n32, n64;       // values in val32 / val64 (padding included)
  int64_t fmt_count[4];   // tiles per format, over the block rows stored as tiles
  int64_t csr_brows;      // block rows stored CSR-like
  int64_t csr_nnz;        // their nonzeros
  int64_t nsegs;          // their segments (ntiles - nsegs tiles are stored as tiles)
  msp__tcki_dev_size dev; // the GPU layout's sizes, set with the record (msp__bdmp_tcki_device)
} msp__bdmp_tcki;

// A segment's data start: its entry offset rounded up to 4 bytes (int32 columns aligned).
MSP__HD static inline int64_t msp__bdmp_seg_at(int64_t eoff) {
  return (eoff + 3) & ~(int64_t)3;
}
// Segment t's 16 row ends and its columns (t must be a segment).
static inline const uint16_t *msp__bdmp_seg_ends(const msp__bdmp_tcki *T, int64_t t) {
  return (const uint16_t *)(const void *)(T->idx + msp__bdmp_seg_at(T->eoff[t]));
}
static inline const int32_t *msp__bdmp_seg_cols(const msp__bdmp_tcki *T, int64_t t) {
  return (const int32_t *)(const void *)(msp__bdmp_seg_ends(T, t) + MSP_BDMP_TILE);
}
// 1 when block row br is stored CSR-like (its stored entries are segments).
static inline int msp__bdmp_brow_csr(const msp__bdmp_tcki *T, int64_t br) {
  return T->tile_ptr[br] < T->tile_ptr[br + 1] && (T->tile_fmt[T->tile_ptr[br]] & MSP__TILE_ROWS);
}

// TCKI on the GPU (src/cuda/bdmp.cu). The device arrays are built from this record at upload
// and are what msp__bdmp_tcki_bytes counts. Two parts, each run by its own kernel:
//   the tile block rows, cut into chunks (msp__bdmp_tcki_device), each taken by a half-warp (16
//     lanes, lane r for row r of the block row). A chunk is at most MSP__TCKI_CHUNK_TILES
//     consecutive tiles of one block row, stored as a row slab: row r's entries of the chunk's
//     tiles, its fp64 ones first (tile order, then column order), then its fp32 ones, in slots
//     k * 16 + r for k = 0, 1, ...; slot columns k < w64 hold their values in val64, the next
//     w32 in val32 (msp__tcki_slab). A slot is one index byte, tile j of the chunk << 4 |
//     in-tile column (MSP__TCKI_PAD: padding, value 0), and one value; the chunk's tiles' block
//     columns are in tcol. So the loads of a row's entries do not depend on each other and every
//     tile of the chunk is read at once. A chunk takes another tile while w64 + w32 <=
//     MSP__TCKI_CHUNK_WIDTH (a first tile always). A block row of several chunks is split: each
//     chunk writes its 16 partial sums to its part slot, and they are added in chunk order
//     (runs: block row, first part slot, slot count per split block row): no atomics, the same
//     bits on every run. Every nonempty tile block row has at least one chunk, and so does an
//     empty one where there is no CSR-like part, so that every y_i is written.
//   the CSR-like block rows (msp__bdmp_tcki_rows): a BDMP-PBP record over all rows in which the
//     rows of tile block rows are empty, run by PBP's CSR kernels (scalar, vector, merge-path).
//     Where both parts exist, the CSR kernels run first (a tile block row's rows get beta * y)
//     and the tile kernel then adds alpha * its sums (beta 1).
#define MSP__TCKI_CHUNK_TILES 15 // index byte: tile j < 15 of the chunk; j = 15 marks padding
#define MSP__TCKI_PAD 0xFF
#define MSP__TCKI_CHUNK_WIDTH 128 // slab slots per row (w64 + w32)
typedef struct {
  int32_t br, part;       // block row; part slot or -1 when the block row is this one chunk
  int32_t first;          // first tile column in tcol
  uint32_t packed;        // tiles | w64 << 8 | w32 << 16
  int64_t ioff;           // first index byte of the slab
  int64_t v64off, v32off; // first slab value in val64 / val32
} msp__tcki_chunk;        // 40 bytes, read as 10 words by the lanes of a half-warp
typedef struct {
  msp__tcki_chunk *chunk; // nchunks
  int32_t *tcol;          // ntcol
  int64_t *runs;          // 3 * nsplit
  uint8_t *idx;           // nidx
  float *val32;           // n32
  double *val64;          // n64
} msp__tcki_dev;
// The device arrays' sizes (dev NULL), or the arrays themselves (dev allocated to the sizes).
void msp__bdmp_tcki_device(const msp__bdmp_tcki *T, msp__tcki_dev_size *size,
                           const msp__tcki_dev *dev);
// The CSR-like block rows as a PBP record over all `rows` rows (rows of tile block rows empty;
// each row's entries in column order). Free with msp__bdmp_pbp_clear.
msp_status msp__bdmp_tcki_rows(const msp__bdmp_tcki *T, int64_t rows, msp__bdmp_pbp *P);
void msp__bdmp_pbp_clear(msp__bdmp_pbp *P);

// A tile chunk being built: its rows' entries per precision so far (0 fp64, 1 fp32) and the slab
// widths they need: w[0] = the most fp64 entries of a row, w[0] + w[1] = the longest row. A row's
// fp64 entries take its first slots and its fp32 entries the next, so a slot column k < w[0] may
// hold fp32 entries of rows with fewer fp64 ones: they are stored widened in val64 (exactly:
// every fp32 value is an fp64 value), which costs 4 bytes where padding would cost 9.
// msp__tcki_slab_add adds a tile of precision p with row lengths len when it fits (returns 1),
// else leaves the chunk as it is (returns 0); a first tile always fits.
typedef struct {
  int n, w[2];
  int len[2][MSP_BDMP_TILE];
} msp__tcki_slab;
MSP__HD static inline int msp__tcki_slab_add(msp__tcki_slab *c, int p,
                                             const int len[MSP_BDMP_TILE]) {
  int w64 = 0, w = 0;
  for (int r = 0; r < MSP_BDMP_TILE; r++) {
    const int a = c->len[0][r] + (p == 0 ? len[r] : 0), b = c->len[1][r] + (p == 1 ? len[r] : 0);
    w64 = a > w64 ? a : w64;
    w = a + b > w ? a + b : w;
  }
  if (c->n > 0 && (c->n >= MSP__TCKI_CHUNK_TILES || w > MSP__TCKI_CHUNK_WIDTH)) return 0;
  for (int r = 0; r < MSP_BDMP_TILE; r++)
    c->len[p][r] += len[r];
  c->w[0] = w64;
  c->w[1] = w - w64;
  c->n++;
  return 1;
}
// Bytes a product reads for a tile chunk: its record, tile columns, and slab (index byte and
// value per slot).
MSP__HD static inline int64_t msp__tcki_slab_bytes(const msp__tcki_slab *c) {
  return (int64_t)sizeof(msp__tcki_chunk) + 4 * c->n +
         (int64_t)MSP_BDMP_TILE * (c->w[0] * (1 + 8) + c->w[1] * (1 + 4));
}

// A tile's format in the host record (paper Fig. 3, MSP_BDMP_COO_DENSITY, MSP_BDMP_TL,
// MSP_BDMP_TU) from its row lengths and n entries, with its index bytes and values (bdmp.h
// layouts above). In integers: density n / 256 < 0.02 is 50 n < 256; with S = sum_r (16 len_r -
// n)^2 the coefficient of variation is sqrt(S) / (4 n), so cv < 0.2 is 25 S < 16 n^2 and cv > 0.9
// is 25 S > 324 n^2.
typedef struct {
  uint8_t fmt, width;
  int64_t bytes, vals;
} msp__tcki_tile_plan;
MSP__HD static inline msp__tcki_tile_plan msp__tcki_plan_tile(const int len[MSP_BDMP_TILE],
                                                              int64_t n) {
  msp__tcki_tile_plan p;
  int64_t S = 0;
  int maxlen = 0;
  for (int r = 0; r < MSP_BDMP_TILE; r++) {
    const int64_t d = (int64_t)MSP_BDMP_TILE * len[r] - n;
    S += d * d;
    maxlen = len[r] > maxlen ? len[r] : maxlen;
  }
  p.width = 0;
  if (50 * n < MSP_BDMP_TILE * MSP_BDMP_TILE) {
    p.fmt = MSP__TILE_COO;
    p.bytes = p.vals = n;
  } else if (25 * S < 16 * n * n) {
    p.fmt = MSP__TILE_ELL;
    p.width = (uint8_t)maxlen;
    p.bytes = p.vals = (int64_t)MSP_BDMP_TILE * maxlen;
  } else if (25 * S > 324 * n * n) {
    // ELL part width K: the largest k with at least a third of the rows reaching k entries (the
    // HYB rule of paper 2.1), the rest in CSR
    int k = 0;
    for (int c = 1; c <= MSP_BDMP_TILE; c++) {
      int reach = 0;
      for (int r = 0; r < MSP_BDMP_TILE; r++)
        reach += len[r] >= c;
      if (3 * reach >= MSP_BDMP_TILE) k = c;
    }
    int64_t rest = 0;
    for (int r = 0; r < MSP_BDMP_TILE; r++)
      rest += len[r] > k ? len[r] - k : 0;
    p.fmt = MSP__TILE_HYB;
    p.width = (uint8_t)k;
    p.vals = (int64_t)MSP_BDMP_TILE * k + rest;
    p.bytes = p.vals + MSP_BDMP_TILE + 1;
  } else {
    p.fmt = MSP__TILE_CSR;
    p.vals = n;
    p.bytes = n + MSP_BDMP_TILE + 1;
  }
  return p;
}

// A CSR-like block row (bdmp.h): its fp64 (p = 0) or fp32 (p = 1) entries n over segments of at
// most about MSP_BDMP_SEG_ENTRIES entries and at most MSP_BDMP_SEG_ROW of any one row (maxlen:
// its longest row's entries of that precision).
MSP__HD static inline int64_t msp__tcki_nsegs(int64_t n, int64_t maxlen) {
  const int64_t a = (n + MSP_BDMP_SEG_ENTRIES - 1) / MSP_BDMP_SEG_ENTRIES,
                b = (maxlen + MSP_BDMP_SEG_ROW - 1) / MSP_BDMP_SEG_ROW;
  return a > b ? a : b;
}
// Entries [len s / ns, len (s + 1) / ns) of a row's len entries go to segment s of ns.
MSP__HD static inline int64_t msp__tcki_seg_share(int64_t len, int64_t s, int64_t ns) {
  return len * (s + 1) / ns - len * s / ns;
}
// Block-row costs of the kind choice, in units of MSP__TCKI_UNIT per byte: tiles read tb bytes
// (chunks, slabs, split partial sums) and count MSP__TCKI_TILE_COST per byte; CSR-like entries
// read a 4-byte column and the value, and a precision word per 32 entries (2 bits an entry).
// The CSR-like part costs TCKI_ROWS_FIXED bytes a row of the matrix whatever its size (row
// pointers over every row, an fp64 count per row where the scalar or vector kernel reads a mixed
// part), both parts together TCKI_BOTH_FIXED more (y written by the CSR kernel, then read and
// written again by the tile kernel).
#define MSP__TCKI_ROWS_FIXED 16
#define MSP__TCKI_BOTH_FIXED 16
MSP__HD static inline int64_t msp__tcki_tiles_cost(int64_t tb) {
  return MSP__TCKI_TILE_COST * tb;
}
MSP__HD static inline int64_t msp__tcki_rows_cost(int64_t n64, int64_t n32) {
  return MSP__TCKI_UNIT * (n64 * (4 + 8) + n32 * (4 + 4)) + (MSP__TCKI_UNIT / 4) * (n64 + n32);
}
// The matrix's kind choice from the sums over nonempty block rows: 0 every block row tiles, 1
// each its cheaper kind (ties: tiles), 2 every block row CSR-like.
MSP__HD static inline int msp__tcki_choice(int keep_tiles, int64_t rows, int64_t tiles_only,
                                           int64_t rows_only, int64_t mixed, int64_t ncsr,
                                           int64_t ntile) {
  rows_only += (int64_t)MSP__TCKI_UNIT * MSP__TCKI_ROWS_FIXED * rows;
  if (ncsr > 0) mixed += (int64_t)MSP__TCKI_UNIT * MSP__TCKI_ROWS_FIXED * rows;
  if (ncsr > 0 && ntile > 0) mixed += (int64_t)MSP__TCKI_UNIT * MSP__TCKI_BOTH_FIXED * rows;
  return keep_tiles || (tiles_only <= mixed && tiles_only <= rows_only) ? 0
         : mixed <= rows_only                                           ? 1
                                                                        : 2;
}

// Decode tile t (a tile, not a segment) into (row, column, value) in row-then-column order,
// padding dropped; arrays of 256 entries. Returns the number of entries.
int msp__bdmp_tile_decode(const msp__bdmp_tcki *T, int64_t t, uint8_t *rr, uint8_t *cc, double *vv);

// ---- between bdmp.c (tiling, precision selection, PBP) and bdmp_tcki.c (TCKI) ------------------
// One nonzero during partitioning: key = block column << 8 | in-tile row << 4 | in-tile column,
// k = its index in the host CSR.
typedef struct {
  uint64_t key;
  int64_t k;
} msp__bdmp_ent;

// A nonempty tile: its entries are ent[start .. start + n), sorted by (row, column).
typedef struct {
  int64_t start, n;
  int64_t br;
  int32_t bc;
} msp__bdmp_tile;

// Each tile's precision is part of the format (fp32 or fp64 by the paper's rule), so values are
// never re-encoded in a storage precision.
#define MSP__BDMP_F64_ONLY "chooses fp32 or fp64 per 16x16 tile itself"

// The records' plan and build for either variant (bdmp.c): options checked; the tiling, the
// selection and the layout of `format`.
msp_status msp__bdmp_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                          size_t n, msp_format format);
msp_status msp__bdmp_build(const msp_matrix B, msp_format format, const msp_convert_options *o,
                           void **fmt);
// TCKI from B's tiles (bdmp_tcki.c): tiles[0 .. ntiles) over entries ent, grouped by block row
// (tile_ptr), with the selection's precisions is64 and report info.
msp_status msp__bdmp_build_tcki(msp_matrix B, const msp__bdmp_ent *ent, const msp__bdmp_tile *tiles,
                                int64_t ntiles, const int64_t *tile_ptr, int64_t nbrows,
                                const uint8_t *is64, const msp__bdmp_info *info,
                                msp__bdmp_tcki **out);
void msp__bdmp_tcki_free(void *fmt);
size_t msp__bdmp_tcki_bytes(const msp_matrix A);
msp_status msp__bdmp_tcki_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val);

#ifdef __cplusplus
}
#endif
#endif

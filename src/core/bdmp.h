// bdmp.h: host layouts of BDMP-PBP and BDMP-TCKI (block-wise dynamic mixed precision, 16x16 tiles).
//
// papers/bdmp-block-wise-dynamic-mixed-precision-spmv.txt section 3. The matrix is cut into
// 16 x 16 tiles (block height = width = 16: a multiple of 16 for coalesced 64/128-byte
// transactions and at most 32 to limit error growth, 3.1.1). Every nonempty tile is stored in
// fp32 or fp64 as a whole (see bdmp.c for the rule); PBP splits the matrix into an fp32 and an
// fp64 CSR sub-matrix, TCKI stores each tile in its own small format with 4-bit indices.
#ifndef MSP_BDMP_H
#define MSP_BDMP_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MSP_BDMP_TILE 16
// TCKI tile-format rule (paper 3.2.2, Fig. 3; thresholds of 4.4.2)
#define MSP_BDMP_COO_DENSITY 0.02 // density below: COO
#define MSP_BDMP_TL 0.2           // row CV below: ELL
#define MSP_BDMP_TU 0.9           // row CV above: HYB (ELL + CSR); between: CSR

// What the precision selection did (both variants).
typedef struct {
  double lambda; // threshold used (threshold mode), 0 in error-bounded mode
  int digits;    // error-bounded mode D, 0 in threshold mode
  double bound;  // guaranteed: max over rows of u32 * sum_{fp32 entries} |a_ij| / sum_j |a_ij|;
                 // |y_i - y_i(fp64 storage)| <= bound * sum_j |a_ij| * max|x| for every x
  int64_t tiles, tiles32; // nonempty tiles, of which fp32
  int64_t nnz32, nnz64;   // nonzeros stored in fp32 / fp64
} msp__bdmp_info;

// BDMP-PBP: two CSR sub-matrices with full row pointers (rows + 1 each), columns sorted.
typedef struct {
  msp__bdmp_info info;
  int64_t *rp32, *rp64;
  int32_t *ci32, *ci64;
  float *v32;
  double *v64;
} msp__bdmp_pbp;

// TCKI tile formats (the low 2 bits of tile_fmt; bit 2 set: fp64 values).
enum { MSP__TILE_COO = 0, MSP__TILE_ELL = 1, MSP__TILE_CSR = 2, MSP__TILE_HYB = 3 };
#define MSP__TILE_F64 4
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
typedef struct {
  msp__bdmp_info info;
  int64_t nbrows, ntiles;
  int64_t *tile_ptr;   // nbrows + 1
  int32_t *tile_col;   // block column of each tile
  uint8_t *tile_fmt;   // MSP__TILE_* | MSP__TILE_F64
  uint8_t *tile_width; // ELL width (ELL), ELL part width (HYB), 0 otherwise
  int64_t *eoff;       // ntiles + 1
  int64_t *voff;       // ntiles
  uint8_t *idx;        // eoff[ntiles] bytes
  float *val32;
  double *val64;
  int64_t n32, n64;     // values in val32 / val64 (padding included)
  int64_t fmt_count[4]; // tiles per format
} msp__bdmp_tcki;

// Decode tile t into (row, column, value) in row-then-column order, padding dropped; arrays of
// 256 entries. Returns the number of entries.
int msp__bdmp_tile_decode(const msp__bdmp_tcki *T, int64_t t, uint8_t *rr, uint8_t *cc, double *vv);

#ifdef __cplusplus
}
#endif
#endif

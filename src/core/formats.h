// formats.h: the record of a format's host operations, and helpers shared by src/core/<fmt>.c.
//
// Every format follows the same steps, so that msp_matrix_convert can refuse a format
// before allocating it ("a clear refusal instead of an allocation that explodes"):
//   plan  : from the CSR only, the format's parameters and its exact footprint in bytes;
//   build : allocate and fill the host arrays (the layouts of internal.h);
//   to_csr: rebuild CSR from the format's arrays alone (never from A->rowptr), padding dropped;
//           called twice: first with colind == NULL to fill rowptr (rows + 1), then with
//           colind/val of rowptr[rows] entries to fill them.
// The source of plan/build is always A's host CSR (sorted columns, no duplicates).
#ifndef MSP_FORMATS_H
#define MSP_FORMATS_H

#include "internal.h"

// Bytes of one stored value in precision p (the device representation; host arrays are fp64).
static inline size_t msp__value_bytes(msp_precision p) {
  switch (p) {
#define MSP_VB_(name, tag, bytes)                                                                  \
  case MSP_PRECISION_##name:                                                                       \
    return bytes;
    MSP_PRECISION_LIST(MSP_VB_)
#undef MSP_VB_
  default:
    return 8;
  }
}

// Checked int64 products and sums: 0 on overflow (the caller reports it).
static inline int msp__mul64(int64_t a, int64_t b, int64_t *r) {
  return !__builtin_mul_overflow(a, b, r);
}
static inline int msp__add64(int64_t a, int64_t b, int64_t *r) {
  return !__builtin_add_overflow(a, b, r);
}

// ---- one record per format ------------------------------------------------------------------
// Everything the conversion, msp_matrix_bytes, msp__format_to_csr, msp_matrix_destroy and the
// value encoding of src/core/precision.c need to know about a format. Each src/core/<fmt>.c ends
// with its record msp__fmt_<ident> (the third column of MSP_FORMAT_LIST); msp__format_table
// indexes them by msp_format, so none of those places switches over formats.
// (PETSc installs a Mat's operations per type the same way.)
#define MSP__FORMAT_VALUE_PARTS 2 // most value arrays a format's kernels index (HYB: ELL, COO)

typedef struct msp__format_ops {
  msp_format format;
  const char *tag;      // msp_format_name(format)
  int has_fmt;          // keeps host data in A->fmt (CSR's arrays are the matrix's own)
  int max_fill_checked; // plan's footprint is held against max_fill x the CSR footprint
  // From A's CSR alone, before the format's arrays are allocated (scratch aside): resolve this
  // format's parameters in *o (hack size, ELL width, HYB K), its footprint in o->precision in
  // *bytes (0 where only build can tell: BDMP chooses each tile's precision), and in `what`
  // (n bytes) the description that the matrix's reason gives ("ell (width 7)").
  msp_status (*plan)(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                     size_t n);
  // Allocate and fill the host data from A's CSR with the options plan resolved; *fmt = NULL on
  // failure (nothing left allocated) and for a format without host data.
  msp_status (*build)(const msp_matrix A, const msp_convert_options *o, void **fmt);
  // Footprint of the built format (A->fmt) with values in A->precision: the arrays a product
  // reads (msp_matrix_bytes).
  size_t (*bytes)(const msp_matrix A);
  // Rebuild CSR from A->fmt alone (never from A->rowptr), padding dropped; called twice, as the
  // top of this file says.
  msp_status (*to_csr)(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val);
  // Free host data made by build (accepts NULL).
  void (*free)(void *fmt);
  // The fp64 value arrays the format's kernels index, in their order, padding included (zeros
  // are exact in every precision): sets val[k], n[k] and returns the number of parts (at most
  // MSP__FORMAT_VALUE_PARTS); a storage precision encodes the parts as one array, one after
  // the other (msp__matrix_encode_values). NULL when the format stores only f64 values.
  int (*values)(const msp_matrix A, const double *val[MSP__FORMAT_VALUE_PARTS],
                int64_t n[MSP__FORMAT_VALUE_PARTS]);
  // Where values is NULL: why no storage precision can be asked ("chooses fp32 or fp64 per
  // 16x16 tile itself"), for the message; NULL gives a generic one.
  const char *f64_only;
} msp__format_ops;

#define MSP__FORMAT_OPS_DECL_(name, tag, ident) extern const msp__format_ops msp__fmt_##ident;
MSP_FORMAT_LIST(MSP__FORMAT_OPS_DECL_)
#undef MSP__FORMAT_OPS_DECL_

// The records indexed by msp_format (src/core/convert.c, from MSP_FORMAT_LIST).
extern const msp__format_ops *const msp__format_table[MSP_FORMAT_COUNT];

// ---- helpers shared between format files ------------------------------------------------------
// Default hack sizes, as PSBLAS (Filippone, PSBLAS-Extensions reference guide 2.1: hack = 64
// for HDIA; SPGPU's HLL uses a warp, 32). Also the hacks of the AUTO statistics (convert.c).
#define MSP__HLL_HACK 32
#define MSP__HDIA_HACK 64

// Footprint of the CSR arrays: (rows + 1) int64 row pointers, nnz int32 columns and values.
double msp__csr_bytes(int64_t rows, int64_t nnz, msp_precision p);

// The slot index arrays of ELL, HLL and HYB's ELL part: rows padded as internal.h says
// (value 0, column = the row's last valid column, 0 for an empty row). Fills the first
// min(len, width) entries of each row; rowlen[i] gets that count. Slot k of row i (0-based
// inside the block) is at k * ld + i, for rows [r0, r1) of A mapped to 0..r1-r0-1.
void msp__ell_fill_rows(const msp_matrix A, int64_t r0, int64_t r1, int64_t width, int64_t ld,
                        int32_t *col, double *val, int32_t *rowlen);

// Footprints of a COO of nnz triples and of an ELL of rows x width slots (HYB is both).
size_t msp__coo_bytes(int64_t nnz, msp_precision p);
size_t msp__ell_bytes(int64_t rows, int64_t width, msp_precision p);

// HLL: hack rows per hack (a multiple of 32), each hack as wide as its longest row.
// *slots: the stored slots (each hack is hack x its width; the last hack padded to hack rows).
msp_status msp__hll_count(const msp_matrix A, int hack, int64_t *slots);

// HDIA: DIA per hack of `hack` rows with the hack's own occupied diagonals.
// *diags: the sum over hacks of their occupied diagonals; *slots: stored values (hack each).
msp_status msp__hdia_count(const msp_matrix A, int hack, int64_t *diags, int64_t *slots);

// HYB: K = hyb_k (>= 0) or the one-third rule (msp__hyb_rule_k); ELL of width K + COO rest.
// The rule: K is the largest k such that at least a third of the rows have k or more entries
// (3 * #{i : len_i >= k} >= rows; Zhao et al., "Block-wise dynamic mixed-precision SpMV" 2.1).
int64_t msp__hyb_rule_k(const msp_matrix A);
// Entries that do not fit an ELL part of width k: sum over rows of max(0, len_i - k).
int64_t msp__hyb_coo_nnz(const msp_matrix A, int64_t k);

#endif

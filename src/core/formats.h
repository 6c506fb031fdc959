// formats.h: host conversions CSR -> format -> CSR of each storage format (src/core/<fmt>.c).
//
// Every format follows the same three steps, so that msp_matrix_convert can refuse a format
// before allocating it (issue 4: "a clear refusal instead of an allocation that explodes"):
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

// Footprint of the CSR arrays: (rows + 1) int64 row pointers, nnz int32 columns and values.
double msp__csr_bytes(int64_t rows, int64_t nnz, msp_precision p);

// The slot index arrays of ELL, HLL and HYB's ELL part: rows padded as internal.h says
// (value 0, column = the row's last valid column, 0 for an empty row). Fills the first
// min(len, width) entries of each row; rowlen[i] gets that count. Slot k of row i (0-based
// inside the block) is at k * ld + i, for rows [r0, r1) of A mapped to 0..r1-r0-1.
void msp__ell_fill_rows(const msp_matrix A, int64_t r0, int64_t r1, int64_t width, int64_t ld,
                        int32_t *col, double *val, int32_t *rowlen);

// COO (sorted by row then column; a plain copy of the CSR triples).
double msp__coo_plan(const msp_matrix A, msp_precision p);
msp_status msp__coo_build(const msp_matrix A, msp__coo **out);
void msp__coo_free(msp__coo *c);
size_t msp__coo_bytes(int64_t nnz, msp_precision p);
msp_status msp__coo_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val);

// ELL: width = `width_opt` (> 0) or the longest row; a width below the longest row is an
// invalid argument. rows * width is overflow-checked.
msp_status msp__ell_plan(const msp_matrix A, int64_t width_opt, msp_precision p, int64_t *width,
                         double *bytes);
msp_status msp__ell_build(const msp_matrix A, int64_t width, msp__ell **out);
void msp__ell_free(msp__ell *e);
size_t msp__ell_bytes(int64_t rows, const msp__ell *e, msp_precision p);
msp_status msp__ell_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val);

// HLL: hack rows per hack (a multiple of 32), each hack as wide as its longest row.
// *slots: the stored slots (each hack is hack x its width; the last hack padded to hack rows).
msp_status msp__hll_count(const msp_matrix A, int hack, int64_t *slots);
msp_status msp__hll_plan(const msp_matrix A, int hack, msp_precision p, double *bytes);
msp_status msp__hll_build(const msp_matrix A, int hack, msp__hll **out);
void msp__hll_free(msp__hll *h);
size_t msp__hll_bytes(const msp__hll *h, msp_precision p);
msp_status msp__hll_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val);

// DIA: one column of rows values per occupied diagonal, offsets ascending.
msp_status msp__dia_plan(const msp_matrix A, msp_precision p, int64_t *ndiag, double *bytes);
msp_status msp__dia_build(const msp_matrix A, msp__dia **out);
void msp__dia_free(msp__dia *d);
size_t msp__dia_bytes(int64_t rows, const msp__dia *d, msp_precision p);
msp_status msp__dia_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val);

// HDIA: DIA per hack of `hack` rows with the hack's own occupied diagonals.
// *diags: the sum over hacks of their occupied diagonals; *slots: stored values (hack each).
msp_status msp__hdia_count(const msp_matrix A, int hack, int64_t *diags, int64_t *slots);
msp_status msp__hdia_plan(const msp_matrix A, int hack, msp_precision p, double *bytes);
msp_status msp__hdia_build(const msp_matrix A, int hack, msp__hdia **out);
void msp__hdia_free(msp__hdia *h);
size_t msp__hdia_bytes(const msp__hdia *h, msp_precision p);
msp_status msp__hdia_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val);

// HYB: K = k_opt (>= 0) or the one-third rule (msp__hyb_rule_k); ELL of width K + COO rest.
// The rule: K is the largest k such that at least a third of the rows have k or more entries
// (3 * #{i : len_i >= k} >= rows; papers/bdmp-block-wise-dynamic-mixed-precision-spmv.txt 2.1).
int64_t msp__hyb_rule_k(const msp_matrix A);
// Entries that do not fit an ELL part of width k: sum over rows of max(0, len_i - k).
int64_t msp__hyb_coo_nnz(const msp_matrix A, int64_t k);
msp_status msp__hyb_plan(const msp_matrix A, int64_t k_opt, msp_precision p, int64_t *k,
                         double *bytes);
msp_status msp__hyb_build(const msp_matrix A, int64_t k, msp__hyb **out);
void msp__hyb_free(msp__hyb *h);
size_t msp__hyb_bytes(int64_t rows, const msp__hyb *h, msp_precision p);
msp_status msp__hyb_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val);

#endif

// ell.c: ELL host format: conversion from CSR (column-major, padded to a common width) and back.
#include "formats.h"

#include <stdio.h>
#include <string.h>

void msp__ell_fill_rows(const msp_matrix A, int64_t r0, int64_t r1, int64_t width, int64_t ld,
                        int32_t *col, double *val, int32_t *rowlen) {
  for (int64_t i = r0; i < r1; i++) {
    int64_t b = A->rowptr[i], len = A->rowptr[i + 1] - b;
    int64_t n = len < width ? len : width, r = i - r0;
    // Padding repeats the row's last valid column (PSBLAS): padded reads of x hit a cached line.
    int32_t pad = 0;
    for (int64_t k = 0; k < n; k++) {
      col[k * ld + r] = A->colind[b + k];
      val[k * ld + r] = A->val[b + k];
      pad = A->colind[b + k];
    }
    for (int64_t k = n; k < width; k++) {
      col[k * ld + r] = pad;
      val[k * ld + r] = 0.0;
    }
    rowlen[r] = (int32_t)n;
  }
}

size_t msp__ell_bytes(int64_t rows, int64_t width, msp_precision p) {
  return (size_t)rows * (size_t)width * (sizeof(int32_t) + msp__value_bytes(p));
}

// Width: o->ell_width (> 0) or the longest row; a width below the longest row is an invalid
// argument. rows * width is overflow-checked.
static msp_status ell_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                           size_t n) {
  int64_t longest = 0, slots, width_opt = o->ell_width, w;
  for (int64_t i = 0; i < A->rows; i++) {
    int64_t len = A->rowptr[i + 1] - A->rowptr[i];
    if (len > longest) longest = len;
  }
  if (width_opt > 0 && width_opt < longest)
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp_matrix_convert: ELL width %lld is smaller than the longest row (%lld "
                      "entries); use 0 for the longest row",
                      (long long)width_opt, (long long)longest);
  w = width_opt > 0 ? width_opt : longest;
  *bytes = (double)A->rows * (double)w * (double)(sizeof(int32_t) + msp__value_bytes(o->precision));
  if (!msp__mul64(msp__col_stride(A->rows), w, &slots) || !msp__mul64(slots, 12, &slots))
    return msp__error(MSP_ERR_OUT_OF_MEMORY,
                      "msp_matrix_convert: ELL of %lld rows x width %lld overflows 64-bit sizes",
                      (long long)A->rows, (long long)w);
  o->ell_width = w;
  snprintf(what, n, "ell (width %lld)", (long long)w);
  return MSP_SUCCESS;
}

static void ell_free(void *fmt) {
  msp__ell *e = fmt;
  if (!e) return;
  msp__free(e->col);
  msp__free(e->val);
  msp__free(e->rowlen);
  msp__free(e);
}

static msp_status ell_build(const msp_matrix A, const msp_convert_options *o, void **out) {
  msp_status st = MSP_SUCCESS;
  msp__ell *e = NULL;
  int64_t width = o->ell_width;
  *out = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(e, 1, "ELL header"));
  e->width = width;
  e->stride = msp__col_stride(A->rows);
  // Zeroed: the stride's rows past A->rows hold value 0, column 0.
  MSP_TRY(MSP_ALLOC_ZERO(e->col, e->stride * width, "ELL column indices"));
  MSP_TRY(MSP_ALLOC_ZERO(e->val, e->stride * width, "ELL values"));
  MSP_TRY(MSP_ALLOC(e->rowlen, A->rows, "ELL row lengths"));
  msp__ell_fill_rows(A, 0, A->rows, width, e->stride, e->col, e->val, e->rowlen);
  *out = e;
  e = NULL;
exit:
  ell_free(e);
  return st;
}

static msp_status ell_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
  const msp__ell *e = (const msp__ell *)A->fmt;
  int64_t rows = A->rows;
  if (!colind) {
    rowptr[0] = 0;
    for (int64_t i = 0; i < rows; i++)
      rowptr[i + 1] = rowptr[i] + e->rowlen[i];
    return MSP_SUCCESS;
  }
  for (int64_t i = 0; i < rows; i++)
    for (int64_t k = 0; k < e->rowlen[i]; k++) {
      colind[rowptr[i] + k] = e->col[k * e->stride + i];
      val[rowptr[i] + k] = e->val[k * e->stride + i];
    }
  return MSP_SUCCESS;
}

// The bytes a product reads: the stride's padded rows are never read.
static size_t ell_bytes(const msp_matrix A) {
  return msp__ell_bytes(A->rows, ((const msp__ell *)A->fmt)->width, A->precision);
}

static int ell_values(const msp_matrix A, const double *val[MSP__FORMAT_VALUE_PARTS],
                      int64_t n[MSP__FORMAT_VALUE_PARTS]) {
  const msp__ell *e = (const msp__ell *)A->fmt;
  val[0] = e->val;
  n[0] = e->stride * e->width;
  return 1;
}

const msp__format_ops msp__fmt_ell = {
    .format = MSP_FORMAT_ELL,
    .tag = "ell",
    .has_fmt = 1,
    .max_fill_checked = 1,
    .plan = ell_plan,
    .build = ell_build,
    .bytes = ell_bytes,
    .to_csr = ell_to_csr,
    .free = ell_free,
    .values = ell_values,
    .f64_only = NULL,
};

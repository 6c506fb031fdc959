// coo.c: COO host format: conversion from CSR (triples sorted by row, then column) and back.
#include "formats.h"

#include <stdio.h>
#include <string.h>

size_t msp__coo_bytes(int64_t nnz, msp_precision p) {
  return (size_t)nnz * (2 * sizeof(int32_t) + msp__value_bytes(p));
}

// COO has no parameters and is not held against max_fill: it stores each entry once, without
// padding (16 bytes in f64, against CSR's 12 plus its row pointers).
static msp_status coo_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                           size_t n) {
  *bytes = (double)A->nnz * (double)(2 * sizeof(int32_t) + msp__value_bytes(o->precision));
  snprintf(what, n, "coo");
  return MSP_SUCCESS;
}

static void coo_free(void *fmt) {
  msp__coo *c = fmt;
  if (!c) return;
  msp__free(c->row);
  msp__free(c->col);
  msp__free(c->val);
  msp__free(c);
}

static msp_status coo_build(const msp_matrix A, const msp_convert_options *o, void **out) {
  msp_status st = MSP_SUCCESS;
  msp__coo *c = NULL;
  *out = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(c, 1, "COO header"));
  MSP_TRY(MSP_ALLOC(c->row, A->nnz, "COO row indices"));
  MSP_TRY(MSP_ALLOC(c->col, A->nnz, "COO column indices"));
  MSP_TRY(MSP_ALLOC(c->val, A->nnz, "COO values"));
  // CSR rows are sorted by column already, so the triples come out in (row, column) order.
  for (int64_t i = 0; i < A->rows; i++)
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
      c->row[k] = (int32_t)i;
  if (A->nnz) {
    memcpy(c->col, A->colind, (size_t)A->nnz * sizeof *c->col);
    memcpy(c->val, A->val, (size_t)A->nnz * sizeof *c->val);
  }
  *out = c;
  c = NULL;
exit:
  coo_free(c);
  return st;
}

static msp_status coo_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
  const msp__coo *c = (const msp__coo *)A->fmt;
  if (!colind) {
    memset(rowptr, 0, (size_t)(A->rows + 1) * sizeof *rowptr);
    for (int64_t k = 0; k < A->nnz; k++)
      rowptr[c->row[k] + 1]++;
    for (int64_t i = 0; i < A->rows; i++)
      rowptr[i + 1] += rowptr[i];
    return MSP_SUCCESS;
  }
  // Sorted by row: the triples are already in CSR order.
  if (A->nnz) {
    memcpy(colind, c->col, (size_t)A->nnz * sizeof *colind);
    memcpy(val, c->val, (size_t)A->nnz * sizeof *val);
  }
  return MSP_SUCCESS;
}

static size_t coo_bytes(const msp_matrix A) {
  return msp__coo_bytes(A->nnz, A->precision);
}

static int coo_values(const msp_matrix A, const double *val[MSP__FORMAT_VALUE_PARTS],
                      int64_t n[MSP__FORMAT_VALUE_PARTS]) {
  val[0] = ((const msp__coo *)A->fmt)->val;
  n[0] = A->nnz;
  return 1;
}

const msp__format_ops msp__fmt_coo = {
    .format = MSP_FORMAT_COO,
    .tag = "coo",
    .has_fmt = 1,
    .max_fill_checked = 0,
    .plan = coo_plan,
    .build = coo_build,
    .bytes = coo_bytes,
    .to_csr = coo_to_csr,
    .free = coo_free,
    .values = coo_values,
    .f64_only = NULL,
};

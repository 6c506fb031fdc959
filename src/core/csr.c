// csr.c: CSR, the matrix's own host arrays: footprint, copy back to CSR, and the format's record.
#include "formats.h"

#include <stdio.h>
#include <string.h>

double msp__csr_bytes(int64_t rows, int64_t nnz, msp_precision p) {
  return (double)(rows + 1) * 8.0 + (double)nnz * (double)(sizeof(int32_t) + msp__value_bytes(p));
}

static msp_status csr_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                           size_t n) {
  *bytes = msp__csr_bytes(A->rows, A->nnz, o->precision);
  snprintf(what, n, "csr");
  return MSP_SUCCESS;
}

// Every matrix holds its CSR arrays already (A->rowptr, colind, val): nothing more to build.
static msp_status csr_build(const msp_matrix A, const msp_convert_options *o, void **fmt) {
  *fmt = NULL;
  return MSP_SUCCESS;
}

static size_t csr_bytes(const msp_matrix A) {
  return (size_t)msp__csr_bytes(A->rows, A->nnz, A->precision);
}

static msp_status csr_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
  if (!colind) {
    memcpy(rowptr, A->rowptr, (size_t)(A->rows + 1) * sizeof *rowptr);
  } else if (A->nnz) {
    memcpy(colind, A->colind, (size_t)A->nnz * sizeof *colind);
    memcpy(val, A->val, (size_t)A->nnz * sizeof *val);
  }
  return MSP_SUCCESS;
}

// CSR keeps no host data of its own; a stray pointer is still freed rather than leaked.
static void csr_free(void *fmt) {
  msp__free(fmt);
}

static int csr_values(const msp_matrix A, const double *val[MSP__FORMAT_VALUE_PARTS],
                      int64_t n[MSP__FORMAT_VALUE_PARTS]) {
  val[0] = A->val;
  n[0] = A->nnz;
  return 1;
}

const msp__format_ops msp__fmt_csr = {
    .format = MSP_FORMAT_CSR,
    .tag = "csr",
    .has_fmt = 0,
    .max_fill_checked = 0,
    .plan = csr_plan,
    .build = csr_build,
    .bytes = csr_bytes,
    .to_csr = csr_to_csr,
    .free = csr_free,
    .values = csr_values,
    .f64_only = NULL,
};

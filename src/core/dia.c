// dia.c: DIA host format: one padded column per occupied diagonal, conversion from CSR and back.
#include "formats.h"

#include <stdio.h>
#include <string.h>

// Offsets j - i of the occupied diagonals, ascending (*offsets may be NULL to count only).
static msp_status occupied(const msp_matrix A, int64_t *ndiag, int64_t **offsets) {
  msp_status st = MSP_SUCCESS;
  uint8_t *seen = NULL;
  int64_t *off = NULL, span = A->rows + A->cols, n = 0;
  // Bit d + rows stands for diagonal d in -(rows - 1) .. cols - 1.
  MSP_TRY(MSP_ALLOC_ZERO(seen, span / 8 + 1, "DIA diagonal bitmap"));
  for (int64_t i = 0; i < A->rows; i++)
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      int64_t b = (int64_t)A->colind[k] - i + A->rows;
      if (!(seen[b >> 3] & (1u << (b & 7)))) {
        seen[b >> 3] |= (uint8_t)(1u << (b & 7));
        n++;
      }
    }
  if (offsets) {
    MSP_TRY(MSP_ALLOC(off, n, "DIA offsets"));
    int64_t m = 0;
    for (int64_t b = 0; b < span; b++)
      if (seen[b >> 3] & (1u << (b & 7))) off[m++] = b - A->rows;
    *offsets = off;
    off = NULL;
  }
  *ndiag = n;
exit:
  msp__free(seen);
  msp__free(off);
  return st;
}

// Index of offset d in the ascending list off[0..n) (present by construction).
static int64_t find_offset(const int64_t *off, int64_t n, int64_t d) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (off[mid] < d)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static msp_status dia_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                           size_t n) {
  int64_t ndiag = 0, slots;
  msp_status st = occupied(A, &ndiag, NULL);
  if (st != MSP_SUCCESS) return st;
  if (!msp__mul64(ndiag, msp__col_stride(A->rows), &slots) || !msp__mul64(slots, 8, &slots))
    return msp__error(MSP_ERR_OUT_OF_MEMORY,
                      "msp_matrix_convert: DIA of %lld rows x %lld diagonals overflows 64-bit "
                      "sizes",
                      (long long)A->rows, (long long)ndiag);
  *bytes = (double)ndiag * 8.0 +
           (double)ndiag * (double)A->rows * (double)msp__value_bytes(o->precision);
  snprintf(what, n, "dia (%lld diagonals)", (long long)ndiag);
  return MSP_SUCCESS;
}

static void dia_free(void *fmt) {
  msp__dia *d = fmt;
  if (!d) return;
  msp__free(d->offsets);
  msp__free(d->val);
  msp__free(d);
}

static msp_status dia_build(const msp_matrix A, const msp_convert_options *opt, void **out) {
  msp_status st = MSP_SUCCESS;
  msp__dia *D = NULL;
  *out = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(D, 1, "DIA header"));
  MSP_TRY(occupied(A, &D->ndiag, &D->offsets));
  D->stride = msp__col_stride(A->rows);
  MSP_TRY(MSP_ALLOC_ZERO(D->val, D->ndiag * D->stride, "DIA values"));
  for (int64_t i = 0; i < A->rows; i++) {
    // Columns ascend within the row, and so do their diagonals: walk the offsets forward.
    int64_t d = 0;
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      int64_t o = (int64_t)A->colind[k] - i;
      d = k == A->rowptr[i] ? find_offset(D->offsets, D->ndiag, o) : d;
      while (D->offsets[d] < o)
        d++;
      D->val[d * D->stride + i] = A->val[k];
    }
  }
  *out = D;
  D = NULL;
exit:
  dia_free(D);
  return st;
}

static msp_status dia_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
  const msp__dia *D = (const msp__dia *)A->fmt;
  int64_t rows = A->rows;
  if (!colind) rowptr[0] = 0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t n = 0;
    // Offsets ascend, so the columns come out sorted. Padding is value 0: zeros are dropped.
    for (int64_t d = 0; d < D->ndiag; d++) {
      int64_t j = i + D->offsets[d];
      double v = D->val[d * D->stride + i];
      if (j < 0 || j >= A->cols || v == 0.0) continue;
      if (colind) {
        colind[rowptr[i] + n] = (int32_t)j;
        val[rowptr[i] + n] = v;
      }
      n++;
    }
    if (!colind) rowptr[i + 1] = rowptr[i] + n;
  }
  return MSP_SUCCESS;
}

// The bytes a product reads: the stride's padded rows are never read.
static size_t dia_bytes(const msp_matrix A) {
  const msp__dia *d = (const msp__dia *)A->fmt;
  return (size_t)d->ndiag * sizeof(int64_t) +
         (size_t)d->ndiag * (size_t)A->rows * msp__value_bytes(A->precision);
}

static int dia_values(const msp_matrix A, const double *val[MSP__FORMAT_VALUE_PARTS],
                      int64_t n[MSP__FORMAT_VALUE_PARTS]) {
  const msp__dia *d = (const msp__dia *)A->fmt;
  val[0] = d->val;
  n[0] = d->stride * d->ndiag;
  return 1;
}

const msp__format_ops msp__fmt_dia = {
    .format = MSP_FORMAT_DIA,
    .tag = "dia",
    .has_fmt = 1,
    .max_fill_checked = 1,
    .plan = dia_plan,
    .build = dia_build,
    .bytes = dia_bytes,
    .to_csr = dia_to_csr,
    .free = dia_free,
    .values = dia_values,
    .f64_only = NULL,
};

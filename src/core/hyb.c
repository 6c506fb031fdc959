// hyb.c: HYB host format: ELL of width K for the first K entries of each row, COO for the rest.
#include "formats.h"

#include <stdio.h>
#include <string.h>

int64_t msp__hyb_rule_k(const msp_matrix A) {
  // #{i : len_i >= k} falls as k grows: binary search the largest k with 3 * count >= rows.
  int64_t lo = 0, hi = 0;
  for (int64_t i = 0; i < A->rows; i++) {
    int64_t len = A->rowptr[i + 1] - A->rowptr[i];
    if (len > hi) hi = len;
  }
  while (lo < hi) {
    int64_t k = lo + (hi - lo + 1) / 2, count = 0;
    for (int64_t i = 0; i < A->rows; i++)
      count += A->rowptr[i + 1] - A->rowptr[i] >= k;
    if (3 * count >= A->rows)
      lo = k;
    else
      hi = k - 1;
  }
  return lo;
}

int64_t msp__hyb_coo_nnz(const msp_matrix A, int64_t k) {
  int64_t n = 0;
  for (int64_t i = 0; i < A->rows; i++) {
    int64_t len = A->rowptr[i + 1] - A->rowptr[i];
    if (len > k) n += len - k;
  }
  return n;
}

// K: o->hyb_k (>= 0) or the one-third rule. HYB's ELL part can explode too when K is given (a K
// chosen by the rule keeps it below 3 x nnz slots), so max_fill applies as to ELL.
static msp_status hyb_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                           size_t n) {
  int64_t slots, k = o->hyb_k >= 0 ? o->hyb_k : msp__hyb_rule_k(A);
  size_t vb = msp__value_bytes(o->precision);
  if (!msp__mul64(msp__col_stride(A->rows), k, &slots) || !msp__mul64(slots, 12, &slots))
    return msp__error(MSP_ERR_OUT_OF_MEMORY,
                      "msp_matrix_convert: HYB ELL part of %lld rows x K = %lld overflows 64-bit "
                      "sizes",
                      (long long)A->rows, (long long)k);
  int64_t coo = msp__hyb_coo_nnz(A, k);
  *bytes = (double)A->rows * (double)k * (double)(sizeof(int32_t) + vb) +
           (double)coo * (double)(2 * sizeof(int32_t) + vb);
  snprintf(what, n, "hyb (K = %lld%s, %lld entries in COO)", (long long)k,
           o->hyb_k < 0 ? " by the one-third rule" : "", (long long)coo);
  o->hyb_k = k;
  return MSP_SUCCESS;
}

static void hyb_free(void *fmt) {
  msp__hyb *h = fmt;
  if (!h) return;
  msp__free(h->ell.col);
  msp__free(h->ell.val);
  msp__free(h->ell.rowlen);
  msp__free(h->coo.row);
  msp__free(h->coo.col);
  msp__free(h->coo.val);
  msp__free(h);
}

static msp_status hyb_build(const msp_matrix A, const msp_convert_options *o, void **out) {
  msp_status st = MSP_SUCCESS;
  msp__hyb *H = NULL;
  int64_t k = o->hyb_k;
  *out = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(H, 1, "HYB header"));
  H->ell.width = k;
  H->ell.stride = msp__col_stride(A->rows);
  H->coo_nnz = msp__hyb_coo_nnz(A, k);
  // Zeroed: the stride's rows past A->rows hold value 0, column 0.
  MSP_TRY(MSP_ALLOC_ZERO(H->ell.col, H->ell.stride * k, "HYB ELL column indices"));
  MSP_TRY(MSP_ALLOC_ZERO(H->ell.val, H->ell.stride * k, "HYB ELL values"));
  MSP_TRY(MSP_ALLOC(H->ell.rowlen, A->rows, "HYB ELL row lengths"));
  MSP_TRY(MSP_ALLOC(H->coo.row, H->coo_nnz, "HYB COO row indices"));
  MSP_TRY(MSP_ALLOC(H->coo.col, H->coo_nnz, "HYB COO column indices"));
  MSP_TRY(MSP_ALLOC(H->coo.val, H->coo_nnz, "HYB COO values"));
  msp__ell_fill_rows(A, 0, A->rows, k, H->ell.stride, H->ell.col, H->ell.val, H->ell.rowlen);
  int64_t n = 0;
  for (int64_t i = 0; i < A->rows; i++)
    for (int64_t p = A->rowptr[i] + k; p < A->rowptr[i + 1]; p++) {
      H->coo.row[n] = (int32_t)i;
      H->coo.col[n] = A->colind[p];
      H->coo.val[n] = A->val[p];
      n++;
    }
  *out = H;
  H = NULL;
exit:
  hyb_free(H);
  return st;
}

static msp_status hyb_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
  const msp__hyb *H = (const msp__hyb *)A->fmt;
  int64_t rows = A->rows;
  if (!colind) {
    memset(rowptr, 0, (size_t)(rows + 1) * sizeof *rowptr);
    for (int64_t i = 0; i < rows; i++)
      rowptr[i + 1] = H->ell.rowlen[i];
    for (int64_t p = 0; p < H->coo_nnz; p++)
      rowptr[H->coo.row[p] + 1]++;
    for (int64_t i = 0; i < rows; i++)
      rowptr[i + 1] += rowptr[i];
    return MSP_SUCCESS;
  }
  // A row's ELL entries come first (its first K columns), then its COO entries in order.
  for (int64_t i = 0; i < rows; i++)
    for (int64_t k = 0; k < H->ell.rowlen[i]; k++) {
      colind[rowptr[i] + k] = H->ell.col[k * H->ell.stride + i];
      val[rowptr[i] + k] = H->ell.val[k * H->ell.stride + i];
    }
  int64_t p = 0;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t q = rowptr[i] + H->ell.rowlen[i]; q < rowptr[i + 1]; q++, p++) {
      colind[q] = H->coo.col[p];
      val[q] = H->coo.val[p];
    }
  return MSP_SUCCESS;
}

static size_t hyb_bytes(const msp_matrix A) {
  const msp__hyb *h = (const msp__hyb *)A->fmt;
  return msp__ell_bytes(A->rows, h->ell.width, A->precision) +
         msp__coo_bytes(h->coo_nnz, A->precision);
}

// The ELL part (stride * K, column-major), then the COO part: two arrays, encoded as one.
static int hyb_values(const msp_matrix A, const double *val[MSP__FORMAT_VALUE_PARTS],
                      int64_t n[MSP__FORMAT_VALUE_PARTS]) {
  const msp__hyb *h = (const msp__hyb *)A->fmt;
  val[0] = h->ell.val;
  n[0] = h->ell.stride * h->ell.width;
  val[1] = h->coo.val;
  n[1] = h->coo_nnz;
  return 2;
}

const msp__format_ops msp__fmt_hyb = {
    .format = MSP_FORMAT_HYB,
    .tag = "hyb",
    .has_fmt = 1,
    .max_fill_checked = 1,
    .plan = hyb_plan,
    .build = hyb_build,
    .bytes = hyb_bytes,
    .to_csr = hyb_to_csr,
    .free = hyb_free,
    .values = hyb_values,
    .f64_only = NULL,
};

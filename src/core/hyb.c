// hyb.c: HYB host format: ELL of width K for the first K entries of each row, COO for the rest.
#include "formats.h"

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

size_t msp__hyb_bytes(int64_t rows, const msp__hyb *h, msp_precision p) {
  return msp__ell_bytes(rows, &h->ell, p) + msp__coo_bytes(h->coo_nnz, p);
}

msp_status msp__hyb_plan(const msp_matrix A, int64_t k_opt, msp_precision p, int64_t *k,
                         double *bytes) {
  int64_t slots;
  *k = k_opt >= 0 ? k_opt : msp__hyb_rule_k(A);
  if (!msp__mul64(A->rows, *k, &slots) || !msp__mul64(slots, 12, &slots))
    return msp__error(MSP_ERR_OUT_OF_MEMORY,
                      "msp_matrix_convert: HYB ELL part of %lld rows x K = %lld overflows 64-bit "
                      "sizes",
                      (long long)A->rows, (long long)*k);
  *bytes = (double)A->rows * (double)*k * (double)(sizeof(int32_t) + msp__value_bytes(p)) +
           (double)msp__hyb_coo_nnz(A, *k) * (double)(2 * sizeof(int32_t) + msp__value_bytes(p));
  return MSP_SUCCESS;
}

void msp__hyb_free(msp__hyb *h) {
  if (!h) return;
  msp__free(h->ell.col);
  msp__free(h->ell.val);
  msp__free(h->ell.rowlen);
  msp__free(h->coo.row);
  msp__free(h->coo.col);
  msp__free(h->coo.val);
  msp__free(h);
}

msp_status msp__hyb_build(const msp_matrix A, int64_t k, msp__hyb **out) {
  msp_status st = MSP_SUCCESS;
  msp__hyb *H = NULL;
  *out = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(H, 1, "HYB header"));
  H->ell.width = k;
  H->coo_nnz = msp__hyb_coo_nnz(A, k);
  MSP_TRY(MSP_ALLOC(H->ell.col, A->rows * k, "HYB ELL column indices"));
  MSP_TRY(MSP_ALLOC(H->ell.val, A->rows * k, "HYB ELL values"));
  MSP_TRY(MSP_ALLOC(H->ell.rowlen, A->rows, "HYB ELL row lengths"));
  MSP_TRY(MSP_ALLOC(H->coo.row, H->coo_nnz, "HYB COO row indices"));
  MSP_TRY(MSP_ALLOC(H->coo.col, H->coo_nnz, "HYB COO column indices"));
  MSP_TRY(MSP_ALLOC(H->coo.val, H->coo_nnz, "HYB COO values"));
  msp__ell_fill_rows(A, 0, A->rows, k, A->rows, H->ell.col, H->ell.val, H->ell.rowlen);
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
  msp__hyb_free(H);
  return st;
}

msp_status msp__hyb_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
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
      colind[rowptr[i] + k] = H->ell.col[k * rows + i];
      val[rowptr[i] + k] = H->ell.val[k * rows + i];
    }
  int64_t p = 0;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t q = rowptr[i] + H->ell.rowlen[i]; q < rowptr[i + 1]; q++, p++) {
      colind[q] = H->coo.col[p];
      val[q] = H->coo.val[p];
    }
  return MSP_SUCCESS;
}

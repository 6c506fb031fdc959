// hll.c: hacked ELL host format: ELL per hack of rows (PSBLAS HLL), conversion from CSR and back.
#include "formats.h"

#include <stdio.h>
#include <string.h>

// Width of hack h: its longest row (0 for a hack of empty rows).
static int64_t hack_width(const msp_matrix A, int hack, int64_t h) {
  int64_t r0 = h * hack, r1 = r0 + hack < A->rows ? r0 + hack : A->rows, w = 0;
  for (int64_t i = r0; i < r1; i++) {
    int64_t len = A->rowptr[i + 1] - A->rowptr[i];
    if (len > w) w = len;
  }
  return w;
}

static int64_t hack_count(int64_t rows, int hack) {
  return (rows + hack - 1) / hack;
}

msp_status msp__hll_count(const msp_matrix A, int hack, int64_t *slots) {
  int64_t nh = hack_count(A->rows, hack), n = 0;
  for (int64_t h = 0; h < nh; h++) {
    int64_t s;
    // The last hack is padded to `hack` rows too, so every hack costs hack * width slots.
    if (!msp__mul64(hack_width(A, hack, h), hack, &s) || !msp__add64(n, s, &n) ||
        !msp__mul64(n, 12, &s))
      return msp__error(MSP_ERR_OUT_OF_MEMORY,
                        "msp_matrix_convert: HLL slot count overflows 64-bit sizes");
  }
  *slots = n;
  return MSP_SUCCESS;
}

// Hack size: o->hack_size, or 32 (a warp, as SPGPU's HLL) when it is 0.
static msp_status hll_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                           size_t n) {
  int64_t slots;
  if (o->hack_size <= 0) o->hack_size = MSP__HLL_HACK;
  int hack = o->hack_size;
  msp_status st = msp__hll_count(A, hack, &slots);
  if (st != MSP_SUCCESS) return st;
  *bytes = (double)(hack_count(A->rows, hack) + 1) * 8.0 +
           (double)slots * (double)(sizeof(int32_t) + msp__value_bytes(o->precision));
  snprintf(what, n, "hll (hack %d)", hack);
  return MSP_SUCCESS;
}

static void hll_free(void *fmt) {
  msp__hll *h = fmt;
  if (!h) return;
  msp__free(h->off);
  msp__free(h->col);
  msp__free(h->val);
  msp__free(h->rowlen);
  msp__free(h);
}

static msp_status hll_build(const msp_matrix A, const msp_convert_options *o, void **out) {
  msp_status st = MSP_SUCCESS;
  msp__hll *H = NULL;
  int hack = o->hack_size;
  *out = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(H, 1, "HLL header"));
  H->hack = hack;
  H->nhacks = hack_count(A->rows, hack);
  MSP_TRY(MSP_ALLOC(H->off, H->nhacks + 1, "HLL hack offsets"));
  H->off[0] = 0;
  for (int64_t h = 0; h < H->nhacks; h++)
    H->off[h + 1] = H->off[h] + hack_width(A, hack, h) * hack;
  MSP_TRY(MSP_ALLOC(H->col, H->off[H->nhacks], "HLL column indices"));
  MSP_TRY(MSP_ALLOC(H->val, H->off[H->nhacks], "HLL values"));
  MSP_TRY(MSP_ALLOC(H->rowlen, A->rows, "HLL row lengths"));
  for (int64_t h = 0; h < H->nhacks; h++) {
    int64_t r0 = h * hack, r1 = r0 + hack < A->rows ? r0 + hack : A->rows;
    int64_t w = (H->off[h + 1] - H->off[h]) / hack;
    msp__ell_fill_rows(A, r0, r1, w, hack, H->col + H->off[h], H->val + H->off[h], H->rowlen + r0);
    // Rows past the end of the matrix in the last hack: all zeros, column 0.
    for (int64_t k = 0; k < w; k++)
      for (int64_t r = r1 - r0; r < hack; r++) {
        H->col[H->off[h] + k * hack + r] = 0;
        H->val[H->off[h] + k * hack + r] = 0.0;
      }
  }
  *out = H;
  H = NULL;
exit:
  hll_free(H);
  return st;
}

static msp_status hll_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
  const msp__hll *H = (const msp__hll *)A->fmt;
  if (!colind) {
    rowptr[0] = 0;
    for (int64_t i = 0; i < A->rows; i++)
      rowptr[i + 1] = rowptr[i] + H->rowlen[i];
    return MSP_SUCCESS;
  }
  for (int64_t i = 0; i < A->rows; i++) {
    int64_t h = i / H->hack, r = i % H->hack;
    for (int64_t k = 0; k < H->rowlen[i]; k++) {
      colind[rowptr[i] + k] = H->col[H->off[h] + k * H->hack + r];
      val[rowptr[i] + k] = H->val[H->off[h] + k * H->hack + r];
    }
  }
  return MSP_SUCCESS;
}

static size_t hll_bytes(const msp_matrix A) {
  const msp__hll *h = (const msp__hll *)A->fmt;
  return (size_t)(h->nhacks + 1) * sizeof(int64_t) +
         (size_t)h->off[h->nhacks] * (sizeof(int32_t) + msp__value_bytes(A->precision));
}

static int hll_values(const msp_matrix A, const double *val[MSP__FORMAT_VALUE_PARTS],
                      int64_t n[MSP__FORMAT_VALUE_PARTS]) {
  const msp__hll *h = (const msp__hll *)A->fmt;
  val[0] = h->val;
  n[0] = h->off[h->nhacks];
  return 1;
}

const msp__format_ops msp__fmt_hll = {
    .format = MSP_FORMAT_HLL,
    .tag = "hll",
    .has_fmt = 1,
    .max_fill_checked = 1,
    .plan = hll_plan,
    .build = hll_build,
    .bytes = hll_bytes,
    .to_csr = hll_to_csr,
    .free = hll_free,
    .values = hll_values,
    .f64_only = NULL,
};

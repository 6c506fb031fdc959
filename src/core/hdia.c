// hdia.c: hacked DIA host format: DIA per hack of rows (PSBLAS HDIA), conversion from CSR and back.
#include "formats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t hack_count(int64_t rows, int hack) {
  return (rows + hack - 1) / hack;
}

// Distinct diagonals of hack h (rows r0..r1), marked in stamp[] (index d + rows) with h + 1.
// When list is not NULL, the offsets are written there, ascending. Returns the count.
static int64_t hack_diagonals(const msp_matrix A, int64_t h, int64_t r0, int64_t r1, int32_t *stamp,
                              int64_t *list) {
  int64_t n = 0;
  for (int64_t i = r0; i < r1; i++)
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      int64_t b = (int64_t)A->colind[k] - i + A->rows;
      if (stamp[b] != (int32_t)(h + 1)) {
        stamp[b] = (int32_t)(h + 1);
        if (list) list[n] = b - A->rows;
        n++;
      }
    }
  return n;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

msp_status msp__hdia_count(const msp_matrix A, int hack, int64_t *diags, int64_t *slots) {
  msp_status st = MSP_SUCCESS;
  int32_t *stamp = NULL;
  int64_t nh = hack_count(A->rows, hack), nd = 0, nv = 0;
  MSP_TRY(MSP_ALLOC_ZERO(stamp, A->rows + A->cols + 1, "HDIA diagonal marks"));
  for (int64_t h = 0; h < nh; h++) {
    int64_t r0 = h * hack, r1 = r0 + hack < A->rows ? r0 + hack : A->rows, s;
    int64_t n = hack_diagonals(A, h, r0, r1, stamp, NULL);
    nd += n;
    if (!msp__mul64(n, hack, &s) || !msp__add64(nv, s, &nv) || !msp__mul64(nv, 8, &s)) {
      st = msp__error(MSP_ERR_OUT_OF_MEMORY,
                      "msp_matrix_convert: HDIA value count overflows 64-bit sizes");
      goto exit;
    }
  }
  *diags = nd;
  *slots = nv;
exit:
  msp__free(stamp);
  return st;
}

// Hack size: o->hack_size, or 64 (PSBLAS's HDIA) when it is 0.
static msp_status hdia_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                            size_t n) {
  int64_t diags, slots;
  if (o->hack_size <= 0) o->hack_size = MSP__HDIA_HACK;
  int hack = o->hack_size;
  msp_status st = msp__hdia_count(A, hack, &diags, &slots);
  if (st != MSP_SUCCESS) return st;
  *bytes = (double)(hack_count(A->rows, hack) + 1) * 16.0 + (double)diags * 8.0 +
           (double)slots * (double)msp__value_bytes(o->precision);
  snprintf(what, n, "hdia (hack %d)", hack);
  return MSP_SUCCESS;
}

static void hdia_free(void *fmt) {
  msp__hdia *H = fmt;
  if (!H) return;
  msp__free(H->doff);
  msp__free(H->offsets);
  msp__free(H->voff);
  msp__free(H->val);
  msp__free(H);
}

static msp_status hdia_build(const msp_matrix A, const msp_convert_options *opt, void **out) {
  msp_status st = MSP_SUCCESS;
  msp__hdia *H = NULL;
  int hack = opt->hack_size;
  int32_t *stamp = NULL;
  *out = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(H, 1, "HDIA header"));
  H->hack = hack;
  H->nhacks = hack_count(A->rows, hack);
  MSP_TRY(MSP_ALLOC_ZERO(stamp, A->rows + A->cols + 1, "HDIA diagonal marks"));
  MSP_TRY(MSP_ALLOC(H->doff, H->nhacks + 1, "HDIA hack diagonal offsets"));
  MSP_TRY(MSP_ALLOC(H->voff, H->nhacks + 1, "HDIA hack value offsets"));
  H->doff[0] = H->voff[0] = 0;
  for (int64_t h = 0; h < H->nhacks; h++) {
    int64_t r0 = h * hack, r1 = r0 + hack < A->rows ? r0 + hack : A->rows;
    int64_t n = hack_diagonals(A, h, r0, r1, stamp, NULL);
    H->doff[h + 1] = H->doff[h] + n;
    H->voff[h + 1] = H->voff[h] + n * hack;
  }
  MSP_TRY(MSP_ALLOC(H->offsets, H->doff[H->nhacks], "HDIA diagonal offsets"));
  MSP_TRY(MSP_ALLOC_ZERO(H->val, H->voff[H->nhacks], "HDIA values"));
  // Second pass: clear the hack's marks left by the first, then collect its offsets.
  for (int64_t h = 0; h < H->nhacks; h++) {
    int64_t r0 = h * hack, r1 = r0 + hack < A->rows ? r0 + hack : A->rows;
    int64_t *off = H->offsets + H->doff[h], n = H->doff[h + 1] - H->doff[h];
    for (int64_t i = r0; i < r1; i++)
      for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        int64_t b = (int64_t)A->colind[k] - i + A->rows;
        stamp[b] = 0;
      }
    hack_diagonals(A, h, r0, r1, stamp, off);
    qsort(off, (size_t)n, sizeof *off, cmp_i64);
    double *v = H->val + H->voff[h];
    for (int64_t i = r0; i < r1; i++) {
      int64_t d = 0;
      // Columns ascend within a row, so do the diagonals: walk the hack's offsets forward.
      for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        int64_t o = (int64_t)A->colind[k] - i;
        while (off[d] < o)
          d++;
        v[d * hack + (i - r0)] = A->val[k];
      }
    }
  }
  *out = H;
  H = NULL;
exit:
  msp__free(stamp);
  hdia_free(H);
  return st;
}

static msp_status hdia_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
  const msp__hdia *H = (const msp__hdia *)A->fmt;
  if (!colind) rowptr[0] = 0;
  for (int64_t i = 0; i < A->rows; i++) {
    int64_t h = i / H->hack, r = i % H->hack, n = 0;
    const int64_t *off = H->offsets + H->doff[h];
    const double *v = H->val + H->voff[h];
    // Offsets ascend, so the columns come out sorted. Padding is value 0: zeros are dropped.
    for (int64_t d = 0; d < H->doff[h + 1] - H->doff[h]; d++) {
      int64_t j = i + off[d];
      double x = v[d * H->hack + r];
      if (j < 0 || j >= A->cols || x == 0.0) continue;
      if (colind) {
        colind[rowptr[i] + n] = (int32_t)j;
        val[rowptr[i] + n] = x;
      }
      n++;
    }
    if (!colind) rowptr[i + 1] = rowptr[i] + n;
  }
  return MSP_SUCCESS;
}

static size_t hdia_bytes(const msp_matrix A) {
  const msp__hdia *H = (const msp__hdia *)A->fmt;
  return (size_t)(H->nhacks + 1) * 2 * sizeof(int64_t) +
         (size_t)H->doff[H->nhacks] * sizeof(int64_t) +
         (size_t)H->voff[H->nhacks] * msp__value_bytes(A->precision);
}

static int hdia_values(const msp_matrix A, const double *val[MSP__FORMAT_VALUE_PARTS],
                       int64_t n[MSP__FORMAT_VALUE_PARTS]) {
  const msp__hdia *H = (const msp__hdia *)A->fmt;
  val[0] = H->val;
  n[0] = H->voff[H->nhacks];
  return 1;
}

const msp__format_ops msp__fmt_hdia = {
    .format = MSP_FORMAT_HDIA,
    .tag = "hdia",
    .has_fmt = 1,
    .max_fill_checked = 1,
    .plan = hdia_plan,
    .build = hdia_build,
    .bytes = hdia_bytes,
    .to_csr = hdia_to_csr,
    .free = hdia_free,
    .values = hdia_values,
    .f64_only = NULL,
};

// test_formats.c: every storage format on the CPU: hand-checked layouts, exact round trips,
// fill-limit refusals, SpMV against the long-double oracle, determinism, AUTO and TUNE.
#include "convert.h"
#include "internal.h"
#include "testlib.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu;

static const msp_format all_formats[] = {MSP_FORMAT_CSR, MSP_FORMAT_COO, MSP_FORMAT_ELL,
                                         MSP_FORMAT_HLL, MSP_FORMAT_DIA, MSP_FORMAT_HDIA,
                                         MSP_FORMAT_HYB};
#define NFORMATS (int)(sizeof all_formats / sizeof all_formats[0])

// ---- helpers ----------------------------------------------------------------------------------
static msp_status convert(msp_matrix A, msp_format f, double max_fill, msp_matrix *B) {
  msp_convert_options o = msp_convert_options_default();
  o.format = f;
  o.max_fill = max_fill;
  return msp_matrix_convert(cpu, A, &o, B);
}

static int is_dia(msp_format f) {
  return f == MSP_FORMAT_DIA || f == MSP_FORMAT_HDIA;
}

// The CSR a format must give back: the source itself, or (DIA/HDIA, whose padding is value 0)
// the source with its stored zeros dropped.
static void expected_csr(const test_csr *m, msp_format f, test_csr *e) {
  memset(e, 0, sizeof *e);
  e->rows = m->rows;
  e->cols = m->cols;
  e->rowptr = malloc((size_t)(m->rows + 1) * sizeof *e->rowptr);
  e->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *e->colind);
  e->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *e->val);
  e->rowptr[0] = 0;
  for (int64_t i = 0; i < m->rows; i++) {
    int64_t n = e->rowptr[i];
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++) {
      if (is_dia(f) && m->val[k] == 0.0) continue;
      e->colind[n] = m->colind[k];
      e->val[n++] = m->val[k];
    }
    e->rowptr[i + 1] = n;
  }
  e->nnz = e->rowptr[m->rows];
}

// msp__format_to_csr(B) equals the source bit for bit.
static void check_round_trip(const test_csr *m, msp_matrix B, const char *label) {
  int64_t *rp = NULL;
  int32_t *ci = NULL;
  double *v = NULL;
  test_csr e;
  expected_csr(m, msp_matrix_format(B), &e);
  CHECK_OK(msp__format_to_csr(B, &rp, &ci, &v));
  if (rp) {
    int same = memcmp(rp, e.rowptr, (size_t)(e.rows + 1) * sizeof *rp) == 0;
    CHECK(same, "%s: row pointers differ after the round trip", label);
    if (same && e.nnz) {
      CHECK(memcmp(ci, e.colind, (size_t)e.nnz * sizeof *ci) == 0,
            "%s: column indices differ after the round trip", label);
      CHECK(memcmp(v, e.val, (size_t)e.nnz * sizeof *v) == 0,
            "%s: values differ (bits) after the round trip", label);
    }
  }
  msp__free(rp);
  msp__free(ci);
  msp__free(v);
  test_csr_free(&e);
}

// y = alpha B x + beta y0 against the oracle for several (alpha, beta); beta == 0 with a NaN y.
static void check_spmv(const test_csr *m, msp_matrix B, const char *label, uint64_t seed) {
  static const double ab[][2] = {{1.0, 0.0}, {2.5, -0.5}, {-1.0, 1.0}, {0.0, 2.0}};
  msp_vector x = NULL, y = NULL;
  msp_rng r = {seed};
  size_t nx = (size_t)(m->cols ? m->cols : 1), ny = (size_t)(m->rows ? m->rows : 1);
  double *hx = malloc(nx * sizeof *hx), *y0 = malloc(ny * sizeof *y0);
  double *got = malloc(ny * sizeof *got), *ref = malloc(ny * sizeof *ref);
  double *nan_y = malloc(ny * sizeof *nan_y);
  for (int64_t j = 0; j < m->cols; j++)
    hx[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
  for (int64_t i = 0; i < m->rows; i++) {
    y0[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
    nan_y[i] = NAN;
  }
  CHECK_OK(msp_vector_create(cpu, m->cols, &x));
  CHECK_OK(msp_vector_create(cpu, m->rows, &y));
  if (!x || !y) goto exit;
  CHECK_OK(msp_vector_set(x, hx));
  for (size_t c = 0; c < sizeof ab / sizeof ab[0]; c++) {
    double alpha = ab[c][0], beta = ab[c][1];
    char lab[300];
    snprintf(lab, sizeof lab, "%s alpha %g beta %g", label, alpha, beta);
    CHECK_OK(msp_vector_set(y, beta == 0.0 ? nan_y : y0));
    CHECK_OK(msp_spmv(cpu, alpha, B, x, beta, y));
    CHECK_OK(msp_vector_get(y, got));
    test_oracle_spmv(m, alpha, hx, beta, y0, ref);
    CHECK(test_compare_rows(m, alpha, hx, beta, y0, got, ref, lab) == 0, "%s: SpMV differs", lab);
  }
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  free(hx);
  free(y0);
  free(got);
  free(ref);
  free(nan_y);
}

// Convert m to f with options o, check the round trip and SpMV.
static void check_format(const test_csr *m, msp_matrix A, const msp_convert_options *o,
                         const char *label) {
  msp_matrix B = NULL;
  char lab[256];
  snprintf(lab, sizeof lab, "%s as %s (hack %d, width %lld, K %lld)", label,
           msp_format_name(o->format), o->hack_size, (long long)o->ell_width, (long long)o->hyb_k);
  CHECK_OK(msp_matrix_convert(cpu, A, o, &B));
  if (!B) return;
  CHECK(msp_matrix_format(B) == o->format, "%s: format %d", lab, (int)msp_matrix_format(B));
  CHECK(msp_matrix_nnz(B) == m->nnz && msp_matrix_rows(B) == m->rows &&
            msp_matrix_cols(B) == m->cols,
        "%s: dimensions changed", lab);
  CHECK(strstr(msp_matrix_choice_reason(B), "named by the caller") != NULL ||
            o->format == MSP_FORMAT_CSR,
        "%s: reason '%s'", lab, msp_matrix_choice_reason(B));
  check_round_trip(m, B, lab);
  check_spmv(m, B, lab, 99);
  msp_matrix_destroy(&B);
}

// Every format with its parameters at their defaults and at their limits.
static void check_all_formats(const test_csr *m, const char *label) {
  msp_matrix A = NULL;
  CHECK_OK(test_csr_to_matrix(m, cpu, &A));
  if (!A) return;
  int64_t longest = 0;
  for (int64_t i = 0; i < m->rows; i++)
    if (m->rowptr[i + 1] - m->rowptr[i] > longest) longest = m->rowptr[i + 1] - m->rowptr[i];
  for (int f = 0; f < NFORMATS; f++) {
    msp_convert_options o = msp_convert_options_default();
    o.format = all_formats[f];
    o.max_fill = 1e9; // these matrices are small: test the layouts, not the limit
    check_format(m, A, &o, label);
    if (o.format == MSP_FORMAT_HLL || o.format == MSP_FORMAT_HDIA) {
      static const int hacks[] = {32, 64, 96, 128};
      for (int h = 0; h < 4; h++) {
        o.hack_size = hacks[h];
        check_format(m, A, &o, label);
      }
    }
    if (o.format == MSP_FORMAT_ELL) {
      o.ell_width = longest + 3;
      check_format(m, A, &o, label);
    }
    if (o.format == MSP_FORMAT_HYB) {
      int64_t ks[] = {0, 1, longest, longest + 2};
      for (int k = 0; k < 4; k++) {
        o.hyb_k = ks[k];
        check_format(m, A, &o, label);
      }
    }
    if (o.format == MSP_FORMAT_CSR) {
      for (int k = MSP_KERNEL_SCALAR; k < MSP_KERNEL_COUNT; k++) {
        o.kernel = (msp_kernel)k;
        check_format(m, A, &o, label);
      }
    }
  }
  msp_matrix_destroy(&A);
}

// A test_csr from explicit rows (lens[i] entries each, columns and values given).
static void csr_from_arrays(test_csr *m, int64_t rows, int64_t cols, const int64_t *rowptr,
                            const int32_t *colind, const double *val) {
  m->rows = rows;
  m->cols = cols;
  m->nnz = rowptr[rows];
  m->rowptr = malloc((size_t)(rows + 1) * sizeof *m->rowptr);
  m->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->val);
  memcpy(m->rowptr, rowptr, (size_t)(rows + 1) * sizeof *rowptr);
  if (m->nnz) {
    memcpy(m->colind, colind, (size_t)m->nnz * sizeof *colind);
    memcpy(m->val, val, (size_t)m->nnz * sizeof *val);
  }
}

// A matrix with the given entries per row; entry k of row i at column (i + k*stride) % cols.
static void csr_pattern(test_csr *m, int64_t rows, int64_t cols, const int64_t *lens,
                        uint64_t seed) {
  msp_rng r = {seed};
  m->rows = rows;
  m->cols = cols;
  m->rowptr = malloc((size_t)(rows + 1) * sizeof *m->rowptr);
  m->rowptr[0] = 0;
  for (int64_t i = 0; i < rows; i++)
    m->rowptr[i + 1] = m->rowptr[i] + lens[i];
  m->nnz = m->rowptr[rows];
  m->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->val);
  for (int64_t i = 0; i < rows; i++) {
    int64_t n = lens[i], b = m->rowptr[i];
    // n distinct sorted columns spread over 0..cols-1 with a random start
    int64_t start = msp_rng_range(&r, cols);
    int64_t *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
    for (int64_t k = 0; k < n; k++)
      tmp[k] = (start + k * cols / (n ? n : 1)) % cols;
    for (int64_t a = 1; a < n; a++) // insertion sort (n is small or nearly sorted)
      for (int64_t c = a; c > 0 && tmp[c - 1] > tmp[c]; c--) {
        int64_t t = tmp[c];
        tmp[c] = tmp[c - 1];
        tmp[c - 1] = t;
      }
    for (int64_t k = 0; k < n; k++) {
      m->colind[b + k] = (int32_t)tmp[k];
      m->val[b + k] = 2.0 * msp_rng_uniform(&r) - 1.0;
    }
    free(tmp);
  }
}

static void csr_banded(test_csr *m, int64_t n, int64_t lower, int64_t upper) {
  int64_t *lens = malloc((size_t)(n ? n : 1) * sizeof *lens);
  m->rows = m->cols = n;
  m->rowptr = malloc((size_t)(n + 1) * sizeof *m->rowptr);
  m->rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t lo = i - lower < 0 ? 0 : i - lower, hi = i + upper >= n ? n - 1 : i + upper;
    lens[i] = hi - lo + 1;
    m->rowptr[i + 1] = m->rowptr[i] + lens[i];
  }
  m->nnz = m->rowptr[n];
  m->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->val);
  for (int64_t i = 0, p = 0; i < n; i++) {
    int64_t lo = i - lower < 0 ? 0 : i - lower, hi = i + upper >= n ? n - 1 : i + upper;
    for (int64_t j = lo; j <= hi; j++, p++) {
      m->colind[p] = (int32_t)j;
      m->val[p] = j == i ? 4.0 : -1.0 + 0.001 * (double)(i % 7);
    }
  }
  free(lens);
}

// ---- the column stride of ELL, HYB and DIA ------------------------------------------------------
// From MSP__STRIDE_MIN_ROWS rows on, a column holds rows rounded up to a multiple of 256 values
// (the rows past the matrix are zeros, column 0); below, exactly rows. 1500 rows: stride 1536.
static void test_col_stride(void) {
  CHECK(msp__col_stride(0) == 0 && msp__col_stride(5) == 5 && msp__col_stride(1023) == 1023 &&
            msp__col_stride(1024) == 1024 && msp__col_stride(1025) == 1280 &&
            msp__col_stride(1500) == 1536,
        "msp__col_stride");
  test_csr m;
  csr_banded(&m, 1500, 2, 1);
  msp_matrix A = NULL, B = NULL;
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  if (!A) {
    test_csr_free(&m);
    return;
  }
  CHECK_OK(convert(A, MSP_FORMAT_DIA, 10.0, &B));
  if (B) {
    const msp__dia *d = B->fmt;
    int ok = d->stride == 1536 && d->ndiag == 4;
    for (int64_t k = 0; ok && k < d->ndiag; k++) {
      for (int64_t i = 0; i < 1500; i++) { // A(i, i + off) where inside, else 0
        const int64_t j = i + d->offsets[k];
        double e = 0;
        for (int64_t p = m.rowptr[i]; p < m.rowptr[i + 1]; p++)
          if (m.colind[p] == j) e = m.val[p];
        ok &= d->val[k * d->stride + i] == e;
      }
      for (int64_t i = 1500; i < d->stride; i++)
        ok &= d->val[k * d->stride + i] == 0.0;
    }
    CHECK(ok, "DIA of 1500 rows: stride %lld, values at d * stride + i, zeros past row 1500",
          (long long)d->stride);
    CHECK(msp_matrix_bytes(B) == (size_t)(4 * 8 + 4 * 1500 * 8), "DIA bytes %zu: the rows read",
          msp_matrix_bytes(B));
    check_round_trip(&m, B, "dia, stride 1536");
    check_spmv(&m, B, "dia, stride 1536", 11);
    msp_matrix_destroy(&B);
  }
  CHECK_OK(convert(A, MSP_FORMAT_ELL, 10.0, &B));
  if (B) {
    const msp__ell *e = B->fmt;
    int ok = e->stride == 1536 && e->width == 4;
    for (int64_t k = 0; ok && k < e->width; k++) {
      for (int64_t i = 0; i < 1500; i++) {
        const int64_t len = m.rowptr[i + 1] - m.rowptr[i];
        if (k < len)
          ok &= e->col[k * e->stride + i] == m.colind[m.rowptr[i] + k] &&
                e->val[k * e->stride + i] == m.val[m.rowptr[i] + k];
      }
      for (int64_t i = 1500; i < e->stride; i++)
        ok &= e->col[k * e->stride + i] == 0 && e->val[k * e->stride + i] == 0.0;
    }
    CHECK(ok,
          "ELL of 1500 rows: stride %lld, slot k of row i at k * stride + i, zeros past "
          "row 1500",
          (long long)e->stride);
    check_round_trip(&m, B, "ell, stride 1536");
    check_spmv(&m, B, "ell, stride 1536", 12);
    msp_matrix_destroy(&B);
  }
  msp_matrix_destroy(&A);
  test_csr_free(&m);
}

// ---- hand-checked 5 x 5 example -----------------------------------------------------------------
// [1 2 . . .]
// [. 3 . . .]
// [. . . . .]   row 2 empty
// [4 . . 5 6]
// [. . . . 7]
static const int64_t t_rp[] = {0, 2, 3, 3, 6, 7};
static const int32_t t_ci[] = {0, 1, 1, 0, 3, 4, 4};
static const double t_v[] = {1, 2, 3, 4, 5, 6, 7};

static void test_tiny_layouts(void) {
  test_csr m;
  msp_matrix A = NULL, B = NULL;
  csr_from_arrays(&m, 5, 5, t_rp, t_ci, t_v);
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  if (!A) return;
  // CSR: 6 row pointers * 8 + 7 * (4 + 8) = 132 bytes.
  CHECK(msp_matrix_bytes(A) == 132, "CSR bytes %zu, expected 132", msp_matrix_bytes(A));

  CHECK_OK(convert(A, MSP_FORMAT_COO, 3.0, &B));
  if (B) {
    const msp__coo *c = B->fmt;
    static const int32_t er[] = {0, 0, 1, 3, 3, 3, 4};
    CHECK(memcmp(c->row, er, sizeof er) == 0 && memcmp(c->col, t_ci, sizeof t_ci) == 0 &&
              memcmp(c->val, t_v, sizeof t_v) == 0,
          "COO arrays");
    CHECK(msp_matrix_bytes(B) == 112, "COO bytes %zu, expected 7 * 16 = 112", msp_matrix_bytes(B));
    msp_matrix_destroy(&B);
  }

  // ELL: width 3, column-major (slot k of row i at k * 5 + i), padding = the row's last column.
  CHECK_OK(convert(A, MSP_FORMAT_ELL, 3.0, &B));
  if (B) {
    const msp__ell *e = B->fmt;
    static const int32_t ec[] = {0, 1, 0, 0, 4, /**/ 1, 1, 0, 3, 4, /**/ 1, 1, 0, 4, 4};
    static const double ev[] = {1, 3, 0, 4, 7, /**/ 2, 0, 0, 5, 0, /**/ 0, 0, 0, 6, 0};
    static const int32_t el[] = {2, 1, 0, 3, 1};
    CHECK(e->width == 3, "ELL width %lld", (long long)e->width);
    CHECK(memcmp(e->col, ec, sizeof ec) == 0, "ELL columns");
    CHECK(memcmp(e->val, ev, sizeof ev) == 0, "ELL values");
    CHECK(memcmp(e->rowlen, el, sizeof el) == 0, "ELL row lengths");
    CHECK(msp_matrix_bytes(B) == 180, "ELL bytes %zu, expected 15 * 12 = 180", msp_matrix_bytes(B));
    msp_matrix_destroy(&B);
  }

  // HLL, hack 32: one hack of width 3 padded to 32 rows: 96 slots; 16 + 96 * 12 = 1168 bytes,
  // more than 3 x 132: refused at the default limit.
  CHECK_STATUS(convert(A, MSP_FORMAT_HLL, 3.0, &B), MSP_ERR_FILL_LIMIT);
  CHECK(B == NULL, "refused conversion returned a matrix");
  CHECK(strstr(msp_last_error(), "HLL would take 1.2 kB") != NULL, "message: %s", msp_last_error());
  CHECK_OK(convert(A, MSP_FORMAT_HLL, 10.0, &B));
  if (B) {
    const msp__hll *h = B->fmt;
    CHECK(h->hack == 32 && h->nhacks == 1 && h->off[0] == 0 && h->off[1] == 96,
          "HLL header: hack %d, %lld hacks, off %lld %lld", h->hack, (long long)h->nhacks,
          (long long)h->off[0], (long long)h->off[1]);
    static const int32_t c0[] = {0, 1, 0, 0, 4}, c1[] = {1, 1, 0, 3, 4}, c2[] = {1, 1, 0, 4, 4};
    static const double v0[] = {1, 3, 0, 4, 7}, v1[] = {2, 0, 0, 5, 0}, v2[] = {0, 0, 0, 6, 0};
    CHECK(memcmp(h->col, c0, sizeof c0) == 0 && memcmp(h->col + 32, c1, sizeof c1) == 0 &&
              memcmp(h->col + 64, c2, sizeof c2) == 0,
          "HLL columns");
    CHECK(memcmp(h->val, v0, sizeof v0) == 0 && memcmp(h->val + 32, v1, sizeof v1) == 0 &&
              memcmp(h->val + 64, v2, sizeof v2) == 0,
          "HLL values");
    int pad_ok = 1;
    for (int k = 0; k < 3; k++)
      for (int r = 5; r < 32; r++)
        pad_ok &= h->col[k * 32 + r] == 0 && h->val[k * 32 + r] == 0;
    CHECK(pad_ok, "HLL padded rows are not zero");
    CHECK(msp_matrix_bytes(B) == 1168, "HLL bytes %zu, expected 1168", msp_matrix_bytes(B));
    msp_matrix_destroy(&B);
  }

  // DIA: diagonals -3, 0, 1; val[d * 5 + i] = A(i, i + off[d]).
  CHECK_OK(convert(A, MSP_FORMAT_DIA, 3.0, &B));
  if (B) {
    const msp__dia *d = B->fmt;
    static const int64_t eo[] = {-3, 0, 1};
    static const double ev[] = {0, 0, 0, 4, 0, /**/ 1, 3, 0, 5, 7, /**/ 2, 0, 0, 6, 0};
    CHECK(d->ndiag == 3 && memcmp(d->offsets, eo, sizeof eo) == 0, "DIA offsets");
    CHECK(memcmp(d->val, ev, sizeof ev) == 0, "DIA values");
    CHECK(msp_matrix_bytes(B) == 144, "DIA bytes %zu, expected 3 * 8 + 15 * 8 = 144",
          msp_matrix_bytes(B));
    msp_matrix_destroy(&B);
  }

  // HDIA, hack 64: one hack with the same 3 diagonals, 64 values each:
  // 2 * 16 (doff, voff) + 24 (offsets) + 192 * 8 = 1592 bytes.
  CHECK_STATUS(convert(A, MSP_FORMAT_HDIA, 3.0, &B), MSP_ERR_FILL_LIMIT);
  CHECK_OK(convert(A, MSP_FORMAT_HDIA, 20.0, &B));
  if (B) {
    const msp__hdia *h = B->fmt;
    static const int64_t eo[] = {-3, 0, 1};
    CHECK(h->hack == 64 && h->nhacks == 1 && h->doff[0] == 0 && h->doff[1] == 3 &&
              h->voff[0] == 0 && h->voff[1] == 192,
          "HDIA header");
    CHECK(memcmp(h->offsets, eo, sizeof eo) == 0, "HDIA offsets");
    static const double v0[] = {0, 0, 0, 4, 0}, v1[] = {1, 3, 0, 5, 7}, v2[] = {2, 0, 0, 6, 0};
    CHECK(memcmp(h->val, v0, sizeof v0) == 0 && memcmp(h->val + 64, v1, sizeof v1) == 0 &&
              memcmp(h->val + 128, v2, sizeof v2) == 0,
          "HDIA values");
    CHECK(msp_matrix_bytes(B) == 1592, "HDIA bytes %zu, expected 1592", msp_matrix_bytes(B));
    msp_matrix_destroy(&B);
  }

  // HYB: row lengths 2 1 0 3 1; rows with >= 2 entries: 2 of 5 (3 * 2 >= 5), with >= 3: 1:
  // K = 2. ELL part 5 x 2, COO part (3, 4, 6). Bytes 10 * 12 + 16 = 136.
  CHECK_OK(convert(A, MSP_FORMAT_HYB, 3.0, &B));
  if (B) {
    const msp__hyb *h = B->fmt;
    static const int32_t ec[] = {0, 1, 0, 0, 4, /**/ 1, 1, 0, 3, 4};
    static const double ev[] = {1, 3, 0, 4, 7, /**/ 2, 0, 0, 5, 0};
    CHECK(h->ell.width == 2, "HYB K %lld, expected 2", (long long)h->ell.width);
    CHECK(memcmp(h->ell.col, ec, sizeof ec) == 0 && memcmp(h->ell.val, ev, sizeof ev) == 0,
          "HYB ELL part");
    CHECK(h->coo_nnz == 1 && h->coo.row[0] == 3 && h->coo.col[0] == 4 && h->coo.val[0] == 6.0,
          "HYB COO part");
    CHECK(msp_matrix_bytes(B) == 136, "HYB bytes %zu, expected 136", msp_matrix_bytes(B));
    CHECK(strstr(msp_matrix_choice_reason(B), "one-third rule") != NULL, "reason '%s'",
          msp_matrix_choice_reason(B));
    msp_matrix_destroy(&B);
  }
  msp_matrix_destroy(&A);
  check_all_formats(&m, "tiny 5x5");
  test_csr_free(&m);
}

// ---- edge cases ---------------------------------------------------------------------------------
static void test_edge_cases(void) {
  test_csr m;
  int64_t *lens = malloc(4000 * sizeof *lens);

  test_csr_random(&m, 1000, 1000, 8, 1);
  check_all_formats(&m, "random 1000x1000");
  test_csr_free(&m);

  test_csr_random(&m, 200, 150, 5, 2);
  check_all_formats(&m, "rectangular 200x150");
  test_csr_free(&m);

  test_csr_random(&m, 10, 1000, 30, 3);
  check_all_formats(&m, "wide 10x1000");
  test_csr_free(&m);

  test_csr_random(&m, 1000, 10, 3, 4);
  check_all_formats(&m, "tall 1000x10");
  test_csr_free(&m);

  // A single row longer than a hack (80 > 32 entries), the rest short.
  for (int64_t i = 0; i < 100; i++)
    lens[i] = i == 37 ? 80 : i % 4;
  csr_pattern(&m, 100, 100, lens, 5);
  check_all_formats(&m, "one row longer than a hack");
  test_csr_free(&m);

  test_csr_random(&m, 7, 7, 3, 6);
  check_all_formats(&m, "smaller than one hack");
  test_csr_free(&m);

  test_csr_random(&m, 101, 101, 6, 7);
  check_all_formats(&m, "101 rows (not a multiple of the hack)");
  test_csr_free(&m);

  // Empty rows: every third row and the last 24.
  for (int64_t i = 0; i < 64; i++)
    lens[i] = (i % 3 == 0 || i >= 40) ? 0 : 1 + i % 5;
  csr_pattern(&m, 64, 64, lens, 8);
  check_all_formats(&m, "empty rows");
  test_csr_free(&m);

  csr_banded(&m, 300, 0, 0);
  check_all_formats(&m, "diagonal 300x300");
  test_csr_free(&m);

  // Diagonal plus one far off-diagonal entry in each corner.
  {
    int64_t n = 500;
    int64_t *rp = malloc((size_t)(n + 1) * sizeof *rp);
    int32_t *ci = malloc((size_t)(n + 2) * sizeof *ci);
    double *v = malloc((size_t)(n + 2) * sizeof *v);
    int64_t p = 0;
    rp[0] = 0;
    for (int64_t i = 0; i < n; i++) {
      if (i == n - 1) {
        ci[p] = 0;
        v[p++] = -2.0;
      }
      ci[p] = (int32_t)i;
      v[p++] = 1.0 + (double)i;
      if (i == 0) {
        ci[p] = (int32_t)(n - 1);
        v[p++] = 3.0;
      }
      rp[i + 1] = p;
    }
    csr_from_arrays(&m, n, n, rp, ci, v);
    check_all_formats(&m, "diagonal + far off-diagonals");
    test_csr_free(&m);
    free(rp);
    free(ci);
    free(v);
  }

  {
    int64_t rp0[] = {0};
    csr_from_arrays(&m, 0, 0, rp0, NULL, NULL);
    check_all_formats(&m, "0 x 0");
    test_csr_free(&m);
  }

  {
    int64_t rp[51] = {0};
    csr_from_arrays(&m, 50, 40, rp, NULL, NULL);
    check_all_formats(&m, "50 x 40 with nnz = 0");
    test_csr_free(&m);
  }

  csr_banded(&m, 1000, 1, 1);
  check_all_formats(&m, "tridiagonal 1000");
  test_csr_free(&m);

  test_csr_powerlaw(&m, 2000, 2000, 400, 9);
  check_all_formats(&m, "power law 2000");
  test_csr_free(&m);

  // Explicit zeros, including as the only entry of a row at column 0 (the ELL padding look-
  // alike): exact for COO/ELL/HLL/HYB, dropped by DIA/HDIA (see expected_csr).
  test_csr_random(&m, 300, 300, 4, 10);
  for (int64_t i = 0; i < m.rows; i++)
    for (int64_t k = m.rowptr[i]; k < m.rowptr[i + 1]; k++)
      if ((i + k) % 5 == 0) m.val[k] = 0.0;
  {
    // row 0 becomes a single explicit zero at column 0
    test_csr z;
    int64_t *rp = malloc((size_t)(m.rows + 1) * sizeof *rp);
    int64_t shift = (m.rowptr[1] - m.rowptr[0]) - 1;
    rp[0] = 0;
    for (int64_t i = 0; i < m.rows; i++)
      rp[i + 1] = m.rowptr[i + 1] - shift;
    int32_t *ci = malloc((size_t)(rp[m.rows] + 1) * sizeof *ci);
    double *v = malloc((size_t)(rp[m.rows] + 1) * sizeof *v);
    ci[0] = 0;
    v[0] = 0.0;
    memcpy(ci + 1, m.colind + m.rowptr[1], (size_t)(m.nnz - m.rowptr[1]) * sizeof *ci);
    memcpy(v + 1, m.val + m.rowptr[1], (size_t)(m.nnz - m.rowptr[1]) * sizeof *v);
    csr_from_arrays(&z, m.rows, m.cols, rp, ci, v);
    check_all_formats(&z, "explicit zeros");
    test_csr_free(&z);
    free(rp);
    free(ci);
    free(v);
  }
  test_csr_free(&m);
  free(lens);
}

// ---- fill limit and option checks ------------------------------------------------------------
static void test_fill_limit(void) {
  test_csr m;
  msp_matrix A = NULL, B = NULL;
  // DIA of a random matrix: thousands of diagonals.
  test_csr_random(&m, 2000, 2000, 5, 11);
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  CHECK_STATUS(convert(A, MSP_FORMAT_DIA, 3.0, &B), MSP_ERR_FILL_LIMIT);
  CHECK(B == NULL, "refused DIA returned a matrix");
  CHECK(strstr(msp_last_error(), "DIA would take") && strstr(msp_last_error(), "x the CSR") &&
            strstr(msp_last_error(), "limit 3.0 x (max_fill)"),
        "message: %s", msp_last_error());
  CHECK_STATUS(convert(A, MSP_FORMAT_HDIA, 3.0, &B), MSP_ERR_FILL_LIMIT);
  CHECK_OK(convert(A, MSP_FORMAT_DIA, 1e4, &B));
  if (B) check_spmv(&m, B, "DIA let through by max_fill 1e4", 12);
  msp_matrix_destroy(&B);
  msp_matrix_destroy(&A);
  test_csr_free(&m);

  // ELL with one dense row: refused; HLL confines the row to one hack and passes.
  int64_t *lens = malloc(1000 * sizeof *lens);
  for (int64_t i = 0; i < 1000; i++)
    lens[i] = i == 500 ? 1000 : 3 + i % 3;
  csr_pattern(&m, 1000, 1000, lens, 13);
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  CHECK_STATUS(convert(A, MSP_FORMAT_ELL, 3.0, &B), MSP_ERR_FILL_LIMIT);
  CHECK(strstr(msp_last_error(), "ELL would take 12.0 MB"), "message: %s", msp_last_error());
  CHECK_OK(convert(A, MSP_FORMAT_ELL, 1000.0, &B));
  if (B) check_spmv(&m, B, "ELL with a dense row, max_fill 1000", 14);
  msp_matrix_destroy(&B);
  CHECK_STATUS(convert(A, MSP_FORMAT_HYB, 3.0, &B), MSP_SUCCESS);
  msp_matrix_destroy(&B);

  // Options at and past their limits.
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_ELL;
  o.ell_width = 10; // below the dense row
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "longest row"), "message: %s", msp_last_error());
  o.ell_width = INT64_MAX / 4; // rows * width overflows: refused, not wrapped
  o.max_fill = INFINITY;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_OUT_OF_MEMORY);
  o = msp_convert_options_default();
  o.format = MSP_FORMAT_HLL;
  o.hack_size = 48;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  o.hack_size = -32;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  o.hack_size = 0;
  o.max_fill = 0.0;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  o.max_fill = NAN;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  o = msp_convert_options_default();
  o.format = MSP_FORMAT_HYB;
  o.hyb_k = -2;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  o = msp_convert_options_default();
  o.format = (msp_format)57;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_matrix_convert(cpu, A, NULL, NULL), MSP_ERR_INVALID_ARGUMENT);
  // NULL options: the defaults (CSR).
  CHECK_OK(msp_matrix_convert(cpu, A, NULL, &B));
  CHECK(B && msp_matrix_format(B) == MSP_FORMAT_CSR, "NULL options did not give CSR");
  msp_matrix_destroy(&B);
  // A format that fixes its own precision is refused clearly in another one (every plain
  // format's kernel reads any precision; BDMP picks fp32 or fp64 per tile itself).
  o = msp_convert_options_default();
  o.format = MSP_FORMAT_BDMP_PBP;
  o.precision = MSP_PRECISION_F32;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_NOT_SUPPORTED);
  CHECK(B == NULL, "refused conversion returned a matrix");
  msp_matrix_destroy(&A);
  test_csr_free(&m);
  free(lens);

  // Defaults.
  o = msp_convert_options_default();
  CHECK(o.format == MSP_FORMAT_CSR && o.kernel == MSP_KERNEL_AUTO &&
            o.precision == MSP_PRECISION_F64 && o.hack_size == 0 && o.ell_width == 0 &&
            o.hyb_k == -1 && o.max_fill == 3.0 && o.cpms_segments == 0 && o.bdmp_f == 0.5 &&
            o.bdmp_lambda == 0.0 && o.bdmp_digits == 0 && o.allow_atomics == 0,
        "msp_convert_options_default values");
}

// ---- determinism: same bits with 1, 2 and 3 threads ------------------------------------------
static void test_determinism(void) {
  test_csr m;
  msp_matrix A = NULL;
  test_csr_powerlaw(&m, 20000, 20000, 3000, 15);
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  double *hx = malloc((size_t)m.cols * sizeof *hx), *y0 = malloc((size_t)m.rows * sizeof *y0);
  double *r1 = malloc((size_t)m.rows * sizeof *r1), *rn = malloc((size_t)m.rows * sizeof *rn);
  msp_rng r = {16};
  for (int64_t j = 0; j < m.cols; j++)
    hx[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
  for (int64_t i = 0; i < m.rows; i++)
    y0[i] = msp_rng_uniform(&r);
  msp_vector x = NULL, y = NULL;
  CHECK_OK(msp_vector_create(cpu, m.cols, &x));
  CHECK_OK(msp_vector_create(cpu, m.rows, &y));
  CHECK_OK(msp_vector_set(x, hx));
  int saved = omp_get_max_threads();
  for (int f = 0; f < NFORMATS && A && x && y; f++) {
    msp_matrix B = NULL;
    CHECK_OK(convert(A, all_formats[f], 1e9, &B));
    if (!B) continue;
    for (int t = 1; t <= 3; t++) {
      omp_set_num_threads(t);
      CHECK_OK(msp_vector_set(y, y0));
      CHECK_OK(msp_spmv(cpu, 1.5, B, x, -0.25, y));
      CHECK_OK(msp_vector_get(y, t == 1 ? r1 : rn));
      if (t > 1)
        CHECK(memcmp(r1, rn, (size_t)m.rows * sizeof *r1) == 0,
              "%s: SpMV bits differ between 1 and %d threads", msp_format_name(all_formats[f]), t);
    }
    msp_matrix_destroy(&B);
  }
  omp_set_num_threads(saved);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_matrix_destroy(&A);
  free(hx);
  free(y0);
  free(r1);
  free(rn);
  test_csr_free(&m);
}

// ---- AUTO and TUNE ----------------------------------------------------------------------------
static msp_format auto_format(const test_csr *m, const char *label) {
  msp_matrix A = NULL, B = NULL;
  msp_format f = MSP_FORMAT_COUNT;
  CHECK_OK(test_csr_to_matrix(m, cpu, &A));
  CHECK_OK(convert(A, MSP_FORMAT_AUTO, 3.0, &B));
  if (B) {
    f = msp_matrix_format(B);
    printf("auto %s: %s\n", label, msp_matrix_choice_reason(B));
    CHECK(strncmp(msp_matrix_choice_reason(B), "auto: ", 6) == 0, "%s: reason '%s'", label,
          msp_matrix_choice_reason(B));
    check_round_trip(m, B, label);
    check_spmv(m, B, label, 17);
  }
  msp_matrix_destroy(&B);
  msp_matrix_destroy(&A);
  return f;
}

static void test_auto_tune(void) {
  test_csr m;
  msp_format f;
  char why[256];

  csr_banded(&m, 60000, 1, 1);
  // AUTO on the CPU backend: its own rule (convert.c, choose_format_cpu); the GPU rule is
  // checked through msp__choose_format below.
  f = auto_format(&m, "tridiagonal");
  CHECK(f == MSP_FORMAT_HDIA, "tridiagonal: AUTO chose %s, expected hdia (cpu rule)",
        msp_format_name(f));
  test_csr_free(&m);

  int64_t *lens = malloc(60000 * sizeof *lens);
  for (int64_t i = 0; i < 60000; i++)
    lens[i] = 8;
  csr_pattern(&m, 60000, 60000, lens, 18);
  // spread the columns randomly so that no diagonal structure remains
  {
    msp_rng r = {19};
    for (int64_t i = 0; i < m.rows; i++) {
      int32_t *c = m.colind + m.rowptr[i];
      int32_t base = (int32_t)msp_rng_range(&r, 400);
      for (int k = 0; k < 8; k++)
        c[k] = base + k * 450 + (int32_t)msp_rng_range(&r, 40);
    }
  }
  f = auto_format(&m, "uniform random 8 per row");
  CHECK(f == MSP_FORMAT_CSR, "uniform 8 per row: AUTO chose %s, expected csr (cpu rule)",
        msp_format_name(f));
  test_csr_free(&m);

  test_csr_powerlaw(&m, 20000, 20000, 5000, 20);
  f = auto_format(&m, "power law");
  CHECK(f == MSP_FORMAT_CSR, "power law (skewed): AUTO chose %s, expected csr (cpu rule)",
        msp_format_name(f));
  { // every kernel reads every storage precision: AUTO chooses as in f64 (CSR on the CPU)
    msp_matrix A = NULL, B = NULL;
    msp_convert_options o = msp_convert_options_default();
    o.format = MSP_FORMAT_AUTO;
    o.precision = MSP_PRECISION_F32;
    CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
    CHECK_OK(msp_matrix_convert(cpu, A, &o, &B));
    CHECK(B && msp_matrix_format(B) == MSP_FORMAT_CSR &&
              strstr(msp_matrix_choice_reason(B), "cpu rule: ") != NULL,
          "power law in f32: AUTO chose %s: %s", B ? msp_format_name(msp_matrix_format(B)) : "-",
          B ? msp_matrix_choice_reason(B) : msp_last_error());
    msp_matrix_destroy(&B);
    msp_matrix_destroy(&A);
  }
  test_csr_free(&m);

  {
    int64_t rp[11] = {0};
    csr_from_arrays(&m, 10, 10, rp, NULL, NULL);
    f = auto_format(&m, "empty");
    CHECK(f == MSP_FORMAT_CSR, "empty: AUTO chose %s", msp_format_name(f));
    test_csr_free(&m);
  }

  // The rule on hand-made statistics.
  msp_matrix_stats s;
  memset(&s, 0, sizeof s);
  s.rows = s.cols = 100000;
  s.nnz = 300000;
  s.diagonals = 3;
  s.dia_fill = 0.001;
  f = msp__choose_format(&s, why, sizeof why);
  CHECK(f == MSP_FORMAT_DIA && strstr(why, "dia_fill"), "stats rule: %s (%s)", msp_format_name(f),
        why);
  s.diagonals = 900;
  s.dia_fill = 50;
  s.hdia_fill = 0.2;
  f = msp__choose_format(&s, why, sizeof why);
  CHECK(f == MSP_FORMAT_HDIA && strstr(why, "hdia_fill"), "stats rule: %s (%s)", msp_format_name(f),
        why);
  s.hdia_fill = 40;
  s.hll_fill = 0.1;
  s.ell_fill = 5;
  s.row_cv = 2;
  f = msp__choose_format(&s, why, sizeof why);
  CHECK(f == MSP_FORMAT_HLL && strstr(why, "hll_fill"), "stats rule: %s (%s)", msp_format_name(f),
        why);
  s.hll_fill = 5;
  s.hyb_k = 3;
  s.hyb_fill = 0.1;
  s.hyb_coo_share = 0.1;
  f = msp__choose_format(&s, why, sizeof why);
  CHECK(f == MSP_FORMAT_CSR && strstr(why, "irregular"),
        "stats rule (AUTO never picks hyb): %s (%s)", msp_format_name(f), why);
  s.skewness = 12;
  f = msp__choose_format(&s, why, sizeof why);
  CHECK(f == MSP_FORMAT_COO && strstr(why, "skewness"), "stats rule: %s (%s)", msp_format_name(f),
        why);
  s.skewness = 1;
  s.rows = 1000;
  s.hll_fill = 0.1;
  s.dia_fill = 0.001;
  s.diagonals = 3;
  f = msp__choose_format(&s, why, sizeof why);
  CHECK(f == MSP_FORMAT_CSR && strstr(why, "too few"), "stats rule (small): %s (%s)",
        msp_format_name(f), why);

  // The refinement by storage precision (msp__choose_format_prec) on hand-made statistics: small
  // matrices of irregular rows -> COO in fp64 and fp32; near-uniform rows -> COO in fp64 outside
  // the vector band of mean lengths (8 to 25), CSR in fp32; other precisions and large matrices
  // keep rule 7's CSR.
  {
    static const struct {
      double mean, cv;
      int64_t nnz;
      msp_precision p;
      msp_format want;
      const char *what, *reason;
    } c[] = {
        {10, 0.8, 200000, MSP_PRECISION_F64, MSP_FORMAT_COO, "irregular f64", "row_cv"},
        {10, 0.8, 200000, MSP_PRECISION_F32, MSP_FORMAT_COO, "irregular f32", "row_cv"},
        {10, 0.8, 200000, MSP_PRECISION_F16, MSP_FORMAT_CSR, "irregular f16", "too few"},
        {10, 0.8, 2000000, MSP_PRECISION_F64, MSP_FORMAT_CSR, "irregular, 2e6 nnz", "too few"},
        {5, 0.8, 200000, MSP_PRECISION_F64, MSP_FORMAT_CSR, "irregular, mean 5", "too few"},
        {10, 0.2, 200000, MSP_PRECISION_F64, MSP_FORMAT_CSR, "uniform, mean 10, f64", "band"},
        {10, 0.4, 200000, MSP_PRECISION_F64, MSP_FORMAT_CSR, "cv 0.4, mean 10, f64", "band"},
        {24, 0.2, 200000, MSP_PRECISION_F64, MSP_FORMAT_CSR, "uniform, mean 24, f64", "band"},
        {30, 0.2, 200000, MSP_PRECISION_F64, MSP_FORMAT_COO, "uniform, mean 30, f64", "outside"},
        {7, 0.2, 200000, MSP_PRECISION_F64, MSP_FORMAT_COO, "uniform, mean 7, f64", "outside"},
        {10, 0.2, 200000, MSP_PRECISION_F32, MSP_FORMAT_CSR, "uniform, mean 10, f32", "csr kept"},
        {30, 0.2, 200000, MSP_PRECISION_F32, MSP_FORMAT_CSR, "uniform, mean 30, f32", "csr kept"},
        {7, 0.2, 200000, MSP_PRECISION_F32, MSP_FORMAT_CSR, "uniform, mean 7, f32", "csr kept"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
      memset(&s, 0, sizeof s);
      s.nnz = c[i].nnz;
      s.row_mean = c[i].mean;
      s.rows = s.cols = (int64_t)((double)c[i].nnz / c[i].mean);
      if (s.rows >= 50000) s.rows = s.cols = 49999; // rule 7's "too few rows" CSR
      s.row_cv = c[i].cv;
      s.skewness = 3;
      s.dia_fill = s.hdia_fill = s.ell_fill = s.hll_fill = 5;
      s.diagonals = 1000;
      f = msp__choose_format_prec(&s, c[i].p, why, sizeof why);
      CHECK(f == c[i].want && strstr(why, c[i].reason), "%s: %s, expected %s (%s)", c[i].what,
            msp_format_name(f), msp_format_name(c[i].want), why);
    }
    // skewed rows: COO by rule 4 in every precision
    s.skewness = 12;
    f = msp__choose_format_prec(&s, MSP_PRECISION_F16, why, sizeof why);
    CHECK(f == MSP_FORMAT_COO && strstr(why, "skewness"), "skewed f16: %s (%s)", msp_format_name(f),
          why);
    // a large irregular matrix: rule 7's CSR ("irregular") stays CSR above 1e6 nonzeros, and
    // goes to COO below
    s.skewness = 3;
    s.rows = s.cols = 100000;
    s.nnz = 1000000;
    s.row_mean = 10;
    s.row_cv = 0.8;
    f = msp__choose_format_prec(&s, MSP_PRECISION_F64, why, sizeof why);
    CHECK(f == MSP_FORMAT_COO && strstr(why, "irregular"), "1e6 nnz irregular: %s (%s)",
          msp_format_name(f), why);
    s.nnz = 1000001;
    f = msp__choose_format_prec(&s, MSP_PRECISION_F64, why, sizeof why);
    CHECK(f == MSP_FORMAT_CSR, "1e6 + 1 nnz: %s (%s)", msp_format_name(f), why);
    // the longest reason (rule 7's fills, then the refinement) is kept whole
    char whole[MSP__RULE_REASON];
    s.nnz = 999999;
    s.dia_fill = 123.456789;
    s.hdia_fill = 98.7654321;
    s.ell_fill = 45.6789123;
    s.hll_fill = 12.3456789;
    s.row_cv = 1.23456789;
    s.row_mean = 12.3456789;
    f = msp__choose_format_prec(&s, MSP_PRECISION_F64, whole, sizeof whole);
    const size_t len = strlen(whole);
    CHECK(f == MSP_FORMAT_COO && len + 1 < sizeof whole &&
              strcmp(whole + len - strlen("per warp)"), "per warp)") == 0,
          "the rule's reason, %zu characters: %s", len, whole);
  }

  // AUTO under a max_fill so low that the rule's choice is refused: CSR, said so.
  {
    msp_matrix A = NULL, B = NULL;
    csr_banded(&m, 60000, 1, 1);
    CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
    CHECK_OK(convert(A, MSP_FORMAT_AUTO, 0.5, &B));
    CHECK(B && msp_matrix_format(B) == MSP_FORMAT_CSR &&
              strstr(msp_matrix_choice_reason(B), "max_fill"),
          "AUTO under max_fill 0.5: %s", B ? msp_matrix_choice_reason(B) : "(none)");
    msp_matrix_destroy(&B);
    msp_matrix_destroy(&A);
    test_csr_free(&m);
  }

  // TUNE: a working matrix whose SpMV matches (which candidate wins is not asserted).
  {
    msp_matrix A = NULL, B = NULL;
    test_csr_random(&m, 3000, 3000, 6, 21);
    CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
    CHECK_OK(convert(A, MSP_FORMAT_TUNE, 3.0, &B));
    if (B) {
      printf("tune: %s\n", msp_matrix_choice_reason(B));
      CHECK(strncmp(msp_matrix_choice_reason(B), "tune: ", 6) == 0 &&
                strstr(msp_matrix_choice_reason(B), "SpMV"),
            "reason '%s'", msp_matrix_choice_reason(B));
      CHECK(strstr(msp_matrix_choice_reason(B), "dia refused") != NULL,
            "DIA of a random matrix should be refused during tuning: '%s'",
            msp_matrix_choice_reason(B));
      check_round_trip(&m, B, "tune");
      check_spmv(&m, B, "tune", 22);
    }
    msp_matrix_destroy(&B);
    msp_matrix_destroy(&A);
    test_csr_free(&m);
  }
  free(lens);
}

int main(void) {
  if (msp_context_create(MSP_BACKEND_CPU, 0, &cpu) != MSP_SUCCESS) {
    fprintf(stderr, "cannot create a CPU context: %s\n", msp_last_error());
    return 1;
  }
  test_tiny_layouts();
  test_col_stride();
  test_edge_cases();
  test_fill_limit();
  test_determinism();
  test_auto_tune();
  msp_context_destroy(&cpu);
  return msp_test_finish("test_formats");
}

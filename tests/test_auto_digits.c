// test_auto_digits.c: AUTO with a requested accuracy (msp_convert_options.bdmp_digits = D with
// MSP_FORMAT_AUTO): the candidates (fp64 choice, uniform fp32, BDMP-PBP and
// BDMP-TCKI in the error-bounded mode), the bound the choice guarantees and what its products
// keep. CPU backend always; the CUDA backend too when a device is usable.
#include "testlib.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define U32 5.9604644775390625e-08 // 2^-24

// src/core/convert.c: AUTO with digits, with the factors of PBP and TCKI replaced (bdmp_eff),
// so that the BDMP candidates are built, compared and handed over on the CPU too.
msp_status msp__convert_auto_digits(msp_context ctx, const msp_matrix A,
                                    const msp_convert_options *opts, const double bdmp_eff[2],
                                    msp_matrix *out);

typedef struct {
  const char *name;
  test_csr m;
} test_case;

// A 2D 5-point Laplacian (n x n grid) with integer values: 4 on the diagonal, -1 off it.
static int make_laplace_int(test_csr *m, int n) {
  memset(m, 0, sizeof *m);
  int64_t rows = (int64_t)n * n;
  m->rows = m->cols = rows;
  m->rowptr = calloc((size_t)rows + 1, sizeof *m->rowptr);
  m->colind = malloc((size_t)rows * 5 * sizeof *m->colind);
  m->val = malloc((size_t)rows * 5 * sizeof *m->val);
  if (!m->rowptr || !m->colind || !m->val) return -1;
  int64_t k = 0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t r = i / n, c = i % n;
    int64_t nb[5] = {r > 0 ? i - n : -1, c > 0 ? i - 1 : -1, i, c < n - 1 ? i + 1 : -1,
                     r < n - 1 ? i + n : -1};
    for (int q = 0; q < 5; q++) {
      if (nb[q] < 0) continue;
      m->colind[k] = (int32_t)nb[q];
      m->val[k++] = nb[q] == i ? 4.0 : -1.0;
    }
    m->rowptr[i + 1] = k;
  }
  m->nnz = k;
  return 0;
}

// A band of 2 h + 1 diagonals with integer values in [-100, 100] (exact in fp32).
static int make_band_int(test_csr *m, int64_t rows, int h, uint64_t seed) {
  memset(m, 0, sizeof *m);
  m->rows = m->cols = rows;
  m->rowptr = calloc((size_t)rows + 1, sizeof *m->rowptr);
  m->colind = malloc((size_t)rows * (size_t)(2 * h + 1) * sizeof *m->colind);
  m->val = malloc((size_t)rows * (size_t)(2 * h + 1) * sizeof *m->val);
  if (!m->rowptr || !m->colind || !m->val) return -1;
  msp_rng r = {seed};
  int64_t k = 0;
  for (int64_t i = 0; i < rows; i++) {
    for (int64_t j = i - h; j <= i + h; j++) {
      if (j < 0 || j >= rows) continue;
      m->colind[k] = (int32_t)j;
      m->val[k++] = (double)(msp_rng_range(&r, 201) - 100);
    }
    m->rowptr[i + 1] = k;
  }
  m->nnz = k;
  return 0;
}

// Random pattern whose values are 1 + k 1e-9 (k = 1..999): fp32 rounds every one of them (to 1
// or a neighbour), a change of up to about 6e-8 relative: no D >= 8 holds in fp32.
static int make_fine(test_csr *m, int64_t rows, uint64_t seed) {
  if (test_csr_random(m, rows, rows, 8.0, seed)) return -1;
  msp_rng r = {seed ^ 0x9e3779b97f4a7c15ULL};
  for (int64_t k = 0; k < m->nnz; k++)
    m->val[k] = 1.0 + (double)(1 + msp_rng_range(&r, 999)) * 1e-9;
  return 0;
}

// Banded rows: the first half of the rows integer-valued (exact in fp32), the second half
// 1 + k 1e-9 (inexact): a mix for the error-bounded BDMP selection.
static int make_mixed(test_csr *m, int64_t rows, uint64_t seed) {
  memset(m, 0, sizeof *m);
  const int w = 9;
  m->rows = m->cols = rows;
  m->rowptr = calloc((size_t)rows + 1, sizeof *m->rowptr);
  m->colind = malloc((size_t)rows * w * sizeof *m->colind);
  m->val = malloc((size_t)rows * w * sizeof *m->val);
  if (!m->rowptr || !m->colind || !m->val) return -1;
  msp_rng r = {seed};
  int64_t k = 0;
  for (int64_t i = 0; i < rows; i++) {
    for (int64_t j = i - w / 2; j <= i + w / 2; j++) {
      if (j < 0 || j >= rows) continue;
      m->colind[k] = (int32_t)j;
      m->val[k++] = i < rows / 2 ? (double)(msp_rng_range(&r, 200) - 100)
                                 : 1.0 + (double)(1 + msp_rng_range(&r, 999)) * 1e-9;
    }
    m->rowptr[i + 1] = k;
  }
  m->nnz = k;
  return 0;
}

// Random values in [-1, 1) plus, in row 0, one value that fp32 cannot hold in its normal range
// (1e-42: a subnormal there, inexact): uniform fp32 storage is never valid for it.
static int make_tiny(test_csr *m, int64_t rows, uint64_t seed) {
  if (test_csr_random(m, rows, rows, 6.0, seed)) return -1;
  if (m->rowptr[1] > m->rowptr[0]) m->val[m->rowptr[0]] = 1e-42;
  return m->rowptr[1] > m->rowptr[0] ? 0 : -1;
}

// The bound the reason states: "(bound B <= 5e-0D)"; -1 when absent.
static double reason_bound(const char *why) {
  const char *p = strstr(why, "(bound ");
  return p ? strtod(p + 7, NULL) : -1.0;
}

// Convert A (format AUTO, D digits), check the choice and its products against the fp64 CSR
// product: |y_i - ref_i| <= 5 10^-D S_i max|x| + the arithmetic's own rounding (STYLE.md 7).
// *reduced (may be NULL) gets 1 when the choice stores values in fp32 (uniformly or in tiles).
// bdmp_eff (may be NULL): the factors of PBP and TCKI for msp__convert_auto_digits; then the
// choice must be `want` (a BDMP format), the matrix the BDMP conversion of A with D digits.
static void check_case_eff(msp_context c, const char *bk, const test_case *tc, int digits,
                           int *reduced, const double *bdmp_eff, msp_format want) {
  char label[160];
  snprintf(label, sizeof label, "%s %s D=%d%s", bk, tc->name, digits,
           bdmp_eff ? " (bdmp factors replaced)" : "");
  const test_csr *m = &tc->m;
  msp_matrix A = NULL, B = NULL, B64 = NULL;
  double *x = malloc((size_t)m->cols * sizeof *x), *y = malloc((size_t)m->rows * sizeof *y);
  double *ref = malloc((size_t)m->rows * sizeof *ref);
  CHECK(x && y && ref, "%s: out of memory", label);
  if (!x || !y || !ref) goto done;
  msp_rng r = {42};
  double xmax = 0;
  for (int64_t j = 0; j < m->cols; j++) {
    x[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
    xmax = fmax(xmax, fabs(x[j]));
  }
  CHECK_OK(test_csr_to_matrix(m, c, &A));
  if (!A) goto done;
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_AUTO;
  CHECK_OK(msp_matrix_convert(c, A, &o, &B64)); // today's AUTO, fp64
  o.bdmp_digits = digits;
  if (bdmp_eff)
    CHECK_OK(msp__convert_auto_digits(c, A, &o, bdmp_eff, &B));
  else
    CHECK_OK(msp_matrix_convert(c, A, &o, &B));
  if (!B || !B64) goto done;
  const char *why = msp_matrix_choice_reason(B);
  if (getenv("MSP_TEST_VERBOSE")) printf("%s: %s\n", label, why);
  msp_format f = msp_matrix_format(B);
  msp_precision p = msp_matrix_precision(B);
  const double budget = 5.0 * pow(10.0, -(double)digits);
  // AUTO without digits is unchanged: fp64 values, no BDMP
  CHECK(msp_matrix_precision(B64) == MSP_PRECISION_F64 &&
            msp_matrix_format(B64) != MSP_FORMAT_BDMP_PBP &&
            msp_matrix_format(B64) != MSP_FORMAT_BDMP_TCKI,
        "%s: AUTO without digits gave %s %s", label, msp_format_name(msp_matrix_format(B64)),
        msp_precision_name(msp_matrix_precision(B64)));
  CHECK(strstr(why, "digits") != NULL, "%s: the reason does not speak of the digits: %s", label,
        why);
  double rb = reason_bound(why);
  CHECK(rb >= 0 && rb <= budget, "%s: bound in the reason %g not within 5e-%d: %s", label, rb,
        digits, why);
  int is_bdmp = f == MSP_FORMAT_BDMP_PBP || f == MSP_FORMAT_BDMP_TCKI;
  if (bdmp_eff)
    CHECK(f == want, "%s: %s chosen, expected %s: %s", label, msp_format_name(f),
          msp_format_name(want), why);
  if (is_bdmp) {
    msp_bdmp_report rep, direct;
    msp_matrix D1 = NULL;
    CHECK_OK(msp_matrix_bdmp_info(B, &rep));
    CHECK(rep.digits == digits, "%s: BDMP chosen in mode D=%d", label, rep.digits);
    CHECK(rep.bound <= budget, "%s: BDMP bound %g > %g", label, rep.bound, budget);
    CHECK(fabs(rb - rep.bound) <= 0.01 * rep.bound, "%s: reason's bound %g, the report's %g", label,
          rb, rep.bound);
    // the same matrix as the BDMP conversion named by the caller
    msp_convert_options od = msp_convert_options_default();
    od.format = f;
    od.bdmp_digits = digits;
    CHECK_OK(msp_matrix_convert(c, A, &od, &D1));
    if (D1) {
      CHECK_OK(msp_matrix_bdmp_info(D1, &direct));
      CHECK(direct.nnz_f32 == rep.nnz_f32 && direct.tiles_f32 == rep.tiles_f32 &&
                direct.bound == rep.bound && msp_matrix_bytes(D1) == msp_matrix_bytes(B),
            "%s: AUTO's %s differs from the direct conversion", label, msp_format_name(f));
    }
    msp_matrix_destroy(&D1);
    if (reduced) *reduced = rep.nnz_f32 > 0;
  } else {
    CHECK(p == MSP_PRECISION_F64 || p == MSP_PRECISION_F32, "%s: precision %s chosen", label,
          msp_precision_name(p));
    // a reduced choice keeps the fp64 choice's format
    CHECK(f == msp_matrix_format(B64), "%s: %s chosen where AUTO in fp64 gives %s", label,
          msp_format_name(f), msp_format_name(msp_matrix_format(B64)));
    if (p == MSP_PRECISION_F32) {
      // the bound recomputed here from the values: max_i u32 F_i / S_i
      double b = 0;
      for (int64_t i = 0; i < m->rows; i++) {
        double s = 0, fi = 0;
        for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++) {
          s += fabs(m->val[k]);
          if ((double)(float)m->val[k] != m->val[k]) fi += fabs(m->val[k]);
        }
        if (s > 0) b = fmax(b, U32 * fi / s);
      }
      CHECK(b <= budget, "%s: f32 chosen with bound %g > %g", label, b, budget);
      CHECK(fabs(rb - b) <= 0.01 * b + 1e-300, "%s: reason's bound %g, recomputed %g", label, rb,
            b);
    }
    if (reduced) *reduced = p == MSP_PRECISION_F32;
  }
  // products: the chosen matrix against the fp64 CSR product, row by row
  {
    const msp_status st = test_spmv(c, B, x, y);
    CHECK_OK(st);
    if (st != MSP_SUCCESS) goto done;
  }
  test_oracle_spmv(m, 1.0, x, 0.0, NULL, ref);
  int64_t bad = 0;
  for (int64_t i = 0; i < m->rows; i++) {
    double s = 0, sax = 0;
    int64_t len = m->rowptr[i + 1] - m->rowptr[i];
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++) {
      s += fabs(m->val[k]);
      sax += fabs(m->val[k] * x[m->colind[k]]);
    }
    double tol = budget * s * xmax + 4.0 * DBL_EPSILON * (double)(len + 2) * (sax + s * xmax);
    if (!(fabs(y[i] - ref[i]) <= tol) && bad++ < 3)
      fprintf(stderr, "%s: row %lld: y %.17g, ref %.17g, allowed %.3g\n", label, (long long)i, y[i],
              ref[i], tol);
  }
  CHECK(bad == 0, "%s: %lld rows outside the D-digit bound (%s)", label, (long long)bad, why);
done:
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&B);
  msp_matrix_destroy(&B64);
  free(x);
  free(y);
  free(ref);
}

static void check_case(msp_context c, const char *bk, const test_case *tc, int digits,
                       int *reduced) {
  check_case_eff(c, bk, tc, digits, reduced, NULL, MSP_FORMAT_AUTO);
}

// The same choice and the same product bits twice (the model has no timing in it).
static void check_repeatable(msp_context c, const test_csr *m, int digits) {
  msp_matrix A = NULL, B1 = NULL, B2 = NULL;
  CHECK_OK(test_csr_to_matrix(m, c, &A));
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_AUTO;
  o.bdmp_digits = digits;
  CHECK_OK(msp_matrix_convert(c, A, &o, &B1));
  CHECK_OK(msp_matrix_convert(c, A, &o, &B2));
  if (B1 && B2) {
    CHECK(msp_matrix_format(B1) == msp_matrix_format(B2) &&
              msp_matrix_precision(B1) == msp_matrix_precision(B2) &&
              strcmp(msp_matrix_choice_reason(B1), msp_matrix_choice_reason(B2)) == 0,
          "two conversions chose differently: %s / %s", msp_matrix_choice_reason(B1),
          msp_matrix_choice_reason(B2));
  }
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&B1);
  msp_matrix_destroy(&B2);
}

// The same choice and the same product bits with 1 and with 2 OpenMP threads (CPU).
static void check_threads(const test_csr *m, int digits, const double *bdmp_eff) {
  char why[2][256];
  double *y[2] = {malloc((size_t)m->rows * sizeof(double)),
                  malloc((size_t)m->rows * sizeof(double))};
  CHECK(y[0] && y[1], "out of memory");
  int saved = omp_get_max_threads();
  for (int t = 0; t < 2 && y[0] && y[1]; t++) {
    msp_context c = NULL;
    msp_matrix A = NULL, B = NULL;
    msp_vector xv = NULL, yv = NULL;
    omp_set_num_threads(t + 1);
    CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &c));
    CHECK_OK(test_csr_to_matrix(m, c, &A));
    msp_convert_options o = msp_convert_options_default();
    o.format = MSP_FORMAT_AUTO;
    o.bdmp_digits = digits;
    CHECK_OK(bdmp_eff ? msp__convert_auto_digits(c, A, &o, bdmp_eff, &B)
                      : msp_matrix_convert(c, A, &o, &B));
    CHECK_OK(msp_vector_create(c, m->cols, &xv));
    CHECK_OK(msp_vector_create(c, m->rows, &yv));
    CHECK_OK(msp_vector_fill(xv, 0.7));
    CHECK_OK(msp_spmv(c, 1.0, B, xv, 0.0, yv));
    CHECK_OK(msp_vector_get(yv, y[t]));
    snprintf(why[t], sizeof why[t], "%s", B ? msp_matrix_choice_reason(B) : "");
    msp_vector_destroy(&xv);
    msp_vector_destroy(&yv);
    msp_matrix_destroy(&A);
    msp_matrix_destroy(&B);
    msp_context_destroy(&c);
  }
  omp_set_num_threads(saved);
  if (y[0] && y[1]) {
    CHECK(strcmp(why[0], why[1]) == 0, "1 and 2 threads chose differently: %s / %s", why[0],
          why[1]);
    CHECK(memcmp(y[0], y[1], (size_t)m->rows * sizeof(double)) == 0,
          "1 and 2 threads: products differ (%s)", why[0]);
  }
  free(y[0]);
  free(y[1]);
}

// Every allocation of AUTO with digits failed once: no leak, and either MSP_ERR_OUT_OF_MEMORY or
// success (a BDMP candidate whose build runs out of memory is left out, AUTO goes on).
static const test_csr *g_alloc_m;
static const double *g_alloc_eff;
static msp_status alloc_scenario(void) {
  msp_context c = NULL;
  msp_matrix A = NULL, B = NULL;
  msp_status st;
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_AUTO;
  o.bdmp_digits = 12;
  if ((st = msp_context_create(MSP_BACKEND_CPU, 0, &c))) goto exit;
  if ((st = test_csr_to_matrix(g_alloc_m, c, &A))) goto exit;
  st = g_alloc_eff ? msp__convert_auto_digits(c, A, &o, g_alloc_eff, &B)
                   : msp_matrix_convert(c, A, &o, &B);
exit:
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&B);
  msp_context_destroy(&c);
  return st;
}

static void check_alloc_failures(const test_csr *m, const double *bdmp_eff) {
  msp_allocator al = test_counting_allocator();
  g_alloc_m = m;
  g_alloc_eff = bdmp_eff;
  CHECK_OK(msp_set_allocator(&al));
  test_alloc.fail_at = -1;
  test_alloc.live = 0;
  CHECK_OK(alloc_scenario());
  CHECK(test_alloc.live == 0, "AUTO digits leaks %ld allocations", test_alloc.live);
  int k;
  for (k = 0; k < 100000; k++) {
    test_alloc.fail_at = k;
    test_alloc.calls = 0;
    test_alloc.live = 0;
    msp_status st = alloc_scenario();
    CHECK(test_alloc.live == 0, "AUTO digits: failing allocation %d leaks %ld allocations", k,
          test_alloc.live);
    if (test_alloc.calls <= k) break; // every allocation has been failed once
    CHECK(st == MSP_ERR_OUT_OF_MEMORY || st == MSP_SUCCESS,
          "AUTO digits: failing allocation %d gave %s (%s)", k, msp_status_name(st),
          msp_last_error());
  }
  CHECK(k > 10, "only %d allocation points", k);
  CHECK_OK(msp_set_allocator(NULL));
}

static void check_refusals(msp_context c, const test_csr *m) {
  msp_matrix A = NULL, B = NULL;
  CHECK_OK(test_csr_to_matrix(m, c, &A));
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_AUTO;
  o.bdmp_digits = 16;
  CHECK_STATUS(msp_matrix_convert(c, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  CHECK(B == NULL, "a refused conversion left a matrix");
  o.bdmp_digits = -1;
  CHECK_STATUS(msp_matrix_convert(c, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  CHECK(B == NULL, "a refused conversion left a matrix");
  // a max_fill that refuses the padded formats: AUTO with digits falls back to CSR as without
  o.bdmp_digits = 7;
  o.max_fill = 0.5;
  CHECK_OK(msp_matrix_convert(c, A, &o, &B));
  CHECK(B && (msp_matrix_format(B) == MSP_FORMAT_CSR ||
              msp_matrix_format(B) == MSP_FORMAT_BDMP_PBP ||
              msp_matrix_format(B) == MSP_FORMAT_BDMP_TCKI),
        "max_fill 0.5: %s chosen (%s)", B ? msp_format_name(msp_matrix_format(B)) : "nothing",
        B ? msp_matrix_choice_reason(B) : msp_last_error());
  msp_matrix_destroy(&B);
  o.max_fill = 3.0;
  o.bdmp_digits = 7;
  o.precision = MSP_PRECISION_F32; // AUTO with digits chooses the precision itself
  CHECK_STATUS(msp_matrix_convert(c, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "precision") != NULL, "message: %s", msp_last_error());
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&B);
}

static void run_backend(msp_context c, const char *bk, test_case *cases, int ncases) {
  int reduced = -1;
  // integer values: fp32 holds them exactly (bound 0), so D = 7 (or 15) gives a reduced choice
  // (33 values a row: f32 halves most of a product's bytes)
  check_case(c, bk, &cases[0], 7, &reduced);
  CHECK(reduced == 1, "%s: integer-valued matrix, D = 7: no reduced choice", bk);
  reduced = -1;
  check_case(c, bk, &cases[0], 15, &reduced);
  CHECK(reduced == 1, "%s: integer-valued matrix, D = 15: no reduced choice", bk);
  // values needing more than 7 digits: D = 12 keeps them (fp64, or BDMP within the bound);
  // D = 7 may round them
  reduced = -1;
  check_case(c, bk, &cases[2], 12, &reduced);
  CHECK(reduced == 0, "%s: 1 + k 1e-9 values, D = 12: stored in fp32", bk);
  check_case(c, bk, &cases[2], 7, NULL);
  for (int i = 1; i < ncases; i++) {
    if (i == 2) continue; // the 1 + k 1e-9 values: above
    check_case(c, bk, &cases[i], 12, NULL);
    check_case(c, bk, &cases[i], 7, NULL);
    check_case(c, bk, &cases[i], 3, NULL);
  }
  // BDMP chosen (factors replaced): built once, kept, the same as its direct conversion. TCKI
  // cheap: PBP is built first (its lower bound beats fp64), then TCKI and kept; PBP cheap and
  // TCKI dear: TCKI is not built (the reason gives its lower bound)
  const double tcki_cheap[2] = {0.2, 0.01}, pbp_cheap[2] = {0.01, 100.0};
  for (int i = 0; i < ncases; i++) {
    check_case_eff(c, bk, &cases[i], 12, NULL, tcki_cheap, MSP_FORMAT_BDMP_TCKI);
    check_case_eff(c, bk, &cases[i], 7, NULL, pbp_cheap, MSP_FORMAT_BDMP_PBP);
  }
  check_repeatable(c, &cases[3].m, 12);
  check_refusals(c, &cases[0].m);
}

int main(void) {
  test_case cases[] = {{"band-int", {0}},   {"laplace-int", {0}}, {"fine-1e-9", {0}},
                       {"mixed-rows", {0}}, {"random", {0}},      {"tiny-value", {0}}};
  const int nc = (int)(sizeof cases / sizeof cases[0]);
  int rc = make_band_int(&cases[0].m, 3000, 16, 1) | make_laplace_int(&cases[1].m, 40) |
           make_fine(&cases[2].m, 1500, 3) | make_mixed(&cases[3].m, 2000, 5) |
           test_csr_random(&cases[4].m, 1800, 1800, 7.0, 9) | make_tiny(&cases[5].m, 1200, 11);
  CHECK(rc == 0, "making the test matrices failed");
  if (rc == 0) {
    msp_context cpu = NULL;
    CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
    if (cpu) run_backend(cpu, "cpu", cases, nc);
    msp_context_destroy(&cpu);
    const double tcki_cheap[2] = {0.2, 0.01};
    for (int i = 0; i < nc; i++) {
      check_threads(&cases[i].m, 7, NULL);
      check_threads(&cases[i].m, 12, tcki_cheap);
    }
    test_csr small;
    CHECK(test_csr_random(&small, 120, 120, 5.0, 21) == 0, "generator");
    check_alloc_failures(&small, NULL);
    check_alloc_failures(&small, tcki_cheap);
    test_csr_free(&small);
    msp_context gpu = NULL;
    if (test_cuda_context("test_auto_digits", &gpu) == -1) {
      run_backend(gpu, "cuda", cases, nc);
      msp_context_destroy(&gpu);
    }
  }
  for (int i = 0; i < nc; i++)
    test_csr_free(&cases[i].m);
  return msp_test_finish("test_auto_digits");
}

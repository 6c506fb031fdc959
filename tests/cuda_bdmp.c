// cuda_bdmp.c: cross test of BDMP-PBP and BDMP-TCKI, CUDA vs CPU (same stored values, fp64 bound).
#include "testlib.h"

#include "bdmp.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu, gpu;
static int quick; // env MSP_TEST_QUICK: small cases only (compute-sanitizer runs)

// The stored matrix of B (values as BDMP holds them), rebuilt from the format's arrays.
static int stored_csr(const msp_matrix B, test_csr *s) {
  memset(s, 0, sizeof *s);
  s->rows = B->rows;
  s->cols = B->cols;
  s->rowptr = malloc((size_t)(B->rows + 1) * sizeof *s->rowptr);
  if (!s->rowptr || msp__bdmp_to_csr(B, s->rowptr, NULL, NULL) != MSP_SUCCESS) return -1;
  s->nnz = s->rowptr[B->rows];
  s->colind = malloc((size_t)(s->nnz ? s->nnz : 1) * sizeof *s->colind);
  s->val = malloc((size_t)(s->nnz ? s->nnz : 1) * sizeof *s->val);
  if (!s->colind || !s->val) return -1;
  return msp__bdmp_to_csr(B, s->rowptr, s->colind, s->val) == MSP_SUCCESS ? 0 : -1;
}

static void cross(const test_csr *m, msp_format f, msp_convert_options o, const char *label,
                  uint64_t seed) {
  msp_matrix A = NULL, Bc = NULL, Bg = NULL;
  msp_vector xc = NULL, yc = NULL, xg = NULL, yg = NULL;
  test_csr s;
  memset(&s, 0, sizeof s);
  size_t nx = (size_t)(m->cols ? m->cols : 1), ny = (size_t)(m->rows ? m->rows : 1);
  double *hx = malloc(nx * sizeof *hx), *y0 = malloc(ny * sizeof *y0);
  double *nan_y = malloc(ny * sizeof *nan_y), *ref = malloc(ny * sizeof *ref);
  double *got = malloc(ny * sizeof *got), *again = malloc(ny * sizeof *again);
  if (!hx || !y0 || !nan_y || !ref || !got || !again) {
    CHECK(0, "%s: host allocation", label);
    goto exit;
  }
  msp_rng r = {seed};
  for (int64_t j = 0; j < m->cols; j++)
    hx[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
  for (int64_t i = 0; i < m->rows; i++) {
    y0[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
    nan_y[i] = NAN;
  }
  o.format = f;
  CHECK_OK(test_csr_to_matrix(m, cpu, &A));
  if (!A) goto exit;
  CHECK_OK(msp_matrix_convert(cpu, A, &o, &Bc));
  msp_matrix_destroy(&A);
  CHECK_OK(test_csr_to_matrix(m, gpu, &A));
  if (!A) goto exit;
  CHECK_OK(msp_matrix_convert(gpu, A, &o, &Bg));
  CHECK_OK(msp_vector_create(cpu, m->cols, &xc));
  CHECK_OK(msp_vector_create(cpu, m->rows, &yc));
  CHECK_OK(msp_vector_create(gpu, m->cols, &xg));
  CHECK_OK(msp_vector_create(gpu, m->rows, &yg));
  if (!Bc || !Bg || !xc || !yc || !xg || !yg) goto exit;
  if (stored_csr(Bc, &s) != 0) {
    CHECK(0, "%s: rebuilding the stored CSR", label);
    goto exit;
  }
  CHECK_OK(msp_vector_set(xc, hx));
  CHECK_OK(msp_vector_set(xg, hx));
  static const double ab[][2] = {{1.0, 0.0}, {2.5, -0.5}, {-1.0, 1.0}};
  for (size_t c = 0; c < sizeof ab / sizeof ab[0]; c++) {
    const double alpha = ab[c][0], beta = ab[c][1];
    const double *yin = beta == 0.0 ? nan_y : y0;
    char lab[256];
    snprintf(lab, sizeof lab, "%s %s alpha=%g beta=%g", label, msp_format_name(f), alpha, beta);
    CHECK_OK(msp_vector_set(yc, yin));
    CHECK_OK(msp_spmv(cpu, alpha, Bc, xc, beta, yc));
    CHECK_OK(msp_vector_get(yc, ref));
    CHECK_OK(msp_vector_set(yg, yin));
    CHECK_OK(msp_spmv(gpu, alpha, Bg, xg, beta, yg));
    CHECK_OK(msp_vector_get(yg, got));
    CHECK(test_compare_rows(&s, alpha, hx, beta, y0, got, ref, lab) == 0, "%s", lab);
    CHECK_OK(msp_vector_set(yg, yin));
    CHECK_OK(msp_spmv(gpu, alpha, Bg, xg, beta, yg));
    CHECK_OK(msp_vector_get(yg, again));
    CHECK(m->rows == 0 || memcmp(got, again, (size_t)m->rows * sizeof *got) == 0,
          "%s: two runs differ in their bits", lab);
  }
exit:
  test_csr_free(&s);
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&Bc);
  msp_matrix_destroy(&Bg);
  msp_vector_destroy(&xc);
  msp_vector_destroy(&yc);
  msp_vector_destroy(&xg);
  msp_vector_destroy(&yg);
  free(hx);
  free(y0);
  free(nan_y);
  free(ref);
  free(got);
  free(again);
}

static void both(const test_csr *m, const char *label, uint64_t seed) {
  for (int mode = 0; mode < 3; mode++) {
    msp_convert_options o = msp_convert_options_default();
    if (mode == 1) o.bdmp_f = 2.0;
    if (mode == 2) o.bdmp_digits = 8;
    char lab[200];
    snprintf(lab, sizeof lab, "%s mode %d", label, mode);
    cross(m, MSP_FORMAT_BDMP_PBP, o, lab, seed);
    cross(m, MSP_FORMAT_BDMP_TCKI, o, lab, seed + 1);
  }
}

static void one_matrix(const char *path, const char *name, void *user) {
  int *count = (int *)user;
  msp_matrix A = NULL;
  test_csr m;
  if (msp_matrix_read_mtx(cpu, path, 0, &A) != MSP_SUCCESS) return;
  if (test_csr_from_matrix(&m, A) == 0) both(&m, name, 77);
  test_csr_free(&m);
  msp_matrix_destroy(&A);
  (*count)++;
}

int main(void) {
  const char *q = getenv("MSP_TEST_QUICK");
  quick = q && *q;
  int rc_ = test_cuda_context("cuda_bdmp", &gpu);
  if (rc_ >= 0) return rc_;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  struct {
    int64_t rows, cols;
    double mean;
    int powerlaw;
  } cases[] = {{0, 0, 0, 0},          {1, 1, 1, 0},           {17, 33, 3, 0},
               {1000, 1000, 0, 0},    {1000, 1000, 8, 0},     {777, 1500, 20, 0},
               {33, 5000, 60, 0},     {16, 200000, 5000, 0}, // long block rows: split over warps
               {5000, 5000, 2000, 1}, {100000, 100000, 16, 0}};
  int ncases = quick ? 7 : (int)(sizeof cases / sizeof *cases);
  for (int c = 0; c < ncases && cpu; c++) {
    test_csr m;
    int rc =
        cases[c].powerlaw
            ? test_csr_powerlaw(&m, cases[c].rows, cases[c].cols, (int64_t)cases[c].mean, 60 + c)
            : test_csr_random(&m, cases[c].rows, cases[c].cols, cases[c].mean, 60 + c);
    CHECK(rc == 0, "generator");
    if (rc == 0) {
      msp_rng r = {70 + (uint64_t)c};
      for (int64_t k = 0; k < m.nnz; k++)
        m.val[k] *= pow(10.0, (double)msp_rng_range(&r, 5) - 2);
      char label[128];
      snprintf(label, sizeof label, "random %lldx%lld nnz %lld", (long long)m.rows,
               (long long)m.cols, (long long)m.nnz);
      both(&m, label, 5 + (uint64_t)c);
    }
    test_csr_free(&m);
  }
  if (!quick && cpu) {
    if (!test_matrices_dir()) {
      printf("cuda_bdmp: SKIPPED the collection part: ../shared/matrices not found "
             "(set MSP_MATRICES_DIR)\n");
    } else {
      int count = 0;
      test_for_each_matrix(300000, one_matrix, &count);
      printf("cuda_bdmp: %d matrices of the collection cross-checked\n", count);
    }
  }
  msp_context_destroy(&cpu);
  msp_context_destroy(&gpu);
  return msp_test_finish("cuda_bdmp");
}

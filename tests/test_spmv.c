// test_spmv.c: CPU CSR and COO SpMV against the long-double oracle, from tiny to real matrices.
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu;

// y = alpha*A*x + beta*y0 in CSR and COO, compared with the oracle row by row.
static void check_case(const test_csr *m, const char *label, uint64_t seed) {
  static const double ab[][2] = {{1.0, 0.0}, {2.5, -0.5}, {-1.0, 1.0}};
  msp_matrix A = NULL, C = NULL;
  msp_vector x = NULL, y = NULL;
  msp_rng r = {seed};
  size_t nx = (size_t)(m->cols ? m->cols : 1), ny = (size_t)(m->rows ? m->rows : 1);
  double *hx = malloc(nx * sizeof *hx), *y0 = malloc(ny * sizeof *y0);
  double *got = malloc(ny * sizeof *got), *ref = malloc(ny * sizeof *ref);
  for (int64_t j = 0; j < m->cols; j++)
    hx[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
  for (int64_t i = 0; i < m->rows; i++)
    y0[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
  CHECK_OK(test_csr_to_matrix(m, cpu, &A));
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_COO;
  CHECK_OK(msp_matrix_convert(cpu, A, &o, &C));
  CHECK_OK(msp_vector_create(cpu, m->cols, &x));
  CHECK_OK(msp_vector_create(cpu, m->rows, &y));
  if (!A || !C || !x || !y) goto exit;
  CHECK(msp_matrix_nnz(A) == m->nnz, "%s: nnz %lld != %lld", label, (long long)msp_matrix_nnz(A),
        (long long)m->nnz);
  CHECK_OK(msp_vector_set(x, hx));
  for (int f = 0; f < 2; f++) {
    msp_matrix M = f ? C : A;
    for (size_t c = 0; c < sizeof ab / sizeof ab[0]; c++) {
      double alpha = ab[c][0], beta = ab[c][1];
      CHECK_OK(msp_vector_set(y, y0));
      if (beta == 0.0 && m->rows > 0) { // y must not be read when beta == 0
        double *nan_y = malloc(ny * sizeof *nan_y);
        for (int64_t i = 0; i < m->rows; i++)
          nan_y[i] = NAN;
        CHECK_OK(msp_vector_set(y, nan_y));
        free(nan_y);
      }
      CHECK_OK(msp_spmv(cpu, alpha, M, x, beta, y));
      CHECK_OK(msp_vector_get(y, got));
      test_oracle_spmv(m, alpha, hx, beta, y0, ref);
      char lab[256];
      snprintf(lab, sizeof lab, "%s %s alpha=%g beta=%g", label, f ? "coo" : "csr", alpha, beta);
      CHECK(test_compare_rows(m, alpha, hx, beta, y0, got, ref, lab) == 0, "%s", lab);
    }
  }
exit:
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&C);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  free(hx);
  free(y0);
  free(got);
  free(ref);
}

// A 3x4 matrix checked by hand: [1 0 2 0; 0 0 0 0; 0 -3 0 4], x = (1,2,3,4): y = (7, 0, 10).
static void hand_checked(void) {
  int64_t rp[] = {0, 2, 2, 4};
  int32_t ci[] = {2, 0, 1, 3}; // unsorted within row 0: the library sorts
  double va[] = {2.0, 1.0, -3.0, 4.0};
  double hx[] = {1, 2, 3, 4}, hy[3] = {9, 9, 9};
  msp_matrix A = NULL;
  msp_vector x = NULL, y = NULL;
  CHECK_OK(msp_matrix_from_csr(cpu, 3, 4, rp, ci, va, 0, &A));
  CHECK_OK(msp_vector_create(cpu, 4, &x));
  CHECK_OK(msp_vector_create(cpu, 3, &y));
  if (!A || !x || !y) goto exit;
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_vector_set(y, hy));
  CHECK_OK(msp_spmv(cpu, 1.0, A, x, 0.0, y));
  CHECK_OK(msp_vector_get(y, hy));
  CHECK(hy[0] == 7.0 && hy[1] == 0.0 && hy[2] == 10.0, "y = (%g, %g, %g), expected (7, 0, 10)",
        hy[0], hy[1], hy[2]);
  // y = 2*A*x - y: (14 - 7, 0 - 0, 20 - 10)
  CHECK_OK(msp_spmv(cpu, 2.0, A, x, -1.0, y));
  CHECK_OK(msp_vector_get(y, hy));
  CHECK(hy[0] == 7.0 && hy[1] == 0.0 && hy[2] == 10.0, "y = (%g, %g, %g), expected (7, 0, 10)",
        hy[0], hy[1], hy[2]);
  // Duplicates are summed: (0,1) twice.
  int64_t rp2[] = {0, 3};
  int32_t ci2[] = {1, 0, 1};
  double va2[] = {0.5, 1.0, 0.25};
  msp_matrix D = NULL;
  CHECK_OK(msp_matrix_from_csr(cpu, 1, 2, rp2, ci2, va2, 0, &D));
  if (D) {
    int64_t orp[2];
    int32_t oci[2];
    double ova[2];
    CHECK(msp_matrix_nnz(D) == 2, "duplicates not merged: nnz %lld", (long long)msp_matrix_nnz(D));
    CHECK_OK(msp_matrix_get_csr(D, orp, oci, ova));
    CHECK(oci[0] == 0 && oci[1] == 1 && ova[0] == 1.0 && ova[1] == 0.75,
          "merged row: (%d %g) (%d %g)", oci[0], ova[0], oci[1], ova[1]);
  }
  msp_matrix_destroy(&D);
exit:
  msp_matrix_destroy(&A);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
}

static void shapes(void) {
  test_csr m;
  struct {
    int64_t rows, cols;
    double mean;
  } cases[] = {{0, 0, 0},   {5, 0, 0},      {0, 7, 0},     {10, 10, 0},    {1, 1, 1},
               {33, 31, 3}, {100, 1000, 5}, {1000, 17, 4}, {257, 257, 12}, {3000, 3000, 1.5}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char label[128];
    snprintf(label, sizeof label, "random %lldx%lld mean %.1f", (long long)cases[c].rows,
             (long long)cases[c].cols, cases[c].mean);
    CHECK(test_csr_random(&m, cases[c].rows, cases[c].cols, cases[c].mean, 100 + c) == 0,
          "generator");
    check_case(&m, label, 7 + c);
    test_csr_free(&m);
  }
  // Empty rows in a power-law matrix, and one very long row amid short ones.
  CHECK(test_csr_powerlaw(&m, 5000, 5000, 4000, 3) == 0, "generator");
  check_case(&m, "power-law 5000", 11);
  test_csr_free(&m);
  int64_t n = 20000;
  int64_t *len = NULL;
  (void)len;
  CHECK(test_csr_random(&m, n, n, 0.5, 5) == 0, "generator");
  test_csr_free(&m);
  // Single very long row: row 0 dense over 20000 columns, the rest at most 1 entry.
  m.rows = n;
  m.cols = n;
  m.rowptr = malloc((size_t)(n + 1) * sizeof *m.rowptr);
  m.colind = malloc((size_t)(2 * n) * sizeof *m.colind);
  m.val = malloc((size_t)(2 * n) * sizeof *m.val);
  m.rowptr[0] = 0;
  int64_t k = 0;
  for (int64_t j = 0; j < n; j++) {
    m.colind[k] = (int32_t)j;
    m.val[k++] = 1.0 / (double)(j + 1);
  }
  m.rowptr[1] = k;
  for (int64_t i = 1; i < n; i++) {
    if (i % 3) {
      m.colind[k] = (int32_t)(i * 7 % n);
      m.val[k++] = -0.5;
    }
    m.rowptr[i + 1] = k;
  }
  m.nnz = k;
  check_case(&m, "one long row", 13);
  test_csr_free(&m);
}

typedef struct {
  int count, failed_reads;
} coll_state;

static void one_matrix(const char *path, const char *name, void *user) {
  coll_state *s = user;
  msp_matrix A = NULL;
  msp_status st = msp_matrix_read_mtx(cpu, path, 0, &A);
  CHECK(st == MSP_SUCCESS, "%s: %s", name, msp_last_error());
  if (st != MSP_SUCCESS) {
    s->failed_reads++;
    return;
  }
  test_csr m;
  CHECK(test_csr_from_matrix(&m, A) == 0, "%s: copy", name);
  msp_matrix_destroy(&A);
  check_case(&m, name, 17);
  test_csr_free(&m);
  s->count++;
}

int main(void) {
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  hand_checked();
  shapes();
  if (!test_matrices_dir()) {
    printf("test_spmv: SKIPPED the collection part: ../shared/matrices not found "
           "(set MSP_MATRICES_DIR)\n");
  } else {
    coll_state s = {0, 0};
    int visited = test_for_each_matrix(0, one_matrix, &s);
    printf("test_spmv: %d real-valued matrices of the collection checked (CSR and COO)\n", s.count);
    CHECK(visited > 300 && s.count == visited, "%d of %d matrices checked", s.count, visited);
  }
  msp_context_destroy(&cpu);
  return msp_test_finish("test_spmv");
}

// cuda_csr.c: cross test of the CUDA CSR kernels (scalar, vector, merge, auto; every storage
// precision) against the CPU.
#include "internal.h"
#include "precision.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu, gpu;
static int quick; // env MSP_TEST_QUICK: small cases only (compute-sanitizer runs)

static const msp_kernel kernels[] = {MSP_KERNEL_SCALAR, MSP_KERNEL_VECTOR, MSP_KERNEL_MERGE,
                                     MSP_KERNEL_AUTO};

// y = alpha*A*x + beta*y0 with Ac on the CPU backend and with every CUDA kernel on Ag (the
// same matrix), compared row by row with the bound of STYLE.md section 7 taken over m (the
// values the products actually read); each CUDA kernel runs twice and must repeat its bits.
static void cross_pair(const test_csr *m, msp_matrix Ac, msp_matrix Ag, const char *label,
                       uint64_t seed) {
  static const double ab[][2] = {{1.0, 0.0}, {2.5, -0.5}, {-1.0, 1.0}};
  msp_vector xc = NULL, yc = NULL, xg = NULL, yg = NULL;
  msp_rng r = {seed};
  size_t nx = (size_t)(m->cols ? m->cols : 1), ny = (size_t)(m->rows ? m->rows : 1);
  double *hx = malloc(nx * sizeof *hx), *y0 = malloc(ny * sizeof *y0);
  double *nan_y = malloc(ny * sizeof *nan_y), *ref = malloc(ny * sizeof *ref);
  double *got = malloc(ny * sizeof *got), *again = malloc(ny * sizeof *again);
  CHECK(hx && y0 && nan_y && ref && got && again, "%s: host allocation", label);
  if (!hx || !y0 || !nan_y || !ref || !got || !again) goto exit;
  for (int64_t j = 0; j < m->cols; j++)
    hx[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
  for (int64_t i = 0; i < m->rows; i++) {
    y0[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
    nan_y[i] = NAN;
  }
  CHECK_OK(msp_vector_create(cpu, m->cols, &xc));
  CHECK_OK(msp_vector_create(cpu, m->rows, &yc));
  CHECK_OK(msp_vector_create(gpu, m->cols, &xg));
  CHECK_OK(msp_vector_create(gpu, m->rows, &yg));
  if (!xc || !yc || !xg || !yg) goto exit;
  CHECK_OK(msp_vector_set(xc, hx));
  CHECK_OK(msp_vector_set(xg, hx));
  for (size_t c = 0; c < sizeof ab / sizeof ab[0]; c++) {
    const double alpha = ab[c][0], beta = ab[c][1];
    // y must not be read when beta == 0: NaN there must not reach the result.
    const double *yin = beta == 0.0 ? nan_y : y0;
    CHECK_OK(msp_vector_set(yc, yin));
    CHECK_OK(msp_spmv(cpu, alpha, Ac, xc, beta, yc));
    CHECK_OK(msp_vector_get(yc, ref));
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
      char lab[512];
      snprintf(lab, sizeof lab, "%s kernel=%s alpha=%g beta=%g", label, msp_kernel_name(kernels[k]),
               alpha, beta);
      CHECK_OK(msp_matrix_set_kernel(Ag, kernels[k]));
      msp_kernel used = msp_matrix_kernel(Ag);
      CHECK(kernels[k] == MSP_KERNEL_AUTO ? used != MSP_KERNEL_AUTO : used == kernels[k],
            "%s: the matrix reports kernel %s", lab, msp_kernel_name(used));
      CHECK_OK(msp_vector_set(yg, yin));
      CHECK_OK(msp_spmv(gpu, alpha, Ag, xg, beta, yg));
      CHECK_OK(msp_vector_get(yg, got));
      CHECK(test_compare_rows(m, alpha, hx, beta, y0, got, ref, lab) == 0, "%s", lab);
      // Determinism: the same kernel on the same input gives the same bits.
      CHECK_OK(msp_vector_set(yg, yin));
      CHECK_OK(msp_spmv(gpu, alpha, Ag, xg, beta, yg));
      CHECK_OK(msp_vector_get(yg, again));
      CHECK(m->rows == 0 || memcmp(got, again, (size_t)m->rows * sizeof *got) == 0,
            "%s: two runs differ in their bits", lab);
    }
  }
exit:
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

static void cross(const test_csr *m, const char *label, uint64_t seed) {
  msp_matrix Ac = NULL, Ag = NULL;
  CHECK_OK(test_csr_to_matrix(m, cpu, &Ac));
  CHECK_OK(test_csr_to_matrix(m, gpu, &Ag));
  if (Ac && Ag) cross_pair(m, Ac, Ag, label, seed);
  msp_matrix_destroy(&Ac);
  msp_matrix_destroy(&Ag);
}

// CSR with values stored in every other precision (spmv_prec): both backends read the same
// encoded values through the shared accessors, so the bound is taken over the decoded values.
static void precisions(const test_csr *m, const char *label, uint64_t seed) {
  static const msp_precision precs[] = {
#define PREC_(name, tag, bytes) MSP_PRECISION_##name,
      MSP_PRECISION_LIST(PREC_)
#undef PREC_
  };
  msp_matrix Ac = NULL, Ag = NULL;
  double *dec = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *dec);
  CHECK(dec != NULL, "%s: allocation", label);
  CHECK_OK(test_csr_to_matrix(m, cpu, &Ac));
  CHECK_OK(test_csr_to_matrix(m, gpu, &Ag));
  if (!dec || !Ac || !Ag) goto exit;
  for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++) {
    if (precs[p] == MSP_PRECISION_F64) continue;
    const int cpms = precs[p] == MSP_PRECISION_CPMS2 || precs[p] == MSP_PRECISION_CPMS4;
    for (int segs = 0; segs <= (cpms ? 1 : 0); segs++) {
      msp_matrix Bc = NULL, Bg = NULL;
      msp_convert_options o = msp_convert_options_default();
      char lab[256];
      o.format = MSP_FORMAT_CSR;
      o.precision = precs[p];
      o.cpms_segments = segs;
      snprintf(lab, sizeof lab, "%s %s%s", label, msp_precision_name(precs[p]),
               segs ? " read with 1 segment" : "");
      CHECK_OK(msp_matrix_convert(cpu, Ac, &o, &Bc));
      CHECK_OK(msp_matrix_convert(gpu, Ag, &o, &Bg));
      if (Bc && Bg && Bc->pval) {
        test_csr d = *m; // the same pattern, with the values the kernels read
        msp__prec_decode(Bc->pval, segs, dec);
        d.val = dec;
        cross_pair(&d, Bc, Bg, lab, seed + p);
      } else {
        CHECK(!Bc || Bc->pval, "%s: no encoded values", lab);
      }
      msp_matrix_destroy(&Bc);
      msp_matrix_destroy(&Bg);
    }
  }
exit:
  msp_matrix_destroy(&Ac);
  msp_matrix_destroy(&Ag);
  free(dec);
}

static void random_case(int64_t rows, int64_t cols, double mean, uint64_t seed) {
  test_csr m;
  char label[128];
  snprintf(label, sizeof label, "random %lldx%lld mean %g", (long long)rows, (long long)cols, mean);
  CHECK(test_csr_random(&m, rows, cols, mean, seed) == 0, "%s: generator", label);
  cross(&m, label, seed + 1);
  test_csr_free(&m);
}

// Build rows from explicit lengths, columns spread over the row (distinct, sorted).
static int from_lengths(test_csr *m, int64_t rows, int64_t cols, const int64_t *len,
                        uint64_t seed) {
  msp_rng r = {seed};
  memset(m, 0, sizeof *m);
  m->rows = rows;
  m->cols = cols;
  m->rowptr = malloc((size_t)(rows + 1) * sizeof *m->rowptr);
  if (!m->rowptr) return -1;
  m->rowptr[0] = 0;
  for (int64_t i = 0; i < rows; i++)
    m->rowptr[i + 1] = m->rowptr[i] + (len[i] < cols ? len[i] : cols);
  m->nnz = m->rowptr[rows];
  m->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->val);
  if (!m->colind || !m->val) return -1;
  for (int64_t i = 0; i < rows; i++) {
    int64_t b = m->rowptr[i], l = m->rowptr[i + 1] - b;
    int64_t shift = l < cols ? msp_rng_range(&r, cols - l + 1) : 0;
    for (int64_t k = 0; k < l; k++) {
      // Evenly spaced distinct columns starting at a random shift.
      m->colind[b + k] = (int32_t)(shift + k * ((cols - shift) / (l ? l : 1)));
      m->val[b + k] = 2.0 * msp_rng_uniform(&r) - 1.0;
    }
  }
  return 0;
}

static void structured_cases(void) {
  test_csr m;
  int64_t *len = NULL;

  // Empty rows: every other row empty, the rest of length 1..40 (spans every vector group).
  {
    const int64_t n = 5000;
    len = malloc((size_t)n * sizeof *len);
    CHECK(len != NULL, "allocation");
    if (!len) return;
    for (int64_t i = 0; i < n; i++)
      len[i] = i % 2 ? 0 : 1 + i % 40;
    CHECK(from_lengths(&m, n, n, len, 21) == 0, "generator");
    cross(&m, "alternate empty rows", 22);
    test_csr_free(&m);
    free(len);
    len = NULL;
  }
  // One dense row (all 20000 columns) amid rows of at most one entry.
  {
    const int64_t n = 20000;
    len = malloc((size_t)n * sizeof *len);
    CHECK(len != NULL, "allocation");
    if (!len) return;
    for (int64_t i = 0; i < n; i++)
      len[i] = i == n / 3 ? n : i % 3 == 0;
    CHECK(from_lengths(&m, n, n, len, 23) == 0, "generator");
    cross(&m, "one dense row", 24);
    test_csr_free(&m);
    free(len);
    len = NULL;
  }
  // Row lengths that are exact multiples and near-multiples of the warp and of merge tiles.
  {
    const int64_t n = 600;
    static const int64_t pattern[] = {32, 31, 33, 1024, 1023, 1025, 0, 2048, 64, 1};
    len = malloc((size_t)n * sizeof *len);
    CHECK(len != NULL, "allocation");
    if (!len) return;
    for (int64_t i = 0; i < n; i++)
      len[i] = pattern[i % (int64_t)(sizeof pattern / sizeof pattern[0])];
    CHECK(from_lengths(&m, n, 4096, len, 25) == 0, "generator");
    cross(&m, "tile-sized rows", 26);
    test_csr_free(&m);
    free(len);
    len = NULL;
  }
  // A row of 10^6 nonzeros next to 10^6 empty rows: merge-path must balance it.
  if (!quick) {
    const int64_t n = 1000000;
    len = calloc((size_t)(n + 1), sizeof *len);
    CHECK(len != NULL, "allocation");
    if (!len) return;
    len[n / 2] = n;
    CHECK(from_lengths(&m, n + 1, n, len, 27) == 0, "generator");
    cross(&m, "10^6-nonzero row among 10^6 empty rows", 28);
    test_csr_free(&m);
    free(len);
    len = NULL;
  }
}

static void shapes(void) {
  test_csr m;
  // Square sizes that are not multiples of 32, and means that select each vector group size.
  static const int64_t sizes[] = {1, 31, 33, 1000};
  static const double means[] = {0.5, 1.5, 3, 6, 12, 24, 40};
  uint64_t seed = 100;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t k = 0; k < sizeof means / sizeof means[0]; k++)
      random_case(sizes[s], sizes[s], means[k], seed++);
  // Rectangular: tall and wide.
  random_case(1000, 17, 4, seed++);
  random_case(3001, 100, 30, seed++);
  random_case(17, 5000, 300, seed++);
  random_case(100, 1000, 5, seed++);
  random_case(33, 100000, 2000, seed++);
  // nnz = 0, 0 x 0, n x 0, 0 x n.
  random_case(10, 10, 0, seed++);
  random_case(0, 0, 0, seed++);
  random_case(5, 0, 0, seed++);
  random_case(0, 7, 0, seed++);
  random_case(1000, 1000, 0, seed++);
  // Larger uniform random and power-law matrices (merge tiles, many vector blocks).
  random_case(20000, 20000, 8, seed++);
  CHECK(test_csr_powerlaw(&m, 5000, 5000, 4000, 3) == 0, "generator");
  cross(&m, "power-law 5000", 31);
  precisions(&m, "power-law 5000", 33);
  test_csr_free(&m);
  CHECK(test_csr_random(&m, 1000, 700, 12, 34) == 0, "generator");
  precisions(&m, "random 1000x700 mean 12", 35);
  test_csr_free(&m);
  CHECK(test_csr_random(&m, 33, 33, 0, 36) == 0, "generator");
  precisions(&m, "random 33x33 nnz 0", 37);
  test_csr_free(&m);
  if (!quick) {
    random_case(300000, 300000, 16, seed++);
    random_case(2000, 20000, 700, seed++);
    CHECK(test_csr_powerlaw(&m, 200000, 200000, 100000, 5) == 0, "generator");
    cross(&m, "power-law 200000", 32);
    test_csr_free(&m);
  }
}

typedef struct {
  int count, failed_reads;
} coll_state;

static void one_matrix(const char *path, const char *name, void *user) {
  coll_state *s = user;
  msp_matrix A = NULL;
  test_csr m;
  msp_status st = msp_matrix_read_mtx(cpu, path, 0, &A);
  CHECK(st == MSP_SUCCESS, "%s: %s", name, msp_last_error());
  if (st != MSP_SUCCESS) {
    s->failed_reads++;
    return;
  }
  int rc = test_csr_from_matrix(&m, A);
  CHECK(rc == 0, "%s: copy", name);
  msp_matrix_destroy(&A);
  if (rc == 0) cross(&m, name, 17);
  test_csr_free(&m);
  s->count++;
}

int main(void) {
  const char *q = getenv("MSP_TEST_QUICK");
  quick = q && *q;
  int rc_ = test_cuda_context("cuda_csr", &gpu);
  if (rc_ >= 0) return rc_;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  if (cpu) {
    shapes();
    structured_cases();
    if (!test_matrices_dir()) {
      printf("cuda_csr: SKIPPED the collection part: ../shared/matrices not found "
             "(set MSP_MATRICES_DIR)\n");
    } else {
      coll_state s = {0, 0};
      int visited = test_for_each_matrix(quick ? 200000 : 0, one_matrix, &s);
      printf("cuda_csr: %d matrices of the collection checked%s\n", s.count,
             quick ? " (MSP_TEST_QUICK: nnz <= 200000)" : "");
      // Every matrix visited (the sanitizer runs visit a capped subset) must have been checked.
      CHECK(visited > 0 && s.count == visited, "%d of %d matrices checked", s.count, visited);
    }
  }
  msp_context_destroy(&cpu);
  msp_context_destroy(&gpu);
  return msp_test_finish("cuda_csr");
}

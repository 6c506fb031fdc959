// test_generate.c: built-in matrix generators: hand-checked small instances, invariants,
// determinism, bad specs.
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static msp_context ctx;

// The CSR of a generated matrix, copied out (NULL arrays when generation failed).
typedef struct {
  int64_t rows, cols, nnz;
  int64_t *rp;
  int32_t *ci;
  double *va;
} csr_t;

static void csr_free(csr_t *m) {
  free(m->rp);
  free(m->ci);
  free(m->va);
  memset(m, 0, sizeof(*m));
}

static int gen(const char *spec, csr_t *m) {
  msp_matrix A = NULL;
  memset(m, 0, sizeof(*m));
  msp_status st = msp_matrix_generate(ctx, spec, &A);
  CHECK(st == MSP_SUCCESS, "generate %s: %s (%s)", spec, msp_status_name(st), msp_last_error());
  if (st != MSP_SUCCESS) return 0;
  m->rows = msp_matrix_rows(A);
  m->cols = msp_matrix_cols(A);
  m->nnz = msp_matrix_nnz(A);
  m->rp = malloc((size_t)(m->rows + 1) * sizeof(int64_t));
  m->ci = malloc((size_t)(m->nnz > 0 ? m->nnz : 1) * sizeof(int32_t));
  m->va = malloc((size_t)(m->nnz > 0 ? m->nnz : 1) * sizeof(double));
  int ok = m->rp && m->ci && m->va;
  CHECK(ok, "out of host memory copying %s", spec);
  if (ok) CHECK_OK(msp_matrix_get_csr(A, m->rp, m->ci, m->va));
  msp_matrix_destroy(&A);
  if (!ok) csr_free(m);
  return ok;
}

// Structural invariants every generator promises: rowptr from 0 to nnz, non-decreasing; columns
// in range and strictly increasing within a row (sorted, no duplicates); values finite.
static void check_csr(const char *spec, const csr_t *m) {
  int64_t bad = 0;
  CHECK(m->rp[0] == 0, "%s: rowptr[0] = %lld", spec, (long long)m->rp[0]);
  CHECK(m->rp[m->rows] == m->nnz, "%s: rowptr[rows] = %lld, nnz = %lld", spec,
        (long long)m->rp[m->rows], (long long)m->nnz);
  for (int64_t i = 0; i < m->rows && bad < 5; i++) {
    if (m->rp[i + 1] < m->rp[i]) {
      CHECK(0, "%s: rowptr decreases at row %lld", spec, (long long)i);
      bad++;
      continue;
    }
    for (int64_t k = m->rp[i]; k < m->rp[i + 1]; k++) {
      int okc = m->ci[k] >= 0 && m->ci[k] < m->cols && (k == m->rp[i] || m->ci[k] > m->ci[k - 1]);
      int okv = isfinite(m->va[k]);
      if (!okc || !okv) {
        CHECK(0,
              "%s: row %lld entry %lld: column %d value %g (unsorted, duplicate, out of range "
              "or not finite)",
              spec, (long long)i, (long long)(k - m->rp[i]), m->ci[k], m->va[k]);
        bad++;
        break;
      }
    }
  }
}

static double entry(const csr_t *m, int64_t i, int64_t j) {
  for (int64_t k = m->rp[i]; k < m->rp[i + 1]; k++)
    if (m->ci[k] == j) return m->va[k];
  return 0.0;
}

static void test_laplace2d(void) {
  // 3 x 3 grid, row r*3+c: the hand-written pattern of the 5-point Laplacian.
  static const int64_t rp[] = {0, 3, 7, 10, 14, 19, 23, 26, 30, 33};
  static const int32_t ci[] = {0, 1, 3, 0, 1, 2, 4, 1, 2, 5, 0, 3, 4, 6, 1, 3, 4,
                               5, 7, 2, 4, 5, 8, 3, 6, 7, 4, 6, 7, 8, 5, 7, 8};
  csr_t m;
  if (!gen("laplace2d:3", &m)) return;
  check_csr("laplace2d:3", &m);
  CHECK(m.rows == 9 && m.cols == 9 && m.nnz == 33, "laplace2d:3 is %lldx%lld with %lld nnz",
        (long long)m.rows, (long long)m.cols, (long long)m.nnz);
  if (m.nnz == 33) {
    for (int i = 0; i <= 9; i++)
      CHECK(m.rp[i] == rp[i], "laplace2d:3 rowptr[%d] = %lld, want %lld", i, (long long)m.rp[i],
            (long long)rp[i]);
    for (int64_t i = 0; i < 9; i++)
      for (int64_t k = rp[i]; k < rp[i + 1]; k++) {
        double want = (ci[k] == i) ? 4.0 : -1.0;
        CHECK(m.ci[k] == ci[k] && m.va[k] == want,
              "laplace2d:3 row %lld entry %lld: (%d, %g), want (%d, %g)", (long long)i,
              (long long)(k - rp[i]), m.ci[k], m.va[k], ci[k], want);
      }
  }
  csr_free(&m);

  if (!gen("laplace2d:1", &m)) return;
  CHECK(m.rows == 1 && m.nnz == 1 && m.va[0] == 4.0, "laplace2d:1 is not [4]");
  csr_free(&m);

  // 5 N^2 - 4 N entries for any N.
  if (!gen("laplace2d:57", &m)) return;
  check_csr("laplace2d:57", &m);
  CHECK(m.nnz == 5 * 57 * 57 - 4 * 57, "laplace2d:57 nnz %lld", (long long)m.nnz);
  csr_free(&m);
}

static void test_stencil27(void) {
  csr_t m;
  if (!gen("stencil27:3", &m)) return;
  check_csr("stencil27:3", &m);
  CHECK(m.rows == 27 && m.cols == 27, "stencil27:3 is %lldx%lld", (long long)m.rows,
        (long long)m.cols);
  // Row length = product over the axes of (3 at an interior coordinate, 2 on the boundary):
  // 8 corners of 8, 12 edge centres of 12, 6 face centres of 18, the centre of 27.
  int hist[28] = {0};
  for (int64_t i = 0; i < 27 && m.rows == 27; i++) {
    int64_t x = i % 3, y = (i / 3) % 3, z = i / 9;
    int64_t want = (x == 1 ? 3 : 2) * (y == 1 ? 3 : 2) * (z == 1 ? 3 : 2);
    int64_t len = m.rp[i + 1] - m.rp[i];
    CHECK(len == want, "stencil27:3 row %lld has %lld entries, want %lld", (long long)i,
          (long long)len, (long long)want);
    if (len >= 0 && len <= 27) hist[len]++;
    // Every neighbour (|dx|,|dy|,|dz| <= 1) is present.
    for (int dz = -1; dz <= 1; dz++)
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
          if (x + dx < 0 || x + dx > 2 || y + dy < 0 || y + dy > 2 || z + dz < 0 || z + dz > 2)
            continue;
          int64_t j = i + dz * 9 + dy * 3 + dx;
          CHECK(entry(&m, i, j) != 0.0, "stencil27:3 (%lld, %lld) missing", (long long)i,
                (long long)j);
        }
  }
  CHECK(hist[8] == 8 && hist[12] == 12 && hist[18] == 6 && hist[27] == 1,
        "stencil27:3 row-length histogram 8:%d 12:%d 18:%d 27:%d", hist[8], hist[12], hist[18],
        hist[27]);
  CHECK(m.nnz == 8 * 8 + 12 * 12 + 6 * 18 + 27, "stencil27:3 nnz %lld", (long long)m.nnz);
  csr_free(&m);

  // Values: symmetric, off-diagonals negative and not all equal, diagonal = 1 + sum |off|.
  if (!gen("stencil27:9", &m)) return;
  check_csr("stencil27:9", &m);
  double omin = 1e300, omax = -1e300;
  int64_t asym = 0, undom = 0;
  for (int64_t i = 0; i < m.rows; i++) {
    double off = 0.0, diag = 0.0;
    for (int64_t k = m.rp[i]; k < m.rp[i + 1]; k++) {
      if (m.ci[k] == i) {
        diag = m.va[k];
        continue;
      }
      off += fabs(m.va[k]);
      if (m.va[k] < omin) omin = m.va[k];
      if (m.va[k] > omax) omax = m.va[k];
      if (entry(&m, m.ci[k], i) != m.va[k]) asym++;
    }
    // The generator sets the diagonal to exactly this sum + 1 (same summation order).
    if (!(diag > off)) undom++;
  }
  CHECK(asym == 0, "stencil27:9: %lld entries without an equal transpose entry", (long long)asym);
  CHECK(undom == 0, "stencil27:9: %lld rows not strictly diagonally dominant", (long long)undom);
  CHECK(omax < 0.0 && omin < omax,
        "stencil27:9 off-diagonals range [%g, %g]: want negative and varying", omin, omax);
  csr_free(&m);
}

static void test_banded(void) {
  csr_t m;
  // WIDTH 4: one entry left of the diagonal, two right (even widths lean right), clipped.
  static const int64_t want_len[10] = {3, 4, 4, 4, 4, 4, 4, 4, 3, 2};
  if (!gen("banded:10:4", &m)) return;
  check_csr("banded:10:4", &m);
  for (int64_t i = 0; i < 10 && m.rows == 10; i++) {
    int64_t len = m.rp[i + 1] - m.rp[i];
    int64_t first = i > 0 ? i - 1 : 0;
    CHECK(len == want_len[i] && m.ci[m.rp[i]] == first,
          "banded:10:4 row %lld: %lld entries from column %d, want %lld from %lld", (long long)i,
          (long long)len, m.ci[m.rp[i]], (long long)want_len[i], (long long)first);
    CHECK(entry(&m, i, i) == 4.0, "banded:10:4 diagonal of row %lld is %g, want 4", (long long)i,
          entry(&m, i, i));
  }
  csr_free(&m);
  // Odd width: symmetric around the diagonal.
  if (!gen("banded:7:3", &m)) return;
  check_csr("banded:7:3", &m);
  CHECK(m.nnz == 3 * 7 - 2, "banded:7:3 nnz %lld, want 19", (long long)m.nnz);
  csr_free(&m);
  // A band wider than the matrix is the dense matrix.
  if (!gen("banded:5:64", &m)) return;
  check_csr("banded:5:64", &m);
  CHECK(m.nnz == 25, "banded:5:64 nnz %lld, want 25", (long long)m.nnz);
  csr_free(&m);
  // banded:1000:64: 64 per row away from the edges, exact total 64*1000 - 31*32/2 - 32*33/2.
  if (!gen("banded:1000:64", &m)) return;
  check_csr("banded:1000:64", &m);
  CHECK(m.nnz == 64 * 1000 - 31 * 32 / 2 - 32 * 33 / 2, "banded:1000:64 nnz %lld",
        (long long)m.nnz);
  CHECK(m.rp[501] - m.rp[500] == 64, "banded:1000:64 row 500 has %lld",
        (long long)(m.rp[501] - m.rp[500]));
  csr_free(&m);
}

static void test_random(void) {
  csr_t m;
  if (!gen("random:1000:16", &m)) return;
  check_csr("random:1000:16", &m);
  CHECK(m.rows == 1000 && m.cols == 1000 && m.nnz == 16000,
        "random:1000:16 is %lldx%lld with %lld nnz", (long long)m.rows, (long long)m.cols,
        (long long)m.nnz);
  for (int64_t i = 0; i < m.rows; i++)
    if (m.rp[i + 1] - m.rp[i] != 16) {
      CHECK(0, "random:1000:16 row %lld has %lld entries", (long long)i,
            (long long)(m.rp[i + 1] - m.rp[i]));
      break;
    }
  double vmin = 1, vmax = -1;
  for (int64_t k = 0; k < m.nnz; k++) {
    if (m.va[k] < vmin) vmin = m.va[k];
    if (m.va[k] > vmax) vmax = m.va[k];
  }
  CHECK(vmin >= -1.0 && vmax < 1.0 && vmin < -0.9 && vmax > 0.9,
        "random:1000:16 values span [%g, %g]", vmin, vmax);
  csr_free(&m);
  // Dense rows (PER_ROW > ROWS/2) take the selection-sampling path; full rows are 0..n-1.
  if (!gen("random:10:8", &m)) return;
  check_csr("random:10:8", &m);
  CHECK(m.nnz == 80, "random:10:8 nnz %lld", (long long)m.nnz);
  csr_free(&m);
  if (!gen("random:10:10", &m)) return;
  check_csr("random:10:10", &m);
  CHECK(m.nnz == 100, "random:10:10 nnz %lld", (long long)m.nnz);
  csr_free(&m);
  if (!gen("random:10:0", &m)) return;
  CHECK(m.nnz == 0 && m.rp[10] == 0, "random:10:0 nnz %lld", (long long)m.nnz);
  csr_free(&m);
}

static void test_rmat(void) {
  csr_t m;
  if (!gen("rmat:12:8", &m)) return;
  check_csr("rmat:12:8", &m); // sorted and without duplicates
  CHECK(m.rows == 4096 && m.cols == 4096, "rmat:12:8 is %lldx%lld", (long long)m.rows,
        (long long)m.cols);
  // Duplicates were merged, so fewer than the 8 * 4096 generated edges remain, but most do.
  CHECK(m.nnz < 8 * 4096 && m.nnz > 4 * 4096, "rmat:12:8 nnz %lld", (long long)m.nnz);
  // a + b = 0.76 of the edges land in the top half: row 0 is the longest, far above the mean.
  int64_t maxlen = 0, top = m.rp[2048];
  for (int64_t i = 0; i < m.rows; i++)
    if (m.rp[i + 1] - m.rp[i] > maxlen) maxlen = m.rp[i + 1] - m.rp[i];
  CHECK(maxlen > 20 * (m.nnz / m.rows), "rmat:12:8 longest row %lld vs mean %lld: not skewed",
        (long long)maxlen, (long long)(m.nnz / m.rows));
  CHECK(top > m.nnz / 2, "rmat:12:8 top half holds %lld of %lld", (long long)top, (long long)m.nnz);
  double vmin = 1, vmax = -1;
  for (int64_t k = 0; k < m.nnz; k++) {
    if (m.va[k] < vmin) vmin = m.va[k];
    if (m.va[k] > vmax) vmax = m.va[k];
  }
  CHECK(vmin >= -1.0 && vmax < 1.0, "rmat:12:8 values outside [-1, 1): [%g, %g]", vmin, vmax);
  csr_free(&m);
}

static void test_powerlaw(void) {
  csr_t m;
  if (!gen("powerlaw:20000:8", &m)) return;
  check_csr("powerlaw:20000:8", &m);
  int64_t maxlen = 0, empty = 0;
  for (int64_t i = 0; i < m.rows; i++) {
    int64_t len = m.rp[i + 1] - m.rp[i];
    if (len > maxlen) maxlen = len;
    if (len == 0) empty++;
  }
  double mean = (double)m.nnz / (double)m.rows;
  // A Pareto tail with mean 8: the sample mean lands near 8 and the longest row far above it.
  CHECK(mean > 4.0 && mean < 16.0, "powerlaw:20000:8 mean row length %g", mean);
  CHECK((double)maxlen > 20.0 * mean, "powerlaw:20000:8 longest row %lld vs mean %g: not skewed",
        (long long)maxlen, mean);
  csr_free(&m);
}

static int same(const csr_t *a, const csr_t *b) {
  return a->rows == b->rows && a->cols == b->cols && a->nnz == b->nnz &&
         memcmp(a->rp, b->rp, (size_t)(a->rows + 1) * sizeof(int64_t)) == 0 &&
         memcmp(a->ci, b->ci, (size_t)a->nnz * sizeof(int32_t)) == 0 &&
         memcmp(a->va, b->va, (size_t)a->nnz * sizeof(double)) == 0;
}

static void test_determinism(void) {
  static const char *specs[] = {"laplace2d:40", "stencil27:11", "random:3000:7:5",
                                "rmat:11:6:9",  "banded:500:9", "powerlaw:5000:3:2"};
  for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
    csr_t a, b;
    if (!gen(specs[s], &a)) continue;
    check_csr(specs[s], &a);
#ifdef _OPENMP
    // The same spec on one thread: results must not depend on the thread count.
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    int okb = gen(specs[s], &b);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    if (okb) {
      CHECK(same(&a, &b), "%s differs between two generations (thread counts differ)", specs[s]);
      csr_free(&b);
    }
    csr_free(&a);
  }
  // Different seeds give different matrices; the default seed is a fixed one.
  csr_t a, b;
  if (gen("random:500:4:1", &a)) {
    if (gen("random:500:4:2", &b)) {
      CHECK(!same(&a, &b), "random:500:4 with seeds 1 and 2 are identical");
      csr_free(&b);
    }
    csr_free(&a);
  }
}

static void test_bad_specs(void) {
  static const char *bad[] = {"",
                              "laplace",
                              "laplace2d",
                              "laplace2d:",
                              "laplace2d:0",
                              "laplace2d:-3",
                              "laplace2d:3x",
                              "laplace2d:3:4",
                              "laplace2d:46341", // 46341^2 > INT32_MAX rows
                              "stencil27:1291",  // 1291^3 > INT32_MAX
                              "random:10",
                              "random:10:11",
                              "random:0:1",
                              "random:10:2:x",
                              "random:10:2:3:4",
                              "random:3000000000:2",
                              "rmat:31:16",
                              "rmat:0:16",
                              "rmat:10:0",
                              "banded:10:0",
                              "banded:10",
                              "powerlaw:10:0",
                              "powerlaw:10:20",
                              "powerlaw:10:nan",
                              "foo:3"};
  for (size_t s = 0; s < sizeof(bad) / sizeof(bad[0]); s++) {
    msp_matrix A = (msp_matrix)&A; // poisoned: must come back NULL
    CHECK_STATUS(msp_matrix_generate(ctx, bad[s], &A), MSP_ERR_INVALID_ARGUMENT);
    CHECK(A == NULL, "spec \"%s\": A not NULL after failure", bad[s]);
    CHECK(strlen(msp_last_error()) > 0, "spec \"%s\": empty error message", bad[s]);
  }
  // The message of a malformed spec lists the valid forms.
  msp_matrix A = NULL;
  CHECK_STATUS(msp_matrix_generate(ctx, "nonsense", &A), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "laplace2d:N") &&
            strstr(msp_last_error(), "rmat:SCALE:EDGE_FACTOR"),
        "message does not list the forms: %s", msp_last_error());
  CHECK_STATUS(msp_matrix_generate(ctx, "laplace2d:50000", &A), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "int32") != NULL, "overflow message does not say why: %s",
        msp_last_error());
  CHECK_STATUS(msp_matrix_generate(ctx, NULL, &A), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_matrix_generate(ctx, "laplace2d:3", NULL), MSP_ERR_INVALID_ARGUMENT);
}

// ---- allocation-failure injection: every failing allocation gives OUT_OF_MEMORY, no leak ------
static long live_blocks, alloc_calls, fail_at = -1;
static void *fi_malloc(size_t n) {
  if (fail_at >= 0 && alloc_calls++ == fail_at) return NULL;
  void *p = malloc(n);
  if (p) live_blocks++;
  return p;
}
static void *fi_realloc(void *p, size_t n) {
  if (fail_at >= 0 && alloc_calls++ == fail_at) return NULL;
  void *q = realloc(p, n);
  if (q && !p) live_blocks++;
  return q;
}
static void fi_free(void *p) {
  if (p) live_blocks--;
  free(p);
}

static void test_alloc_failures(void) {
  static const char *specs[] = {"laplace2d:4", "stencil27:3", "random:50:5",
                                "rmat:6:4",    "banded:40:5", "powerlaw:60:3"};
  msp_allocator fa = {fi_malloc, fi_realloc, fi_free};
  msp_context fctx = NULL;
  CHECK_OK(msp_set_allocator(&fa));
  fail_at = -1;
  if (msp_context_create(MSP_BACKEND_CPU, 0, &fctx) != MSP_SUCCESS) {
    CHECK(0, "CPU context with the counting allocator: %s", msp_last_error());
    msp_set_allocator(NULL);
    return;
  }
  for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
    int succeeded = 0;
    for (long k = 0; k < 1000 && !succeeded; k++) {
      msp_matrix A = NULL;
      long before = live_blocks;
      alloc_calls = 0;
      fail_at = k;
      msp_status st = msp_matrix_generate(fctx, specs[s], &A);
      fail_at = -1;
      if (st == MSP_SUCCESS) {
        succeeded = 1;
        msp_matrix_destroy(&A);
      } else {
        CHECK(st == MSP_ERR_OUT_OF_MEMORY, "%s with allocation %ld failing: %s (%s)", specs[s], k,
              msp_status_name(st), msp_last_error());
        CHECK(A == NULL, "%s with allocation %ld failing: A not NULL", specs[s], k);
      }
      CHECK(live_blocks == before, "%s with allocation %ld failing: %ld blocks leaked", specs[s], k,
            live_blocks - before);
    }
    CHECK(succeeded, "%s never succeeded under the counting allocator", specs[s]);
  }
  msp_context_destroy(&fctx);
  CHECK_OK(msp_set_allocator(NULL));
}

int main(void) {
  if (msp_context_create(MSP_BACKEND_CPU, 0, &ctx) != MSP_SUCCESS) {
    fprintf(stderr, "CPU context: %s\n", msp_last_error());
    return 1;
  }
  test_laplace2d();
  test_stencil27();
  test_banded();
  test_random();
  test_rmat();
  test_powerlaw();
  test_determinism();
  test_bad_specs();
  msp_context_destroy(&ctx);
  test_alloc_failures();
  return msp_test_finish("test_generate");
}

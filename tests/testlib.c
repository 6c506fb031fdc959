// testlib.c: checks, seeded generator, long-double oracle and matrix helpers for the tests.
#include "testlib.h"

#include "formats.h"
#include "internal.h"
#include "precision.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int msp_test_failures = 0;
int msp_test_checks = 0;

int msp_test_finish(const char *name) {
  printf("%s: %d checks, %d failed\n", name, msp_test_checks, msp_test_failures);
  return msp_test_failures ? 1 : 0;
}

int test_cuda_context(const char *name, msp_context *gpu) {
  msp_status st = msp_context_create(MSP_BACKEND_CUDA, 0, gpu);
  if (st == MSP_SUCCESS) return -1;
  if (st == MSP_ERR_NOT_BUILT) return msp_test_skip(name, "CUDA backend not built");
  if (st == MSP_ERR_NO_DEVICE) {
    char why[512];
    snprintf(why, sizeof why, "no CUDA device (%s)", msp_last_error());
    return msp_test_skip(name, why);
  }
  CHECK(st == MSP_SUCCESS, "msp_context_create(cuda): %s: %s", msp_status_name(st),
        msp_last_error());
  return msp_test_finish(name);
}

int msp_test_skip(const char *name, const char *why) {
  printf("%s: SKIPPED: %s\n", name, why);
  return MSP_TEST_SKIP;
}

uint64_t msp_rng_next(msp_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
double msp_rng_uniform(msp_rng *r) {
  return (double)(msp_rng_next(r) >> 11) * 0x1.0p-53;
}
int64_t msp_rng_range(msp_rng *r, int64_t n) {
  return n <= 0 ? 0 : (int64_t)(msp_rng_next(r) % (uint64_t)n);
}

void test_csr_free(test_csr *m) {
  free(m->rowptr);
  free(m->colind);
  free(m->val);
  memset(m, 0, sizeof *m);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

// Build a matrix with the given row lengths (clipped to cols), distinct sorted random columns.
static int build_with_lengths(test_csr *m, int64_t rows, int64_t cols, const int64_t *len,
                              msp_rng *r) {
  memset(m, 0, sizeof *m);
  m->rows = rows;
  m->cols = cols;
  m->rowptr = malloc((size_t)(rows + 1) * sizeof *m->rowptr);
  if (!m->rowptr) return -1;
  m->rowptr[0] = 0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t l = len[i] < cols ? len[i] : cols;
    m->rowptr[i + 1] = m->rowptr[i] + l;
  }
  m->nnz = m->rowptr[rows];
  m->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->val);
  if (!m->colind || !m->val) return -1;
  for (int64_t i = 0; i < rows; i++) {
    int64_t b = m->rowptr[i], l = m->rowptr[i + 1] - b;
    int32_t *c = m->colind + b;
    if (l > cols / 2) {
      // Dense-ish row: pick by a scan (reservoir-free selection).
      int64_t need = l;
      for (int64_t j = 0, o = 0; j < cols && need > 0; j++) {
        if ((double)msp_rng_range(r, cols - j) < (double)need) {
          c[o++] = (int32_t)j;
          need--;
        }
      }
    } else {
      for (int64_t k = 0; k < l; k++) {
        for (;;) {
          int32_t cand = (int32_t)msp_rng_range(r, cols);
          int dup = 0;
          for (int64_t q = 0; q < k; q++)
            dup |= c[q] == cand;
          if (!dup || l > 64) { // long rows: duplicates removed below after sorting
            c[k] = cand;
            break;
          }
        }
      }
      qsort(c, (size_t)l, sizeof *c, cmp_i32);
      for (int64_t k = 1; k < l; k++)
        if (c[k] <= c[k - 1]) c[k] = c[k - 1] + 1; // make distinct, may run past cols
      for (int64_t k = l - 1; k >= 0; k--) {       // pull back into range from the right
        int32_t limit = (int32_t)(cols - (l - k));
        if (c[k] > limit) c[k] = limit;
        if (k + 1 < l && c[k] >= c[k + 1]) c[k] = c[k + 1] - 1;
      }
    }
    for (int64_t k = 0; k < l; k++)
      m->val[b + k] = 2.0 * msp_rng_uniform(r) - 1.0;
  }
  return 0;
}

int test_csr_random(test_csr *m, int64_t rows, int64_t cols, double mean_len, uint64_t seed) {
  msp_rng r = {seed};
  int64_t *len = malloc((size_t)(rows ? rows : 1) * sizeof *len);
  if (!len) return -1;
  for (int64_t i = 0; i < rows; i++)
    len[i] = msp_rng_range(&r, (int64_t)(2 * mean_len) + 1);
  int rc = build_with_lengths(m, rows, cols, len, &r);
  free(len);
  return rc;
}

int test_csr_powerlaw(test_csr *m, int64_t rows, int64_t cols, int64_t max_len, uint64_t seed) {
  msp_rng r = {seed};
  int64_t *len = malloc((size_t)(rows ? rows : 1) * sizeof *len);
  if (!len) return -1;
  for (int64_t i = 0; i < rows; i++) {
    double u = msp_rng_uniform(&r);
    int64_t l = (int64_t)(1.0 / sqrt(1.0 - u + 1e-12)) - 1; // P(len >= k) ~ 1/k^2
    len[i] = l > max_len ? max_len : l;
  }
  int rc = build_with_lengths(m, rows, cols, len, &r);
  free(len);
  return rc;
}

int test_csr_from_matrix(test_csr *m, msp_matrix A) {
  memset(m, 0, sizeof *m);
  m->rows = msp_matrix_rows(A);
  m->cols = msp_matrix_cols(A);
  m->nnz = msp_matrix_nnz(A);
  m->rowptr = malloc((size_t)(m->rows + 1) * sizeof *m->rowptr);
  m->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->val);
  if (!m->rowptr || !m->colind || !m->val) return -1;
  return msp_matrix_get_csr(A, m->rowptr, m->colind, m->val) == MSP_SUCCESS ? 0 : -1;
}

msp_status test_csr_to_matrix(const test_csr *m, msp_context ctx, msp_matrix *A) {
  return msp_matrix_from_csr(ctx, m->rows, m->cols, m->rowptr, m->colind, m->val, 0, A);
}

msp_status test_spmv(msp_context c, msp_matrix A, const double *x, double *y) {
  msp_vector vx = NULL, vy = NULL;
  msp_status st = msp_vector_create(c, msp_matrix_cols(A), &vx);
  if (st == MSP_SUCCESS) st = msp_vector_create(c, msp_matrix_rows(A), &vy);
  if (st == MSP_SUCCESS) st = msp_vector_set(vx, x);
  if (st == MSP_SUCCESS) st = msp_spmv(c, 1.0, A, vx, 0.0, vy);
  if (st == MSP_SUCCESS) st = msp_vector_get(vy, y);
  msp_vector_destroy(&vx);
  msp_vector_destroy(&vy);
  return st;
}

void test_oracle_spmv(const test_csr *m, double alpha, const double *x, double beta,
                      const double *y0, double *y) {
  for (int64_t i = 0; i < m->rows; i++) {
    long double t = 0;
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
      t += (long double)m->val[k] * (long double)x[m->colind[k]];
    long double r = (long double)alpha * t;
    if (beta != 0.0) r += (long double)beta * (long double)y0[i];
    y[i] = (double)r;
  }
}

int64_t test_compare_rows(const test_csr *m, double alpha, const double *x, double beta,
                          const double *y0, const double *got, const double *ref,
                          const char *label) {
  int64_t bad = 0;
  const double eps = 0x1.0p-52;
  for (int64_t i = 0; i < m->rows; i++) {
    long double mag = 0;
    int64_t len = m->rowptr[i + 1] - m->rowptr[i];
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
      mag += fabsl((long double)alpha * m->val[k] * x[m->colind[k]]);
    if (beta != 0.0) mag += fabsl((long double)beta * y0[i]);
    double bound = 4.0 * eps * (double)(len + 2) * (double)mag;
    double err = fabs(got[i] - ref[i]);
    int ok = err <= bound || (isnan(got[i]) && isnan(ref[i])) || got[i] == ref[i];
    if (!ok) {
      if (bad < 5)
        fprintf(stderr, "%s: row %lld: got %.17g, expected %.17g (error %.3g > bound %.3g)\n",
                label, (long long)i, got[i], ref[i], err, bound);
      bad++;
    }
  }
  if (bad) fprintf(stderr, "%s: %lld rows outside the bound\n", label, (long long)bad);
  return bad;
}

double test_stored_value(msp_precision p, int segments, double v) {
  if (msp_prec_is_fixed(p)) return v;
  uint64_t buf = 0; // one stored value of every precision fits 8 bytes
  msp_acc a;
  memset(&a, 0, sizeof a);
  a.data = &buf;
  a.n = 1;
  a.prec = p;
  a.read_segments = msp__prec_segments(p);
  msp_acc_store_p(p, &a, 0, v);
  if (segments > 0 && segments < a.read_segments) a.read_segments = segments;
  return msp_acc_load_p(p, &a, 0);
}

int test_round_vector(msp_precision p, int64_t n, const double *in, double *out) {
  const int64_t nscales = n > 0 ? ((n - 1) >> MSP_VEC_FX_SHIFT) + 1 : 1;
  const int segs = msp__prec_segments(p);
  void *data = malloc((size_t)(n > 0 ? n : 1) * 8);
  double *scales = malloc((size_t)nscales * sizeof *scales);
  if (!data || !scales) {
    free(data);
    free(scales);
    return -1;
  }
  msp_acc a;
  memset(&a, 0, sizeof a);
  a.data = data;
  a.n = n;
  a.prec = p;
  a.scales = scales;
  a.scale_shift = MSP_VEC_FX_SHIFT;
  a.bank_shift = segs > 1 ? msp__cpms_bank_shift(segs, MSP_CPMS_DEFAULT_BANK_BYTES) : 0;
  a.read_segments = segs;
  for (int64_t b = 0; b < nscales; b++) {
    double m = 0.0;
    for (int64_t i = b * MSP_VEC_FX_BLOCK; i < n && i < (b + 1) * MSP_VEC_FX_BLOCK; i++)
      m = msp_absmax_step(m, in[i]);
    scales[b] = msp_prec_is_fixed(p) ? msp_fx_block_scale(p, m) : 0.0;
  }
  for (int64_t i = 0; i < n; i++)
    msp_acc_store_p(p, &a, i, in[i]);
  for (int64_t i = 0; i < n; i++)
    out[i] = msp_acc_load_p(p, &a, i);
  free(data);
  free(scales);
  return 0;
}

const char *test_matrices_dir(void) {
  static char buf[4096];
  const char *d = getenv("MSP_MATRICES_DIR");
  if (!d || !*d) return NULL;
  snprintf(buf, sizeof buf, "%s/INDEX.tsv", d);
  FILE *f = fopen(buf, "r");
  if (!f) return NULL;
  fclose(f);
  return d;
}

// Eligible matrices of INDEX.tsv (complex left out, nnz <= max_nnz when max_nnz > 0); with
// stride > 1 only every stride-th eligible one is visited. Returns the number visited.
static int scan_index(const char *dir, int64_t max_nnz, int stride, test_matrix_fn fn, void *user) {
  char path[4096], line[8192];
  snprintf(path, sizeof path, "%s/INDEX.tsv", dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int eligible = 0, count = 0;
  int first = 1;
  while (fgets(line, sizeof line, f)) {
    if (first) { // header
      first = 0;
      continue;
    }
    char name[1024], sym[64], field[64];
    long long rows, cols, nnz;
    if (sscanf(line, "%1023s %lld %lld %lld %63s %63s", name, &rows, &cols, &nnz, sym, field) != 6)
      continue;
    if (strcmp(field, "complex") == 0) continue;
    if (max_nnz > 0 && nnz > max_nnz) continue;
    if (eligible++ % stride) continue;
    if (fn) {
      snprintf(path, sizeof path, "%s/%s.mtx.gz", dir, name);
      fn(path, name, user);
    }
    count++;
  }
  fclose(f);
  return count;
}

// env MSP_TEST_MAX_NNZ lowers max_nnz and MSP_TEST_MAX_MATRICES caps the count (spread evenly
// over the collection): the compute-sanitizer runs use them to stay within minutes.
int test_for_each_matrix(int64_t max_nnz, test_matrix_fn fn, void *user) {
  return test_for_each_matrix_sample(max_nnz, 0, fn, user);
}

int test_for_each_matrix_sample(int64_t max_nnz, int count, test_matrix_fn fn, void *user) {
  const char *dir = test_matrices_dir();
  if (!dir) return 0;
  const char *e = getenv("MSP_TEST_MAX_NNZ");
  if (e && atoll(e) > 0 && (max_nnz <= 0 || atoll(e) < max_nnz)) max_nnz = atoll(e);
  int stride = 1;
  e = getenv("MSP_TEST_MAX_MATRICES");
  if (e && atoi(e) > 0) count = atoi(e);
  if (count > 0) {
    int total = scan_index(dir, max_nnz, 1, NULL, NULL);
    stride = (total + count - 1) / count;
    if (stride < 1) stride = 1;
    printf("test_for_each_matrix: at most %d matrices: every %d-th of %d\n", count, stride, total);
  }
  return scan_index(dir, max_nnz, stride, fn, user);
}

// The format's value arrays (its record's `values`, in the order they are encoded) are
// overwritten with the decoded values (k segments for CPMS) for the format's own to_csr, then
// restored from a copy: no switch over formats, so a new format needs no edit here.
int test_csr_decoded(msp_matrix B, int segments, test_csr *d) {
  memset(d, 0, sizeof *d);
  const msp__format_ops *ops =
      (unsigned)B->format < MSP_FORMAT_COUNT ? msp__format_table[B->format] : NULL;
  if (!ops || !ops->values || !B->pval) return -1;
  const double *part[MSP__FORMAT_VALUE_PARTS];
  int64_t len[MSP__FORMAT_VALUE_PARTS];
  const int parts = ops->values(B, part, len);
  const int64_t n = B->pval->n;
  int64_t total = 0;
  for (int k = 0; k < parts; k++)
    total += len[k];
  if (total != n) return -1; // the encoded array is the parts one after the other
  double *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
  double *save = malloc((size_t)(n > 0 ? n : 1) * sizeof *save);
  if (!buf || !save) {
    free(buf);
    free(save);
    return -1;
  }
  msp__prec_decode(B->pval, segments, buf);
  for (int64_t k = 0, at = 0; k < parts; at += len[k], k++) {
    if (!len[k]) continue;
    memcpy(save + at, part[k], (size_t)len[k] * sizeof *save);
    memcpy((double *)part[k], buf + at, (size_t)len[k] * sizeof *buf);
  }
  int64_t *rp = NULL;
  int32_t *ci = NULL;
  double *v = NULL;
  msp_status st = msp__format_to_csr(B, &rp, &ci, &v);
  for (int64_t k = 0, at = 0; k < parts; at += len[k], k++)
    if (len[k]) memcpy((double *)part[k], save + at, (size_t)len[k] * sizeof *save);
  free(buf);
  free(save);
  if (st != MSP_SUCCESS) return -1;
  return test_csr_take(B->rows, B->cols, rp, ci, v, d);
}

int test_csr_take(int64_t rows, int64_t cols, int64_t *rp, int32_t *ci, double *v, test_csr *d) {
  d->rows = rows;
  d->cols = cols;
  d->nnz = rp[rows];
  d->rowptr = malloc((size_t)(d->rows + 1) * sizeof *d->rowptr);
  d->colind = malloc((size_t)(d->nnz ? d->nnz : 1) * sizeof *d->colind);
  d->val = malloc((size_t)(d->nnz ? d->nnz : 1) * sizeof *d->val);
  int rc = d->rowptr && d->colind && d->val ? 0 : -1;
  if (rc == 0) {
    memcpy(d->rowptr, rp, (size_t)(d->rows + 1) * sizeof *rp);
    if (d->nnz) {
      memcpy(d->colind, ci, (size_t)d->nnz * sizeof *ci);
      memcpy(d->val, v, (size_t)d->nnz * sizeof *v);
    }
  }
  msp__free(rp);
  msp__free(ci);
  msp__free(v);
  return rc;
}

// ---- counting allocator ----------------------------------------------------------------------
test_alloc_counter test_alloc = {-1, 0, 0};

static void *counting_malloc(size_t n) {
  if (test_alloc.fail_at >= 0 && test_alloc.calls++ == test_alloc.fail_at) return NULL;
  void *p = malloc(n);
  if (p) test_alloc.live++;
  return p;
}
static void *counting_realloc(void *p, size_t n) {
  if (test_alloc.fail_at >= 0 && test_alloc.calls++ == test_alloc.fail_at) return NULL;
  void *q = realloc(p, n);
  if (q && !p) test_alloc.live++;
  return q;
}
static void counting_free(void *p) {
  if (p) test_alloc.live--;
  free(p);
}

msp_allocator test_counting_allocator(void) {
  msp_allocator a = {counting_malloc, counting_realloc, counting_free};
  return a;
}

// test_reliability.c: C API misuse, range honesty of stored results, sums of finite input that
// leave the finite range, the memory budget, early gzip errors and one context shared by threads.
#define _POSIX_C_SOURCE 200809L // mkdtemp, pthreads under -std=c11
#include "internal.h"
#include "testlib.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[512];

static int contains(const char *s, const char *part) {
  return s && strstr(s, part) != NULL;
}

static const char *write_file(const char *name, const void *data, size_t n) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return path;
  fwrite(data, 1, n, f);
  fclose(f);
  return path;
}

// ---- msp_choose_kernel without statistics -------------------------------------------------------
static void test_choose_kernel_null(void) {
  char why[128] = "unchanged";
  CHECK(msp_choose_kernel(NULL, NULL, 0) == MSP_KERNEL_AUTO, "NULL stats chose a kernel");
  CHECK(contains(msp_last_error(), "stats is NULL"), "message: %s", msp_last_error());
  CHECK(msp_choose_kernel(NULL, why, sizeof why) == MSP_KERNEL_AUTO, "NULL stats chose a kernel");
  CHECK(contains(why, "no kernel chosen"), "reason: %s", why);
}

// ---- handles before contexts: a destroyed matrix whose block was reused, objects of other
// contexts
static void test_handles_first(msp_context ctx) {
  msp_context other = NULL;
  msp_matrix A = NULL, A2 = NULL, G = NULL;
  msp_vector b = NULL, x = NULL, b2 = NULL, p = NULL, pers = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &other));
  CHECK_OK(msp_matrix_generate(ctx, "laplace2d:4", &A));
  CHECK_OK(msp_matrix_generate(other, "laplace2d:4", &A2));
  CHECK_OK(msp_vector_create(ctx, 16, &b));
  CHECK_OK(msp_vector_create(ctx, 16, &x));
  CHECK_OK(msp_vector_create(other, 16, &b2));
  CHECK_OK(msp_vector_fill(b, 1.0));
  CHECK_OK(msp_vector_fill(b2, 1.0));

  // Objects of another context (same backend and device) are refused, each named.
  CHECK_STATUS(msp_gmres(ctx, A2, b, x, NULL, NULL), MSP_ERR_INVALID_ARGUMENT);
  CHECK(contains(msp_last_error(), "msp_gmres: A belongs to another context"), "message: %s",
        msp_last_error());
  CHECK_STATUS(msp_gmres(ctx, A, b2, x, NULL, NULL), MSP_ERR_INVALID_ARGUMENT);
  CHECK(contains(msp_last_error(), "vector b belongs to another context"), "message: %s",
        msp_last_error());
  CHECK_STATUS(msp_gmres(ctx, A, b, x, NULL, NULL), MSP_SUCCESS);

  // A destroyed matrix whose block is reused by an allocation of the same size, filled with
  // bytes that are neither a magic number nor a valid context pointer: refused, never followed.
  // These cases read freed handles on purpose, which AddressSanitizer rightly reports: skipped
  // under it.
  msp_matrix stale = A;
  CHECK_OK(msp_matrix_destroy(&A));
  if (MSP_TEST_ASAN) {
    printf("test_reliability: stale-handle cases SKIPPED under AddressSanitizer\n");
    CHECK_OK(msp_vector_destroy(&b2));
    CHECK_OK(msp_matrix_generate(ctx, "laplace2d:4", &A));
  } else {
    void *reuse = malloc(sizeof(struct msp_matrix_s));
    if (reuse) memset(reuse, 0x5a, sizeof(struct msp_matrix_s));
    CHECK_STATUS(msp_gmres(ctx, stale, b, x, NULL, NULL), MSP_ERR_INVALID_ARGUMENT);
    CHECK(contains(msp_last_error(), "msp_gmres: A"), "message: %s", msp_last_error());
    CHECK_STATUS(msp_spmv(ctx, 1.0, stale, b, 0.0, x), MSP_ERR_INVALID_ARGUMENT);
    free(reuse);
    // The same for a vector.
    msp_vector stale_v = b2;
    CHECK_OK(msp_vector_destroy(&b2));
    void *reuse_v = malloc(sizeof(struct msp_vector_s));
    if (reuse_v) memset(reuse_v, 0x5a, sizeof(struct msp_vector_s));
    CHECK_OK(msp_matrix_generate(ctx, "laplace2d:4", &A));
    CHECK_STATUS(msp_gmres(ctx, A, stale_v, x, NULL, NULL), MSP_ERR_INVALID_ARGUMENT);
    CHECK(contains(msp_last_error(), "msp_gmres: b"), "message: %s", msp_last_error());
    free(reuse_v);
  }
  CHECK_STATUS(msp_gmres(NULL, A, b, x, NULL, NULL), MSP_ERR_INVALID_ARGUMENT);

  // PageRank: the personalisation too must be of the context passed.
  CHECK_OK(msp_matrix_generate(ctx, "rmat:6:4:1", &G));
  const int64_t n = msp_matrix_rows(G);
  CHECK_OK(msp_vector_create(ctx, n, &p));
  CHECK_OK(msp_vector_create(other, n, &pers));
  CHECK_OK(msp_vector_fill(pers, 1.0));
  msp_pagerank_options po = msp_pagerank_options_default();
  po.personalization = pers;
  CHECK_STATUS(msp_pagerank(ctx, G, &po, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  CHECK(contains(msp_last_error(), "personalization belongs to another context"), "message: %s",
        msp_last_error());
  msp_vector_destroy(&pers);
  CHECK_OK(msp_vector_create(ctx, n, &pers));
  CHECK_OK(msp_vector_fill(pers, 1.0));
  po.personalization = pers;
  CHECK_OK(msp_pagerank(ctx, G, &po, p, NULL));

  msp_vector_destroy(&pers);
  msp_vector_destroy(&p);
  msp_matrix_destroy(&G);
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&A2);
  msp_vector_destroy(&b);
  msp_vector_destroy(&x);
  CHECK_OK(msp_context_destroy(&other));
}

// ---- results that a reduced precision rounds to zero are counted and reported ----------------
// One case: a vector of precision `prec` written by `op`, expecting `flushed` nonzero results
// stored as 0 and `over` saturated.
static void expect_range(msp_vector v, int64_t n, int64_t over, int64_t flushed, const char *what) {
  double got[64];
  int64_t s = -1, f = -1;
  msp_status st = msp_vector_get(v, got);
  CHECK(st == (over + flushed ? MSP_ERR_RANGE : MSP_SUCCESS), "%s: get returned %s (%s)", what,
        msp_status_name(st), msp_last_error());
  CHECK_OK(msp_vector_range_info(v, &s, &f));
  CHECK(s == over && f == flushed, "%s: %lld saturated, %lld flushed; expected %lld and %lld", what,
        (long long)s, (long long)f, (long long)over, (long long)flushed);
  if (flushed) CHECK(contains(msp_last_error(), "stored as 0") || st != MSP_ERR_RANGE, "%s", what);
  // reported once: the next read is clean
  CHECK_OK(msp_vector_get(v, got));
  CHECK_OK(msp_vector_range_info(v, &s, &f));
  CHECK(s == 0 && f == 0, "%s: counts not reset (%lld, %lld)", what, (long long)s, (long long)f);
  (void)n;
}

static void test_flush_counted(msp_context ctx) {
  const msp_precision floats[3] = {MSP_PRECISION_F16, MSP_PRECISION_BF16, MSP_PRECISION_F32};
  const double tiny[3] = {1e-10, 1e-300, 1e-50}; // each below half the smallest subnormal
  for (int k = 0; k < 3; k++) {
    msp_vector v = NULL, w = NULL;
    char what[96];
    CHECK_OK(msp_vector_create_precision(ctx, 40, floats[k], &v));
    CHECK_OK(msp_vector_create_precision(ctx, 40, MSP_PRECISION_F64, &w));
    snprintf(what, sizeof what, "fill %s with %g", msp_precision_name(floats[k]), tiny[k]);
    CHECK_OK(msp_vector_fill(v, tiny[k]));
    expect_range(v, 40, 0, 40, what);
    snprintf(what, sizeof what, "scale a %s vector of ones by %g", msp_precision_name(floats[k]),
             tiny[k]);
    CHECK_OK(msp_vector_fill(v, 1.0));
    CHECK_OK(msp_scale(ctx, tiny[k], v));
    expect_range(v, 40, 0, 40, what);
    snprintf(what, sizeof what, "copy %g into %s", tiny[k], msp_precision_name(floats[k]));
    CHECK_OK(msp_vector_fill(w, tiny[k]));
    CHECK_OK(msp_copy(ctx, w, v));
    expect_range(v, 40, 0, 40, what);
    // zeros stay zeros, uncounted; values the precision holds are not counted either
    CHECK_OK(msp_vector_fill(v, 0.0));
    expect_range(v, 40, 0, 0, "fill with 0");
    CHECK_OK(msp_vector_fill(v, 0.5));
    expect_range(v, 40, 0, 0, "fill with 0.5");
    msp_vector_destroy(&v);
    msp_vector_destroy(&w);
  }
  // An SpMV into an f16 y: y = 1e-9 (the identity times 1e-9) flushes every entry.
  {
    msp_matrix I = NULL;
    msp_vector x = NULL, y = NULL;
    int64_t rp[5] = {0, 1, 2, 3, 4};
    int32_t ci[4] = {0, 1, 2, 3};
    double va[4] = {1e-9, 1e-9, 1.0, 1e9};
    CHECK_OK(msp_matrix_from_csr(ctx, 4, 4, rp, ci, va, 0, &I));
    CHECK_OK(msp_vector_create(ctx, 4, &x));
    CHECK_OK(msp_vector_create_precision(ctx, 4, MSP_PRECISION_F16, &y));
    CHECK_OK(msp_vector_fill(x, 1.0));
    CHECK_OK(msp_spmv(ctx, 1.0, I, x, 0.0, y));
    expect_range(y, 4, 1, 2, "spmv into f16 (1e-9, 1e-9, 1, 1e9)");
    msp_vector_destroy(&y);
    // fx16: 1e5 and 1 in one block of 32: the 1 is below half a unit of the block's scale
    CHECK_OK(msp_vector_create_precision(ctx, 4, MSP_PRECISION_FX16, &y));
    double vals[4] = {1e5, 1.0, 1.0, 0.0};
    msp_matrix D = NULL;
    CHECK_OK(msp_matrix_from_csr(ctx, 4, 4, rp, ci, vals, 0, &D));
    CHECK_OK(msp_spmv(ctx, 1.0, D, x, 0.0, y));
    expect_range(y, 4, 0, 2, "spmv into fx16 (1e5, 1, 1, 0)");
    msp_matrix_destroy(&D);
    msp_matrix_destroy(&I);
    msp_vector_destroy(&x);
    msp_vector_destroy(&y);
  }
  CHECK_STATUS(msp_vector_range_info(NULL, NULL, NULL), MSP_ERR_INVALID_ARGUMENT);
}

// ---- finite input that sums to Inf -------------------------------------------------------------
static void test_nonfinite_sums(msp_context ctx) {
  msp_matrix A = NULL;
  // duplicates in a general file
  const char dup[] = "%%MatrixMarket matrix coordinate real general\n"
                     "2 2 3\n"
                     "1 1 1e308\n"
                     "1 1 1e308\n"
                     "2 2 1\n";
  const char *path = write_file("dup.mtx", dup, sizeof dup - 1);
  CHECK_STATUS(msp_matrix_read_mtx(ctx, path, 0, &A), MSP_ERR_NONFINITE);
  CHECK(A == NULL, "a matrix was returned");
  CHECK(contains(msp_last_error(), "dup.mtx") && contains(msp_last_error(), "row 1, column 1") &&
            contains(msp_last_error(), "line 3") && contains(msp_last_error(), "line 4"),
        "message: %s", msp_last_error());
  CHECK_OK(msp_matrix_read_mtx(ctx, path, MSP_READ_ALLOW_NONFINITE, &A)); // the opt-in
  msp_matrix_destroy(&A);
  // a symmetric file whose mirror meets a stored entry
  const char sym[] = "%%MatrixMarket matrix coordinate real symmetric\n"
                     "2 2 3\n"
                     "2 1 1e308\n"
                     "% a comment between entries\n"
                     "1 2 1e308\n"
                     "2 2 1\n";
  path = write_file("sym.mtx", sym, sizeof sym - 1);
  CHECK_STATUS(msp_matrix_read_mtx(ctx, path, 0, &A), MSP_ERR_NONFINITE);
  CHECK(contains(msp_last_error(), "mirror of entry") && contains(msp_last_error(), "sym.mtx"),
        "message: %s", msp_last_error());
  // skew-symmetric mirrors with the opposite sign: -1e308 and -1e308 sum to -Inf
  const char skew[] = "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                      "2 2 2\n"
                      "2 1 1e308\n"
                      "1 2 -1e308\n";
  path = write_file("skew.mtx", skew, sizeof skew - 1);
  CHECK_STATUS(msp_matrix_read_mtx(ctx, path, 0, &A), MSP_ERR_NONFINITE);
  // sums that stay finite are fine
  const char fine[] = "%%MatrixMarket matrix coordinate real general\n"
                      "1 1 2\n"
                      "1 1 1e308\n"
                      "1 1 -1e308\n";
  path = write_file("fine.mtx", fine, sizeof fine - 1);
  CHECK_OK(msp_matrix_read_mtx(ctx, path, 0, &A));
  msp_matrix_destroy(&A);
  // msp_matrix_from_csr names the caller's entries
  int64_t rp[3] = {0, 2, 3};
  int32_t ci[3] = {1, 1, 0};
  double va[3] = {1.5e308, 1.5e308, 2.0};
  CHECK_STATUS(msp_matrix_from_csr(ctx, 2, 2, rp, ci, va, 0, &A), MSP_ERR_NONFINITE);
  CHECK(A == NULL, "a matrix was returned");
  CHECK(contains(msp_last_error(), "values[0]") && contains(msp_last_error(), "values[1]") &&
            contains(msp_last_error(), "row 0, column 1"),
        "message: %s", msp_last_error());
  CHECK_OK(msp_matrix_from_csr(ctx, 2, 2, rp, ci, va, MSP_READ_ALLOW_NONFINITE, &A));
  msp_matrix_destroy(&A);
}

// ---- the memory budget holds for the whole operation --------------------------------------------
static size_t peak_bytes, live_bytes;
static void *count_malloc(size_t n) {
  size_t *p = malloc(n + 16);
  if (!p) return NULL;
  p[0] = n;
  live_bytes += n;
  if (live_bytes > peak_bytes) peak_bytes = live_bytes;
  return (char *)p + 16;
}
static void count_free(void *q) {
  if (!q) return;
  size_t *p = (size_t *)((char *)q - 16);
  live_bytes -= p[0];
  free(p);
}
static void *count_realloc(void *q, size_t n) {
  if (!q) return count_malloc(n);
  size_t *p = (size_t *)((char *)q - 16);
  const size_t old = p[0];
  size_t *r = realloc(p, n + 16);
  if (!r) return NULL;
  r[0] = n;
  live_bytes = live_bytes - old + n;
  if (live_bytes > peak_bytes) peak_bytes = live_bytes;
  return (char *)r + 16;
}

static void test_memory_budget(msp_context ctx) {
  // 10^6 rows and one entry: every row-indexed array of the read, the analysis, a product and
  // PageRank is counted against the limit, which is the estimate the reader admits.
  const char text[] = "%%MatrixMarket matrix coordinate real general\n"
                      "1000000 1000000 1\n"
                      "1 1 2\n";
  const char *path = write_file("tall.mtx", text, sizeof text - 1);
  const msp_allocator counting = {count_malloc, count_realloc, count_free};
  msp_matrix A = NULL;
  CHECK_OK(msp_set_allocator(&counting));
  peak_bytes = live_bytes = 0;
  const size_t base = live_bytes;
  // No limit: how much does the read take at its peak? The limit below that must fail at once.
  CHECK_OK(msp_matrix_read_mtx(ctx, path, 0, &A));
  const size_t read_peak = peak_bytes - base;
  msp_matrix_destroy(&A);
  CHECK_OK(msp_set_memory_limit(read_peak / 2));
  peak_bytes = live_bytes;
  CHECK_STATUS(msp_matrix_read_mtx(ctx, path, 0, &A), MSP_ERR_OUT_OF_MEMORY);
  CHECK(contains(msp_last_error(), "available"), "message: %s", msp_last_error());
  CHECK(peak_bytes - base <= read_peak / 2, "the refused read still took %zu bytes (limit %zu)",
        peak_bytes - base, read_peak / 2);
  // The limit holds for each operation: under a limit of L bytes, no operation's own
  // allocations exceed L (it fails first, with the budget's message).
  const size_t limits[3] = {(size_t)40 << 20, (size_t)20 << 20, (size_t)12 << 20};
  for (int l = 0; l < 3; l++) {
    CHECK_OK(msp_set_memory_limit(0));
    msp_matrix M = NULL;
    msp_vector x = NULL, y = NULL, p = NULL;
    CHECK_OK(msp_matrix_read_mtx(ctx, path, 0, &M));
    CHECK_OK(msp_vector_create(ctx, 1000000, &x));
    CHECK_OK(msp_vector_create(ctx, 1000000, &y));
    CHECK_OK(msp_vector_create(ctx, 1000000, &p));
    const size_t held = live_bytes;
    CHECK_OK(msp_set_memory_limit(limits[l]));
    peak_bytes = live_bytes;
    msp_status st = msp_spmv(ctx, 1.0, M, x, 0.0, y);
    CHECK(st == MSP_SUCCESS || st == MSP_ERR_OUT_OF_MEMORY, "spmv: %s", msp_last_error());
    CHECK(peak_bytes - held <= limits[l], "spmv took %zu bytes over a limit of %zu",
          peak_bytes - held, limits[l]);
    peak_bytes = live_bytes;
    st = msp_pagerank(ctx, M, NULL, p, NULL);
    CHECK(st == MSP_SUCCESS || st == MSP_ERR_OUT_OF_MEMORY, "pagerank: %s", msp_last_error());
    CHECK(peak_bytes - held <= limits[l], "pagerank took %zu bytes over a limit of %zu",
          peak_bytes - held, limits[l]);
    if (st == MSP_ERR_OUT_OF_MEMORY)
      CHECK(contains(msp_last_error(), "available"), "message: %s", msp_last_error());
    msp_matrix_destroy(&M);
    msp_vector_destroy(&x);
    msp_vector_destroy(&y);
    msp_vector_destroy(&p);
  }
  CHECK_OK(msp_set_memory_limit(0));
  CHECK_OK(msp_set_allocator(NULL));
  // An empty row costs little: reading 10^6 empty rows takes less than 40 bytes a row.
  CHECK(read_peak < (size_t)40 * 1000000, "reading 10^6 rows with one entry took %zu bytes",
        read_peak);
}

// ---- a gzip file whose first line is bad fails at once ------------------------------------------
static void test_gzip_early_error(msp_context ctx) {
  // 64 MiB of comment lines after a bad banner, compressed: the error is on line 1, and the
  // reader must not inflate the rest to look for a CRC error.
  const size_t plain = (size_t)64 << 20;
  char *text = malloc(plain);
  unsigned char *gz = NULL;
  if (!text) return;
  const char *bad = "%%MatrixMarket matrix coordinate real bogus\n";
  const size_t bl = strlen(bad);
  memcpy(text, bad, bl);
  for (size_t i = bl; i < plain; i++)
    text[i] = (i % 64 == 63) ? '\n' : (i % 64 == 0 ? '%' : 'x');
  z_stream z;
  memset(&z, 0, sizeof z);
  const size_t cap = plain / 100 + 4096;
  gz = malloc(cap);
  size_t glen = 0;
  if (gz && deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
    z.next_in = (Bytef *)text;
    z.avail_in = (uInt)plain;
    z.next_out = gz;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) == Z_STREAM_END) glen = cap - z.avail_out;
    deflateEnd(&z);
  }
  CHECK(glen > 0, "could not compress the test input");
  if (glen > 0) {
    const char *path = write_file("early.mtx.gz", gz, glen);
    msp_matrix A = NULL;
    // the work of the read, counted in bytes inflated, through the allocation-free path: time
    // on a shared machine is no measure, so the test counts what the reader had to inflate by
    // corrupting the CRC: a reader that drains the stream reports ERR_MM_GZIP, one that stops at
    // the parse error reports the banner
    gz[glen - 8] ^= 0x5a;
    path = write_file("early_crc.mtx.gz", gz, glen);
    CHECK_STATUS(msp_matrix_read_mtx(ctx, path, 0, &A), MSP_ERR_MM_UNSUPPORTED);
    CHECK(contains(msp_last_error(), "line 1"), "message: %s", msp_last_error());
    CHECK(A == NULL, "a matrix was returned");
  }
  free(text);
  free(gz);
}

// ---- one context, several threads creating and destroying objects ------------------------------
enum { THREADS = 4, ROUNDS = 20000 };
static void *churn(void *arg) {
  msp_context ctx = arg;
  for (int r = 0; r < ROUNDS; r++) {
    msp_vector v = NULL;
    if (msp_vector_create(ctx, 1, &v) == MSP_SUCCESS) msp_vector_destroy(&v);
  }
  return NULL;
}

static void test_shared_context(void) {
  msp_context ctx = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  pthread_t t[THREADS];
  int started = 0;
  for (int k = 0; k < THREADS; k++)
    if (pthread_create(&t[k], NULL, churn, ctx) == 0) started++;
  for (int k = 0; k < started; k++)
    pthread_join(t[k], NULL);
  CHECK(started == THREADS, "only %d threads started", started);
  CHECK(atomic_load(&ctx->live) == 0, "live count %lld after every object was destroyed",
        (long long)atomic_load(&ctx->live));
  CHECK_OK(msp_context_destroy(&ctx));
  if (ctx) msp_context_destroy(&ctx);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/msp_test_reliability_XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    fprintf(stderr, "mkdtemp(%s) failed: %s\n", tmpdir, strerror(errno));
    return 1;
  }
  msp_context ctx = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  test_choose_kernel_null();
  test_handles_first(ctx);
  test_flush_counted(ctx);
  test_nonfinite_sums(ctx);
  test_memory_budget(ctx);
  test_gzip_early_error(ctx);
  test_shared_context();
  CHECK_OK(msp_context_destroy(&ctx));
  const char *names[] = {"dup.mtx",  "sym.mtx",      "skew.mtx",        "fine.mtx",
                         "tall.mtx", "early.mtx.gz", "early_crc.mtx.gz"};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", tmpdir, names[k]);
    unlink(p);
  }
  rmdir(tmpdir);
  return msp_test_finish("test_reliability");
}

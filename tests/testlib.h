// testlib.h: checks, seeded random generator, fp64 oracle and matrix generators for the tests.
#ifndef MSP_TESTLIB_H
#define MSP_TESTLIB_H

#include "mixsparse.h"

#include <stdint.h>
#include <stdio.h>

// Exit code CTest reads as "skipped" (SKIP_RETURN_CODE 77).
#define MSP_TEST_SKIP 77

extern int msp_test_failures;
extern int msp_test_checks;

// Explicit checks (never assert()): count, print file:line and the message on failure.
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    msp_test_checks++;                                                                             \
    if (!(cond)) {                                                                                 \
      msp_test_failures++;                                                                         \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);                     \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
    }                                                                                              \
  } while (0)
// Check a status is `want`; print msp_last_error() otherwise.
#define CHECK_STATUS(call, want)                                                                   \
  do {                                                                                             \
    msp_status st_ = (call);                                                                       \
    CHECK(st_ == (want), "%s returned %s (%s), expected %s", #call, msp_status_name(st_),          \
          msp_last_error(), msp_status_name(want));                                                \
  } while (0)
#define CHECK_OK(call) CHECK_STATUS(call, MSP_SUCCESS)

// Print the summary line and return the process exit code (0 when every check passed).
int msp_test_finish(const char *name);
// Print "SKIPPED: why" and return MSP_TEST_SKIP.
int msp_test_skip(const char *name, const char *why);

// Create a CUDA context on device 0 for test `name`. Returns -1 when it was made; otherwise the
// exit code the test returns: MSP_TEST_SKIP (saying why) when CUDA is not built or no device is
// usable, or the failure code after a failed check.
int test_cuda_context(const char *name, msp_context *gpu);

// ---- seeded random numbers (splitmix64: same sequence on every platform) ---------------------
typedef struct {
  uint64_t s;
} msp_rng;
uint64_t msp_rng_next(msp_rng *r);
double msp_rng_uniform(msp_rng *r);           // [0, 1)
int64_t msp_rng_range(msp_rng *r, int64_t n); // [0, n)

// ---- host CSR used by the tests ------------------------------------------------------------
typedef struct {
  int64_t rows, cols, nnz;
  int64_t *rowptr;
  int32_t *colind;
  double *val;
} test_csr;
void test_csr_free(test_csr *m);
// Random matrix: each row gets a length from `lens` (if not NULL) or uniform in [0, 2*mean];
// columns distinct, sorted; values uniform in [-1, 1).
int test_csr_random(test_csr *m, int64_t rows, int64_t cols, double mean_len, uint64_t seed);
// Power-law row lengths (Zipf-like, exponent ~2) with max length cap.
int test_csr_powerlaw(test_csr *m, int64_t rows, int64_t cols, int64_t max_len, uint64_t seed);
// Copy a library matrix's CSR into a test_csr.
int test_csr_from_matrix(test_csr *m, msp_matrix A);
// Make a library matrix from a test_csr on ctx.
msp_status test_csr_to_matrix(const test_csr *m, msp_context ctx, msp_matrix *A);

// The matrix as stored by a converted matrix B with values in a reduced precision (B->pval set),
// in CSR with the decoded values (`segments` read for CPMS): both backends must compute its
// fp64 product. Returns 0, or -1 on allocation failure.
int test_csr_decoded(msp_matrix B, int segments, test_csr *d);
// A counting allocator for allocation-failure tests: allocation number fail_at (counted in calls
// from 0) fails, -1 for none; live counts the blocks not yet freed.
typedef struct {
  long fail_at, calls, live;
} test_alloc_counter;
extern test_alloc_counter test_alloc;
msp_allocator test_counting_allocator(void);

// d = the CSR arrays rp / ci / v (rows + 1, rp[rows], rp[rows] entries) that the library allocated
// (msp__format_to_csr), copied into malloc'd arrays; frees rp, ci and v. 0, or -1 without memory.
int test_csr_take(int64_t rows, int64_t cols, int64_t *rp, int32_t *ci, double *v, test_csr *d);

// y = A x through the library on ctx (A's context), x and y host arrays of A's column and row
// counts (fp64 vectors made and freed here). Returns the first failing call's status.
msp_status test_spmv(msp_context ctx, msp_matrix A, const double *x, double *y);

// ---- oracle: y = alpha*A*x + beta*y0, accumulated in long double over the triples ------------
void test_oracle_spmv(const test_csr *m, double alpha, const double *x, double beta,
                      const double *y0, double *y);
// Bound per row (STYLE.md section 7): |y_i - ref_i| <= c * eps * (row_len + 2) * (sum_j
// |alpha a_ij x_j| + |beta y0_i|) with c = 4. Returns the number of rows outside it and prints
// the first few; `label` names the case.
int64_t test_compare_rows(const test_csr *m, double alpha, const double *x, double beta,
                          const double *y0, const double *got, const double *ref,
                          const char *label);

// ---- stored values (the cross tests' oracle) --------------------------------------------------
// The value that a load of precision p returns for v stored on its own, with the library's own
// rounding (src/common/precision.h): IEEE types round to nearest (Inf beyond their range, as
// MSP_RANGE_ALLOW stores), CPMS truncates to `segments` segments (0: all), f64 keeps v. Fixed
// point returns v unchanged: its stored value depends on the scale of its block (the caller
// bounds that error).
double test_stored_value(msp_precision p, int segments, double v);
// out = in (n values) as msp_vector_set stores them in a vector of precision p read with all
// segments (fixed point: one scale per MSP_VEC_FX_BLOCK values). in and out may be the same.
// Returns 0, or -1 on allocation failure.
int test_round_vector(msp_precision p, int64_t n, const double *in, double *out);

// ---- shared matrix collection ------------------------------------------------------------------
// Directory of ../shared/matrices (env MSP_MATRICES_DIR), or NULL when absent (tests then say so).
const char *test_matrices_dir(void);
// Call fn for each real/integer/pattern matrix listed in INDEX.tsv (complex skipped), with
// nnz <= max_nnz (0: no limit). Returns the number visited.
typedef void (*test_matrix_fn)(const char *path, const char *name, void *user);
int test_for_each_matrix(int64_t max_nnz, test_matrix_fn fn, void *user);
// The same, visiting at most `count` of them (0: all) spread evenly over the collection;
// env MSP_TEST_MAX_MATRICES overrides count.
int test_for_each_matrix_sample(int64_t max_nnz, int count, test_matrix_fn fn, void *user);

// 1 under AddressSanitizer: cases that read a freed handle on purpose (what the magic number is
// for) are skipped there, since the sanitizer rightly reports that read.
#if defined(__SANITIZE_ADDRESS__)
#define MSP_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MSP_TEST_ASAN 1
#endif
#endif
#ifndef MSP_TEST_ASAN
#define MSP_TEST_ASAN 0
#endif

#endif

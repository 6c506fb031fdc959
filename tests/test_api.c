// test_api.c: status strings, tags, argument checks and error messages of the public API.
#include "testlib.h"

#include <math.h>
#include <string.h>

static void statuses(void) {
  CHECK(strcmp(msp_status_name(MSP_SUCCESS), "SUCCESS") == 0, "name of SUCCESS");
  CHECK(strcmp(msp_status_name(MSP_ERR_MM_INDEX), "ERR_MM_INDEX") == 0, "name of ERR_MM_INDEX");
  CHECK(strcmp(msp_status_name((msp_status)999), "UNKNOWN") == 0, "unknown status name");
  for (int s = 0; s < MSP_STATUS_COUNT; s++) {
    CHECK(msp_status_string((msp_status)s)[0] != '\0', "status %d has no string", s);
    CHECK(strcmp(msp_status_name((msp_status)s), "UNKNOWN") != 0, "status %d has no name", s);
  }
}

static void tags(void) {
  for (int f = 0; f < MSP_FORMAT_COUNT; f++) {
    msp_format g;
    CHECK_OK(msp_format_parse(msp_format_name((msp_format)f), &g));
    CHECK(g == (msp_format)f, "format tag %s round trip", msp_format_name((msp_format)f));
  }
  for (int p = 0; p < MSP_PRECISION_COUNT; p++) {
    msp_precision q;
    CHECK_OK(msp_precision_parse(msp_precision_name((msp_precision)p), &q));
    CHECK(q == (msp_precision)p, "precision tag round trip");
  }
  msp_kernel k;
  CHECK_OK(msp_kernel_parse("merge", &k));
  CHECK(k == MSP_KERNEL_MERGE, "merge tag");
  msp_format f;
  CHECK_OK(msp_format_parse("tune", &f));
  CHECK(f == MSP_FORMAT_TUNE, "tune tag");
  CHECK_STATUS(msp_format_parse("csc", &f), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "csc") && strstr(msp_last_error(), "hdia"),
        "message names the tag and the valid ones: %s", msp_last_error());
  msp_backend b;
  CHECK_STATUS(msp_backend_parse("opencl", &b), MSP_ERR_INVALID_ARGUMENT);
}

static void arguments(void) {
  msp_context cpu = NULL;
  msp_matrix A = NULL;
  msp_vector x = NULL, y = NULL, z = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  CHECK(msp_context_backend(cpu) == MSP_BACKEND_CPU, "backend");
  CHECK_STATUS(msp_context_create(MSP_BACKEND_CPU, -1, &(msp_context){0}),
               MSP_ERR_INVALID_ARGUMENT);
  int64_t rp[] = {0, 1, 2};
  int32_t ci[] = {0, 1};
  double va[] = {1.0, 2.0};
  CHECK_OK(msp_matrix_from_csr(cpu, 2, 3, rp, ci, va, 0, &A));
  CHECK_OK(msp_vector_create(cpu, 3, &x));
  CHECK_OK(msp_vector_create(cpu, 2, &y));
  CHECK_OK(msp_vector_create(cpu, 5, &z));
  CHECK_STATUS(msp_spmv(cpu, 1.0, A, z, 0.0, y), MSP_ERR_DIMENSION_MISMATCH);
  CHECK(strstr(msp_last_error(), "2 x 3") != NULL, "mismatch message: %s", msp_last_error());
  CHECK_STATUS(msp_spmv(cpu, 1.0, A, x, 0.0, z), MSP_ERR_DIMENSION_MISMATCH);
  CHECK_STATUS(msp_spmv(cpu, 1.0, NULL, x, 0.0, y), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_spmv(NULL, 1.0, A, x, 0.0, y), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_spmv(cpu, NAN, A, x, 0.0, y), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_dot(cpu, x, y, &(double){0}), MSP_ERR_DIMENSION_MISMATCH);
  CHECK_STATUS(msp_axpby(cpu, 1.0, x, 1.0, z), MSP_ERR_DIMENSION_MISMATCH);
  CHECK_STATUS(msp_copy(cpu, x, z), MSP_ERR_DIMENSION_MISMATCH);
  CHECK_STATUS(msp_vector_create(cpu, -1, &(msp_vector){0}), MSP_ERR_INVALID_ARGUMENT);
  // Invalid CSR input: each names the index.
  int64_t bad_rp[] = {0, 2, 1};
  CHECK_STATUS(msp_matrix_from_csr(cpu, 2, 3, bad_rp, ci, va, 0, &(msp_matrix){0}),
               MSP_ERR_INVALID_MATRIX);
  CHECK(strstr(msp_last_error(), "row 1") != NULL, "message: %s", msp_last_error());
  int32_t bad_ci[] = {0, 3};
  CHECK_STATUS(msp_matrix_from_csr(cpu, 2, 3, rp, bad_ci, va, 0, &(msp_matrix){0}),
               MSP_ERR_INVALID_MATRIX);
  CHECK(strstr(msp_last_error(), "colind[1] = 3") != NULL, "message: %s", msp_last_error());
  int32_t neg_ci[] = {-1, 0};
  CHECK_STATUS(msp_matrix_from_csr(cpu, 2, 3, rp, neg_ci, va, 0, &(msp_matrix){0}),
               MSP_ERR_INVALID_MATRIX);
  double nan_va[] = {1.0, NAN};
  CHECK_STATUS(msp_matrix_from_csr(cpu, 2, 3, rp, ci, nan_va, 0, &(msp_matrix){0}),
               MSP_ERR_NONFINITE);
  CHECK(strstr(msp_last_error(), "values[1]") != NULL, "message: %s", msp_last_error());
  msp_matrix N = NULL;
  CHECK_OK(msp_matrix_from_csr(cpu, 2, 3, rp, ci, nan_va, MSP_READ_ALLOW_NONFINITE, &N));
  msp_matrix_destroy(&N);
  int64_t rp1[] = {1, 2, 2};
  CHECK_STATUS(msp_matrix_from_csr(cpu, 2, 3, rp1, ci, va, 0, &(msp_matrix){0}),
               MSP_ERR_INVALID_MATRIX);
  CHECK_STATUS(msp_matrix_from_csr(cpu, 2, 3, NULL, ci, va, 0, &(msp_matrix){0}),
               MSP_ERR_INVALID_ARGUMENT);
  // Kernel selection and destroy-with-NULL.
  CHECK_OK(msp_matrix_set_kernel(A, MSP_KERNEL_MERGE));
  CHECK(msp_matrix_kernel(A) == MSP_KERNEL_MERGE, "kernel set");
  CHECK(strstr(msp_matrix_choice_reason(A), "named by the caller") != NULL, "reason: %s",
        msp_matrix_choice_reason(A));
  CHECK_OK(msp_matrix_set_kernel(A, MSP_KERNEL_AUTO));
  CHECK(msp_matrix_kernel(A) == MSP_KERNEL_SCALAR, "auto kernel of a 1-per-row matrix");
  CHECK(msp_matrix_bytes(A) == 3 * 8 + 2 * 12, "CSR bytes %zu", msp_matrix_bytes(A));
  CHECK_OK(msp_matrix_destroy(NULL));
  CHECK_OK(msp_vector_destroy(NULL));
  CHECK_OK(msp_context_destroy(NULL));
  // The context refuses to go while its objects live, and says how many (tests/test_safety.c
  // covers destroyed and foreign handles).
  CHECK_STATUS(msp_context_destroy(&cpu), MSP_ERR_INVALID_ARGUMENT);
  CHECK(cpu != NULL && strstr(msp_last_error(), "4 matrices and vectors"),
        "context with 4 live objects: %s", msp_last_error());
  CHECK_OK(msp_matrix_destroy(&A));
  CHECK(A == NULL, "destroy sets the handle to NULL");
  CHECK_OK(msp_vector_destroy(&x));
  CHECK_OK(msp_vector_destroy(&y));
  CHECK_OK(msp_vector_destroy(&z));
  CHECK_OK(msp_context_destroy(&cpu));
  CHECK(cpu == NULL, "destroy sets the handle to NULL");
}

// The kernel rule of the adaptive SpMV design notes ("Design Philosophy") on hand-made statistics.
static void kernel_rule(void) {
  msp_matrix_stats s;
  char why[256];
  memset(&s, 0, sizeof s);
  s.nnz = 100;
  s.rows = 4096;
  s.row_mean = 3.9;
  s.skewness = 5;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_SCALAR, "mean < 4 -> scalar");
  s.skewness = 50;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_MERGE, "mean < 4 but skewed -> merge");
  s.rows = 500;
  s.row_mean = 40;
  s.skewness = 2;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_MERGE, "few long rows -> merge");
  s.rows = 4096;
  s.row_mean = 5;
  s.skewness = 1.2;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_SCALAR, "short uniform rows -> scalar");
  s.skewness = 2;
  s.row_cv = 0.5;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_VECTOR, "short, less uniform -> vector");
  // short rows of small spread (row_cv <= 0.35) whose longest row is 3x the mean: scalar
  s.skewness = 3;
  s.row_cv = 0.22;
  CHECK(msp_choose_kernel(&s, why, sizeof why) == MSP_KERNEL_SCALAR,
        "short rows of small spread -> scalar");
  CHECK(strstr(why, "row_cv") != NULL, "reason names the spread: %s", why);
  s.row_cv = 0.36;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_VECTOR, "row_cv 0.36 -> vector");
  s.row_cv = 0;
  s.row_mean = 16;
  s.skewness = 9.9;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_VECTOR, "balanced -> vector");
  s.skewness = 10;
  CHECK(msp_choose_kernel(&s, why, sizeof why) == MSP_KERNEL_MERGE, "skewed -> merge");
  CHECK(strstr(why, "skewness") != NULL, "reason names the statistic: %s", why);
  // short near-uniform rows: scalar from a mean of 6 to 9 only on large near-banded matrices
  s.row_mean = 7;
  s.skewness = 1.0;
  s.rows = 1 << 17;
  s.diagonals = 7;
  CHECK(msp_choose_kernel(&s, why, sizeof why) == MSP_KERNEL_SCALAR,
        "7-point rows, 2^17 rows -> scalar");
  CHECK(strstr(why, "near-banded") != NULL, "reason: %s", why);
  s.rows = (1 << 17) - 1;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_VECTOR, "fewer rows -> vector");
  s.rows = 1 << 17;
  s.diagonals = s.rows + 1;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_VECTOR, "more diagonals than rows -> vector");
  s.diagonals = 7;
  s.row_mean = 9;
  CHECK(msp_choose_kernel(&s, NULL, 0) == MSP_KERNEL_VECTOR, "mean 9 -> vector");
}

// The rule's refinement for 2-byte values (matrix.c): f16, bf16 and fx16 CSR on a large
// near-banded matrix of short rows take the scalar kernel where f64 takes the vector kernel;
// a matrix with more diagonals than rows, or wider values, keeps the vector kernel.
static void kernel_rule_narrow(void) {
  msp_context cpu = NULL;
  msp_matrix S = NULL, R = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  CHECK_OK(msp_matrix_generate(cpu, "stencil27:51", &S));     // 132651 rows, 27 diagonals
  CHECK_OK(msp_matrix_generate(cpu, "random:140000:16", &R)); // more diagonals than rows
  if (!S || !R) goto done;
  CHECK(msp_matrix_kernel(S) == MSP_KERNEL_VECTOR, "stencil27:51 in f64: vector (got %s)",
        msp_kernel_name(msp_matrix_kernel(S)));
  static const struct {
    msp_precision p;
    msp_kernel stencil, random;
  } want[] = {{MSP_PRECISION_F64, MSP_KERNEL_VECTOR, MSP_KERNEL_VECTOR},
              {MSP_PRECISION_F32, MSP_KERNEL_VECTOR, MSP_KERNEL_VECTOR},
              {MSP_PRECISION_F16, MSP_KERNEL_SCALAR, MSP_KERNEL_VECTOR},
              {MSP_PRECISION_BF16, MSP_KERNEL_SCALAR, MSP_KERNEL_VECTOR},
              {MSP_PRECISION_FX16, MSP_KERNEL_SCALAR, MSP_KERNEL_VECTOR},
              {MSP_PRECISION_CPMS4, MSP_KERNEL_VECTOR, MSP_KERNEL_VECTOR}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    msp_convert_options o = msp_convert_options_default();
    o.format = MSP_FORMAT_CSR;
    o.precision = want[i].p;
    o.range = MSP_RANGE_SATURATE; // random values in f16 / fx16: the kernel is what is tested
    for (int m = 0; m < 2; m++) {
      msp_matrix B = NULL;
      CHECK_OK(msp_matrix_convert(cpu, m ? R : S, &o, &B));
      if (!B) continue;
      const msp_kernel k = m ? want[i].random : want[i].stencil;
      CHECK(msp_matrix_kernel(B) == k, "%s in %s: kernel %s, expected %s (%s)",
            m ? "random:140000:16" : "stencil27:51", msp_precision_name(want[i].p),
            msp_kernel_name(msp_matrix_kernel(B)), msp_kernel_name(k), msp_matrix_choice_reason(B));
      if (k == MSP_KERNEL_SCALAR)
        CHECK(strstr(msp_matrix_choice_reason(B), "2 bytes") != NULL,
              "the reason names the 2-byte rule: %s", msp_matrix_choice_reason(B));
      // asking for the rule again on the converted matrix gives the same kernel
      CHECK_OK(msp_matrix_set_kernel(B, MSP_KERNEL_MERGE));
      CHECK_OK(msp_matrix_set_kernel(B, MSP_KERNEL_AUTO));
      CHECK(msp_matrix_kernel(B) == k, "set_kernel(auto) on %s: %s", msp_precision_name(want[i].p),
            msp_kernel_name(msp_matrix_kernel(B)));
      msp_matrix_destroy(&B);
    }
  }
done:
  msp_matrix_destroy(&S);
  msp_matrix_destroy(&R);
  msp_context_destroy(&cpu);
}

static void no_cuda(void) {
  msp_context c = NULL;
  msp_status st = msp_context_create(MSP_BACKEND_CUDA, 0, &c);
  if (st == MSP_SUCCESS) {
    printf("test_api: CUDA device present; the no-CUDA error path is covered by CPU-only builds\n");
    msp_context_destroy(&c);
    return;
  }
  CHECK(st == MSP_ERR_NOT_BUILT || st == MSP_ERR_NO_DEVICE, "CUDA without a device: %s",
        msp_status_name(st));
  CHECK(msp_last_error()[0] != '\0', "message for the CUDA error");
  CHECK(c == NULL, "no context on failure");
  // AUTO falls back to the CPU.
  CHECK_OK(msp_context_create(MSP_BACKEND_AUTO, 0, &c));
  CHECK(msp_context_backend(c) == MSP_BACKEND_CPU, "auto without a device is cpu");
  msp_context_destroy(&c);
  int n = -1;
  CHECK_OK(msp_device_count(&n));
  CHECK(n == 0, "device count %d", n);
}

// Device exchange (msp_vector_device_data / msp_vector_set_device) on the CPU: no device data,
// so both refuse, and bad arguments are invalid first (tests/cuda_vector.c covers the device).
static void device_exchange_cpu(void) {
  msp_context cpu = NULL;
  msp_vector v = NULL;
  double src[4] = {1, 2, 3, 4}, out[4] = {0};
  void *d = &d;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  CHECK_OK(msp_vector_create(cpu, 4, &v));
  if (!v) goto exit;
  CHECK_OK(msp_vector_set(v, src));
  CHECK_STATUS(msp_vector_device_data(v, &d), MSP_ERR_NOT_SUPPORTED);
  CHECK(d == NULL, "device pointer %p returned on the CPU", d);
  CHECK(strstr(msp_last_error(), "cpu") != NULL, "message names the backend: %s", msp_last_error());
  CHECK_STATUS(msp_vector_set_device(v, src), MSP_ERR_NOT_SUPPORTED);
  CHECK(strstr(msp_last_error(), "msp_vector_set_device") != NULL, "message: %s", msp_last_error());
  // Refusals leave the values as they were.
  CHECK_OK(msp_vector_get(v, out));
  CHECK(memcmp(src, out, sizeof src) == 0, "values changed by a refused exchange");
  CHECK(msp_vector_transfers(v) == 0, "transfers %lld", (long long)msp_vector_transfers(v));
  d = &d;
  CHECK_STATUS(msp_vector_device_data(NULL, &d), MSP_ERR_INVALID_ARGUMENT);
  CHECK(d == NULL, "device pointer left set for a NULL vector");
  CHECK_STATUS(msp_vector_device_data(v, NULL), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_vector_set_device(NULL, src), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_vector_set_device(v, NULL), MSP_ERR_INVALID_ARGUMENT);
  // Not a vector handle at all.
  double junk[64];
  memset(junk, 0, sizeof junk);
  CHECK_STATUS(msp_vector_device_data((msp_vector)(void *)junk, &d), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "not a mixsparse vector"), "message: %s", msp_last_error());
  CHECK_STATUS(msp_vector_set_device((msp_vector)(void *)junk, src), MSP_ERR_INVALID_ARGUMENT);
exit:
  msp_vector_destroy(&v);
  msp_context_destroy(&cpu);
}

static void stats(void) {
  // Tridiagonal 5x5 plus an empty row: hand-checked statistics.
  msp_context cpu = NULL;
  msp_matrix A = NULL;
  int64_t rp[] = {0, 2, 5, 8, 10, 10};
  int32_t ci[] = {0, 1, 0, 1, 2, 1, 2, 3, 2, 3};
  double va[] = {2, -1, -1, 2, -1, -1, 2, -1, -1, 2};
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  CHECK_OK(msp_matrix_from_csr(cpu, 5, 5, rp, ci, va, 0, &A));
  msp_matrix_stats s;
  if (A) {
    CHECK_OK(msp_matrix_analyze(A, &s));
    CHECK(s.rows == 5 && s.nnz == 10 && s.row_min == 0 && s.row_max == 3, "row stats");
    CHECK(s.row_mean == 2.0 && s.empty_rows == 1, "mean %g, empty %lld", s.row_mean,
          (long long)s.empty_rows);
    // lengths 2 3 3 2 0: variance = (4+9+9+4+0)/5 - 4 = 1.2
    CHECK(fabs(s.row_std - sqrt(1.2)) < 1e-15, "std %.17g", s.row_std);
    CHECK(s.diagonals == 3 && s.bandwidth == 1, "diagonals %lld bandwidth %lld",
          (long long)s.diagonals, (long long)s.bandwidth);
    CHECK(s.skewness == 1.5, "skewness %g", s.skewness);
    CHECK(s.ell_fill == (15.0 - 10.0) / 10.0, "ell fill %g", s.ell_fill);
    CHECK(s.dia_fill == (15.0 - 10.0) / 10.0, "dia fill %g", s.dia_fill);
    CHECK(s.abs_mean == 1.4, "abs mean %g", s.abs_mean);
  }
  msp_matrix_destroy(&A);
  // 0 x 0 and nnz = 0.
  int64_t rp0[] = {0};
  CHECK_OK(msp_matrix_from_csr(cpu, 0, 0, rp0, NULL, NULL, 0, &A));
  if (A) {
    CHECK_OK(msp_matrix_analyze(A, &s));
    CHECK(s.rows == 0 && s.nnz == 0 && s.skewness == 0, "empty stats");
  }
  msp_matrix_destroy(&A);
  msp_context_destroy(&cpu);
}

int main(void) {
  statuses();
  tags();
  arguments();
  kernel_rule();
  kernel_rule_narrow();
  no_cuda();
  device_exchange_cpu();
  stats();
  return msp_test_finish("test_api");
}

// fuzz_mtx.c: libFuzzer target: the Matrix Market matrix parser on arbitrary bytes (memory path).
//
// Checks beyond "no crash, no leak, no undefined behaviour" (the sanitizers' part): a read
// succeeds exactly when it returns a matrix; a failure carries one of the reader's statuses and a
// message naming the input; a success yields a consistent CSR. Allocations above a cap fail as if
// memory were exhausted, so a file that declares a 2-billion-row matrix exercises the
// out-of-memory paths instead of exhausting the fuzzing machine.
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// Largest single allocation granted (bytes): big enough for every small valid input.
#define FUZZ_ALLOC_CAP ((size_t)16 << 20)

static void *capped_malloc(size_t n) {
  return n > FUZZ_ALLOC_CAP ? NULL : malloc(n);
}
static void *capped_realloc(void *p, size_t n) {
  return n > FUZZ_ALLOC_CAP ? NULL : realloc(p, n);
}

static int expected_failure(msp_status st) {
  switch (st) {
  case MSP_ERR_MM_EMPTY:
  case MSP_ERR_MM_BANNER:
  case MSP_ERR_MM_UNSUPPORTED:
  case MSP_ERR_MM_SIZE:
  case MSP_ERR_MM_TOO_FEW:
  case MSP_ERR_MM_TOO_MANY:
  case MSP_ERR_MM_INDEX:
  case MSP_ERR_MM_VALUE:
  case MSP_ERR_MM_GZIP:
  case MSP_ERR_NONFINITE:
  case MSP_ERR_OUT_OF_MEMORY:
    return 1;
  default:
    return 0;
  }
}

// A successful read must give rows+1 non-decreasing row pointers ending at nnz and sorted,
// in-range column indices; without MSP_READ_ALLOW_NONFINITE, finite values only (also where
// duplicates or a symmetric file's mirrored entries were summed).
static void check_matrix(msp_matrix A, unsigned flags) {
  int64_t rows = msp_matrix_rows(A), cols = msp_matrix_cols(A), nnz = msp_matrix_nnz(A);
  if (rows < 0 || cols < 0 || nnz < 0 || rows > INT32_MAX || cols > INT32_MAX) abort();
  int64_t *rp = malloc((size_t)(rows + 1) * sizeof *rp);
  int32_t *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
  double *va = malloc((size_t)(nnz + 1) * sizeof *va);
  if (rp && ci && va) {
    if (msp_matrix_get_csr(A, rp, ci, va) != MSP_SUCCESS) abort();
    if (!(flags & MSP_READ_ALLOW_NONFINITE))
      for (int64_t k = 0; k < nnz; k++)
        if (va[k] - va[k] != 0.0) abort();
    if (rp[0] != 0 || rp[rows] != nnz) abort();
    for (int64_t i = 0; i < rows; i++) {
      if (rp[i + 1] < rp[i]) abort();
      for (int64_t k = rp[i]; k < rp[i + 1]; k++)
        if (ci[k] < 0 || ci[k] >= cols || (k > rp[i] && ci[k] <= ci[k - 1])) abort();
    }
  }
  free(rp);
  free(ci);
  free(va);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static msp_context ctx;
  if (!ctx) {
    static const msp_allocator capped = {capped_malloc, capped_realloc, free};
    if (msp_set_allocator(&capped) != MSP_SUCCESS) abort();
    if (msp_context_create(MSP_BACKEND_CPU, 0, &ctx) != MSP_SUCCESS) abort();
  }
  // The low bit of the length picks the flags so both finiteness rules are exercised.
  unsigned flags = (size & 1) ? MSP_READ_ALLOW_NONFINITE : 0;
  msp_matrix A = NULL;
  msp_status st = msp__matrix_read_mtx_mem(ctx, "fuzz.mtx", data, size, flags, &A);
  if ((st == MSP_SUCCESS) != (A != NULL)) abort();
  if (st != MSP_SUCCESS) {
    if (!expected_failure(st)) abort();
    if (!strstr(msp_last_error(), "fuzz.mtx")) abort();
  } else {
    check_matrix(A, flags);
  }
  msp_matrix_destroy(&A);
  return 0;
}

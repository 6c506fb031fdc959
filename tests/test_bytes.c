// test_bytes.c: the byte model of one SpMV (msp_spmv_bytes, msp_spmv_bytes_vectors) against
// numbers counted by hand for small CSR, ELL, DIA and CPMS matrices and vectors of every kind.
#include "testlib.h"

#include <math.h>
#include <stddef.h>

static msp_context cpu;

// The 4 x 4 tridiagonal matrix [4 -1; -1 4 -1; ...]: 10 nonzeros, rows of 2, 3, 3, 2 entries,
// three occupied diagonals (-1, 0, +1).
static const int64_t tri_rowptr[] = {0, 2, 5, 8, 10};
static const int32_t tri_colind[] = {0, 1, 0, 1, 2, 1, 2, 3, 2, 3};
static const double tri_val[] = {4, -1, -1, 4, -1, -1, 4, -1, -1, 4};

static msp_matrix convert(msp_matrix A, msp_format f, msp_precision p, int segments) {
  msp_convert_options o = msp_convert_options_default();
  msp_matrix B = NULL;
  o.format = f;
  o.precision = p;
  o.cpms_segments = segments;
  CHECK_OK(msp_matrix_convert(cpu, A, &o, &B));
  return B;
}

static msp_vector vec(int64_t n, msp_precision p) {
  msp_vector v = NULL;
  CHECK_OK(msp_vector_create_precision(cpu, n, p, &v));
  return v;
}

#define CHECK_BYTES(got, want, what)                                                               \
  CHECK((got) == (want), "%s: %.17g bytes, expected %.17g", what, (double)(got), (double)(want))

// CSR: (rows + 1) int64 row pointers, nnz int32 columns, nnz values; x and y in f64.
static void bytes_csr(msp_matrix A) {
  // 5 * 8 + 10 * (4 + 8) = 160 for the matrix, 4 * 8 for x, 4 * 8 for y (twice with beta).
  CHECK_BYTES(msp_spmv_bytes(A, 0), 160.0 + 32 + 32, "csr f64");
  CHECK_BYTES(msp_spmv_bytes(A, 1), 160.0 + 32 + 64, "csr f64, beta != 0");
  CHECK_BYTES(msp_spmv_bytes_vectors(A, NULL, NULL, 0), msp_spmv_bytes(A, 0),
              "NULL vectors count as f64");
  msp_vector x = vec(4, MSP_PRECISION_F64), y = vec(4, MSP_PRECISION_F64);
  CHECK_BYTES(msp_spmv_bytes_vectors(A, x, y, 1), 160.0 + 32 + 64, "csr f64, f64 vectors");
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);

  // f32 values: 40 + 10 * (4 + 4) = 120; f32 x and y: 16 each.
  msp_matrix B = convert(A, MSP_FORMAT_CSR, MSP_PRECISION_F32, 0);
  x = vec(4, MSP_PRECISION_F32);
  y = vec(4, MSP_PRECISION_F32);
  if (B && x && y) {
    CHECK_BYTES(msp_spmv_bytes(B, 0), 120.0 + 32 + 32, "csr f32, f64 vectors");
    CHECK_BYTES(msp_spmv_bytes_vectors(B, x, y, 0), 120.0 + 16 + 16, "csr f32, f32 vectors");
    CHECK_BYTES(msp_spmv_bytes_vectors(B, x, y, 1), 120.0 + 16 + 32, "csr f32, beta != 0");
  }
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_matrix_destroy(&B);

  // fx16 values: 40 + 10 * (4 + 2) = 100, plus one scale (10 values, blocks of 256): 108.
  // fx16 x: 4 * 2 + one scale (blocks of 32) = 16; fx32 y: 4 * 4 + 8 = 24.
  B = convert(A, MSP_FORMAT_CSR, MSP_PRECISION_FX16, 0);
  x = vec(4, MSP_PRECISION_FX16);
  y = vec(4, MSP_PRECISION_FX32);
  if (B && x && y) CHECK_BYTES(msp_spmv_bytes_vectors(B, x, y, 0), 108.0 + 16 + 24, "csr fx16");
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_matrix_destroy(&B);
}

// ELL: rows x width slots (padding counted), each an int32 column and a value.
static void bytes_ell(msp_matrix A) {
  // width 3 (the longest row): 12 slots * (4 + 8) = 144.
  msp_matrix B = convert(A, MSP_FORMAT_ELL, MSP_PRECISION_F64, 0);
  if (B) CHECK_BYTES(msp_spmv_bytes(B, 0), 144.0 + 32 + 32, "ell f64");
  msp_matrix_destroy(&B);
  // f16 values: 12 * (4 + 2) = 72; bf16 x: 8; f16 y: 8.
  B = convert(A, MSP_FORMAT_ELL, MSP_PRECISION_F16, 0);
  msp_vector x = vec(4, MSP_PRECISION_BF16), y = vec(4, MSP_PRECISION_F16);
  if (B && x && y) CHECK_BYTES(msp_spmv_bytes_vectors(B, x, y, 0), 72.0 + 8 + 8, "ell f16");
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_matrix_destroy(&B);
}

// DIA: one int64 offset per diagonal and rows values per diagonal (padding counted), no
// column indices.
static void bytes_dia(msp_matrix A) {
  // 3 diagonals: 3 * 8 + 3 * 4 * 8 = 120.
  msp_matrix B = convert(A, MSP_FORMAT_DIA, MSP_PRECISION_F64, 0);
  if (B) CHECK_BYTES(msp_spmv_bytes(B, 0), 120.0 + 32 + 32, "dia f64");
  msp_matrix_destroy(&B);
  // fx32 values: 24 + 12 * 4 + one scale = 80; f64 x and y.
  B = convert(A, MSP_FORMAT_DIA, MSP_PRECISION_FX32, 0);
  if (B) CHECK_BYTES(msp_spmv_bytes(B, 0), 80.0 + 32 + 32, "dia fx32");
  msp_matrix_destroy(&B);
}

// CPMS: 8 bytes per value stored, of which only the segments read are counted.
static void bytes_cpms(msp_matrix A) {
  // cpms4 read with 1 of 4 segments: 40 + 10 * 4 (columns) + 10 * 2 = 100.
  msp_matrix B = convert(A, MSP_FORMAT_CSR, MSP_PRECISION_CPMS4, 1);
  if (B) {
    CHECK_BYTES(msp_spmv_bytes(B, 0), 100.0 + 32 + 32, "csr cpms4 read with 1 segment");
    // 2 segments: 40 + 40 + 10 * 4 = 120; all (0): the bytes of f64.
    CHECK_OK(msp_matrix_set_cpms_segments(B, 2));
    CHECK_BYTES(msp_spmv_bytes(B, 0), 120.0 + 32 + 32, "csr cpms4 read with 2 segments");
    CHECK_OK(msp_matrix_set_cpms_segments(B, 0));
    CHECK_BYTES(msp_spmv_bytes(B, 0), 160.0 + 32 + 32, "csr cpms4 read whole");
  }
  msp_matrix_destroy(&B);
  // cpms2 DIA read with 1 of 2 segments: 24 + 12 * 4 = 72.
  B = convert(A, MSP_FORMAT_DIA, MSP_PRECISION_CPMS2, 1);
  if (B) CHECK_BYTES(msp_spmv_bytes(B, 0), 72.0 + 32 + 32, "dia cpms2 read with 1 segment");
  msp_matrix_destroy(&B);

  // CPMS vectors: x read with its segments; y written whole, read with its segments (beta).
  msp_vector x = vec(4, MSP_PRECISION_CPMS2), y = vec(4, MSP_PRECISION_CPMS4);
  if (x && y) {
    CHECK_OK(msp_vector_set_cpms_segments(x, 1));
    CHECK_OK(msp_vector_set_cpms_segments(y, 1));
    // x: 4 * 4 = 16; y written: 32; y read with 1 of 4 segments: 8.
    CHECK_BYTES(msp_spmv_bytes_vectors(A, x, y, 0), 160.0 + 16 + 32, "cpms2 x, 1 segment");
    CHECK_BYTES(msp_spmv_bytes_vectors(A, x, y, 1), 160.0 + 16 + 32 + 8,
                "cpms4 y read with 1 segment");
  }
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
}

// Fixed-point vectors: one scale per block of 32 values, a partial block counted whole.
static void bytes_vector_scales(void) {
  enum { N = 40 };
  int64_t rowptr[N + 1];
  int32_t colind[N];
  double val[N];
  for (int i = 0; i <= N; i++)
    rowptr[i] = i;
  for (int i = 0; i < N; i++) {
    colind[i] = i;
    val[i] = 1.0 + i;
  }
  msp_matrix A = NULL;
  CHECK_OK(msp_matrix_from_csr(cpu, N, N, rowptr, colind, val, 0, &A));
  msp_vector x = vec(N, MSP_PRECISION_FX16), y = vec(N, MSP_PRECISION_FX32);
  if (A && x && y) {
    // matrix 41 * 8 + 40 * 12 = 808; x 40 * 2 + 2 scales = 96; y 40 * 4 + 2 scales = 176,
    // twice with beta.
    CHECK_BYTES(msp_spmv_bytes_vectors(A, x, y, 0), 808.0 + 96 + 176, "fixed-point vectors");
    CHECK_BYTES(msp_spmv_bytes_vectors(A, x, y, 1), 808.0 + 96 + 352,
                "fixed-point vectors, beta != 0");
  }
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_matrix_destroy(&A);
}

int main(void) {
  msp_matrix A = NULL;
  if (msp_context_create(MSP_BACKEND_CPU, 0, &cpu) != MSP_SUCCESS) {
    fprintf(stderr, "test_bytes: no CPU context: %s\n", msp_last_error());
    return 1;
  }
  CHECK_OK(msp_matrix_from_csr(cpu, 4, 4, tri_rowptr, tri_colind, tri_val, 0, &A));
  if (A) {
    bytes_csr(A);
    bytes_ell(A);
    bytes_dia(A);
    bytes_cpms(A);
  }
  bytes_vector_scales();
  CHECK(msp_spmv_bytes(NULL, 0) == 0 && msp_spmv_bytes_vectors(NULL, NULL, NULL, 1) == 0,
        "NULL matrix: 0 bytes");
  msp_matrix_destroy(&A);
  msp_context_destroy(&cpu);
  return msp_test_finish("test_bytes");
}

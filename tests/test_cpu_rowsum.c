// test_cpu_rowsum.c: the CPU CSR and COO products give the bits of the row order that
// src/cpu/dispatch.h documents (msp__cpu_row_sum: even and odd partial sums, added, then the last
// entry of an odd length), now that the last entry is kept by a mask instead of a branch: on rows
// of every length from 0 to 9, with an infinite x entry (a masked product that is infinite must
// not turn a sum into NaN) and zero x entries (signed zero products), for 1 and 3 threads.
// The same for the loop variants of msp__cpu_row_sum_far, with an fp64 and an fp32 x, for 1, 2,
// 3 and 7 threads: on a scattered matrix whose x is larger than MSP__CPU_PF_XBYTES (the loop
// that prefetches x, and the blocks near the end of the arrays that do not), and with lengths
// that change from row to row about their mean (msp__cpu_rows_irregular: the U4 loop, with and
// without the prefetch), rows of 0 to 9 entries in each.
#include "testlib.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 1001
#define COLS 64

#define WROWS 20000   // the variants' matrices: rows of 0 .. 9 entries ...
#define WCOLS 1600000 // ... over 1.6 M columns (x: 12.8 MB in fp64, 6.4 MB in fp32), or fewer

// Row i's length: every length 0 .. 9 (as in main) or, with near, those on every fourth row and
// 6 .. 9 on the others (coefficient of variation 0.32, under MSP__CPU_U4_CV).
static int64_t row_len(int64_t i, int near) {
  return !near || i % 4 == 0 ? (i * 7) % 10 : 6 + (i * 3) % 4;
}

// m's arrays for rows * cols with row i holding len(i, arg) entries (columns and values left to
// the caller). Returns 0 on an allocation failure (checked; test_csr_free frees what was made).
static int alloc_rows(test_csr *m, int64_t rows, int64_t cols, int64_t (*len)(int64_t, int),
                      int arg) {
  m->rows = rows;
  m->cols = cols;
  m->rowptr = malloc((size_t)(rows + 1) * sizeof *m->rowptr);
  CHECK(m->rowptr != NULL, "allocation");
  if (!m->rowptr) return 0;
  m->rowptr[0] = 0;
  for (int64_t i = 0; i < rows; i++)
    m->rowptr[i + 1] = m->rowptr[i] + len(i, arg);
  m->nnz = m->rowptr[rows];
  m->colind = malloc((size_t)(m->nnz > 0 ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz > 0 ? m->nnz : 1) * sizeof *m->val);
  CHECK(m->colind && m->val, "allocation");
  return m->colind && m->val;
}

// Row i of m in the documented order, with the branch on the parity.
static double row_ref(const test_csr *m, int64_t i, const double *x) {
  const int64_t k0 = m->rowptr[i], k1 = m->rowptr[i + 1];
  int64_t k = k0;
  double s0 = 0.0, s1 = 0.0;
  for (; k + 2 <= k1; k += 2) {
    s0 += m->val[k] * x[m->colind[k]];
    s1 += m->val[k + 1] * x[m->colind[k + 1]];
  }
  double sum = s0 + s1;
  if (k < k1) sum += m->val[k] * x[m->colind[k]];
  return sum;
}

// One variant's case: CSR and COO against the documented order with x in fp64 and in fp32 (the
// reference reads x rounded to fp32), 1, 2, 3 and 7 threads, on a matrix of WROWS rows of
// row_len(i, near) entries over cols columns. Returns 0 on an allocation failure.
static int variant_case(msp_context cpu, int64_t cols, int near) {
  test_csr m;
  memset(&m, 0, sizeof m);
  msp_matrix A = NULL, C = NULL;
  msp_vector x = NULL, y = NULL;
  double *hx = malloc((size_t)cols * sizeof *hx), *ref = malloc(WROWS * sizeof *ref);
  double *got = malloc(WROWS * sizeof *got);
  int ok = 0;
  CHECK(hx && ref && got, "allocation");
  if (!hx || !ref || !got) goto done;
  if (!alloc_rows(&m, WROWS, cols, row_len, near)) goto done;
  msp_rng r = {29};
  for (int64_t i = 0; i < WROWS; i++) { // sorted distinct columns spread over the whole x
    int32_t c = (int32_t)msp_rng_range(&r, cols / 10);
    for (int64_t k = m.rowptr[i]; k < m.rowptr[i + 1]; k++) {
      m.colind[k] = c;
      m.val[k] = 2.0 * msp_rng_uniform(&r) - 1.0;
      c += 1 + (int32_t)msp_rng_range(&r, cols / 10); // at most cols - 1
    }
  }
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_COO;
  CHECK_OK(msp_matrix_convert(cpu, A, &o, &C));
  CHECK_OK(msp_vector_create(cpu, WROWS, &y));
  if (!A || !C || !y) goto done;
  msp_matrix_stats st;
  CHECK_OK(msp_matrix_analyze(A, &st));
  // src/cpu/dispatch.h prefetches x past 4 MiB of x and of bandwidth (fp32: 4 bytes a column)
  CHECK(cols < 1000 || st.bandwidth * 4 > (4 << 20),
        "bandwidth %lld: the prefetching loop is not taken", (long long)st.bandwidth);
  CHECK(!near || st.row_cv < 0.5, "row_cv %.2f: the U4 loop is not taken", st.row_cv);
  for (int px = 0; px < 2; px++) { // x in fp64, then in fp32
    msp_vector_destroy(&x);
    CHECK_OK(
        msp_vector_create_precision(cpu, cols, px ? MSP_PRECISION_F32 : MSP_PRECISION_F64, &x));
    if (!x) goto done;
    msp_rng rx = {31};
    for (int64_t j = 0; j < cols; j++) {
      const double v = 2.0 * msp_rng_uniform(&rx) - 1.0;
      hx[j] = px ? (double)(float)v : v; // what an fp32 x holds
    }
    if (cols < 1000) hx[5] = INFINITY; // masked pairs that read it past a row's end stay +0.0
    CHECK_OK(msp_vector_set(x, hx));
    int inf_rows = 0;
    for (int64_t i = 0; i < WROWS; i++) {
      ref[i] = row_ref(&m, i, hx);
      inf_rows += isinf(ref[i]) != 0;
    }
    CHECK(cols >= 1000 || inf_rows > 500, "only %d rows read the infinite column", inf_rows);
    const int threads[4] = {1, 2, 3, 7};
    for (int t = 0; t < 4; t++) {
      omp_set_num_threads(threads[t]);
      for (int f = 0; f < 2; f++) {
        CHECK_OK(msp_spmv(cpu, 1.0, f ? C : A, x, 0.0, y));
        CHECK_OK(msp_vector_get(y, got));
        int bad = 0;
        for (int64_t i = 0; i < WROWS; i++)
          bad += memcmp(&got[i], &ref[i], sizeof got[i]) != 0;
        CHECK(bad == 0,
              "%lld columns, %s lengths, %s, x %s, %d threads: %d rows differ from the "
              "documented order",
              (long long)cols, near ? "near" : "spread", f ? "coo" : "csr", px ? "f32" : "f64",
              threads[t], bad);
      }
    }
  }
  ok = 1;
done:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_matrix_destroy(&C);
  msp_matrix_destroy(&A);
  test_csr_free(&m);
  free(hx);
  free(ref);
  free(got);
  return ok;
}

int main(void) {
  msp_context cpu = NULL;
  msp_matrix A = NULL, C = NULL;
  msp_vector x = NULL, y = NULL;
  test_csr m;
  memset(&m, 0, sizeof m);
  double *hx = malloc(COLS * sizeof *hx), *ref = malloc(ROWS * sizeof *ref);
  double *got = malloc(ROWS * sizeof *got);
  const int saved_threads = omp_get_max_threads();
  CHECK(hx && ref && got, "allocation");
  if (!hx || !ref || !got) goto exit;
  {
    // every length 0 .. 9, odd and even, in no repeating short pattern (row_len); distinct
    // sorted columns, values in [-1, 1)
    msp_rng r = {17};
    if (!alloc_rows(&m, ROWS, COLS, row_len, 0)) goto exit;
    for (int64_t i = 0; i < ROWS; i++) {
      int32_t c = (int32_t)msp_rng_range(&r, 6);
      for (int64_t k = m.rowptr[i]; k < m.rowptr[i + 1]; k++) {
        m.colind[k] = c;
        m.val[k] = 2.0 * msp_rng_uniform(&r) - 1.0;
        c += 1 + (int32_t)msp_rng_range(&r, 6); // at most 6 + 9 * 6 < COLS
      }
    }
  }
  {
    msp_rng r = {23};
    for (int j = 0; j < COLS; j++)
      hx[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
    hx[3] = INFINITY; // one infinite column: no row holds two infinite products (no NaN)
    hx[4] = 0.0;
    hx[9] = -0.0;
  }
  for (int64_t i = 0; i < ROWS; i++)
    ref[i] = row_ref(&m, i, hx);
  int inf_rows = 0;
  for (int64_t i = 0; i < ROWS; i++)
    inf_rows += isinf(ref[i]) != 0;
  CHECK(inf_rows > 50, "only %d rows read the infinite column", inf_rows);

  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_COO;
  CHECK_OK(msp_matrix_convert(cpu, A, &o, &C));
  CHECK_OK(msp_vector_create(cpu, COLS, &x));
  CHECK_OK(msp_vector_create(cpu, ROWS, &y));
  if (!A || !C || !x || !y) goto exit;
  CHECK_OK(msp_vector_set(x, hx));
  const int threads[2] = {1, 3};
  for (int t = 0; t < 2; t++) {
    omp_set_num_threads(threads[t]);
    for (int f = 0; f < 2; f++) {
      CHECK_OK(msp_spmv(cpu, 1.0, f ? C : A, x, 0.0, y));
      CHECK_OK(msp_vector_get(y, got));
      int bad = 0;
      int64_t first = -1;
      for (int64_t i = 0; i < ROWS; i++)
        if (memcmp(&got[i], &ref[i], sizeof got[i]) != 0) {
          bad++;
          if (first < 0) first = i;
        }
      CHECK(bad == 0,
            "%s, %d threads: %d rows differ from the documented order (row %lld: %.17g, "
            "expected %.17g)",
            f ? "coo" : "csr", threads[t], bad, (long long)first, first >= 0 ? got[first] : 0.0,
            first >= 0 ? ref[first] : 0.0);
    }
  }
  // prefetch with the plain loop, prefetch with U4, U4 alone
  if (!variant_case(cpu, WCOLS, 0) || !variant_case(cpu, WCOLS, 1) || !variant_case(cpu, 100, 1))
    goto exit;
exit:
  omp_set_num_threads(saved_threads);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_matrix_destroy(&C);
  msp_matrix_destroy(&A);
  msp_context_destroy(&cpu);
  test_csr_free(&m);
  free(hx);
  free(ref);
  free(got);
  return msp_test_finish("test_cpu_rowsum");
}

// test_cpu_rowsum.c: the CPU CSR and COO products give the bits of the row order that
// src/cpu/dispatch.h documents (msp__cpu_row_sum: even and odd partial sums, added, then the last
// entry of an odd length), now that the last entry is kept by a mask instead of a branch: on rows
// of every length from 0 to 9, with an infinite x entry (a masked product that is infinite must
// not turn a sum into NaN) and zero x entries (signed zero products), for 1 and 3 threads.
#include "testlib.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 1001
#define COLS 64

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

int main(void) {
  msp_context cpu = NULL;
  msp_matrix A = NULL, C = NULL;
  msp_vector x = NULL, y = NULL;
  test_csr m;
  memset(&m, 0, sizeof m);
  int64_t *lens = malloc(ROWS * sizeof *lens);
  double *hx = malloc(COLS * sizeof *hx), *ref = malloc(ROWS * sizeof *ref);
  double *got = malloc(ROWS * sizeof *got);
  const int saved_threads = omp_get_max_threads();
  CHECK(lens && hx && ref && got, "allocation");
  if (!lens || !hx || !ref || !got) goto exit;
  for (int64_t i = 0; i < ROWS; i++)
    lens[i] = (i * 7) % 10; // every length 0 .. 9, odd and even, in no repeating short pattern
  {                         // the lengths above, distinct sorted columns, values in [-1, 1)
    msp_rng r = {17};
    m.rows = ROWS;
    m.cols = COLS;
    m.rowptr = malloc((ROWS + 1) * sizeof *m.rowptr);
    CHECK(m.rowptr != NULL, "allocation");
    if (!m.rowptr) goto exit;
    m.rowptr[0] = 0;
    for (int64_t i = 0; i < ROWS; i++)
      m.rowptr[i + 1] = m.rowptr[i] + lens[i];
    m.nnz = m.rowptr[ROWS];
    m.colind = malloc((size_t)m.nnz * sizeof *m.colind);
    m.val = malloc((size_t)m.nnz * sizeof *m.val);
    CHECK(m.colind && m.val, "allocation");
    if (!m.colind || !m.val) goto exit;
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
exit:
  omp_set_num_threads(saved_threads);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_matrix_destroy(&C);
  msp_matrix_destroy(&A);
  msp_context_destroy(&cpu);
  test_csr_free(&m);
  free(lens);
  free(hx);
  free(ref);
  free(got);
  return msp_test_finish("test_cpu_rowsum");
}

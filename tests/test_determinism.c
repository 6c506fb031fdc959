// test_determinism.c: the same result bits with 1 and with 2+ OpenMP threads (SpMV, reductions).
#include "testlib.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define N 300000

// Run every operation with `threads` threads; write the result bits into out.
static void run_all(msp_context cpu, msp_matrix A, msp_matrix C, const double *hx, int threads,
                    double *y_csr, double *y_coo, double *red) {
  omp_set_num_threads(threads);
  msp_vector x = NULL, y = NULL;
  CHECK_OK(msp_vector_create(cpu, N, &x));
  CHECK_OK(msp_vector_create(cpu, N, &y));
  if (!x || !y) goto exit;
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_spmv(cpu, 1.5, A, x, 0.0, y));
  CHECK_OK(msp_vector_get(y, y_csr));
  CHECK_OK(msp_spmv(cpu, 1.5, C, x, 0.0, y));
  CHECK_OK(msp_vector_get(y, y_coo));
  CHECK_OK(msp_dot(cpu, x, y, &red[0]));
  CHECK_OK(msp_nrm2(cpu, y, &red[1]));
  CHECK_OK(msp_nrm1(cpu, y, &red[2]));
  CHECK_OK(msp_axpby(cpu, 0.3, x, -0.7, y));
  CHECK_OK(msp_nrm2(cpu, y, &red[3]));
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
}

int main(void) {
  msp_context cpu = NULL;
  msp_matrix A = NULL, C = NULL;
  test_csr m;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  CHECK(test_csr_powerlaw(&m, N, N, 20000, 99) == 0, "generator");
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_COO;
  CHECK_OK(msp_matrix_convert(cpu, A, &o, &C));
  double *hx = malloc(N * sizeof *hx);
  double *y1 = malloc(N * sizeof *y1), *c1 = malloc(N * sizeof *c1);
  double *yk = malloc(N * sizeof *yk), *ck = malloc(N * sizeof *ck);
  double r1[4], rk[4];
  msp_rng r = {5};
  for (int i = 0; i < N; i++)
    hx[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
  if (A && C) {
    run_all(cpu, A, C, hx, 1, y1, c1, r1);
    int threads[] = {2, 3, 4, 7};
    for (int t = 0; t < 4; t++) {
      run_all(cpu, A, C, hx, threads[t], yk, ck, rk);
      CHECK(memcmp(y1, yk, N * sizeof *y1) == 0, "CSR SpMV bits differ: 1 vs %d threads",
            threads[t]);
      CHECK(memcmp(c1, ck, N * sizeof *c1) == 0, "COO SpMV bits differ: 1 vs %d threads",
            threads[t]);
      CHECK(memcmp(r1, rk, sizeof r1) == 0,
            "reductions differ with %d threads: dot %.17g/%.17g nrm2 %.17g/%.17g nrm1 "
            "%.17g/%.17g",
            threads[t], r1[0], rk[0], r1[1], rk[1], r1[2], rk[2]);
    }
  }
  free(hx);
  free(y1);
  free(c1);
  free(yk);
  free(ck);
  test_csr_free(&m);
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&C);
  msp_context_destroy(&cpu);
  return msp_test_finish("test_determinism");
}

// test_threads.c: the thread count of a context (msp_context_set_threads): argument checks, the
// count reported, the caller's OpenMP setting left as it was, the same bits for any count, and
// the default's share of a loaded machine (msp__threads_free) and of a small product, and the
// product on the caller's arrays (msp_spmv_host).
#include "internal.h"
#include "testlib.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 200003

// y = A x, ||y||, and x after GMRES on A, with the context's count set to `threads`.
static void run(msp_context ctx, msp_matrix A, msp_matrix S, int threads, double *y, double *red,
                double *xs) {
  msp_vector x = NULL, v = NULL, b = NULL, xg = NULL;
  CHECK_OK(msp_context_set_threads(ctx, threads));
  if (threads > 0)
    CHECK(msp_context_threads(ctx) == threads, "msp_context_threads %d, set %d",
          msp_context_threads(ctx), threads);
  const int caller = omp_get_max_threads();
  CHECK_OK(msp_vector_create(ctx, N, &x));
  CHECK_OK(msp_vector_create(ctx, N, &v));
  if (!x || !v) goto exit;
  CHECK_OK(msp_vector_fill(x, 0.25));
  CHECK_OK(msp_spmv(ctx, 1.0, A, x, 0.0, v));
  CHECK_OK(msp_vector_get(v, y));
  {
    // The product on the caller's arrays gives the same bits as through vectors.
    double *xh = malloc(N * sizeof *xh), *yh = malloc(N * sizeof *yh);
    if (xh && yh) {
      for (int i = 0; i < N; i++)
        xh[i] = 0.25;
      CHECK_OK(msp_spmv_host(ctx, 1.0, A, xh, 0.0, yh));
      CHECK(memcmp(yh, y, N * sizeof *y) == 0,
            "msp_spmv_host with %d threads differs from msp_spmv", threads);
      CHECK_OK(msp_spmv_host(ctx, 2.0, A, xh, -1.0, yh)); // beta reads y in place: 2y - y = y
      CHECK(memcmp(yh, y, N * sizeof *y) == 0, "msp_spmv_host with beta -1 is not 2Ax - Ax");
    }
    free(xh), free(yh);
  }
  CHECK_OK(msp_nrm2(ctx, v, &red[0]));
  CHECK_OK(msp_dot(ctx, x, v, &red[1]));
  CHECK(omp_get_max_threads() == caller, "the caller's OpenMP count changed from %d to %d", caller,
        omp_get_max_threads());
  const int64_t n = msp_matrix_rows(S);
  CHECK_OK(msp_vector_create(ctx, n, &b));
  CHECK_OK(msp_vector_create(ctx, n, &xg));
  if (!b || !xg) goto exit;
  CHECK_OK(msp_vector_fill(b, 1.0));
  CHECK_OK(msp_vector_fill(xg, 0.0));
  msp_solver_options o = msp_solver_options_default();
  o.restart = 20;
  o.rtol = 1e-10;
  msp_solver_report r;
  memset(&r, 0, sizeof r); // no history buffers
  CHECK_OK(msp_gmres(ctx, S, b, xg, &o, &r));
  CHECK(r.converged, "GMRES with %d threads did not converge", threads);
  CHECK_OK(msp_vector_get(xg, xs));
  CHECK(omp_get_max_threads() == caller, "the caller's OpenMP count changed after msp_gmres");
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&v);
  msp_vector_destroy(&b);
  msp_vector_destroy(&xg);
}

int main(void) {
  msp_context ctx = NULL;
  msp_matrix A = NULL, S = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  if (!ctx) return msp_test_finish("test_threads");

  // Arguments.
  CHECK_STATUS(msp_context_set_threads(ctx, -1), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "negative") != NULL, "message: %s", msp_last_error());
  CHECK_STATUS(msp_context_set_threads(NULL, 2), MSP_ERR_INVALID_ARGUMENT);
  CHECK(msp_context_threads(NULL) == 0, "msp_context_threads(NULL) is not 0");
  CHECK_OK(msp_context_set_threads(ctx, 0));
  const int def = msp_context_threads(ctx);
  CHECK(def >= 1 && def <= omp_get_max_threads(), "default %d outside 1..%d", def,
        omp_get_max_threads());

  // The default's share: the caller and its own spinning workers are not competition.
  static const struct {
    int max, online, running, own, want;
  } cases[] = {
      {2, 2, 1, 1, 2},  // idle machine: every CPU
      {2, 2, 3, 1, 1},  // two busy programs on two CPUs: one thread
      {2, 2, 2, 1, 1},  // one busy program: the one CPU left
      {2, 2, 4, 2, 1},  // two busy programs, our last team of 2 still spinning
      {2, 2, 2, 2, 2},  // only our own spinning worker: every CPU
      {8, 16, 5, 1, 8}, // 4 others on 16 CPUs: capped by the count allowed
      {4, 4, 9, 1, 1},  // more others than CPUs: at least one
      {4, 4, 0, 1, 4},  // nothing counted
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const int got =
        msp__threads_free(cases[k].max, cases[k].online, cases[k].running, cases[k].own);
    CHECK(got == cases[k].want, "msp__threads_free(%d, %d, %d, %d) = %d, want %d", cases[k].max,
          cases[k].online, cases[k].running, cases[k].own, got, cases[k].want);
  }

  // A small operation's default team: one thread per MSP__THREAD_GRAIN units of work; a count
  // the context set is kept whatever the work.
  if (!omp_in_parallel()) {
    const int caller = omp_get_max_threads();
    int prev = msp__threads_enter_work(ctx, 100);
    CHECK(omp_get_max_threads() == 1, "a product of 100 nonzeros gets %d threads",
          omp_get_max_threads());
    msp__threads_leave(prev);
    CHECK(omp_get_max_threads() == caller, "the caller's count was not put back");
    prev = msp__threads_enter_work(ctx, 2 * MSP__THREAD_GRAIN);
    CHECK(omp_get_max_threads() <= 2, "a product of 2 grains gets %d threads",
          omp_get_max_threads());
    msp__threads_leave(prev);
    CHECK_OK(msp_context_set_threads(ctx, 3));
    prev = msp__threads_enter_work(ctx, 100);
    CHECK(omp_get_max_threads() == 3, "a set count of 3 became %d for a small product",
          omp_get_max_threads());
    msp__threads_leave(prev);
    CHECK_OK(msp_context_set_threads(ctx, 0));
  }

  // The same bits for any count, the default included.
  CHECK_OK(msp_matrix_generate(ctx, "random:200003:9:5", &A));
  CHECK_OK(msp_matrix_generate(ctx, "convdiff3d:12", &S));
  if (!A || !S) goto exit;

  // msp_spmv_host's arguments: NULL arrays, overlapping x and y, a foreign matrix.
  {
    double *buf = calloc(2 * N, sizeof *buf);
    if (buf) {
      CHECK_STATUS(msp_spmv_host(ctx, 1.0, A, NULL, 0.0, buf), MSP_ERR_INVALID_ARGUMENT);
      CHECK(strstr(msp_last_error(), "x is NULL") != NULL, "message: %s", msp_last_error());
      CHECK_STATUS(msp_spmv_host(ctx, 1.0, A, buf, 0.0, NULL), MSP_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(msp_spmv_host(ctx, 1.0, A, buf, 0.0, buf + N / 2), MSP_ERR_INVALID_ARGUMENT);
      CHECK(strstr(msp_last_error(), "overlap") != NULL, "message: %s", msp_last_error());
      CHECK_STATUS(msp_spmv_host(ctx, 1.0, NULL, buf, 0.0, buf + N), MSP_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(msp_spmv_host(NULL, 1.0, A, buf, 0.0, buf + N), MSP_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(msp_spmv_host(ctx, NAN, A, buf, 0.0, buf + N), MSP_ERR_INVALID_ARGUMENT);
      CHECK_OK(msp_spmv_host(ctx, 1.0, A, buf, 0.0, buf + N)); // adjacent, not overlapping
    } else {
      CHECK(0, "out of memory");
    }
    free(buf);
  }
  const int64_t ns = msp_matrix_rows(S);
  static const int counts[] = {1, 2, 3, 5, 0};
  double *y0 = malloc(N * sizeof *y0), *y = malloc(N * sizeof *y);
  double *x0 = malloc((size_t)ns * sizeof *x0), *x = malloc((size_t)ns * sizeof *x);
  double red0[2], red[2];
  if (!y0 || !y || !x0 || !x) {
    CHECK(0, "out of memory");
  } else {
    run(ctx, A, S, counts[0], y0, red0, x0);
    for (int c = 1; c < 5; c++) {
      run(ctx, A, S, counts[c], y, red, x);
      CHECK(memcmp(y, y0, N * sizeof *y) == 0, "y with %d threads differs from 1 thread",
            counts[c]);
      CHECK(memcmp(red, red0, sizeof red) == 0, "norm or dot with %d threads differs", counts[c]);
      CHECK(memcmp(x, x0, (size_t)ns * sizeof *x) == 0, "GMRES x with %d threads differs",
            counts[c]);
    }
  }
  free(y0), free(y), free(x0), free(x);
exit:
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&S);
  msp_context_destroy(&ctx);
  return msp_test_finish("test_threads");
}

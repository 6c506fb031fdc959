// gmres_driver.c: solve A x = 1 with msp_gmres (CPU, x0 = 0) and print the report as one JSON
// line; used by tests/gmres_scipy.py to compare iteration counts with SciPy.
//
// usage: gmres_driver MATRIX.mtx[.gz]|gen:SPEC [restart] [rtol] [max_iters] [basis|auto]
//                     [none|jacobi|ilu0] [cgs|mgs|dcgs2] [history|-] [X.mtx]
// X.mtx: the solution written there (Matrix Market array).
#include "mixsparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: %s MATRIX|gen:SPEC [restart] [rtol] [max_iters] [basis|auto] "
            "[none|jacobi|ilu0] [cgs|mgs|dcgs2] [history|-] [X.mtx]\n",
            argv[0]);
    return 2;
  }
  msp_solver_options o = msp_solver_options_default();
  if (argc > 2) o.restart = atoi(argv[2]);
  if (argc > 3) o.rtol = atof(argv[3]);
  if (argc > 4) o.max_iters = atoll(argv[4]);
  if (argc > 5) {
    if (strcmp(argv[5], "auto") == 0)
      o.basis_auto = 1;
    else if (msp_precision_parse(argv[5], &o.basis_precision) != MSP_SUCCESS) {
      fprintf(stderr, "%s\n", msp_last_error());
      return 2;
    }
  }
  if (argc > 6)
    o.precond = strcmp(argv[6], "jacobi") == 0 ? MSP_PRECOND_JACOBI
                : strcmp(argv[6], "ilu0") == 0 ? MSP_PRECOND_ILU0
                                               : MSP_PRECOND_NONE;
  if (argc > 7)
    o.ortho = strcmp(argv[7], "mgs") == 0   ? MSP_ORTHO_MGS
              : strcmp(argv[7], "cgs") == 0 ? MSP_ORTHO_CGS
                                            : MSP_ORTHO_DCGS2;
  const int want_history = argc > 8 && strcmp(argv[8], "history") == 0;

  msp_context ctx = NULL;
  msp_matrix A = NULL;
  msp_vector b = NULL, x = NULL;
  double *hist = NULL;
  int rc = 1;
  msp_status st = msp_context_create(MSP_BACKEND_CPU, 0, &ctx);
  if (st == MSP_SUCCESS)
    st = strncmp(argv[1], "gen:", 4) == 0 ? msp_matrix_generate(ctx, argv[1] + 4, &A)
                                          : msp_matrix_read_mtx(ctx, argv[1], 0, &A);
  const int64_t n = A ? msp_matrix_rows(A) : 0;
  if (st == MSP_SUCCESS) st = msp_vector_create(ctx, n, &b);
  if (st == MSP_SUCCESS) st = msp_vector_create(ctx, n, &x);
  if (st == MSP_SUCCESS) st = msp_vector_fill(b, 1.0);
  msp_solver_report rep;
  memset(&rep, 0, sizeof rep);
  if (st == MSP_SUCCESS && want_history) {
    rep.history_capacity = o.max_iters + 1;
    hist = malloc((size_t)rep.history_capacity * sizeof *hist);
    rep.history = hist;
    if (!hist) rep.history_capacity = 0;
  }
  if (st == MSP_SUCCESS) st = msp_gmres(ctx, A, b, x, &o, &rep);
  if (st == MSP_SUCCESS && argc > 9) st = msp_vector_write_mtx(x, argv[9]);
  if (st != MSP_SUCCESS) {
    fprintf(stderr, "%s: %s: %s\n", argv[1], msp_status_name(st), msp_last_error());
    goto exit;
  }
  printf("{\"matrix\": \"%s\", \"n\": %lld, \"restart\": %d, \"converged\": %d, "
         "\"iterations\": %lld, \"restarts\": %lld, \"rel_residual\": %.6e, \"time_s\": %.6f, "
         "\"basis_bytes\": %.0f",
         argv[1], (long long)n, o.restart, rep.converged, (long long)rep.iterations,
         (long long)rep.restarts, rep.rel_residual, rep.time_s, rep.basis_bytes);
  printf(", \"iterations_by_precision\": {");
  for (int p = 0, first = 1; p < MSP_PRECISION_COUNT; p++)
    if (rep.iterations_by_precision[p]) {
      printf("%s\"%s\": %lld", first ? "" : ", ", msp_precision_name((msp_precision)p),
             (long long)rep.iterations_by_precision[p]);
      first = 0;
    }
  printf("}");
  if (want_history) {
    printf(", \"history\": [");
    for (int64_t k = 0; k < rep.history_length; k++)
      printf("%s%.6e", k ? ", " : "", hist[k]);
    printf("]");
  }
  printf("}\n");
  rc = 0;
exit:
  free(hist);
  msp_vector_destroy(&b);
  msp_vector_destroy(&x);
  msp_matrix_destroy(&A);
  msp_context_destroy(&ctx);
  return rc;
}

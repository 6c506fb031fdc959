// cmd_solve.c: `mixsparse solve`: A x = b by GMRES / CB-GMRES (msp_gmres).
#define _POSIX_C_SOURCE 200809L
#include "cmd.h"
#include "common.h"
#include "internal.h" // msp__same_file

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *solve_help =
    "usage: mixsparse solve FILE [--rhs ones|sin|random:SEED|B.mtx] [--x0 zero|X0.mtx]\n"
    "         [--restart M] [--rtol R] [--atol A] [--max-iters N]\n"
    "         [--basis f64|f32|f16|bf16|fx32|fx16|cpms2|cpms4|auto] [--precond none|jacobi|ilu0]\n"
    "         [--ortho dcgs2|cgs|mgs] [--backend cpu|cuda|auto] [--format F] [--precision P]\n"
    "         [--output X.mtx] [--history H.csv] [--monitor] [--json] [--allow-nonfinite]\n"
    "  Solve A x = b by restarted GMRES with right preconditioning; the Krylov basis is stored\n"
    "  in --basis (CB-GMRES; auto starts in f32 and moves to f64 where the residual stagnates).\n"
    "  --rhs sin: x*_i = sin(i) normalised, b = A x* (the CB-GMRES paper's), and the error\n"
    "  ||x - x*|| / ||x*|| is reported too. Defaults: --rhs ones, --x0 zero, --restart 100,\n"
    "  --rtol 1e-8, --atol 0, --max-iters 10000, --basis f64, --precond none, --ortho dcgs2.\n"
    "  --format / --precision convert A for the products (default: CSR f64 as read).\n"
    "  --history writes the recurrence's relative residual per iteration (CSV).\n"
    "  --monitor prints a line per iteration as it runs: the iteration, the recurrence's\n"
    "  residual norm, the relative residual and the basis precision (on stderr with --json).\n"
    "  Exit status: 0 converged, 3 not converged within --max-iters, 1 error, 2 usage error.\n"
    "  --backend cuda: the matrix, the vectors and the basis stay on the GPU; Jacobi and ILU(0)'s\n"
    "  triangular solves run there too (ILU(0) is factorised on the host, once).\n"
    "  FILE may be gen:SPEC for a built-in matrix, e.g. gen:poisson3d:64 or gen:convdiff3d:64\n"
    "  (see 'mixsparse info --help'). --threads N: host threads.\n";

#define SOLVE_OPTIONS                                                                              \
  (OPT_JSON | OPT_ALLOW_NONFINITE | OPT_BACKEND | OPT_FORMAT | OPT_PRECISION | OPT_RANGE |         \
   OPT_OUTPUT | OPT_RHS | OPT_X0 | OPT_RESTART | OPT_RTOL | OPT_ATOL | OPT_MAX_ITERS | OPT_BASIS | \
   OPT_PRECOND | OPT_ORTHO | OPT_HISTORY | OPT_MONITOR)

enum { EXIT_NOT_CONVERGED = 3 };

static int is_file_spec(const char *v) {
  return v && strcmp(v, "ones") && strcmp(v, "sin") && strcmp(v, "zero") &&
         strncmp(v, "random:", 7);
}

// --monitor: one line per iteration, flushed, so that a reader of a pipe sees it at once.
static int monitor_line(void *data, int64_t iteration, double residual, double rel_residual,
                        msp_precision basis) {
  FILE *f = data;
  fprintf(f, "%5lld residual %.12e relative %.12e basis %s\n", (long long)iteration, residual,
          rel_residual, msp_precision_name(basis));
  fflush(f);
  return 0;
}

static const char *ortho_name(msp_ortho o) {
  return o == MSP_ORTHO_MGS ? "mgs" : o == MSP_ORTHO_CGS ? "cgs" : "dcgs2";
}

// The history as CSV, through the library's safe writer (write_file_safely).
static int write_history(const char *path, const msp_solver_report *r) {
  size_t cap = 64 + (size_t)(r->history_length > 0 ? r->history_length : 0) * 48, n = 0;
  char *text = malloc(cap);
  if (!text) {
    fprintf(stderr, "%s: %s: cannot allocate the history's %zu bytes\n", prog, path, cap);
    return EXIT_FAILED;
  }
  n += (size_t)snprintf(text + n, cap - n, "iteration,relative_residual\n");
  for (int64_t k = 0; k < r->history_length && n < cap; k++)
    n += (size_t)snprintf(text + n, cap - n, "%lld,%.17g\n", (long long)k, r->history[k]);
  const int rc = write_file_safely(path, text, n < cap ? n : cap);
  free(text);
  return rc;
}

int cmd_solve(int argc, char **argv) {
  options o;
  options_init(&o);
  o.rhs = "ones";
  o.x0 = "zero";
  int rc = parse_options(argc, argv, SOLVE_OPTIONS, 1, &o);
  if (rc) return rc;
  if (o.help) {
    fputs(solve_help, stdout);
    return EXIT_OK;
  }
  {
    const char *outs[2] = {o.output, o.history};
    const char *ins[3] = {strncmp(o.file, "gen:", 4) ? o.file : NULL,
                          is_file_spec(o.rhs) ? o.rhs : NULL, is_file_spec(o.x0) ? o.x0 : NULL};
    const char *const out_opts[2] = {"--output", "--history"};
    const int rc_out = check_outputs(2, outs, out_opts, 3, ins);
    if (rc_out != EXIT_OK) return rc_out;
  }
  msp_solver_options so = msp_solver_options_default();
  if (o.given & OPT_RESTART) so.restart = o.restart;
  if (o.given & OPT_RTOL) so.rtol = o.rtol;
  if (o.given & OPT_ATOL) so.atol = o.atol;
  if (o.given & OPT_MAX_ITERS) so.max_iters = o.max_iters;
  if (o.given & OPT_BASIS) {
    so.basis_auto = o.basis_auto;
    if (!o.basis_auto) so.basis_precision = o.basis;
  }
  if (o.given & OPT_PRECOND) so.precond = o.precond;
  if (o.given & OPT_ORTHO) so.ortho = o.ortho;

  msp_context ctx = NULL;
  msp_matrix A = NULL, M = NULL;
  msp_vector b = NULL, x = NULL, xs = NULL;
  double *h = NULL, *hs = NULL;
  json *j = NULL;
  msp_solver_report r;
  memset(&r, 0, sizeof r);
  rc = EXIT_FAILED;
  msp_status st = context_create(o.backend, 0, &ctx);
  if (st != MSP_SUCCESS) {
    fail(st, o.backend == MSP_BACKEND_CUDA ? "--backend cuda" : "context");
    goto exit;
  }
  if ((st = load_matrix(ctx, &o, &A)) != MSP_SUCCESS) {
    fail(st, o.file);
    goto exit;
  }
  const int64_t n = msp_matrix_rows(A);
  if (msp_matrix_cols(A) != n) {
    fprintf(stderr, "%s: %s is %lld x %lld: solve needs a square matrix\n", prog, o.file,
            (long long)n, (long long)msp_matrix_cols(A));
    goto exit;
  }
  M = A;
  if (o.given & (OPT_FORMAT | OPT_PRECISION)) {
    msp_convert_options co = msp_convert_options_default();
    co.format = o.format;
    co.precision = o.precision;
    co.cpms_segments = o.cpms_segments;
    co.range = o.range;
    progress_start("converting");
    st = msp_matrix_convert(ctx, A, &co, &M);
    progress_stop();
    if (st != MSP_SUCCESS) {
      M = NULL;
      fail(st, o.file);
      goto exit;
    }
  }
  if ((st = msp_vector_create(ctx, n, &b)) || (st = msp_vector_create(ctx, n, &x))) {
    fail(st, "vectors");
    goto exit;
  }
  // b
  if (!strcmp(o.rhs, "sin")) {
    if (!(hs = malloc((size_t)(n > 0 ? n : 1) * sizeof *hs))) {
      fprintf(stderr, "%s: cannot allocate x* of %lld entries\n", prog, (long long)n);
      goto exit;
    }
    double nn = 0.0;
    for (int64_t i = 0; i < n; i++) {
      hs[i] = sin((double)i);
      nn += hs[i] * hs[i];
    }
    nn = sqrt(nn);
    for (int64_t i = 0; i < n; i++)
      hs[i] = nn > 0 ? hs[i] / nn : 0.0;
    if ((st = msp_vector_create(ctx, n, &xs)) || (st = msp_vector_set(xs, hs)) ||
        (st = msp_spmv(ctx, 1.0, A, xs, 0.0, b))) {
      fail(st, "--rhs sin");
      goto exit;
    }
  } else {
    options ox = o;
    ox.x_spec = o.rhs;
    if (make_x(ctx, &ox, n, &h) != MSP_SUCCESS) goto exit;
    if ((st = msp_vector_set(b, h)) != MSP_SUCCESS) {
      fail(st, "--rhs");
      goto exit;
    }
    free(h);
    h = NULL;
  }
  // x0
  if (strcmp(o.x0, "zero") != 0) {
    options ox = o;
    ox.x_spec = o.x0;
    if (make_x(ctx, &ox, n, &h) != MSP_SUCCESS) goto exit;
    if ((st = msp_vector_set(x, h)) != MSP_SUCCESS) {
      fail(st, "--x0");
      goto exit;
    }
    free(h);
    h = NULL;
  }
  if (o.history) {
    r.history_capacity = so.max_iters + 1;
    if (!(r.history = malloc((size_t)r.history_capacity * sizeof *r.history))) {
      fprintf(stderr, "%s: cannot allocate the history of %lld entries\n", prog,
              (long long)r.history_capacity);
      goto exit;
    }
  }
  if (o.monitor) {
    so.monitor = monitor_line;
    so.monitor_data = o.json ? stderr : stdout;
  }
  // the header before the solve, so that a long run shows what it is running at once
  if (!o.json) {
    printf("matrix       %s: %lld x %lld, %lld nonzeros; backend %s, %s %s\n", o.file, (long long)n,
           (long long)n, (long long)msp_matrix_nnz(A), msp_backend_name(msp_context_backend(ctx)),
           msp_format_name(msp_matrix_format(M)), msp_precision_name(msp_matrix_precision(M)));
    printf("options      restart %d, rtol %.3g, atol %.3g, max-iters %lld, basis %s, precond %s, "
           "ortho %s\n",
           so.restart, so.rtol, so.atol, (long long)so.max_iters,
           so.basis_auto ? "auto" : msp_precision_name(so.basis_precision),
           so.precond == MSP_PRECOND_JACOBI ? "jacobi"
           : so.precond == MSP_PRECOND_ILU0 ? "ilu0"
                                            : "none",
           ortho_name(so.ortho));
    fflush(stdout);
  }
  if (!o.monitor) progress_start("solving (GMRES)"); // --monitor prints its own lines
  st = msp_gmres(ctx, M, b, x, &so, &r);
  progress_stop();
  if (st != MSP_SUCCESS) {
    fail(st, "solve");
    goto exit;
  }
  double err = -1.0;
  if (hs) {
    if (!(h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h)) || (st = msp_vector_get(x, h))) {
      fail(st ? st : MSP_ERR_OUT_OF_MEMORY, "x");
      goto exit;
    }
    double e = 0.0;
    for (int64_t i = 0; i < n; i++)
      e += (h[i] - hs[i]) * (h[i] - hs[i]);
    err = sqrt(e); // ||x*|| = 1
  }
  if (o.output && (st = write_vector(x, o.output)) != MSP_SUCCESS) {
    fail(st, o.output);
    goto exit;
  }
  if (o.history && write_history(o.history, &r) != EXIT_OK) goto exit;
  // per iteration: the time after the set-up (work vectors, basis, preconditioner)
  const double per_it = r.iterations > 0 ? (r.time_s - r.setup_s) / (double)r.iterations : 0.0;
  const int cycles = r.cycles_recorded;
  if (o.json) {
    if (!(j = json_new())) {
      fprintf(stderr, "%s: out of memory\n", prog);
      goto exit;
    }
    json_string(j, "file", o.file);
    json_int(j, "rows", n);
    json_int(j, "nnz", msp_matrix_nnz(A));
    json_string(j, "backend", msp_backend_name(msp_context_backend(ctx)));
    json_string(j, "format", msp_format_name(msp_matrix_format(M)));
    json_string(j, "precision", msp_precision_name(msp_matrix_precision(M)));
    json_bool(j, "converged", r.converged);
    json_int(j, "iterations", r.iterations);
    json_int(j, "restarts", r.restarts);
    json_number(j, "relative_residual", r.rel_residual);
    if (hs) json_number(j, "error", err);
    json_number(j, "time_seconds", r.time_s);
    json_number(j, "setup_seconds", r.setup_s);
    json_number(j, "time_per_iteration_seconds", per_it);
    json_array(j, "basis_precisions");
    for (int c = 0; c < cycles; c++)
      json_string(j, NULL, msp_precision_name(r.cycle_precision[c]));
    json_end(j);
    // inner iterations run with each basis precision (every cycle counted, also past the ones
    // basis_precisions lists)
    json_object(j, "iterations_per_precision");
    for (int p = 0; p < MSP_PRECISION_COUNT; p++)
      if (r.iterations_by_precision[p] > 0)
        json_int(j, msp_precision_name((msp_precision)p), (long long)r.iterations_by_precision[p]);
    json_end(j);
    const int prc = json_finish(j, NULL);
    j = NULL;
    if (prc != EXIT_OK) goto exit;
  } else {
    printf("converged    %s%s\n", r.converged ? "yes" : "no",
           r.stopped ? " (stopped by the monitor)" : "");
    printf("iterations   %lld (%lld restart%s)\n", (long long)r.iterations, (long long)r.restarts,
           r.restarts == 1 ? "" : "s");
    printf("residual     %.3e (explicit ||b - A x|| / ||b||)\n", r.rel_residual);
    if (hs) printf("error        %.3e (||x - x*|| / ||x*||)\n", err);
    printf("basis        ");
    for (int c = 0; c < cycles;) { // runs of equal precision: "f32 x3, f64 x1"
      int e = c;
      while (e < cycles && r.cycle_precision[e] == r.cycle_precision[c])
        e++;
      printf("%s%s x%d", c ? ", " : "", msp_precision_name(r.cycle_precision[c]), e - c);
      c = e;
    }
    if (cycles == MSP_SOLVER_MAX_CYCLES && r.restarts + 1 > cycles)
      printf(" (the first %d of %lld cycles)", cycles, (long long)r.restarts + 1);
    printf("\n");
    printf("by basis     ");
    for (int p = 0, first = 1; p < MSP_PRECISION_COUNT; p++)
      if (r.iterations_by_precision[p] > 0) {
        printf("%s%s %lld", first ? "" : ", ", msp_precision_name((msp_precision)p),
               (long long)r.iterations_by_precision[p]);
        first = 0;
      }
    printf(" iterations\n");
    printf("time         %.6f s, %.6f ms per iteration, setup %.6f s\n", r.time_s, per_it * 1e3,
           r.setup_s);
  }
  rc = r.converged ? EXIT_OK : EXIT_NOT_CONVERGED;
exit:
  json_free(j);
  free(r.history);
  free(h);
  free(hs);
  msp_vector_destroy(&xs);
  msp_vector_destroy(&x);
  msp_vector_destroy(&b);
  if (M != A) msp_matrix_destroy(&M);
  msp_matrix_destroy(&A);
  msp_context_destroy(&ctx);
  return rc;
}

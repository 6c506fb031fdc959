// bench_basis.c: mixsparse-bench-basis, the Krylov-basis passes of GMRES alone: DCGS2's fused
// projection and update (and, for comparison, the re-orthogonalising CGS's projection and
// subtraction) over j + 1 columns of n rows, for each storage precision, on one backend.
//
// Each row: the median time of a pass over `--reps` runs (device synchronised around each), the
// bytes it moves under the model (the columns read once in their precision, fixed point with its
// scale, w read in f64; the update also writes column j, column j + 1 and w), GB/s, and that
// rate as a share of the read bandwidth measured in the same run (msp_nrm1 over a 1 GiB fp64
// vector: one read stream). Benchmarks never decide pass or fail.
#include "internal.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *t, int k) {
  qsort(t, (size_t)k, sizeof *t, cmp_double);
  return k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
}

static int usage(void) {
  fprintf(stderr,
          "usage: mixsparse-bench-basis [--backend cpu|cuda|auto] [--n ROWS] [--cols J]\n"
          "  [--precisions f64,f32,...] [--reps R] [--csv FILE]\n"
          "  defaults: --n 2097152 --cols 100 (columns 0..J-1, pass j = J-1), all precisions,\n"
          "  --reps 20\n");
  return 2;
}

int main(int argc, char **argv) {
  int64_t n = 2097152;
  int cols = 100, reps = 20;
  const char *csv = NULL;
  char precs_buf[256] = "f64,f32,f16,bf16,fx32,fx16,cpms2";
  msp_backend backend = MSP_BACKEND_AUTO;
  for (int i = 1; i < argc; i++) {
    const int more = i + 1 < argc;
    if (!strcmp(argv[i], "--n") && more)
      n = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--cols") && more)
      cols = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && more)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--csv") && more)
      csv = argv[++i];
    else if (!strcmp(argv[i], "--precisions") && more)
      snprintf(precs_buf, sizeof precs_buf, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--backend") && more) {
      if (msp_backend_parse(argv[++i], &backend) != MSP_SUCCESS) return usage();
    } else
      return usage();
  }
  if (n < 1 || cols < 2 || reps < 1) return usage();
  msp_context ctx = NULL;
  if (msp_context_create(backend, 0, &ctx) != MSP_SUCCESS) {
    fprintf(stderr, "mixsparse-bench-basis: %s\n", msp_last_error());
    return 1;
  }
  const msp__backend *be = ctx->backend;
  int rc = 0;
  double *t = malloc((size_t)reps * sizeof *t), *h = malloc((size_t)n * sizeof *h);
  double *r = malloc((4 * (size_t)cols + 4) * sizeof *r);
  msp_vector w = NULL, big = NULL;
  FILE *out = csv ? fopen(csv, "w") : NULL;
  if (!t || !h || !r || (csv && !out) || msp_vector_create(ctx, n, &w) != MSP_SUCCESS) {
    fprintf(stderr, "mixsparse-bench-basis: cannot set up (%s)\n", msp_last_error());
    rc = 1;
    goto done;
  }
  // the reference: one read stream of 1 GiB in fp64
  double bw = 0.0;
  {
    const int64_t nb = (int64_t)1 << 27;
    double s = 0.0;
    if (msp_vector_create(ctx, nb, &big) == MSP_SUCCESS && msp_vector_fill(big, 1.0) == 0 &&
        msp_nrm1(ctx, big, &s) == MSP_SUCCESS) {
      for (int q = 0; q < reps; q++) {
        msp_context_synchronize(ctx);
        const double t0 = omp_get_wtime();
        msp_nrm1(ctx, big, &s);
        t[q] = omp_get_wtime() - t0;
      }
      bw = 8.0 * (double)nb / median(t, reps) / 1e9;
    }
    msp_vector_destroy(&big);
  }
  printf("backend %s; n %lld, %d columns; measured read bandwidth %.1f GB/s (msp_nrm1, 1 GiB)\n",
         msp_backend_name(msp_context_backend(ctx)), (long long)n, cols, bw);
  const char *hdr = "backend,precision,pass,n,columns,ms,bytes,gb_per_s,read_bw_gb_per_s,pct_bw\n";
  fputs(hdr, stdout);
  if (out) fputs(hdr, out);
  char *save = NULL;
  for (char *tok = strtok_r(precs_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    msp_precision p;
    if (msp_precision_parse(tok, &p) != MSP_SUCCESS) {
      fprintf(stderr, "mixsparse-bench-basis: %s\n", msp_last_error());
      rc = 2;
      break;
    }
    msp__basis *V = NULL;
    if (be->basis_alloc(ctx, n, cols + 1, p, &V) != MSP_SUCCESS) {
      fprintf(stderr, "mixsparse-bench-basis: %s: %s\n", tok, msp_last_error());
      rc = 1;
      continue;
    }
    for (int k = 0; k < cols; k++) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; i++)
        h[i] = sin(0.001 * (double)(i + 1) * (k + 1)) / sqrt(0.5 * (double)n);
      msp_vector_set(w, h);
      msp__vector_current(w);
      be->basis_store(ctx, V, k, w);
      msp__vector_written(w);
    }
    const int j = cols - 1;
    const double cb = (double)n * (double)msp__prec_bytes(p) + (msp_prec_is_fixed(p) ? 8.0 : 0.0);
    double *sv = r + 2 * cols + 2, *c = sv + cols;
    for (int k = 0; k < cols; k++)
      sv[k] = 1e-9, c[k] = 1e-3;
    const char *names[4] = {"dcgs2_project", "dcgs2_update", "cgs_project", "cgs_subtract"};
    const double bytes[4] = {(j + 1) * cb + 8.0 * n, (j + 1) * cb + 2 * cb + 16.0 * n,
                             (j + 1) * cb + 8.0 * n, (j + 1) * cb + 16.0 * n};
    for (int op = 0; op < 4; op++) {
      for (int q = -2; q < reps; q++) { // two untimed runs first
        msp_context_synchronize(ctx);
        const double t0 = omp_get_wtime();
        msp_status st = MSP_SUCCESS;
        if (op == 0) st = be->basis_dcgs2_project(ctx, V, j, w, r);
        if (op == 1) st = be->basis_dcgs2_update(ctx, V, j, sv, 1.0, c, w, 0);
        if (op == 2) st = be->basis_project(ctx, V, 0, j + 1, w, r, NULL);
        if (op == 3) st = be->basis_subtract(ctx, V, 0, j + 1, c, w, NULL, NULL);
        msp_context_synchronize(ctx);
        if (st != MSP_SUCCESS) {
          fprintf(stderr, "%s %s: %s\n", tok, names[op], msp_last_error());
          rc = 1;
          break;
        }
        if (q >= 0) t[q] = omp_get_wtime() - t0;
      }
      const double ms = 1e3 * median(t, reps), gbs = bytes[op] / (ms * 1e-3) / 1e9;
      char row[512];
      snprintf(row, sizeof row, "%s,%s,%s,%lld,%d,%.4f,%.0f,%.1f,%.1f,%.1f\n",
               msp_backend_name(msp_context_backend(ctx)), tok, names[op], (long long)n, j + 1, ms,
               bytes[op], gbs, bw, bw > 0 ? 100.0 * gbs / bw : 0.0);
      fputs(row, stdout);
      if (out) fputs(row, out);
      fflush(stdout);
    }
    be->basis_free(ctx, V);
  }
done:
  if (out) fclose(out);
  msp_vector_destroy(&w);
  free(t);
  free(h);
  free(r);
  msp_context_destroy(&ctx);
  return rc;
}

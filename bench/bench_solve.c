// bench_solve.c: mixsparse-bench-solve, GMRES / CB-GMRES time to solution on generated systems,
// one row per system x restart x basis x preconditioner (b = ones, x0 = 0).
//
// Each row: time to solution (msp_gmres's own clock: preconditioner set-up, basis allocation and
// the final explicit residual included), iterations, time per inner iteration, bytes per
// iteration under the library's model (SpMV bytes of the products the solve ran, one per
// iteration plus one per cycle for the explicit residual, and the basis bytes the report counts,
// re-orthogonalisation passes included, both divided by the iterations) and that rate as a share
// of --bandwidth GB/s. One untimed solve of a few iterations per system warms the kernels up.
// --dump DIR writes each system's CSR for the CuPy peer (bench/gmres_cupy.py), which solves the
// same matrix with the same restart and tolerance; scripts/bench-table-solve.py joins the CSVs.
#define _POSIX_C_SOURCE 200809L
#include "bench_dump.h"
#include "mixsparse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SYSTEMS 16
#define MAX_LIST 16

static int usage(void) {
  fprintf(stderr,
          "usage: mixsparse-bench-solve [--backend cpu|cuda|auto] [--system gen:SPEC|FILE ...]\n"
          "  [--restarts 100,300] [--rtol 1e-8] [--bases f64,f32,f16,bf16,auto]\n"
          "  [--preconds none,jacobi] [--orthos dcgs2,cgs,mgs] [--max-iters N]\n"
          "  [--bandwidth GB/s] [--csv FILE] [--dump DIR]\n"
          "  default systems: gen:convdiff3d:128 gen:poisson3d:128 gen:stencil27:128\n");
  return 2;
}

// Split a comma-separated list into at most MAX_LIST items (pointers into s, which is modified).
static int split(char *s, char **items) {
  int k = 0;
  for (char *t = strtok(s, ","); t && k < MAX_LIST; t = strtok(NULL, ","))
    items[k++] = t;
  return k;
}

int main(int argc, char **argv) {
  const char *systems[MAX_SYSTEMS];
  int ns = 0;
  char *bases[MAX_LIST], *preconds[MAX_LIST], *restarts_s[MAX_LIST], *orthos[MAX_LIST];
  char orthos_buf[256] = "dcgs2";
  char bases_buf[256] = "f64,f32,f16,bf16,auto", preconds_buf[256] = "none,jacobi",
       restarts_buf[256] = "100,300";
  const char *csv = NULL, *dumpdir = NULL;
  double rtol = 1e-8, bandwidth = 0.0;
  int64_t max_iters = 20000;
  msp_backend backend = MSP_BACKEND_AUTO;
  for (int i = 1; i < argc; i++) {
    const int more = i + 1 < argc;
    if (!strcmp(argv[i], "--system") && more && ns < MAX_SYSTEMS)
      systems[ns++] = argv[++i];
    else if (!strcmp(argv[i], "--restarts") && more)
      snprintf(restarts_buf, sizeof restarts_buf, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--bases") && more)
      snprintf(bases_buf, sizeof bases_buf, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--orthos") && more)
      snprintf(orthos_buf, sizeof orthos_buf, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--preconds") && more)
      snprintf(preconds_buf, sizeof preconds_buf, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--rtol") && more)
      rtol = atof(argv[++i]);
    else if (!strcmp(argv[i], "--max-iters") && more)
      max_iters = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--bandwidth") && more)
      bandwidth = atof(argv[++i]);
    else if (!strcmp(argv[i], "--csv") && more)
      csv = argv[++i];
    else if (!strcmp(argv[i], "--dump") && more)
      dumpdir = argv[++i];
    else if (!strcmp(argv[i], "--backend") && more) {
      if (msp_backend_parse(argv[++i], &backend) != MSP_SUCCESS) return usage();
    } else
      return usage();
  }
  if (ns == 0) {
    systems[ns++] = "gen:convdiff3d:128";
    systems[ns++] = "gen:poisson3d:128";
    systems[ns++] = "gen:stencil27:128";
  }
  const int nb = split(bases_buf, bases), np = split(preconds_buf, preconds),
            nr = split(restarts_buf, restarts_s), no = split(orthos_buf, orthos);
  if (nb == 0 || np == 0 || nr == 0 || no == 0 || !(rtol >= 0) || max_iters < 1) return usage();
  for (int k = 0; k < no; k++)
    if (strcmp(orthos[k], "dcgs2") && strcmp(orthos[k], "cgs") && strcmp(orthos[k], "mgs"))
      return usage();
  for (int k = 0; k < nb; k++) {
    msp_precision p;
    if (strcmp(bases[k], "auto") && msp_precision_parse(bases[k], &p) != MSP_SUCCESS) {
      fprintf(stderr, "mixsparse-bench-solve: %s\n", msp_last_error());
      return 2;
    }
  }
  for (int k = 0; k < np; k++)
    if (strcmp(preconds[k], "none") && strcmp(preconds[k], "jacobi") && strcmp(preconds[k], "ilu0"))
      return usage();
  for (int k = 0; k < nr; k++)
    if (atoi(restarts_s[k]) < 1) return usage();

  msp_context ctx = NULL;
  if (msp_context_create(backend, 0, &ctx) != MSP_SUCCESS) {
    fprintf(stderr, "mixsparse-bench-solve: %s\n", msp_last_error());
    return 1;
  }
  FILE *out = csv ? fopen(csv, "w") : NULL;
  if (csv && !out) {
    fprintf(stderr, "mixsparse-bench-solve: cannot write %s\n", csv);
    msp_context_destroy(&ctx);
    return 1;
  }
  printf("backend %s; rtol %g; bandwidth %s%.1f GB/s\n", msp_backend_name(msp_context_backend(ctx)),
         rtol, bandwidth > 0 ? "" : "(none) ", bandwidth);
  const char *hdr =
      "system,n,nnz,backend,restart,rtol,basis,precond,ortho,converged,iterations,"
      "restarts,time_s,setup_s,ms_per_iter,spmv_bytes,basis_bytes_per_iter,bytes_per_iter,"
      "gb_per_s,pct_bw,rel_residual,basis_precisions\n";
  if (out) fputs(hdr, out);
  printf("%-22s %6s %-6s %-7s %-5s %4s %7s %9s %10s %9s %12s %6s %5s\n", "system", "m", "basis",
         "precond", "ortho", "conv", "iters", "time_s", "ms/iter", "MB/iter", "GB/s", "%bw",
         "cycl");
  int rc = 0;
  for (int s = 0; s < ns; s++) {
    msp_matrix A = NULL;
    msp_vector b = NULL, x = NULL;
    const char *spec = systems[s];
    fprintf(stderr, "system %d of %d: %s\n", s + 1, ns, spec); // progress, as the rows come
    msp_status st = strncmp(spec, "gen:", 4) == 0 ? msp_matrix_generate(ctx, spec + 4, &A)
                                                  : msp_matrix_read_mtx(ctx, spec, 0, &A);
    if (st != MSP_SUCCESS) {
      fprintf(stderr, "%s: %s (%s)\n", spec, msp_last_error(), msp_status_name(st));
      rc = 1;
      continue;
    }
    const int64_t n = msp_matrix_rows(A), nnz = msp_matrix_nnz(A);
    if (dumpdir) {
      char tag[256];
      bench_tag(spec, tag, sizeof tag);
      if (bench_dump_csr(A, dumpdir, tag, 1) != 0) {
        fprintf(stderr, "%s: cannot dump to %s\n", spec, dumpdir);
        rc = 1;
      }
    }
    const double spmv_bytes = msp_spmv_bytes(A, 0);
    st = msp_vector_create(ctx, n, &b);
    if (st == MSP_SUCCESS) st = msp_vector_create(ctx, n, &x);
    if (st == MSP_SUCCESS) st = msp_vector_fill(b, 1.0);
    // Warm-up: kernels loaded, device memory pools touched.
    if (st == MSP_SUCCESS) {
      msp_solver_options o = msp_solver_options_default();
      msp_solver_report r;
      o.max_iters = 3;
      memset(&r, 0, sizeof r);
      st = msp_vector_fill(x, 0.0);
      if (st == MSP_SUCCESS) st = msp_gmres(ctx, A, b, x, &o, &r);
    }
    for (int ri = 0; ri < nr && st == MSP_SUCCESS; ri++)
      for (int pi = 0; pi < np && st == MSP_SUCCESS; pi++)
        for (int oi = 0; oi < no * nb && st == MSP_SUCCESS; oi++) {
          const int bi = oi % nb;
          const char *ortho = orthos[oi / nb];
          msp_solver_options o = msp_solver_options_default();
          o.ortho = !strcmp(ortho, "cgs")   ? MSP_ORTHO_CGS
                    : !strcmp(ortho, "mgs") ? MSP_ORTHO_MGS
                                            : MSP_ORTHO_DCGS2;
          msp_solver_report r;
          memset(&r, 0, sizeof r);
          o.restart = atoi(restarts_s[ri]);
          o.rtol = rtol;
          o.max_iters = max_iters;
          o.precond = !strcmp(preconds[pi], "jacobi") ? MSP_PRECOND_JACOBI
                      : !strcmp(preconds[pi], "ilu0") ? MSP_PRECOND_ILU0
                                                      : MSP_PRECOND_NONE;
          if (!strcmp(bases[bi], "auto"))
            o.basis_auto = 1;
          else
            (void)msp_precision_parse(bases[bi], &o.basis_precision);
          st = msp_vector_fill(x, 0.0);
          if (st == MSP_SUCCESS) st = msp_gmres(ctx, A, b, x, &o, &r);
          if (st != MSP_SUCCESS) {
            fprintf(stderr, "%s m=%d %s %s: %s (%s)\n", spec, o.restart, bases[bi], preconds[pi],
                    msp_last_error(), msp_status_name(st));
            rc = 1;
            break;
          }
          const double its = r.iterations > 0 ? (double)r.iterations : 1.0;
          const double cycles = (double)r.restarts + 1.0;
          const double spmv_per = spmv_bytes * ((double)r.iterations + cycles + 1.0) / its;
          const double basis_per = r.basis_bytes / its;
          const double per = spmv_per + basis_per;
          // per iteration: after the set-up (work vectors, basis, preconditioner), which the
          // report times apart (setup_s); CuPy's Jacobi diagonal is made outside its timing too
          const double tpi = (r.time_s - r.setup_s) / its;
          const double gbs = tpi > 0 ? per / tpi / 1e9 : 0.0;
          const double pct = bandwidth > 0 ? 100.0 * gbs / bandwidth : 0.0;
          char precs[1024] = "";
          size_t used = 0;
          for (int c = 0; c < r.cycles_recorded && used + 8 < sizeof precs; c++)
            used += (size_t)snprintf(precs + used, sizeof precs - used, "%s%s", c ? ";" : "",
                                     msp_precision_name(r.cycle_precision[c]));
          printf("%-22s %6d %-6s %-7s %-5s %4s %7lld %9.4f %10.4f %9.2f %12.1f %6.1f %5lld\n", spec,
                 o.restart, bases[bi], preconds[pi], ortho, r.converged ? "yes" : "no",
                 (long long)r.iterations, r.time_s, 1e3 * tpi, per / 1e6, gbs, pct,
                 (long long)cycles);
          if (out)
            fprintf(out,
                    "%s,%lld,%lld,%s,%d,%g,%s,%s,%s,%d,%lld,%lld,%.6f,%.6f,%.6f,%.0f,%.0f,%.0f,"
                    "%.2f,%.2f,%.3e,%s\n",
                    spec, (long long)n, (long long)nnz, msp_backend_name(msp_context_backend(ctx)),
                    o.restart, rtol, bases[bi], preconds[pi], ortho, r.converged,
                    (long long)r.iterations, (long long)r.restarts, r.time_s, r.setup_s, 1e3 * tpi,
                    spmv_bytes, basis_per, per, gbs, pct, r.rel_residual, precs);
          fflush(stdout);
          if (out) fflush(out); // a run stopped by a time limit keeps its rows
        }
    if (st != MSP_SUCCESS && rc == 0) {
      fprintf(stderr, "%s: %s (%s)\n", spec, msp_last_error(), msp_status_name(st));
      rc = 1;
    }
    msp_vector_destroy(&b);
    msp_vector_destroy(&x);
    msp_matrix_destroy(&A);
  }
  if (out) fclose(out);
  msp_context_destroy(&ctx);
  return rc;
}

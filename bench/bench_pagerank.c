// bench_pagerank.c: mixsparse-bench-pagerank, PageRank time to converge and per iteration for
// each form and precision mode on each graph, one row per graph x mode x tolerance.
//
// One run per graph and mode to the smallest tolerance records the change and the elapsed time
// after every iteration (msp_pagerank_report.history); the iteration path does not depend on the
// tolerance (the precision switches depend on the change only), so the time to reach each larger
// tolerance is read off the same run: the first iteration whose change is below it. Timings
// include the per-iteration synchronisation that hands the change to the host and the precision
// switches; setup (transpose, degrees, uploads) is reported apart. --dump writes each graph's CSR
// for the CuPy peer (bench/pagerank_cupy.py), which runs in the same job on the same GPU.
#define _POSIX_C_SOURCE 200809L
#include "bench_dump.h"
#include "mixsparse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_GRAPHS 16
#define MAX_TOLS 8
#define HIST 4096

typedef struct {
  const char *name;
  msp_pagerank_precision prec;
  int values;
} mode;

static const mode MODES[] = {{"values-f64", MSP_PAGERANK_F64, 1},
                             {"f64", MSP_PAGERANK_F64, 0},
                             {"cpms2", MSP_PAGERANK_CPMS2, 0},
                             {"cpms4", MSP_PAGERANK_CPMS4, 0},
                             {"auto", MSP_PAGERANK_AUTO, 0}};
#define NMODES (int)(sizeof MODES / sizeof MODES[0])

static int usage(void) {
  fprintf(stderr,
          "usage: mixsparse-bench-pagerank [--backend cpu|cuda|auto] --graph SPEC|FILE ...\n"
          "  [--tols 1e-4,1e-6,1e-8,1e-10] [--modes values-f64,f64,cpms2,cpms4,auto]\n"
          "  [--orders auto,natural,degree] [--layout interleaved|separate] [--csv FILE]\n"
          "  [--dump DIR] [--alpha A]\n"
          "  With more than one order, each mode's name gets the order (f64:degree).\n");
  return 2;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double wtime(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// Read bandwidth through the library: the median of 7 1-norms of an f64 vector of 2^28 values
// (2 GiB), in GB/s (the ceiling the PageRank rows are compared with).
static double read_bandwidth(msp_context ctx) {
  const int64_t n = (int64_t)1 << 28;
  msp_vector v = NULL;
  double t[7], r = 0;
  if (msp_vector_create(ctx, n, &v) != MSP_SUCCESS) return 0;
  if (msp_vector_fill(v, 1.0) != MSP_SUCCESS || msp_nrm1(ctx, v, &r) != MSP_SUCCESS) {
    msp_vector_destroy(&v);
    return 0;
  }
  for (int k = 0; k < 7; k++) {
    msp_context_synchronize(ctx);
    const double t0 = wtime();
    msp_nrm1(ctx, v, &r);
    t[k] = wtime() - t0;
  }
  msp_vector_destroy(&v);
  for (int a = 0; a < 7; a++)
    for (int b = a + 1; b < 7; b++)
      if (t[b] < t[a]) {
        const double x = t[a];
        t[a] = t[b];
        t[b] = x;
      }
  return 8.0 * (double)n / t[3] / 1e9;
}

int main(int argc, char **argv) {
  const char *graphs[MAX_GRAPHS];
  int ng = 0, ntol = 0;
  double tols[MAX_TOLS];
  int use[NMODES];
  const char *csv = NULL, *dumpdir = NULL;
  double alpha = 0.85;
  static const char *ORDER_NAMES[] = {"auto", "natural", "degree"};
  int orders[3] = {MSP_PAGERANK_ORDER_AUTO}, norders = 1, separate = 0;
  msp_backend backend = MSP_BACKEND_AUTO;
  for (int m = 0; m < NMODES; m++)
    use[m] = 1;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) return usage();
    if (!strcmp(argv[i], "--graph") && ng < MAX_GRAPHS) {
      graphs[ng++] = argv[++i];
    } else if (!strcmp(argv[i], "--tols")) {
      char *s = argv[++i], *end;
      while (*s && ntol < MAX_TOLS) {
        tols[ntol++] = strtod(s, &end);
        if (end == s || !(tols[ntol - 1] > 0)) return usage();
        s = *end == ',' ? end + 1 : end;
      }
    } else if (!strcmp(argv[i], "--modes")) {
      const char *s = argv[++i];
      for (int m = 0; m < NMODES; m++) {
        const char *at = strstr(s, MODES[m].name);
        const size_t l = strlen(MODES[m].name);
        // whole words only ("f64" inside "values-f64" does not count)
        int found = 0;
        for (; at; at = strstr(at + 1, MODES[m].name))
          if ((at == s || at[-1] == ',') && (at[l] == ',' || at[l] == '\0')) found = 1;
        use[m] = found;
      }
    } else if (!strcmp(argv[i], "--orders")) {
      const char *s = argv[++i];
      norders = 0;
      for (int k = 0; k < 3; k++) {
        const size_t l = strlen(ORDER_NAMES[k]);
        for (const char *at = strstr(s, ORDER_NAMES[k]); at; at = strstr(at + 1, ORDER_NAMES[k]))
          if ((at == s || at[-1] == ',') && (at[l] == ',' || at[l] == '\0')) {
            orders[norders++] = k;
            break;
          }
      }
      if (norders == 0) return usage();
    } else if (!strcmp(argv[i], "--layout")) {
      const char *s = argv[++i];
      if (strcmp(s, "separate") && strcmp(s, "interleaved")) return usage();
      separate = !strcmp(s, "separate");
    } else if (!strcmp(argv[i], "--csv")) {
      csv = argv[++i];
    } else if (!strcmp(argv[i], "--dump")) {
      dumpdir = argv[++i];
    } else if (!strcmp(argv[i], "--alpha")) {
      alpha = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--backend")) {
      if (msp_backend_parse(argv[++i], &backend) != MSP_SUCCESS) return usage();
    } else {
      return usage();
    }
  }
  if (ng == 0) return usage();
  if (ntol == 0) {
    const double d[] = {1e-4, 1e-6, 1e-8, 1e-10};
    for (ntol = 0; ntol < 4; ntol++)
      tols[ntol] = d[ntol];
  }
  double tmin = tols[0];
  for (int k = 1; k < ntol; k++)
    tmin = tols[k] < tmin ? tols[k] : tmin;
  msp_context ctx = NULL;
  if (msp_context_create(backend, 0, &ctx) != MSP_SUCCESS) {
    fprintf(stderr, "mixsparse-bench-pagerank: %s\n", msp_last_error());
    return 1;
  }
  FILE *out = csv ? fopen(csv, "w") : NULL;
  if (csv && !out) {
    fprintf(stderr, "mixsparse-bench-pagerank: cannot write %s\n", csv);
    msp_context_destroy(&ctx);
    return 1;
  }
  const double bw = read_bandwidth(ctx);
  printf("backend %s; read bandwidth %.1f GB/s (library 1-norm of 2 GiB)\n",
         msp_backend_name(msp_context_backend(ctx)), bw);
  const char *hdr = "graph,nodes,edges,mode,order,tol,converged,iterations,storage,time_s,"
                    "ms_per_iter,setup_s,gb_per_s_model,pct_bw,first_ms,median_ms\n";
  if (out) fputs(hdr, out);
  printf("%s", hdr);
  double *hist = malloc(HIST * sizeof *hist), *htime = malloc(HIST * sizeof *htime);
  for (int g = 0; g < ng && hist && htime; g++) {
    msp_matrix G = NULL;
    fprintf(stderr, "graph %d of %d: %s\n", g + 1, ng, graphs[g]); // progress, as the rows come
    msp_status st = strncmp(graphs[g], "gen:", 4) == 0 ? msp_matrix_generate(ctx, graphs[g] + 4, &G)
                                                       : msp_matrix_read_mtx(ctx, graphs[g], 0, &G);
    if (st != MSP_SUCCESS) {
      fprintf(stderr, "%s: %s (%s)\n", graphs[g], msp_last_error(), msp_status_name(st));
      continue;
    }
    char tag[256];
    bench_tag(graphs[g], tag, sizeof tag);
    if (dumpdir && bench_dump_csr(G, dumpdir, tag, 0) != 0)
      fprintf(stderr, "%s: dump failed\n", graphs[g]);
    const int64_t n = msp_matrix_rows(G), nnz = msp_matrix_nnz(G);
    // Bytes per iteration of the value-free form with perfect reuse of the gathered q: rowptr,
    // column indices, out-degrees, p read, p and q written, q read once.
    const double bytes = 4.0 * (double)nnz + (8.0 + 4.0 + 8.0 + 16.0 + 8.0) * (double)n;
    for (int mo = 0; mo < NMODES * norders; mo++) {
      const int m = mo / norders, ord = orders[mo % norders];
      if (!use[m]) continue;
      char name[64];
      snprintf(name, sizeof name, "%s%s%s", MODES[m].name, norders > 1 ? ":" : "",
               norders > 1 ? ORDER_NAMES[ord] : "");
      fprintf(stderr, "  %s: %s\n", graphs[g], name);
      msp_vector p = NULL;
      msp_pagerank_options o = msp_pagerank_options_default();
      o.alpha = alpha;
      o.tol = tmin;
      o.precision = MODES[m].prec;
      o.values = MODES[m].values;
      o.order = (msp_pagerank_order)ord;
      o.separate = separate;
      msp_pagerank_report r;
      memset(&r, 0, sizeof r);
      r.history = hist;
      r.history_time = htime;
      r.history_capacity = HIST;
      st = msp_vector_create(ctx, n, &p);
      if (st == MSP_SUCCESS) st = msp_pagerank(ctx, G, &o, p, &r);
      msp_vector_destroy(&p);
      if (st != MSP_SUCCESS) {
        fprintf(stderr, "%s %s: %s (%s)\n", graphs[g], name, msp_last_error(), msp_status_name(st));
        continue;
      }
      // the first iteration's time and the median of all (the steady cost of one)
      double first = r.history_length > 0 ? htime[0] : 0.0, median = 0.0;
      if (r.history_length > 0) {
        double *d = malloc((size_t)r.history_length * sizeof *d);
        if (d) {
          for (int64_t k = 0; k < r.history_length; k++)
            d[k] = htime[k] - (k ? htime[k - 1] : 0.0);
          qsort(d, (size_t)r.history_length, sizeof *d, cmp_double);
          median = d[r.history_length / 2];
          free(d);
        }
      }
      for (int k = 0; k < ntol; k++) {
        int64_t it = 0;
        while (it < r.history_length && !(hist[it] < tols[k]))
          it++;
        const int conv = it < r.history_length;
        const int64_t used = conv ? it + 1 : r.history_length;
        const double t = used > 0 ? htime[used - 1] : 0.0;
        const double per = used > 0 ? t / (double)used : 0.0;
        char line[512];
        snprintf(line, sizeof line,
                 "%s,%lld,%lld,%s,%s,%.0e,%d,%lld,%s,%.6f,%.4f,%.3f,%.1f,%.1f,%.4f,%.4f\n", tag,
                 (long long)n, (long long)nnz, name, ORDER_NAMES[r.order], tols[k], conv,
                 (long long)used, msp_precision_name(r.storage), t, per * 1e3, r.setup_s,
                 per > 0 ? bytes / per / 1e9 : 0.0,
                 per > 0 && bw > 0 ? 100.0 * bytes / per / 1e9 / bw : 0.0, first * 1e3,
                 median * 1e3);
        fputs(line, stdout);
        if (out) fputs(line, out);
      }
      fflush(stdout);
    }
    msp_matrix_destroy(&G);
  }
  free(hist);
  free(htime);
  if (out) fclose(out);
  msp_context_destroy(&ctx);
  return 0;
}

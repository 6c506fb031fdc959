// cmd_pagerank.c: `mixsparse pagerank`: PageRank of a graph file, fp64 or adaptive CPMS reads.
#include "cmd.h"
#include "common.h"
#include "internal.h" // msp__same_file

#include <stdlib.h>
#include <string.h>

static const char *pagerank_help =
    "usage: mixsparse pagerank FILE [--alpha A] [--tol T] [--max-iters N]\n"
    "         [--precision f64|cpms2|cpms4|auto] [--layout interleaved|separate] [--bank BYTES]\n"
    "         [--weighted] [--personalize V.mtx] [--values] [--order auto|natural|degree]\n"
    "         [--backend cpu|cuda|auto] [--top K] [--output P.mtx] [--monitor] [--json]\n"
    "  PageRank of the graph in FILE (entry (i, j): an edge from node i to node j; symmetric\n"
    "  files are undirected graphs; gen:SPEC for a built-in graph, e.g. gen:rmat:20:16).\n"
    "  --alpha A        damping factor (0.85)\n"
    "  --tol T          stop when ||p_k - p_k-1||_1 < T (1e-10)\n"
    "  --max-iters N    at most N iterations (1000); not converging is reported, not an error\n"
    "  --precision P    f64; cpms2 / cpms4: p in 2 / 4 segments, read with the fewest (32 / 16\n"
    "                   bits) and more as the change falls (cpms4: 16, 32, 64 bits); auto: cpms2\n"
    "                   for graphs above 4M nodes (f64)\n"
    "  --layout L       CPMS-i (interleaved, in banks) or CPMS-s (separate segments)\n"
    "  --bank BYTES     CPMS-i bank size (128 on CUDA, 8192 on the CPU)\n"
    "  --weighted       the stored values are edge weights (>= 0); otherwise the structure\n"
    "  --personalize V  teleport and dangling mass along V (a Matrix Market array, >= 0)\n"
    "  --values         the paper's form: an SpMV with 1/O_i stored (default: value-free)\n"
    "  --order O        internal node numbering: degree (by decreasing out-degree, so that the\n"
    "                   most read entries share cache lines), natural, or auto: degree above 4M\n"
    "                   nodes (the result is in the file's order either way)\n"
    "  --top K          print the K highest-ranked nodes (10; 1-based, as in the file)\n"
    "  --output P.mtx   write p (Matrix Market array, %.17g)\n"
    "  --monitor        a line per iteration as it runs: the iteration, the change and the bits\n"
    "                   of each value read (on stderr with --json)\n";

#define PR_OPTIONS                                                                                 \
  (OPT_JSON | OPT_ALLOW_NONFINITE | OPT_BACKEND | OPT_PRECISION | OPT_OUTPUT | OPT_ALPHA |         \
   OPT_TOL | OPT_MAX_ITERS | OPT_LAYOUT | OPT_BANK | OPT_WEIGHTED | OPT_PERSONALIZE | OPT_VALUES | \
   OPT_TOP | OPT_ORDER | OPT_MONITOR)

typedef struct {
  int64_t node;
  double score;
} ranked;

// Highest score first; ties by node number, so the order is the same on every run.
static int by_score(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->score != y->score) return x->score < y->score ? 1 : -1;
  return x->node < y->node ? -1 : x->node > y->node;
}

// --monitor: one line per iteration, flushed, so that a reader of a pipe sees it at once.
static int monitor_line(void *data, int64_t iteration, double change, int read_bits) {
  FILE *f = data;
  fprintf(f, "%5lld change %.12e read %d bits\n", (long long)iteration, change, read_bits);
  fflush(f);
  return 0;
}

int cmd_pagerank(int argc, char **argv) {
  options o;
  options_init(&o);
  o.raw_precision = 1;
  o.top = 10;
  int rc = parse_options(argc, argv, PR_OPTIONS, 1, &o);
  if (rc) return rc;
  if (o.help) {
    fputs(pagerank_help, stdout);
    return EXIT_OK;
  }
  msp_pagerank_options po = msp_pagerank_options_default();
  if (o.precision_arg && (rc = parse_pagerank_mode(o.precision_arg, &po.precision)) != EXIT_OK)
    return rc;
  if ((o.given & (OPT_LAYOUT | OPT_BANK)) && po.precision != MSP_PAGERANK_CPMS2 &&
      po.precision != MSP_PAGERANK_CPMS4 && po.precision != MSP_PAGERANK_AUTO)
    return usage_error("--layout and --bank have no effect with --precision f64");
  if ((o.given & OPT_BANK) && o.separate)
    return usage_error("--bank has no effect with --layout separate");
  if (o.output) {
    const char *inputs[2] = {strncmp(o.file, "gen:", 4) == 0 ? NULL : o.file, o.personalize};
    for (int k = 0; k < 2; k++) {
      int same = 0;
      if (inputs[k] && msp__same_file(o.output, inputs[k], &same) == MSP_SUCCESS && same)
        return usage_error("--output %s is the input file %s: refusing to overwrite it", o.output,
                           inputs[k]);
    }
  }
  if (o.given & OPT_ALPHA) po.alpha = o.alpha;
  if (o.given & OPT_TOL) po.tol = o.tol;
  if (o.given & OPT_MAX_ITERS) po.max_iters = o.max_iters;
  po.separate = o.separate;
  po.bank_bytes = o.bank;
  po.weighted = o.weighted;
  po.values = o.values;
  po.order = (msp_pagerank_order)o.order;

  msp_context ctx = NULL;
  msp_matrix G = NULL;
  msp_vector p = NULL, v = NULL;
  double *h = NULL;
  ranked *top = NULL;
  json *j = NULL;
  rc = EXIT_FAILED;
  msp_status st = context_create(o.backend, 0, &ctx);
  if (st != MSP_SUCCESS) {
    fail(st, o.backend == MSP_BACKEND_CUDA ? "--backend cuda" : "context");
    goto exit;
  }
  const double t0 = now_s();
  if ((st = load_matrix(ctx, &o, &G)) != MSP_SUCCESS) {
    fail(st, o.file);
    goto exit;
  }
  const double load_s = now_s() - t0;
  const int64_t n = msp_matrix_rows(G);
  if (o.personalize) {
    st = msp_vector_read_mtx(ctx, o.personalize, o.allow_nonfinite ? MSP_READ_ALLOW_NONFINITE : 0,
                             &v);
    if (st != MSP_SUCCESS) {
      fail(st, o.personalize);
      goto exit;
    }
    po.personalization = v;
  }
  if ((st = msp_vector_create(ctx, n, &p)) != MSP_SUCCESS) {
    fail(st, "rank vector");
    goto exit;
  }
  msp_pagerank_report r;
  memset(&r, 0, sizeof r); // no history buffers
  if (o.monitor) {
    po.monitor = monitor_line;
    po.monitor_data = o.json ? stderr : stdout;
  }
  // the header before the iteration, so that a long run shows what it is running at once
  if (!o.json) {
    printf("graph        %s: %lld nodes, %lld edges\n", o.file, (long long)n,
           (long long)msp_matrix_nnz(G));
    printf("backend      %s\n", msp_backend_name(msp_context_backend(ctx)));
    printf("options      alpha %.3g, tol %.3g, max-iters %lld, precision %s\n", po.alpha, po.tol,
           (long long)po.max_iters, o.precision_arg ? o.precision_arg : "f64");
    fflush(stdout);
  }
  if (!o.monitor) progress_start("PageRank"); // --monitor prints its own lines
  st = msp_pagerank(ctx, G, &po, p, &r);
  progress_stop();
  if (st != MSP_SUCCESS) {
    fail(st, "pagerank");
    goto exit;
  }
  h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
  const int64_t k = o.top < n ? o.top : n;
  top = malloc((size_t)(n > 0 ? n : 1) * sizeof *top);
  if (!h || !top) {
    fprintf(stderr, "%s: cannot allocate the ranking of %lld nodes\n", prog, (long long)n);
    goto exit;
  }
  if ((st = msp_vector_get(p, h)) != MSP_SUCCESS) {
    fail(st, "rank vector");
    goto exit;
  }
  for (int64_t i = 0; i < n; i++)
    top[i] = (ranked){i, h[i]};
  if (k > 0) qsort(top, (size_t)n, sizeof *top, by_score);
  if (o.output && (st = write_vector(p, o.output)) != MSP_SUCCESS) {
    fail(st, o.output);
    goto exit;
  }
  const char *mode = msp_precision_name(r.storage);
  const double per_it = r.iterations > 0 ? r.time_s / (double)r.iterations : 0.0;
  if (o.json) {
    if (!(j = json_new())) {
      fprintf(stderr, "%s: out of memory\n", prog);
      goto exit;
    }
    json_string(j, "file", o.file);
    json_int(j, "nodes", n);
    json_int(j, "edges", msp_matrix_nnz(G));
    json_int(j, "dangling", r.dangling);
    json_string(j, "backend", msp_backend_name(msp_context_backend(ctx)));
    json_string(j, "form", r.values ? "values" : "value-free");
    json_string(j, "precision", mode);
    json_string(j, "layout",
                r.storage == MSP_PRECISION_F64 ? "none"
                : o.separate                   ? "separate"
                                               : "interleaved");
    json_string(j, "order", r.order == MSP_PAGERANK_ORDER_DEGREE ? "degree" : "natural");
    json_number(j, "alpha", po.alpha);
    json_number(j, "tol", po.tol);
    json_bool(j, "converged", r.converged);
    json_int(j, "iterations", r.iterations);
    json_object(j, "iterations_per_precision");
    for (int w = 1; w <= 4; w++)
      if (r.iterations_by_bits[w]) {
        char key[8];
        snprintf(key, sizeof key, "%d", 16 * w);
        json_int(j, key, r.iterations_by_bits[w]);
      }
    json_end(j);
    json_number(j, "change", r.change);
    json_number(j, "time_seconds", r.time_s);
    json_number(j, "time_per_iteration_seconds", per_it);
    json_number(j, "setup_seconds", r.setup_s);
    json_number(j, "load_seconds", load_s);
    json_array(j, "top");
    for (int64_t i = 0; i < k; i++) {
      json_object(j, NULL);
      json_int(j, "node", top[i].node + 1);
      json_number(j, "score", top[i].score);
      json_end(j);
    }
    json_end(j);
    const int prc = json_finish(j, NULL);
    j = NULL;
    if (prc != EXIT_OK) goto exit;
  } else {
    printf("dangling     %lld nodes\n", (long long)r.dangling);
    printf("form         %s\n", r.values ? "values (1/O_i stored, SpMV)" : "value-free pull");
    printf("order        %s\n", r.order == MSP_PAGERANK_ORDER_DEGREE
                                    ? "by decreasing out-degree (inside; the output in the "
                                      "file's order)"
                                    : "natural");
    if (r.storage == MSP_PRECISION_F64)
      printf("precision    f64\n");
    else
      printf("precision    %s (%s)\n", mode, o.separate ? "separate segments" : "interleaved");
    printf("converged    %s\n", r.converged ? "yes" : "no");
    printf("iterations   %lld (", (long long)r.iterations);
    const char *sep = "";
    for (int w = 1; w <= 4; w++)
      if (r.iterations_by_bits[w]) {
        printf("%s%d bits: %lld", sep, 16 * w, (long long)r.iterations_by_bits[w]);
        sep = ", ";
      }
    printf(")\n");
    printf("change       %.3e (tol %.3g)\n", r.change, po.tol);
    printf("time         %.6f s, %.6f ms per iteration, setup %.6f s\n", r.time_s, per_it * 1e3,
           r.setup_s);
    if (k > 0) printf("top %lld\n", (long long)k);
    for (int64_t i = 0; i < k; i++)
      printf("  %4lld  node %-10lld %.12g\n", (long long)i + 1, (long long)top[i].node + 1,
             top[i].score);
  }
  rc = EXIT_OK;
exit:
  json_free(j);
  free(top);
  free(h);
  msp_vector_destroy(&v);
  msp_vector_destroy(&p);
  msp_matrix_destroy(&G);
  msp_context_destroy(&ctx);
  return rc;
}

// prtest.c: the PageRank test engine (prtest.h).
//
// The oracle is independent of the library: the power iteration of the same formulation (G's
// CSR as the library stored it, dangling mass spread along v with the factor alpha) in long
// double, run until the change falls below 1e-17. A converged result must satisfy
//   ||p - p*||_1 <= alpha / (1 - alpha) * change + 1e-13,  p >= 0,  |sum p - 1| <= 1e-14
// (the first from the contraction: the error after a step is at most alpha / (1 - alpha) times
// the step).
#include "prtest.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *label;
  msp_pagerank_precision prec;
  int values, weighted, separate, bank;
  msp_pagerank_order order;
  double alpha, tol;
  int64_t max_iters;
  const double *pers; // host personalisation (n values) or NULL
  const double *guess;
} prcase;

static prcase base_case(const char *label) {
  prcase k;
  memset(&k, 0, sizeof k);
  k.label = label;
  k.alpha = 0.85;
  k.tol = 1e-10;
  k.max_iters = 1000;
  return k;
}

// p* in long double.
static void oracle(const test_csr *m, const prcase *k, long double *p) {
  const int64_t n = m->rows;
  long double *q = calloc((size_t)n + 1, sizeof *q), *w = calloc((size_t)n + 1, sizeof *w),
              *v = calloc((size_t)n + 1, sizeof *v);
  if (!q || !w || !v) {
    CHECK(0, "oracle: out of memory");
    goto done;
  }
  long double vs = 0;
  for (int64_t i = 0; i < n; i++) {
    v[i] = k->pers ? (long double)k->pers[i] : 1.0L;
    vs += v[i];
  }
  for (int64_t i = 0; i < n; i++) {
    v[i] /= vs;
    p[i] = 1.0L / n;
    w[i] = 0;
    for (int64_t e = m->rowptr[i]; e < m->rowptr[i + 1]; e++)
      w[i] += k->weighted ? (long double)m->val[e] : 1.0L;
  }
  for (int it = 0; it < 100000; it++) {
    long double dang = 0;
    for (int64_t i = 0; i < n; i++) {
      q[i] = 0;
      if (w[i] == 0) dang += p[i];
    }
    for (int64_t i = 0; i < n; i++)
      if (w[i] != 0)
        for (int64_t e = m->rowptr[i]; e < m->rowptr[i + 1]; e++)
          q[m->colind[e]] += p[i] * (k->weighted ? (long double)m->val[e] : 1.0L) / w[i];
    long double change = 0;
    for (int64_t i = 0; i < n; i++) {
      const long double x = k->alpha * q[i] + (k->alpha * dang + 1 - k->alpha) * v[i];
      change += fabsl(x - p[i]);
      p[i] = x;
    }
    if (change < 1e-17L) break;
  }
done:
  free(q);
  free(w);
  free(v);
}

// Run case k on c for the graph m; p gets the result (n values).
static msp_status run_on(msp_context c, const test_csr *m, const prcase *k, double *p,
                         msp_pagerank_report *R) {
  msp_matrix G = NULL;
  msp_vector vp = NULL, vv = NULL;
  msp_status st = test_csr_to_matrix(m, c, &G);
  if (st == MSP_SUCCESS) st = msp_vector_create(c, m->rows, &vp);
  msp_pagerank_options o = msp_pagerank_options_default();
  o.alpha = k->alpha;
  o.tol = k->tol;
  o.max_iters = k->max_iters;
  o.precision = k->prec;
  o.values = k->values;
  o.weighted = k->weighted;
  o.separate = k->separate;
  o.bank_bytes = k->bank;
  o.order = k->order;
  if (st == MSP_SUCCESS && k->pers) {
    st = msp_vector_create(c, m->rows, &vv);
    if (st == MSP_SUCCESS) st = msp_vector_set(vv, k->pers);
    o.personalization = vv;
  }
  if (st == MSP_SUCCESS && k->guess) {
    st = msp_vector_set(vp, k->guess);
    o.use_guess = 1;
  }
  if (st == MSP_SUCCESS) st = msp_pagerank(c, G, &o, vp, R);
  if (st == MSP_SUCCESS) st = msp_vector_get(vp, p);
  if (st == MSP_SUCCESS && k->order != MSP_PAGERANK_ORDER_AUTO)
    CHECK(R->order == k->order, "%s: order %d reported, %d asked", k->label, (int)R->order,
          (int)k->order);
  msp_vector_destroy(&vv);
  msp_vector_destroy(&vp);
  msp_matrix_destroy(&G);
  return st;
}

// The oracle checks of one converged (or stopped) result.
static void check_result(const test_csr *m, const prcase *k, const double *p,
                         const msp_pagerank_report *R, const long double *ps, const char *where) {
  const int64_t n = m->rows;
  long double sum = 0, err = 0;
  int64_t neg = 0, bad = 0;
  for (int64_t i = 0; i < n; i++) {
    sum += p[i];
    neg += p[i] < 0;
    bad += !isfinite(p[i]);
    if (ps) err += fabsl((long double)p[i] - ps[i]);
  }
  CHECK(bad == 0 && neg == 0, "%s %s: %lld non-finite and %lld negative entries", k->label, where,
        (long long)bad, (long long)neg);
  if (n > 0) CHECK(fabsl(sum - 1) <= 1e-14L, "%s %s: sum(p) - 1 = %.3Le", k->label, where, sum - 1);
  if (ps && R->converged) {
    const double bound = k->alpha / (1 - k->alpha) * R->change + 1e-13;
    CHECK((double)err <= bound, "%s %s: ||p - p*||_1 = %.3e > %.3e (change %.3e, %lld iterations)",
          k->label, where, (double)err, bound, R->change, (long long)R->iterations);
  }
}

// Case k on ctx (and ref): results against the oracle; against each other.
static void check_case(msp_context ctx, msp_context ref, const test_csr *m, const prcase *k,
                       msp_pagerank_report *out) {
  if (getenv("MSP_TEST_VERBOSE")) printf("prtest: %s\n", k->label);
  const int64_t n = m->rows;
  double *p = malloc(((size_t)n + 1) * sizeof *p), *pr = malloc(((size_t)n + 1) * sizeof *pr);
  long double *ps = malloc(((size_t)n + 1) * sizeof *ps);
  msp_pagerank_report R, RR;
  memset(&R, 0, sizeof R);
  memset(&RR, 0, sizeof RR);
  if (!p || !pr || !ps) {
    CHECK(0, "%s: out of memory", k->label);
    goto done;
  }
  oracle(m, k, ps);
  CHECK_OK(run_on(ctx, m, k, p, &R));
  check_result(m, k, p, &R, ps, msp_backend_name(msp_context_backend(ctx)));
  if (ref) {
    CHECK_OK(run_on(ref, m, k, pr, &RR));
    // entrywise within 1e-14 (the PageRank issue's figure; the 1-norm over n entries sums
    // n roundings of different summation orders)
    double d = 0;
    for (int64_t i = 0; i < n; i++)
      d = fmax(d, fabs(p[i] - pr[i]));
    CHECK(d <= 1e-14, "%s: max_i |p_ctx - p_cpu| = %.3e", k->label, d);
    for (int w = 1; w <= 4; w++)
      CHECK(R.iterations_by_bits[w] == RR.iterations_by_bits[w],
            "%s: %d iterations at %d bits, %d on the CPU", k->label, (int)R.iterations_by_bits[w],
            16 * w, (int)RR.iterations_by_bits[w]);
  }
  if (out) *out = R;
done:
  free(p);
  free(pr);
  free(ps);
}

// ---- graphs -------------------------------------------------------------------------------------
static int from_edges(test_csr *m, int64_t n, int ne, const int *src, const int *dst,
                      const double *w) {
  int64_t *rp = calloc((size_t)n + 1, sizeof *rp);
  int32_t *ci = malloc(((size_t)ne + 1) * sizeof *ci);
  double *va = malloc(((size_t)ne + 1) * sizeof *va);
  if (!rp || !ci || !va) {
    free(rp), free(ci), free(va);
    return -1;
  }
  // edges given sorted by source, then target
  for (int e = 0; e < ne; e++) {
    rp[src[e] + 1]++;
    ci[e] = dst[e];
    va[e] = w ? w[e] : 1.0;
  }
  for (int64_t i = 0; i < n; i++)
    rp[i + 1] += rp[i];
  m->rows = m->cols = n;
  m->nnz = ne;
  m->rowptr = rp;
  m->colind = ci;
  m->val = va;
  return 0;
}

static void small_graphs(msp_context ctx, msp_context ref) {
  test_csr m;
  const msp_pagerank_precision modes[] = {MSP_PAGERANK_F64, MSP_PAGERANK_CPMS2, MSP_PAGERANK_CPMS4};
  // A 6-node graph with a dangling node (5), a self-loop (2) and a cycle.
  {
    const int s[] = {0, 0, 1, 2, 2, 3, 3, 4}, d[] = {1, 2, 2, 0, 2, 0, 4, 5};
    CHECK(from_edges(&m, 6, 8, s, d, NULL) == 0, "graph");
    for (int mode = 0; mode < 3; mode++)
      for (int values = 0; values < 2; values++)
        for (int sep = 0; sep < 2; sep++)
          for (int ord = 1; ord <= 2; ord++) {
            char label[80];
            snprintf(label, sizeof label, "six-node mode %d values %d separate %d order %d", mode,
                     values, sep, ord);
            prcase k = base_case(label);
            k.prec = modes[mode];
            k.values = values;
            k.separate = sep;
            k.order = (msp_pagerank_order)ord;
            check_case(ctx, ref, &m, &k, NULL);
          }
    // personalisation with zeros; a caller's starting vector; each renumbered too (the
    // degree order moves node 5, dangling, last and nodes 0, 2, 3 first)
    const double pers[6] = {0, 3, 0, 1, 0, 0}, guess[6] = {6, 5, 4, 3, 2, 1};
    for (int ord = 1; ord <= 2; ord++) {
      prcase k = base_case(ord == 1 ? "personalised" : "personalised, degree order");
      k.pers = pers;
      k.order = (msp_pagerank_order)ord;
      check_case(ctx, ref, &m, &k, NULL);
      k = base_case(ord == 1 ? "starting vector" : "starting vector, degree order");
      k.guess = guess;
      k.prec = MSP_PAGERANK_CPMS4;
      k.order = (msp_pagerank_order)ord;
      check_case(ctx, ref, &m, &k, NULL);
    }
    prcase k;
    // max_iters reached: not converged, no NaN, still a distribution
    k = base_case("max_iters 3");
    k.max_iters = 3;
    msp_pagerank_report R;
    memset(&R, 0, sizeof R);
    check_case(ctx, ref, &m, &k, &R);
    CHECK(R.converged == 0 && R.iterations == 3 && isfinite(R.change),
          "max_iters: converged %d after %lld, change %g", R.converged, (long long)R.iterations,
          R.change);
    // other damping factors
    k = base_case("alpha 0.5");
    k.alpha = 0.5;
    check_case(ctx, ref, &m, &k, NULL);
    k = base_case("alpha 0.99");
    k.alpha = 0.99;
    check_case(ctx, ref, &m, &k, NULL);
    test_csr_free(&m);
  }
  // Duplicate edges summed on input: unweighted counts the edge once, weighted with weight 2.
  {
    msp_matrix G = NULL;
    const int64_t rp[] = {0, 3, 4, 5};
    const int32_t ci[] = {1, 1, 2, 0, 0};
    const double va[] = {1, 1, 1, 1, 1};
    CHECK_OK(msp_matrix_from_csr(ctx, 3, 3, rp, ci, va, 0, &G));
    CHECK(test_csr_from_matrix(&m, G) == 0 && m.nnz == 4, "duplicates summed");
    msp_matrix_destroy(&G);
    prcase k = base_case("duplicate edges");
    check_case(ctx, ref, &m, &k, NULL);
    k = base_case("duplicate edges weighted");
    k.weighted = 1;
    check_case(ctx, ref, &m, &k, NULL);
    test_csr_free(&m);
  }
  // Weighted, with a row of zero weights (dangling) and a stored explicit zero.
  {
    const int s[] = {0, 0, 1, 2, 2, 3}, d[] = {1, 2, 2, 0, 3, 0};
    const double w[] = {0.5, 2.0, 0.0, 1.0, 0.0, 3.0};
    CHECK(from_edges(&m, 4, 6, s, d, w) == 0, "graph");
    prcase k = base_case("weighted zero row");
    k.weighted = 1;
    for (int mode = 0; mode < 3; mode++)
      for (int ord = 1; ord <= 2; ord++) {
        k.prec = modes[mode];
        k.order = (msp_pagerank_order)ord;
        check_case(ctx, ref, &m, &k, NULL);
      }
    k = base_case("unweighted zero values");
    check_case(ctx, ref, &m, &k, NULL);
    test_csr_free(&m);
  }
  // One node, with and without a self-loop; all nodes dangling; an empty graph.
  {
    const int s[] = {0}, d[] = {0};
    double p[1];
    msp_pagerank_report R;
    memset(&R, 0, sizeof R);
    CHECK(from_edges(&m, 1, 0, s, d, NULL) == 0, "graph");
    prcase k = base_case("one node");
    check_case(ctx, ref, &m, &k, &R);
    CHECK(run_on(ctx, &m, &k, p, &R) == MSP_SUCCESS && p[0] == 1.0 && R.converged,
          "one node: p = %g", p[0]);
    test_csr_free(&m);
    CHECK(from_edges(&m, 1, 1, s, d, NULL) == 0, "graph");
    k = base_case("one node, self-loop");
    check_case(ctx, ref, &m, &k, NULL);
    test_csr_free(&m);
    CHECK(from_edges(&m, 7, 0, s, d, NULL) == 0, "graph");
    k = base_case("all dangling");
    k.prec = MSP_PAGERANK_CPMS2;
    double u[7];
    CHECK(run_on(ctx, &m, &k, u, &R) == MSP_SUCCESS && R.converged && R.dangling == 7,
          "all dangling");
    for (int i = 0; i < 7; i++)
      CHECK(fabs(u[i] - 1.0 / 7) < 1e-16, "all dangling: p[%d] = %.17g", i, u[i]);
    check_case(ctx, ref, &m, &k, NULL);
    test_csr_free(&m);
    CHECK(from_edges(&m, 0, 0, s, d, NULL) == 0, "graph");
    k = base_case("empty graph");
    CHECK(run_on(ctx, &m, &k, p, &R) == MSP_SUCCESS && R.converged && R.iterations == 0,
          "empty graph: converged %d, %lld iterations", R.converged, (long long)R.iterations);
    test_csr_free(&m);
  }
  // A random graph large enough for several chunks, thread blocks and a hub (in-degree > 4096).
  {
    CHECK(test_csr_powerlaw(&m, 30000, 30000, 200, 7) == 0, "graph");
    for (int64_t e = m.rowptr[0]; e < m.rowptr[m.rows]; e++)
      if (e % 3 == 0) m.colind[e] = 17; // node 17: a hub
    test_csr s2;
    msp_matrix G = NULL;
    CHECK_OK(test_csr_to_matrix(&m, ctx, &G)); // sorts and sums the new duplicates
    CHECK(test_csr_from_matrix(&s2, G) == 0, "copy");
    msp_matrix_destroy(&G);
    for (int mode = 0; mode < 3; mode++)
      for (int values = 0; values < 2; values++) {
        msp_pagerank_report R[2];
        double *pp[2] = {malloc((size_t)s2.rows * sizeof(double)),
                         malloc((size_t)s2.rows * sizeof(double))};
        for (int ord = 0; ord < 2; ord++) {
          char label[80];
          snprintf(label, sizeof label, "power-law mode %d values %d order %d", mode, values,
                   ord + 1);
          prcase k = base_case(label);
          k.prec = modes[mode];
          k.values = values;
          k.bank = mode == 2 ? 64 : 0;
          k.order = (msp_pagerank_order)(ord + 1);
          memset(&R[ord], 0, sizeof R[ord]);
          check_case(ctx, ref, &s2, &k, &R[ord]);
          if (pp[ord]) CHECK_OK(run_on(ctx, &s2, &k, pp[ord], &R[ord]));
        }
        // the two numberings: the same iteration in other summation orders
        if (pp[0] && pp[1]) {
          double d = 0;
          for (int64_t i = 0; i < s2.rows; i++)
            d = fmax(d, fabs(pp[0][i] - pp[1][i]));
          CHECK(d <= 1e-14, "power-law mode %d values %d: max |p_natural - p_degree| = %.3e", mode,
                values, d);
          for (int w = 1; w <= 4; w++)
            CHECK(R[0].iterations_by_bits[w] == R[1].iterations_by_bits[w],
                  "power-law mode %d values %d: %lld iterations at %d bits in the file's order, "
                  "%lld in degree order",
                  mode, values, (long long)R[0].iterations_by_bits[w], 16 * w,
                  (long long)R[1].iterations_by_bits[w]);
        }
        free(pp[0]);
        free(pp[1]);
      }
    // G held in another format (COO): the graph is read from its structure the same way (on
    // CUDA the transpose then starts from a copy of G's rows, not from its device CSR)
    {
      msp_matrix A = NULL, C = NULL;
      msp_vector p0 = NULL, p1 = NULL;
      CHECK_OK(test_csr_to_matrix(&s2, ctx, &A));
      msp_convert_options co = msp_convert_options_default();
      co.format = MSP_FORMAT_COO;
      CHECK_OK(msp_matrix_convert(ctx, A, &co, &C));
      CHECK_OK(msp_vector_create(ctx, s2.rows, &p0));
      CHECK_OK(msp_vector_create(ctx, s2.rows, &p1));
      for (int ord = 1; ord <= 2 && A && C && p0 && p1; ord++) {
        msp_pagerank_options o = msp_pagerank_options_default();
        o.order = (msp_pagerank_order)ord;
        CHECK_OK(msp_pagerank(ctx, A, &o, p0, NULL));
        CHECK_OK(msp_pagerank(ctx, C, &o, p1, NULL));
        double *h0 = malloc((size_t)s2.rows * sizeof *h0),
               *h1 = malloc((size_t)s2.rows * sizeof *h1);
        if (h0 && h1 && msp_vector_get(p0, h0) == MSP_SUCCESS &&
            msp_vector_get(p1, h1) == MSP_SUCCESS)
          CHECK(memcmp(h0, h1, (size_t)s2.rows * sizeof *h0) == 0,
                "order %d: G in COO gives other bits than in CSR", ord);
        else
          CHECK(0, "COO graph: results not read");
        free(h0);
        free(h1);
      }
      msp_vector_destroy(&p1);
      msp_vector_destroy(&p0);
      msp_matrix_destroy(&C);
      msp_matrix_destroy(&A);
    }
    // the same bits for any thread count (CPU)
    if (msp_context_backend(ctx) == MSP_BACKEND_CPU) {
      const int threads[] = {1, 2, 3, 4, 7};
      double *p0 = malloc((size_t)s2.rows * sizeof *p0), *p1 = malloc((size_t)s2.rows * sizeof *p1);
      for (int mode = 0; mode < 6 && p0 && p1; mode++) {
        prcase k = base_case("threads");
        k.prec = modes[mode % 3];
        k.order = mode < 3 ? MSP_PAGERANK_ORDER_NATURAL : MSP_PAGERANK_ORDER_DEGREE;
        msp_pagerank_report R;
        memset(&R, 0, sizeof R); // no history buffers
        for (int t = 0; t < 5; t++) {
          omp_set_num_threads(threads[t]);
          CHECK_OK(run_on(ctx, &s2, &k, t ? p1 : p0, &R));
          if (t)
            CHECK(memcmp(p0, p1, (size_t)s2.rows * sizeof *p0) == 0,
                  "mode %d: %d threads give other bits than 1", mode, threads[t]);
        }
      }
      omp_set_num_threads(omp_get_num_procs());
      free(p0);
      free(p1);
    }
    test_csr_free(&s2);
    test_csr_free(&m);
  }
}

// ---- errors -------------------------------------------------------------------------------------
static void errors(msp_context ctx) {
  msp_matrix G = NULL, R = NULL;
  msp_vector p = NULL, p2 = NULL, v = NULL;
  const int64_t rp[] = {0, 2, 3, 3};
  const int32_t ci[] = {1, 2, 0};
  const double neg[] = {1.0, -2.0, 1.0};
  CHECK_OK(msp_matrix_from_csr(ctx, 3, 3, rp, ci, neg, 0, &G));
  CHECK_OK(msp_matrix_from_csr(ctx, 2, 3, rp, ci, neg, 0, &R));
  CHECK_OK(msp_vector_create(ctx, 3, &p));
  CHECK_OK(msp_vector_create(ctx, 2, &p2));
  CHECK_OK(msp_vector_create(ctx, 3, &v));
  msp_pagerank_options o = msp_pagerank_options_default();
  o.weighted = 1;
  CHECK_STATUS(msp_pagerank(ctx, G, &o, p, NULL), MSP_ERR_INVALID_MATRIX);
  CHECK(strstr(msp_last_error(), "(1, 3)") != NULL, "negative weight not named: %s",
        msp_last_error());
  o = msp_pagerank_options_default();
  CHECK_OK(msp_pagerank(ctx, G, &o, p, NULL)); // unweighted: the structure counts
  CHECK_STATUS(msp_pagerank(ctx, R, &o, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_pagerank(ctx, G, &o, p2, NULL), MSP_ERR_DIMENSION_MISMATCH);
  CHECK_STATUS(msp_pagerank(ctx, NULL, &o, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_pagerank(ctx, G, &o, NULL, NULL), MSP_ERR_INVALID_ARGUMENT);
  const double bad_alpha[] = {0.0, 1.0, -0.5, NAN};
  for (int i = 0; i < 4; i++) {
    o = msp_pagerank_options_default();
    o.alpha = bad_alpha[i];
    CHECK_STATUS(msp_pagerank(ctx, G, &o, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  }
  o = msp_pagerank_options_default();
  o.bank_bytes = 100;
  CHECK_STATUS(msp_pagerank(ctx, G, &o, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  o = msp_pagerank_options_default();
  o.precision = (msp_pagerank_precision)9;
  CHECK_STATUS(msp_pagerank(ctx, G, &o, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  o = msp_pagerank_options_default();
  o.order = (msp_pagerank_order)3;
  CHECK_STATUS(msp_pagerank(ctx, G, &o, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "order") != NULL, "bad order not named: %s", msp_last_error());
  o = msp_pagerank_options_default();
  o.personalization = v; // all zero
  CHECK_STATUS(msp_pagerank(ctx, G, &o, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  const double vneg[] = {1, -1, 1};
  CHECK_OK(msp_vector_set(v, vneg));
  CHECK_STATUS(msp_pagerank(ctx, G, &o, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  o.personalization = p2;
  CHECK_STATUS(msp_pagerank(ctx, G, &o, p, NULL), MSP_ERR_DIMENSION_MISMATCH);
  o = msp_pagerank_options_default();
  o.use_guess = 1; // p holds the previous result: a valid start
  CHECK_OK(msp_pagerank(ctx, G, &o, p, NULL));
  CHECK_OK(msp_vector_fill(p, 0.0));
  CHECK_STATUS(msp_pagerank(ctx, G, &o, p, NULL), MSP_ERR_INVALID_ARGUMENT);
  msp_vector_destroy(&v);
  msp_vector_destroy(&p2);
  msp_vector_destroy(&p);
  msp_matrix_destroy(&R);
  msp_matrix_destroy(&G);
}

// ---- the collection: iteration counts of the CPMS modes (the paper's Table 2 behaviour) -------
static const char *GRAPHS[] = {"luxembourg_osm", "web-NotreDame",  "delaunay_n16",  "rgg_n_2_15_s0",
                               "wb-cs-stanford", "p2p-Gnutella31", "soc-Epinions1", "wiki-Vote",
                               "email-Enron",    "ca-CondMat"};

static void collection(msp_context ctx, msp_context ref) {
  const char *dir = test_matrices_dir();
  if (!dir) {
    printf("prtest: the collection graphs SKIPPED: ../shared/matrices not found (set "
           "MSP_MATRICES_DIR)\n");
    return;
  }
  int seen = 0;
  for (size_t gi = 0; gi < sizeof GRAPHS / sizeof *GRAPHS; gi++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.mtx.gz", dir, GRAPHS[gi]);
    msp_matrix G = NULL;
    if (msp_matrix_read_mtx(ctx, path, 0, &G) != MSP_SUCCESS) {
      printf("prtest: %s not readable here (%s): left out\n", GRAPHS[gi], msp_last_error());
      continue;
    }
    test_csr m;
    CHECK(test_csr_from_matrix(&m, G) == 0, "copy");
    msp_matrix_destroy(&G);
    msp_pagerank_report R[3];
    memset(R, 0, sizeof R);
    const msp_pagerank_precision modes[] = {MSP_PAGERANK_F64, MSP_PAGERANK_CPMS2,
                                            MSP_PAGERANK_CPMS4};
    for (int mode = 0; mode < 3; mode++) {
      char label[96];
      snprintf(label, sizeof label, "%s mode %d", GRAPHS[gi], mode);
      prcase k = base_case(label);
      k.prec = modes[mode];
      check_case(ctx, ref, &m, &k, &R[mode]);
    }
    printf("prtest: %-15s f64 %lld; cpms2 %lld (32:%lld 64:%lld); cpms4 %lld (16:%lld 32:%lld "
           "48:%lld 64:%lld)\n",
           GRAPHS[gi], (long long)R[0].iterations, (long long)R[1].iterations,
           (long long)R[1].iterations_by_bits[2], (long long)R[1].iterations_by_bits[4],
           (long long)R[2].iterations, (long long)R[2].iterations_by_bits[1],
           (long long)R[2].iterations_by_bits[2], (long long)R[2].iterations_by_bits[3],
           (long long)R[2].iterations_by_bits[4]);
    CHECK(R[0].converged && R[1].converged && R[2].converged, "%s: not converged", GRAPHS[gi]);
    CHECK(R[1].iterations <= R[0].iterations + 2, "%s: cpms2 %lld iterations, f64 %lld", GRAPHS[gi],
          (long long)R[1].iterations, (long long)R[0].iterations);
    CHECK(R[2].iterations <= 1.25 * R[0].iterations, "%s: cpms4 %lld iterations, f64 %lld",
          GRAPHS[gi], (long long)R[2].iterations, (long long)R[0].iterations);
    test_csr_free(&m);
    seen++;
  }
  CHECK(seen >= 8, "only %d collection graphs could be read", seen);
}

void prtest_run(msp_context ctx, msp_context ref, int quick) {
  printf("prtest: errors\n");
  errors(ctx);
  printf("prtest: small graphs\n");
  small_graphs(ctx, ref);
  if (!quick) collection(ctx, ref);
}

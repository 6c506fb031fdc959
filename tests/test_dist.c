// test_dist.c: the distributed layer under mpirun -np 1..4 (tests/CMakeLists.txt runs each):
// every rank builds the whole matrix and the one-process results on a plain CPU context, the
// root distributes the matrix, and the distributed products, reductions and GMRES solves must
// give the one-process bits (products, norms, iteration counts, residual histories, solutions).
// Bad input (more ranks than chunks of rows, an empty or non-square matrix, a second matrix of
// another size) must give the same clear error on every rank, without a hang.
#include "dist.h" // the summation trees (msp__dist_tree_*), the halo's two ways
#include "mixsparse_mpi.h"
#include "test_dist_common.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int rank_, size_;
static msp_context ref; // one process's context (every rank has one)

// n doubles equal bit for bit; the first difference printed.
static int same_bits(const double *a, const double *b, int64_t n, const char *label) {
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof(double)) != 0) {
      fprintf(stderr, "rank %d/%d %s: entry %lld: %.17g (one process) vs %.17g (distributed)\n",
              rank_, size_, label, (long long)i, a[i], b[i]);
      return 0;
    }
  return 1;
}

// y = alpha G x + beta y0 on one process and distributed, for G converted with format f and
// values pa, x in px and y in py; two products (the second reuses the descriptor).
static void spmv_case(msp_dist d, msp_matrix A, msp_matrix G, const char *name,
                      const msp_convert_options *o, msp_precision px, msp_precision py) {
  const int64_t n = msp_matrix_rows(G);
  char label[160];
  snprintf(label, sizeof label, "%s %s/%s x %s y %s", name, msp_format_name(o->format),
           msp_precision_name(o->precision), msp_precision_name(px), msp_precision_name(py));
  double *x = malloc((size_t)n * sizeof *x), *y0 = malloc((size_t)n * sizeof *y0);
  double *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
  msp_matrix B = NULL;
  msp_vector xv = NULL, yv = NULL, xl = NULL, yl = NULL;
  CHECK(x && y0 && want && got, "out of memory");
  if (!x || !y0 || !want || !got) goto exit;
  test_dist_fill(n, 7, x);
  test_dist_fill(n, 8, y0);
  CHECK_OK(msp_matrix_convert(ref, G, o, &B));
  CHECK_OK(msp_vector_create_precision(ref, n, px, &xv));
  CHECK_OK(msp_vector_create_precision(ref, n, py, &yv));
  CHECK_OK(msp_vector_set(xv, x));
  CHECK_OK(msp_vector_set(yv, y0));
  CHECK_OK(msp_spmv(ref, 1.5, B, xv, -0.5, yv));
  CHECK_OK(msp_spmv(ref, 1.5, B, xv, -0.5, yv));
  CHECK_OK(msp_vector_get(yv, want));
  xl = test_dist_part(d, A, px, x);
  yl = test_dist_part(d, A, py, y0);
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.5, A, xl, -0.5, yl));
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.5, A, xl, -0.5, yl));
  CHECK_OK(msp_dist_vector_gather(A, 0, yl, rank_ == 0 ? got : NULL));
  if (rank_ == 0) CHECK(same_bits(want, got, n, label), "%s: distributed product differs", label);
  // reductions over the distributed parts against one process's
  double r1 = 0, r2 = 0;
  CHECK_OK(msp_dot(ref, xv, yv, &r1));
  CHECK_OK(msp_dot(msp_dist_context(d), xl, yl, &r2));
  CHECK(same_bits(&r1, &r2, 1, label), "%s: dot %.17g vs %.17g", label, r1, r2);
  CHECK_OK(msp_nrm2(ref, yv, &r1));
  CHECK_OK(msp_nrm2(msp_dist_context(d), yl, &r2));
  CHECK(same_bits(&r1, &r2, 1, label), "%s: nrm2 %.17g vs %.17g", label, r1, r2);
  CHECK_OK(msp_nrm1(ref, xv, &r1));
  CHECK_OK(msp_nrm1(msp_dist_context(d), xl, &r2));
  CHECK(same_bits(&r1, &r2, 1, label), "%s: nrm1 %.17g vs %.17g", label, r1, r2);
exit:
  msp_vector_destroy(&xv);
  msp_vector_destroy(&yv);
  msp_vector_destroy(&xl);
  msp_vector_destroy(&yl);
  msp_matrix_destroy(&B);
  free(x);
  free(y0);
  free(want);
  free(got);
}

typedef struct {
  msp_format f;
  msp_precision pa, px, py;
} combo;

// Every combination on matrix G (all ranks hold it; the root's copy is distributed).
static void spmv_cases(msp_matrix G, const char *name, const combo *c, int nc) {
  msp_dist d = NULL;
  CHECK_OK(msp_dist_create(MPI_COMM_WORLD, &d));
  for (int k = 0; k < nc; k++) {
    msp_convert_options o = msp_convert_options_default();
    o.format = c[k].f;
    o.precision = c[k].pa;
    o.max_fill = 1e9; // each rank's part pads differently: no refusal on one rank only
    msp_matrix A = NULL;
    const int root = k % size_; // any rank may hold the matrix
    CHECK_OK(msp_dist_matrix_scatter(d, root, rank_ == root ? G : NULL, &o, &A));
    if (!A) continue;
    msp_dist_matrix_info in;
    CHECK_OK(msp_dist_matrix_info_get(A, &in));
    CHECK(in.row0 % MSP_DIST_CHUNK == 0 && in.rows > 0, "row0 %lld rows %lld", (long long)in.row0,
          (long long)in.rows);
    CHECK(in.interior_rows + in.boundary_rows == in.rows, "parts %lld + %lld != %lld",
          (long long)in.interior_rows, (long long)in.boundary_rows, (long long)in.rows);
    CHECK(size_ > 1 || (in.halo == 0 && in.send_entries == 0), "one rank with a halo");
    spmv_case(d, A, G, name, &o, c[k].px, c[k].py);
    CHECK(msp_dist_matrix_info_get(A, &in) == MSP_SUCCESS && in.products == 2, "products %lld",
          (long long)in.products);
    CHECK_OK(msp_matrix_destroy(&A));
  }
  CHECK_OK(msp_dist_destroy(&d));
}

// GMRES on one process and distributed: the same iterations, history, residual and solution
// (restart 0: test_dist_gmres_options's).
static void gmres_case(msp_matrix G, const char *name, msp_precision basis, msp_precond pc,
                       msp_ortho ortho, int restart) {
  const int64_t n = msp_matrix_rows(G);
  enum { CAP = 2048 };
  char label[160];
  snprintf(label, sizeof label, "gmres %s basis %s precond %d ortho %d restart %d", name,
           msp_precision_name(basis), (int)pc, (int)ortho, restart);
  msp_solver_options o = test_dist_gmres_options(basis, pc);
  o.ortho = ortho;
  if (restart > 0) o.restart = restart;
  double *b = malloc((size_t)n * sizeof *b), *want = malloc((size_t)n * sizeof *want);
  double *got = malloc((size_t)n * sizeof *got);
  double *h1 = calloc(CAP, sizeof *h1), *h2 = calloc(CAP, sizeof *h2);
  msp_solver_report r1, r2;
  memset(&r1, 0, sizeof r1);
  memset(&r2, 0, sizeof r2);
  r1.history = h1;
  r2.history = h2;
  r1.history_capacity = r2.history_capacity = CAP;
  msp_dist d = NULL;
  CHECK(b && want && got && h1 && h2, "out of memory");
  if (!b || !want || !got || !h1 || !h2) goto exit;
  test_dist_fill(n, 11, b);
  CHECK_OK(msp_dist_create(MPI_COMM_WORLD, &d));
  if (!d || !test_dist_gmres_pair(ref, G, d, G, &o, b, want, got, &r1, &r2)) goto exit;
  CHECK(r1.iterations > 0 && r1.iterations == r2.iterations && r1.converged == r2.converged &&
            r1.restarts == r2.restarts,
        "%s: iterations %lld / %lld, converged %d / %d", label, (long long)r1.iterations,
        (long long)r2.iterations, r1.converged, r2.converged);
  CHECK(r1.history_length == r2.history_length && same_bits(h1, h2, r1.history_length, label),
        "%s: residual histories differ (%lld / %lld entries)", label, (long long)r1.history_length,
        (long long)r2.history_length);
  CHECK(same_bits(&r1.rel_residual, &r2.rel_residual, 1, label), "%s: residual %.17g vs %.17g",
        label, r1.rel_residual, r2.rel_residual);
  if (rank_ == 0) CHECK(same_bits(want, got, n, label), "%s: solutions differ", label);
  if (rank_ == 0)
    printf("%s: %lld iterations, residual %.3e on %d rank%s\n", label, (long long)r2.iterations,
           r2.rel_residual, size_, size_ > 1 ? "s" : "");
exit:
  CHECK_OK(msp_dist_destroy(&d));
  free(b);
  free(want);
  free(got);
  free(h1);
  free(h2);
}

// PageRank (the one solver, msp_pagerank, on a distributed context): the same iterations,
// change history, dangling count and ranks as one process.
static void pagerank_case(msp_matrix G, const char *name, msp_pagerank_precision prec,
                          int personalized) {
  const int64_t n = msp_matrix_rows(G);
  enum { CAP = 1024 };
  char label[160];
  snprintf(label, sizeof label, "pagerank %s precision %d personalized %d", name, (int)prec,
           personalized);
  msp_pagerank_options o = msp_pagerank_options_default();
  o.precision = prec;
  o.order = MSP_PAGERANK_ORDER_NATURAL;
  o.tol = 1e-12;
  double *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
  double *v = malloc((size_t)n * sizeof *v);
  double *h1 = calloc(CAP, sizeof *h1), *h2 = calloc(CAP, sizeof *h2);
  msp_pagerank_report r1, r2;
  memset(&r1, 0, sizeof r1);
  memset(&r2, 0, sizeof r2);
  r1.history = h1;
  r2.history = h2;
  r1.history_capacity = r2.history_capacity = CAP;
  msp_vector p1 = NULL, v1 = NULL, p2 = NULL, v2 = NULL;
  msp_dist d = NULL;
  msp_matrix A = NULL;
  CHECK(want && got && v && h1 && h2, "out of memory");
  if (!want || !got || !v || !h1 || !h2) goto exit;
  test_dist_fill(n, 21, v);
  for (int64_t i = 0; i < n; i++)
    v[i] = v[i] < 0 ? -v[i] : v[i];
  CHECK_OK(msp_vector_create(ref, n, &p1));
  if (personalized) {
    CHECK_OK(msp_vector_create(ref, n, &v1));
    CHECK_OK(msp_vector_set(v1, v));
    o.personalization = v1;
  }
  CHECK_OK(msp_pagerank(ref, G, &o, p1, &r1));
  CHECK_OK(msp_vector_get(p1, want));
  CHECK_OK(msp_dist_create(MPI_COMM_WORLD, &d));
  msp_convert_options co = msp_convert_options_default();
  co.format = MSP_FORMAT_CSR;
  CHECK_OK(msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, &co, &A));
  if (!A) goto exit;
  p2 = test_dist_part(d, A, MSP_PRECISION_F64, NULL);
  if (personalized) {
    v2 = test_dist_part(d, A, MSP_PRECISION_F64, v);
    o.personalization = v2;
  }
  CHECK_OK(msp_pagerank(msp_dist_context(d), A, &o, p2, &r2));
  CHECK_OK(msp_dist_vector_gather(A, 0, p2, rank_ == 0 ? got : NULL));
  CHECK(r1.iterations > 1 && r1.iterations == r2.iterations && r1.converged == r2.converged &&
            r1.dangling == r2.dangling,
        "%s: iterations %lld / %lld, converged %d / %d, dangling %lld / %lld", label,
        (long long)r1.iterations, (long long)r2.iterations, r1.converged, r2.converged,
        (long long)r1.dangling, (long long)r2.dangling);
  CHECK(r1.history_length == r2.history_length && same_bits(h1, h2, r1.history_length, label),
        "%s: change histories differ (%lld / %lld entries)", label, (long long)r1.history_length,
        (long long)r2.history_length);
  if (rank_ == 0) CHECK(same_bits(want, got, n, label), "%s: ranks differ", label);
  if (rank_ == 0)
    printf("%s: %lld iterations, %lld dangling on %d rank%s\n", label, (long long)r2.iterations,
           (long long)r2.dangling, size_, size_ > 1 ? "s" : "");
  // the forms and orders that are not distributed: the same clear error on every rank
  o.personalization = v2;
  o.values = 1;
  CHECK_STATUS(msp_pagerank(msp_dist_context(d), A, &o, p2, NULL), MSP_ERR_NOT_SUPPORTED);
  o.values = 0;
  o.order = MSP_PAGERANK_ORDER_DEGREE;
  CHECK_STATUS(msp_pagerank(msp_dist_context(d), A, &o, p2, NULL), MSP_ERR_NOT_SUPPORTED);
exit:
  msp_matrix_destroy(&A);
  msp_vector_destroy(&p2);
  msp_vector_destroy(&v2);
  CHECK_OK(msp_dist_destroy(&d));
  msp_vector_destroy(&p1);
  msp_vector_destroy(&v1);
  free(want);
  free(got);
  free(v);
  free(h1);
  free(h2);
}

// One status on every rank: the failures of one rank are every rank's (no hang, no half-made
// objects): test_dist_agreed gives the status when it is the same everywhere, -1 otherwise.

// Allocation failures on rank 0 alone, at every allocation of making the context, distributing
// a matrix and its vectors: every rank returns the same status, nothing is left allocated, and
// the run without a failure gives one process's product.
static void alloc_failures(msp_matrix G) {
  const int64_t n = msp_matrix_rows(G);
  double *x = malloc((size_t)n * sizeof *x), *want = malloc((size_t)n * sizeof *want);
  double *got = malloc((size_t)n * sizeof *got);
  CHECK(x && want && got, "out of memory");
  if (!x || !want || !got) goto exit;
  test_dist_fill(n, 31, x);
  CHECK_OK(test_spmv(ref, G, x, want));
  const long live0 = test_alloc.live;
  int done = 0, runs = 0;
  for (long k = 0; !done && k < 2000; k++, runs++) {
    test_alloc.calls = 0;
    test_alloc.fail_at = rank_ == 0 ? k : -1;
    msp_dist d = NULL;
    msp_matrix A = NULL;
    msp_vector xl = NULL, yl = NULL;
    msp_status st = msp_dist_create(MPI_COMM_WORLD, &d);
    int a = test_dist_agreed(st);
    CHECK(a >= 0, "fail at %ld: msp_dist_create returned different statuses", k);
    if (st == MSP_SUCCESS) {
      st = msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, NULL, &A);
      a = test_dist_agreed(st);
      CHECK(a >= 0 && (st == MSP_SUCCESS) == (A != NULL),
            "fail at %ld: msp_dist_matrix_scatter: %s on rank %d", k, msp_status_name(st), rank_);
    }
    if (st == MSP_SUCCESS) {
      msp_dist_matrix_info in;
      msp_dist_matrix_info_get(A, &in);
      st = msp_vector_create(msp_dist_context(d), in.rows, &xl);
      if (st == MSP_SUCCESS) st = msp_vector_create(msp_dist_context(d), in.rows, &yl);
      if (test_dist_agreed(st) != MSP_SUCCESS && st == MSP_SUCCESS)
        st = MSP_ERR_OUT_OF_MEMORY; // another's
    }
    if (st == MSP_SUCCESS) {
      st = msp_dist_vector_scatter(A, 0, rank_ == 0 ? x : NULL, xl);
      CHECK(test_dist_agreed(st) >= 0, "fail at %ld: msp_dist_vector_scatter statuses differ", k);
    }
    if (st == MSP_SUCCESS) {
      st = msp_spmv(msp_dist_context(d), 1.0, A, xl, 0.0, yl);
      CHECK(test_dist_agreed(st) >= 0, "fail at %ld: msp_spmv statuses differ", k);
    }
    if (st == MSP_SUCCESS) {
      st = msp_dist_vector_gather(A, 0, yl, rank_ == 0 ? got : NULL);
      CHECK(test_dist_agreed(st) >= 0, "fail at %ld: msp_dist_vector_gather statuses differ", k);
    }
    test_alloc.fail_at = -1;
    int mine = rank_ == 0 && test_alloc.calls <= k; // no failure was injected: the full run
    MPI_Bcast(&mine, 1, MPI_INT, 0, MPI_COMM_WORLD);
    done = mine;
    if (done) {
      CHECK(st == MSP_SUCCESS, "the run without a failure: %s", msp_last_error());
      if (rank_ == 0 && st == MSP_SUCCESS)
        CHECK(same_bits(want, got, n, "alloc"), "the run without a failure differs");
    }
    msp_vector_destroy(&xl);
    msp_vector_destroy(&yl);
    msp_matrix_destroy(&A);
    CHECK_OK(msp_dist_destroy(&d));
    CHECK(test_alloc.live == live0, "fail at %ld: %ld blocks left", k, test_alloc.live - live0);
  }
  CHECK(done, "no run without a failure within %d allocations", runs);
  if (rank_ == 0) printf("allocation failures: %d runs, statuses agreed\n", runs);
exit:
  free(x);
  free(want);
  free(got);
}

// The CPU backend's sum of n partials (src/cpu/dispatch.h, msp__cpu_pairwise), restated.
static double ref_pairwise(double *p, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2)
    for (int64_t i = 0; i + w < n; i += 2 * w)
      p[i] += p[i + w];
  return n ? p[0] : 0.0;
}

// The trees cut along ranks (tree.c), without MPI: `ranks` simulated ranges of chunks (random
// cuts, each at least one chunk), their nodes and values concatenated as the gather does, summed
// and compared bit for bit with one process's sum (grouped as blas1.c, or one tree as basis.c),
// for sizes across the powers of two and the groups' boundaries.
static void tree_cases(void) {
  const int64_t totals[] = {1, 2, 3, 5, 8, 9, 31, 100, 1023, 1025, 2500, 3001};
  const int64_t groups[] = {8, MSP__RED_GROUP, 0};
  const int nranks[] = {1, 2, 3, 4, 7};
  msp_rng rng = {99};
  enum { M = 2, MAXT = 3001 };
  static double part[MAXT * M], work[MAXT], vals[MAXT * M], copy[MAXT];
  static msp__dist_block blk[MAXT];
  int64_t bad = 0, cases = 0;
  for (size_t ti = 0; ti < sizeof totals / sizeof *totals; ti++)
    for (size_t gi = 0; gi < sizeof groups / sizeof *groups; gi++)
      for (size_t ri = 0; ri < sizeof nranks / sizeof *nranks; ri++) {
        const int64_t total = totals[ti], P = nranks[ri] < total ? nranks[ri] : total;
        const int grouped = groups[gi] > 0;
        const int64_t group = grouped ? groups[gi] : total;
        for (int64_t c = 0; c < total * M; c++) // magnitudes 1e-8 .. 1e8: rounding matters
          part[c] =
              (2.0 * msp_rng_uniform(&rng) - 1.0) * pow(10.0, (double)msp_rng_range(&rng, 17) - 8);
        int64_t cut[8];
        cut[0] = 0;
        cut[P] = total;
        for (int64_t r = 1; r < P; r++) { // increasing cuts, each range non-empty
          const int64_t lo = cut[r - 1] + 1, hi = total - (P - r);
          cut[r] = lo + msp_rng_range(&rng, hi - lo + 1);
        }
        int64_t nblk = 0;
        for (int64_t r = 0; r < P; r++) {
          const int64_t k = msp__dist_tree_blocks(cut[r], cut[r + 1], total, group, blk + nblk);
          msp__dist_tree_local(blk + nblk, k, cut[r], total, group, part + cut[r] * M, M, work,
                               vals + nblk * M);
          nblk += k;
        }
        for (int k = 0; k < M; k++) {
          double want = 0.0, got = 0.0;
          for (int64_t g0 = 0; g0 < total; g0 += group) {
            const int64_t len = total - g0 < group ? total - g0 : group;
            for (int64_t c = 0; c < len; c++)
              copy[c] = part[(g0 + c) * M + k];
            const double v = ref_pairwise(copy, len);
            want = grouped ? want + v : v;
          }
          const int ok = msp__dist_tree_sum(blk, nblk, total, group, grouped, vals, M, k, &got);
          cases++;
          if (!ok || memcmp(&want, &got, sizeof want) != 0) {
            if (bad++ < 5)
              fprintf(stderr, "tree: total %lld group %lld ranks %lld: %.17g vs %.17g (%s)\n",
                      (long long)total, (long long)group, (long long)P, want, got,
                      ok ? "tiled" : "not a tiling");
          }
        }
      }
  CHECK(bad == 0, "%lld of %lld tree sums differ from one process's", (long long)bad,
        (long long)cases);
}

// Bad input: the same status on every rank, the root's message on the others.
static void bad_input(void) {
  msp_dist d = NULL;
  msp_matrix G = NULL, A = NULL;
  CHECK_OK(msp_dist_create(MPI_COMM_WORLD, &d));
  // one chunk of rows: one rank only
  CHECK_OK(msp_matrix_generate(ref, "laplace2d:60", &G));
  msp_status st = msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, NULL, &A);
  if (size_ == 1) {
    CHECK(st == MSP_SUCCESS && A, "one rank, one chunk: %s", msp_last_error());
  } else {
    CHECK(st == MSP_ERR_INVALID_MATRIX && !A && strstr(msp_last_error(), "at most 1 rank"),
          "more ranks than chunks: %s (%s)", msp_status_name(st), msp_last_error());
  }
  msp_matrix_destroy(&A);
  // another size than the layout (fixed above with one rank)
  msp_matrix H = NULL;
  CHECK_OK(msp_matrix_generate(ref, "laplace2d:200", &H));
  st = msp_dist_matrix_scatter(d, 0, rank_ == 0 ? H : NULL, NULL, &A);
  if (size_ == 1)
    CHECK(st == MSP_ERR_DIMENSION_MISMATCH && !A, "second size: %s", msp_status_name(st));
  else
    CHECK(st == MSP_SUCCESS && A, "first matrix after a refused one: %s", msp_last_error());
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&H);
  CHECK_OK(msp_dist_destroy(&d));
  // an empty matrix, a non-square one, NULL on the root, a root out of range
  CHECK_OK(msp_dist_create(MPI_COMM_WORLD, &d));
  const int64_t rp0[1] = {0};
  msp_matrix E = NULL;
  CHECK_OK(msp_matrix_from_csr(ref, 0, 0, rp0, NULL, NULL, 0, &E));
  st = msp_dist_matrix_scatter(d, 0, rank_ == 0 ? E : NULL, NULL, &A);
  CHECK(st == MSP_ERR_INVALID_MATRIX && !A && strstr(msp_last_error(), "no rows"),
        "empty matrix: %s (%s)", msp_status_name(st), msp_last_error());
  msp_matrix_destroy(&E);
  msp_matrix R = NULL;
  CHECK_OK(msp_matrix_generate(ref, "random:20000:3:1", &R));
  msp_matrix Rt = NULL;
  {
    // 20000 x 20000 is square; make a rectangular one from its first rows
    int64_t *rp = malloc(20001 * sizeof *rp);
    CHECK(rp != NULL, "out of memory");
    if (rp) {
      CHECK_OK(msp_matrix_get_csr(R, rp, NULL, NULL));
      int32_t *ci = malloc((size_t)rp[20000] * sizeof *ci);
      double *v = malloc((size_t)rp[20000] * sizeof *v);
      if (ci && v) {
        CHECK_OK(msp_matrix_get_csr(R, NULL, ci, v));
        CHECK_OK(msp_matrix_from_csr(ref, 19999, 20000, rp, ci, v, 0, &Rt));
      }
      free(ci);
      free(v);
      free(rp);
    }
  }
  st = msp_dist_matrix_scatter(d, 0, rank_ == 0 ? Rt : NULL, NULL, &A);
  CHECK(st == MSP_ERR_INVALID_MATRIX && !A && strstr(msp_last_error(), "not square"),
        "non-square: %s (%s)", msp_status_name(st), msp_last_error());
  st = msp_dist_matrix_scatter(d, 0, NULL, NULL, &A);
  CHECK(st == MSP_ERR_INVALID_ARGUMENT && !A, "NULL matrix on the root: %s", msp_status_name(st));
  CHECK_STATUS(msp_dist_matrix_scatter(d, size_, R, NULL, &A), MSP_ERR_INVALID_ARGUMENT);
  msp_matrix_destroy(&Rt);
  msp_matrix_destroy(&R);
  msp_matrix_destroy(&G);
  CHECK_OK(msp_dist_destroy(&d));
}

static const combo generated[] = {
    {MSP_FORMAT_CSR, MSP_PRECISION_F64, MSP_PRECISION_F64, MSP_PRECISION_F64},
    {MSP_FORMAT_CSR, MSP_PRECISION_F32, MSP_PRECISION_F32, MSP_PRECISION_F64},
    {MSP_FORMAT_CSR, MSP_PRECISION_CPMS2, MSP_PRECISION_CPMS4, MSP_PRECISION_FX32},
    {MSP_FORMAT_COO, MSP_PRECISION_F64, MSP_PRECISION_FX16, MSP_PRECISION_F32},
    {MSP_FORMAT_ELL, MSP_PRECISION_F16, MSP_PRECISION_F64, MSP_PRECISION_F64},
    {MSP_FORMAT_HLL, MSP_PRECISION_BF16, MSP_PRECISION_F32, MSP_PRECISION_F16},
    {MSP_FORMAT_HYB, MSP_PRECISION_F64, MSP_PRECISION_F64, MSP_PRECISION_CPMS2},
};
static const combo banded[] = {
    {MSP_FORMAT_DIA, MSP_PRECISION_F64, MSP_PRECISION_F64, MSP_PRECISION_F64},
    {MSP_FORMAT_HDIA, MSP_PRECISION_F32, MSP_PRECISION_F64, MSP_PRECISION_F32},
    {MSP_FORMAT_CSR, MSP_PRECISION_F64, MSP_PRECISION_F64, MSP_PRECISION_F64},
};
static const combo shared[] = {
    {MSP_FORMAT_CSR, MSP_PRECISION_F64, MSP_PRECISION_F64, MSP_PRECISION_F64},
    {MSP_FORMAT_HLL, MSP_PRECISION_F32, MSP_PRECISION_F64, MSP_PRECISION_F64},
};

static void with_generated(const char *spec, const combo *c, int nc) {
  msp_matrix G = NULL;
  CHECK_OK(msp_matrix_generate(ref, spec, &G));
  if (G) spmv_cases(G, spec, c, nc);
  msp_matrix_destroy(&G);
}

static void with_shared(const char *dir, const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  msp_matrix G = NULL;
  CHECK_OK(msp_matrix_read_mtx(ref, path, 0, &G));
  if (G) spmv_cases(G, file, shared, (int)(sizeof shared / sizeof *shared));
  msp_matrix_destroy(&G);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // every block the library allocates (the distributed layer's included) is counted, and none
  // may be left at the end (LeakSanitizer cannot be used under mpirun: Open MPI leaks itself)
  const msp_allocator counting = test_counting_allocator();
  CHECK_OK(msp_set_allocator(&counting));
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ref));
  tree_cases();
  // 5 to 9 chunks of 4096 rows: several chunks per rank, halos to both sides, empty rows
  with_generated("random:20000:7:3", generated, (int)(sizeof generated / sizeof *generated));
  with_generated("powerlaw:24000:6:5", generated, 3);
  with_generated("laplace2d:190", banded, (int)(sizeof banded / sizeof *banded));
  // the halo found by sorting its entries (the way for few entries over many columns) instead of
  // the bitmap of the columns: the same layout, so the same bits again
  msp__dist_halo_force_sort(1);
  with_generated("random:20000:7:3", generated, 2);
  with_generated("laplace2d:190", banded, 1);
  msp__dist_halo_force_sort(0);
  const char *dir = test_matrices_dir();
  if (dir) {
    with_shared(dir, "delaunay_n15.mtx.gz");
    with_shared(dir, "p2p-Gnutella24.mtx.gz");
  } else if (rank_ == 0) {
    printf("test_dist: ../shared/matrices absent: generated matrices only\n");
  }
  msp_matrix G = NULL;
  CHECK_OK(msp_matrix_generate(ref, "convdiff3d:26", &G));
  if (G) {
    gmres_case(G, "convdiff3d:26", MSP_PRECISION_F64, MSP_PRECOND_NONE, MSP_ORTHO_CGS, 0);
    gmres_case(G, "convdiff3d:26", MSP_PRECISION_F32, MSP_PRECOND_JACOBI, MSP_ORTHO_CGS, 0);
    gmres_case(G, "convdiff3d:26", MSP_PRECISION_FX16, MSP_PRECOND_NONE, MSP_ORTHO_MGS, 0);
    // f32 DCGS2 at restart 100: the first cycle stops at its floor (iteration 60) and goes on
    // as GCRO in its free columns (docs/gmres.md), then restarts
    gmres_case(G, "convdiff3d:26", MSP_PRECISION_F32, MSP_PRECOND_NONE, MSP_ORTHO_DCGS2, 100);
  }
  msp_matrix_destroy(&G);
  // a power-law graph with dangling nodes and hubs: 4 chunks of nodes
  CHECK_OK(msp_matrix_generate(ref, "rmat:14:8:3", &G));
  if (G) {
    pagerank_case(G, "rmat:14:8", MSP_PAGERANK_F64, 0);
    pagerank_case(G, "rmat:14:8", MSP_PAGERANK_CPMS2, 1);
    pagerank_case(G, "rmat:14:8", MSP_PAGERANK_CPMS4, 0);
  }
  msp_matrix_destroy(&G);
  CHECK_OK(msp_matrix_generate(ref, "laplace2d:130", &G));
  if (G) alloc_failures(G);
  msp_matrix_destroy(&G);
  bad_input();
  CHECK_OK(msp_context_destroy(&ref));
  CHECK(test_alloc.live == 0, "%ld blocks of the library not freed", test_alloc.live);
  char name[64];
  snprintf(name, sizeof name, "test_dist (%d rank%s)", size_, size_ > 1 ? "s" : "");
  return test_dist_finish(name); // every rank's failures, one verdict
}

// test_dist_cuda.c: distributed contexts whose ranks reduce on their own backend, under mpirun.
//   --backend cuda: CUDA ranks (msp_dist_create_backend, device 0 on every rank: two ranks share
//                   one GPU under --oversubscribe); SKIPPED (exit 77 on every rank) when CUDA is
//                   not built or no GPU is usable.
//   --backend cpu:  CPU ranks switched to the same reductions (msp__dist_set_exact(d, 0)): the
//                   path of the CUDA ranks that is not CUDA code, run on any machine.
// The reference is one process on the same backend (every rank computes it). The ranks' results
// are not one process's bits there: each is checked against the rounding-error bound of the two
// summation orders, from the data (products: 2 (k + 4) u (|alpha| |A| |x| + |beta| |y|) per row
// of k entries; dot: 2 (n + 2 P + 4) u sum |x_i y_i|; norms likewise, u = 2^-53), and every rank
// must hold the same bits (one gather, added in rank order). GMRES must converge on every rank
// alike with a true residual within twice the tolerance (as one process's); a local matrix of
// the distributed context multiplies as on one process; ranks naming different backends are
// refused with the same status everywhere;
// no library block is left allocated. PageRank runs on these ranks as on one process (the same
// iteration count, ranks within rounding).
#include "dist.h" // msp__dist_set_exact
#include "mixsparse_mpi.h"
#include "test_dist_common.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int rank_, size_;
static msp_backend backend_ = MSP_BACKEND_CPU;
static int device_ = 0; // --device local: MSP_DIST_DEVICE_LOCAL (one GPU per rank)
static int quick_ = 0;  // --quick: one case of each kind (for compute-sanitizer)
// the transport of the contexts made by make_dist (CUDA ranks: host or nccl; CPU ranks: mpi)
static msp_dist_transport transport_ = MSP_DIST_TRANSPORT_AUTO;
static msp_context ref; // one process on the ranks' backend (every rank has one)
static const double U = 0x1p-53;

static msp_status make_dist(msp_dist *d) {
  msp_status st = msp_dist_create_backend(MPI_COMM_WORLD, backend_, device_, d);
  if (st == MSP_SUCCESS && backend_ == MSP_BACKEND_CPU) st = msp__dist_set_exact(*d, 0);
  if (st == MSP_SUCCESS && transport_ != MSP_DIST_TRANSPORT_AUTO)
    st = msp_dist_set_transport(*d, transport_);
  return st;
}

// The relative rounding of a vector precision (what storing y adds, beyond the sums' bound).
static double store_eps(msp_precision p) {
  return p == MSP_PRECISION_F32    ? 0x1p-24
         : p == MSP_PRECISION_F16  ? 0x1p-11
         : p == MSP_PRECISION_BF16 ? 0x1p-8
                                   : 0.0;
}

// 1 when every rank holds the same bits of v (n values).
static int same_everywhere(const double *v, int n) {
  double *all = malloc((size_t)n * (size_t)size_ * sizeof *all);
  int ok = all != NULL;
  if (ok) {
    MPI_Allgather(v, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int q = 1; q < size_ && ok; q++)
      ok = memcmp(all, all + (size_t)q * (size_t)n, (size_t)n * sizeof *all) == 0;
  }
  free(all);
  int every = ok;
  MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return every;
}

// got against want within 2 (k_i + 4) u (|alpha| (|G| |x|)_i + |beta| |y0_i|) for each row i.
static int64_t outside_bound(const test_csr *c, const double *x, const double *y0, double alpha,
                             double beta, const double *want, const double *got, double seps,
                             int64_t *same) {
  int64_t bad = 0;
  *same = 0;
  for (int64_t i = 0; i < c->rows; i++) {
    double ax = 0.0;
    for (int64_t p = c->rowptr[i]; p < c->rowptr[i + 1]; p++)
      ax += fabs(c->val[p] * x[c->colind[p]]);
    const double k = (double)(c->rowptr[i + 1] - c->rowptr[i]);
    const double bound = 2.0 * (k + 4.0) * U * (fabs(alpha) * ax + fabs(beta) * fabs(y0[i])) *
                             (1.0 + 1e-12) +         // (the bound's own rounding)
                         2.0 * seps * fabs(want[i]); // both stores into y's precision
    *same += memcmp(&want[i], &got[i], sizeof(double)) == 0;
    if (!(fabs(got[i] - want[i]) <= bound)) {
      if (bad++ < 3)
        fprintf(stderr, "row %lld: %.17g (one process) vs %.17g, bound %.3g\n", (long long)i,
                want[i], got[i], bound);
    }
  }
  return bad;
}

// Products (y = 1.5 G x - 0.5 y0, then y = G x again into the same vector), the dot product and
// both norms, distributed against one process, for G converted to format f.
static void spmv_case(msp_matrix G, const char *name, msp_format f) {
  const int64_t n = msp_matrix_rows(G);
  char label[160];
  snprintf(label, sizeof label, "%s %s", name, msp_format_name(f));
  double *x = malloc((size_t)n * sizeof *x), *y0 = malloc((size_t)n * sizeof *y0);
  double *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
  double *zero = calloc((size_t)n, sizeof *zero);
  test_csr c = {0};
  msp_dist d = NULL;
  msp_matrix A = NULL, B = NULL;
  msp_vector xv = NULL, yv = NULL, xl = NULL, yl = NULL;
  CHECK(x && y0 && want && got && zero && test_csr_from_matrix(&c, G) == 0, "out of memory");
  if (!x || !y0 || !want || !got || !zero || !c.rowptr) goto exit;
  test_dist_fill(n, 7, x);
  test_dist_fill(n, 8, y0);
  msp_convert_options o = msp_convert_options_default();
  o.format = f;
  o.max_fill = 1e9; // each rank's part pads differently: no refusal on one rank only
  CHECK_OK(msp_matrix_convert(ref, G, &o, &B));
  CHECK_OK(msp_vector_create(ref, n, &xv));
  CHECK_OK(msp_vector_create(ref, n, &yv));
  CHECK_OK(msp_vector_set(xv, x));
  CHECK_OK(msp_vector_set(yv, y0));
  CHECK_OK(msp_spmv(ref, 1.5, B, xv, -0.5, yv));
  CHECK_OK(msp_vector_get(yv, want));
  CHECK_OK(make_dist(&d));
  CHECK_OK(msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, &o, &A));
  if (!A) goto exit;
  xl = test_dist_part(d, A, MSP_PRECISION_F64, x);
  yl = test_dist_part(d, A, MSP_PRECISION_F64, y0);
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.5, A, xl, -0.5, yl));
  CHECK_OK(msp_dist_vector_gather(A, 0, yl, rank_ == 0 ? got : NULL));
  int64_t same = 0, bad = 0;
  if (rank_ == 0) {
    bad = outside_bound(&c, x, y0, 1.5, -0.5, want, got, 0.0, &same);
    CHECK(bad == 0, "%s: %lld of %lld rows outside the rounding bound", label, (long long)bad,
          (long long)n);
    printf("%s: y = 1.5 A x - 0.5 y: %lld of %lld rows with one process's bits\n", label,
           (long long)same, (long long)n);
  }
  // the reductions of the parts (yl holds the ranks' product) against one process's of the
  // same values (the ranks' y, gathered, on every rank)
  MPI_Bcast(got, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  CHECK_OK(msp_vector_set(yv, got));
  double r1 = 0, r2 = 0, sxy = 0, sx = 0;
  for (int64_t i = 0; i < n; i++) {
    sxy += fabs(x[i] * got[i]);
    sx += fabs(x[i]);
  }
  const double gn = 2.0 * ((double)n + 2.0 * size_ + 4.0) * U;
  CHECK_OK(msp_dot(ref, xv, yv, &r1));
  CHECK_OK(msp_dot(msp_dist_context(d), xl, yl, &r2));
  CHECK(fabs(r1 - r2) <= gn * sxy * (1 + 1e-6), "%s: dot %.17g vs %.17g (bound %.3g)", label, r1,
        r2, gn * sxy);
  CHECK(same_everywhere(&r2, 1), "%s: the ranks' dot products differ", label);
  CHECK_OK(msp_nrm1(ref, xv, &r1));
  CHECK_OK(msp_nrm1(msp_dist_context(d), xl, &r2));
  CHECK(fabs(r1 - r2) <= gn * sx, "%s: nrm1 %.17g vs %.17g", label, r1, r2);
  CHECK(same_everywhere(&r2, 1), "%s: the ranks' 1-norms differ", label);
  CHECK_OK(msp_nrm2(ref, yv, &r1));
  CHECK_OK(msp_nrm2(msp_dist_context(d), yl, &r2));
  CHECK(fabs(r1 - r2) <= gn * r1, "%s: nrm2 %.17g vs %.17g", label, r1, r2);
  CHECK(same_everywhere(&r2, 1), "%s: the ranks' 2-norms differ", label);
  // y = A x again (beta 0: y's old values not read), the descriptor reused
  CHECK_OK(msp_vector_set(yv, zero));
  CHECK_OK(msp_spmv(ref, 1.0, B, xv, 0.0, yv));
  CHECK_OK(msp_vector_get(yv, want));
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.0, A, xl, 0.0, yl));
  CHECK_OK(msp_dist_vector_gather(A, 0, yl, rank_ == 0 ? got : NULL));
  if (rank_ == 0) {
    bad = outside_bound(&c, x, zero, 1.0, 0.0, want, got, 0.0, &same);
    CHECK(bad == 0, "%s: y = A x: %lld rows outside the rounding bound", label, (long long)bad);
  }
  msp_dist_matrix_info in;
  CHECK(msp_dist_matrix_info_get(A, &in) == MSP_SUCCESS && in.products == 2, "products %lld",
        (long long)in.products);
  // the same product again: the same bits on every rank
  {
    double *again = malloc((size_t)n * sizeof *again);
    CHECK(again != NULL, "out of memory");
    CHECK_OK(msp_spmv(msp_dist_context(d), 1.0, A, xl, 0.0, yl));
    CHECK_OK(msp_dist_vector_gather(A, 0, yl, rank_ == 0 ? again : NULL));
    if (rank_ == 0 && again)
      CHECK(!memcmp(again, got, (size_t)n * sizeof *got), "%s: a second product differs", label);
    free(again);
  }
exit:
  msp_vector_destroy(&xv);
  msp_vector_destroy(&yv);
  msp_vector_destroy(&xl);
  msp_vector_destroy(&yl);
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&B);
  CHECK_OK(msp_dist_destroy(&d));
  test_csr_free(&c);
  free(x);
  free(y0);
  free(want);
  free(got);
  free(zero);
}

// y = A x with x and y in vector precision vp (the halo travels in it when IEEE): within the
// sums' bound plus both stores' rounding of one process's; the bytes sent per product are the
// send list's entries times the halo's element size.
static void prec_case(msp_matrix G, const char *name, msp_precision vp) {
  const int64_t n = msp_matrix_rows(G);
  char label[160];
  snprintf(label, sizeof label, "%s x,y %s", name, msp_precision_name(vp));
  double *x = malloc((size_t)n * sizeof *x), *want = malloc((size_t)n * sizeof *want);
  double *got = malloc((size_t)n * sizeof *got), *zero = calloc((size_t)n, sizeof *zero);
  test_csr c = {0};
  msp_dist d = NULL;
  msp_matrix A = NULL;
  msp_vector xv = NULL, yv = NULL, xl = NULL, yl = NULL;
  CHECK(x && want && got && zero && test_csr_from_matrix(&c, G) == 0, "out of memory");
  if (!x || !want || !got || !zero || !c.rowptr) goto exit;
  test_dist_fill(n, 9, x);
  CHECK_OK(msp_vector_create_precision(ref, n, vp, &xv));
  CHECK_OK(msp_vector_create_precision(ref, n, vp, &yv));
  CHECK_OK(msp_vector_set(xv, x));
  CHECK_OK(msp_vector_get(xv, x)); // x as stored: the bound's x
  CHECK_OK(msp_spmv(ref, 1.0, G, xv, 0.0, yv));
  CHECK_OK(msp_vector_get(yv, want));
  CHECK_OK(make_dist(&d));
  CHECK_OK(msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, NULL, &A));
  if (!A) goto exit;
  xl = test_dist_part(d, A, vp, x);
  yl = test_dist_part(d, A, vp, zero);
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.0, A, xl, 0.0, yl));
  CHECK_OK(msp_dist_vector_gather(A, 0, yl, rank_ == 0 ? got : NULL));
  if (rank_ == 0) {
    int64_t same = 0;
    const int64_t bad = outside_bound(&c, x, zero, 1.0, 0.0, want, got, store_eps(vp), &same);
    CHECK(bad == 0, "%s: %lld of %lld rows outside the rounding bound", label, (long long)bad,
          (long long)n);
    printf("%s: %lld of %lld rows with one process's bits\n", label, (long long)same, (long long)n);
  }
  msp_dist_matrix_info in;
  CHECK_OK(msp_dist_matrix_info_get(A, &in));
  const msp_precision hp =
      vp == MSP_PRECISION_F32 || vp == MSP_PRECISION_F16 || vp == MSP_PRECISION_BF16
          ? vp
          : MSP_PRECISION_F64;
  CHECK(in.halo_bytes == (double)in.send_entries * (double)msp__prec_bytes(hp),
        "%s: %g bytes sent per product for %lld entries", label, in.halo_bytes,
        (long long)in.send_entries);
exit:
  msp_vector_destroy(&xv);
  msp_vector_destroy(&yv);
  msp_vector_destroy(&xl);
  msp_vector_destroy(&yl);
  msp_matrix_destroy(&A);
  CHECK_OK(msp_dist_destroy(&d));
  test_csr_free(&c);
  free(x);
  free(want);
  free(got);
  free(zero);
}

// A matrix each rank generates for its own rows (msp_dist_matrix_generate): the same global
// sizes as the generated matrix, a product within the rounding bound of one process's on it.
static void generate_case(const char *spec) {
  msp_matrix G = NULL, A = NULL;
  msp_dist d = NULL;
  msp_vector xl = NULL, yl = NULL, xv = NULL, yv = NULL;
  test_csr c = {0};
  double *x = NULL, *want = NULL, *got = NULL, *zero = NULL;
  CHECK_OK(msp_matrix_generate(ref, spec, &G));
  CHECK_OK(make_dist(&d));
  if (!G || !d) goto exit;
  const int64_t n = msp_matrix_rows(G);
  x = malloc((size_t)n * sizeof *x);
  want = malloc((size_t)n * sizeof *want);
  got = malloc((size_t)n * sizeof *got);
  zero = calloc((size_t)n, sizeof *zero);
  CHECK(x && want && got && zero && test_csr_from_matrix(&c, G) == 0, "out of memory");
  if (!x || !want || !got || !zero || !c.rowptr) goto exit;
  CHECK_OK(msp_dist_matrix_generate(d, spec, NULL, &A));
  if (!A) goto exit;
  msp_dist_matrix_info in;
  CHECK_OK(msp_dist_matrix_info_get(A, &in));
  CHECK(in.global_rows == n && in.global_nnz == msp_matrix_nnz(G), "%s: %lld rows %lld nonzeros",
        spec, (long long)in.global_rows, (long long)in.global_nnz);
  test_dist_fill(n, 5, x);
  CHECK_OK(msp_vector_create(ref, n, &xv));
  CHECK_OK(msp_vector_create(ref, n, &yv));
  CHECK_OK(msp_vector_set(xv, x));
  CHECK_OK(msp_spmv(ref, 1.0, G, xv, 0.0, yv));
  CHECK_OK(msp_vector_get(yv, want));
  xl = test_dist_part(d, A, MSP_PRECISION_F64, x);
  yl = test_dist_part(d, A, MSP_PRECISION_F64, zero);
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.0, A, xl, 0.0, yl));
  CHECK_OK(msp_dist_vector_gather(A, 0, yl, rank_ == 0 ? got : NULL));
  if (rank_ == 0) {
    int64_t same = 0;
    const int64_t bad = outside_bound(&c, x, zero, 1.0, 0.0, want, got, 0.0, &same);
    CHECK(bad == 0, "generated %s: %lld rows outside the rounding bound", spec, (long long)bad);
    printf("generated %s on each rank: %lld of %lld rows with one process's bits\n", spec,
           (long long)same, (long long)n);
  }
exit:
  msp_vector_destroy(&xl);
  msp_vector_destroy(&yl);
  msp_vector_destroy(&xv);
  msp_vector_destroy(&yv);
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&G);
  CHECK_OK(msp_dist_destroy(&d));
  test_csr_free(&c);
  free(x);
  free(want);
  free(got);
  free(zero);
}

// An R-MAT graph drawn by every rank for its own rows (each draws a share of the edge list and
// sends each edge to its row's owner) is one process's graph: the same nonzeros on every rank as
// the graph scattered from rank 0, and the product over both the same bits (the same parts, the
// same steps).
static void rmat_generate_case(const char *spec) {
  msp_matrix G = NULL, A = NULL, B = NULL;
  msp_dist d = NULL;
  msp_vector xl = NULL, ya = NULL, yb = NULL;
  double *x = NULL, *ga = NULL, *gb = NULL;
  CHECK_OK(msp_matrix_generate(ref, spec, &G));
  CHECK_OK(make_dist(&d));
  if (!G || !d) goto exit;
  const int64_t n = msp_matrix_rows(G);
  x = malloc((size_t)n * sizeof *x);
  ga = malloc((size_t)n * sizeof *ga);
  gb = malloc((size_t)n * sizeof *gb);
  CHECK(x && ga && gb, "out of memory");
  if (!x || !ga || !gb) goto exit;
  CHECK_OK(msp_dist_matrix_generate(d, spec, NULL, &A));
  CHECK_OK(msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, NULL, &B));
  if (!A || !B) goto exit;
  msp_dist_matrix_info ia, ib;
  CHECK_OK(msp_dist_matrix_info_get(A, &ia));
  CHECK_OK(msp_dist_matrix_info_get(B, &ib));
  CHECK(ia.global_rows == n && ia.global_nnz == msp_matrix_nnz(G) && ia.nnz == ib.nnz &&
            ia.halo == ib.halo && ia.rows == ib.rows,
        "%s drawn per rank: %lld nonzeros (%lld here, %lld halo), scattered %lld (%lld, %lld)",
        spec, (long long)ia.global_nnz, (long long)ia.nnz, (long long)ia.halo,
        (long long)msp_matrix_nnz(G), (long long)ib.nnz, (long long)ib.halo);
  {
    // the drawn layout balances the edges: its largest rank holds no more than the largest of
    // blocks of equal rows (R-MAT's first rows hold most edges)
    long long most = ia.nnz, blocks = 0;
    MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    const int64_t chunks = (n + MSP_DIST_CHUNK - 1) / MSP_DIST_CHUNK;
    int64_t *rp = malloc((size_t)(n + 1) * sizeof *rp);
    CHECK(rp, "out of memory");
    if (rp) CHECK_OK(msp_matrix_get_csr(G, rp, NULL, NULL));
    for (int r = 0; r < size_ && rp; r++) {
      int64_t a = chunks * r / size_ * MSP_DIST_CHUNK,
              b = chunks * (r + 1) / size_ * MSP_DIST_CHUNK;
      a = a < n ? a : n;
      b = b < n ? b : n;
      if (rp[b] - rp[a] > blocks) blocks = rp[b] - rp[a];
    }
    free(rp);
    CHECK(most <= blocks, "%s drawn per rank: %lld nonzeros on its largest rank, %lld in blocks",
          spec, most, blocks);
    if (rank_ == 0)
      printf("%s drawn per rank: %lld nonzeros on the largest of %d ranks (%lld with blocks of "
             "equal rows)\n",
             spec, most, size_, blocks);
  }
  test_dist_fill(n, 9, x);
  xl = test_dist_part(d, A, MSP_PRECISION_F64, x);
  ya = test_dist_part(d, A, MSP_PRECISION_F64, NULL);
  yb = test_dist_part(d, A, MSP_PRECISION_F64, NULL);
  if (!xl || !ya || !yb) goto exit;
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.0, A, xl, 0.0, ya));
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.0, B, xl, 0.0, yb));
  CHECK_OK(msp_dist_vector_gather(A, 0, ya, rank_ == 0 ? ga : NULL));
  CHECK_OK(msp_dist_vector_gather(B, 0, yb, rank_ == 0 ? gb : NULL));
  if (rank_ == 0) {
    CHECK(!memcmp(ga, gb, (size_t)n * sizeof *ga),
          "%s drawn per rank: its product differs from "
          "the scattered graph's",
          spec);
    printf("%s drawn on each rank: one process's graph (%lld nonzeros)\n", spec,
           (long long)ia.global_nnz);
  }
exit:
  msp_vector_destroy(&xl);
  msp_vector_destroy(&ya);
  msp_vector_destroy(&yb);
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&B);
  msp_matrix_destroy(&G);
  CHECK_OK(msp_dist_destroy(&d));
  free(x);
  free(ga);
  free(gb);
}

// ||b - G x|| / ||b|| on the reference context.
static double true_residual(msp_matrix G, const double *b, const double *x) {
  const int64_t n = msp_matrix_rows(G);
  msp_vector xv = NULL, rv = NULL;
  double rn = NAN, bn = NAN;
  CHECK_OK(msp_vector_create(ref, n, &xv));
  CHECK_OK(msp_vector_create(ref, n, &rv));
  if (xv && rv) {
    CHECK_OK(msp_vector_set(xv, x));
    CHECK_OK(msp_vector_set(rv, b));
    CHECK_OK(msp_spmv(ref, -1.0, G, xv, 1.0, rv));
    CHECK_OK(msp_nrm2(ref, rv, &rn));
    CHECK_OK(msp_vector_set(rv, b));
    CHECK_OK(msp_nrm2(ref, rv, &bn));
  }
  msp_vector_destroy(&xv);
  msp_vector_destroy(&rv);
  return rn / bn;
}

// GMRES: one process and distributed both converge, every rank alike, true residuals within
// twice the tolerance (the recursive residual's gap is eps times the condition number).
static void gmres_case(msp_matrix G, const char *name, msp_precision basis, msp_precond pc) {
  const int64_t n = msp_matrix_rows(G);
  char label[160];
  snprintf(label, sizeof label, "gmres %s basis %s precond %d", name, msp_precision_name(basis),
           (int)pc);
  msp_solver_options o = test_dist_gmres_options(basis, pc);
  double *b = malloc((size_t)n * sizeof *b), *want = malloc((size_t)n * sizeof *want);
  double *got = malloc((size_t)n * sizeof *got);
  msp_solver_report r1, r2;
  memset(&r1, 0, sizeof r1);
  memset(&r2, 0, sizeof r2);
  msp_dist d = NULL;
  msp_matrix B = NULL;
  CHECK(b && want && got, "out of memory");
  if (!b || !want || !got) goto exit;
  test_dist_fill(n, 11, b);
  CHECK_OK(msp_matrix_convert(ref, G, NULL, &B));
  CHECK_OK(make_dist(&d));
  if (!B || !d || !test_dist_gmres_pair(ref, B, d, G, &o, b, want, got, &r1, &r2)) goto exit;
  CHECK(r1.converged, "%s: one process did not converge", label);
  const double t1 = true_residual(B, b, want);
  CHECK(t1 <= 2.0 * o.rtol, "%s: one process's true residual %.3e", label, t1);
  double facts[3] = {(double)r2.iterations, (double)r2.converged, r2.rel_residual};
  CHECK(same_everywhere(facts, 3), "%s: the ranks' iterations or residuals differ", label);
  CHECK(r2.converged && r2.rel_residual <= o.rtol, "%s: converged %d, residual %.3e", label,
        r2.converged, r2.rel_residual);
  CHECK(r2.iterations == r1.iterations, "%s: %lld iterations, one process %lld", label,
        (long long)r2.iterations, (long long)r1.iterations);
  if (rank_ == 0) {
    const double t2 = true_residual(B, b, got);
    CHECK(t2 <= 2.0 * o.rtol, "%s: distributed true residual %.3e", label, t2);
    printf("%s: %lld iterations (one process %lld), true residual %.3e (one process %.3e) on %d "
           "rank%s\n",
           label, (long long)r2.iterations, (long long)r1.iterations, t2, t1, size_,
           size_ > 1 ? "s" : "");
  }
exit:
  msp_matrix_destroy(&B);
  CHECK_OK(msp_dist_destroy(&d));
  free(b);
  free(want);
  free(got);
}

// PageRank (pull form, natural order) distributed against one process on the ranks' backend:
// the same iteration count, every rank the same bits, ranks within rounding of one process's
// (the sums' order differs: a relative bound of the iteration's count times the mode's epsilon).
static void pagerank_case(msp_matrix G, const char *name, msp_pagerank_precision mode) {
  const int64_t n = msp_matrix_rows(G);
  char label[160];
  snprintf(label, sizeof label, "pagerank %s mode %d", name, (int)mode);
  double *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
  msp_dist d = NULL;
  msp_matrix A = NULL;
  msp_vector p1 = NULL, p2 = NULL;
  msp_pagerank_report r1, r2;
  memset(&r1, 0, sizeof r1);
  memset(&r2, 0, sizeof r2);
  msp_pagerank_options po = msp_pagerank_options_default();
  po.order = MSP_PAGERANK_ORDER_NATURAL;
  po.precision = mode;
  po.tol = 1e-10;
  CHECK(want && got, "out of memory");
  if (!want || !got) goto exit;
  CHECK_OK(msp_vector_create(ref, n, &p1));
  CHECK_OK(msp_pagerank(ref, G, &po, p1, &r1));
  CHECK_OK(msp_vector_get(p1, want));
  CHECK_OK(make_dist(&d));
  msp_convert_options co = msp_convert_options_default();
  co.format = MSP_FORMAT_CSR;
  CHECK_OK(msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, &co, &A));
  if (!A) goto exit;
  msp_dist_matrix_info in;
  CHECK_OK(msp_dist_matrix_info_get(A, &in));
  CHECK_OK(msp_vector_create(msp_dist_context(d), in.rows, &p2));
  msp_status st = msp_pagerank(msp_dist_context(d), A, &po, p2, &r2);
  CHECK(test_dist_agreed(st) == MSP_SUCCESS, "%s: %s (%s)", label, msp_status_name(st),
        msp_last_error());
  if (st != MSP_SUCCESS) goto exit;
  CHECK_OK(msp_dist_vector_gather(A, 0, p2, rank_ == 0 ? got : NULL));
  double facts[2] = {(double)r2.iterations, r2.change};
  CHECK(same_everywhere(facts, 2), "%s: the ranks' iterations or changes differ", label);
  CHECK(r1.converged && r2.converged && r2.iterations == r1.iterations,
        "%s: %lld iterations (converged %d), one process %lld (converged %d)", label,
        (long long)r2.iterations, r2.converged, (long long)r1.iterations, r1.converged);
  if (rank_ == 0) {
    double dmax = 0.0, wmax = 0.0;
    for (int64_t i = 0; i < n; i++) {
      if (fabs(got[i] - want[i]) > dmax) dmax = fabs(got[i] - want[i]);
      if (fabs(want[i]) > wmax) wmax = fabs(want[i]);
    }
    // p differs from one process's by what the rounding of each iteration leaves after the
    // contraction (at most tol / (1 - alpha) on top of rounding)
    const double bound = po.tol / (1.0 - po.alpha) + 64.0 * (double)r1.iterations * U;
    CHECK(dmax <= bound, "%s: max |p - p1| %.3e (bound %.3e)", label, dmax, bound);
    printf("%s: %lld iterations (one process %lld), max |p - p1| %.3e, largest rank %.3e\n", label,
           (long long)r2.iterations, (long long)r1.iterations, dmax, wmax);
  }
exit:
  msp_vector_destroy(&p1);
  msp_vector_destroy(&p2);
  msp_matrix_destroy(&A);
  CHECK_OK(msp_dist_destroy(&d));
  free(want);
  free(got);
}

// The reductions over the ranks (NCCL on the device for CUDA ranks over NCCL, MPI on the host
// otherwise): values whose sum depends on the order (1e16 first, -1e16 last), added in rank
// order (the same formula here gives the expected bits), every rank the same bits, the 2-norm's
// scaled combination and a dot product through the backend, a failure of one rank's step returned
// by every rank with that rank named, and the reductions counted.
static double rank_value(int r) {
  return r == 0 ? 1e16 : r == size_ - 1 && r > 1 ? -1e16 : 1.0 + 0.25 * r;
}
static void reduce_cases(void) {
  msp_dist d = NULL;
  msp_vector x = NULL, y = NULL;
  CHECK_OK(make_dist(&d));
  if (!d) return;
  msp_context c = msp_dist_context(d);
  int64_t n0 = 0, n1 = 0;
  double s0 = 0.0, s1 = 0.0;
  CHECK_OK(msp_dist_reductions(d, &n0, &s0));
  // three values per rank, added in rank order
  double v[3] = {rank_value(rank_), -rank_value(rank_) * 0.5, (double)rank_};
  double want[3] = {rank_value(0), -rank_value(0) * 0.5, 0.0};
  for (int r = 1; r < size_; r++) {
    want[0] += rank_value(r);
    want[1] += -rank_value(r) * 0.5;
    want[2] += (double)r;
  }
  CHECK_OK(msp__dist_sum_ranks(d, v, 3, MSP_SUCCESS));
  CHECK(!memcmp(v, want, sizeof v), "sum in rank order: %.17g %.17g %.17g, want %.17g %.17g %.17g",
        v[0], v[1], v[2], want[0], want[1], want[2]);
  CHECK(same_everywhere(v, 3), "the ranks' sums differ");
  // dot and 2-norm through the backend: x = (a_r, 0, 0), y = (1, 0, 0) on rank r
  CHECK_OK(msp_vector_create(c, 3, &x));
  CHECK_OK(msp_vector_create(c, 3, &y));
  if (x && y) {
    const double xv[3] = {rank_value(rank_) * 3.0, 0.0, 0.0}, yv[3] = {1.0, 0.0, 0.0};
    CHECK_OK(msp_vector_set(x, xv));
    CHECK_OK(msp_vector_set(y, yv));
    double dot = 0.0, nrm = 0.0, wdot = rank_value(0) * 3.0, mx = 0.0, sq = 0.0;
    for (int r = 1; r < size_; r++)
      wdot += rank_value(r) * 3.0;
    for (int r = 0; r < size_; r++)
      if (fabs(rank_value(r) * 3.0) > mx) mx = fabs(rank_value(r) * 3.0);
    for (int r = 0; r < size_; r++) {
      const double q = fabs(rank_value(r) * 3.0) / mx;
      sq += q * q;
    }
    CHECK_OK(msp_dot(c, x, y, &dot));
    CHECK(dot == wdot, "dot over the ranks %.17g, want %.17g (rank order)", dot, wdot);
    CHECK_OK(msp_nrm2(c, x, &nrm));
    CHECK(nrm == mx * sqrt(sq), "2-norm over the ranks %.17g, want %.17g", nrm, mx * sqrt(sq));
    CHECK(same_everywhere(&dot, 1) && same_everywhere(&nrm, 1), "the ranks' results differ");
  }
  // a failure of the last rank's step: every rank returns its status, the others name it
  double f[2] = {1.0, 2.0};
  const msp_status lst =
      rank_ == size_ - 1 ? msp__error(MSP_ERR_OUT_OF_MEMORY, "injected: no memory") : MSP_SUCCESS;
  const msp_status st = msp__dist_sum_ranks(d, f, 2, lst);
  CHECK(test_dist_agreed(st) == MSP_ERR_OUT_OF_MEMORY, "a failed step: %s on rank %d",
        msp_status_name(st), rank_);
  if (size_ > 1 && rank_ != size_ - 1) {
    char who[32];
    snprintf(who, sizeof who, "rank %d", size_ - 1);
    CHECK(strstr(msp_last_error(), who) != NULL, "the failing rank not named: %s",
          msp_last_error());
  }
  // and the next reduction runs again
  double g[1] = {1.0};
  CHECK_OK(msp__dist_sum_ranks(d, g, 1, MSP_SUCCESS));
  CHECK(g[0] == (double)size_, "sum after a failure %g, want %d", g[0], size_);
  CHECK_OK(msp_dist_reductions(d, &n1, &s1));
  CHECK(n1 - n0 == 5 && s1 >= s0, "reductions counted %lld (want 5), seconds %g -> %g",
        (long long)(n1 - n0), s0, s1);
  // a 2-norm whose squares would underflow (the backend's second, scaled pass; over NCCL every
  // rank then leaves the device path): the rank-order combination of the ranks' norms
  if (x) {
    const double tiny = 0x1p-500, xv[3] = {rank_value(rank_) * tiny, 0.0, 0.0};
    double nrm = 0.0, mx = 0.0, sq = 0.0;
    CHECK_OK(msp_vector_set(x, xv));
    for (int r = 0; r < size_; r++)
      if (fabs(rank_value(r) * tiny) > mx) mx = fabs(rank_value(r) * tiny);
    for (int r = 0; r < size_; r++) {
      const double q = fabs(rank_value(r) * tiny) / mx;
      sq += q * q;
    }
    CHECK_OK(msp_nrm2(c, x, &nrm));
    CHECK(nrm == mx * sqrt(sq), "a tiny 2-norm over the ranks %.17g, want %.17g", nrm,
          mx * sqrt(sq));
  }
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  CHECK_OK(msp_dist_destroy(&d));
}

// A rank whose device fails where the others wait for it in NCCL: the last rank tells the
// others (msp__dist_notify) and takes no part in what follows. Over NCCL the others' next
// reduction, a gather the failed rank never joins, returns that failure instead of waiting for
// ever (NCCL given up); on every transport a wait for device work that never ends
// (msp__dist_wait with a poll that never answers done) does too. From then on every rank's wait
// returns the failure at once.
static int never_done(void *arg, msp_status *st) {
  if (MPI_Wtime() - *(const double *)arg > 60.0) {
    *st = msp__error(MSP_ERR_INTERNAL, "no failure notice within 60 s");
    return -1;
  }
  return 0;
}
static int done_now(void *arg, msp_status *st) {
  (void)arg, (void)st;
  return 1;
}

static void device_failure_case(void) {
  msp_dist d = NULL;
  msp_vector x = NULL;
  CHECK_OK(make_dist(&d));
  if (!d) return;
  msp_context c = msp_dist_context(d);
  CHECK_OK(msp_vector_create(c, 3, &x));
  if (x) CHECK_OK(msp_vector_fill(x, 1.0));
  CHECK_OK(msp__dist_wait(d, done_now, NULL));
  const int nccl = msp_dist_get_transport(d) == MSP_DIST_TRANSPORT_NCCL;
  const int last = rank_ == size_ - 1;
  char who[32];
  snprintf(who, sizeof who, "rank %d", size_ - 1);
  msp_status st = MSP_SUCCESS;
  if (last) msp__dist_notify(d, msp__error(MSP_ERR_DEVICE, "injected: the GPU failed"));
  if (nccl && x) {
    double r = 0.0;
    st = msp_dot(c, x, x, &r);
  } else if (!last) {
    const double t0 = MPI_Wtime();
    st = msp__dist_wait(d, never_done, (void *)&t0);
  } else {
    st = msp__dist_wait(d, done_now, NULL);
  }
  CHECK(test_dist_agreed(st) == MSP_ERR_DEVICE, "a failed device on %s: %s on rank %d (%s)", who,
        msp_status_name(st), rank_, msp_last_error());
  CHECK(strstr(msp_last_error(), last ? "injected" : who) != NULL, "rank %d says %s", rank_,
        msp_last_error());
  st = msp__dist_wait(d, done_now, NULL);
  CHECK(test_dist_agreed(st) == MSP_ERR_DEVICE, "a wait after the failure: %s on rank %d",
        msp_status_name(st), rank_);
  if (rank_ == 0)
    printf("a failed device on %s: every rank returned %s (%s)\n", who, msp_status_name(st),
           nccl ? "a NCCL gather it never joined" : "a wait for device work");
  msp_vector_destroy(&x);
  CHECK_OK(msp_dist_destroy(&d));
}

// Out of memory on one rank (the last) at each allocation of distributing a matrix, making its
// vectors, a product and a dot product: every rank returns the same status, nothing is left
// allocated, and the run without a failure completes (then GMRES, whose setup allocates without
// a collective step between, runs on the same objects).
static void oom_one_rank(msp_matrix G) {
  const int64_t n = msp_matrix_rows(G);
  double *b = malloc((size_t)n * sizeof *b);
  CHECK(b != NULL, "out of memory");
  if (!b) return;
  test_dist_fill(n, 17, b);
  const long live0 = test_alloc.live;
  int done = 0, runs = 0;
  for (long k = 0; !done && k < 4000; k += 1 + k / 4, runs++) {
    msp_dist d = NULL;
    msp_matrix A = NULL;
    msp_vector bl = NULL, xl = NULL;
    msp_status st = make_dist(&d);
    CHECK(test_dist_agreed(st) == MSP_SUCCESS, "make_dist: %s", msp_status_name(st));
    if (st != MSP_SUCCESS) break;
    test_alloc.calls = 0;
    test_alloc.fail_at = rank_ == size_ - 1 ? k : -1;
    st = msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, NULL, &A);
    CHECK(test_dist_agreed(st) >= 0, "fail at %ld: msp_dist_matrix_scatter: %s on rank %d", k,
          msp_status_name(st), rank_);
    if (st == MSP_SUCCESS) {
      msp_dist_matrix_info in;
      msp_dist_matrix_info_get(A, &in);
      st = msp_vector_create(msp_dist_context(d), in.rows, &bl);
      if (st == MSP_SUCCESS) st = msp_vector_create(msp_dist_context(d), in.rows, &xl);
      if (test_dist_agreed(st) != MSP_SUCCESS && st == MSP_SUCCESS) st = MSP_ERR_OUT_OF_MEMORY;
    }
    if (st == MSP_SUCCESS) {
      st = msp_dist_vector_scatter(A, 0, rank_ == 0 ? b : NULL, bl);
      CHECK(test_dist_agreed(st) >= 0, "fail at %ld: msp_dist_vector_scatter statuses differ", k);
    }
    if (st == MSP_SUCCESS) {
      st = msp_spmv(msp_dist_context(d), 1.0, A, bl, 0.0, xl);
      CHECK(test_dist_agreed(st) >= 0, "fail at %ld: msp_spmv statuses differ", k);
    }
    double dot = 0.0;
    if (st == MSP_SUCCESS) {
      st = msp_dot(msp_dist_context(d), bl, xl, &dot);
      CHECK(test_dist_agreed(st) >= 0, "fail at %ld: msp_dot statuses differ", k);
    }
    test_alloc.fail_at = -1;
    int mine = rank_ == size_ - 1 && test_alloc.calls <= k; // no failure injected: a full run
    MPI_Bcast(&mine, 1, MPI_INT, size_ - 1, MPI_COMM_WORLD);
    done = mine;
    if (done) {
      CHECK(st == MSP_SUCCESS, "the run without a failure: %s", msp_last_error());
      msp_solver_report rep;
      memset(&rep, 0, sizeof rep);
      msp_solver_options o = test_dist_gmres_options(MSP_PRECISION_F64, MSP_PRECOND_JACOBI);
      o.max_iters = 20;
      if (st == MSP_SUCCESS) st = msp_dist_gmres(d, A, bl, xl, &o, &rep);
      CHECK(st == MSP_SUCCESS && rep.iterations == 20, "GMRES after the runs: %s, %lld iterations",
            msp_status_name(st), (long long)rep.iterations);
    }
    msp_vector_destroy(&bl);
    msp_vector_destroy(&xl);
    msp_matrix_destroy(&A);
    CHECK_OK(msp_dist_destroy(&d));
    CHECK(test_alloc.live == live0, "fail at %ld: %ld blocks left", k, test_alloc.live - live0);
  }
  CHECK(done, "no run without a failure within %d runs", runs);
  if (rank_ == 0) printf("out of memory on rank %d: %d runs, statuses agreed\n", size_ - 1, runs);
  free(b);
}

// Out of memory on one rank (the last) at each allocation of GMRES's setup, which has no
// collective step of its own: every rank returns the same status (none waits in the first
// product for the failed rank), nothing is left allocated, and the solve without a failure runs
// its iterations.
static void oom_gmres_one_rank(msp_matrix G, int exact) {
  const int64_t n = msp_matrix_rows(G);
  double *b = malloc((size_t)n * sizeof *b);
  CHECK(b != NULL, "out of memory");
  if (!b) return;
  test_dist_fill(n, 23, b);
  const long live_start = test_alloc.live;
  msp_dist d = NULL;
  msp_matrix A = NULL;
  msp_vector bl = NULL, xl = NULL;
  CHECK_OK(make_dist(&d));
  if (d && exact) CHECK_OK(msp__dist_set_exact(d, 1)); // CPU ranks' own reductions (trees)
  if (d) CHECK_OK(msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, NULL, &A));
  if (A) {
    msp_dist_matrix_info in;
    msp_dist_matrix_info_get(A, &in);
    CHECK_OK(msp_vector_create(msp_dist_context(d), in.rows, &bl));
    CHECK_OK(msp_vector_create(msp_dist_context(d), in.rows, &xl));
  }
  if (bl && xl) CHECK_OK(msp_dist_vector_scatter(A, 0, rank_ == 0 ? b : NULL, bl));
  int done = !(bl && xl), runs = 0, failed = 0;
  for (long k = 0; !done && k < 400; k++, runs++) {
    msp_solver_options o = test_dist_gmres_options(MSP_PRECISION_F64, MSP_PRECOND_JACOBI);
    o.max_iters = 5;
    msp_solver_report rep;
    memset(&rep, 0, sizeof rep);
    CHECK_OK(msp_vector_fill(xl, 0.0));
    test_alloc.calls = 0;
    test_alloc.fail_at = rank_ == size_ - 1 ? k : -1;
    const msp_status st = msp_dist_gmres(d, A, bl, xl, &o, &rep);
    test_alloc.fail_at = -1;
    CHECK(test_dist_agreed(st) >= 0, "fail at %ld: msp_dist_gmres: %s on rank %d", k,
          msp_status_name(st), rank_);
    int mine = rank_ == size_ - 1 && test_alloc.calls <= k; // no failure injected: a full run
    MPI_Bcast(&mine, 1, MPI_INT, size_ - 1, MPI_COMM_WORLD);
    done = mine;
    if (done)
      CHECK(st == MSP_SUCCESS && rep.iterations == 5, "GMRES without a failure: %s, %lld its",
            msp_status_name(st), (long long)rep.iterations);
    else
      failed += st == MSP_ERR_OUT_OF_MEMORY;
  }
  CHECK(done, "no GMRES run without a failure within %d runs", runs);
  CHECK(failed > 0, "no injected failure reached GMRES's setup");
  if (rank_ == 0)
    printf("out of memory in GMRES%s on rank %d: %d runs, statuses agreed\n",
           exact ? " (CPU ranks' tree reductions)" : "", size_ - 1, runs);
  msp_vector_destroy(&bl);
  msp_vector_destroy(&xl);
  msp_matrix_destroy(&A);
  CHECK_OK(msp_dist_destroy(&d));
  // (the context keeps its reduction buffers between solves: counted once it is gone)
  CHECK(test_alloc.live == live_start, "%ld blocks left after the GMRES runs",
        test_alloc.live - live_start);
  free(b);
}

// A local matrix of the distributed context (each rank's own, no halo) multiplies on the rank's
// backend as on one process; what these ranks refuse is refused on every rank alike.
static void local_and_refused(void) {
  msp_dist d = NULL;
  msp_matrix L = NULL;
  msp_vector x = NULL, y = NULL;
  const int64_t n = 3;
  int64_t rp[] = {0, 2, 5, 7};
  int32_t ci[] = {0, 1, 0, 1, 2, 1, 2};
  double v[] = {2, -1, -1, 2, -1, -1, 2}, hx[] = {1, 2, 3}, hy[3] = {0, 0, 0};
  CHECK_OK(make_dist(&d));
  if (!d) return;
  msp_context c = msp_dist_context(d);
  CHECK_OK(msp_matrix_from_csr(c, n, n, rp, ci, v, 0, &L));
  CHECK_OK(msp_vector_create(c, n, &x));
  CHECK_OK(msp_vector_create(c, n, &y));
  if (L && x && y) {
    CHECK_OK(msp_vector_set(x, hx));
    CHECK_OK(msp_spmv(c, 1.0, L, x, 0.0, y));
    CHECK_OK(msp_vector_get(y, hy));
    CHECK(hy[0] == 0 && hy[1] == 0 && hy[2] == 4, "local product %g %g %g", hy[0], hy[1], hy[2]);
  }
  CHECK_OK(msp_matrix_destroy(&L));
  // ranks naming different transports, or a transport of the other kind of ranks: refused on
  // every rank alike, the transport unchanged
  {
    const msp_dist_transport before = msp_dist_get_transport(d);
    if (size_ > 1) {
      msp_status st =
          msp_dist_set_transport(d, rank_ ? MSP_DIST_TRANSPORT_HOST : MSP_DIST_TRANSPORT_AUTO);
      CHECK(test_dist_agreed(st) == MSP_ERR_INVALID_ARGUMENT, "mixed transports: %s (%s)",
            msp_status_name(st), msp_last_error());
    }
    msp_status st = msp_dist_set_transport(d, backend_ == MSP_BACKEND_CPU ? MSP_DIST_TRANSPORT_NCCL
                                                                          : MSP_DIST_TRANSPORT_MPI);
    CHECK(test_dist_agreed(st) == MSP_ERR_NOT_SUPPORTED, "transport of the other ranks: %s (%s)",
          msp_status_name(st), msp_last_error());
    CHECK(msp_dist_get_transport(d) == before, "the transport changed after a refusal");
    CHECK(msp_dist_get_transport(d) == (backend_ == MSP_BACKEND_CPU ? MSP_DIST_TRANSPORT_MPI
                                        : transport_ != MSP_DIST_TRANSPORT_AUTO
                                            ? transport_
                                            : msp_dist_get_transport(d)),
          "transport %s", msp_dist_transport_name(msp_dist_get_transport(d)));
  }
  // a failure of one rank's own step (injected on the last rank, as a device error in a product
  // would be kept): every rank returns it at the next reduction, none waits; then all goes on
  if (x && y) {
    if (rank_ == size_ - 1) {
      d->pending = MSP_ERR_DEVICE;
      snprintf(d->pending_msg, sizeof d->pending_msg, "injected device failure");
    }
    double r = 0.0;
    msp_status st = msp_dot(c, x, y, &r);
    CHECK(test_dist_agreed(st) == MSP_ERR_DEVICE, "a failure on rank %d: %s (%s)", size_ - 1,
          msp_status_name(st), msp_last_error());
    CHECK(rank_ != size_ - 1 || strstr(msp_last_error(), "injected"), "the failing rank says %s",
          msp_last_error());
    CHECK_OK(msp_dot(c, x, y, &r));
  }
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  CHECK_OK(msp_dist_destroy(&d));
  // ranks naming different backends, or no backend: refused on every rank, nothing made
  msp_dist e = NULL;
  if (size_ > 1) {
    msp_status st =
        msp_dist_create_backend(MPI_COMM_WORLD, rank_ ? MSP_BACKEND_CUDA : MSP_BACKEND_CPU, 0, &e);
    CHECK(test_dist_agreed(st) == MSP_ERR_INVALID_ARGUMENT && !e, "mixed backends: %s (%s)",
          msp_status_name(st), msp_last_error());
  }
  CHECK_STATUS(msp_dist_create_backend(MPI_COMM_WORLD, MSP_BACKEND_AUTO, 0, &e),
               MSP_ERR_INVALID_ARGUMENT);
  CHECK(!e, "a context made for MSP_BACKEND_AUTO");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  int usage = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
      i++;
      usage |= msp_backend_parse(argv[i], &backend_) != MSP_SUCCESS || backend_ == MSP_BACKEND_AUTO;
    } else if (!strcmp(argv[i], "--quick")) {
      quick_ = 1;
    } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
      i++;
      device_ = !strcmp(argv[i], "local") ? MSP_DIST_DEVICE_LOCAL : atoi(argv[i]);
    } else if (!strcmp(argv[i], "--transport") && i + 1 < argc) {
      i++;
      transport_ = !strcmp(argv[i], "nccl")   ? MSP_DIST_TRANSPORT_NCCL
                   : !strcmp(argv[i], "host") ? MSP_DIST_TRANSPORT_HOST
                   : !strcmp(argv[i], "auto") ? MSP_DIST_TRANSPORT_AUTO
                                              : (usage = 1, MSP_DIST_TRANSPORT_AUTO);
    } else {
      usage = 1;
    }
  }
  char name[96];
  snprintf(name, sizeof name, "test_dist_cuda --backend %s (%d rank%s)",
           backend_ == MSP_BACKEND_CUDA ? "cuda" : "cpu", size_, size_ > 1 ? "s" : "");
  if (usage) {
    if (rank_ == 0)
      fprintf(stderr, "usage: test_dist_cuda [--backend cpu|cuda] [--device local|N] [--quick] "
                      "[--transport auto|nccl|host]\n");
    MPI_Finalize();
    return 2;
  }
  const msp_allocator counting = test_counting_allocator();
  CHECK_OK(msp_set_allocator(&counting));
  // the reference context, on every rank; no GPU anywhere: every rank says SKIPPED
  msp_status st = msp_context_create(backend_, device_ < 0 ? 0 : device_, &ref);
  const int skip = st == MSP_ERR_NOT_BUILT || st == MSP_ERR_NO_DEVICE;
  char why[600];
  snprintf(why, sizeof why, "%s: %s", msp_status_name(st), msp_last_error());
  int any_skip = skip, any_fail = st != MSP_SUCCESS && !skip;
  MPI_Allreduce(MPI_IN_PLACE, &any_skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &any_fail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_skip || any_fail) {
    int rc = 1;
    if (any_skip && !any_fail)
      rc = rank_ == 0 ? msp_test_skip(name, why) : MSP_TEST_SKIP;
    else
      fprintf(stderr, "%s: rank %d: msp_context_create: %s\n", name, rank_, why);
    msp_context_destroy(&ref);
    MPI_Finalize();
    return rc;
  }
  {
    // the transport's choice: NCCL only between distinct GPUs (16-byte UUIDs per rank)
    unsigned char u[4 * 16];
    memset(u, 0, sizeof u);
    for (int r = 0; r < 4; r++)
      u[16 * r + 15] = (unsigned char)r;
    CHECK(!msp__dist_gpus_shared(u, 4), "four distinct GPUs read as shared");
    CHECK(!msp__dist_gpus_shared(u, 1), "one rank reads as sharing");
    u[16 * 3 + 15] = 1;
    CHECK(msp__dist_gpus_shared(u, 4), "ranks 1 and 3 on one GPU not seen");
  }
  msp_matrix G = NULL;
  // 5 chunks of 4096 rows: halos to both sides, empty rows
  CHECK_OK(msp_matrix_generate(ref, "random:20000:7:3", &G));
  if (G) {
    const msp_format fs[] = {MSP_FORMAT_CSR, MSP_FORMAT_COO, MSP_FORMAT_ELL, MSP_FORMAT_HLL,
                             MSP_FORMAT_HYB};
    for (size_t k = 0; k < (quick_ ? 1 : sizeof fs / sizeof *fs); k++)
      spmv_case(G, "random:20000:7:3", fs[k]);
  }
  msp_matrix_destroy(&G);
  CHECK_OK(msp_matrix_generate(ref, "laplace2d:190", &G));
  if (G) spmv_case(G, "laplace2d:190", MSP_FORMAT_DIA);
  if (G) {
    const msp_precision vps[] = {MSP_PRECISION_F64,  MSP_PRECISION_F32,  MSP_PRECISION_F16,
                                 MSP_PRECISION_BF16, MSP_PRECISION_FX32, MSP_PRECISION_CPMS2};
    for (size_t k = 0; k < sizeof vps / sizeof *vps; k++)
      if (!quick_ || vps[k] == MSP_PRECISION_F32 || vps[k] == MSP_PRECISION_FX32)
        prec_case(G, "laplace2d:190", vps[k]);
  }
  if (G) {
    // the transport in use, on rank 0
    msp_dist d = NULL;
    CHECK_OK(make_dist(&d));
    if (d && rank_ == 0)
      printf("%s: transport %s, rank 0 on GPU %d (node-local rank %d)\n", name,
             msp_dist_transport_name(msp_dist_get_transport(d)), msp_dist_device(d),
             msp_dist_local_rank(d));
    CHECK_OK(msp_dist_destroy(&d));
  }
  if (G) local_and_refused();
  msp_matrix_destroy(&G);
  reduce_cases();
  // (not in the short set, which compute-sanitizer runs: NCCL's abort ends kernels midway)
  if (!quick_) device_failure_case();
  if (!quick_) generate_case("stencil27:40");
  if (!quick_) rmat_generate_case("rmat:14:8");
  // PageRank: a power-law graph with dangling nodes, f64 and CPMS
  CHECK_OK(msp_matrix_generate(ref, "rmat:14:8", &G));
  if (G) {
    pagerank_case(G, "rmat:14:8", MSP_PAGERANK_F64);
    if (!quick_) pagerank_case(G, "rmat:14:8", MSP_PAGERANK_CPMS2);
  }
  msp_matrix_destroy(&G);
  CHECK_OK(msp_matrix_generate(ref, "convdiff3d:26", &G));
  if (G) {
    if (!quick_) gmres_case(G, "convdiff3d:26", MSP_PRECISION_F64, MSP_PRECOND_NONE);
    if (!quick_) gmres_case(G, "convdiff3d:26", MSP_PRECISION_F32, MSP_PRECOND_JACOBI);
    // a fixed-point basis: its column scale from the whole vector's largest value
    gmres_case(G, "convdiff3d:26", MSP_PRECISION_FX32, MSP_PRECOND_JACOBI);
    if (!quick_) oom_one_rank(G);
    if (!quick_) oom_gmres_one_rank(G, 0);
    if (!quick_ && backend_ == MSP_BACKEND_CPU) oom_gmres_one_rank(G, 1);
  }
  msp_matrix_destroy(&G);
  CHECK_OK(msp_context_destroy(&ref));
  CHECK(test_alloc.live == 0, "%ld blocks of the library not freed", test_alloc.live);
  return test_dist_finish(name);
}

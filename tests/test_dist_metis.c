// test_dist_metis.c: the METIS layout of the distributed layer (msp_dist_set_partition) under
// mpirun -np 2..4. Every rank builds the whole matrix G; the root scatters it with the METIS
// layout. Checked: the renumbering is a permutation whose ranks' blocks are contiguous; the
// gathered product (G's numbering) is within the rounding bound of one process on G and has the
// bits of one process on P G P^T; GMRES converges with one process's iterations and solution bits
// on P G P^T; the halo with METIS is reported (and is smaller than the contiguous blocks' on a
// mesh). In a build without METIS the option must be refused with MSP_ERR_NOT_SUPPORTED on every
// rank, and the test says SKIPPED.
#include "mixsparse_mpi.h"
#include "test_dist_common.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int rank_, size_;
static msp_context ref;
static const double U = 0x1p-53;

// P G P^T as a library matrix on ref (row i = G's row perm[i], columns renumbered, sorted).
static msp_matrix permuted(const test_csr *c, const int64_t *perm) {
  const int64_t n = c->rows;
  int64_t *inv = malloc((size_t)n * sizeof *inv), *rp = malloc((size_t)(n + 1) * sizeof *rp);
  int32_t *ci = malloc((size_t)(c->nnz > 0 ? c->nnz : 1) * sizeof *ci);
  double *v = malloc((size_t)(c->nnz > 0 ? c->nnz : 1) * sizeof *v);
  msp_matrix P = NULL;
  CHECK(inv && rp && ci && v, "out of memory");
  if (!inv || !rp || !ci || !v) goto exit;
  for (int64_t i = 0; i < n; i++)
    inv[perm[i]] = i;
  rp[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t a = c->rowptr[perm[i]], len = c->rowptr[perm[i] + 1] - a, o = rp[i];
    for (int64_t p = 0; p < len; p++) { // insertion by the new column
      const int32_t col = (int32_t)inv[c->colind[a + p]];
      const double val = c->val[a + p];
      int64_t q = p;
      while (q > 0 && ci[o + q - 1] > col) {
        ci[o + q] = ci[o + q - 1];
        v[o + q] = v[o + q - 1];
        q--;
      }
      ci[o + q] = col;
      v[o + q] = val;
    }
    rp[i + 1] = o + len;
  }
  CHECK_OK(msp_matrix_from_csr(ref, n, n, rp, ci, v, 0, &P));
exit:
  free(inv);
  free(rp);
  free(ci);
  free(v);
  return P;
}

// The total halo entries and neighbour links of G scattered with partition kind k.
static void halo_of(msp_matrix G, msp_dist_partition k, int64_t tot[2]) {
  msp_dist d = NULL;
  msp_matrix A = NULL;
  msp_dist_matrix_info in;
  memset(&in, 0, sizeof in);
  tot[0] = tot[1] = -1;
  CHECK_OK(msp_dist_create(MPI_COMM_WORLD, &d));
  if (!d) return;
  CHECK_OK(msp_dist_set_partition(d, k));
  CHECK_OK(msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, NULL, &A));
  if (A) {
    CHECK_OK(msp_dist_matrix_info_get(A, &in));
    int64_t mine[2] = {in.halo, in.neighbours};
    MPI_Allreduce(mine, tot, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  }
  msp_matrix_destroy(&A);
  CHECK_OK(msp_dist_destroy(&d));
}

// The product and, when gmres, a GMRES solve on G with the METIS layout.
static void metis_case(msp_matrix G, const char *name, int gmres, int expect_smaller_halo) {
  const int64_t n = msp_matrix_rows(G);
  test_csr c;
  memset(&c, 0, sizeof c);
  msp_dist d = NULL;
  msp_matrix A = NULL, PG = NULL;
  msp_vector xl = NULL, yl = NULL;
  int64_t *perm = malloc((size_t)n * sizeof *perm);
  double *x = malloc((size_t)n * sizeof *x), *y0 = malloc((size_t)n * sizeof *y0);
  double *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
  double *px = malloc((size_t)n * sizeof *px), *py = malloc((size_t)n * sizeof *py);
  CHECK(perm && x && y0 && want && got && px && py, "out of memory");
  if (!perm || !x || !y0 || !want || !got || !px || !py) goto exit;
  CHECK(test_csr_from_matrix(&c, G) == 0, "%s: CSR copy", name);
  test_dist_fill(n, 7, x);
  test_dist_fill(n, 8, y0);
  CHECK_OK(msp_dist_create(MPI_COMM_WORLD, &d));
  if (!d) goto exit;
  CHECK_OK(msp_dist_set_partition(d, MSP_DIST_PARTITION_METIS));
  CHECK_OK(msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, NULL, &A));
  if (!A) goto exit;
  // the renumbering: a permutation, the same on every rank; the rows of each rank contiguous
  CHECK_OK(msp_dist_permutation(d, perm));
  {
    char *seen = calloc((size_t)n, 1);
    int ok = seen != NULL;
    for (int64_t i = 0; i < n && ok; i++)
      ok = perm[i] >= 0 && perm[i] < n && !seen[perm[i]]++;
    free(seen);
    CHECK(ok, "%s: msp_dist_permutation is not a permutation", name);
    // rank 0's renumbering, compared on every rank
    int64_t *p0 = malloc((size_t)n * sizeof *p0);
    CHECK(p0 != NULL, "out of memory");
    if (p0) {
      memcpy(p0, perm, (size_t)n * sizeof *p0);
      MPI_Bcast(p0, (int)n, MPI_INT64_T, 0, MPI_COMM_WORLD);
      CHECK(memcmp(p0, perm, (size_t)n * sizeof *p0) == 0, "%s: rank %d's renumbering differs",
            name, rank_);
    }
    free(p0);
  }
  msp_dist_matrix_info in;
  CHECK_OK(msp_dist_matrix_info_get(A, &in));
  CHECK(in.partition == MSP_DIST_PARTITION_METIS, "%s: info.partition %d", name, (int)in.partition);
  CHECK(in.row0 % MSP_DIST_CHUNK == 0 && in.rows > 0, "%s: rank %d rows [%lld, +%lld)", name, rank_,
        (long long)in.row0, (long long)in.rows);
  // y = 1.5 A x - 0.5 y0, twice (the descriptor reused), gathered in G's numbering
  xl = test_dist_part(d, A, MSP_PRECISION_F64, x);
  yl = test_dist_part(d, A, MSP_PRECISION_F64, y0);
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.5, A, xl, -0.5, yl));
  CHECK_OK(msp_spmv(msp_dist_context(d), 1.5, A, xl, -0.5, yl));
  CHECK_OK(msp_dist_vector_gather(A, 0, yl, rank_ == 0 ? got : NULL));
  // one process on G (want) and on P G P^T (py, in the renumbering)
  {
    msp_vector xv = NULL, yv = NULL;
    CHECK_OK(msp_vector_create(ref, n, &xv));
    CHECK_OK(msp_vector_create(ref, n, &yv));
    CHECK_OK(msp_vector_set(xv, x));
    CHECK_OK(msp_vector_set(yv, y0));
    CHECK_OK(msp_spmv(ref, 1.5, G, xv, -0.5, yv));
    CHECK_OK(msp_spmv(ref, 1.5, G, xv, -0.5, yv));
    CHECK_OK(msp_vector_get(yv, want));
    PG = permuted(&c, perm);
    for (int64_t i = 0; i < n; i++) {
      px[i] = x[perm[i]];
      py[i] = y0[perm[i]];
    }
    CHECK_OK(msp_vector_set(xv, px));
    CHECK_OK(msp_vector_set(yv, py));
    if (PG) {
      CHECK_OK(msp_spmv(ref, 1.5, PG, xv, -0.5, yv));
      CHECK_OK(msp_spmv(ref, 1.5, PG, xv, -0.5, yv));
    }
    CHECK_OK(msp_vector_get(yv, py));
    msp_vector_destroy(&xv);
    msp_vector_destroy(&yv);
  }
  if (rank_ == 0) {
    int64_t bad = 0, diff = 0, same = 0;
    for (int64_t i = 0; i < n; i++) {
      // y1 = 1.5 G x - 0.5 y0, y = 1.5 G x - 0.5 y1: the bound of the rows' sums, twice
      double ax = 0.0;
      for (int64_t p = c.rowptr[i]; p < c.rowptr[i + 1]; p++)
        ax += fabs(c.val[p] * x[c.colind[p]]);
      const double k = (double)(c.rowptr[i + 1] - c.rowptr[i]);
      const double bound =
          4.0 * (k + 4.0) * U * (1.5 * ax * 1.5 + 0.5 * fabs(y0[i]) * 0.5 + 1.5 * ax) * (1 + 1e-12);
      if (!(fabs(got[i] - want[i]) <= bound) && bad++ < 3)
        fprintf(stderr, "%s: row %lld: %.17g (one process) vs %.17g, bound %.3g\n", name,
                (long long)i, want[i], got[i], bound);
      same += memcmp(&got[i], &want[i], sizeof(double)) == 0;
    }
    for (int64_t i = 0; i < n; i++)
      if (memcmp(&got[perm[i]], &py[i], sizeof(double)) != 0 && diff++ < 3)
        fprintf(stderr, "%s: renumbered row %lld: %.17g (one process on P G P^T) vs %.17g\n", name,
                (long long)i, py[i], got[perm[i]]);
    CHECK(bad == 0, "%s: %lld rows outside the rounding bound of one process", name,
          (long long)bad);
    CHECK(diff == 0, "%s: %lld rows differ from one process on P G P^T", name, (long long)diff);
    printf("%s: product on %d ranks (METIS): one process's bits on P G P^T; %lld of %lld rows "
           "with the bits of one process on G\n",
           name, size_, (long long)same, (long long)n);
  }
  // the halo against the contiguous blocks
  {
    int64_t hb[2], hm[2];
    halo_of(G, MSP_DIST_PARTITION_BLOCKS, hb);
    halo_of(G, MSP_DIST_PARTITION_METIS, hm);
    if (rank_ == 0)
      printf("%s: %d ranks: halo %lld entries / %lld neighbour links with blocks, %lld / %lld "
             "with METIS\n",
             name, size_, (long long)hb[0], (long long)hb[1], (long long)hm[0], (long long)hm[1]);
    CHECK(hm[0] >= 0 && hb[0] >= 0, "%s: halo not reported", name);
    if (expect_smaller_halo)
      CHECK(hm[0] < hb[0], "%s: METIS halo %lld not below the blocks' %lld", name, (long long)hm[0],
            (long long)hb[0]);
  }
  if (gmres && PG) {
    enum { CAP = 2048 };
    msp_solver_options o = test_dist_gmres_options(MSP_PRECISION_F64, MSP_PRECOND_JACOBI);
    double *h1 = calloc(CAP, sizeof *h1), *h2 = calloc(CAP, sizeof *h2);
    msp_solver_report r1, r2;
    memset(&r1, 0, sizeof r1);
    memset(&r2, 0, sizeof r2);
    r1.history = h1;
    r2.history = h2;
    r1.history_capacity = r2.history_capacity = CAP;
    msp_dist d2 = NULL;
    CHECK(h1 && h2, "out of memory");
    CHECK_OK(msp_dist_create(MPI_COMM_WORLD, &d2));
    if (h1 && h2 && d2) CHECK_OK(msp_dist_set_partition(d2, MSP_DIST_PARTITION_METIS));
    // b in G's numbering (x holds it); one process on P G P^T with P b (px)
    if (h1 && h2 && d2 && test_dist_gmres_pair(ref, PG, d2, G, &o, x, py, got, &r1, &r2)) {
      CHECK(r2.converged, "%s: distributed GMRES did not converge (%lld iterations)", name,
            (long long)r2.iterations);
    }
    // test_dist_gmres_pair ran one process on P G P^T with b in G's numbering: redo it with P b
    msp_vector bv = NULL, xv = NULL;
    msp_solver_report r3;
    memset(&r3, 0, sizeof r3);
    double *h3 = calloc(CAP, sizeof *h3);
    r3.history = h3;
    r3.history_capacity = h3 ? CAP : 0;
    CHECK_OK(msp_vector_create(ref, n, &bv));
    CHECK_OK(msp_vector_create(ref, n, &xv));
    CHECK_OK(msp_vector_set(bv, px));
    CHECK_OK(msp_gmres(ref, PG, bv, xv, &o, &r3));
    CHECK_OK(msp_vector_get(xv, py));
    CHECK(r3.iterations == r2.iterations && r3.history_length == r2.history_length && h3 && h2 &&
              memcmp(h3, h2, (size_t)r3.history_length * sizeof *h3) == 0,
          "%s: GMRES iterations %lld (one process on P G P^T) vs %lld, or residual histories "
          "differ",
          name, (long long)r3.iterations, (long long)r2.iterations);
    if (rank_ == 0) {
      int64_t diff = 0;
      for (int64_t i = 0; i < n; i++)
        diff += memcmp(&got[perm[i]], &py[i], sizeof(double)) != 0;
      CHECK(diff == 0, "%s: GMRES solution: %lld entries differ from one process on P G P^T", name,
            (long long)diff);
      printf("%s: GMRES (METIS, %d ranks): %s after %lld iterations, residual %.3e\n", name, size_,
             r2.converged ? "converged" : "NOT converged", (long long)r2.iterations,
             r2.rel_residual);
    }
    msp_vector_destroy(&bv);
    msp_vector_destroy(&xv);
    free(h1);
    free(h2);
    free(h3);
    CHECK_OK(msp_dist_destroy(&d2));
  }
exit:
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&PG);
  msp_vector_destroy(&xl);
  msp_vector_destroy(&yl);
  CHECK_OK(msp_dist_destroy(&d));
  test_csr_free(&c);
  free(perm);
  free(x);
  free(y0);
  free(want);
  free(got);
  free(px);
  free(py);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // every block the library allocates is counted: none may be left at the end
  const msp_allocator counting = test_counting_allocator();
  CHECK_OK(msp_set_allocator(&counting));
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ref));
  {
    msp_dist d = NULL;
    CHECK_OK(msp_dist_create(MPI_COMM_WORLD, &d));
    const msp_status st = msp_dist_set_partition(d, MSP_DIST_PARTITION_METIS);
#ifndef MSP_HAVE_METIS
    CHECK(test_dist_agreed(st) == MSP_ERR_NOT_SUPPORTED &&
              strstr(msp_last_error(), "without METIS") != NULL,
          "without METIS: status %d (%s)", (int)st, msp_last_error());
    CHECK_OK(msp_dist_destroy(&d));
    CHECK_OK(msp_context_destroy(&ref));
    const int failed = msp_test_failures;
    int anyfail = 0;
    MPI_Allreduce(&failed, &anyfail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (anyfail) return test_dist_finish("test_dist_metis");
    if (rank_ == 0)
      printf("SKIPPED: test_dist_metis: built without METIS (Debian: libmetis-dev); the option "
             "is refused as it should be\n");
    MPI_Finalize();
    return 77;
#else
    CHECK_OK(st);
    // a second kind after the first matrix is refused
    msp_matrix G = NULL, A = NULL;
    CHECK_OK(msp_matrix_generate(ref, "laplace2d:200", &G));
    if (G) CHECK_OK(msp_dist_matrix_scatter(d, 0, rank_ == 0 ? G : NULL, NULL, &A));
    CHECK(test_dist_agreed(msp_dist_set_partition(d, MSP_DIST_PARTITION_BLOCKS)) ==
              MSP_ERR_INVALID_ARGUMENT,
          "changing the partition after the first matrix was not refused");
    msp_matrix_destroy(&A);
    msp_matrix_destroy(&G);
    CHECK_OK(msp_dist_destroy(&d));
#endif
  }
  msp_matrix G = NULL;
  // an irregular generated graph (power-law row lengths)
  CHECK_OK(msp_matrix_generate(ref, "powerlaw:24000:6:5", &G));
  if (G) metis_case(G, "powerlaw:24000:6:5", 0, 0);
  msp_matrix_destroy(&G);
  // a 3-D mesh operator for GMRES (nonsymmetric)
  CHECK_OK(msp_matrix_generate(ref, "convdiff3d:26", &G));
  if (G) metis_case(G, "convdiff3d:26", 1, 0);
  msp_matrix_destroy(&G);
  const char *dir = test_matrices_dir();
  if (dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, "delaunay_n15.mtx.gz");
    CHECK_OK(msp_matrix_read_mtx(ref, path, 0, &G));
    if (G) metis_case(G, "delaunay_n15", 0, 1);
    msp_matrix_destroy(&G);
  } else if (rank_ == 0) {
    printf("test_dist_metis: ../shared/matrices absent: generated matrices only\n");
  }
  CHECK_OK(msp_context_destroy(&ref));
  CHECK(test_alloc.live == 0, "%ld blocks of the library not freed", test_alloc.live);
  char name[64];
  snprintf(name, sizeof name, "test_dist_metis (%d ranks)", size_);
  return test_dist_finish(name);
}

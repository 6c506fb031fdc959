// test_dist_common.c: the helpers of the distributed layer's MPI tests (test_dist_common.h).
#include "test_dist_common.h"

#include "testlib.h"

void test_dist_fill(int64_t n, uint64_t seed, double *v) {
  msp_rng r = {seed};
  for (int64_t i = 0; i < n; i++)
    v[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
}

msp_vector test_dist_part(msp_dist d, msp_matrix A, msp_precision p, const double *g) {
  msp_dist_matrix_info in;
  msp_vector v = NULL;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  CHECK_OK(msp_dist_matrix_info_get(A, &in));
  CHECK_OK(msp_vector_create_precision(msp_dist_context(d), in.rows, p, &v));
  if (g && v) CHECK_OK(msp_dist_vector_scatter(A, 0, rank == 0 ? g : NULL, v));
  return v;
}

int test_dist_agreed(msp_status st) {
  int lo = (int)st, hi = (int)st;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi ? lo : -1;
}

msp_solver_options test_dist_gmres_options(msp_precision basis, msp_precond pc) {
  msp_solver_options o = msp_solver_options_default();
  o.restart = 25;
  o.rtol = 1e-10;
  o.max_iters = 600;
  o.basis_precision = basis;
  o.precond = pc;
  return o;
}

int test_dist_gmres_pair(msp_context ref, msp_matrix M, msp_dist d, msp_matrix G,
                         const msp_solver_options *o, const double *b, double *want, double *got,
                         msp_solver_report *r1, msp_solver_report *r2) {
  const int64_t n = msp_matrix_rows(G);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  msp_vector bv = NULL, xv = NULL, bl = NULL, xl = NULL;
  msp_matrix A = NULL;
  CHECK_OK(msp_vector_create(ref, n, &bv));
  CHECK_OK(msp_vector_create(ref, n, &xv));
  CHECK_OK(msp_vector_set(bv, b));
  CHECK_OK(msp_gmres(ref, M, bv, xv, o, r1));
  CHECK_OK(msp_vector_get(xv, want));
  CHECK_OK(msp_dist_matrix_scatter(d, 0, rank == 0 ? G : NULL, NULL, &A));
  if (A) {
    bl = test_dist_part(d, A, MSP_PRECISION_F64, b);
    xl = test_dist_part(d, A, MSP_PRECISION_F64, NULL);
    CHECK_OK(msp_dist_gmres(d, A, bl, xl, o, r2));
    CHECK_OK(msp_dist_vector_gather(A, 0, xl, rank == 0 ? got : NULL));
  }
  const int made = A != NULL;
  msp_matrix_destroy(&A);
  msp_vector_destroy(&bl);
  msp_vector_destroy(&xl);
  msp_vector_destroy(&bv);
  msp_vector_destroy(&xv);
  return made;
}

int test_dist_finish(const char *name) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int mine[2] = {msp_test_failures, msp_test_checks}, all[2] = {0, 0};
  MPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  msp_test_failures = all[0];
  msp_test_checks = all[1];
  int rc = 0;
  if (rank == 0)
    rc = msp_test_finish(name);
  else
    rc = msp_test_failures ? 1 : 0;
  MPI_Finalize();
  return rc;
}

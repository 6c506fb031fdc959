// mpi_example.c: the README example over the distributed layer, built against an installed
// tree (tests/install/run.sh): rank 0 holds the matrix, every rank gets its rows, y = A x.
#include <mixsparse_mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ok = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  msp_context cpu = NULL;
  msp_dist d = NULL;
  msp_matrix G = NULL, A = NULL;
  msp_vector x = NULL, y = NULL;
  msp_dist_matrix_info in;
  int64_t rowptr[] = {0, 2, 5, 7};
  int32_t colind[] = {0, 1, 0, 1, 2, 1, 2};
  double values[] = {2, -1, -1, 2, -1, -1, 2}, hx[] = {1, 2, 3}, hy[3] = {0, 0, 0};
  if (msp_dist_create(MPI_COMM_WORLD, &d) ||
      (rank == 0 && (msp_context_create(MSP_BACKEND_CPU, 0, &cpu) ||
                     msp_matrix_from_csr(cpu, 3, 3, rowptr, colind, values, 0, &G))) ||
      msp_dist_matrix_scatter(d, 0, G, NULL, &A) || msp_dist_matrix_info_get(A, &in) ||
      msp_vector_create(msp_dist_context(d), in.rows, &x) ||
      msp_vector_create(msp_dist_context(d), in.rows, &y) ||
      msp_dist_vector_scatter(A, 0, rank == 0 ? hx : NULL, x) ||
      msp_spmv(msp_dist_context(d), 1.0, A, x, 0.0, y) ||
      msp_dist_vector_gather(A, 0, y, rank == 0 ? hy : NULL)) {
    fprintf(stderr, "mixsparse: rank %d: %s\n", rank, msp_last_error());
  } else {
    ok = rank != 0 || (hy[0] == 0 && hy[1] == 0 && hy[2] == 4);
    if (rank == 0)
      printf("y = %g %g %g on %d rank%s\n", hy[0], hy[1], hy[2], in.size, in.size == 1 ? "" : "s");
  }
  msp_vector_destroy(&x), msp_vector_destroy(&y), msp_matrix_destroy(&A), msp_matrix_destroy(&G);
  msp_dist_destroy(&d);
  msp_context_destroy(&cpu);
  MPI_Finalize();
  return !ok;
}

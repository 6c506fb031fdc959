// test_dist_common.h: what the MPI tests of the distributed layer (test_dist.c, test_dist_cuda.c)
// share: their data, the local parts of the root's vectors, one status over the ranks and the
// verdict over the ranks.
#ifndef MSP_TEST_DIST_COMMON_H
#define MSP_TEST_DIST_COMMON_H

#include "mixsparse_mpi.h"

#include <stdint.h>

// v[0..n) uniform in [-1, 1) from the seed (the same on every rank).
void test_dist_fill(int64_t n, uint64_t seed, double *v);

// This rank's part of a vector of precision p over A's rows, with the root's (rank 0's) global
// values g scattered into it (NULL: zeros). A failure is a failed check; NULL when not made.
msp_vector test_dist_part(msp_dist d, msp_matrix A, msp_precision p, const double *g);

// st when every rank has the same status, -1 otherwise. Collective.
int test_dist_agreed(msp_status st);

// The GMRES options of the cases: restart 25, rtol 1e-10, at most 600 iterations, the basis
// precision and preconditioner given.
msp_solver_options test_dist_gmres_options(msp_precision basis, msp_precond pc);

// GMRES with o on the right-hand side b (n = the rows of G): on one process (ref, matrix M: G or
// its conversion) into want and *r1, and distributed on d (G scattered from the root, the
// default conversion) into got (on the root) and *r2. A failure is a failed check; 0 when the
// distributed run could not be made.
int test_dist_gmres_pair(msp_context ref, msp_matrix M, msp_dist d, msp_matrix G,
                         const msp_solver_options *o, const double *b, double *want, double *got,
                         msp_solver_report *r1, msp_solver_report *r2);

// The verdict of every rank's checks, printed by rank 0 under `name`; MPI finalised. The exit
// status of the test program on this rank.
int test_dist_finish(const char *name);

#endif

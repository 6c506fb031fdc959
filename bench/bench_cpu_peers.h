// bench_cpu_peers.h: the C interface of the Eigen peer (bench_cpu_eigen.cpp) of bench_cpu.c.
#ifndef MSP_BENCH_CPU_PEERS_H
#define MSP_BENCH_CPU_PEERS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A copy of the CSR arrays as an Eigen row-major sparse matrix (NULL when out of memory), using
// `threads` OpenMP threads in its products.
void *bench_eigen_create(int64_t rows, int64_t cols, const int64_t *rowptr, const int32_t *colind,
                         const double *val, int threads);
// y = A x.
void bench_eigen_spmv(void *A, int64_t rows, int64_t cols, const double *x, double *y);
void bench_eigen_destroy(void *A);
const char *bench_eigen_version(void);

#ifdef __cplusplus
}
#endif

#endif

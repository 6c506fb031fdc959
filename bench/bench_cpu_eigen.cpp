// bench_cpu_eigen.cpp: the Eigen peer of mixsparse-bench-cpu (bench_cpu.c), behind a C interface.
// Eigen is header-only C++: a row-major SparseMatrix<double> (int32 indices) built from the CSR
// arrays, y = A x through its OpenMP-parallel sparse x dense product.
#include <Eigen/Sparse>

#include <cstdint>
#include <new>

#include "bench_cpu_peers.h"

namespace {
typedef Eigen::SparseMatrix<double, Eigen::RowMajor, int> EigenCsr;
}

extern "C" void *bench_eigen_create(int64_t rows, int64_t cols, const int64_t *rowptr,
                                    const int32_t *colind, const double *val, int threads) {
  Eigen::setNbThreads(threads);
  EigenCsr *A = new (std::nothrow) EigenCsr((Eigen::Index)rows, (Eigen::Index)cols);
  if (!A) return nullptr;
  try {
    Eigen::VectorXi per_row((Eigen::Index)rows);
    for (int64_t i = 0; i < rows; i++)
      per_row[(Eigen::Index)i] = (int)(rowptr[i + 1] - rowptr[i]);
    A->reserve(per_row);
    for (int64_t i = 0; i < rows; i++)
      for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
        A->insert((Eigen::Index)i, colind[k]) = val[k];
    A->makeCompressed();
  } catch (...) {
    delete A;
    return nullptr;
  }
  return A;
}

extern "C" void bench_eigen_spmv(void *A, int64_t rows, int64_t cols, const double *x, double *y) {
  const EigenCsr &M = *static_cast<EigenCsr *>(A);
  Eigen::Map<const Eigen::VectorXd> xv(x, (Eigen::Index)cols);
  Eigen::Map<Eigen::VectorXd> yv(y, (Eigen::Index)rows);
  yv.noalias() = M * xv;
}

extern "C" void bench_eigen_destroy(void *A) {
  delete static_cast<EigenCsr *>(A);
}

extern "C" const char *bench_eigen_version(void) {
#define BENCH_STR_(x) #x
#define BENCH_STR(x) BENCH_STR_(x)
  return "Eigen " BENCH_STR(EIGEN_WORLD_VERSION) "." BENCH_STR(EIGEN_MAJOR_VERSION) "." BENCH_STR(
      EIGEN_MINOR_VERSION);
}

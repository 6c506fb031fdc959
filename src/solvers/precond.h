// precond.h: the preconditioners of the solvers (Jacobi, ILU(0)), built on the host.
#ifndef MSP_PRECOND_H
#define MSP_PRECOND_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

// M of a right-preconditioned solve, built from A's host CSR (always present, sorted by column
// within each row). Jacobi is applied by the backend (its pmul slot: on the CUDA backend on the
// device, no copy). ILU(0) is factorised on the host; its triangular solves run on the backend
// where it has them (ilu_upload / ilu_apply: on CUDA, sync-free solves on the device with the
// host's bits, src/cuda/ilu.cu), else on the host (the CPU backend).
typedef struct {
  msp_precond kind;
  int64_t n;
  double *inv_diag; // Jacobi: 1 / a_ii (host)
  msp_vector dinv;  // Jacobi: the same values, an f64 vector of A's context (backend side)
  // ILU(0): L (unit lower, strictly lower part) and U (upper with the diagonal) in place of the
  // values of A's pattern; rowptr and colind are A's (borrowed, A outlives M).
  const int64_t *rowptr;
  const int32_t *colind;
  double *lu;
  int64_t *diag;   // position of a_ii in row i
  msp_context ctx; // ILU(0) on the backend: A's context and the backend's copy of the factors
  void *dev;
} msp__precond;

// Build M of the given kind from A (square). NONE builds nothing. MSP_ERR_INVALID_MATRIX when a
// diagonal entry (Jacobi) or a pivot (ILU(0)) is missing, zero or not finite: the message names
// the row (1-based, as in Matrix Market). MSP_ERR_OUT_OF_MEMORY. On failure P holds nothing.
msp_status msp__precond_setup(const msp_matrix A, msp_precond kind, msp__precond *P);
// z = M^-1 v (f64 vectors of length n, distinct). NONE copies.
msp_status msp__precond_apply(msp_context ctx, const msp__precond *P, msp_vector v, msp_vector z);
void msp__precond_free(msp__precond *P);

#ifdef __cplusplus
}
#endif
#endif

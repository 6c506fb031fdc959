// precond.c: Jacobi and ILU(0) preconditioners: built on the host; Jacobi applied by the backend
// (pmul), ILU(0)'s triangular solves by the backend where it has them (CUDA), else on the host.
#include "precond.h"

#include <math.h>

// A pivot that the factorisation or the solves cannot divide by.
static msp_status bad_pivot(const char *what, int64_t i, double v, int present) {
  if (!present)
    return msp__error(MSP_ERR_INVALID_MATRIX, "%s: row %lld (1-based) has no diagonal entry", what,
                      (long long)(i + 1));
  return msp__error(MSP_ERR_INVALID_MATRIX, "%s: %s pivot %g in row %lld (1-based)", what,
                    v == 0.0 ? "zero" : "non-finite", v, (long long)(i + 1));
}

static msp_status jacobi_setup(const msp_matrix A, msp__precond *P) {
  msp_status st = MSP_SUCCESS;
  const int64_t n = A->rows;
  MSP_TRY(MSP_ALLOC(P->inv_diag, n > 0 ? n : 1, "Jacobi preconditioner"));
  for (int64_t i = 0; i < n; i++) {
    double d = 0.0;
    int present = 0;
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
      if (A->colind[p] == i) d = A->val[p], present = 1;
    if (!present || d == 0.0 || !isfinite(d)) {
      st = bad_pivot("Jacobi preconditioner", i, d, present);
      goto exit;
    }
    P->inv_diag[i] = 1.0 / d;
  }
  MSP_TRY(msp_vector_create(A->ctx, n, &P->dinv));
  MSP_TRY(msp_vector_set(P->dinv, P->inv_diag));
exit:
  return st;
}

// ILU(0) in the row-wise (IKJ) order: for row i, each entry l_ik (k < i, ascending) is divided by
// the pivot u_kk and row k's upper part is subtracted where it falls inside row i's pattern
// (pos[] maps a column to its slot in row i, -1 outside the pattern: no fill).
static msp_status ilu0_setup(const msp_matrix A, msp__precond *P) {
  msp_status st = MSP_SUCCESS;
  const int64_t n = A->rows, nnz = A->nnz;
  const int64_t *rp = A->rowptr;
  const int32_t *ci = A->colind;
  int64_t *pos = NULL;
  P->rowptr = rp;
  P->colind = ci;
  MSP_TRY(MSP_ALLOC(P->lu, nnz > 0 ? nnz : 1, "ILU(0) factors"));
  MSP_TRY(MSP_ALLOC(P->diag, n > 0 ? n : 1, "ILU(0) diagonal positions"));
  MSP_TRY(MSP_ALLOC(pos, n > 0 ? n : 1, "ILU(0) column map"));
  if (nnz) memcpy(P->lu, A->val, (size_t)nnz * sizeof(double));
  for (int64_t j = 0; j < n; j++)
    pos[j] = -1;
  double *lu = P->lu;
  for (int64_t i = 0; i < n; i++) {
    P->diag[i] = -1;
    for (int64_t p = rp[i]; p < rp[i + 1]; p++) {
      pos[ci[p]] = p;
      if (ci[p] == i) P->diag[i] = p;
    }
    for (int64_t p = rp[i]; p < rp[i + 1] && ci[p] < i; p++) {
      const int64_t k = ci[p];
      lu[p] /= lu[P->diag[k]];
      for (int64_t q = P->diag[k] + 1; q < rp[k + 1]; q++) {
        const int64_t t = pos[ci[q]];
        if (t >= 0) lu[t] -= lu[p] * lu[q];
      }
    }
    for (int64_t p = rp[i]; p < rp[i + 1]; p++)
      pos[ci[p]] = -1;
    const double d = P->diag[i] >= 0 ? lu[P->diag[i]] : 0.0;
    if (P->diag[i] < 0 || d == 0.0 || !isfinite(d)) {
      st = bad_pivot("ILU(0)", i, d, P->diag[i] >= 0);
      goto exit;
    }
  }
exit:
  msp__free(pos);
  return st;
}

msp_status msp__precond_setup(const msp_matrix A, msp_precond kind, msp__precond *P) {
  msp_status st = MSP_SUCCESS;
  memset(P, 0, sizeof *P);
  P->kind = kind;
  P->n = A->rows;
  if (kind == MSP_PRECOND_JACOBI) MSP_TRY(jacobi_setup(A, P));
  if (kind == MSP_PRECOND_ILU0) {
    MSP_TRY(ilu0_setup(A, P));
    if (A->ctx->backend->ilu_upload) {
      MSP_TRY(A->ctx->backend->ilu_upload(A->ctx, A->rows, P->rowptr, P->colind, P->lu, P->diag,
                                          &P->dev));
      P->ctx = A->ctx;
    }
  }
exit:
  if (st != MSP_SUCCESS) msp__precond_free(P);
  return st;
}

// z = d .* v on the backend's side (the device for CUDA), d the inverse diagonal.
static msp_status jacobi_apply(msp_context ctx, const msp__precond *P, msp_vector v, msp_vector z) {
  msp_status st = MSP_SUCCESS; // msp_gmres checked the pmul slot (check_slots)
  MSP_TRY(msp__vector_current(P->dinv));
  MSP_TRY(msp__vector_current(v));
  MSP_TRY(ctx->backend->pmul(ctx, P->dinv, v, z));
  msp__vector_written(z);
exit:
  return st;
}

msp_status msp__precond_apply(msp_context ctx, const msp__precond *P, msp_vector v, msp_vector z) {
  msp_status st = MSP_SUCCESS;
  if (P->kind == MSP_PRECOND_NONE) return msp_copy(ctx, v, z);
  if (P->kind == MSP_PRECOND_JACOBI) return jacobi_apply(ctx, P, v, z);
  if (P->dev) {
    MSP_TRY(msp__vector_current(v));
    MSP_TRY(ctx->backend->ilu_apply(ctx, P->dev, v, z));
    msp__vector_written(z);
    goto exit;
  }
  MSP_TRY(msp__vector_on_host(v));
  const double *src = (const double *)v->h_data;
  double *dst = (double *)z->h_data;
  const int64_t n = P->n;
  {
    // ILU(0): L y = v (unit diagonal), then U z = y, both in z.
    const int64_t *rp = P->rowptr;
    const int32_t *ci = P->colind;
    const double *lu = P->lu;
    for (int64_t i = 0; i < n; i++) {
      double t = src[i];
      for (int64_t p = rp[i]; p < P->diag[i]; p++)
        t -= lu[p] * dst[ci[p]];
      dst[i] = t;
    }
    for (int64_t i = n - 1; i >= 0; i--) {
      double t = dst[i];
      for (int64_t p = P->diag[i] + 1; p < rp[i + 1]; p++)
        t -= lu[p] * dst[ci[p]];
      dst[i] = t / lu[P->diag[i]];
    }
  }
  msp__vector_host_written(z);
exit:
  return st;
}

void msp__precond_free(msp__precond *P) {
  if (!P) return;
  MSP_FREE(P->inv_diag);
  msp_vector_destroy(&P->dinv);
  MSP_FREE(P->lu);
  MSP_FREE(P->diag);
  if (P->dev && P->ctx->backend->ilu_free) P->ctx->backend->ilu_free(P->ctx, P->dev);
  P->dev = NULL;
  P->ctx = NULL;
  P->rowptr = NULL;
  P->colind = NULL;
}

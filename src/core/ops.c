// ops.c: argument checks for the operations, then the backend's dispatch table.
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

// An object is used only with the context that made it: the context counts it, and its data
// lives where that context computes.
#define CHECK_CTX()                                                                                \
  do {                                                                                             \
    st = msp__check_context(ctx, fn, "ctx");                                                       \
    if (st != MSP_SUCCESS) return st;                                                              \
  } while (0)

#define CHECK_VEC(v, name)                                                                         \
  do {                                                                                             \
    st = msp__check_vector(v, fn, "vector " name);                                                 \
    if (st != MSP_SUCCESS) return st;                                                              \
    MSP_CHECK_ARG((v)->ctx == ctx,                                                                 \
                  "%s: vector %s belongs to another context (an object is used only with the "     \
                  "context that made it)",                                                         \
                  fn, name);                                                                       \
  } while (0)

msp_status msp_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x, double beta,
                    msp_vector y) {
  const char *fn = "msp_spmv";
  msp_status st = MSP_SUCCESS;
  CHECK_CTX();
  st = msp__check_matrix(A, fn, "A");
  if (st != MSP_SUCCESS) return st;
  MSP_CHECK_ARG(A->ctx == ctx, "msp_spmv: A belongs to another context (an object is used only "
                               "with the context that made it)");
  CHECK_VEC(x, "x");
  CHECK_VEC(y, "y");
  MSP_CHECK_ARG(x != y, "msp_spmv: x and y must be different vectors");
  if (x->n != A->cols || y->n != A->rows)
    return msp__error(MSP_ERR_DIMENSION_MISMATCH,
                      "msp_spmv: A is %lld x %lld but x has %lld entries and y has %lld",
                      (long long)A->rows, (long long)A->cols, (long long)x->n, (long long)y->n);
  MSP_CHECK_ARG(isfinite(alpha) && isfinite(beta), "msp_spmv: alpha %g or beta %g not finite",
                alpha, beta);
  msp__spmv_fn f = ctx->backend->spmv[A->format];
  if (!f)
    return msp__error(
        MSP_ERR_NOT_SUPPORTED, "msp_spmv: format %s with %s values has no kernel on the %s backend",
        msp_format_name(A->format), msp_precision_name(A->precision), ctx->backend->name);
  MSP_TRY(msp__vector_current(x));
  // With beta == 0, y is write-only: its stale copy need not travel.
  if (beta != 0.0) MSP_TRY(msp__vector_current(y));
  MSP_TRY_THREADS_WORK(ctx, A->nnz, f(ctx, alpha, A, x, beta, y));
  msp__vector_written(y);
exit:
  return st;
}

// A host-backend vector over the caller's f64 array: the product reads and writes the array
// in place, so no copy is made and nothing is allocated.
static void borrow_host(struct msp_vector_s *v, msp_context ctx, int64_t n, const double *data) {
  memset(v, 0, sizeof *v);
  v->magic = MSP__MAGIC_VECTOR;
  v->ctx = ctx;
  v->n = n;
  v->prec = MSP_PRECISION_F64;
  v->bank_shift = MSP_CPMS_SEPARATE;
  v->h_data = (void *)data;
  v->sync = MSP__SYNC_HOST;
}

msp_status msp_spmv_host(msp_context ctx, double alpha, const msp_matrix A, const double *x,
                         double beta, double *y) {
  const char *fn = "msp_spmv_host";
  msp_status st = MSP_SUCCESS;
  msp_vector xv = NULL, yv = NULL;
  CHECK_CTX();
  st = msp__check_matrix(A, fn, "A");
  if (st != MSP_SUCCESS) return st;
  MSP_CHECK_ARG(A->ctx == ctx,
                "%s: A belongs to another context (an object is used only with "
                "the context that made it)",
                fn);
  MSP_CHECK_ARG(x || A->cols == 0, "%s: x is NULL (A has %lld columns)", fn, (long long)A->cols);
  MSP_CHECK_ARG(y || A->rows == 0, "%s: y is NULL (A has %lld rows)", fn, (long long)A->rows);
  if (x && y) {
    const uintptr_t x0 = (uintptr_t)x, x1 = (uintptr_t)(x + A->cols);
    const uintptr_t y0 = (uintptr_t)y, y1 = (uintptr_t)(y + A->rows);
    MSP_CHECK_ARG(x1 <= y0 || y1 <= x0 || A->rows == 0 || A->cols == 0,
                  "%s: x and y overlap (the product writes y while it reads x)", fn);
  }
  if (!ctx->backend->vector_to_device) {
    struct msp_vector_s xs, ys;
    borrow_host(&xs, ctx, A->cols, x);
    borrow_host(&ys, ctx, A->rows, y);
    return msp_spmv(ctx, alpha, A, &xs, beta, &ys);
  }
  // A device backend: through vectors of its own, copied both ways.
  MSP_TRY(msp_vector_create(ctx, A->cols, &xv));
  MSP_TRY(msp_vector_create(ctx, A->rows, &yv));
  MSP_TRY(msp_vector_set(xv, x));
  if (beta != 0.0) MSP_TRY(msp_vector_set(yv, y));
  MSP_TRY(msp_spmv(ctx, alpha, A, xv, beta, yv));
  MSP_TRY(msp_vector_get(yv, y));
exit:
  msp_vector_destroy(&xv);
  msp_vector_destroy(&yv);
  return st;
}

msp_status msp_dot(msp_context ctx, msp_vector x, msp_vector y, double *result) {
  const char *fn = "msp_dot";
  msp_status st = MSP_SUCCESS;
  CHECK_CTX();
  MSP_CHECK_ARG(result, "msp_dot: result is NULL");
  CHECK_VEC(x, "x");
  CHECK_VEC(y, "y");
  if (x->n != y->n)
    return msp__error(MSP_ERR_DIMENSION_MISMATCH, "msp_dot: lengths %lld and %lld differ",
                      (long long)x->n, (long long)y->n);
  MSP_TRY(msp__vector_current(x));
  MSP_TRY(msp__vector_current(y));
  MSP_TRY_THREADS(ctx, ctx->backend->dot(ctx, x, y, result));
exit:
  return st;
}

static msp_status norm(msp_context ctx, msp_vector x, double *result, int which) {
  const char *fn = which == 2 ? "msp_nrm2" : "msp_nrm1";
  msp_status st = MSP_SUCCESS;
  CHECK_CTX();
  MSP_CHECK_ARG(result, "%s: result is NULL", fn);
  CHECK_VEC(x, "x");
  MSP_TRY(msp__vector_current(x));
  MSP_TRY_THREADS(ctx, which == 2 ? ctx->backend->nrm2(ctx, x, result)
                                  : ctx->backend->nrm1(ctx, x, result));
exit:
  return st;
}
msp_status msp_nrm2(msp_context ctx, msp_vector x, double *r) {
  return norm(ctx, x, r, 2);
}
msp_status msp_nrm1(msp_context ctx, msp_vector x, double *r) {
  return norm(ctx, x, r, 1);
}

msp_status msp_axpby(msp_context ctx, double alpha, msp_vector x, double beta, msp_vector y) {
  const char *fn = "msp_axpby";
  msp_status st = MSP_SUCCESS;
  CHECK_CTX();
  CHECK_VEC(x, "x");
  CHECK_VEC(y, "y");
  if (x->n != y->n)
    return msp__error(MSP_ERR_DIMENSION_MISMATCH, "msp_axpby: lengths %lld and %lld differ",
                      (long long)x->n, (long long)y->n);
  MSP_TRY(msp__vector_current(x));
  MSP_TRY(msp__vector_current(y));
  MSP_TRY_THREADS(ctx, ctx->backend->axpby(ctx, alpha, x, beta, y));
  msp__vector_written(y);
exit:
  return st;
}

msp_status msp_scale(msp_context ctx, double alpha, msp_vector x) {
  const char *fn = "msp_scale";
  msp_status st = MSP_SUCCESS;
  CHECK_CTX();
  CHECK_VEC(x, "x");
  MSP_TRY(msp__vector_current(x));
  MSP_TRY_THREADS(ctx, ctx->backend->scale(ctx, alpha, x));
  msp__vector_written(x);
exit:
  return st;
}

msp_status msp_copy(msp_context ctx, msp_vector x, msp_vector y) {
  const char *fn = "msp_copy";
  msp_status st = MSP_SUCCESS;
  CHECK_CTX();
  CHECK_VEC(x, "x");
  CHECK_VEC(y, "y");
  if (x->n != y->n)
    return msp__error(MSP_ERR_DIMENSION_MISMATCH, "msp_copy: lengths %lld and %lld differ",
                      (long long)x->n, (long long)y->n);
  if (x == y) return MSP_SUCCESS;
  MSP_TRY(msp__vector_current(x));
  MSP_TRY_THREADS(ctx, ctx->backend->copy(ctx, x, y));
  msp__vector_written(y);
exit:
  return st;
}

msp_status msp_vector_fill(msp_vector v, double value) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(msp__check_vector(v, "msp_vector_fill", "v"));
  msp_context ctx = v->ctx;
  MSP_TRY_THREADS(ctx, ctx->backend->fill(ctx, v, value));
  msp__vector_written(v);
exit:
  return st;
}

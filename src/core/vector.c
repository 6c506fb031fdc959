// vector.c: vectors with a host and a device copy, synchronised on demand (PSBLAS 2.2).
#include "internal.h"

#include <string.h>

static int on_device_backend(const msp_vector v) {
  return v->ctx->backend->vector_to_device != NULL;
}

msp_status msp_vector_create(msp_context ctx, int64_t n, msp_vector *out) {
  msp_status st = MSP_SUCCESS;
  msp_vector v = NULL;
  MSP_CHECK_ARG(out, "msp_vector_create: out is NULL");
  *out = NULL;
  MSP_CHECK_ARG(ctx, "msp_vector_create: ctx is NULL");
  MSP_CHECK_ARG(n >= 0, "msp_vector_create: negative length %lld", (long long)n);
  MSP_TRY(MSP_ALLOC_ZERO(v, 1, "vector"));
  v->ctx = ctx;
  v->n = n;
  v->sync = MSP__SYNC_HOST; // the zeroed host copy is the current one
  // The device copy first: an impossible size then fails on the device before the host copy
  // is zero-filled (which would commit the pages).
  if (ctx->backend->vector_alloc) MSP_TRY(ctx->backend->vector_alloc(v));
  MSP_TRY(MSP_ALLOC_ZERO(v->h_data, n, "vector values"));
  *out = v;
  v = NULL;
exit:
  msp_vector_destroy(&v);
  return st;
}

void msp_vector_destroy(msp_vector *v) {
  if (!v || !*v) return;
  if ((*v)->d_data && (*v)->ctx->backend->vector_free) (*v)->ctx->backend->vector_free(*v);
  msp__free((*v)->h_data);
  msp__free(*v);
  *v = NULL;
}

int64_t msp_vector_length(const msp_vector v) {
  return v ? v->n : 0;
}
int64_t msp_vector_transfers(const msp_vector v) {
  return v ? v->transfers : 0;
}

msp_status msp__vector_on_host(msp_vector v) {
  msp_status st = MSP_SUCCESS;
  if (v->sync == MSP__SYNC_DEVICE) {
    st = v->ctx->backend->vector_to_host(v);
    if (st != MSP_SUCCESS) return st;
    v->transfers++;
    v->sync = MSP__SYNC_BOTH;
  }
  return st;
}

msp_status msp__vector_on_device(msp_vector v) {
  msp_status st = MSP_SUCCESS;
  if (!on_device_backend(v)) return MSP_SUCCESS;
  if (v->sync == MSP__SYNC_HOST) {
    st = v->ctx->backend->vector_to_device(v);
    if (st != MSP_SUCCESS) return st;
    v->transfers++;
    v->sync = MSP__SYNC_BOTH;
  }
  return st;
}

void msp__vector_host_written(msp_vector v) {
  v->sync = on_device_backend(v) ? MSP__SYNC_HOST : MSP__SYNC_BOTH;
}

void msp__vector_device_written(msp_vector v) {
  v->sync = on_device_backend(v) ? MSP__SYNC_DEVICE : MSP__SYNC_BOTH;
}

msp_status msp_vector_set(msp_vector v, const double *host) {
  MSP_CHECK_ARG(v, "msp_vector_set: v is NULL");
  MSP_CHECK_ARG(host || v->n == 0, "msp_vector_set: host array is NULL");
  if (v->n) memcpy(v->h_data, host, (size_t)v->n * sizeof *host);
  msp__vector_host_written(v);
  return MSP_SUCCESS;
}

msp_status msp_vector_get(msp_vector v, double *host) {
  MSP_CHECK_ARG(v, "msp_vector_get: v is NULL");
  MSP_CHECK_ARG(host || v->n == 0, "msp_vector_get: host array is NULL");
  msp_status st = msp__vector_on_host(v);
  if (st != MSP_SUCCESS) return st;
  if (v->n) memcpy(host, v->h_data, (size_t)v->n * sizeof *host);
  return MSP_SUCCESS;
}

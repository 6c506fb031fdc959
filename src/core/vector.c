// vector.c: vectors with a host and a device copy, synchronised on demand (PSBLAS 2.2).
#include "internal.h"
#include "precision.h"

#include <string.h>

static int on_device_backend(const msp_vector v) {
  return v->ctx->backend->vector_to_device != NULL;
}

msp_status msp_vector_create_precision(msp_context ctx, int64_t n, msp_precision prec,
                                       msp_vector *out) {
  msp_status st = MSP_SUCCESS;
  msp_vector v = NULL;
  MSP_CHECK_ARG(out, "msp_vector_create: out is NULL");
  *out = NULL;
  MSP_CHECK_ARG(ctx, "msp_vector_create: ctx is NULL");
  MSP_CHECK_ARG(n >= 0, "msp_vector_create: negative length %lld", (long long)n);
  MSP_CHECK_ARG((unsigned)prec < MSP_PRECISION_COUNT, "msp_vector_create: unknown precision %d",
                (int)prec);
  MSP_TRY(MSP_ALLOC_ZERO(v, 1, "vector"));
  v->ctx = ctx;
  v->n = n;
  v->prec = prec;
  v->sync = MSP__SYNC_HOST; // the zeroed host copy is the current one
  if (prec != MSP_PRECISION_F64) {
    // Zero bytes are 0.0 in every precision (fixed point with scale 0 included).
    int seg = msp__prec_segments(prec);
    MSP_TRY(MSP_ALLOC_ZERO(v->enc, 1, "encoded vector"));
    v->enc->prec = prec;
    v->enc->n = n;
    v->enc->scale_shift = MSP_CPMS_SEPARATE; // one scale for the whole vector
    v->enc->bank_shift =
        seg > 1 ? msp__cpms_bank_shift(seg, MSP_CPMS_DEFAULT_BANK_BYTES) : MSP_CPMS_SEPARATE;
    v->enc->nscales = 1;
  }
  // The device copy first: an impossible size then fails on the device before the host copy
  // is zero-filled (which would commit the pages).
  if (ctx->backend->vector_alloc) MSP_TRY(ctx->backend->vector_alloc(v));
  MSP_TRY(MSP_ALLOC_ZERO(v->h_data, n, "vector values"));
  if (v->enc) {
    MSP_TRY(msp__alloc_zero(&v->enc->data, n > 0 ? (size_t)n : 1, msp__prec_bytes(prec),
                            "encoded vector values"));
    MSP_TRY(MSP_ALLOC_ZERO(v->enc->scales, 1, "vector scale"));
  }
  *out = v;
  v = NULL;
exit:
  msp_vector_destroy(&v);
  return st;
}

msp_status msp_vector_create(msp_context ctx, int64_t n, msp_vector *out) {
  return msp_vector_create_precision(ctx, n, MSP_PRECISION_F64, out);
}

void msp_vector_destroy(msp_vector *v) {
  if (!v || !*v) return;
  if (((*v)->d_data || (*v)->d_enc || (*v)->d_scales) && (*v)->ctx->backend->vector_free)
    (*v)->ctx->backend->vector_free(*v);
  msp__free((*v)->h_data);
  if ((*v)->enc) {
    msp__prec_array_free((*v)->enc);
    msp__free((*v)->enc);
  }
  msp__free(*v);
  *v = NULL;
}

msp_precision msp_vector_precision(const msp_vector v) {
  return v ? v->prec : MSP_PRECISION_F64;
}

size_t msp_vector_bytes(const msp_vector v) {
  if (!v) return 0;
  if (v->prec == MSP_PRECISION_F64) return (size_t)v->n * sizeof(double);
  int fixed = v->prec == MSP_PRECISION_FX32 || v->prec == MSP_PRECISION_FX16;
  return (size_t)v->n * msp__prec_bytes(v->prec) + (fixed ? sizeof(double) : 0);
}

msp_status msp_vector_set_cpms_segments(msp_vector v, int segments) {
  MSP_CHECK_ARG(v, "msp_vector_set_cpms_segments: v is NULL");
  int all = msp__prec_segments(v->prec);
  if (all == 1) {
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_vector_set_cpms_segments: the vector stores %s values, not CPMS",
                      msp_precision_name(v->prec));
  }
  MSP_CHECK_ARG(segments >= 0 && segments <= all,
                "msp_vector_set_cpms_segments: %d segments (0 = all, or 1..%d)", segments, all);
  v->segments = segments;
  return MSP_SUCCESS;
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
  if (v->prec != MSP_PRECISION_F64) {
    // Encoded straight from the caller's array on the host; the device gets the encoded bytes.
    msp_status st = msp__vector_encode_from(v, host);
    if (st != MSP_SUCCESS) return st;
  } else if (v->n) {
    memcpy(v->h_data, host, (size_t)v->n * sizeof *host);
  }
  msp__vector_host_written(v);
  return MSP_SUCCESS;
}

msp_status msp_vector_get(msp_vector v, double *host) {
  MSP_CHECK_ARG(v, "msp_vector_get: v is NULL");
  MSP_CHECK_ARG(host || v->n == 0, "msp_vector_get: host array is NULL");
  msp_status st = msp__vector_on_host(v);
  if (st != MSP_SUCCESS) return st;
  if (v->prec != MSP_PRECISION_F64)
    msp__prec_decode(v->enc, v->segments, host);
  else if (v->n)
    memcpy(host, v->h_data, (size_t)v->n * sizeof *host);
  return MSP_SUCCESS;
}

msp_status msp__vector_host_values(msp_vector v) {
  msp_status st = msp__vector_on_host(v);
  if (st == MSP_SUCCESS && v->prec != MSP_PRECISION_F64)
    msp__prec_decode(v->enc, v->segments, v->h_data);
  return st;
}

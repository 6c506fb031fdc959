// vector.c: vectors in their storage precision, with a host and a device copy synchronised on
// demand (PSBLAS 2.2).
#include "internal.h"
#include "precision.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int on_device_backend(const msp_vector v) {
  return v->ctx->backend->vector_to_device != NULL;
}

msp_status msp__vector_current(msp_vector v) {
  return on_device_backend(v) ? msp__vector_on_device(v) : msp__vector_on_host(v);
}

void msp__vector_written(msp_vector v) {
  if (on_device_backend(v))
    msp__vector_device_written(v);
  else
    msp__vector_host_written(v);
}

msp_status msp_vector_create_precision(msp_context ctx, int64_t n, msp_precision prec,
                                       msp_vector *out) {
  msp_status st = MSP_SUCCESS;
  msp_vector v = NULL;
  MSP_CHECK_ARG(out, "msp_vector_create: out is NULL");
  *out = NULL;
  MSP_TRY(msp__check_context(ctx, "msp_vector_create", "ctx"));
  MSP_CHECK_ARG(n >= 0, "msp_vector_create: negative length %lld", (long long)n);
  MSP_CHECK_ARG((unsigned)prec < MSP_PRECISION_COUNT, "msp_vector_create: unknown precision %d",
                (int)prec);
  {
    char what[96];
    snprintf(what, sizeof what, "a %s vector of %lld entries", msp_precision_name(prec),
             (long long)n);
    MSP_TRY(
        msp__memory_check(msp__bytes_mul_add((size_t)n, msp__prec_bytes(prec), sizeof *v), what));
  }
  MSP_TRY(MSP_ALLOC_ZERO(v, 1, "vector"));
  v->magic = MSP__MAGIC_VECTOR;
  v->ctx = ctx;
  msp__context_attach(ctx);
  v->n = n;
  v->prec = prec;
  v->sync = MSP__SYNC_HOST; // the zeroed host copy is the current one
  {
    const int seg = msp__prec_segments(prec);
    v->bank_shift =
        seg > 1 ? msp__cpms_bank_shift(seg, MSP_CPMS_DEFAULT_BANK_BYTES) : MSP_CPMS_SEPARATE;
  }
  if (msp_prec_is_fixed(prec)) v->nscales = n > 0 ? ((n - 1) >> MSP_VEC_FX_SHIFT) + 1 : 1;
  // The device copy first: an impossible size then fails on the device before the host copy
  // is zero-filled (which would commit the pages). Zero bytes are 0.0 in every precision (fixed
  // point with scale 0 included).
  if (ctx->backend->vector_alloc) MSP_TRY(ctx->backend->vector_alloc(v));
  MSP_TRY(
      msp__alloc_zero(&v->h_data, n > 0 ? (size_t)n : 1, msp__prec_bytes(prec), "vector values"));
  if (v->nscales) MSP_TRY(MSP_ALLOC_ZERO(v->h_scales, v->nscales, "vector scales"));
  *out = v;
  v = NULL;
exit:
  msp_vector_destroy(&v);
  return st;
}

msp_status msp_vector_create(msp_context ctx, int64_t n, msp_vector *out) {
  return msp_vector_create_precision(ctx, n, MSP_PRECISION_F64, out);
}

msp_status msp_vector_destroy(msp_vector *v) {
  if (!v || !*v) return MSP_SUCCESS;
  if (!msp__vector_ok(*v)) return msp__check_vector(*v, "msp_vector_destroy", "*v");
  if (((*v)->d_data || (*v)->d_scales || (*v)->d_range) && (*v)->ctx->backend->vector_free)
    (*v)->ctx->backend->vector_free(*v);
  msp__free((*v)->h_data);
  msp__free((*v)->h_scales);
  (*v)->magic = MSP__MAGIC_FREED;
  msp__context_detach((*v)->ctx);
  msp__free(*v);
  *v = NULL;
  return MSP_SUCCESS;
}

msp_precision msp_vector_precision(const msp_vector v) {
  return msp__vector_ok(v) ? v->prec : MSP_PRECISION_F64;
}

size_t msp_vector_bytes(const msp_vector v) {
  if (!msp__vector_ok(v)) return 0;
  return (size_t)v->n * msp__prec_bytes(v->prec) + (size_t)v->nscales * sizeof(double);
}

msp_status msp_vector_set_cpms_segments(msp_vector v, int segments) {
  msp_status st = msp__check_vector(v, "msp_vector_set_cpms_segments", "v");
  if (st != MSP_SUCCESS) return st;
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
  return msp__vector_ok(v) ? v->n : 0;
}
int64_t msp_vector_transfers(const msp_vector v) {
  return msp__vector_ok(v) ? v->transfers : 0;
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

// Encode the caller's n doubles into v's host copy. A finite value that the precision cannot
// hold (overflow, or a nonzero that would be stored as zero) is an MSP_ERR_RANGE naming the first
// one and the count (msp__range_scan), and v is left unchanged; fixed point refuses Inf/NaN (no
// scale holds them).
static msp_status encode_from(msp_vector v, const double *src) {
  const msp_precision p = v->prec;
  const int64_t n = v->n;
  int64_t first = -1, over = 0, flush = 0;
  if (p == MSP_PRECISION_F64) { // every double is its own f64 encoding: a plain copy
    memcpy(v->h_data, src, (size_t)n * sizeof *src);
    return MSP_SUCCESS;
  }
  if (msp_prec_is_fixed(p)) {
    for (int64_t i = 0; i < n; i++) {
      if (!isfinite(src[i]))
        return msp__error(MSP_ERR_NONFINITE,
                          "msp_vector_set: value %lld is %g, which fixed point (%s) cannot hold",
                          (long long)i, src[i], msp_precision_name(p));
    }
  }
  msp_status st =
      msp__range_scan(p, src, n, MSP_VEC_FX_SHIFT, MSP_RANGE_ERROR, &first, &over, &flush);
  if (st != MSP_SUCCESS) {
    char why[512]; // the message buffer is rewritten by msp__error: copy it first
    snprintf(why, sizeof why, "%s", msp_last_error());
    return msp__error(st, "msp_vector_set: %s", why);
  }
  msp_acc a = msp__vector_store_acc(v, 0);
  for (int64_t b = 0; b < v->nscales; b++) {
    const int64_t lo = b << MSP_VEC_FX_SHIFT;
    const int64_t hi = lo + MSP_VEC_FX_BLOCK < n ? lo + MSP_VEC_FX_BLOCK : n;
    double m = 0.0;
    for (int64_t i = lo; i < hi; i++)
      m = msp_absmax_step(m, src[i]);
    v->h_scales[b] = msp_fx_block_scale(p, m);
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    msp_acc_store(&a, i, src[i]);
  return MSP_SUCCESS;
}

msp_status msp_vector_set(msp_vector v, const double *host) {
  msp_status st = msp__check_vector(v, "msp_vector_set", "v");
  if (st != MSP_SUCCESS) return st;
  MSP_CHECK_ARG(host || v->n == 0, "msp_vector_set: host array is NULL");
  const int threads_prev = msp__threads_enter(v->ctx);
  st = encode_from(v, host);
  msp__threads_leave(threads_prev);
  if (st != MSP_SUCCESS) return st;
  v->range_count = v->range_flushed = 0; // every stored value is the caller's: nothing out of range
  msp__vector_host_written(v);
  return MSP_SUCCESS;
}

msp_status msp_vector_get(msp_vector v, double *host) {
  msp_status st = msp__check_vector(v, "msp_vector_get", "v");
  if (st != MSP_SUCCESS) return st;
  MSP_CHECK_ARG(host || v->n == 0, "msp_vector_get: host array is NULL");
  st = msp__vector_on_host(v);
  if (st != MSP_SUCCESS) return st;
  const msp_acc a = msp__vector_acc(v, 0);
  const int64_t n = v->n;
  if (v->prec == MSP_PRECISION_F64) { // stored as the caller reads it: a plain copy
    memcpy(host, v->h_data, (size_t)n * sizeof *host);
  } else {
    const int threads_prev = msp__threads_enter(v->ctx);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
      host[i] = msp_acc_load(&a, i);
    msp__threads_leave(threads_prev);
  }
  // Reported once: the counts go to the caller (and msp_vector_range_info) and restart.
  const int64_t over = v->range_count, flushed = v->range_flushed;
  v->reported_saturated = over;
  v->reported_flushed = flushed;
  v->range_count = v->range_flushed = 0;
  if (over > 0 || flushed > 0) {
    double largest = 0;
    char what[2][256];
    msp__prec_limits(v->prec, &largest, NULL);
    what[0][0] = what[1][0] = '\0';
    if (over > 0)
      snprintf(what[0], sizeof what[0],
               "%lld result(s) overflowed its largest finite value %.9g and were saturated to it",
               (long long)over, largest);
    if (flushed > 0)
      snprintf(what[1], sizeof what[1],
               "%s%lld nonzero result(s) were below %s and were stored as 0", over > 0 ? "; " : "",
               (long long)flushed,
               msp_prec_is_fixed(v->prec) ? "half a unit of their block's scale"
                                          : "half its smallest subnormal");
    return msp__error(MSP_ERR_RANGE,
                      "msp_vector_get: results written into this %s vector were outside its "
                      "range: %s%s; the values were copied out",
                      msp_precision_name(v->prec), what[0], what[1]);
  }
  return MSP_SUCCESS;
}

msp_status msp_vector_device_data(msp_vector v, void **d_ptr) {
  MSP_CHECK_ARG(d_ptr, "msp_vector_device_data: d_ptr is NULL");
  *d_ptr = NULL;
  msp_status st = msp__check_vector(v, "msp_vector_device_data", "v");
  if (st != MSP_SUCCESS) return st;
  if (!on_device_backend(v))
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_vector_device_data: the vector is on the %s backend, which has no "
                      "device data",
                      v->ctx->backend->name);
  st = msp__vector_on_device(v);
  if (st != MSP_SUCCESS) return st;
  // The caller may write through the pointer: the device copy is the one to trust from now on.
  msp__vector_device_written(v);
  *d_ptr = v->d_data;
  return MSP_SUCCESS;
}

msp_status msp_vector_set_device(msp_vector v, const void *d_src) {
  msp_status st = msp__check_vector(v, "msp_vector_set_device", "v");
  if (st != MSP_SUCCESS) return st;
  MSP_CHECK_ARG(d_src || v->n == 0, "msp_vector_set_device: d_src is NULL");
  if (!v->ctx->backend->vector_copy_device_in)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_vector_set_device: the vector is on the %s backend, which has no "
                      "device data",
                      v->ctx->backend->name);
  if (msp_prec_is_fixed(v->prec))
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_vector_set_device: the vector stores fixed point (%s), whose per-block "
                      "scales cannot come from raw device values; use msp_vector_set",
                      msp_precision_name(v->prec));
  st = v->ctx->backend->vector_copy_device_in(v, d_src);
  if (st != MSP_SUCCESS) return st;
  v->range_count = v->range_flushed = 0; // every stored value is the caller's: nothing out of range
  msp__vector_device_written(v);
  return MSP_SUCCESS;
}

msp_status msp_vector_range_info(const msp_vector v, int64_t *saturated, int64_t *flushed) {
  msp_status st = msp__check_vector(v, "msp_vector_range_info", "v");
  if (st != MSP_SUCCESS) return st;
  if (saturated) *saturated = v->reported_saturated;
  if (flushed) *flushed = v->reported_flushed;
  return MSP_SUCCESS;
}

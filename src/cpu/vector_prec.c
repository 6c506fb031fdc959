// vector_prec.c: host encode/decode of vectors stored in a reduced precision (CPU backend ops).
#include "internal.h"
#include "precision.h"

#include <math.h>

// The store view of v's encoded data: CPMS writes every segment (a store keeps the value whole;
// reads truncate to v->segments), fixed point uses the vector's one scale.
static msp_acc store_view(const msp_vector v) {
  return msp__prec_view(v->enc, 0);
}

static double qmax_of(msp_precision p) {
  return p == MSP_PRECISION_FX32 ? MSP_FX32_MAX : MSP_FX16_MAX;
}

// max |src[i]|, NaN when any entry is NaN. Exact in any order, so deterministic for any thread
// count.
static double absmax(const double *src, int64_t n) {
  double m = 0.0;
  int nan = 0;
#pragma omp parallel for schedule(static) reduction(max : m) reduction(| : nan)
  for (int64_t i = 0; i < n; i++) {
    double a = fabs(src[i]);
    if (a > m) m = a;
    if (isnan(a)) nan = 1;
  }
  return nan ? NAN : m;
}

static void encode(msp_vector v, const double *src) {
  msp__prec_array *e = v->enc;
  if (e->prec == MSP_PRECISION_FX32 || e->prec == MSP_PRECISION_FX16)
    e->scales[0] = msp_fx_vector_scale(absmax(src, v->n), qmax_of(e->prec));
  msp_acc a = store_view(v);
  int64_t n = v->n;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    msp_acc_store(&a, i, src[i]);
}

msp_status msp__vector_encode_from(msp_vector v, const double *src) {
  msp_precision p = v->enc->prec;
  if (p == MSP_PRECISION_FX32 || p == MSP_PRECISION_FX16) {
    for (int64_t i = 0; i < v->n; i++) {
      if (!isfinite(src[i]))
        return msp__error(MSP_ERR_NONFINITE,
                          "msp_vector_set: value %lld is %g, which fixed point (%s) cannot hold",
                          (long long)i, src[i], msp_precision_name(p));
    }
  }
  encode(v, src);
  return MSP_SUCCESS;
}

msp_status msp__cpu_vector_encode(msp_vector v) {
  encode(v, v->h_data);
  return MSP_SUCCESS;
}

msp_status msp__cpu_vector_decode(msp_vector v) {
  msp__prec_decode(v->enc, v->segments, v->h_data);
  return MSP_SUCCESS;
}

// precision.h: storage-precision accessors (a load returns double, a store rounds), CPU and CUDA.
//
// Storage precision is decoupled from arithmetic precision (Aliaga, Anzt, Grutzmacher,
// Quintana-Orti, Tomas, "Compressed basis GMRES", "Memory accessor"): values live in memory as f64,
// f32, f16, bf16, fx32, fx16, cpms2 or cpms4 and are turned into double on every load, so kernels
// compute in fp64 and only the bytes moved change. Every function marked MSP_HD compiles as
// `__host__ __device__` under nvcc and as `static inline` in C, so the CPU backend and the CUDA
// kernels decode bit for bit the same way. The conversions are written in portable integer code (no
// cuda_fp16.h, no host FP16 types): the C path must give the same bits as the device path.
//
// Rounding: IEEE types (f32, f16, bf16) round to nearest, ties to even, directly from the double
// (never through float, which would round twice). Fixed point (fx32, fx16) rounds to nearest.
// CPMS truncates (rounds toward zero), as Grutzmacher, Cojean, Flegar, Anzt, Quintana-Orti,
// "Acceleration of PageRank with customized precision" 4.2 does: reading k of the segments gives
// the double with the remaining mantissa bits zero.
#ifndef MSP_PRECISION_H
#define MSP_PRECISION_H

#include "mixsparse.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define MSP_HD static __forceinline__ __host__ __device__
#else
#define MSP_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

// ---- bit casts --------------------------------------------------------------------------------
MSP_HD uint64_t msp_f64_bits(double d) {
#if defined(__CUDA_ARCH__)
  return (uint64_t)__double_as_longlong(d);
#else
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
#endif
}
MSP_HD double msp_bits_f64(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double((long long)u);
#else
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
#endif
}
MSP_HD uint32_t msp_f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return (uint32_t)__float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}
MSP_HD float msp_bits_f32(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// ---- small IEEE formats (f16, bf16) -------------------------------------------------------------
// Round a double to a binary format with `fbits` fraction bits and `ebits` exponent bits (at most
// 15 bits besides the sign), to nearest, ties to even, with gradual underflow (subnormals) and
// overflow to Inf. Returns the 16 bits (sign in bit 15). NaN stays a (quiet) NaN.
MSP_HD uint16_t msp__round_small(double d, int fbits, int ebits) {
  uint64_t b = msp_f64_bits(d);
  uint32_t sign = (uint32_t)(b >> 48) & 0x8000u;
  int dexp = (int)((b >> 52) & 0x7ff);
  uint64_t man = b & ((UINT64_C(1) << 52) - 1);
  uint32_t inf = ((1u << ebits) - 1u) << fbits;
  if (dexp == 0x7ff) return (uint16_t)(sign | inf | (man ? (1u << (fbits - 1)) : 0u));
  int bias = (1 << (ebits - 1)) - 1;
  int emin = 1 - bias; // smallest normal exponent
  // value = m * 2^(e - 52); double subnormals are far below every target's range and round to 0
  int e = dexp ? dexp - 1023 : -1022;
  uint64_t m = dexp ? (man | (UINT64_C(1) << 52)) : man;
  if (e > bias) return (uint16_t)(sign | inf);
  // Keep fbits fraction bits of a normal result; below emin the unit is fixed at 2^(emin-fbits),
  // so the shift grows by emin - e (gradual underflow).
  int shift = (52 - fbits) + (e < emin ? emin - e : 0);
  if (shift > 60) shift = 60; // m < 2^53: everything rounds to zero, as it must
  uint64_t q = m >> shift;
  uint64_t rem = m & ((UINT64_C(1) << shift) - 1);
  uint64_t half = UINT64_C(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) q++;
  // Normal: q holds the implicit bit, so adding it to (e - emin) << fbits gives the biased
  // exponent; a carry from rounding (q == 2^(fbits+1)) moves into the exponent by itself and
  // reaches exactly the Inf pattern at the top. Subnormal: q is the encoding (q == 2^fbits after
  // rounding is the smallest normal, again by itself).
  uint32_t h = (e >= emin) ? (uint32_t)(((uint32_t)(e - emin) << fbits) + q) : (uint32_t)q;
  if (h > inf) h = inf;
  return (uint16_t)(sign | h);
}

// Exact widening of a small binary format to double.
MSP_HD double msp__widen_small(uint16_t h, int fbits, int ebits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t emask = (1u << ebits) - 1u;
  uint32_t ex = ((uint32_t)h >> fbits) & emask;
  uint64_t frac = (uint64_t)(h & ((1u << fbits) - 1u));
  uint64_t sign = (uint64_t)(h >> 15) << 63;
  if (ex == emask) {
    return msp_bits_f64(sign | (UINT64_C(0x7ff) << 52) | (frac << (52 - fbits)));
  }
  if (ex == 0) {
    // subnormal: frac * 2^(1 - bias - fbits), exact (frac < 2^fbits, times a power of two)
    double v = (double)frac * msp_bits_f64((uint64_t)(1023 + 1 - bias - fbits) << 52);
    return sign ? -v : v;
  }
  return msp_bits_f64(sign | ((uint64_t)(ex - (uint32_t)bias + 1023u) << 52) |
                      (frac << (52 - fbits)));
}

// IEEE binary16: 5 exponent bits, 10 fraction bits.
MSP_HD uint16_t msp_f16_from_double(double d) {
  return msp__round_small(d, 10, 5);
}
// The widening kernels run per stored value, so it is written without branches on the value:
// the 15 magnitude bits moved to an fp32's exponent and fraction fields read 2^-112 times the
// half (normals and subnormals alike, exactly), one exact multiply by 2^112 rescales, and an
// all-ones half exponent (Inf, NaN) becomes the all-ones fp32 exponent. The same value as
// msp__widen_small(h, 10, 5) for every input, bit for bit except that a NaN may come back quieted
// (tests/test_precision.c checks all 65536 inputs). On the device the hardware widening
// (cvt.f32.f16, exact for every half) gives the same values in one instruction: the integer code
// there held CSR products with f16 values to the speed of f64 ones.
MSP_HD double msp_f16_to_double(uint16_t h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return (double)f;
#else
  const uint32_t mag = (uint32_t)(h & 0x7fffu);
  const float f = msp_bits_f32(mag << 13) * 5.192296858534828e33f; // 2^112
  const uint32_t special = (mag >= 0x7c00u) ? (0x7f800000u | (mag << 13)) : msp_f32_bits(f);
  return (double)msp_bits_f32(special | ((uint32_t)(h & 0x8000u) << 16));
#endif
}
// bfloat16: the top 16 bits of an fp32 (8 exponent bits, 7 fraction bits).
MSP_HD uint16_t msp_bf16_from_double(double d) {
  return msp__round_small(d, 7, 8);
}
MSP_HD double msp_bf16_to_double(uint16_t h) {
  return (double)msp_bits_f32((uint32_t)h << 16);
}
// fp32: the hardware conversion rounds to nearest even on host (default mode) and device.
MSP_HD float msp_f32_from_double(double d) {
  return (float)d;
}

// Unit roundoff of each storage (half an ulp relative to the value for IEEE types; for fixed
// point half a unit of the scale, see msp_fx*_from_double). 0 for f64 and for full-width CPMS.
#define MSP_U_F64 1.1102230246251565e-16             // 2^-53
#define MSP_U_F32 5.9604644775390625e-08             // 2^-24
#define MSP_U_F16 4.8828125e-04                      // 2^-11
#define MSP_U_BF16 3.90625e-03                       // 2^-8
#define MSP_F16_MIN_SUBNORMAL 5.9604644775390625e-08 // 2^-24
#define MSP_BF16_MIN_SUBNORMAL 9.183549615799121e-41 // 2^-133

// ---- scaled fixed point (fx32, fx16)
// ------------------------------------------------------------- value = q * scale with scale =
// max|v| / (2^(bits-1) - 1) over the vector (or over a block of a matrix's values), so the largest
// entry maps to the largest integer; the error of a stored value is at most scale / 2
// (Aliaga, Anzt, Grutzmacher, Quintana-Orti, Tomas, "Compressed basis GMRES": one scaling factor
// per vector keeps the representation range used). scale == 0 (a zero vector) stores exact zeros.
#define MSP_FX32_MAX 2147483647.0
#define MSP_FX16_MAX 32767.0

// The scale is kept so that qmax * scale <= absmax (no overflow to Inf for absmax near DBL_MAX)
// and never underflows to 0 for a nonzero vector (then the smallest subnormal, exact steps).
MSP_HD double msp_fx_scale(double absmax, double qmax) {
  if (!(absmax > 0)) return 0.0;
  double s = absmax / qmax;
  if (s * qmax > absmax) s = nextafter(s, 0.0);
  if (s == 0.0) s = 4.9406564584124654e-324; // 2^-1074
  return s;
}

// The one scale of a fixed-point vector from max |v| (CPU and CUDA alike): a vector holding Inf
// or NaN gets a NaN scale, so every entry reads NaN (the non-finite result stays visible instead
// of being quantised away); otherwise msp_fx_scale.
MSP_HD double msp_fx_vector_scale(double absmax, double qmax) {
  if (!(absmax <= 1.7976931348623157e308)) return msp_bits_f64(UINT64_C(0x7ff8000000000000));
  return msp_fx_scale(absmax, qmax);
}

MSP_HD double msp__fx_quantize(double v, double scale, double qmax) {
  if (!(scale > 0)) return 0.0;
  double q = rint(v / scale);
  // absmax / qmax rounded down can make the largest entry land just past qmax: clamp
  if (q > qmax) q = qmax;
  if (q < -qmax) q = -qmax;
  return q;
}
MSP_HD int32_t msp_fx32_from_double(double v, double scale) {
  return (int32_t)msp__fx_quantize(v, scale, MSP_FX32_MAX);
}
MSP_HD double msp_fx32_to_double(int32_t q, double scale) {
  return (double)q * scale;
}
MSP_HD int16_t msp_fx16_from_double(double v, double scale) {
  return (int16_t)msp__fx_quantize(v, scale, MSP_FX16_MAX);
}
MSP_HD double msp_fx16_to_double(int16_t q, double scale) {
  return (double)q * scale;
}

// ---- CPMS: segmented doubles (Grutzmacher, Cojean, Flegar, Anzt, Quintana-Orti, "Acceleration of
// PageRank with customized precision" 4.1) ---------------- A double's 64 bits are cut into S = 2
// segments of 32 bits or S = 4 segments of 16 bits; segment 0 is the most significant (sign,
// exponent, leading mantissa bits). Reading k <= S segments returns the double whose other bits are
// zero (truncation toward zero); k = S is exact.
//
// Layout: values are grouped by `bank` values; a group of G values holds S consecutive banks,
// bank s holding segment s of the group's values in order. In CPMS-i the bank is
// bank_bytes / segment bytes values (a power of two; 128 bytes: 32 values for cpms2, 64 for
// cpms4), so one group occupies exactly the bytes of its G doubles and an fp64 array converts in
// place, group by group. The last group, with m < bank values, uses banks of m segments, so the
// whole array stays exactly 8 n bytes. CPMS-s (separate arrays: all of segment 0, then all of
// segment 1, ...) is the same addressing with one group as large as the array (bank_shift = 62).
typedef struct {
  void *data;     // 8 n bytes (uint32 segments for cpms2, uint16 for cpms4)
  int64_t n;      // number of values
  int segments;   // S: 2 or 4
  int bank_shift; // log2(values per bank); MSP_CPMS_SEPARATE for CPMS-s
} msp_cpms;

#define MSP_CPMS_SEPARATE 62
#define MSP_CPMS_DEFAULT_BANK_BYTES 128

// Index (in segment units) of segment s of value i.
MSP_HD int64_t msp_cpms_index(int64_t n, int segments, int bank_shift, int64_t i, int s) {
  int64_t bank = (int64_t)1 << bank_shift;
  int64_t g0 = (i >> bank_shift) << bank_shift; // first value of i's group
  int64_t m = n - g0 < bank ? n - g0 : bank;    // values in i's group
  return g0 * segments + (int64_t)s * m + (i - g0);
}

// Read value i with its first k segments (1 <= k <= segments).
MSP_HD double msp_cpms_read(const void *data, int64_t n, int segments, int bank_shift, int64_t i,
                            int k) {
  uint64_t bits = 0;
  if (segments == 2) {
    const uint32_t *seg = (const uint32_t *)data;
    int64_t g0 = (i >> bank_shift) << bank_shift;
    int64_t m = n - g0 < ((int64_t)1 << bank_shift) ? n - g0 : ((int64_t)1 << bank_shift);
    int64_t base = g0 * 2 + (i - g0);
    bits = (uint64_t)seg[base] << 32;
    if (k > 1) bits |= (uint64_t)seg[base + m];
  } else {
    const uint16_t *seg = (const uint16_t *)data;
    int64_t g0 = (i >> bank_shift) << bank_shift;
    int64_t m = n - g0 < ((int64_t)1 << bank_shift) ? n - g0 : ((int64_t)1 << bank_shift);
    int64_t base = g0 * 4 + (i - g0);
    for (int s = 0; s < k; s++)
      bits |= (uint64_t)seg[base + s * m] << (48 - 16 * s);
  }
  return msp_bits_f64(bits);
}

// Write the first k segments of v at value i (truncating v to them); the other segments of value
// i are left as they were, so only k segments of memory traffic are spent (PageRank writes in
// its current precision). Write k = segments to store v exactly.
MSP_HD void msp_cpms_write(void *data, int64_t n, int segments, int bank_shift, int64_t i, double v,
                           int k) {
  uint64_t bits = msp_f64_bits(v);
  int64_t g0 = (i >> bank_shift) << bank_shift;
  int64_t m = n - g0 < ((int64_t)1 << bank_shift) ? n - g0 : ((int64_t)1 << bank_shift);
  if (segments == 2) {
    uint32_t *seg = (uint32_t *)data;
    int64_t base = g0 * 2 + (i - g0);
    seg[base] = (uint32_t)(bits >> 32);
    if (k > 1) seg[base + m] = (uint32_t)bits;
  } else {
    uint16_t *seg = (uint16_t *)data;
    int64_t base = g0 * 4 + (i - g0);
    for (int s = 0; s < k; s++)
      seg[base + s * m] = (uint16_t)(bits >> (48 - 16 * s));
  }
}

// The double that a read of k segments returns for v (the truncation, without storing).
MSP_HD double msp_cpms_truncate(double v, int segments, int k) {
  int keep = k * (64 / segments);
  if (keep >= 64) return v;
  uint64_t mask = ~((UINT64_C(1) << (64 - keep)) - 1);
  return msp_bits_f64(msp_f64_bits(v) & mask);
}

// ---- one accessor for every precision
// ------------------------------------------------------------ A view of a stored value array. For
// fixed point, scales[i >> scale_shift] scales value i: a vector has one scale (scale_shift =
// MSP_CPMS_SEPARATE, i.e. scales[0] for every i); a matrix's value array has one scale per
// MSP_FX_BLOCK consecutive stored values. For CPMS, `read_segments` is the number of segments a
// load reads (the view's property: one stored array serves every read precision).
typedef struct {
  void *data;
  int64_t n;
  msp_precision prec;
  int scale_shift;
  const double *scales;
  int bank_shift;    // CPMS
  int read_segments; // CPMS: 1..S
} msp_acc;

#define MSP_FX_BLOCK_SHIFT 8 // 256 values per scale in a matrix's value array

// Load value i as a double. With a constant `prec` (templates, or inlined calls with a literal)
// the switch folds away.
MSP_HD double msp_acc_load_p(msp_precision prec, const msp_acc *a, int64_t i) {
  switch (prec) {
  case MSP_PRECISION_F64:
    return ((const double *)a->data)[i];
  case MSP_PRECISION_F32:
    return (double)((const float *)a->data)[i];
  case MSP_PRECISION_F16:
    return msp_f16_to_double(((const uint16_t *)a->data)[i]);
  case MSP_PRECISION_BF16:
    return msp_bf16_to_double(((const uint16_t *)a->data)[i]);
  case MSP_PRECISION_FX32:
    return msp_fx32_to_double(((const int32_t *)a->data)[i], a->scales[i >> a->scale_shift]);
  case MSP_PRECISION_FX16:
    return msp_fx16_to_double(((const int16_t *)a->data)[i], a->scales[i >> a->scale_shift]);
  case MSP_PRECISION_CPMS2:
    return msp_cpms_read(a->data, a->n, 2, a->bank_shift, i, a->read_segments);
  case MSP_PRECISION_CPMS4:
    return msp_cpms_read(a->data, a->n, 4, a->bank_shift, i, a->read_segments);
  default:
    return 0.0;
  }
}
MSP_HD double msp_acc_load(const msp_acc *a, int64_t i) {
  return msp_acc_load_p(a->prec, a, i);
}

// Store v at i, rounding as the precision does. Fixed point uses the existing scale (values
// beyond the scale's range saturate at +-qmax * scale); CPMS writes read_segments segments.
MSP_HD void msp_acc_store_p(msp_precision prec, const msp_acc *a, int64_t i, double v) {
  switch (prec) {
  case MSP_PRECISION_F64:
    ((double *)a->data)[i] = v;
    break;
  case MSP_PRECISION_F32:
    ((float *)a->data)[i] = msp_f32_from_double(v);
    break;
  case MSP_PRECISION_F16:
    ((uint16_t *)a->data)[i] = msp_f16_from_double(v);
    break;
  case MSP_PRECISION_BF16:
    ((uint16_t *)a->data)[i] = msp_bf16_from_double(v);
    break;
  case MSP_PRECISION_FX32:
    ((int32_t *)a->data)[i] = msp_fx32_from_double(v, a->scales[i >> a->scale_shift]);
    break;
  case MSP_PRECISION_FX16:
    ((int16_t *)a->data)[i] = msp_fx16_from_double(v, a->scales[i >> a->scale_shift]);
    break;
  case MSP_PRECISION_CPMS2:
    msp_cpms_write(a->data, a->n, 2, a->bank_shift, i, v, a->read_segments);
    break;
  case MSP_PRECISION_CPMS4:
    msp_cpms_write(a->data, a->n, 4, a->bank_shift, i, v, a->read_segments);
    break;
  default:
    break;
  }
}
MSP_HD void msp_acc_store(const msp_acc *a, int64_t i, double v) {
  msp_acc_store_p(a->prec, a, i, v);
}

// ---- stores of results into vectors -------------------------------------------------------------
// A result written into a vector of a reduced precision is rounded by the store, and the store
// says what the precision could not hold so that the caller counts it (reported as MSP_ERR_RANGE
// by the next read of the vector on the host, both counts by msp_vector_range_info):
//  - MSP_STORE_OVERFLOW: a finite result beyond the precision's largest finite value. It is
//    never turned into Inf: it is stored as that largest value with its sign.
//  - MSP_STORE_FLUSHED: a nonzero result that the precision rounds to zero (below half the
//    smallest subnormal; fixed point: below half a unit of its block's scale). It is stored as 0,
//    the nearest value the precision holds, and counted.
// Inf and NaN results stay Inf and NaN (they are not a range problem of the storage). Fixed-point
// blocks set their scales from the block's results (msp_fx_block_scale) and count flushes with
// msp_fx_store_flushed; msp_acc_store_sat covers the other precisions.
enum { MSP_STORE_OK = 0, MSP_STORE_OVERFLOW = 1, MSP_STORE_FLUSHED = 2 };
#define MSP_F32_MAX 3.4028234663852886e38
#define MSP_F16_MAX 65504.0
#define MSP_BF16_MAX 3.3895313892515355e38
// The outcome of storing v whose stored magnitude bits are `mag` (sign cleared), `inf` the bits
// of Inf: an overflow when a finite v became Inf, a flush when a nonzero finite v became 0.
MSP_HD int msp__store_outcome(double v, uint32_t mag, uint32_t inf) {
  if (v - v != 0.0) return MSP_STORE_OK; // Inf or NaN: not a question of range
  if (mag == inf) return MSP_STORE_OVERFLOW;
  if (mag == 0 && v != 0.0) return MSP_STORE_FLUSHED;
  return MSP_STORE_OK;
}
MSP_HD int msp_acc_store_sat_p(msp_precision prec, const msp_acc *a, int64_t i, double v) {
  switch (prec) {
  case MSP_PRECISION_F32: {
    float f = msp_f32_from_double(v);
    const int r = msp__store_outcome(v, msp_f32_bits(f) & 0x7fffffffu, 0x7f800000u);
    if (r == MSP_STORE_OVERFLOW) f = msp_bits_f32((msp_f32_bits(f) & 0x80000000u) | 0x7f7fffffu);
    ((float *)a->data)[i] = f;
    return r;
  }
  case MSP_PRECISION_F16: {
    uint16_t h = msp_f16_from_double(v);
    const int r = msp__store_outcome(v, h & 0x7fffu, 0x7c00u);
    if (r == MSP_STORE_OVERFLOW) h = (uint16_t)((h & 0x8000u) | 0x7bffu);
    ((uint16_t *)a->data)[i] = h;
    return r;
  }
  case MSP_PRECISION_BF16: {
    uint16_t h = msp_bf16_from_double(v);
    const int r = msp__store_outcome(v, h & 0x7fffu, 0x7f80u);
    if (r == MSP_STORE_OVERFLOW) h = (uint16_t)((h & 0x8000u) | 0x7f7fu);
    ((uint16_t *)a->data)[i] = h;
    return r;
  }
  default:
    msp_acc_store_p(prec, a, i, v);
    return MSP_STORE_OK;
  }
}
// A fixed-point store of v with its block's scale that gave the integer q: MSP_STORE_FLUSHED when
// a nonzero v became 0 under a usable scale (a NaN scale, from a block holding Inf or NaN, reads
// NaN: not a flush).
MSP_HD int msp_fx_store_flushed(double v, double q, double scale) {
  return q == 0.0 && v != 0.0 && scale > 0.0 ? MSP_STORE_FLUSHED : MSP_STORE_OK;
}
MSP_HD int msp_acc_store_sat(const msp_acc *a, int64_t i, double v) {
  return msp_acc_store_sat_p(a->prec, a, i, v);
}

// Fixed-point vectors: one scale per block of MSP_VEC_FX_BLOCK consecutive values (a warp's
// worth), so that a kernel writing a vector sets each block's scale from that block's results in
// the same pass (a warp-wide max), instead of a second pass over the whole vector for one scale.
#define MSP_VEC_FX_SHIFT 5
#define MSP_VEC_FX_BLOCK 32
MSP_HD int msp_prec_is_fixed(msp_precision p) {
  return p == MSP_PRECISION_FX32 || p == MSP_PRECISION_FX16;
}
MSP_HD double msp_prec_qmax(msp_precision p) {
  return p == MSP_PRECISION_FX32 ? MSP_FX32_MAX : MSP_FX16_MAX;
}
// max(m, |v|) that keeps a NaN once seen (a block holding NaN or Inf gets a NaN scale, so every
// entry of the block reads NaN: the non-finite result stays visible, see msp_fx_vector_scale).
MSP_HD double msp_absmax_step(double m, double v) {
  const double a = fabs(v);
  return (a > m || a != a) && m == m ? a : m;
}
// The scale of a block whose results have max |v| = absmax.
MSP_HD double msp_fx_block_scale(msp_precision p, double absmax) {
  return msp_fx_vector_scale(absmax, msp_prec_qmax(p));
}

// ---- host helpers (src/core/precision.c) --------------------------------------------------------
// Bytes per stored value (from MSP_PRECISION_LIST); 0 for an unknown precision.
size_t msp__prec_bytes(msp_precision p);
// Segments of a CPMS precision (2 or 4), 1 for the others.
int msp__prec_segments(msp_precision p);
// Unit roundoff of an IEEE storage relative to |v| (f64, f32, f16, bf16; 0 for CPMS read in
// full), or -1 where the bound is relative to the scale (fixed point).
double msp__prec_unit_roundoff(msp_precision p);

// An encoded array: the values, and for fixed point one scale per (1 << scale_shift) values.
// Owned; free with msp__prec_array_free.
typedef struct msp__prec_array_s {
  msp_precision prec;
  int64_t n;
  void *data;     // n * msp__prec_bytes(prec) bytes (at least 1)
  double *scales; // fixed point: ceil(n / 2^scale_shift) entries (at least 1); NULL otherwise
  int64_t nscales;
  int scale_shift;
  int bank_shift; // CPMS layout (MSP_CPMS_SEPARATE for CPMS-s)
} msp__prec_array;

// Encode n doubles. scale_shift: fixed-point scale granularity (MSP_CPMS_SEPARATE: one scale for
// the whole array; MSP_FX_BLOCK_SHIFT for matrices); bank_bytes: CPMS-i bank size (a power of two
// between the segment size and 4096), or 0 for CPMS-s. MSP_ERR_NONFINITE for Inf/NaN in fixed
// point (no scale represents them), MSP_ERR_INVALID_ARGUMENT, MSP_ERR_OUT_OF_MEMORY.
msp_status msp__prec_encode(msp_precision prec, const double *src, int64_t n, int scale_shift,
                            int bank_bytes, msp__prec_array *out);
// Decode into dst (n doubles); CPMS reads `segments` segments (0: all).
void msp__prec_decode(const msp__prec_array *a, int segments, double *dst);
void msp__prec_array_free(msp__prec_array *a);
// A load view of an encoded array (CPMS reads `segments`, 0: all).
msp_acc msp__prec_view(const msp__prec_array *a, int segments);

// Fixed-point scales: scales[b] = max |src[j]| / qmax over block b of (1 << shift) values.
void msp__fx_scales(const double *src, int64_t n, int shift, double qmax, double *scales);

// Range honesty (STYLE.md 5; msp_range_policy in mixsparse.h). The range of a precision: the
// largest finite stored magnitude and the smallest nonzero one; for fixed point in units of the
// block's scale (qmax and 1). f64 and CPMS: DBL_MAX and the smallest subnormal double.
void msp__prec_limits(msp_precision p, double *largest, double *smallest);
// Scan n values as they would be stored in p: a finite value that the store turns into Inf
// (*overflow counts them) or a nonzero that it turns into 0 (*underflow). Fixed point takes one
// scale per block of (1 << scale_shift) values from the block's max |v| (MSP_VEC_FX_SHIFT for
// vectors, MSP_FX_BLOCK_SHIFT for a matrix's value array, MSP_CPMS_SEPARATE for one scale); the
// others ignore scale_shift. f64 and CPMS hold every double: nothing offends. Inf and NaN are not
// counted (not a question of range). *first_bad is the index of the first offending value, -1
// when none. Any out pointer may be NULL. policy (msp_range_policy): MSP_RANGE_ERROR returns
// MSP_ERR_RANGE when a value offends, with a message naming the first ("value 7 (0-based) =
// 1e+05 overflows f16 (...)", meant to follow the caller's own "function: " prefix) and the
// counts; SATURATE and ALLOW only count (the values are not changed: see msp__range_saturate).
// MSP_ERR_INVALID_ARGUMENT for an unknown precision or policy, n < 0, NULL v with n > 0.
// What p stores for v and reads back (all CPMS segments), with `scale` the fixed-point scale of
// v's block (unused otherwise): one value through the precision's own store and load.
double msp__prec_stored(msp_precision p, double v, double scale);
msp_status msp__range_scan(msp_precision p, const double *v, int64_t n, int scale_shift, int policy,
                           int64_t *first_bad, int64_t *overflow, int64_t *underflow);
// dst = src (n values; dst may be src) with every value that msp__range_scan counts replaced by
// the nearest one that p holds with the same sign: an overflow by the largest finite value, a
// nonzero that would be stored as 0 by the smallest nonzero (fixed point: one unit of the block's
// scale, which saturating leaves unchanged). Storing dst in p then gives neither Inf nor 0.
void msp__range_saturate(msp_precision p, const double *src, int64_t n, int scale_shift,
                         double *dst);

// CPMS bank shift for a bank of bank_bytes bytes (log2 of values per bank), or -1 when
// bank_bytes is not a power of two between the segment size and 4096.
int msp__cpms_bank_shift(int segments, int bank_bytes);
// In-place conversion of an fp64 array of n values into CPMS-i (segments 2 or 4) and back.
// Works group by group (bank values at a time) with a stack buffer, in parallel over groups.
msp_status msp__cpms_from_f64_inplace(double *data, int64_t n, int segments, int bank_bytes);
msp_status msp__cpms_to_f64_inplace(void *data, int64_t n, int segments, int bank_bytes);
// CPMS-s (separate segment arrays): not in place; dst has 8 n bytes.
void msp__cpms_s_encode(const double *src, int64_t n, int segments, void *dst);

#ifdef __cplusplus
}
#endif
#endif

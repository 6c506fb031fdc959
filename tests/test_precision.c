// test_precision.c: storage-precision accessors: round trips, rounding, fixed-point scales, CPMS.
#include "testlib.h"

#include "formats.h"
#include "internal.h"
#include "precision.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t bits(double d) {
  return msp_f64_bits(d);
}

// A random double with magnitude 2^e, e uniform in [lo, hi), random sign and mantissa.
static double rand_mag(msp_rng *r, int lo, int hi) {
  double m = 1.0 + msp_rng_uniform(r);
  int e = lo + (int)msp_rng_range(r, hi - lo);
  double v = ldexp(m, e);
  return (msp_rng_next(r) & 1) ? -v : v;
}

// ---- f16 ---------------------------------------------------------------------------------------
static void test_f16(void) {
  // Every non-NaN half widens exactly and narrows back to the same bits.
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t ex = (h >> 10) & 0x1f;
    if (ex == 0x1f && (h & 0x3ff)) {
      double v = msp_f16_to_double((uint16_t)h);
      if (!isnan(v)) bad++;
      if (!isnan(msp_f16_to_double(msp_f16_from_double(v)))) bad++;
      continue;
    }
    double v = msp_f16_to_double((uint16_t)h);
    if (msp_f16_from_double(v) != h) bad++;
    // the branch-free widening against the general one
    if (msp_f64_bits(v) != msp_f64_bits(msp__widen_small((uint16_t)h, 10, 5))) bad++;
  }
  CHECK(bad == 0, "f16: %d of 65536 patterns do not round trip", bad);
  // Known values.
  CHECK(msp_f16_to_double(0x3c00) == 1.0, "f16 0x3c00 != 1");
  CHECK(msp_f16_to_double(0x7bff) == 65504.0, "f16 max != 65504");
  CHECK(msp_f16_to_double(0x0001) == ldexp(1.0, -24), "f16 min subnormal != 2^-24");
  CHECK(msp_f16_to_double(0x0400) == ldexp(1.0, -14), "f16 min normal != 2^-14");
  CHECK(msp_f16_to_double(0x03ff) == ldexp(1023.0, -24), "f16 max subnormal");
  CHECK(msp_f16_to_double(0xc000) == -2.0, "f16 0xc000 != -2");
  CHECK(isinf(msp_f16_to_double(0x7c00)) && msp_f16_to_double(0x7c00) > 0, "f16 +Inf");
  // Overflow: 65504 is the largest; 65520 is the tie between 65504 (odd) and 65536 (even: Inf).
  CHECK(msp_f16_from_double(65504.0) == 0x7bff, "65504");
  CHECK(msp_f16_from_double(65519.99) == 0x7bff, "65519.99 rounds down to 65504");
  CHECK(msp_f16_from_double(65520.0) == 0x7c00, "65520 (tie) rounds to Inf");
  CHECK(msp_f16_from_double(1e6) == 0x7c00, "1e6 -> Inf");
  CHECK(msp_f16_from_double(-1e300) == 0xfc00, "-1e300 -> -Inf");
  CHECK(msp_f16_from_double(INFINITY) == 0x7c00, "Inf");
  CHECK(msp_f16_from_double(-INFINITY) == 0xfc00, "-Inf");
  CHECK(isnan(msp_f16_to_double(msp_f16_from_double(NAN))), "NaN stays NaN");
  // Subnormals and underflow.
  CHECK(msp_f16_from_double(ldexp(1.0, -24)) == 0x0001, "2^-24");
  CHECK(msp_f16_from_double(ldexp(1.0, -25)) == 0x0000, "2^-25 ties to even 0");
  CHECK(msp_f16_from_double(ldexp(1.0, -25) * (1 + 1e-9)) == 0x0001, "just above 2^-25");
  CHECK(msp_f16_from_double(ldexp(3.0, -25)) == 0x0002, "1.5 * 2^-24 ties to even 2");
  CHECK(msp_f16_from_double(ldexp(5.0, -25)) == 0x0002, "2.5 * 2^-24 ties to even 2");
  CHECK(msp_f16_from_double(ldexp(1.0, -14) - ldexp(1.0, -25)) == 0x0400,
        "max subnormal + half ulp rounds up to min normal");
  CHECK(msp_f16_from_double(1e-300) == 0x0000, "1e-300 -> 0");
  CHECK(msp_f16_from_double(-1e-300) == 0x8000, "-1e-300 -> -0");
  CHECK(msp_f16_from_double(DBL_TRUE_MIN) == 0x0000, "double subnormal -> 0");
  CHECK(msp_f16_from_double(-0.0) == 0x8000, "-0 keeps its sign");
  // Normal ties to even, and no double rounding: 1 + 2^-11 + 2^-40 is above the tie.
  CHECK(msp_f16_from_double(1.0 + ldexp(1.0, -11)) == 0x3c00, "1 + half ulp ties to 1");
  CHECK(msp_f16_from_double(1.0 + ldexp(3.0, -11)) == 0x3c02, "1 + 1.5 ulp ties to even");
  CHECK(msp_f16_from_double(1.0 + ldexp(1.0, -11) + ldexp(1.0, -40)) == 0x3c01,
        "just above the tie rounds up");
  // Random values: nearest (error within u16 * |v| in the normal range, 2^-25 below it).
  msp_rng r = {11};
  int64_t out = 0;
  for (int t = 0; t < 200000; t++) {
    double v = rand_mag(&r, -30, 15); // below 2^16: the overflow cases are checked above
    double got = msp_f16_to_double(msp_f16_from_double(v));
    double err = fabs(got - v);
    double bound = fabs(v) >= ldexp(1.0, -14) ? MSP_U_F16 * fabs(v) : ldexp(1.0, -25);
    if (!(err <= bound)) {
      if (out < 3) fprintf(stderr, "f16: v=%.17g got %.17g\n", v, got);
      out++;
    }
#ifdef __FLT16_MAX__
    // Independent oracle where the compiler has _Float16 (direct, correctly rounded).
    double hw = (double)(_Float16)v;
    if (bits(hw) != bits(got)) {
      if (out < 3) fprintf(stderr, "f16: v=%.17g got %.17g, _Float16 %.17g\n", v, got, hw);
      out++;
    }
#endif
  }
  CHECK(out == 0, "f16: %lld random values off", (long long)out);
}

// ---- bf16 --------------------------------------------------------------------------------------
static void test_bf16(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t ex = (h >> 7) & 0xff;
    double v = msp_bf16_to_double((uint16_t)h);
    if (ex == 0xff && (h & 0x7f)) {
      if (!isnan(v) || !isnan(msp_bf16_to_double(msp_bf16_from_double(v)))) bad++;
      continue;
    }
    if (msp_bf16_from_double(v) != h) bad++;
  }
  CHECK(bad == 0, "bf16: %d of 65536 patterns do not round trip", bad);
  CHECK(msp_bf16_from_double(1.0) == 0x3f80, "bf16 1.0");
  // Ties to even: 1 + 2^-8 is halfway between 1 (even) and 1 + 2^-7 (odd).
  CHECK(msp_bf16_from_double(1.0 + ldexp(1.0, -8)) == 0x3f80, "1 + half ulp ties to 1");
  CHECK(msp_bf16_from_double(1.0 + ldexp(3.0, -8)) == 0x3f82, "1 + 1.5 ulp ties up to even");
  // Direct rounding from the double: through float, 1 + 2^-8 + 2^-40 would become the tie
  // 1 + 2^-8 and then round to 1.0.
  CHECK(msp_bf16_from_double(1.0 + ldexp(1.0, -8) + ldexp(1.0, -40)) == 0x3f81,
        "no double rounding through float");
  CHECK(msp_bf16_from_double(-2.0) == 0xc000, "bf16 -2");
  CHECK(msp_bf16_from_double(1e39) == 0x7f80, "1e39 -> Inf (above FLT_MAX range)");
  CHECK(msp_bf16_from_double(3.3895313892515355e38) == 0x7f7f, "bf16 max");
  CHECK(msp_bf16_from_double(ldexp(1.0, -133)) == 0x0001, "bf16 min subnormal");
  CHECK(msp_bf16_from_double(ldexp(1.0, -134)) == 0x0000, "half the min subnormal ties to 0");
  CHECK(isnan(msp_bf16_to_double(msp_bf16_from_double(NAN))), "bf16 NaN");
  msp_rng r = {12};
  int64_t out = 0;
  for (int t = 0; t < 200000; t++) {
    double v = rand_mag(&r, -126, 127);
    double got = msp_bf16_to_double(msp_bf16_from_double(v));
    if (!(fabs(got - v) <= MSP_U_BF16 * fabs(v))) {
      if (out < 3) fprintf(stderr, "bf16: v=%.17g got %.17g\n", v, got);
      out++;
    }
  }
  CHECK(out == 0, "bf16: %lld random values beyond u_bf16 |v|", (long long)out);
}

// ---- f32 ---------------------------------------------------------------------------------------
static void test_f32(void) {
  msp_rng r = {13};
  int64_t out = 0;
  for (int t = 0; t < 200000; t++) {
    double v = rand_mag(&r, -126, 127);
    double got = (double)msp_f32_from_double(v);
    if (!(fabs(got - v) <= MSP_U_F32 * fabs(v))) out++;
    double exact = (double)(float)v; // representable: round trip exact
    if ((double)msp_f32_from_double(exact) != exact) out++;
  }
  CHECK(out == 0, "f32: %lld random values off", (long long)out);
  CHECK(isinf(msp_f32_from_double(1e39)), "f32 overflow to Inf");
}

// ---- fixed point -------------------------------------------------------------------------------
// |v - load| <= scale * (1/2 + 2^-20): half a unit, plus the two fp64 roundings (v / scale and
// q * scale), each at most 2^31 * 2^-53 units.
static int64_t fx_check(msp_precision p, const double *v, int64_t n, const char *label) {
  msp__prec_array a;
  msp_status st = msp__prec_encode(p, v, n, MSP_CPMS_SEPARATE, 0, &a);
  CHECK(st == MSP_SUCCESS, "%s: encode failed: %s", label, msp_last_error());
  if (st != MSP_SUCCESS) return 1;
  double *got = malloc((size_t)(n > 0 ? n : 1) * sizeof *got);
  if (!got) {
    msp__prec_array_free(&a);
    CHECK(0, "out of memory");
    return 1;
  }
  msp__prec_decode(&a, 0, got);
  double qmax = p == MSP_PRECISION_FX32 ? MSP_FX32_MAX : MSP_FX16_MAX;
  double mx = 0;
  for (int64_t i = 0; i < n; i++)
    mx = fmax(mx, fabs(v[i]));
  double scale = a.scales[0];
  CHECK(a.nscales == 1, "%s: one scale per vector, got %lld", label, (long long)a.nscales);
  CHECK(scale * qmax <= mx || scale == DBL_TRUE_MIN, "%s: scale * qmax = %g exceeds max|v| = %g",
        label, scale * qmax, mx);
  CHECK(mx == 0 ? scale == 0 : scale >= (mx / qmax) * (1 - 1e-15) || scale == DBL_TRUE_MIN,
        "%s: scale %g for max|v| %g", label, scale, mx);
  int64_t out = 0;
  for (int64_t i = 0; i < n; i++) {
    double err = fabs(got[i] - v[i]);
    if (!(err <= scale * (0.5 + ldexp(1.0, -20))) || !isfinite(got[i])) {
      if (out < 3)
        fprintf(stderr, "%s: v[%lld]=%.17g got %.17g scale %g\n", label, (long long)i, v[i], got[i],
                scale);
      out++;
    }
  }
  CHECK(out == 0, "%s: %lld values beyond half a unit of the scale", label, (long long)out);
  free(got);
  msp__prec_array_free(&a);
  return out;
}

static void test_fixed(void) {
  msp_precision ps[2] = {MSP_PRECISION_FX32, MSP_PRECISION_FX16};
  for (int k = 0; k < 2; k++) {
    msp_precision p = ps[k];
    char label[64];
    double zeros[5] = {0, 0, 0, -0.0, 0};
    snprintf(label, sizeof label, "%s zero vector", msp_precision_name(p));
    fx_check(p, zeros, 5, label);
    {
      msp__prec_array a;
      CHECK_OK(msp__prec_encode(p, zeros, 5, MSP_CPMS_SEPARATE, 0, &a));
      double got[5];
      msp__prec_decode(&a, 0, got);
      int nz = 0;
      for (int i = 0; i < 5; i++)
        nz += got[i] != 0.0;
      CHECK(a.scales[0] == 0.0 && nz == 0, "%s: zero vector gives scale %g and %d nonzeros",
            msp_precision_name(p), a.scales[0], nz);
      msp__prec_array_free(&a);
    }
    double huge[6] = {1e300, 1.0, -1.0, 1e-5, -1e300 / 3, 0};
    snprintf(label, sizeof label, "%s one huge entry", msp_precision_name(p));
    fx_check(p, huge, 6, label);
    double dmax[3] = {DBL_MAX, -DBL_MAX, 1.0};
    snprintf(label, sizeof label, "%s DBL_MAX", msp_precision_name(p));
    fx_check(p, dmax, 3, label);
    double tiny[3] = {DBL_TRUE_MIN, 3 * DBL_TRUE_MIN, -1e-320};
    snprintf(label, sizeof label, "%s subnormal entries", msp_precision_name(p));
    fx_check(p, tiny, 3, label);
    // The largest entry maps to +-qmax exactly.
    {
      msp__prec_array a;
      double v[3] = {-7.25, 3.0, 0.5};
      CHECK_OK(msp__prec_encode(p, v, 3, MSP_CPMS_SEPARATE, 0, &a));
      long q0 =
          p == MSP_PRECISION_FX32 ? (long)((int32_t *)a.data)[0] : (long)((int16_t *)a.data)[0];
      long want = p == MSP_PRECISION_FX32 ? -2147483647L : -32767L;
      CHECK(q0 == want, "%s: max entry stored as %ld, expected %ld", msp_precision_name(p), q0,
            want);
      msp__prec_array_free(&a);
    }
    // Random vectors of several lengths and ranges.
    msp_rng r = {21 + (uint64_t)k};
    for (int t = 0; t < 20; t++) {
      int64_t n = 1 + msp_rng_range(&r, 3000);
      double *v = malloc((size_t)n * sizeof *v);
      if (!v) {
        CHECK(0, "out of memory");
        return;
      }
      int lo = -40 + (int)msp_rng_range(&r, 40);
      for (int64_t i = 0; i < n; i++)
        v[i] = rand_mag(&r, lo, lo + 1 + (int)msp_rng_range(&r, 30));
      snprintf(label, sizeof label, "%s random n=%lld", msp_precision_name(p), (long long)n);
      fx_check(p, v, n, label);
      free(v);
    }
    // Non-finite values cannot be held in fixed point.
    double bad[2] = {1.0, INFINITY};
    msp__prec_array a;
    CHECK_STATUS(msp__prec_encode(p, bad, 2, MSP_CPMS_SEPARATE, 0, &a), MSP_ERR_NONFINITE);
  }
  // Per-block scales (matrices): every block has its own max.
  {
    int64_t n = 1000;
    double *v = malloc((size_t)n * sizeof *v);
    double *got = malloc((size_t)n * sizeof *got);
    if (!v || !got) {
      free(v);
      free(got);
      CHECK(0, "out of memory");
      return;
    }
    msp_rng r = {31};
    for (int64_t i = 0; i < n; i++)
      v[i] = rand_mag(&r, (int)(i / 256) * 20 - 30, (int)(i / 256) * 20 - 25);
    msp__prec_array a;
    CHECK_OK(msp__prec_encode(MSP_PRECISION_FX16, v, n, MSP_FX_BLOCK_SHIFT, 0, &a));
    CHECK(a.nscales == 4, "1000 values in blocks of 256: %lld scales", (long long)a.nscales);
    msp__prec_decode(&a, 0, got);
    int64_t out = 0;
    for (int64_t i = 0; i < n; i++) {
      double s = a.scales[i >> MSP_FX_BLOCK_SHIFT];
      if (!(fabs(got[i] - v[i]) <= s * (0.5 + ldexp(1.0, -20)))) out++;
    }
    CHECK(out == 0, "fx16 per-block scales: %lld values off", (long long)out);
    msp__prec_array_free(&a);
    free(v);
    free(got);
  }
}

// ---- CPMS --------------------------------------------------------------------------------------
static void test_cpms_layouts(void) {
  int64_t sizes[] = {0, 1, 31, 32, 33, 64, 65, 100, 1000, 2049, 5000};
  int banks[] = {0, 128, 8, 64, 256, 4096}; // 0: CPMS-s
  msp_rng r = {41};
  for (int segs = 2; segs <= 4; segs += 2) {
    msp_precision p = segs == 2 ? MSP_PRECISION_CPMS2 : MSP_PRECISION_CPMS4;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
      int64_t n = sizes[si];
      double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
      double *w = malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
      if (!v || !w) {
        free(v);
        free(w);
        CHECK(0, "out of memory");
        return;
      }
      // random bit patterns: every sign, exponent, NaN payload and subnormal
      for (int64_t i = 0; i < n; i++)
        v[i] = msp_bits_f64(msp_rng_next(&r));
      for (size_t bi = 0; bi < sizeof banks / sizeof *banks; bi++) {
        int bank = banks[bi];
        if (bank != 0 && bank < 8 / segs) continue;
        msp__prec_array a;
        msp_status st = msp__prec_encode(p, v, n, MSP_CPMS_SEPARATE, bank, &a);
        CHECK(st == MSP_SUCCESS, "cpms%d bank %d n %lld: %s", segs, bank, (long long)n,
              msp_last_error());
        if (st != MSP_SUCCESS) continue;
        int64_t bad = 0;
        for (int k = 1; k <= segs; k++) {
          msp_acc acc = msp__prec_view(&a, k);
          uint64_t mask = k == segs ? ~UINT64_C(0) : ~((UINT64_C(1) << (64 - 64 / segs * k)) - 1);
          for (int64_t i = 0; i < n; i++) {
            uint64_t got = bits(msp_acc_load(&acc, i));
            if (got != (bits(v[i]) & mask)) bad++;
            if (got != bits(msp_cpms_truncate(v[i], segs, k))) bad++;
          }
        }
        CHECK(bad == 0, "cpms%d bank %d n %lld: %lld reads not bit exact", segs, bank, (long long)n,
              (long long)bad);
        if (bank != 0) {
          // In-place conversion gives the same bytes, and its inverse the original bits.
          memcpy(w, v, (size_t)n * 8);
          CHECK_OK(msp__cpms_from_f64_inplace(w, n, segs, bank));
          CHECK(n == 0 || memcmp(w, a.data, (size_t)n * 8) == 0,
                "cpms%d bank %d n %lld: in-place bytes differ from the encoder's", segs, bank,
                (long long)n);
          CHECK_OK(msp__cpms_to_f64_inplace(w, n, segs, bank));
          CHECK(n == 0 || memcmp(w, v, (size_t)n * 8) == 0,
                "cpms%d bank %d n %lld: in-place round trip not exact", segs, bank, (long long)n);
        }
        msp__prec_array_free(&a);
      }
      free(v);
      free(w);
    }
  }
  // The CPMS-i layout by hand (paper Fig. 2, left): 2 segments, 128-byte banks: 32 heads, then
  // 32 tails; the last group of 8 values uses banks of 8.
  {
    int64_t n = 40;
    double v[40];
    for (int i = 0; i < n; i++)
      v[i] = 1.0 + i * 0.1;
    CHECK_OK(msp__cpms_from_f64_inplace(v, n, 2, 128));
    uint32_t seg[80];
    memcpy(seg, v, sizeof seg);
    int bad = 0;
    for (int i = 0; i < 32; i++) {
      uint64_t b = bits(1.0 + i * 0.1);
      bad += seg[i] != (uint32_t)(b >> 32);
      bad += seg[32 + i] != (uint32_t)b;
    }
    for (int i = 32; i < 40; i++) {
      uint64_t b = bits(1.0 + i * 0.1);
      bad += seg[64 + (i - 32)] != (uint32_t)(b >> 32);
      bad += seg[72 + (i - 32)] != (uint32_t)b;
    }
    CHECK(bad == 0, "CPMS-i 2x32 layout: %d segments misplaced", bad);
  }
  // CPMS-s by hand: 4 segments, all heads first.
  {
    double v[3] = {1.5, -2.25, 3.125e-300};
    uint16_t seg[12];
    msp__cpms_s_encode(v, 3, 4, seg);
    int bad = 0;
    for (int i = 0; i < 3; i++) {
      for (int s = 0; s < 4; s++)
        bad += seg[s * 3 + i] != (uint16_t)(bits(v[i]) >> (48 - 16 * s));
    }
    CHECK(bad == 0, "CPMS-s 4x16 layout: %d segments misplaced", bad);
  }
  // A write of k segments truncates and leaves the other segments alone.
  {
    uint32_t seg[4] = {0, 0, 0xdeadbeef, 0xdeadbeef};
    msp_cpms_write(seg, 2, 2, MSP_CPMS_SEPARATE, 0, 3.141592653589793, 1);
    CHECK(seg[2] == 0xdeadbeef, "write of 1 of 2 segments touched the tail");
    CHECK(seg[0] == (uint32_t)(bits(3.141592653589793) >> 32), "head written");
    seg[2] = 0;
    CHECK(msp_cpms_read(seg, 2, 2, MSP_CPMS_SEPARATE, 0, 2) ==
              msp_cpms_truncate(3.141592653589793, 2, 1),
          "truncated value read back");
  }
  // Bad bank sizes are refused.
  {
    double v[4] = {1, 2, 3, 4};
    CHECK_STATUS(msp__cpms_from_f64_inplace(v, 4, 2, 96), MSP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(msp__cpms_from_f64_inplace(v, 4, 2, 2), MSP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(msp__cpms_from_f64_inplace(v, 4, 3, 128), MSP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(msp__cpms_from_f64_inplace(v, 4, 2, 8192), MSP_ERR_INVALID_ARGUMENT);
  }
}

// ---- every precision through the generic accessor
// ------------------------------------------------
static void test_all_precisions(void) {
  msp_rng r = {51};
  int64_t n = 4097;
  double *v = malloc((size_t)n * sizeof *v);
  double *got = malloc((size_t)n * sizeof *got);
  if (!v || !got) {
    free(v);
    free(got);
    CHECK(0, "out of memory");
    return;
  }
  // magnitudes within every type's normal range (f16: 2^-14 .. 2^15)
  for (int64_t i = 0; i < n; i++)
    v[i] = rand_mag(&r, -12, 14);
#define MSP_TEST_PREC_(name, tag, bytes)                                                           \
  do {                                                                                             \
    msp_precision p = MSP_PRECISION_##name;                                                        \
    CHECK(msp__prec_bytes(p) == (bytes), "%s: %zu bytes", tag, msp__prec_bytes(p));                \
    msp__prec_array a;                                                                             \
    msp_status st_enc = msp__prec_encode(p, v, n, MSP_CPMS_SEPARATE, 128, &a);                     \
    CHECK(st_enc == MSP_SUCCESS, "%s: encode: %s", tag, msp_last_error());                         \
    if (st_enc == MSP_SUCCESS) {                                                                   \
      int segs = msp__prec_segments(p);                                                            \
      for (int k = 1; k <= segs; k++) {                                                            \
        msp__prec_decode(&a, k, got);                                                              \
        double u = msp__prec_unit_roundoff(p);                                                     \
        /* CPMS read of k segments keeps k*64/S - 12 mantissa bits: truncation error below */      \
        /* 2^-(kept bits) relative */                                                              \
        if (segs > 1) u = k == segs ? 0.0 : ldexp(1.0, -(k * 64 / segs - 12));                     \
        int64_t out = 0;                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
          double err = fabs(got[i] - v[i]);                                                        \
          double bound = u >= 0 ? u * fabs(v[i]) : a.scales[0] * (0.5 + ldexp(1.0, -20));          \
          if (!(err <= bound)) out++;                                                              \
        }                                                                                          \
        CHECK(out == 0, "%s (k=%d): %lld of %lld values beyond the unit roundoff", tag, k,         \
              (long long)out, (long long)n);                                                       \
      }                                                                                            \
      msp__prec_array_free(&a);                                                                    \
    }                                                                                              \
  } while (0);
  MSP_PRECISION_LIST(MSP_TEST_PREC_)
#undef MSP_TEST_PREC_
  // Exact round trips for representable values: small integers and halves fit every type.
  for (int64_t i = 0; i < n; i++)
    v[i] = (double)(msp_rng_range(&r, 511) - 255) * 0.5;
#define MSP_TEST_EXACT_(name, tag, bytes)                                                          \
  do {                                                                                             \
    msp_precision p = MSP_PRECISION_##name;                                                        \
    if (p == MSP_PRECISION_FX32 || p == MSP_PRECISION_FX16) break;                                 \
    msp__prec_array a;                                                                             \
    CHECK_OK(msp__prec_encode(p, v, n, MSP_CPMS_SEPARATE, 128, &a));                               \
    msp__prec_decode(&a, 0, got);                                                                  \
    int64_t diff = 0;                                                                              \
    for (int64_t i = 0; i < n; i++)                                                                \
      diff += got[i] != v[i];                                                                      \
    CHECK(diff == 0, "%s: %lld representable values changed", tag, (long long)diff);               \
    msp__prec_array_free(&a);                                                                      \
  } while (0);
  MSP_PRECISION_LIST(MSP_TEST_EXACT_)
#undef MSP_TEST_EXACT_
  // Fixed point is exact when values are integer multiples of a scale that is itself exact:
  // max |v| = qmax makes the scale 1.
  {
    double iv[4] = {MSP_FX16_MAX, -3, 0, 12345};
    msp__prec_array a;
    CHECK_OK(msp__prec_encode(MSP_PRECISION_FX16, iv, 4, MSP_CPMS_SEPARATE, 0, &a));
    double ig[4];
    msp__prec_decode(&a, 0, ig);
    CHECK(a.scales[0] == 1.0 && memcmp(ig, iv, sizeof iv) == 0, "fx16 integers exact");
    msp__prec_array_free(&a);
  }
  free(v);
  free(got);
}

// ---- matrices of every format with values in every precision (CPU backend)

// The product reads the encoded values and computes in fp64: it must match the long-double oracle
// of the decoded matrix within the fp64 bound, and each decoded value must be within the
// storage's unit roundoff of the original (fixed point: half the largest block scale).
static void test_format_precisions(void) {
  msp_context ctx = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  if (!ctx) return;
  test_csr m;
  if (test_csr_random(&m, 700, 500, 9, 61) != 0) {
    CHECK(0, "generator");
    test_csr_free(&m);
    msp_context_destroy(&ctx);
    return;
  }
  msp_rng r = {62};
  for (int64_t k = 0; k < m.nnz; k++)
    m.val[k] *= pow(10.0, (double)msp_rng_range(&r, 6) - 3);
  double *x = malloc((size_t)m.cols * sizeof *x), *y0 = malloc((size_t)m.rows * sizeof *y0);
  double *got = malloc((size_t)m.rows * sizeof *got), *ref = malloc((size_t)m.rows * sizeof *ref);
  msp_matrix A = NULL;
  msp_vector vx = NULL, vy = NULL;
  if (!x || !y0 || !got || !ref) {
    CHECK(0, "out of memory");
    goto done;
  }
  for (int64_t j = 0; j < m.cols; j++)
    x[j] = 2 * msp_rng_uniform(&r) - 1;
  for (int64_t i = 0; i < m.rows; i++)
    y0[i] = 2 * msp_rng_uniform(&r) - 1;
  CHECK_OK(test_csr_to_matrix(&m, ctx, &A));
  CHECK_OK(msp_vector_create(ctx, m.cols, &vx));
  CHECK_OK(msp_vector_create(ctx, m.rows, &vy));
  if (!A || !vx || !vy) goto done;
  CHECK_OK(msp_vector_set(vx, x));
  static const msp_format formats[] = {MSP_FORMAT_CSR, MSP_FORMAT_COO, MSP_FORMAT_ELL,
                                       MSP_FORMAT_HLL, MSP_FORMAT_DIA, MSP_FORMAT_HDIA,
                                       MSP_FORMAT_HYB};
  for (size_t fi = 0; fi < sizeof formats / sizeof *formats; fi++) {
    for (int p = 0; p < MSP_PRECISION_COUNT; p++) {
      msp_convert_options o = msp_convert_options_default();
      o.format = formats[fi];
      o.precision = (msp_precision)p;
      o.max_fill = 1e6; // DIA of a random matrix: large, but what is tested here is the values
      // Six decades in a block of 256: fx16 stores some as 0. The bound of what is stored is
      // tested here; the refusal (the default range policy) in tests/test_range.c.
      o.range = MSP_RANGE_ALLOW;
      const char *fname = msp_format_name(formats[fi]),
                 *pname = msp_precision_name((msp_precision)p);
      msp_matrix B = NULL;
      CHECK_OK(msp_matrix_convert(ctx, A, &o, &B));
      if (!B) continue;
      CHECK(msp_matrix_precision(B) == (msp_precision)p, "%s %s: matrix reports %s", fname, pname,
            msp_precision_name(msp_matrix_precision(B)));
      int segs = msp__prec_segments((msp_precision)p);
      for (int k = segs > 1 ? 1 : 0; k <= (segs > 1 ? segs : 0); k++) {
        if (segs > 1) CHECK_OK(msp_matrix_set_cpms_segments(B, k));
        test_csr d;
        if (p == MSP_PRECISION_F64) {
          CHECK(B->pval == NULL, "%s f64: no encoded copy expected", fname);
          if (test_csr_from_matrix(&d, B) != 0) {
            CHECK(0, "copy");
            test_csr_free(&d);
            continue;
          }
        } else if (test_csr_decoded(B, k, &d) != 0) {
          CHECK(0, "%s %s: decoding", fname, pname);
          test_csr_free(&d);
          continue;
        }
        // element bounds (the decoded pattern may drop values that became 0)
        double u = msp__prec_unit_roundoff((msp_precision)p);
        if (segs > 1) u = k == segs ? 0.0 : ldexp(1.0, -(k * 64 / segs - 12));
        double smax = 0;
        for (int64_t b = 0; B->pval && B->pval->scales && b < B->pval->nscales; b++)
          smax = fmax(smax, B->pval->scales[b]);
        // IEEE: relative in the normal range, half the smallest subnormal below it (f16's
        // normal range ends at 6.1e-5, which these values reach)
        double sub = p == MSP_PRECISION_F16    ? ldexp(1.0, -25)
                     : p == MSP_PRECISION_BF16 ? ldexp(1.0, -134)
                     : p == MSP_PRECISION_F32  ? ldexp(1.0, -150)
                                               : 0.0;
        int64_t off = 0, missing = 0;
        for (int64_t i = 0; i < m.rows; i++) {
          int64_t q = d.rowptr[i];
          for (int64_t j = m.rowptr[i]; j < m.rowptr[i + 1]; j++) {
            double dv = 0.0;
            if (q < d.rowptr[i + 1] && d.colind[q] == m.colind[j]) dv = d.val[q++];
            double bound = u >= 0 ? u * fabs(m.val[j]) + sub : smax * (0.5 + ldexp(1.0, -20));
            if (!(fabs(dv - m.val[j]) <= bound)) off++;
          }
          missing += d.rowptr[i + 1] - q; // entries that are not in A
        }
        CHECK(off == 0 && missing == 0,
              "%s %s k=%d: %lld values beyond the storage bound, %lld "
              "extra entries",
              fname, pname, k, (long long)off, (long long)missing);
        CHECK_OK(msp_vector_set(vy, y0));
        CHECK_OK(msp_spmv(ctx, 1.5, B, vx, -0.5, vy));
        CHECK_OK(msp_vector_get(vy, got));
        test_oracle_spmv(&d, 1.5, x, -0.5, y0, ref);
        char label[64];
        snprintf(label, sizeof label, "%s %s k=%d", fname, pname, k);
        CHECK(test_compare_rows(&d, 1.5, x, -0.5, y0, got, ref, label) == 0, "%s: rows off", label);
        test_csr_free(&d);
      }
      if (segs == 1) {
        CHECK_STATUS(msp_matrix_set_cpms_segments(B, 1), MSP_ERR_NOT_SUPPORTED);
      } else {
        CHECK_STATUS(msp_matrix_set_cpms_segments(B, segs + 1), MSP_ERR_INVALID_ARGUMENT);
      }
      msp_matrix_destroy(&B);
    }
  }
done:
  msp_vector_destroy(&vx);
  msp_vector_destroy(&vy);
  msp_matrix_destroy(&A);
  free(x);
  free(y0);
  free(got);
  free(ref);
  test_csr_free(&m);
  msp_context_destroy(&ctx);
}

int main(void) {
  test_f16();
  test_bf16();
  test_f32();
  test_fixed();
  test_cpms_layouts();
  test_all_precisions();
  test_format_precisions();
  return msp_test_finish("test_precision");
}

// test_range.c: range honesty of matrix conversion (msp_range_policy, MSP_ERR_RANGE,
// msp_matrix_range_info) for every storage precision and format, and the host scan
// msp__range_scan / msp__range_saturate that vectors share.
#include "internal.h"
#include "precision.h"
#include "testlib.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu;

// The formats a reduced precision is stored in (BDMP picks fp32 or fp64 per tile itself).
static const msp_format formats[] = {MSP_FORMAT_CSR, MSP_FORMAT_COO, MSP_FORMAT_ELL,
                                     MSP_FORMAT_HLL, MSP_FORMAT_DIA, MSP_FORMAT_HDIA,
                                     MSP_FORMAT_HYB};
#define NFORMATS (int)(sizeof formats / sizeof formats[0])

static const msp_precision precisions[] = {
#define PREC_(name, tag, bytes) MSP_PRECISION_##name,
    MSP_PRECISION_LIST(PREC_)
#undef PREC_
};
#define NPRECS (int)(sizeof precisions / sizeof precisions[0])

static const char *policy_name[] = {"error", "saturate", "allow"};

// ---- the test matrix ----------------------------------------------------------------------------
// N x N with one entry per row, a[i] at column (i + SHIFT) mod N: row and column differ, DIA has
// two diagonals, and y = A * ones gives back each stored value (y_i = stored a_i). N values are
// fewer than a fixed-point block (256), so every format's values share one scale.
#define N 40
#define SHIFT 3

static int col_of(int i) {
  return (i + SHIFT) % N;
}

static msp_status make_matrix(const double *a, msp_matrix *A) {
  int64_t rowptr[N + 1];
  int32_t colind[N];
  for (int i = 0; i <= N; i++)
    rowptr[i] = i;
  for (int i = 0; i < N; i++)
    colind[i] = col_of(i);
  return msp_matrix_from_csr(cpu, N, N, rowptr, colind, a, 0, A);
}

// Values 1 + i/64 (held exactly by every precision here, and distinct), then the scenario's.
typedef struct {
  const char *name;
  double a[N];
} scenario;

static void base_values(scenario *s, const char *name) {
  s->name = name;
  for (int i = 0; i < N; i++)
    s->a[i] = 1.0 + i / 64.0;
}

// ---- oracle
// --------------------------------------------------------------------------------------- What p
// stores for v (scale: the fixed-point scale of v's block), by the precision's own store and load
// (tests/test_precision.c checks those bit for bit).
static double stored(msp_precision p, double v, double scale) {
  return msp__prec_stored(p, v, scale);
}

static int is_fixed(msp_precision p) {
  return p == MSP_PRECISION_FX32 || p == MSP_PRECISION_FX16;
}

// The one fixed-point scale of the test matrix's values (every format: one block).
static double block_scale(msp_precision p, const double *a) {
  double mx = 0.0;
  for (int i = 0; i < N; i++)
    mx = fmax(mx, fabs(a[i]));
  return msp_fx_scale(mx, p == MSP_PRECISION_FX32 ? MSP_FX32_MAX : MSP_FX16_MAX);
}

typedef struct {
  int64_t over, flush;
  int first;         // first offending row (CSR order), -1 when none
  double y[N];       // y = A * ones under SATURATE
  double y_allow[N]; // under ALLOW
} expectation;

static void expect(msp_precision p, const double *a, expectation *e) {
  double hi, lo;
  msp__prec_limits(p, &hi, &lo);
  double s = is_fixed(p) ? block_scale(p, a) : 0.0;
  if (is_fixed(p)) {
    hi *= s;
    lo *= s;
  }
  e->over = e->flush = 0;
  e->first = -1;
  for (int i = 0; i < N; i++) {
    double r = stored(p, a[i], s);
    e->y[i] = e->y_allow[i] = r;
    if (isinf(r)) {
      e->over++;
      e->y[i] = copysign(hi, a[i]);
    } else if (r == 0.0 && a[i] != 0.0) {
      e->flush++;
      e->y[i] = copysign(lo, a[i]);
    } else {
      continue;
    }
    if (e->first < 0) e->first = i;
  }
}

static msp_status convert(const msp_matrix A, msp_format f, msp_precision p, int policy,
                          msp_matrix *B) {
  msp_convert_options o = msp_convert_options_default();
  o.format = f;
  o.precision = p;
  o.range = policy;
  return msp_matrix_convert(cpu, A, &o, B);
}

// y = B * ones on the CPU.
static void product(msp_matrix B, double *y) {
  msp_vector xv = NULL, yv = NULL;
  double ones[N];
  for (int i = 0; i < N; i++)
    ones[i] = 1.0;
  for (int i = 0; i < N; i++)
    y[i] = NAN;
  CHECK_OK(msp_vector_create(cpu, N, &xv));
  CHECK_OK(msp_vector_create(cpu, N, &yv));
  CHECK_OK(msp_vector_set(xv, ones));
  CHECK_OK(msp_spmv(cpu, 1.0, B, xv, 0.0, yv));
  CHECK_OK(msp_vector_get(yv, y));
  msp_vector_destroy(&xv);
  msp_vector_destroy(&yv);
}

static int contains(const char *s, const char *part) {
  return strstr(s, part) != NULL;
}

// ---- every precision x format x policy against the oracle
// ----------------------------------------
static void check_case(const scenario *sc, msp_precision p, msp_format f, int policy) {
  char label[128];
  snprintf(label, sizeof label, "%s, %s, %s, policy %s", sc->name, msp_precision_name(p),
           msp_format_name(f), policy_name[policy]);
  expectation e;
  expect(p, sc->a, &e);
  int64_t bad = e.over + e.flush;
  if (p == MSP_PRECISION_F64 || msp__prec_segments(p) > 1)
    CHECK(bad == 0, "%s: f64 and CPMS hold every double", label);
  msp_matrix A = NULL, B = NULL;
  CHECK_OK(make_matrix(sc->a, &A));
  msp_status st = convert(A, f, p, policy, &B);
  if (policy == MSP_RANGE_ERROR && bad > 0) {
    const char *msg = msp_last_error();
    CHECK(st == MSP_ERR_RANGE && B == NULL, "%s: %s (%s), expected ERR_RANGE", label,
          msp_status_name(st), msg);
    char want[96];
    snprintf(want, sizeof want, "%lld stored value(s) are outside the range (%lld overflow, %lld",
             (long long)bad, (long long)e.over, (long long)e.flush);
    CHECK(contains(msg, want), "%s: message lacks '%s': %s", label, want, msg);
    CHECK(contains(msg, msp_precision_name(p)), "%s: message lacks the precision: %s", label, msg);
    CHECK(contains(msg, "1-based"), "%s: message does not say rows count from 1: %s", label, msg);
    // f32/f16/bf16 are checked on the CSR values, so the first offender is the first in row
    // order in every format; fixed point names the first in the format's order (CSR: row order).
    if (!is_fixed(p) || f == MSP_FORMAT_CSR) {
      snprintf(want, sizeof want, "row %d, column %d", e.first + 1, col_of(e.first) + 1);
      CHECK(contains(msg, want), "%s: message lacks '%s': %s", label, want, msg);
    }
  } else {
    CHECK(st == MSP_SUCCESS, "%s: %s (%s)", label, msp_status_name(st), msp_last_error());
  }
  if (st == MSP_SUCCESS) {
    int64_t sat = -1, flushed = -1;
    CHECK_OK(msp_matrix_range_info(B, &sat, &flushed));
    CHECK(sat == e.over && flushed == e.flush,
          "%s: range info %lld saturated, %lld flushed; "
          "expected %lld and %lld",
          label, (long long)sat, (long long)flushed, (long long)e.over, (long long)e.flush);
    double y[N];
    product(B, y);
    const double *want = policy == MSP_RANGE_ALLOW ? e.y_allow : e.y;
    int wrong = 0, first_wrong = -1;
    for (int i = 0; i < N; i++) {
      if (y[i] != want[i]) {
        if (first_wrong < 0) first_wrong = i;
        wrong++;
      }
    }
    CHECK(wrong == 0,
          "%s: %d stored values differ from the expected ones (row %d: %.17g, "
          "expected %.17g)",
          label, wrong, first_wrong + 1, first_wrong >= 0 ? y[first_wrong] : 0,
          first_wrong >= 0 ? want[first_wrong] : 0);
    if (policy == MSP_RANGE_SATURATE) {
      int held = 1;
      for (int i = 0; i < N; i++)
        held &= isfinite(y[i]) && (y[i] != 0.0 || sc->a[i] == 0.0);
      CHECK(held, "%s: saturated matrix stores Inf or a flushed zero", label);
    }
  }
  msp_matrix_destroy(&B);
  msp_matrix_destroy(&A);
}

static void make_scenarios(scenario *s) {
  base_values(&s[0], "near 1e308");
  s[0].a[2] = 1e308;
  s[0].a[9] = -3e300;
  base_values(&s[1], "1e5");
  s[1].a[5] = 1e5;
  base_values(&s[2], "1e-10");
  s[2].a[7] = 1e-10;
  s[2].a[8] = -1e-10;
  base_values(&s[3], "30 decades");
  for (int i = 0; i < N; i++)
    s[3].a[i] = pow(10.0, -30.0 * i / (N - 1));
  base_values(&s[4], "in range");
}
#define NSCEN 5

static void test_all(void) {
  scenario sc[NSCEN];
  make_scenarios(sc);
  for (int k = 0; k < NSCEN; k++)
    for (int pi = 0; pi < NPRECS; pi++)
      for (int fi = 0; fi < NFORMATS; fi++)
        for (int policy = 0; policy < 3; policy++)
          check_case(&sc[k], precisions[pi], formats[fi], policy);
}

// ---- hand-checked cases by hand
// ----------------------------------------------------------
static msp_status convert_values(const double *a, msp_format f, msp_precision p, int policy,
                                 msp_matrix *B) {
  msp_matrix A = NULL;
  msp_status st = make_matrix(a, &A);
  if (st == MSP_SUCCESS) st = convert(A, f, p, policy, B);
  msp_matrix_destroy(&A);
  return st;
}

static void test_by_hand(void) {
  static const msp_format named[] = {MSP_FORMAT_CSR, MSP_FORMAT_COO, MSP_FORMAT_ELL,
                                     MSP_FORMAT_DIA};
  scenario sc[NSCEN];
  make_scenarios(sc);
  for (int fi = 0; fi < 4; fi++) {
    msp_format f = named[fi];
    const char *fn = msp_format_name(f);
    msp_matrix B = NULL;
    double y[N];
    int64_t sat, fl;
    // f32 of values near 1e308: row 3 (a[2] at column 6) overflows, and row 10.
    CHECK_STATUS(convert_values(sc[0].a, f, MSP_PRECISION_F32, MSP_RANGE_ERROR, &B), MSP_ERR_RANGE);
    const char *m = msp_last_error();
    CHECK(contains(m, "row 3, column 6") && contains(m, "= 1e+308 overflows f32") &&
              contains(m, "largest finite 3.40282347e+38") &&
              contains(m, "2 stored value(s) are outside the range (2 overflow, 0"),
          "%s f32: message: %s", fn, m);
    CHECK(B == NULL, "%s f32: no matrix on error", fn);
    CHECK_OK(convert_values(sc[0].a, f, MSP_PRECISION_F32, MSP_RANGE_SATURATE, &B));
    CHECK_OK(msp_matrix_range_info(B, &sat, &fl));
    CHECK(sat == 2 && fl == 0, "%s f32 saturate: %lld saturated, %lld flushed", fn, (long long)sat,
          (long long)fl);
    product(B, y);
    CHECK(y[2] == FLT_MAX && y[9] == -FLT_MAX && y[0] == 1.0, "%s f32 saturate: y %g %g %g", fn,
          y[2], y[9], y[0]);
    msp_matrix_destroy(&B);
    // f16 of 1e5: overflow.
    CHECK_STATUS(convert_values(sc[1].a, f, MSP_PRECISION_F16, MSP_RANGE_ERROR, &B), MSP_ERR_RANGE);
    m = msp_last_error();
    CHECK(contains(m, "row 6, column 9") && contains(m, "= 1e+05 overflows f16") &&
              contains(m, "largest finite 65504"),
          "%s f16 1e5: message: %s", fn, m);
    CHECK_OK(convert_values(sc[1].a, f, MSP_PRECISION_F16, MSP_RANGE_SATURATE, &B));
    product(B, y);
    CHECK(y[5] == 65504.0, "%s f16 saturate: y[5] = %g", fn, y[5]);
    msp_matrix_destroy(&B);
    CHECK_OK(convert_values(sc[1].a, f, MSP_PRECISION_F16, MSP_RANGE_ALLOW, &B));
    CHECK_OK(msp_matrix_range_info(B, &sat, NULL));
    CHECK(sat == 1, "%s f16 allow: %lld saturated", fn, (long long)sat);
    product(B, y);
    CHECK(isinf(y[5]) && y[5] > 0, "%s f16 allow: y[5] = %g (Inf expected)", fn, y[5]);
    msp_matrix_destroy(&B);
    // bf16 holds 1e5.
    CHECK_OK(convert_values(sc[1].a, f, MSP_PRECISION_BF16, MSP_RANGE_ERROR, &B));
    msp_matrix_destroy(&B);
    // f16 of +-1e-10: both would be stored as 0.
    CHECK_STATUS(convert_values(sc[2].a, f, MSP_PRECISION_F16, MSP_RANGE_ERROR, &B), MSP_ERR_RANGE);
    m = msp_last_error();
    CHECK(contains(m, "row 8, column 11") && contains(m, "= 1e-10 would be stored as 0 in f16") &&
              contains(m, "smallest nonzero 5.96046448e-08") &&
              contains(m, "(0 overflow, 2 nonzero(s)"),
          "%s f16 1e-10: message: %s", fn, m);
    CHECK_OK(convert_values(sc[2].a, f, MSP_PRECISION_F16, MSP_RANGE_SATURATE, &B));
    CHECK_OK(msp_matrix_range_info(B, NULL, &fl));
    CHECK(fl == 2, "%s f16 saturate: %lld flushed", fn, (long long)fl);
    product(B, y);
    CHECK(y[7] == ldexp(1.0, -24) && y[8] == -ldexp(1.0, -24),
          "%s f16 saturate: y[7] = %g, y[8] = %g (+-2^-24 expected)", fn, y[7], y[8]);
    msp_matrix_destroy(&B);
    CHECK_OK(convert_values(sc[2].a, f, MSP_PRECISION_F16, MSP_RANGE_ALLOW, &B));
    product(B, y);
    CHECK(y[7] == 0.0 && y[8] == 0.0, "%s f16 allow: y[7] = %g, y[8] = %g", fn, y[7], y[8]);
    msp_matrix_destroy(&B);
    // fx16 over 30 decades in one block: scale 1 / 32767, so 10^(-30 i / 39) <= scale / 2 for
    // i >= 7: 33 entries; fx32 (scale 1 / (2^31 - 1)): i >= 13, 27 entries.
    CHECK_STATUS(convert_values(sc[3].a, f, MSP_PRECISION_FX16, MSP_RANGE_ERROR, &B),
                 MSP_ERR_RANGE);
    m = msp_last_error();
    CHECK(contains(m, "would be stored as 0 in fx16") && contains(m, "33 stored value(s)") &&
              contains(m, "one scale s per block of 256 values"),
          "%s fx16: message: %s", fn, m);
    if (f == MSP_FORMAT_CSR || f == MSP_FORMAT_COO || f == MSP_FORMAT_ELL)
      CHECK(contains(m, "row 8, column 11"), "%s fx16: first offender (row order): %s", fn, m);
    CHECK_STATUS(convert_values(sc[3].a, f, MSP_PRECISION_FX32, MSP_RANGE_ERROR, &B),
                 MSP_ERR_RANGE);
    m = msp_last_error();
    CHECK(contains(m, "27 stored value(s)"), "%s fx32: message: %s", fn, m);
    CHECK_OK(convert_values(sc[3].a, f, MSP_PRECISION_FX16, MSP_RANGE_SATURATE, &B));
    CHECK_OK(msp_matrix_range_info(B, &sat, &fl));
    CHECK(sat == 0 && fl == 33, "%s fx16 saturate: %lld saturated, %lld flushed", fn,
          (long long)sat, (long long)fl);
    product(B, y);
    double s = msp_fx_scale(1.0, MSP_FX16_MAX);
    int units = 1;
    for (int i = 7; i < N; i++)
      units &= y[i] == s;
    CHECK(units && y[0] == 32767 * s, "%s fx16 saturate: y[7] = %g, y[39] = %g (scale %g)", fn,
          y[7], y[N - 1], s);
    msp_matrix_destroy(&B);
    // CPMS holds them all, whatever the policy.
    for (int k = 0; k < NSCEN; k++) {
      CHECK_OK(convert_values(sc[k].a, f, MSP_PRECISION_CPMS2, MSP_RANGE_ERROR, &B));
      msp_matrix_destroy(&B);
      CHECK_OK(convert_values(sc[k].a, f, MSP_PRECISION_CPMS4, MSP_RANGE_ERROR, &B));
      msp_matrix_destroy(&B);
    }
  }
}

// ---- API edges
// --------------------------------------------------------------------------------------
static void test_api(void) {
  msp_convert_options o = msp_convert_options_default();
  CHECK(o.range == MSP_RANGE_ERROR, "default range policy %d", o.range);
  scenario sc;
  base_values(&sc, "api");
  msp_matrix A = NULL, B = NULL;
  CHECK_OK(make_matrix(sc.a, &A));
  o.precision = MSP_PRECISION_F16;
  o.range = 3;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  o.range = -1;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_INVALID_ARGUMENT);
  int64_t sat = -1, fl = -1;
  CHECK_STATUS(msp_matrix_range_info(NULL, &sat, &fl), MSP_ERR_INVALID_ARGUMENT);
  CHECK_OK(msp_matrix_range_info(A, &sat, &fl)); // unconverted: nothing out of range
  CHECK(sat == 0 && fl == 0, "unconverted matrix: %lld, %lld", (long long)sat, (long long)fl);
  CHECK_OK(msp_matrix_range_info(A, NULL, NULL));
  // TUNE and AUTO pass the policy on: 1e5 in f16 is refused whichever format they pick.
  sc.a[4] = -1e5;
  msp_matrix_destroy(&A);
  CHECK_OK(make_matrix(sc.a, &A));
  o = msp_convert_options_default();
  o.precision = MSP_PRECISION_F16;
  o.format = MSP_FORMAT_AUTO;
  CHECK_STATUS(msp_matrix_convert(cpu, A, &o, &B), MSP_ERR_RANGE);
  o.range = MSP_RANGE_SATURATE;
  CHECK_OK(msp_matrix_convert(cpu, A, &o, &B));
  CHECK_OK(msp_matrix_range_info(B, &sat, &fl));
  CHECK(sat == 1 && fl == 0, "auto saturate: %lld, %lld", (long long)sat, (long long)fl);
  msp_matrix_destroy(&B);
  CHECK(strcmp(msp_status_name(MSP_ERR_RANGE), "ERR_RANGE") == 0, "status name %s",
        msp_status_name(MSP_ERR_RANGE));
  msp_matrix_destroy(&A);
}

// ---- msp__range_scan and msp__range_saturate ---------------------------------------------------
static void test_scan(void) {
  const double t25 = ldexp(1.0, -25); // half the smallest f16 subnormal: a tie, rounds to 0
  const double v[] = {1.0,      1e5,     -1e5,    1e-10, 0.0,          NAN,
                      INFINITY, 65504.0, 65520.0, t25,   t25 * 1.0001, -65519.0};
  const int64_t n = (int64_t)(sizeof v / sizeof v[0]);
  int64_t first = 0, over = 0, under = 0;
  // f16: 1e5, -1e5 and 65520 (the tie between 65504 and 65536 rounds to even: Inf) overflow;
  // 1e-10 and 2^-25 would be 0; 0, NaN, Inf are not counted; 2^-25 (1 + 1e-4) rounds up.
  CHECK_OK(msp__range_scan(MSP_PRECISION_F16, v, n, MSP_CPMS_SEPARATE, MSP_RANGE_ALLOW, &first,
                           &over, &under));
  CHECK(first == 1 && over == 3 && under == 2, "f16 scan: first %lld, %lld over, %lld under",
        (long long)first, (long long)over, (long long)under);
  CHECK_STATUS(msp__range_scan(MSP_PRECISION_F16, v, n, 0, MSP_RANGE_ERROR, &first, &over, &under),
               MSP_ERR_RANGE);
  const char *m = msp_last_error();
  CHECK(contains(m, "value 1 (0-based) = 1e+05 overflows f16") && contains(m, "5 value(s)") &&
            contains(m, "(3 overflow, 2 nonzero(s)"),
        "f16 scan message: %s", m);
  CHECK(first == 1 && over == 3 && under == 2, "f16 scan (error): counts still returned");
  CHECK_OK(msp__range_scan(MSP_PRECISION_F16, v, 1, 0, MSP_RANGE_ERROR, &first, &over, &under));
  CHECK(first == -1 && over == 0 && under == 0, "f16 scan of 1.0: %lld %lld %lld", (long long)first,
        (long long)over, (long long)under);
  // bf16 (largest finite 3.39e38, smallest nonzero 2^-133) and f32 hold all of v; f64 and CPMS
  // hold every double.
  const double w[] = {1e308, -1e-320, 1e-300, 3e38};
  for (int pi = 0; pi < NPRECS; pi++) {
    msp_precision p = precisions[pi];
    CHECK_OK(msp__range_scan(p, v, n, MSP_CPMS_SEPARATE, MSP_RANGE_ALLOW, &first, &over, &under));
    if (p == MSP_PRECISION_BF16 || p == MSP_PRECISION_F32)
      CHECK(first == -1 && over == 0 && under == 0, "%s scan of v: first %lld",
            msp_precision_name(p), (long long)first);
    if (p == MSP_PRECISION_F64 || msp__prec_segments(p) > 1) {
      CHECK(first == -1 && over == 0 && under == 0, "%s scan of v: %lld", msp_precision_name(p),
            (long long)first);
      CHECK_OK(msp__range_scan(p, w, 4, 0, MSP_RANGE_ERROR, &first, &over, &under));
      CHECK(first == -1, "%s scan of w: %lld", msp_precision_name(p), (long long)first);
    }
  }
  // f32: 1e308 overflows, -1e-320 and 1e-300 flush, 3e38 is held (FLT_MAX is 3.4e38).
  CHECK_OK(msp__range_scan(MSP_PRECISION_F32, w, 4, 0, MSP_RANGE_SATURATE, &first, &over, &under));
  CHECK(first == 0 && over == 1 && under == 2, "f32 scan: %lld %lld %lld", (long long)first,
        (long long)over, (long long)under);
  // bf16: 1e-320 and 1e-300 are below 2^-133.
  CHECK_OK(msp__range_scan(MSP_PRECISION_BF16, w, 4, 0, MSP_RANGE_ALLOW, &first, &over, &under));
  CHECK(first == 0 && over == 1 && under == 2, "bf16 scan: %lld %lld %lld", (long long)first,
        (long long)over, (long long)under);
  double sat[4];
  msp__range_saturate(MSP_PRECISION_F32, w, 4, 0, sat);
  CHECK(sat[0] == FLT_MAX && sat[1] == -ldexp(1.0, -149) && sat[2] == ldexp(1.0, -149) &&
            sat[3] == 3e38,
        "f32 saturate: %g %g %g %g", sat[0], sat[1], sat[2], sat[3]);
  // Fixed point with vector blocks of 32: 1e-6 beside 1.0 in one block is below half fx16's
  // scale (1 / 32767) but held by fx32 (scale 1 / 2147483647); alone in its own block it is held.
  double f[64];
  for (int i = 0; i < 64; i++)
    f[i] = 0.5;
  f[0] = 1.0;
  f[5] = -1e-6;
  f[40] = 1e-6;
  f[41] = 1e-6;
  for (int i = 42; i < 64; i++)
    f[i] = 0.0;
  for (int i = 32; i < 40; i++)
    f[i] = 0.0;
  CHECK_OK(msp__range_scan(MSP_PRECISION_FX16, f, 64, MSP_VEC_FX_SHIFT, MSP_RANGE_ALLOW, &first,
                           &over, &under));
  CHECK(first == 5 && over == 0 && under == 1, "fx16 scan, blocks of 32: %lld %lld %lld",
        (long long)first, (long long)over, (long long)under);
  CHECK_OK(msp__range_scan(MSP_PRECISION_FX32, f, 64, MSP_VEC_FX_SHIFT, MSP_RANGE_ALLOW, &first,
                           &over, &under));
  CHECK(first == -1, "fx32 scan, blocks of 32: first %lld", (long long)first);
  // One scale for all 64 values: 1e-6 at 40 and 41 flush too.
  CHECK_STATUS(msp__range_scan(MSP_PRECISION_FX16, f, 64, MSP_CPMS_SEPARATE, MSP_RANGE_ERROR,
                               &first, &over, &under),
               MSP_ERR_RANGE);
  CHECK(first == 5 && under == 3, "fx16 scan, one scale: %lld %lld", (long long)first,
        (long long)under);
  CHECK(contains(msp_last_error(), "value 5 (0-based) = -1e-06 would be stored as 0 in fx16") &&
            contains(msp_last_error(), "one scale s for all values"),
        "fx16 scan message: %s", msp_last_error());
  // Saturating in place: the flushed value becomes -1 unit of the block's scale, which stays.
  const double s = msp_fx_scale(1.0, MSP_FX16_MAX);
  msp__range_saturate(MSP_PRECISION_FX16, f, 64, MSP_VEC_FX_SHIFT, f);
  CHECK(f[5] == -s && f[40] == 1e-6 && f[0] == 1.0, "fx16 saturate: %g (expected %g), %g", f[5], -s,
        f[40]);
  CHECK_OK(msp__range_scan(MSP_PRECISION_FX16, f, 64, MSP_VEC_FX_SHIFT, MSP_RANGE_ERROR, &first,
                           &over, &under));
  CHECK(first == -1, "fx16 after saturation: first %lld", (long long)first);
  // Arguments.
  CHECK_STATUS(msp__range_scan((msp_precision)MSP_PRECISION_COUNT, v, n, 0, 0, NULL, NULL, NULL),
               MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp__range_scan(MSP_PRECISION_F16, v, -1, 0, 0, NULL, NULL, NULL),
               MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp__range_scan(MSP_PRECISION_F16, NULL, 3, 0, 0, NULL, NULL, NULL),
               MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp__range_scan(MSP_PRECISION_F16, v, n, 0, 5, NULL, NULL, NULL),
               MSP_ERR_INVALID_ARGUMENT);
  CHECK_OK(msp__range_scan(MSP_PRECISION_F16, NULL, 0, 0, MSP_RANGE_ERROR, NULL, NULL, NULL));
}

int main(void) {
  if (msp_context_create(MSP_BACKEND_CPU, 0, &cpu) != MSP_SUCCESS) {
    fprintf(stderr, "test_range: no CPU context: %s\n", msp_last_error());
    return 1;
  }
  test_scan();
  test_api();
  test_by_hand();
  test_all();
  msp_context_destroy(&cpu);
  return msp_test_finish("test_range");
}

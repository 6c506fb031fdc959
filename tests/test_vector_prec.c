// test_vector_prec.c: vectors stored in a reduced precision on the CPU: round trips, SpMV and
// vector operations against fp64 on the decoded values, footprint and encoded storage, saturation
// reported by msp_vector_get, per-block fixed-point scales, allocation failures, determinism over
// thread counts.
#include "testlib.h"

#include "internal.h"
#include "precision.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu;

static int is_fixed(msp_precision p) {
  return p == MSP_PRECISION_FX32 || p == MSP_PRECISION_FX16;
}
static int segments_of(msp_precision p) {
  return p == MSP_PRECISION_CPMS2 ? 2 : p == MSP_PRECISION_CPMS4 ? 4 : 1;
}

// The scale of the fixed-point block of MSP_VEC_FX_BLOCK values holding entry i when in[0..n)
// is stored in p: max |v| over the block / qmax (msp_fx_vector_scale: NaN for Inf/NaN).
static double block_scale(msp_precision p, const double *in, int64_t n, int64_t i) {
  const int64_t lo = i / MSP_VEC_FX_BLOCK * MSP_VEC_FX_BLOCK;
  const int64_t hi = lo + MSP_VEC_FX_BLOCK < n ? lo + MSP_VEC_FX_BLOCK : n;
  double m = 0.0;
  for (int64_t j = lo; j < hi; j++)
    m = (fabs(in[j]) > m || isnan(in[j])) && !isnan(m) ? fabs(in[j]) : m;
  return msp_fx_vector_scale(m, p == MSP_PRECISION_FX32 ? MSP_FX32_MAX : MSP_FX16_MAX);
}

// Scale bytes of a fixed-point vector of n values: one double per block (at least one).
static size_t scale_bytes(msp_precision p, int64_t n) {
  if (!is_fixed(p)) return 0;
  return (size_t)(n > 0 ? (n + MSP_VEC_FX_BLOCK - 1) / MSP_VEC_FX_BLOCK : 1) * sizeof(double);
}

// What a vector of precision p holds after storing in[0..n) and reading k CPMS segments (0:
// all), computed from the scalar conversions alone (not through the library's vector code).
// Fixed point: one scale per block of MSP_VEC_FX_BLOCK values.
static void store_ref(msp_precision p, int k, const double *in, int64_t n, double *out) {
  for (int64_t i = 0; i < n; i++) {
    double v = in[i];
    const double scale = is_fixed(p) ? block_scale(p, in, n, i) : 0.0;
    switch (p) {
    case MSP_PRECISION_F32:
      out[i] = (double)msp_f32_from_double(v);
      break;
    case MSP_PRECISION_F16:
      out[i] = msp_f16_to_double(msp_f16_from_double(v));
      break;
    case MSP_PRECISION_BF16:
      out[i] = msp_bf16_to_double(msp_bf16_from_double(v));
      break;
    case MSP_PRECISION_FX32:
      out[i] = msp_fx32_to_double(msp_fx32_from_double(v, scale), scale);
      break;
    case MSP_PRECISION_FX16:
      out[i] = msp_fx16_to_double(msp_fx16_from_double(v, scale), scale);
      break;
    case MSP_PRECISION_CPMS2:
    case MSP_PRECISION_CPMS4:
      out[i] = k ? msp_cpms_truncate(v, segments_of(p), k) : v;
      break;
    default:
      out[i] = v;
    }
  }
}

static int64_t bits_differ(const double *a, const double *b, int64_t n) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    bad += memcmp(a + i, b + i, sizeof *a) != 0;
  return bad;
}

// Magnitudes in [1e-3, 1): every precision holds them without overflow or flush to zero (fx16
// included: a unit of a block's scale is at most 1 / 32767).
static void fill_random(double *v, int64_t n, uint64_t seed) {
  msp_rng r = {seed};
  for (int64_t i = 0; i < n; i++)
    v[i] = (msp_rng_range(&r, 2) ? 1.0 : -1.0) * (1e-3 + (1.0 - 1e-3) * msp_rng_uniform(&r));
}

// Set/get: the stored value is the store of the input (bit for bit), within the storage's unit
// roundoff; small integers exact where the precision holds them; CPMS reads k segments.
static void round_trip(msp_precision p, int64_t n) {
  const char *tag = msp_precision_name(p);
  double *h = malloc((size_t)(n + 1) * sizeof *h), *got = malloc((size_t)(n + 1) * sizeof *got);
  double *ref = malloc((size_t)(n + 1) * sizeof *ref);
  msp_vector v = NULL;
  CHECK(h && got && ref, "allocation");
  CHECK_OK(msp_vector_create_precision(cpu, n, p, &v));
  if (!h || !got || !ref || !v) goto exit;
  CHECK(msp_vector_precision(v) == p, "%s: precision %d", tag, (int)msp_vector_precision(v));
  CHECK(msp_vector_bytes(v) == (size_t)n * msp__prec_bytes(p) + scale_bytes(p, n),
        "%s: footprint %zu bytes for n = %lld", tag, msp_vector_bytes(v), (long long)n);
  if (p != MSP_PRECISION_F64 && segments_of(p) == 1 && n >= 64)
    CHECK(msp_vector_bytes(v) < (size_t)n * 8, "%s: footprint %zu not below fp64's %lld", tag,
          msp_vector_bytes(v), (long long)n * 8);
  // a new vector reads zeros
  CHECK_OK(msp_vector_get(v, got));
  int64_t nz = 0;
  for (int64_t i = 0; i < n; i++)
    nz += got[i] != 0.0;
  CHECK(nz == 0, "%s: %lld nonzero entries in a new vector", tag, (long long)nz);

  fill_random(h, n, 7 + (uint64_t)p);
  CHECK_OK(msp_vector_set(v, h));
  CHECK_OK(msp_vector_get(v, got));
  store_ref(p, 0, h, n, ref);
  CHECK(bits_differ(got, ref, n) == 0, "%s n=%lld: set/get differs from the store", tag,
        (long long)n);
  double u = msp__prec_unit_roundoff(p);
  int64_t out = 0;
  for (int64_t i = 0; i < n; i++) {
    double err = fabs(got[i] - h[i]);
    double bound = is_fixed(p)              ? 0.5 * block_scale(p, h, n, i)
                   : p == MSP_PRECISION_F16 ? u * fabs(h[i]) + 0.5 * MSP_F16_MIN_SUBNORMAL
                                            : u * fabs(h[i]);
    out += !(err <= bound);
  }
  CHECK(out == 0, "%s n=%lld: %lld entries beyond the unit roundoff", tag, (long long)n,
        (long long)out);
  // small integers: exact in every precision here (fixed point: integers up to 100 with
  // scale 100 / qmax are exact only for fx32, so fx16 is checked against scale / 2 above)
  for (int64_t i = 0; i < n; i++)
    h[i] = (double)((i % 201) - 100);
  CHECK_OK(msp_vector_set(v, h));
  CHECK_OK(msp_vector_get(v, got));
  if (!is_fixed(p)) CHECK(bits_differ(got, h, n) == 0, "%s: small integers not exact", tag);
  // CPMS: k segments read the truncated mantissa; the stored bytes are untouched (0 = all again)
  if (segments_of(p) > 1) {
    fill_random(h, n, 99);
    CHECK_OK(msp_vector_set(v, h));
    for (int k = 1; k <= segments_of(p); k++) {
      CHECK_OK(msp_vector_set_cpms_segments(v, k));
      CHECK_OK(msp_vector_get(v, got));
      store_ref(p, k, h, n, ref);
      CHECK(bits_differ(got, ref, n) == 0, "%s: %d segments differ from the truncation", tag, k);
    }
    CHECK_OK(msp_vector_set_cpms_segments(v, 0));
    CHECK_OK(msp_vector_get(v, got));
    CHECK(bits_differ(got, h, n) == 0, "%s: all segments not exact", tag);
    CHECK_STATUS(msp_vector_set_cpms_segments(v, segments_of(p) + 1), MSP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(msp_vector_set_cpms_segments(v, -1), MSP_ERR_INVALID_ARGUMENT);
  } else {
    CHECK_STATUS(msp_vector_set_cpms_segments(v, 1), MSP_ERR_NOT_SUPPORTED);
  }
  if (is_fixed(p) && n > 0) {
    // Inf/NaN cannot be given a scale: refused on set, a NaN scale from an operation
    h[n / 2] = NAN;
    CHECK_STATUS(msp_vector_set(v, h), MSP_ERR_NONFINITE);
    CHECK_OK(msp_vector_fill(v, INFINITY));
    CHECK_OK(msp_vector_get(v, got));
    CHECK(isnan(got[0]) && isnan(got[n - 1]), "%s: Inf stored in fixed point reads %g", tag,
          got[0]);
  }
exit:
  msp_vector_destroy(&v);
  free(h);
  free(got);
  free(ref);
}

// SpMV: x reduced against the long-double oracle on the decoded x; y reduced equals the store of
// the fp64 product bit for bit (the same f64 kernel on the same decoded inputs).
static void spmv_case(msp_precision px, msp_precision py, const test_csr *m, msp_matrix A,
                      int cpms_k) {
  char label[96];
  snprintf(label, sizeof label, "spmv x %s (k %d) y %s", msp_precision_name(px), cpms_k,
           msp_precision_name(py));
  int64_t rows = m->rows, cols = m->cols;
  double *hx = malloc((size_t)cols * sizeof *hx), *xd = malloc((size_t)cols * sizeof *xd);
  double *y0 = malloc((size_t)rows * sizeof *y0), *y0d = malloc((size_t)rows * sizeof *y0d);
  double *got = malloc((size_t)rows * sizeof *got), *ref = malloc((size_t)rows * sizeof *ref);
  double *f = malloc((size_t)rows * sizeof *f);
  msp_vector x = NULL, y = NULL, xf = NULL, yf = NULL;
  CHECK(hx && xd && y0 && y0d && got && ref && f, "allocation");
  CHECK_OK(msp_vector_create_precision(cpu, cols, px, &x));
  CHECK_OK(msp_vector_create_precision(cpu, rows, py, &y));
  CHECK_OK(msp_vector_create(cpu, cols, &xf));
  CHECK_OK(msp_vector_create(cpu, rows, &yf));
  if (!hx || !xd || !y0 || !y0d || !got || !ref || !f || !x || !y || !xf || !yf) goto exit;
  fill_random(hx, cols, 31);
  fill_random(y0, rows, 32);
  CHECK_OK(msp_vector_set(x, hx));
  if (segments_of(px) > 1) CHECK_OK(msp_vector_set_cpms_segments(x, cpms_k));
  CHECK_OK(msp_vector_get(x, xd));
  CHECK_OK(msp_vector_set(y, y0));
  CHECK_OK(msp_vector_get(y, y0d));
  CHECK_OK(msp_vector_set(xf, xd));
  CHECK_OK(msp_vector_set(yf, y0d));
  CHECK_OK(msp_spmv(cpu, 1.25, A, x, -0.5, y));
  CHECK_OK(msp_spmv(cpu, 1.25, A, xf, -0.5, yf));
  CHECK_OK(msp_vector_get(y, got));
  CHECK_OK(msp_vector_get(yf, f));
  test_oracle_spmv(m, 1.25, xd, -0.5, y0d, ref);
  CHECK(test_compare_rows(m, 1.25, xd, -0.5, y0d, f, ref, label) == 0,
        "%s: fp64 product on the decoded x outside the row bound", label);
  store_ref(py, 0, f, rows, ref);
  CHECK(bits_differ(got, ref, rows) == 0, "%s: y differs from the store of the fp64 product",
        label);
  // beta == 0: y is write-only
  CHECK_OK(msp_spmv(cpu, 2.0, A, x, 0.0, y));
  CHECK_OK(msp_spmv(cpu, 2.0, A, xf, 0.0, yf));
  CHECK_OK(msp_vector_get(y, got));
  CHECK_OK(msp_vector_get(yf, f));
  store_ref(py, 0, f, rows, ref);
  CHECK(bits_differ(got, ref, rows) == 0, "%s, beta 0: y differs from the store", label);
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_vector_destroy(&xf);
  msp_vector_destroy(&yf);
  free(hx);
  free(xd);
  free(y0);
  free(y0d);
  free(got);
  free(ref);
  free(f);
}

// dot, nrm2, nrm1 equal fp64 on the decoded values bit for bit; axpby, scale, copy, fill give
// the store of the fp64 result.
static void ops_case(msp_precision p, msp_precision q, int64_t n) {
  const char *tp = msp_precision_name(p), *tq = msp_precision_name(q);
  size_t sz = (size_t)(n ? n : 1);
  double *hx = malloc(sz * sizeof *hx), *hy = malloc(sz * sizeof *hy);
  double *a = malloc(sz * sizeof *a), *b = malloc(sz * sizeof *b), *ref = malloc(sz * sizeof *ref);
  msp_vector x = NULL, y = NULL, xf = NULL, yf = NULL;
  CHECK(hx && hy && a && b && ref, "allocation");
  CHECK_OK(msp_vector_create_precision(cpu, n, p, &x));
  CHECK_OK(msp_vector_create_precision(cpu, n, q, &y));
  CHECK_OK(msp_vector_create(cpu, n, &xf));
  CHECK_OK(msp_vector_create(cpu, n, &yf));
  if (!hx || !hy || !a || !b || !ref || !x || !y || !xf || !yf) goto exit;
  fill_random(hx, n, 5);
  fill_random(hy, n, 6);
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_vector_set(y, hy));
  CHECK_OK(msp_vector_get(x, a));
  CHECK_OK(msp_vector_get(y, b));
  CHECK_OK(msp_vector_set(xf, a));
  CHECK_OK(msp_vector_set(yf, b));
  double r1 = 0, r2 = 0;
  CHECK_OK(msp_dot(cpu, x, y, &r1));
  CHECK_OK(msp_dot(cpu, xf, yf, &r2));
  CHECK(memcmp(&r1, &r2, sizeof r1) == 0, "%s.%s n=%lld dot %.17g, fp64 %.17g", tp, tq,
        (long long)n, r1, r2);
  CHECK_OK(msp_nrm2(cpu, x, &r1));
  CHECK_OK(msp_nrm2(cpu, xf, &r2));
  CHECK(memcmp(&r1, &r2, sizeof r1) == 0, "%s n=%lld nrm2 %.17g, fp64 %.17g", tp, (long long)n, r1,
        r2);
  CHECK_OK(msp_nrm1(cpu, x, &r1));
  CHECK_OK(msp_nrm1(cpu, xf, &r2));
  CHECK(memcmp(&r1, &r2, sizeof r1) == 0, "%s n=%lld nrm1 %.17g, fp64 %.17g", tp, (long long)n, r1,
        r2);
  // axpby into y (precision q)
  CHECK_OK(msp_axpby(cpu, 1.5, x, -0.75, y));
  CHECK_OK(msp_axpby(cpu, 1.5, xf, -0.75, yf));
  CHECK_OK(msp_vector_get(y, a));
  CHECK_OK(msp_vector_get(yf, b));
  store_ref(q, 0, b, n, ref);
  CHECK(bits_differ(a, ref, n) == 0, "%s -> %s n=%lld axpby differs from the store", tp, tq,
        (long long)n);
  CHECK_OK(msp_vector_set(yf, a)); // keep yf equal to the decoded y
  // scale x (precision p)
  CHECK_OK(msp_scale(cpu, -3.25, x));
  CHECK_OK(msp_scale(cpu, -3.25, xf));
  CHECK_OK(msp_vector_get(x, a));
  CHECK_OK(msp_vector_get(xf, b));
  store_ref(p, 0, b, n, ref);
  CHECK(bits_differ(a, ref, n) == 0, "%s n=%lld scale differs from the store", tp, (long long)n);
  CHECK_OK(msp_vector_set(xf, a));
  // copy x (p) into y (q)
  CHECK_OK(msp_copy(cpu, x, y));
  CHECK_OK(msp_vector_get(y, a));
  store_ref(q, 0, ref, n, b);
  CHECK(bits_differ(a, b, n) == 0, "%s -> %s n=%lld copy differs from the store", tp, tq,
        (long long)n);
  // fill
  CHECK_OK(msp_vector_fill(y, 0.3));
  CHECK_OK(msp_vector_get(y, a));
  for (int64_t i = 0; i < n; i++)
    hy[i] = 0.3;
  store_ref(q, 0, hy, n, b);
  CHECK(bits_differ(a, b, n) == 0, "%s n=%lld fill differs from the store", tq, (long long)n);
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_vector_destroy(&xf);
  msp_vector_destroy(&yf);
  free(hx);
  free(hy);
  free(a);
  free(b);
  free(ref);
}

// ---- encoded storage ------------------------------------------------------------------------
// An f32 vector holds 4 bytes per value and nothing else: the kernels read x's floats themselves
// (a float written into its storage is what the product sees: no fp64 copy stands between) and
// write y's floats, each the rounding of the fp64 product (the f64 kernel on the same x).
static void f32_storage(const test_csr *m, msp_matrix A) {
  const int64_t rows = m->rows, cols = m->cols;
  double *hx = malloc((size_t)cols * sizeof *hx), *y0 = calloc((size_t)rows, sizeof *y0);
  double *ref = malloc((size_t)rows * sizeof *ref), *f = malloc((size_t)rows * sizeof *f);
  double *got = malloc((size_t)rows * sizeof *got);
  msp_vector x = NULL, y = NULL, xf = NULL, yf = NULL;
  CHECK(hx && y0 && ref && f && got, "allocation");
  CHECK_OK(msp_vector_create_precision(cpu, cols, MSP_PRECISION_F32, &x));
  CHECK_OK(msp_vector_create_precision(cpu, rows, MSP_PRECISION_F32, &y));
  CHECK_OK(msp_vector_create(cpu, cols, &xf));
  CHECK_OK(msp_vector_create(cpu, rows, &yf));
  if (!hx || !y0 || !ref || !f || !got || !x || !y || !xf || !yf) goto exit;
  CHECK(msp_vector_bytes(x) == (size_t)cols * 4 && msp_vector_bytes(y) == (size_t)rows * 4,
        "f32 footprints %zu and %zu bytes for %lld and %lld values", msp_vector_bytes(x),
        msp_vector_bytes(y), (long long)cols, (long long)rows);
  fill_random(hx, cols, 51);
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_vector_get(x, hx)); // the decoded x: the floats as doubles
  // change values in the encoded storage directly (the host copy is the current one on the CPU)
  for (int64_t j = 0; j < cols; j += 7) {
    ((float *)x->h_data)[j] = 2.5f;
    hx[j] = 2.5;
  }
  CHECK_OK(msp_vector_set(xf, hx));
  CHECK_OK(msp_spmv(cpu, 1.0, A, x, 0.0, y));
  CHECK_OK(msp_spmv(cpu, 1.0, A, xf, 0.0, yf));
  CHECK_OK(msp_vector_get(yf, f));
  test_oracle_spmv(m, 1.0, hx, 0.0, y0, ref);
  CHECK(test_compare_rows(m, 1.0, hx, 0.0, y0, f, ref, "f32 storage") == 0,
        "f64 product on the f32 x outside the row bound");
  int64_t bad = 0;
  for (int64_t i = 0; i < rows; i++) {
    const float want = (float)f[i];
    bad += memcmp((const float *)y->h_data + i, &want, sizeof want) != 0;
  }
  CHECK(bad == 0, "f32 y: %lld stored floats are not the rounding of the fp64 product",
        (long long)bad);
  CHECK_OK(msp_vector_get(y, got));
  for (int64_t i = 0; i < rows; i++)
    bad += got[i] != (double)((const float *)y->h_data)[i];
  CHECK(bad == 0, "msp_vector_get of f32 y differs from its floats in %lld entries",
        (long long)bad);
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_vector_destroy(&xf);
  msp_vector_destroy(&yf);
  free(hx);
  free(y0);
  free(ref);
  free(f);
  free(got);
}

// ---- saturation ------------------------------------------------------------------------------
// Results that overflow a reduced-precision y are stored as the largest finite value with their
// sign, counted, and reported once by msp_vector_get as MSP_ERR_RANGE (the values still copied
// out); Inf and NaN results are not range problems and stay as they are.
static void saturation(void) {
  enum { n = 100 };
  msp_matrix A = NULL;
  msp_vector x = NULL, y = NULL, z = NULL;
  double hx[n], got[n];
  // diagonal: y_i = a_i x_i with a_i = 1e5 (i % 3 == 0) or 1000, x_i = +-1 (i % 4 == 1) or
  // +-1000, both signs: products of 1e8, 1e6 and 1e5 overflow f16 (65504), 1000 does not
  int64_t rowptr[n + 1];
  int32_t col[n];
  double val[n];
  int64_t want = 0;
  for (int i = 0; i < n; i++) {
    rowptr[i] = i;
    col[i] = i;
    val[i] = i % 3 == 0 ? 1e5 : 1000.0;
    hx[i] = (i % 2 ? -1.0 : 1.0) * (i % 4 == 1 ? 1.0 : 1000.0);
    want += fabs(val[i] * hx[i]) > MSP_F16_MAX;
  }
  rowptr[n] = n;
  CHECK_OK(msp_matrix_from_csr(cpu, n, n, rowptr, col, val, 0, &A));
  CHECK_OK(msp_vector_create_precision(cpu, n, MSP_PRECISION_F32, &x));
  CHECK_OK(msp_vector_create_precision(cpu, n, MSP_PRECISION_F16, &y));
  CHECK_OK(msp_vector_create_precision(cpu, n, MSP_PRECISION_F16, &z));
  if (!A || !x || !y || !z) goto exit;
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_spmv(cpu, 1.0, A, x, 0.0, y));
  CHECK_STATUS(msp_vector_get(y, got), MSP_ERR_RANGE);
  char count[32];
  snprintf(count, sizeof count, "%lld result(s)", (long long)want);
  CHECK(want > 0 && strstr(msp_last_error(), count) != NULL,
        "the message should count %lld saturated results: %s", (long long)want, msp_last_error());
  int64_t bad = 0;
  for (int i = 0; i < n; i++) {
    const double r = val[i] * hx[i];
    const double expect = fabs(r) > MSP_F16_MAX ? copysign(MSP_F16_MAX, r)
                                                : msp_f16_to_double(msp_f16_from_double(r));
    bad += got[i] != expect;
  }
  CHECK(bad == 0, "f16 y: %lld entries neither the rounding nor the saturation", (long long)bad);
  // reported once: the next read is clean
  CHECK_OK(msp_vector_get(y, got));
  // the count adds up over operations until read: SpMV then axpby into the same vector
  CHECK_OK(msp_spmv(cpu, 1.0, A, x, 0.0, y));
  CHECK_OK(msp_vector_fill(z, 60000.0));
  CHECK_OK(msp_axpby(cpu, 1.0, z, 1.0, z)); // 120000 everywhere: n overflows
  CHECK_STATUS(msp_vector_get(z, got), MSP_ERR_RANGE);
  snprintf(count, sizeof count, "%d result(s)", n);
  CHECK(strstr(msp_last_error(), count) != NULL, "axpby: %s", msp_last_error());
  CHECK(got[0] == MSP_F16_MAX && got[n - 1] == MSP_F16_MAX, "axpby saturated to %g", got[0]);
  CHECK_STATUS(msp_vector_get(y, got), MSP_ERR_RANGE);
  // set resets the count; an Inf result stays Inf and is not counted
  CHECK_OK(msp_vector_set(y, hx));
  CHECK_OK(msp_vector_fill(z, INFINITY));
  CHECK_OK(msp_vector_get(z, got));
  CHECK(isinf(got[0]) && got[0] > 0, "Inf filled into f16 reads %g", got[0]);
exit:
  msp_matrix_destroy(&A);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_vector_destroy(&z);
}

// ---- fixed-point scales per block
// ---------------------------------------------------------------- y from every format's SpMV into
// fx16 / fx32, with rows whose results differ by 10^6 from one block of MSP_VEC_FX_BLOCK rows to
// the next: each block gets its own scale from its own results, so every entry keeps its relative
// accuracy (one scale for the whole vector would flush the small blocks to zero).
static void fixed_blocks(void) {
  enum { n = 1000 }; // not a multiple of the block: the last block is partial
  test_csr m = {0};
  msp_matrix A = NULL;
  m.rows = m.cols = n;
  m.rowptr = malloc((n + 1) * sizeof *m.rowptr);
  m.colind = malloc(3 * n * sizeof *m.colind);
  m.val = malloc(3 * n * sizeof *m.val);
  double *hx = malloc(n * sizeof *hx), *y0 = malloc(n * sizeof *y0);
  double *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
  CHECK(m.rowptr && m.colind && m.val && hx && y0 && ref && got, "allocation");
  if (!m.rowptr || !m.colind || !m.val || !hx || !y0 || !ref || !got) goto exit;
  msp_rng r = {61};
  int64_t k = 0;
  m.rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    const double mag = (i / MSP_VEC_FX_BLOCK) % 2 ? 1e-6 : 1.0;
    for (int64_t j = i - 1; j <= i + 1; j++) {
      if (j < 0 || j >= n) continue;
      m.colind[k] = (int32_t)j;
      m.val[k++] = mag * (j == i ? 4.0 : -0.5 - 0.25 * msp_rng_uniform(&r));
    }
    m.rowptr[i + 1] = k;
    hx[i] = 1.0 + 0.5 * msp_rng_uniform(&r); // the row sums stay within [1, 6] * mag
    y0[i] = mag * (1.0 + msp_rng_uniform(&r));
  }
  m.nnz = k;
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  if (!A) goto exit;
  static const msp_precision yp[] = {MSP_PRECISION_FX16, MSP_PRECISION_FX32};
  for (int f = 0; f < MSP_FORMAT_COUNT; f++) {
    msp_convert_options o = msp_convert_options_default();
    o.format = (msp_format)f;
    msp_matrix B = NULL;
    CHECK_OK(msp_matrix_convert(cpu, A, &o, &B));
    for (size_t q = 0; q < 2 && B; q++) {
      for (int with_beta = 0; with_beta < 2; with_beta++) {
        msp_vector x = NULL, y = NULL, yf = NULL;
        const double beta = with_beta ? -0.25 : 0.0;
        CHECK_OK(msp_vector_create(cpu, n, &x));
        CHECK_OK(msp_vector_create(cpu, n, &yf));
        CHECK_OK(msp_vector_create_precision(cpu, n, yp[q], &y));
        if (x && y && yf) {
          CHECK_OK(msp_vector_set(x, hx));
          CHECK_OK(msp_vector_set(y, y0));
          CHECK_OK(msp_vector_get(y, got)); // the decoded y0
          // the reference: the same product into an f64 y (BDMP stores some values in fp32)
          CHECK_OK(msp_vector_set(yf, got));
          CHECK_OK(msp_spmv(cpu, 1.0, B, x, beta, yf));
          CHECK_OK(msp_vector_get(yf, ref));
          CHECK_OK(msp_spmv(cpu, 1.0, B, x, beta, y));
          CHECK_OK(msp_vector_get(y, got));
          // Half a unit of the block's scale is max |y| / (2 qmax) over the block, and a block's
          // results are within a factor 4 of each other (row sums in [1.25, 4.75] * mag): the
          // error stays below 2 |y_i| / qmax (fp64 rounding is far below).
          const double qmax = yp[q] == MSP_PRECISION_FX16 ? MSP_FX16_MAX : MSP_FX32_MAX;
          int64_t bad = 0, first = -1;
          for (int64_t i = 0; i < n; i++) {
            const int out = !(fabs(got[i] - ref[i]) <= 2.0 / qmax * fabs(ref[i]));
            if (out && first < 0) first = i;
            bad += out;
          }
          CHECK(bad == 0,
                "%s, y %s, beta %g: %lld entries lost their relative accuracy (first %lld: %.17g, "
                "expected %.17g)",
                msp_format_name((msp_format)f), msp_precision_name(yp[q]), beta, (long long)bad,
                (long long)first, first >= 0 ? got[first] : 0.0, first >= 0 ? ref[first] : 0.0);
        }
        msp_vector_destroy(&x);
        msp_vector_destroy(&y);
        msp_vector_destroy(&yf);
      }
    }
    msp_matrix_destroy(&B);
  }
exit:
  msp_matrix_destroy(&A);
  test_csr_free(&m);
  free(hx);
  free(y0);
  free(ref);
  free(got);
}

// ---- allocation failures --------------------------------------------------------------------

static msp_status alloc_scenario(const test_csr *m, msp_precision p) {
  msp_context c = NULL;
  msp_matrix A = NULL;
  msp_vector x = NULL, y = NULL;
  msp_status st;
  double h[64], r = 0;
  for (int i = 0; i < 64; i++)
    h[i] = 0.01 * i - 0.2;
  if ((st = msp_context_create(MSP_BACKEND_CPU, 0, &c))) goto exit;
  if ((st = test_csr_to_matrix(m, c, &A))) goto exit;
  if ((st = msp_vector_create_precision(c, m->cols, p, &x))) goto exit;
  if ((st = msp_vector_create_precision(c, m->rows, p, &y))) goto exit;
  if ((st = msp_vector_set(x, h))) goto exit;
  if ((st = msp_spmv(c, 1.0, A, x, 0.0, y))) goto exit;
  if ((st = msp_axpby(c, 1.0, x, 0.5, y))) goto exit;
  if ((st = msp_nrm2(c, y, &r))) goto exit;
  if ((st = msp_vector_get(y, h))) goto exit;
exit:
  msp_matrix_destroy(&A);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_context_destroy(&c);
  return st;
}

static void alloc_failures(void) {
  test_csr m;
  CHECK(test_csr_random(&m, 64, 64, 4, 3) == 0, "generator");
  msp_allocator al = test_counting_allocator();
  static const msp_precision precs[] = {MSP_PRECISION_F16, MSP_PRECISION_FX16, MSP_PRECISION_CPMS4};
  for (size_t k = 0; k < sizeof precs / sizeof precs[0]; k++) {
    CHECK_OK(msp_set_allocator(&al));
    test_alloc.fail_at = -1;
    test_alloc.calls = 0;
    test_alloc.live = 0;
    msp_status st = alloc_scenario(&m, precs[k]);
    CHECK(st == MSP_SUCCESS && test_alloc.live == 0, "%s: scenario without failures: %s, %ld live",
          msp_precision_name(precs[k]), msp_status_name(st), test_alloc.live);
    // count the allocations of a full run, then fail each in turn
    test_alloc.fail_at = 1L << 40;
    test_alloc.calls = 0;
    alloc_scenario(&m, precs[k]);
    long total = test_alloc.calls;
    for (long i = 0; i < total; i++) {
      test_alloc.fail_at = i;
      test_alloc.calls = 0;
      test_alloc.live = 0;
      st = alloc_scenario(&m, precs[k]);
      CHECK(st == MSP_ERR_OUT_OF_MEMORY, "%s: allocation %ld of %ld failing gave %s",
            msp_precision_name(precs[k]), i, total, msp_status_name(st));
      CHECK(test_alloc.live == 0, "%s: allocation %ld failing leaked %ld blocks",
            msp_precision_name(precs[k]), i, test_alloc.live);
    }
    CHECK(total > 0, "no allocations counted");
    CHECK_OK(msp_set_allocator(NULL));
  }
  test_csr_free(&m);
}

// ---- determinism ----------------------------------------------------------------------------
static void run_threads(msp_precision p, msp_matrix A, const test_csr *m, int threads, double *out,
                        double *red) {
  omp_set_num_threads(threads);
  msp_vector x = NULL, y = NULL;
  double *h = malloc((size_t)m->cols * sizeof *h);
  CHECK_OK(msp_vector_create_precision(cpu, m->cols, p, &x));
  CHECK_OK(msp_vector_create_precision(cpu, m->rows, p, &y));
  if (!h || !x || !y) goto exit;
  fill_random(h, m->cols, 77);
  CHECK_OK(msp_vector_set(x, h));
  CHECK_OK(msp_spmv(cpu, 1.5, A, x, 0.0, y));
  CHECK_OK(msp_axpby(cpu, 0.3, x, -0.7, y));
  CHECK_OK(msp_dot(cpu, x, y, &red[0]));
  CHECK_OK(msp_nrm2(cpu, y, &red[1]));
  {
    // Random results: none overflows; the few that the precision stores as 0 are counted and
    // reported, the count compared across thread counts with the values.
    const msp_status st = msp_vector_get(y, out);
    int64_t saturated = -1, flushed = -1;
    CHECK_OK(msp_vector_range_info(y, &saturated, &flushed));
    CHECK(st == MSP_SUCCESS || (st == MSP_ERR_RANGE && saturated == 0 && flushed > 0),
          "%s: msp_vector_get: %s (%s)", msp_precision_name(p), msp_status_name(st),
          msp_last_error());
    red[2] = (double)flushed;
  }
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  free(h);
}

static void determinism(void) {
  const int64_t n = 100003;
  test_csr m;
  msp_matrix A = NULL;
  double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
  CHECK(test_csr_random(&m, n, n, 10, 12) == 0, "generator");
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  int saved = omp_get_max_threads();
  if (a && b && A) {
    for (int p = 1; p < MSP_PRECISION_COUNT; p++) {
      double r1[3] = {0, 0, 0}, r4[3] = {0, 0, 0};
      run_threads((msp_precision)p, A, &m, 1, a, r1);
      run_threads((msp_precision)p, A, &m, 4, b, r4);
      CHECK(bits_differ(a, b, n) == 0 && memcmp(r1, r4, sizeof r1) == 0,
            "%s: 1 and 4 threads differ", msp_precision_name((msp_precision)p));
    }
  }
  omp_set_num_threads(saved);
  msp_matrix_destroy(&A);
  test_csr_free(&m);
  free(a);
  free(b);
}

int main(void) {
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  if (!cpu) return msp_test_finish("test_vector_prec");
  msp_vector bad = NULL;
  CHECK_STATUS(msp_vector_create_precision(cpu, 4, MSP_PRECISION_COUNT, &bad),
               MSP_ERR_INVALID_ARGUMENT);
  CHECK(bad == NULL, "a vector was returned for an unknown precision");
  CHECK(msp_vector_precision(NULL) == MSP_PRECISION_F64, "precision of NULL");
  static const int64_t sizes[] = {0, 1, 63, 64, 1000, 4097};
  for (int p = 0; p < MSP_PRECISION_COUNT; p++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      round_trip((msp_precision)p, sizes[s]);

  test_csr m;
  msp_matrix A = NULL, Af16 = NULL;
  CHECK(test_csr_random(&m, 1000, 777, 9, 21) == 0, "generator");
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  if (A) {
    for (int p = 0; p < MSP_PRECISION_COUNT; p++) {
      spmv_case((msp_precision)p, MSP_PRECISION_F64, &m, A, 0);
      spmv_case(MSP_PRECISION_F64, (msp_precision)p, &m, A, 0);
      spmv_case((msp_precision)p, (msp_precision)p, &m, A, 0);
    }
    spmv_case(MSP_PRECISION_CPMS2, MSP_PRECISION_F32, &m, A, 1);
    spmv_case(MSP_PRECISION_CPMS4, MSP_PRECISION_BF16, &m, A, 2);
    // a matrix with f16 values and reduced-precision vectors: the oracle on its decoded values
    msp_convert_options o = msp_convert_options_default();
    o.format = MSP_FORMAT_CSR;
    o.precision = MSP_PRECISION_F16;
    CHECK_OK(msp_matrix_convert(cpu, A, &o, &Af16));
    test_csr d;
    if (Af16 && test_csr_decoded(Af16, 0, &d) == 0) {
      spmv_case(MSP_PRECISION_F16, MSP_PRECISION_FX32, &d, Af16, 0);
      test_csr_free(&d);
    }
  }
  for (int p = 0; p < MSP_PRECISION_COUNT; p++) {
    ops_case((msp_precision)p, (msp_precision)p, 5000);
    ops_case((msp_precision)p, MSP_PRECISION_F64, 333);
    ops_case(MSP_PRECISION_F64, (msp_precision)p, 333);
    ops_case((msp_precision)p, (msp_precision)((p + 3) % MSP_PRECISION_COUNT), 0);
    ops_case((msp_precision)p, (msp_precision)((p + 5) % MSP_PRECISION_COUNT), 129);
  }
  if (A) f32_storage(&m, A);
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&Af16);
  test_csr_free(&m);
  saturation();
  fixed_blocks();
  determinism();
  alloc_failures();
  msp_context_destroy(&cpu);
  return msp_test_finish("test_vector_prec");
}

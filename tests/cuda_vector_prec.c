// cuda_vector_prec.c: vectors stored in a reduced precision on the CUDA backend against the CPU:
// only the encoding held and moved (n * bytes per value), encoded bytes bit-identical, products
// and operations within fp64 bounds plus one storage rounding, overflow saturated and counted.
#include "internal.h"
#include "precision.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef MSP_TEST_CUDART
#include <cuda_runtime.h>
#endif

static msp_context cpu, gpu;

static int is_fixed(msp_precision p) {
  return p == MSP_PRECISION_FX32 || p == MSP_PRECISION_FX16;
}

// Magnitudes in [1e-3, 1) with random signs: every precision holds them (fx16 with a block
// scale near 1/32767 would flush a value below 1.5e-5 to zero, which msp_vector_set refuses as a
// range error; test_range covers that, here the subject is the transfers and the kernels).
static void fill_random(double *v, int64_t n, uint64_t seed) {
  msp_rng r = {seed};
  for (int64_t i = 0; i < n; i++)
    v[i] = (msp_rng_uniform(&r) < 0.5 ? -1.0 : 1.0) * (1e-3 + (1.0 - 1e-3) * msp_rng_uniform(&r));
}

// Read a vector that operations wrote: random results never overflow its precision, but a few
// may be nonzero below what it holds (fx16: half a unit of the block's scale) and are stored as
// 0, counted and reported as MSP_ERR_RANGE; anything else is a failure.
static void get_results(msp_vector v, double *h, const char *what) {
  const msp_status st = msp_vector_get(v, h);
  int64_t saturated = -1, flushed = -1;
  CHECK_OK(msp_vector_range_info(v, &saturated, &flushed));
  CHECK(st == MSP_SUCCESS || (st == MSP_ERR_RANGE && saturated == 0 && flushed > 0),
        "%s: msp_vector_get: %s (%s)", what, msp_status_name(st), msp_last_error());
}

// The encoded bytes (and fixed-point scales) of two vectors of the same precision, read back to
// the host, are the same: n * msp__prec_bytes values and nscales scales, nothing else.
static int same_encoding(msp_vector a, msp_vector b) {
  double *t = malloc((size_t)(a->n ? a->n : 1) * sizeof *t);
  int same = 0;
  if (t && msp_vector_get(a, t) == MSP_SUCCESS && msp_vector_get(b, t) == MSP_SUCCESS) {
    same =
        a->prec == b->prec && a->nscales == b->nscales &&
        (a->n == 0 || memcmp(a->h_data, b->h_data, (size_t)a->n * msp__prec_bytes(a->prec)) == 0) &&
        (a->nscales == 0 ||
         memcmp(a->h_scales, b->h_scales, (size_t)a->nscales * sizeof(double)) == 0);
  }
  free(t);
  return same;
}

// A vector holds only its encoding, on both sides: n * bytes per value (plus one scale per 32
// values for fixed point) is what msp_vector_bytes reports, and a transfer brings back exactly
// those bytes. The host copy of a device-written vector is poisoned first, so every byte that
// compares equal to the CPU's encoding came from the device. The upload is checked the same way
// (set on the host, copied on the device in the same precision: the bytes as they are).
static void encoded_transfers(msp_precision p, int64_t n) {
  const char *tp = msp_precision_name(p);
  const size_t vb = msp__prec_bytes(p);
  const int64_t nscales = is_fixed(p) ? (n > 0 ? (n + 31) / 32 : 1) : 0;
  double *h = malloc((size_t)(n ? n : 1) * sizeof *h);
  msp_vector c = NULL, g = NULL, w = NULL;
  CHECK(h != NULL, "allocation");
  CHECK_OK(msp_vector_create_precision(cpu, n, p, &c));
  CHECK_OK(msp_vector_create_precision(gpu, n, p, &g));
  CHECK_OK(msp_vector_create_precision(gpu, n, p, &w));
  if (!h || !c || !g || !w) goto exit;
  CHECK(g->nscales == nscales, "%s n=%lld: %lld scales, expected %lld", tp, (long long)n,
        (long long)g->nscales, (long long)nscales);
  CHECK(msp_vector_bytes(g) == (size_t)n * vb + (size_t)nscales * sizeof(double),
        "%s n=%lld: msp_vector_bytes %zu, expected %zu values of %zu bytes + %lld scales", tp,
        (long long)n, msp_vector_bytes(g), (size_t)n, vb, (long long)nscales);
  if (p == MSP_PRECISION_F32 || p == MSP_PRECISION_F16 || p == MSP_PRECISION_BF16)
    CHECK(msp_vector_bytes(g) * (8 / vb) == (size_t)n * 8, "%s n=%lld: not 8 / %zu of f64's bytes",
          tp, (long long)n, vb);
  // device -> host: written on the device, poisoned host copy, one transfer
  CHECK_OK(msp_vector_fill(c, -0.3));
  CHECK_OK(msp_vector_fill(g, -0.3));
  const int64_t t0 = msp_vector_transfers(g);
  if (n > 0) memset(g->h_data, 0xa5, (size_t)n * vb);
  if (nscales > 0) memset(g->h_scales, 0xa5, (size_t)nscales * sizeof(double));
  CHECK_OK(msp_vector_get(g, h));
  CHECK(msp_vector_transfers(g) == t0 + 1, "%s n=%lld: %lld transfers for one read", tp,
        (long long)n, (long long)(msp_vector_transfers(g) - t0));
  CHECK(n == 0 || memcmp(g->h_data, c->h_data, (size_t)n * vb) == 0,
        "%s n=%lld: the bytes read back from the device are not the CPU's encoding", tp,
        (long long)n);
  CHECK(nscales == 0 || memcmp(g->h_scales, c->h_scales, (size_t)nscales * sizeof(double)) == 0,
        "%s n=%lld: the scales read back from the device are not the CPU's", tp, (long long)n);
  // host -> device: set on the host, copied on the device, read back through a poisoned copy
  fill_random(h, n, 99 + (uint64_t)n);
  CHECK_OK(msp_vector_set(g, h));
  CHECK_OK(msp_copy(gpu, g, w));
  CHECK(msp_vector_transfers(g) == t0 + 2, "%s n=%lld: set + device copy: %lld transfers of x", tp,
        (long long)n, (long long)(msp_vector_transfers(g) - t0));
  if (n > 0) memset(w->h_data, 0x5a, (size_t)n * vb);
  if (nscales > 0) memset(w->h_scales, 0x5a, (size_t)nscales * sizeof(double));
  CHECK_OK(msp_vector_get(w, h));
  CHECK(n == 0 || memcmp(w->h_data, g->h_data, (size_t)n * vb) == 0,
        "%s n=%lld: uploaded bytes came back different", tp, (long long)n);
  CHECK(nscales == 0 || memcmp(w->h_scales, g->h_scales, (size_t)nscales * sizeof(double)) == 0,
        "%s n=%lld: uploaded scales came back different", tp, (long long)n);
exit:
  msp_vector_destroy(&c);
  msp_vector_destroy(&g);
  msp_vector_destroy(&w);
  free(h);
}

// Results that overflow a reduced precision are saturated on the device (never Inf), counted,
// and reported once by the next read, with the values copied out.
static void range_counted(msp_precision p) {
  const char *tp = msp_precision_name(p);
  const int64_t n = 1000;
  const double big = p == MSP_PRECISION_F16 ? 60000.0 : 3.0e38;
  const double largest = p == MSP_PRECISION_F16   ? MSP_F16_MAX
                         : p == MSP_PRECISION_F32 ? MSP_F32_MAX
                                                  : MSP_BF16_MAX;
  double *h = malloc((size_t)n * sizeof *h);
  msp_vector x = NULL, y = NULL;
  char want[64];
  CHECK(h != NULL, "allocation");
  CHECK_OK(msp_vector_create_precision(gpu, n, p, &x));
  CHECK_OK(msp_vector_create_precision(gpu, n, p, &y));
  if (!h || !x || !y) goto exit;
  for (int64_t i = 0; i < n; i++)
    h[i] = i % 2 ? big : -big;
  CHECK_OK(msp_vector_set(x, h));
  CHECK_OK(msp_axpby(gpu, 4.0, x, 0.0, y)); // every result overflows
  CHECK_STATUS(msp_vector_get(y, h), MSP_ERR_RANGE);
  snprintf(want, sizeof want, "%lld result(s)", (long long)n);
  CHECK(strstr(msp_last_error(), want) != NULL, "%s: the message does not count %s: %s", tp, want,
        msp_last_error());
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    bad += h[i] != (i % 2 ? largest : -largest);
  CHECK(bad == 0, "%s: %lld results not saturated to +-%g", tp, (long long)bad, largest);
  CHECK_OK(msp_vector_get(y, h)); // reported once
  // Inf and NaN are results, not a range problem: not counted
  h[0] = INFINITY;
  CHECK_OK(msp_vector_set(x, h));
  CHECK_OK(msp_axpby(gpu, 0.25, x, 0.0, y));
  CHECK_OK(msp_vector_get(y, h));
  CHECK(isinf(h[0]) && h[0] > 0, "%s: Inf stored as %g", tp, h[0]);
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  free(h);
}

// |g - c| within the fp64 difference `fp` plus one rounding of the storage p (the two sides may
// round values an ulp apart in different directions; fixed point may take a scale an fp64 ulp
// apart).
static int64_t outside_store(msp_precision p, const double *g, const double *c, int64_t n,
                             const double *fp) {
  double mx = 0.0;
  for (int64_t i = 0; i < n; i++)
    mx = fabs(c[i]) > mx ? fabs(c[i]) : mx;
  double u = msp__prec_unit_roundoff(p);
  double scale =
      is_fixed(p) ? msp_fx_scale(mx, p == MSP_PRECISION_FX32 ? MSP_FX32_MAX : MSP_FX16_MAX) : 0.0;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double b = fp[i] * (1.0 + 4.0 * (u > 0 ? u : 0.0)) +
               (is_fixed(p) ? 1.01 * scale : 2.0 * (u > 0 ? u : 0.0) * fabs(c[i]));
    if (p == MSP_PRECISION_F16) b += MSP_F16_MIN_SUBNORMAL;
    bad += !(fabs(g[i] - c[i]) <= b || g[i] == c[i]);
  }
  return bad;
}

// x set on the host, ten products on the device: one upload of x's encoded bytes; y travels once
// when read. The products match the CPU's.
static void transfers_and_spmv(msp_precision px, msp_precision py, msp_kernel kernel) {
  const char *tx = msp_precision_name(px), *ty = msp_precision_name(py);
  test_csr m;
  const int64_t n = 3001;
  msp_matrix A = NULL, Ac = NULL;
  msp_vector x = NULL, y = NULL, xc = NULL, yc = NULL;
  double *hx = malloc((size_t)n * sizeof *hx), *xd = malloc((size_t)n * sizeof *xd);
  double *g = malloc((size_t)n * sizeof *g), *c = malloc((size_t)n * sizeof *c);
  double *fp = malloc((size_t)n * sizeof *fp), *zero = calloc((size_t)n, sizeof *zero);
  CHECK(test_csr_random(&m, n, n, 12, 8) == 0, "generator");
  CHECK(hx && xd && g && c && fp && zero, "allocation");
  CHECK_OK(test_csr_to_matrix(&m, gpu, &A));
  CHECK_OK(test_csr_to_matrix(&m, cpu, &Ac));
  if (A) CHECK_OK(msp_matrix_set_kernel(A, kernel));
  CHECK_OK(msp_vector_create_precision(gpu, n, px, &x));
  CHECK_OK(msp_vector_create_precision(gpu, n, py, &y));
  CHECK_OK(msp_vector_create_precision(cpu, n, px, &xc));
  CHECK_OK(msp_vector_create_precision(cpu, n, py, &yc));
  if (!hx || !xd || !g || !c || !fp || !zero || !A || !Ac || !x || !y || !xc || !yc) goto exit;
  fill_random(hx, n, 17);
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_vector_set(xc, hx));
  CHECK(msp_vector_transfers(x) == 0, "%s: transfers after set", tx);
  for (int it = 0; it < 10; it++) {
    CHECK_OK(msp_spmv(gpu, 1.0, A, x, 0.0, y));
    CHECK_OK(msp_spmv(cpu, 1.0, Ac, xc, 0.0, yc));
  }
  CHECK(msp_vector_transfers(x) == 1, "x %s: %lld transfers after 10 products, expected 1", tx,
        (long long)msp_vector_transfers(x));
  CHECK(msp_vector_transfers(y) == 0, "y %s: %lld transfers before it is read", ty,
        (long long)msp_vector_transfers(y));
  get_results(y, g, ty);
  CHECK_OK(msp_vector_get(y, g)); // reported once
  CHECK(msp_vector_transfers(y) == 1, "y %s: %lld transfers after two reads, expected 1", ty,
        (long long)msp_vector_transfers(y));
  get_results(yc, c, ty);
  CHECK_OK(msp_vector_get(xc, xd));
  // x was only read on the device: the same encoded bytes on both sides
  CHECK(same_encoding(x, xc), "x %s: encoded bytes differ between CUDA and CPU", tx);
  char label[64];
  snprintf(label, sizeof label, "cuda spmv (kernel %d) x %s y %s", (int)kernel, tx, ty);
  if (py == MSP_PRECISION_F64) {
    CHECK(test_compare_rows(&m, 1.0, xd, 0.0, zero, g, c, label) == 0, "%s: outside the bound",
          label);
  } else {
    const double eps = 0x1.0p-52;
    for (int64_t i = 0; i < n; i++) {
      double mag = 0;
      for (int64_t k = m.rowptr[i]; k < m.rowptr[i + 1]; k++)
        mag += fabs(m.val[k] * xd[m.colind[k]]);
      fp[i] = 4.0 * eps * (double)(m.rowptr[i + 1] - m.rowptr[i] + 2) * mag;
    }
    CHECK(outside_store(py, g, c, n, fp) == 0, "%s: outside the bound plus one rounding", label);
  }
exit:
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&Ac);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_vector_destroy(&xc);
  msp_vector_destroy(&yc);
  test_csr_free(&m);
  free(hx);
  free(xd);
  free(g);
  free(c);
  free(fp);
  free(zero);
}

// Encoded data read and written in place on the device (scale by 1 reads each value and stores
// it again; CPMS segments read), then vector operations against the CPU.
static void ops(msp_precision p, int64_t n) {
  const char *tp = msp_precision_name(p);
  const double eps = 0x1.0p-52;
  size_t sz = (size_t)(n ? n : 1);
  double *hx = malloc(sz * sizeof *hx), *hy = malloc(sz * sizeof *hy);
  double *g = malloc(sz * sizeof *g), *c = malloc(sz * sizeof *c), *fp = malloc(sz * sizeof *fp);
  msp_vector xc = NULL, yc = NULL, xg = NULL, yg = NULL;
  CHECK(hx && hy && g && c && fp, "allocation");
  CHECK_OK(msp_vector_create_precision(cpu, n, p, &xc));
  CHECK_OK(msp_vector_create_precision(cpu, n, p, &yc));
  CHECK_OK(msp_vector_create_precision(gpu, n, p, &xg));
  CHECK_OK(msp_vector_create_precision(gpu, n, p, &yg));
  if (!hx || !hy || !g || !c || !fp || !xc || !yc || !xg || !yg) goto exit;
  fill_random(hx, n, 3 + (uint64_t)n);
  fill_random(hy, n, 4 + (uint64_t)n);
  CHECK_OK(msp_vector_set(xc, hx));
  CHECK_OK(msp_vector_set(xg, hx));
  CHECK_OK(msp_vector_set(yc, hy));
  CHECK_OK(msp_vector_set(yg, hy));
  // a multiplication by 1 is exact: read and stored again, on each side
  CHECK_OK(msp_scale(cpu, 1.0, xc));
  CHECK_OK(msp_scale(gpu, 1.0, xg));
  CHECK(same_encoding(xc, xg), "%s n=%lld: device encode differs from the host's", tp,
        (long long)n);
  CHECK_OK(msp_vector_fill(yc, -0.3));
  CHECK_OK(msp_vector_fill(yg, -0.3));
  CHECK(same_encoding(yc, yg), "%s n=%lld: fill differs", tp, (long long)n);
  CHECK_OK(msp_copy(cpu, xc, yc));
  CHECK_OK(msp_copy(gpu, xg, yg));
  CHECK(same_encoding(yc, yg), "%s n=%lld: copy differs", tp, (long long)n);
  if (msp__prec_segments(p) > 1) {
    CHECK_OK(msp_vector_set_cpms_segments(xc, 1));
    CHECK_OK(msp_vector_set_cpms_segments(xg, 1));
    CHECK_OK(msp_copy(cpu, xc, yc)); // y stores the truncation read from x
    CHECK_OK(msp_copy(gpu, xg, yg));
    CHECK(same_encoding(yc, yg), "%s n=%lld: copy of 1 segment differs", tp, (long long)n);
    CHECK_OK(msp_vector_set_cpms_segments(xc, 0));
    CHECK_OK(msp_vector_set_cpms_segments(xg, 0));
  }
  CHECK_OK(msp_vector_set(yc, hy));
  CHECK_OK(msp_vector_set(yg, hy));
  CHECK_OK(msp_vector_get(xc, hx)); // the decoded values both sides hold
  CHECK_OK(msp_vector_get(yc, hy));
  double sxy = 0, sx = 0;
  for (int64_t i = 0; i < n; i++) {
    sxy += fabs(hx[i] * hy[i]);
    sx += fabs(hx[i]);
  }
  // depth of the fixed-order sums on both sides (as cuda_vector.c)
  double depth = (double)(n < MSP__RED_CHUNK ? n : MSP__RED_CHUNK) + log2((double)n + 1) + 2 +
                 (double)n / (1024.0 * 256.0) + 23;
  double rc = 0, rg = 0;
  CHECK_OK(msp_dot(cpu, xc, yc, &rc));
  CHECK_OK(msp_dot(gpu, xg, yg, &rg));
  CHECK(fabs(rg - rc) <= depth * eps * sxy, "%s n=%lld dot: gpu %.17g cpu %.17g", tp, (long long)n,
        rg, rc);
  CHECK_OK(msp_nrm1(cpu, xc, &rc));
  CHECK_OK(msp_nrm1(gpu, xg, &rg));
  CHECK(fabs(rg - rc) <= depth * eps * sx, "%s n=%lld nrm1: gpu %.17g cpu %.17g", tp, (long long)n,
        rg, rc);
  CHECK_OK(msp_nrm2(cpu, xc, &rc));
  CHECK_OK(msp_nrm2(gpu, xg, &rg));
  CHECK(fabs(rg - rc) <= (depth + 4) * eps * rc, "%s n=%lld nrm2: gpu %.17g cpu %.17g", tp,
        (long long)n, rg, rc);
  CHECK_OK(msp_axpby(cpu, 1.5, xc, -0.75, yc));
  CHECK_OK(msp_axpby(gpu, 1.5, xg, -0.75, yg));
  get_results(yc, c, tp);
  get_results(yg, g, tp);
  for (int64_t i = 0; i < n; i++)
    fp[i] = 2 * eps * (fabs(1.5 * hx[i]) + fabs(0.75 * hy[i]));
  CHECK(outside_store(p, g, c, n, fp) == 0, "%s n=%lld axpby: gpu differs from the cpu", tp,
        (long long)n);
exit:
  msp_vector_destroy(&xc);
  msp_vector_destroy(&yc);
  msp_vector_destroy(&xg);
  msp_vector_destroy(&yg);
  free(hx);
  free(hy);
  free(g);
  free(c);
  free(fp);
}

// Vectors made while the legacy default stream is busy. The context's stream does not wait for
// that stream, so a vector's setup (its fixed-point scales and range counters zeroed) must not be
// queued there: it would land after the upload and the first product and zero x's scales under
// the second product (whose result would then be 0). The busy work is plain memsets on the
// legacy stream, long enough to outlast an upload and a product.
static void busy_default_stream(msp_precision p) {
#ifdef MSP_TEST_CUDART
  const char *tp = msp_precision_name(p);
  const int64_t n = 4097;
  const size_t busy_bytes = (size_t)1 << 28;
  test_csr m;
  msp_matrix A = NULL, Ac = NULL;
  msp_vector x = NULL, y = NULL, xc = NULL, yc = NULL;
  void *busy = NULL;
  double *hx = malloc((size_t)n * sizeof *hx), *c = malloc((size_t)n * sizeof *c);
  double *g = malloc((size_t)n * sizeof *g), *fp = malloc((size_t)n * sizeof *fp);
  CHECK(test_csr_random(&m, n, n, 12, 23) == 0, "generator");
  CHECK(hx && c && g && fp, "allocation");
  CHECK_OK(test_csr_to_matrix(&m, gpu, &A));
  CHECK_OK(test_csr_to_matrix(&m, cpu, &Ac));
  CHECK(cudaMalloc(&busy, busy_bytes) == cudaSuccess, "cudaMalloc of the busy buffer");
  CHECK(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
  if (!hx || !c || !g || !fp || !A || !Ac || !busy) goto exit;
  fill_random(hx, n, 29);
  for (int k = 0; k < 256; k++)
    CHECK(cudaMemsetAsync(busy, k, busy_bytes, cudaStreamLegacy) == cudaSuccess, "busy memset %d",
          k);
  CHECK_OK(msp_vector_create_precision(gpu, n, p, &x));
  CHECK_OK(msp_vector_create_precision(gpu, n, p, &y));
  CHECK_OK(msp_vector_create_precision(cpu, n, p, &xc));
  CHECK_OK(msp_vector_create_precision(cpu, n, p, &yc));
  if (!x || !y || !xc || !yc) goto exit;
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_vector_set(xc, hx));
  CHECK_OK(msp_spmv(cpu, 1.0, Ac, xc, 0.0, yc));
  get_results(yc, c, tp);
  CHECK_OK(msp_vector_get(xc, hx)); // x as stored, for the bound
  for (int64_t i = 0; i < n; i++) {
    double mag = 0;
    for (int64_t k = m.rowptr[i]; k < m.rowptr[i + 1]; k++)
      mag += fabs(m.val[k] * hx[m.colind[k]]);
    fp[i] = 4.0 * 0x1.0p-52 * (double)(m.rowptr[i + 1] - m.rowptr[i] + 2) * mag;
  }
  for (int round = 0; round < 2; round++) {
    CHECK_OK(msp_spmv(gpu, 1.0, A, x, 0.0, y));
    get_results(y, g, tp);
    const int64_t bad = outside_store(p, g, c, n, fp);
    CHECK(bad == 0,
          "busy default stream, %s, product %d: %lld of %lld results outside the bound plus one "
          "rounding (row 0: %.17g against %.17g)",
          tp, round + 1, (long long)bad, (long long)n, g[0], c[0]);
    // The busy work ends: under the defect, the vectors' setup lands now.
    if (round == 0) CHECK(cudaStreamSynchronize(cudaStreamLegacy) == cudaSuccess, "legacy wait");
  }
exit:
  if (busy) (void)cudaFree(busy);
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&Ac);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_vector_destroy(&xc);
  msp_vector_destroy(&yc);
  test_csr_free(&m);
  free(hx);
  free(c);
  free(g);
  free(fp);
#else
  (void)p;
  printf("cuda_vector_prec: busy default stream (%s): skipped, the test was built without the "
         "CUDA runtime\n",
         msp_precision_name(p));
#endif
}

int main(void) {
  int rc_ = test_cuda_context("cuda_vector_prec", &gpu);
  if (rc_ >= 0) return rc_;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  if (cpu) {
    static const int64_t sizes[] = {0, 1, 65, 4097, 300001};
    static const msp_kernel kernels[] = {MSP_KERNEL_SCALAR, MSP_KERNEL_VECTOR, MSP_KERNEL_MERGE};
    for (int p = 0; p < MSP_PRECISION_COUNT; p++) {
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        encoded_transfers((msp_precision)p, sizes[s]);
        ops((msp_precision)p, sizes[s]);
      }
      for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        transfers_and_spmv((msp_precision)p, MSP_PRECISION_F64, kernels[k]);
        transfers_and_spmv((msp_precision)p, (msp_precision)p, kernels[k]);
        transfers_and_spmv(MSP_PRECISION_F64, (msp_precision)p, kernels[k]);
      }
    }
    range_counted(MSP_PRECISION_F32);
    range_counted(MSP_PRECISION_F16);
    range_counted(MSP_PRECISION_BF16);
    busy_default_stream(MSP_PRECISION_FX16);
    busy_default_stream(MSP_PRECISION_FX32);
  }
  msp_context_destroy(&cpu);
  msp_context_destroy(&gpu);
  return msp_test_finish("cuda_vector_prec");
}

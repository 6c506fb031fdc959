// cuda_vector.c: CUDA vectors: on-demand transfers, vector operations against the CPU, device
// facts, and clean failure when device memory runs out.
#include "internal.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu, gpu;

// Upper bound on the number of additions any one term goes through in a fixed-order sum of n
// terms, for the CPU (MSP__RED_CHUNK sequential, then a pairwise tree) and the GPU (at most
// n / 1024 / 256 + 1 per thread, then shuffle trees of depth 8, then the partials) together.
static double sum_depth(int64_t n) {
  double cpu_d = (double)(n < MSP__RED_CHUNK ? n : MSP__RED_CHUNK) + log2((double)n + 1) + 2;
  double gpu_d = (double)n / (1024.0 * 256.0) + 1 + 8 + 4 + 8 + 2;
  return cpu_d + gpu_d;
}

// PSBLAS 2.2: a run of products and updates on the device copies nothing back; reading the
// result copies it once.
static void transfers(void) {
  test_csr m;
  const int64_t n = 2000;
  msp_matrix A = NULL, Ac = NULL;
  msp_vector x = NULL, y = NULL, xc = NULL, yc = NULL;
  double *hx = malloc((size_t)n * sizeof *hx), *hy = malloc((size_t)n * sizeof *hy);
  double *ref = malloc((size_t)n * sizeof *ref);
  msp_rng r = {42};
  CHECK(test_csr_random(&m, n, n, 8, 41) == 0, "generator");
  CHECK(hx && hy && ref, "allocation");
  if (!hx || !hy || !ref) goto exit;
  for (int64_t i = 0; i < n; i++)
    hx[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
  CHECK_OK(test_csr_to_matrix(&m, gpu, &A));
  CHECK_OK(test_csr_to_matrix(&m, cpu, &Ac));
  CHECK_OK(msp_vector_create(gpu, n, &x));
  CHECK_OK(msp_vector_create(gpu, n, &y));
  CHECK_OK(msp_vector_create(cpu, n, &xc));
  CHECK_OK(msp_vector_create(cpu, n, &yc));
  if (!A || !Ac || !x || !y || !xc || !yc) goto exit;
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_vector_set(xc, hx));
  // an f64 vector holds its n doubles on each side, nothing besides (no scales, no work copy)
  CHECK(msp_vector_bytes(x) == (size_t)n * sizeof(double) && x->nscales == 0 && !x->d_scales,
        "f64 vector: %zu bytes, %lld scales", msp_vector_bytes(x), (long long)x->nscales);
  CHECK(msp_vector_transfers(x) == 0 && msp_vector_transfers(y) == 0,
        "transfers before any operation: x %lld, y %lld", (long long)msp_vector_transfers(x),
        (long long)msp_vector_transfers(y));
  for (int it = 0; it < 10; it++) {
    // y = A x (y write-only), then y = x + 0.5 y.
    CHECK_OK(msp_spmv(gpu, 1.0, A, x, 0.0, y));
    CHECK_OK(msp_axpby(gpu, 1.0, x, 0.5, y));
    CHECK_OK(msp_spmv(cpu, 1.0, Ac, xc, 0.0, yc));
    CHECK_OK(msp_axpby(cpu, 1.0, xc, 0.5, yc));
  }
  CHECK(msp_vector_transfers(x) == 1, "x: %lld transfers after 10 products, expected 1 (upload)",
        (long long)msp_vector_transfers(x));
  CHECK(msp_vector_transfers(y) == 0, "y: %lld transfers before it is read, expected 0",
        (long long)msp_vector_transfers(y));
  // The host copy is stale: poison it, so that every value read comes from the device's bytes.
  memset(y->h_data, 0xff, (size_t)n * sizeof(double));
  CHECK_OK(msp_vector_get(y, hy));
  CHECK(msp_vector_transfers(y) == 1, "y: %lld transfers after one read, expected 1",
        (long long)msp_vector_transfers(y));
  CHECK_OK(msp_vector_get(y, hy));
  CHECK(msp_vector_transfers(y) == 1, "y: %lld transfers after a second read, expected 1",
        (long long)msp_vector_transfers(y));
  CHECK_OK(msp_vector_get(yc, ref));
  // y = 0.5 A x + x: the row bound with alpha = 0.5, beta = 1, y0 = x.
  CHECK(test_compare_rows(&m, 0.5, hx, 1.0, hx, hy, ref, "10 x (spmv + axpby)") == 0,
        "device result differs from the CPU");
  // beta != 0 with y current on the device: still no transfer.
  CHECK_OK(msp_spmv(gpu, 1.0, A, x, 1.0, y));
  CHECK(msp_vector_transfers(y) == 1 && msp_vector_transfers(x) == 1,
        "transfers after a device-resident update: x %lld, y %lld",
        (long long)msp_vector_transfers(x), (long long)msp_vector_transfers(y));
  // x was never written on the device: reading it copies nothing.
  CHECK_OK(msp_vector_get(x, hy));
  CHECK(msp_vector_transfers(x) == 1, "x: %lld transfers after reading an unchanged vector",
        (long long)msp_vector_transfers(x));
exit:
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&Ac);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_vector_destroy(&xc);
  msp_vector_destroy(&yc);
  test_csr_free(&m);
  free(hx);
  free(hy);
  free(ref);
}

// Zero-copy exchange: msp_vector_device_data exposes the device values (and marks the vector
// written there); msp_vector_set_device copies device values in, device to device. Round trip
// a -> device pointer -> b for f64, f32 and cpms2 (raw bytes in the storage precision), each
// value read back bit for bit; fixed point is refused.
static void device_exchange(void) {
  static const msp_precision precs[] = {MSP_PRECISION_F64, MSP_PRECISION_F32, MSP_PRECISION_CPMS2};
  const int64_t n = 5003;
  double *h = malloc((size_t)n * sizeof *h), *ha = malloc((size_t)n * sizeof *ha),
         *hb = malloc((size_t)n * sizeof *hb);
  msp_rng r = {99};
  CHECK(h && ha && hb, "allocation");
  if (!h || !ha || !hb) goto exit;
  for (int64_t i = 0; i < n; i++)
    h[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
  for (size_t k = 0; k < sizeof precs / sizeof precs[0]; k++) {
    const msp_precision p = precs[k];
    const char *tag = msp_precision_name(p);
    msp_vector a = NULL, b = NULL;
    void *pa = NULL, *pa2 = NULL;
    CHECK_OK(msp_vector_create_precision(gpu, n, p, &a));
    CHECK_OK(msp_vector_create_precision(gpu, n, p, &b));
    if (!a || !b) goto next;
    CHECK_OK(msp_vector_set(a, h));
    CHECK_OK(msp_vector_get(a, ha)); // the values as stored in p
    CHECK_OK(msp_vector_device_data(a, &pa));
    CHECK(pa != NULL && pa == a->d_data, "%s: device pointer %p, vector's %p", tag, pa, a->d_data);
    CHECK(msp_vector_transfers(a) == 1, "%s: %lld transfers after device_data, expected 1 upload",
          tag, (long long)msp_vector_transfers(a));
    CHECK(a->sync == MSP__SYNC_DEVICE, "%s: not marked written on the device (sync %d)", tag,
          a->sync);
    CHECK_OK(msp_vector_device_data(a, &pa2));
    CHECK(pa2 == pa && msp_vector_transfers(a) == 1,
          "%s: a second call moved the pointer or copied (%lld transfers)", tag,
          (long long)msp_vector_transfers(a));
    // b gets a's device bytes without passing through the host: poison b's host copy first.
    memset(b->h_data, 0xff, (size_t)n * msp__prec_bytes(p));
    CHECK_OK(msp_vector_set_device(b, pa));
    CHECK(msp_vector_transfers(b) == 0 && b->sync == MSP__SYNC_DEVICE,
          "%s: set_device made %lld transfers, sync %d", tag, (long long)msp_vector_transfers(b),
          b->sync);
    CHECK_OK(msp_vector_get(b, hb));
    CHECK(msp_vector_transfers(b) == 1, "%s: reading b made %lld transfers, expected 1", tag,
          (long long)msp_vector_transfers(b));
    CHECK(memcmp(ha, hb, (size_t)n * sizeof *ha) == 0, "%s: round trip changed values", tag);
    // a was marked written on the device: its (poisoned) host copy is refreshed on read.
    memset(a->h_data, 0xff, (size_t)n * msp__prec_bytes(p));
    CHECK_OK(msp_vector_get(a, hb));
    CHECK(memcmp(ha, hb, (size_t)n * sizeof *ha) == 0 && msp_vector_transfers(a) == 2,
          "%s: a after device_data: values differ or %lld transfers (expected 2)", tag,
          (long long)msp_vector_transfers(a));
    // Operations see the values set on the device: b - a = 0 exactly.
    if (p == MSP_PRECISION_F64) {
      double d = -1;
      CHECK_OK(msp_axpby(gpu, -1.0, a, 1.0, b));
      CHECK_OK(msp_nrm1(gpu, b, &d));
      CHECK(d == 0.0, "f64: ||b - a||_1 = %g after the exchange", d);
    }
    CHECK_STATUS(msp_vector_set_device(b, NULL), MSP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(msp_vector_device_data(a, NULL), MSP_ERR_INVALID_ARGUMENT);
  next:
    msp_vector_destroy(&a);
    msp_vector_destroy(&b);
  }
  {
    // Fixed point: the device pointer is given (quantised values), copying in is refused.
    msp_vector f = NULL;
    void *pf = NULL;
    CHECK_OK(msp_vector_create_precision(gpu, n, MSP_PRECISION_FX16, &f));
    if (f) {
      CHECK_OK(msp_vector_device_data(f, &pf));
      CHECK(pf == f->d_data, "fx16 device pointer");
      CHECK_STATUS(msp_vector_set_device(f, pf), MSP_ERR_NOT_SUPPORTED);
      CHECK(strstr(msp_last_error(), "fixed point") != NULL, "message: %s", msp_last_error());
    }
    msp_vector_destroy(&f);
  }
  {
    // A CPU vector has no device data.
    msp_vector c = NULL;
    void *pc = &pc;
    CHECK_OK(msp_vector_create(cpu, 8, &c));
    if (c) {
      CHECK_STATUS(msp_vector_device_data(c, &pc), MSP_ERR_NOT_SUPPORTED);
      CHECK(pc == NULL, "CPU vector: pointer %p", pc);
      CHECK_STATUS(msp_vector_set_device(c, c->h_data), MSP_ERR_NOT_SUPPORTED);
    }
    msp_vector_destroy(&c);
  }
exit:
  free(h);
  free(ha);
  free(hb);
}

// Vectors with the same host values on both backends.
static int make_pair(int64_t n, const double *h, msp_vector *c, msp_vector *g) {
  CHECK_OK(msp_vector_create(cpu, n, c));
  CHECK_OK(msp_vector_create(gpu, n, g));
  if (!*c || !*g) return -1;
  CHECK_OK(msp_vector_set(*c, h));
  CHECK_OK(msp_vector_set(*g, h));
  return 0;
}

static void ops(int64_t n, uint64_t seed) {
  const double eps = 0x1.0p-52;
  size_t sz = (size_t)(n ? n : 1);
  double *hx = malloc(sz * sizeof *hx), *hy = malloc(sz * sizeof *hy);
  double *a = malloc(sz * sizeof *a), *b = malloc(sz * sizeof *b),
         *nan_y = malloc(sz * sizeof *nan_y);
  msp_vector xc = NULL, yc = NULL, xg = NULL, yg = NULL;
  msp_rng r = {seed};
  CHECK(hx && hy && a && b && nan_y, "allocation");
  if (!hx || !hy || !a || !b || !nan_y) goto exit;
  for (int64_t i = 0; i < n; i++) {
    hx[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
    hy[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
    nan_y[i] = NAN;
  }
  if (make_pair(n, hx, &xc, &xg) || make_pair(n, hy, &yc, &yg)) goto exit;

  double sxy = 0, sx = 0, sxx = 0;
  for (int64_t i = 0; i < n; i++) {
    sxy += fabs(hx[i] * hy[i]);
    sx += fabs(hx[i]);
    sxx += hx[i] * hx[i];
  }
  const double depth = sum_depth(n);
  double rc = 0, rg = 0, rg2 = 0;
  CHECK_OK(msp_dot(cpu, xc, yc, &rc));
  CHECK_OK(msp_dot(gpu, xg, yg, &rg));
  CHECK_OK(msp_dot(gpu, xg, yg, &rg2));
  CHECK(fabs(rg - rc) <= depth * eps * sxy, "n=%lld dot: gpu %.17g cpu %.17g", (long long)n, rg,
        rc);
  CHECK(memcmp(&rg, &rg2, sizeof rg) == 0, "n=%lld dot: two runs differ (%.17g, %.17g)",
        (long long)n, rg, rg2);
  CHECK_OK(msp_nrm1(cpu, xc, &rc));
  CHECK_OK(msp_nrm1(gpu, xg, &rg));
  CHECK_OK(msp_nrm1(gpu, xg, &rg2));
  CHECK(fabs(rg - rc) <= depth * eps * sx, "n=%lld nrm1: gpu %.17g cpu %.17g", (long long)n, rg,
        rc);
  CHECK(memcmp(&rg, &rg2, sizeof rg) == 0, "n=%lld nrm1: two runs differ", (long long)n);
  CHECK_OK(msp_nrm2(cpu, xc, &rc));
  CHECK_OK(msp_nrm2(gpu, xg, &rg));
  CHECK_OK(msp_nrm2(gpu, xg, &rg2));
  CHECK(fabs(rg - rc) <= (depth + 4) * eps * sqrt(sxx), "n=%lld nrm2: gpu %.17g cpu %.17g",
        (long long)n, rg, rc);
  CHECK(memcmp(&rg, &rg2, sizeof rg) == 0, "n=%lld nrm2: two runs differ", (long long)n);

  // axpby: y = 1.5 x - 0.75 y; then y = -2 x with a NaN y (beta == 0 must not read y).
  CHECK_OK(msp_axpby(cpu, 1.5, xc, -0.75, yc));
  CHECK_OK(msp_axpby(gpu, 1.5, xg, -0.75, yg));
  CHECK_OK(msp_vector_get(yc, a));
  CHECK_OK(msp_vector_get(yg, b));
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    bad += !(fabs(a[i] - b[i]) <= 2 * eps * (fabs(1.5 * hx[i]) + fabs(0.75 * hy[i])));
  CHECK(bad == 0, "n=%lld axpby: %lld entries differ", (long long)n, (long long)bad);
  CHECK_OK(msp_vector_set(yc, nan_y));
  CHECK_OK(msp_vector_set(yg, nan_y));
  CHECK_OK(msp_axpby(cpu, -2.0, xc, 0.0, yc));
  CHECK_OK(msp_axpby(gpu, -2.0, xg, 0.0, yg));
  CHECK_OK(msp_vector_get(yc, a));
  CHECK_OK(msp_vector_get(yg, b));
  CHECK(n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0,
        "n=%lld axpby with beta = 0 differs from the CPU (NaN read?)", (long long)n);
  // scale, copy, fill: one rounding or none, so exactly the CPU's bits.
  CHECK_OK(msp_scale(cpu, -3.25, xc));
  CHECK_OK(msp_scale(gpu, -3.25, xg));
  CHECK_OK(msp_copy(cpu, xc, yc));
  CHECK_OK(msp_copy(gpu, xg, yg));
  CHECK_OK(msp_vector_get(yc, a));
  CHECK_OK(msp_vector_get(yg, b));
  CHECK(n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0, "n=%lld scale + copy differ",
        (long long)n);
  CHECK_OK(msp_vector_fill(xg, 0.125));
  CHECK_OK(msp_vector_get(xg, b));
  bad = 0;
  for (int64_t i = 0; i < n; i++)
    bad += b[i] != 0.125;
  CHECK(bad == 0, "n=%lld fill: %lld entries wrong", (long long)n, (long long)bad);
exit:
  msp_vector_destroy(&xc);
  msp_vector_destroy(&yc);
  msp_vector_destroy(&xg);
  msp_vector_destroy(&yg);
  free(hx);
  free(hy);
  free(a);
  free(b);
  free(nan_y);
}

// nrm2 without overflow or underflow, and with NaN / Inf / zero, as the CPU answers.
static void nrm2_extremes(void) {
  static const double scales[] = {1e300, 1e-300, 1e-160, 1e160, 0.0};
  const int64_t n = 5000;
  double *h = malloc((size_t)n * sizeof *h);
  msp_rng r = {7};
  CHECK(h != NULL, "allocation");
  if (!h) return;
  for (size_t s = 0; s < sizeof scales / sizeof scales[0] + 2; s++) {
    msp_vector c = NULL, g = NULL;
    for (int64_t i = 0; i < n; i++)
      h[i] = (2.0 * msp_rng_uniform(&r) - 1.0) * (s < 5 ? scales[s] : 1.0);
    if (s == 5) h[n / 2] = NAN;
    if (s == 6) h[n / 3] = -INFINITY;
    if (make_pair(n, h, &c, &g) == 0) {
      double rc = 0, rg = 0;
      CHECK_OK(msp_nrm2(cpu, c, &rc));
      CHECK_OK(msp_nrm2(gpu, g, &rg));
      int ok = (isnan(rc) && isnan(rg)) || rc == rg ||
               fabs(rg - rc) <= (sum_depth(n) + 4) * 0x1.0p-52 * fabs(rc);
      CHECK(ok && (s >= 5 || isfinite(rg)), "nrm2 case %zu: gpu %.17g cpu %.17g", s, rg, rc);
    }
    msp_vector_destroy(&c);
    msp_vector_destroy(&g);
  }
  free(h);
}

static void device_facts(void) {
  int count = 0;
  msp_device_props p;
  CHECK_OK(msp_device_count(&count));
  CHECK(count >= 1, "device count %d with a working CUDA context", count);
  memset(&p, 0, sizeof p);
  CHECK_OK(msp_device_info(0, &p));
  printf("cuda_vector: device 0: %s, sm_%d%d, %d SMs, warp %d, %d threads/SM, %d registers/block, "
         "memory %d kHz x %d bits = %.0f GB/s peak, UVA %d, %.1f GiB, L2 %.1f MiB\n",
         p.name, p.compute_major, p.compute_minor, p.multiprocessors, p.warp_size,
         p.max_threads_per_mp, p.registers_per_block, p.memory_clock_khz, p.memory_bus_width_bits,
         p.peak_bandwidth_gbs, p.has_uva, (double)p.total_memory_bytes / (1 << 30),
         (double)p.l2_cache_bytes / (1 << 20));
  CHECK(p.ordinal == 0, "ordinal %d", p.ordinal);
  CHECK(p.name[0] != '\0', "empty device name");
  CHECK(p.multiprocessors > 0, "multiprocessors %d", p.multiprocessors);
  CHECK(p.warp_size == 32, "warp size %d", p.warp_size);
  CHECK(p.max_threads_per_mp >= 1024, "max threads per SM %d", p.max_threads_per_mp);
  CHECK(p.registers_per_block >= 32768, "registers per block %d", p.registers_per_block);
  CHECK(p.memory_clock_khz > 0 && p.memory_bus_width_bits > 0, "memory clock %d kHz, bus %d bits",
        p.memory_clock_khz, p.memory_bus_width_bits);
  double peak = 2.0 * p.memory_clock_khz * 1e3 * p.memory_bus_width_bits / 8.0 / 1e9;
  CHECK(fabs(p.peak_bandwidth_gbs - peak) <= 1e-9 * peak && peak > 100.0,
        "peak bandwidth %.3f GB/s, expected %.3f", p.peak_bandwidth_gbs, peak);
  CHECK(p.has_uva == 1, "no unified addressing");
  CHECK(p.compute_major >= 9, "compute capability %d.%d: this build has sm_90 code only",
        p.compute_major, p.compute_minor);
  CHECK(p.total_memory_bytes > ((size_t)1 << 30), "total memory %zu bytes", p.total_memory_bytes);
  CHECK(p.l2_cache_bytes > 0, "L2 %zu bytes", p.l2_cache_bytes);
  CHECK_STATUS(msp_device_info(count, &p), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_device_info(-1, &p), MSP_ERR_INVALID_ARGUMENT);
  msp_context bad = NULL;
  CHECK_STATUS(msp_context_create(MSP_BACKEND_CUDA, count + 1000, &bad), MSP_ERR_NO_DEVICE);
  CHECK(bad == NULL, "a context was returned for a missing device");
}

// Out of device memory is a clean status: nothing returned, the context still usable.
static void out_of_memory(void) {
  msp_vector v = NULL;
  const int64_t huge = (int64_t)1 << 40; // 8 TiB of doubles
  CHECK_STATUS(msp_vector_create(gpu, huge, &v), MSP_ERR_OUT_OF_MEMORY);
  CHECK(v == NULL, "a vector was returned although creation failed");
  // The device allocation itself (the host copy above may already fail): through the backend.
  struct msp_vector_s fake;
  memset(&fake, 0, sizeof fake);
  fake.ctx = gpu;
  fake.n = huge;
  CHECK_STATUS(gpu->backend->vector_alloc(&fake), MSP_ERR_OUT_OF_MEMORY);
  CHECK(fake.d_data == NULL, "device pointer set after a failed allocation");
  CHECK(strstr(msp_last_error(), "bytes") != NULL, "message does not say the size: %s",
        msp_last_error());
  // The context still works.
  msp_vector a = NULL;
  double d = -1;
  CHECK_OK(msp_vector_create(gpu, 100, &a));
  if (a) {
    CHECK_OK(msp_vector_fill(a, 2.0));
    CHECK_OK(msp_dot(gpu, a, a, &d));
    CHECK(d == 400.0, "dot after an allocation failure: %g, expected 400", d);
  }
  msp_vector_destroy(&a);
}

int main(void) {
  int rc_ = test_cuda_context("cuda_vector", &gpu);
  if (rc_ >= 0) return rc_;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  if (cpu) {
    device_facts();
    transfers();
    device_exchange();
    static const int64_t sizes[] = {0, 1, 31, 1000, 4097, 262145, 1000003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
      ops(sizes[i], 1000 + i);
    nrm2_extremes();
    // compute-sanitizer reports the deliberate failed cudaMalloc as an API error.
    const char *san = getenv("MSP_TEST_SANITIZER");
    if (san && *san)
      printf("cuda_vector: out-of-memory part left out under compute-sanitizer "
             "(MSP_TEST_SANITIZER)\n");
    else
      out_of_memory();
  }
  msp_context_destroy(&cpu);
  msp_context_destroy(&gpu);
  return msp_test_finish("cuda_vector");
}

// cuda_vector_prec.c: vectors stored in a reduced precision on the CUDA backend against the CPU:
// encoded bytes bit-identical, products and operations within fp64 bounds plus one storage
// rounding, transfers of the encoded bytes on demand.
#include "internal.h"
#include "precision.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu, gpu;

static int is_fixed(msp_precision p) {
  return p == MSP_PRECISION_FX32 || p == MSP_PRECISION_FX16;
}

static void fill_random(double *v, int64_t n, uint64_t seed) {
  msp_rng r = {seed};
  for (int64_t i = 0; i < n; i++)
    v[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
}

// The encoded bytes (and fixed-point scale) of two vectors of the same precision, read back to
// the host, are the same.
static int same_encoding(msp_vector a, msp_vector b) {
  double *t = malloc((size_t)(a->n ? a->n : 1) * sizeof *t);
  int same = 0;
  if (t && msp_vector_get(a, t) == MSP_SUCCESS && msp_vector_get(b, t) == MSP_SUCCESS) {
    if (a->prec == MSP_PRECISION_F64)
      same = a->n == 0 || memcmp(a->h_data, b->h_data, (size_t)a->n * sizeof(double)) == 0;
    else
      same = (a->n == 0 ||
              memcmp(a->enc->data, b->enc->data, (size_t)a->n * msp__prec_bytes(a->prec)) == 0) &&
             memcmp(a->enc->scales, b->enc->scales, sizeof(double)) == 0;
  }
  free(t);
  return same;
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
static void transfers_and_spmv(msp_precision px, msp_precision py) {
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
  CHECK_OK(msp_vector_get(y, g));
  CHECK_OK(msp_vector_get(y, g));
  CHECK(msp_vector_transfers(y) == 1, "y %s: %lld transfers after two reads, expected 1", ty,
        (long long)msp_vector_transfers(y));
  CHECK_OK(msp_vector_get(yc, c));
  CHECK_OK(msp_vector_get(xc, xd));
  // x was only read on the device: the same encoded bytes on both sides
  CHECK(same_encoding(x, xc), "x %s: encoded bytes differ between CUDA and CPU", tx);
  char label[64];
  snprintf(label, sizeof label, "cuda spmv x %s y %s", tx, ty);
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

// Encode on the device (set, then scale by 1, which decodes and encodes there; CPMS segments
// read), then vector operations against the CPU.
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
  // a multiplication by 1 is exact: decode, store again, on each side
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
  CHECK_OK(msp_vector_get(yc, c));
  CHECK_OK(msp_vector_get(yg, g));
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

int main(void) {
  int rc_ = test_cuda_context("cuda_vector_prec", &gpu);
  if (rc_ >= 0) return rc_;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  if (cpu) {
    static const int64_t sizes[] = {0, 1, 65, 4097, 300001};
    for (int p = 0; p < MSP_PRECISION_COUNT; p++) {
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        ops((msp_precision)p, sizes[s]);
      transfers_and_spmv((msp_precision)p, MSP_PRECISION_F64);
      transfers_and_spmv((msp_precision)p, (msp_precision)p);
      transfers_and_spmv(MSP_PRECISION_F64, (msp_precision)p);
    }
  }
  msp_context_destroy(&cpu);
  msp_context_destroy(&gpu);
  return msp_test_finish("cuda_vector_prec");
}

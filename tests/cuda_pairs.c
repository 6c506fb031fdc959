// cuda_pairs.c: products whose (values, x) pair of storage precisions the CUDA kernels are not
// compiled for (src/cuda/access.cuh, msp__pair_compiled: by default x in f64, in f32 or in the
// values' own precision) read x through an f64 copy that the product makes (src/cuda/spmv_x.cu).
// Each such product must give the same bits as the product with an f64 x holding x's values
// (msp_copy, exact), for every format, CSR kernel and store of y, CPMS x read with fewer segments
// included: the kernels see the same numbers. The bounds against the CPU are tests/cross.c's.
#include "testlib.h"

#include <stdlib.h>
#include <string.h>

static msp_context gpu;

// The default rule of msp__pair_compiled (BDMP's kernels take f64 values).
static int pair_compiled(msp_precision pa, msp_precision px) {
  return px == MSP_PRECISION_F64 || px == MSP_PRECISION_F32 || px == pa;
}

static const msp_precision PRECS[] = {
#define PAIRS_PREC_(name, tag, bytes) MSP_PRECISION_##name,
    MSP_PRECISION_LIST(PAIRS_PREC_)
#undef PAIRS_PREC_
};
#define NPREC ((int)(sizeof PRECS / sizeof PRECS[0]))

// Magnitudes in [1e-3, 1) with random signs: every precision holds them (fixed point included).
static void fill_random(double *v, int64_t n, uint64_t seed) {
  msp_rng r = {seed};
  for (int64_t i = 0; i < n; i++)
    v[i] = (msp_rng_uniform(&r) < 0.5 ? -1.0 : 1.0) * (1e-3 + (1.0 - 1e-3) * msp_rng_uniform(&r));
}

// y = alpha B x + beta y0 with y in precision py, read back into out; *get_st: msp_vector_get's
// status (MSP_ERR_RANGE where a fixed-point y flushed a result, the same for both products).
static msp_status product(msp_matrix B, msp_vector x, msp_precision py, double alpha, double beta,
                          const double *y0, double *out, msp_status *get_st) {
  msp_vector y = NULL;
  msp_status st = msp_vector_create_precision(gpu, msp_matrix_rows(B), py, &y);
  if (st == MSP_SUCCESS) st = msp_vector_set(y, y0);
  if (st == MSP_SUCCESS) st = msp_spmv(gpu, alpha, B, x, beta, y);
  if (st == MSP_SUCCESS) *get_st = msp_vector_get(y, out);
  msp_vector_destroy(&y);
  return st;
}

typedef struct {
  msp_format format;
  msp_kernel kernel; // CSR only
} variant;
static const variant VARIANTS[] = {
    {MSP_FORMAT_CSR, MSP_KERNEL_SCALAR},     {MSP_FORMAT_CSR, MSP_KERNEL_VECTOR},
    {MSP_FORMAT_CSR, MSP_KERNEL_MERGE},      {MSP_FORMAT_COO, MSP_KERNEL_AUTO},
    {MSP_FORMAT_ELL, MSP_KERNEL_AUTO},       {MSP_FORMAT_HLL, MSP_KERNEL_AUTO},
    {MSP_FORMAT_DIA, MSP_KERNEL_AUTO},       {MSP_FORMAT_HDIA, MSP_KERNEL_AUTO},
    {MSP_FORMAT_HYB, MSP_KERNEL_AUTO},       {MSP_FORMAT_BDMP_PBP, MSP_KERNEL_AUTO},
    {MSP_FORMAT_BDMP_TCKI, MSP_KERNEL_AUTO},
};

static int compared = 0, refused = 0;

// Every pair (values pa, x px) that is not compiled, on B (values in pa), x's values hx.
static void pairs_of(const char *label, msp_matrix B, msp_precision pa, const double *hx,
                     const double *y0) {
  const int64_t n = msp_matrix_cols(B), m = msp_matrix_rows(B);
  const msp_precision YS[] = {MSP_PRECISION_F64, MSP_PRECISION_F32, MSP_PRECISION_FX32};
  const double AB[][2] = {{1.0, 0.0}, {-0.5, 2.0}};
  double *g1 = malloc((size_t)m * sizeof *g1), *g2 = malloc((size_t)m * sizeof *g2);
  CHECK(g1 && g2, "allocation");
  for (int p = 0; g1 && g2 && p < NPREC; p++) {
    const msp_precision px = PRECS[p];
    if (pair_compiled(pa, px)) continue;
    const int segs = px == MSP_PRECISION_CPMS2 ? 2 : px == MSP_PRECISION_CPMS4 ? 4 : 1;
    for (int s = segs; s >= 1; s -= segs > 1 ? segs - 1 : 1) { // all segments, then one
      msp_vector x = NULL, xf = NULL;
      CHECK_OK(msp_vector_create_precision(gpu, n, px, &x));
      CHECK_OK(msp_vector_create_precision(gpu, n, MSP_PRECISION_F64, &xf));
      if (x && xf) {
        CHECK_OK(msp_vector_set(x, hx));
        if (segs > 1) CHECK_OK(msp_vector_set_cpms_segments(x, s));
        CHECK_OK(msp_copy(gpu, x, xf)); // x's values as x is read: exact in f64
        for (int yi = 0; yi < (int)(sizeof YS / sizeof YS[0]); yi++) {
          for (int ab = 0; ab < 2; ab++) {
            msp_status gs1 = MSP_SUCCESS, gs2 = MSP_SUCCESS;
            const msp_status s1 = product(B, x, YS[yi], AB[ab][0], AB[ab][1], y0, g1, &gs1);
            const msp_status s2 = product(B, xf, YS[yi], AB[ab][0], AB[ab][1], y0, g2, &gs2);
            CHECK(s1 == MSP_SUCCESS && s2 == MSP_SUCCESS,
                  "%s x %s (%d segments) y %s: msp_spmv %s / %s with an f64 x (%s)", label,
                  msp_precision_name(px), s, msp_precision_name(YS[yi]), msp_status_name(s1),
                  msp_status_name(s2), msp_last_error());
            if (s1 != MSP_SUCCESS || s2 != MSP_SUCCESS) continue;
            CHECK(gs1 == gs2 && (gs1 == MSP_SUCCESS || gs1 == MSP_ERR_RANGE),
                  "%s x %s y %s: msp_vector_get %s, with an f64 x %s", label,
                  msp_precision_name(px), msp_precision_name(YS[yi]), msp_status_name(gs1),
                  msp_status_name(gs2));
            int64_t first = -1;
            for (int64_t i = 0; i < m && first < 0; i++)
              if (memcmp(&g1[i], &g2[i], sizeof g1[i]) != 0) first = i;
            CHECK(first < 0,
                  "%s x %s (%d segments) y %s alpha %g beta %g: row %lld gives %.17g, with an f64 "
                  "x holding the same values %.17g",
                  label, msp_precision_name(px), s, msp_precision_name(YS[yi]), AB[ab][0],
                  AB[ab][1], (long long)first, first >= 0 ? g1[first] : 0.0,
                  first >= 0 ? g2[first] : 0.0);
            compared++;
          }
        }
      }
      msp_vector_destroy(&x);
      msp_vector_destroy(&xf);
      if (segs == 1) break;
    }
  }
  free(g1);
  free(g2);
}

// Every variant and value precision of A (f64 CSR on the device).
static void matrix_pairs(const char *name, msp_matrix A) {
  const int64_t n = msp_matrix_cols(A), m = msp_matrix_rows(A);
  double *hx = malloc((size_t)n * sizeof *hx), *y0 = malloc((size_t)m * sizeof *y0);
  CHECK(hx && y0, "allocation");
  if (!hx || !y0) goto exit;
  fill_random(hx, n, 11);
  fill_random(y0, m, 12);
  for (int v = 0; v < (int)(sizeof VARIANTS / sizeof VARIANTS[0]); v++) {
    const variant *w = &VARIANTS[v];
    const int bdmp = w->format == MSP_FORMAT_BDMP_PBP || w->format == MSP_FORMAT_BDMP_TCKI;
    for (int p = 0; p < NPREC; p++) {
      const msp_precision pa = bdmp ? MSP_PRECISION_F64 : PRECS[p];
      msp_convert_options o = msp_convert_options_default();
      msp_matrix B = NULL;
      char label[128];
      if (bdmp && p > 0) break; // BDMP chooses its own precisions from f64 values
      o.format = w->format;
      o.precision = pa;
      o.range = MSP_RANGE_ALLOW; // the stored values are what both products read
      const msp_status st = msp_matrix_convert(gpu, A, &o, &B);
      if (st == MSP_ERR_FILL_LIMIT || st == MSP_ERR_NOT_SUPPORTED) {
        refused++;
        continue;
      }
      CHECK(st == MSP_SUCCESS, "%s: convert to %s %s: %s (%s)", name, msp_format_name(w->format),
            msp_precision_name(pa), msp_status_name(st), msp_last_error());
      if (st != MSP_SUCCESS) continue;
      if (w->format == MSP_FORMAT_CSR) CHECK_OK(msp_matrix_set_kernel(B, w->kernel));
      snprintf(label, sizeof label, "%s %s%s%s values %s", name, msp_format_name(w->format),
               w->format == MSP_FORMAT_CSR ? " " : "",
               w->format == MSP_FORMAT_CSR ? msp_kernel_name(w->kernel) : "",
               msp_precision_name(pa));
      pairs_of(label, B, pa, hx, y0);
      msp_matrix_destroy(&B);
    }
  }
exit:
  free(hx);
  free(y0);
}

int main(void) {
  int r = test_cuda_context("cuda_pairs", &gpu);
  if (r >= 0) return r;
#ifdef MSP_CUDA_ALL_PAIRS
  msp_context_destroy(&gpu);
  return msp_test_skip("cuda_pairs", "built with MSP_CUDA_ALL_PAIRS: every pair has its kernel");
#else
  // Rows of every length around the vector kernel's groups and the merge path's tiles (random),
  // and a band that ELL, DIA and HDIA hold without padding.
  const char *specs[] = {"random:3000:12:5", "banded:3000:9"};
  for (int k = 0; k < 2; k++) {
    msp_matrix A = NULL;
    CHECK_OK(msp_matrix_generate(gpu, specs[k], &A));
    if (A) matrix_pairs(specs[k], A);
    msp_matrix_destroy(&A);
  }
  CHECK(compared > 0, "no product compared");
  printf("cuda_pairs: %d products compared bit for bit with an f64 x (%d conversions refused: "
         "fill limit or not supported)\n",
         compared, refused);
  msp_context_destroy(&gpu);
  return msp_test_finish("cuda_pairs");
#endif
}

// cuda_precision.c: cross test of SpMV with values in every storage precision and format, CUDA vs
// CPU.
#include "testlib.h"

#include "formats.h"
#include "internal.h"
#include "precision.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu, gpu;
static int quick; // env MSP_TEST_QUICK: small cases only (compute-sanitizer runs)

// The matrix as stored, in CSR (decoded values, `segments` read for CPMS): both backends must
// compute its fp64 product, so the bound of STYLE.md section 7 applies to it. The format's value
// array is decoded and put in place of the fp64 one for the format's own to_csr, then restored.
static int decoded(const test_csr *m, msp_matrix B, int segments, test_csr *d) {
  memset(d, 0, sizeof *d);
  if (!B->pval) { // f64: stored as given
    d->rows = m->rows;
    d->cols = m->cols;
    d->nnz = m->nnz;
    d->rowptr = malloc((size_t)(m->rows + 1) * sizeof *d->rowptr);
    d->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *d->colind);
    d->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *d->val);
    if (!d->rowptr || !d->colind || !d->val) return -1;
    memcpy(d->rowptr, m->rowptr, (size_t)(m->rows + 1) * sizeof *d->rowptr);
    if (m->nnz) {
      memcpy(d->colind, m->colind, (size_t)m->nnz * sizeof *d->colind);
      memcpy(d->val, m->val, (size_t)m->nnz * sizeof *d->val);
    }
    return 0;
  }
  return test_csr_decoded(B, segments, d);
}

static void cross(const test_csr *m, msp_format f, msp_precision p, const char *label,
                  uint64_t seed) {
  msp_matrix A0 = NULL, Ac = NULL, Ag = NULL;
  msp_vector xc = NULL, yc = NULL, xg = NULL, yg = NULL;
  test_csr d;
  memset(&d, 0, sizeof d);
  size_t nx = (size_t)(m->cols ? m->cols : 1), ny = (size_t)(m->rows ? m->rows : 1);
  double *hx = malloc(nx * sizeof *hx), *y0 = malloc(ny * sizeof *y0);
  double *ref = malloc(ny * sizeof *ref), *got = malloc(ny * sizeof *got);
  double *again = malloc(ny * sizeof *again);
  if (!hx || !y0 || !ref || !got || !again) {
    CHECK(0, "%s: host allocation", label);
    goto exit;
  }
  msp_rng r = {seed};
  for (int64_t j = 0; j < m->cols; j++)
    hx[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
  for (int64_t i = 0; i < m->rows; i++)
    y0[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
  msp_convert_options o = msp_convert_options_default();
  o.format = f;
  o.precision = p;
  o.max_fill = 20;
  CHECK_OK(test_csr_to_matrix(m, cpu, &A0));
  if (!A0) goto exit;
  {
    // padded formats may be refused for a matrix that does not suit them: then skip the case
    msp_status cst = msp_matrix_convert(cpu, A0, &o, &Ac);
    if (cst == MSP_ERR_FILL_LIMIT) goto exit;
    CHECK(cst == MSP_SUCCESS, "%s %s %s: convert: %s", label, msp_format_name(f),
          msp_precision_name(p), msp_last_error());
  }
  msp_matrix_destroy(&A0);
  CHECK_OK(test_csr_to_matrix(m, gpu, &A0));
  if (!A0) goto exit;
  CHECK_OK(msp_matrix_convert(gpu, A0, &o, &Ag));
  CHECK_OK(msp_vector_create(cpu, m->cols, &xc));
  CHECK_OK(msp_vector_create(cpu, m->rows, &yc));
  CHECK_OK(msp_vector_create(gpu, m->cols, &xg));
  CHECK_OK(msp_vector_create(gpu, m->rows, &yg));
  if (!Ac || !Ag || !xc || !yc || !xg || !yg) goto exit;
  CHECK_OK(msp_vector_set(xc, hx));
  CHECK_OK(msp_vector_set(xg, hx));
  int segs = msp__prec_segments(p);
  for (int k = segs > 1 ? 1 : 0; k <= (segs > 1 ? segs : 0); k++) {
    if (segs > 1) {
      CHECK_OK(msp_matrix_set_cpms_segments(Ac, k));
      CHECK_OK(msp_matrix_set_cpms_segments(Ag, k));
    }
    test_csr_free(&d);
    if (decoded(m, Ac, k, &d) != 0) {
      CHECK(0, "%s: decoding", label);
      goto exit;
    }
    static const double ab[][2] = {{1.0, 0.0}, {2.5, -0.5}};
    for (size_t c = 0; c < 2; c++) {
      double alpha = ab[c][0], beta = ab[c][1];
      char lab[256];
      snprintf(lab, sizeof lab, "%s %s %s k=%d alpha=%g beta=%g", label, msp_format_name(f),
               msp_precision_name(p), k, alpha, beta);
      CHECK_OK(msp_vector_set(yc, y0));
      CHECK_OK(msp_spmv(cpu, alpha, Ac, xc, beta, yc));
      CHECK_OK(msp_vector_get(yc, ref));
      CHECK_OK(msp_vector_set(yg, y0));
      CHECK_OK(msp_spmv(gpu, alpha, Ag, xg, beta, yg));
      CHECK_OK(msp_vector_get(yg, got));
      CHECK(test_compare_rows(&d, alpha, hx, beta, y0, got, ref, lab) == 0, "%s", lab);
      CHECK_OK(msp_vector_set(yg, y0));
      CHECK_OK(msp_spmv(gpu, alpha, Ag, xg, beta, yg));
      CHECK_OK(msp_vector_get(yg, again));
      CHECK(m->rows == 0 || memcmp(got, again, (size_t)m->rows * sizeof *got) == 0,
            "%s: two runs differ in their bits", lab);
    }
  }
exit:
  test_csr_free(&d);
  msp_matrix_destroy(&A0);
  msp_matrix_destroy(&Ac);
  msp_matrix_destroy(&Ag);
  msp_vector_destroy(&xc);
  msp_vector_destroy(&yc);
  msp_vector_destroy(&xg);
  msp_vector_destroy(&yg);
  free(hx);
  free(y0);
  free(ref);
  free(got);
  free(again);
}

int main(void) {
  const char *q = getenv("MSP_TEST_QUICK");
  quick = q && *q;
  int rc_ = test_cuda_context("cuda_precision", &gpu);
  if (rc_ >= 0) return rc_;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  struct {
    int64_t rows, cols;
    double mean;
    int powerlaw;
  } cases[] = {{0, 0, 0, 0},          {1, 1, 1, 0},           {33, 31, 3, 0},
               {1000, 1000, 0, 0},    {1000, 1000, 8, 0},     {3001, 500, 40, 0},
               {5000, 5000, 1000, 1}, {200000, 200000, 12, 0}};
  int ncases = quick ? 6 : (int)(sizeof cases / sizeof *cases);
  for (int c = 0; c < ncases && cpu; c++) {
    test_csr m;
    int rc =
        cases[c].powerlaw
            ? test_csr_powerlaw(&m, cases[c].rows, cases[c].cols, (int64_t)cases[c].mean, 40 + c)
            : test_csr_random(&m, cases[c].rows, cases[c].cols, cases[c].mean, 40 + c);
    CHECK(rc == 0, "generator");
    if (rc == 0) {
      // values over several decades: fixed point scales per block, CPMS truncation all matter
      msp_rng r = {90 + (uint64_t)c};
      for (int64_t k = 0; k < m.nnz; k++)
        m.val[k] *= pow(10.0, (double)msp_rng_range(&r, 6) - 3);
      char label[128];
      snprintf(label, sizeof label, "%lldx%lld nnz %lld", (long long)m.rows, (long long)m.cols,
               (long long)m.nnz);
      static const msp_format formats[] = {MSP_FORMAT_CSR, MSP_FORMAT_COO, MSP_FORMAT_ELL,
                                           MSP_FORMAT_HLL, MSP_FORMAT_DIA, MSP_FORMAT_HDIA,
                                           MSP_FORMAT_HYB};
      for (size_t fi = 0; fi < sizeof formats / sizeof *formats; fi++) {
#define MSP_CROSS_PREC_(name, tag, bytes)                                                          \
  cross(&m, formats[fi], MSP_PRECISION_##name, label, 7 + (uint64_t)c);
        MSP_PRECISION_LIST(MSP_CROSS_PREC_)
#undef MSP_CROSS_PREC_
      }
    }
    test_csr_free(&m);
  }
  msp_context_destroy(&cpu);
  msp_context_destroy(&gpu);
  return msp_test_finish("cuda_precision");
}

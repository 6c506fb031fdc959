// test_determinism.c: the same result bits with 1 and with 2+ OpenMP threads (SpMV, reductions),
// fp64 and every format with values, x and y in reduced storage precisions.
#include "testlib.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 300000
static const int nthreads_list[] = {2, 3, 4, 7};
#define NTHREADS 4

// Run every operation with `threads` threads; write the result bits into out.
static void run_all(msp_context cpu, msp_matrix A, msp_matrix C, const double *hx, int threads,
                    double *y_csr, double *y_coo, double *red) {
  omp_set_num_threads(threads);
  msp_vector x = NULL, y = NULL;
  CHECK_OK(msp_vector_create(cpu, N, &x));
  CHECK_OK(msp_vector_create(cpu, N, &y));
  if (!x || !y) goto exit;
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_spmv(cpu, 1.5, A, x, 0.0, y));
  CHECK_OK(msp_vector_get(y, y_csr));
  CHECK_OK(msp_spmv(cpu, 1.5, C, x, 0.0, y));
  CHECK_OK(msp_vector_get(y, y_coo));
  CHECK_OK(msp_dot(cpu, x, y, &red[0]));
  CHECK_OK(msp_nrm2(cpu, y, &red[1]));
  CHECK_OK(msp_nrm1(cpu, y, &red[2]));
  CHECK_OK(msp_axpby(cpu, 0.3, x, -0.7, y));
  CHECK_OK(msp_nrm2(cpu, y, &red[3]));
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
}

// ---- reduced precisions ------------------------------------------------------------------------
// A banded matrix with uneven rows (every 50th row holds the whole band), rows not a multiple of
// 32, so that every format applies (DIA and HDIA included) and row blocks end mid-block.
#define RN 20011
#define BAND 48

static int banded(test_csr *m) {
  msp_rng r = {41};
  memset(m, 0, sizeof *m);
  m->rows = m->cols = RN;
  m->rowptr = malloc((RN + 1) * sizeof *m->rowptr);
  m->colind = malloc((size_t)RN * (2 * BAND + 1) * sizeof *m->colind);
  m->val = malloc((size_t)RN * (2 * BAND + 1) * sizeof *m->val);
  if (!m->rowptr || !m->colind || !m->val) return -1;
  int64_t k = 0;
  m->rowptr[0] = 0;
  for (int64_t i = 0; i < RN; i++) {
    for (int64_t j = i - BAND; j <= i + BAND; j++) {
      if (j < 0 || j >= RN || (i % 50 != 0 && j != i && msp_rng_range(&r, 10) != 0)) continue;
      m->colind[k] = (int32_t)j;
      // magnitudes in [0.1, 1): held by every precision without overflow or flush
      m->val[k++] = (msp_rng_range(&r, 2) ? 1.0 : -1.0) * (0.1 + 0.9 * msp_rng_uniform(&r));
    }
    m->rowptr[i + 1] = k;
  }
  m->nnz = k;
  return 0;
}

// y = 1.5 A x - 0.5 y0, then y += 0.25 x, dot(x, y) and nrm2(y), with x and y in px and py
// (x reading xseg CPMS segments); the bits of y and of the reductions go to out / red.
static void run_prec(msp_context cpu, msp_matrix B, msp_precision px, int xseg, msp_precision py,
                     const double *hx, const double *hy, int nthreads, double *out, double *red) {
  omp_set_num_threads(nthreads);
  msp_vector x = NULL, y = NULL;
  CHECK_OK(msp_vector_create_precision(cpu, RN, px, &x));
  CHECK_OK(msp_vector_create_precision(cpu, RN, py, &y));
  if (!x || !y) goto exit;
  CHECK_OK(msp_vector_set(x, hx));
  CHECK_OK(msp_vector_set(y, hy));
  if (xseg) CHECK_OK(msp_vector_set_cpms_segments(x, xseg));
  CHECK_OK(msp_spmv(cpu, 1.5, B, x, -0.5, y));
  CHECK_OK(msp_axpby(cpu, 0.25, x, 1.0, y));
  CHECK_OK(msp_dot(cpu, x, y, &red[0]));
  CHECK_OK(msp_nrm2(cpu, y, &red[1]));
  {
    // Random results: none overflows; the few that y's precision stores as 0 are counted and
    // reported, and the count is compared across thread counts with the bits.
    const msp_status st = msp_vector_get(y, out);
    int64_t saturated = -1, flushed = -1;
    CHECK_OK(msp_vector_range_info(y, &saturated, &flushed));
    CHECK(st == MSP_SUCCESS || (st == MSP_ERR_RANGE && saturated == 0 && flushed > 0),
          "msp_vector_get(y %s): %s (%s)", msp_precision_name(py), msp_status_name(st),
          msp_last_error());
    red[2] = (double)flushed;
  }
exit:
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
}

static void reduced_precisions(msp_context cpu) {
  // (x, its CPMS segments, y): every precision appears as x and as y
  static const struct {
    msp_precision x;
    int xseg;
    msp_precision y;
  } vecs[] = {
      {MSP_PRECISION_F32, 0, MSP_PRECISION_F16},    {MSP_PRECISION_FX16, 0, MSP_PRECISION_FX32},
      {MSP_PRECISION_CPMS4, 2, MSP_PRECISION_BF16}, {MSP_PRECISION_BF16, 0, MSP_PRECISION_FX16},
      {MSP_PRECISION_FX32, 0, MSP_PRECISION_CPMS2}, {MSP_PRECISION_CPMS2, 1, MSP_PRECISION_F32},
      {MSP_PRECISION_F16, 0, MSP_PRECISION_CPMS4},  {MSP_PRECISION_F64, 0, MSP_PRECISION_F32},
  };
  static const msp_precision mprec[] = {MSP_PRECISION_F64, MSP_PRECISION_F16, MSP_PRECISION_FX16,
                                        MSP_PRECISION_CPMS2};
  const size_t nv = sizeof vecs / sizeof vecs[0], nm = sizeof mprec / sizeof mprec[0];
  test_csr m;
  msp_matrix A = NULL;
  double *hx = malloc(RN * sizeof *hx), *hy = malloc(RN * sizeof *hy);
  double *y1 = malloc(RN * sizeof *y1), *yk = malloc(RN * sizeof *yk);
  CHECK(banded(&m) == 0 && hx && hy && y1 && yk, "allocation");
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  if (!A || !hx || !hy || !y1 || !yk) goto exit;
  msp_rng r = {8};
  for (int64_t i = 0; i < RN; i++) {
    hx[i] = (msp_rng_range(&r, 2) ? 1.0 : -1.0) * (0.25 + 0.75 * msp_rng_uniform(&r));
    // y0 spans six decades from block to block: fixed-point y keeps a scale per block
    hy[i] = (i / 32 % 2 ? 1e-6 : 1.0) * (0.5 + 0.5 * msp_rng_uniform(&r));
  }
  int cases = 0;
  for (int f = 0; f < MSP_FORMAT_COUNT; f++) {
    msp_matrix B[4] = {NULL, NULL, NULL, NULL};
    size_t nb = 0;
    for (size_t a = 0; a < nm; a++) {
      msp_convert_options o = msp_convert_options_default();
      o.format = (msp_format)f;
      o.precision = mprec[a];
      o.max_fill = 1e6;
      if (mprec[a] == MSP_PRECISION_CPMS2) o.cpms_segments = 1;
      msp_status st = msp_matrix_convert(cpu, A, &o, &B[nb]);
      // BDMP chooses its own per-tile precision: f64 only
      if (st == MSP_ERR_NOT_SUPPORTED && mprec[a] != MSP_PRECISION_F64) continue;
      CHECK(st == MSP_SUCCESS, "convert to %s %s: %s", msp_format_name((msp_format)f),
            msp_precision_name(mprec[a]), msp_last_error());
      if (B[nb]) nb++;
    }
    // The vector pairs are shared out over the format's matrices: every format meets every pair
    // once, and every matrix precision several pairs.
    for (size_t v = 0; v < nv && nb > 0; v++) {
      const msp_matrix Bv = B[v % nb];
      double r1[3] = {0, 0, 0}, rk[3] = {0, 0, 0};
      run_prec(cpu, Bv, vecs[v].x, vecs[v].xseg, vecs[v].y, hx, hy, 1, y1, r1);
      for (int t = 0; t < NTHREADS; t++) {
        run_prec(cpu, Bv, vecs[v].x, vecs[v].xseg, vecs[v].y, hx, hy, nthreads_list[t], yk, rk);
        CHECK(memcmp(y1, yk, RN * sizeof *y1) == 0 && memcmp(r1, rk, sizeof r1) == 0,
              "%s %s, x %s (%d segments), y %s: 1 and %d threads differ",
              msp_format_name((msp_format)f), msp_precision_name(msp_matrix_precision(Bv)),
              msp_precision_name(vecs[v].x), vecs[v].xseg, msp_precision_name(vecs[v].y),
              nthreads_list[t]);
      }
      cases++;
    }
    for (size_t a = 0; a < nb; a++)
      msp_matrix_destroy(&B[a]);
  }
  // every format (BDMP in f64 only) with every vector pair
  CHECK(cases == MSP_FORMAT_COUNT * (int)nv, "%d cases ran", cases);
exit:
  msp_matrix_destroy(&A);
  test_csr_free(&m);
  free(hx);
  free(hy);
  free(y1);
  free(yk);
}

int main(void) {
  msp_context cpu = NULL;
  msp_matrix A = NULL, C = NULL;
  test_csr m;
  const int saved_threads = omp_get_max_threads();
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  CHECK(test_csr_powerlaw(&m, N, N, 20000, 99) == 0, "generator");
  CHECK_OK(test_csr_to_matrix(&m, cpu, &A));
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_COO;
  CHECK_OK(msp_matrix_convert(cpu, A, &o, &C));
  double *hx = malloc(N * sizeof *hx);
  double *y1 = malloc(N * sizeof *y1), *c1 = malloc(N * sizeof *c1);
  double *yk = malloc(N * sizeof *yk), *ck = malloc(N * sizeof *ck);
  double r1[4], rk[4];
  msp_rng r = {5};
  for (int i = 0; i < N; i++)
    hx[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
  if (A && C) {
    run_all(cpu, A, C, hx, 1, y1, c1, r1);
    for (int t = 0; t < NTHREADS; t++) {
      run_all(cpu, A, C, hx, nthreads_list[t], yk, ck, rk);
      CHECK(memcmp(y1, yk, N * sizeof *y1) == 0, "CSR SpMV bits differ: 1 vs %d threads",
            nthreads_list[t]);
      CHECK(memcmp(c1, ck, N * sizeof *c1) == 0, "COO SpMV bits differ: 1 vs %d threads",
            nthreads_list[t]);
      CHECK(memcmp(r1, rk, sizeof r1) == 0,
            "reductions differ with %d threads: dot %.17g/%.17g nrm2 %.17g/%.17g nrm1 "
            "%.17g/%.17g",
            nthreads_list[t], r1[0], rk[0], r1[1], rk[1], r1[2], rk[2]);
    }
  }
  // The rows are shared out by nonzeros (src/cpu/dispatch.h) but each row is summed whole in
  // an order fixed by its length, as COO sums it too: COO gives CSR's bits.
  if (A && C) CHECK(memcmp(y1, c1, N * sizeof *y1) == 0, "COO and CSR SpMV bits differ (1 thread)");
  { // HYB on the skewed rows: its blocks are shared out by ELL slots plus COO entries
    msp_matrix H = NULL;
    o.format = MSP_FORMAT_HYB;
    CHECK_OK(msp_matrix_convert(cpu, A, &o, &H));
    if (H) {
      run_all(cpu, H, C, hx, 1, y1, c1, r1);
      for (int t = 0; t < NTHREADS; t++) {
        run_all(cpu, H, C, hx, nthreads_list[t], yk, ck, rk);
        CHECK(memcmp(y1, yk, N * sizeof *y1) == 0, "HYB SpMV bits differ: 1 vs %d threads",
              nthreads_list[t]);
      }
    }
    msp_matrix_destroy(&H);
  }
  reduced_precisions(cpu);
  omp_set_num_threads(saved_threads);
  free(hx);
  free(y1);
  free(c1);
  free(yk);
  free(ck);
  test_csr_free(&m);
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&C);
  msp_context_destroy(&cpu);
  return msp_test_finish("test_determinism");
}

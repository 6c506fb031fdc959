// blas1.c: CPU vector operations; reductions in a fixed order independent of the thread count.
#include "internal.h"

#include <math.h>
#include <string.h>

// Chunks of MSP__RED_CHUNK entries are summed in index order (in parallel over chunks); up to
// GROUP chunk sums are combined pairwise in a fixed tree; groups are added in order. No
// allocation: the partials live on the stack.
#define GROUP 1024

typedef double (*term_fn)(const double *x, const double *y, int64_t i, double s);

static double pairwise(double *p, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2)
    for (int64_t i = 0; i + w < n; i += 2 * w)
      p[i] += p[i + w];
  return n ? p[0] : 0.0;
}

static double reduce(const double *x, const double *y, int64_t n, double s, term_fn f) {
  double part[GROUP];
  double total = 0.0;
  int64_t chunks = (n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  for (int64_t g0 = 0; g0 < chunks; g0 += GROUP) {
    int64_t ng = chunks - g0 < GROUP ? chunks - g0 : GROUP;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < ng; c++) {
      int64_t b = (g0 + c) * MSP__RED_CHUNK;
      int64_t e = b + MSP__RED_CHUNK < n ? b + MSP__RED_CHUNK : n;
      double t = 0.0;
      for (int64_t i = b; i < e; i++)
        t += f(x, y, i, s);
      part[c] = t;
    }
    total += pairwise(part, ng);
  }
  return total;
}

static double t_dot(const double *x, const double *y, int64_t i, double s) {
  return x[i] * y[i];
}
static double t_abs(const double *x, const double *y, int64_t i, double s) {
  return fabs(x[i]);
}
static double t_sq(const double *x, const double *y, int64_t i, double s) {
  double v = x[i] * s;
  return v * v;
}

msp_status msp__cpu_dot(msp_context ctx, msp_vector x, msp_vector y, double *r) {
  *r = reduce(x->h_data, y->h_data, x->n, 0, t_dot);
  return MSP_SUCCESS;
}

msp_status msp__cpu_nrm1(msp_context ctx, msp_vector x, double *r) {
  *r = reduce(x->h_data, NULL, x->n, 0, t_abs);
  return MSP_SUCCESS;
}

// 2-norm scaled by the largest magnitude, so squares neither overflow nor underflow.
msp_status msp__cpu_nrm2(msp_context ctx, msp_vector x, double *r) {
  double m = 0.0;
  const double *xv = x->h_data;
  for (int64_t i = 0; i < x->n; i++)
    if (fabs(xv[i]) > m || isnan(xv[i])) m = isnan(xv[i]) ? NAN : fabs(xv[i]);
  if (m == 0.0 || !isfinite(m)) {
    *r = m;
    return MSP_SUCCESS;
  }
  *r = m * sqrt(reduce(xv, NULL, x->n, 1.0 / m, t_sq));
  return MSP_SUCCESS;
}

msp_status msp__cpu_axpby(msp_context ctx, double a, msp_vector x, double b, msp_vector y) {
  const double *xv = x->h_data;
  double *yv = y->h_data;
  int64_t n = x->n;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    yv[i] = b == 0.0 ? a * xv[i] : a * xv[i] + b * yv[i];
  return MSP_SUCCESS;
}

msp_status msp__cpu_scale(msp_context ctx, double a, msp_vector x) {
  double *xv = x->h_data;
  int64_t n = x->n;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    xv[i] *= a;
  return MSP_SUCCESS;
}

msp_status msp__cpu_copy(msp_context ctx, msp_vector x, msp_vector y) {
  if (x->n) memcpy(y->h_data, x->h_data, (size_t)x->n * sizeof(double));
  return MSP_SUCCESS;
}

msp_status msp__cpu_fill(msp_context ctx, msp_vector x, double value) {
  double *xv = x->h_data;
  int64_t n = x->n;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    xv[i] = value;
  return MSP_SUCCESS;
}

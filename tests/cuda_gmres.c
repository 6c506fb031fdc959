// cuda_gmres.c: GMRES / CB-GMRES on the CUDA backend against the CPU backend. For every system,
// basis (f64 f32 f16 bf16 fx32 fx16 and auto) and preconditioner (none, jacobi, ilu0), with the
// default orthogonalisation (DCGS2; CGS and MGS once per system): the same
// status, convergence, iteration and restart counts and basis precisions per cycle, residual
// histories (relative residuals ||r_k|| / ||b||) within 1e-10 of each other, every converged
// result's explicit residual recomputed here
// (long double, from the host CSR) against the tolerance, and a second CUDA solve giving the same
// bits (x and history). Also b = 0 and an exact initial guess on the device.
// Systems: gen:convdiff3d, gen:poisson3d and, when the collection is present (MSP_MATRICES_DIR),
// sherman4, orsirr_1 and pde2961, restart 100. orsirr_1 runs preconditioned only: without a
// preconditioner its run is chaotic (with the CPU backend alone, a 1-ulp change of a third of b's
// entries moves the fx16 basis from 1105 to 1116 iterations and the f32 history by 2e-9), so no
// two summation orders can agree there; the other systems moved by at most 1e-12 under the same
// change. MSP_TEST_QUICK=1: two small generated systems, a few bases
// (for compute-sanitizer). Skipped (77) without CUDA or a device.
#include "internal.h"
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *NAME = "cuda_gmres";
static msp_context gpu, cpu;

#define MAX_ITERS 2000
#define HIST_TOL 1e-10

// The bound on the difference of the CPU and CUDA residual histories. DCGS2's two passes, the
// start vector of its cycles, the combination and the scalar CSR product give the CPU's bits on
// CUDA; where anything else rounds or sums otherwise (the vector CSR kernel, CGS's and MGS's
// projections and subtractions), w differs in its last bits, and an entry that lies
// next to a rounding boundary of the basis may round one way on one backend and the other way on
// the other. IEEE bases round relative to each value and stay within HIST_TOL on every system here.
// A fixed-point basis rounds at a fixed position of its column's scale: one such entry moves the
// column by half a unit of the scale, 1 / (2 qmax) of its largest entry (fx32 2.3e-10, fx16
// 1.5e-5), and the history with it (measured on pde2961 without a preconditioner: 1.7e-10 for
// fx32, 1.6e-10 for fx16, past 1e-10). Those histories are compared within that unit.
static double hist_tol(const msp_solver_report *r) {
  double tol = HIST_TOL;
  for (int k = 0; k < r->cycles_recorded; k++)
    if (msp_prec_is_fixed(r->cycle_precision[k])) {
      const double unit = 0.5 / msp_prec_qmax(r->cycle_precision[k]);
      tol = unit > tol ? unit : tol;
    }
  return tol;
}

typedef struct {
  char label[256];
  msp_matrix A[2]; // 0: CPU, 1: CUDA
  test_csr csr;    // host copy for the independent residual
  double *b;
} sys;

// One solve's outcome on the host.
typedef struct {
  msp_status st;
  msp_solver_report rep;
  double *x;
  double *hist;
} outcome;

static void outcome_free(outcome *o) {
  free(o->x);
  free(o->hist);
  memset(o, 0, sizeof *o);
}

// ||b - A x|| / ||b|| in long double from the host CSR (independent of the library).
static double true_residual(const test_csr *m, const double *b, const double *x) {
  long double rr = 0, bb = 0;
  for (int64_t i = 0; i < m->rows; i++) {
    long double t = b[i];
    for (int64_t p = m->rowptr[i]; p < m->rowptr[i + 1]; p++)
      t -= (long double)m->val[p] * x[m->colind[p]];
    rr += t * t;
    bb += (long double)b[i] * b[i];
  }
  return bb > 0 ? (double)sqrtl(rr / bb) : (double)sqrtl(rr);
}

static int solve(int dev, const sys *s, const msp_solver_options *o, outcome *out) {
  msp_context ctx = dev ? gpu : cpu;
  const int64_t n = s->csr.rows;
  msp_vector vb = NULL, vx = NULL;
  memset(out, 0, sizeof *out);
  out->x = calloc((size_t)n + 1, sizeof(double));
  out->hist = calloc(MAX_ITERS + 2, sizeof(double));
  CHECK(out->x && out->hist, "out of host memory");
  if (!out->x || !out->hist) return 1;
  out->rep.history = out->hist;
  out->rep.history_capacity = MAX_ITERS + 2;
  CHECK_OK(msp_vector_create(ctx, n, &vb));
  CHECK_OK(msp_vector_create(ctx, n, &vx));
  CHECK_OK(msp_vector_set(vb, s->b));
  out->st = msp_gmres(ctx, s->A[dev], vb, vx, o, &out->rep);
  CHECK_OK(msp_vector_get(vx, out->x));
  msp_vector_destroy(&vb);
  msp_vector_destroy(&vx);
  return 0;
}

static const char *basis_name(const msp_solver_options *o) {
  return o->basis_auto ? "auto" : msp_precision_name(o->basis_precision);
}
static const char *precond_name(msp_precond p) {
  return p == MSP_PRECOND_JACOBI ? "jacobi" : p == MSP_PRECOND_ILU0 ? "ilu0" : "none";
}

// CPU against CUDA, and CUDA against itself.
static void compare(const sys *s, const msp_solver_options *o) {
  char what[512];
  snprintf(what, sizeof what, "%s basis %s precond %s", s->label, basis_name(o),
           precond_name(o->precond));
  outcome c, g, g2;
  if (solve(0, s, o, &c) || solve(1, s, o, &g) || solve(1, s, o, &g2)) return;
  const msp_solver_report *rc = &c.rep, *rg = &g.rep;
  CHECK(c.st == g.st, "%s: status cpu %s, cuda %s (%s)", what, msp_status_name(c.st),
        msp_status_name(g.st), msp_last_error());
  if (c.st == MSP_SUCCESS && g.st == MSP_SUCCESS) {
    CHECK(rc->converged == rg->converged && rc->iterations == rg->iterations &&
              rc->restarts == rg->restarts,
          "%s: cpu converged %d after %lld iterations (%lld restarts), cuda %d after %lld (%lld)",
          what, rc->converged, (long long)rc->iterations, (long long)rc->restarts, rg->converged,
          (long long)rg->iterations, (long long)rg->restarts);
    CHECK(rc->cycles_recorded == rg->cycles_recorded, "%s: cycles recorded %d vs %d", what,
          rc->cycles_recorded, rg->cycles_recorded);
    for (int k = 0; k < rc->cycles_recorded && k < rg->cycles_recorded; k++)
      if (rc->cycle_precision[k] != rg->cycle_precision[k]) {
        CHECK(0, "%s: cycle %d basis %s on the cpu, %s on cuda", what, k,
              msp_precision_name(rc->cycle_precision[k]),
              msp_precision_name(rg->cycle_precision[k]));
        break;
      }
    CHECK(rc->history_length == rg->history_length, "%s: history length %lld vs %lld", what,
          (long long)rc->history_length, (long long)rg->history_length);
    double worst = 0.0;
    int64_t at = 0;
    for (int64_t k = 0; k < rc->history_length && k < rg->history_length; k++)
      if (fabs(c.hist[k] - g.hist[k]) > worst) worst = fabs(c.hist[k] - g.hist[k]), at = k;
    const double tol = hist_tol(rc);
    CHECK(worst <= tol, "%s: residual history differs by %.3g at step %lld (%.17g vs %.17g)", what,
          worst, (long long)at, c.hist[at], g.hist[at]);
    CHECK(fabs(rc->rel_residual - rg->rel_residual) <= tol,
          "%s: final residual %.17g (cpu) vs %.17g (cuda)", what, rc->rel_residual,
          rg->rel_residual);
    // Every converged result, each backend's x, recomputed independently.
    const outcome *both[2] = {&c, &g};
    for (int d = 0; d < 2; d++) {
      if (!both[d]->rep.converged) continue;
      const double rel = true_residual(&s->csr, s->b, both[d]->x);
      CHECK(rel <= o->rtol * 1.01 + 1e-15, "%s (%s): converged but the true residual is %g", what,
            d ? "cuda" : "cpu", rel);
      CHECK(fabs(rel - both[d]->rep.rel_residual) <= 1e-3 * rel + 1e-15,
            "%s (%s): reported residual %g, recomputed %g", what, d ? "cuda" : "cpu",
            both[d]->rep.rel_residual, rel);
    }
  }
  // The same CUDA solve twice: the same bits.
  CHECK(g.st == g2.st && rg->iterations == g2.rep.iterations &&
            rg->history_length == g2.rep.history_length,
        "%s: two cuda runs differ (status %s / %s, %lld / %lld iterations)", what,
        msp_status_name(g.st), msp_status_name(g2.st), (long long)rg->iterations,
        (long long)g2.rep.iterations);
  if (g.st == g2.st && rg->history_length == g2.rep.history_length) {
    CHECK(memcmp(g.x, g2.x, (size_t)s->csr.rows * sizeof(double)) == 0,
          "%s: two cuda runs give different x", what);
    CHECK(memcmp(g.hist, g2.hist, (size_t)rg->history_length * sizeof(double)) == 0,
          "%s: two cuda runs give different residual histories", what);
  }
  outcome_free(&c);
  outcome_free(&g);
  outcome_free(&g2);
}

// b = 0 gives x = 0 at once; an initial guess that solves the system (b made from it by the
// backend's own product) returns without an iteration and without NaN. Both backends.
static void edge_cases(const sys *s) {
  const int64_t n = s->csr.rows;
  double *x = calloc((size_t)n + 1, sizeof *x), *g = calloc((size_t)n + 1, sizeof *g);
  CHECK(x && g, "out of host memory");
  if (!x || !g) goto done;
  for (int64_t i = 0; i < n; i++)
    g[i] = 1.0 + 0.5 * sin((double)i);
  for (int dev = 0; dev < 2; dev++) {
    msp_context ctx = dev ? gpu : cpu;
    const char *side = dev ? "cuda" : "cpu";
    msp_vector vb = NULL, vx = NULL;
    msp_solver_report rep;
    memset(&rep, 0, sizeof rep);
    CHECK_OK(msp_vector_create(ctx, n, &vb));
    CHECK_OK(msp_vector_create(ctx, n, &vx));
    // b = 0 from a nonzero guess.
    CHECK_OK(msp_vector_fill(vb, 0.0));
    CHECK_OK(msp_vector_set(vx, g));
    CHECK_OK(msp_gmres(ctx, s->A[dev], vb, vx, NULL, &rep));
    CHECK_OK(msp_vector_get(vx, x));
    int zero = 1;
    for (int64_t i = 0; i < n; i++)
      zero &= x[i] == 0.0;
    CHECK(rep.converged && rep.iterations == 0 && zero, "%s b = 0 (%s): converged %d, %lld its",
          s->label, side, rep.converged, (long long)rep.iterations);
    // Exact x0: b = A g on this backend.
    CHECK_OK(msp_vector_set(vx, g));
    CHECK_OK(msp_spmv(ctx, 1.0, s->A[dev], vx, 0.0, vb));
    for (int p = 0; p < 2; p++) {
      msp_solver_options o = msp_solver_options_default();
      o.precond = p ? MSP_PRECOND_JACOBI : MSP_PRECOND_NONE;
      o.basis_precision = p ? MSP_PRECISION_F32 : MSP_PRECISION_F64;
      CHECK_OK(msp_vector_set(vx, g));
      CHECK_OK(msp_gmres(ctx, s->A[dev], vb, vx, &o, &rep));
      CHECK_OK(msp_vector_get(vx, x));
      CHECK(rep.converged && rep.iterations == 0 && rep.rel_residual == 0.0 &&
                memcmp(x, g, (size_t)n * sizeof *x) == 0,
            "%s exact x0 (%s): converged %d, %lld its, residual %g", s->label, side, rep.converged,
            (long long)rep.iterations, rep.rel_residual);
    }
    msp_vector_destroy(&vb);
    msp_vector_destroy(&vx);
  }
done:
  free(x);
  free(g);
}

// ---- the basis operations themselves, CPU against CUDA ------------------------------------------
// A basis of `cols` columns of n values in prec on each backend; every column stored from the same
// normalised vector (the stored values read back into w must be the same bits: both backends
// round through src/common/precision.h), then projections over a column range (within 1e-13 of
// the CPU's), a subtraction and a combination (within 1e-13 of the vector's norm).
static void set_f64(msp_vector v, const double *h) {
  CHECK_OK(msp_vector_set(v, h));
  CHECK_OK(msp__vector_current(v));
}
static void get_f64(msp_vector v, double *h) {
  msp__vector_written(v);
  CHECK_OK(msp_vector_get(v, h));
}

static double dot(const double *a, const double *b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

// staged: the CUDA basis stages its columns in shared memory whatever their size (stage_bytes 0;
// by default only columns larger than L2 are staged).
static void basis_ops(msp_precision prec, int64_t n, int cols, int staged) {
  const char *pn = msp_precision_name(prec);
  msp__basis *V[2] = {NULL, NULL};
  msp_vector w[2] = {NULL, NULL};
  double *src = calloc((size_t)n, sizeof *src), *got[2], *coef = calloc((size_t)cols, sizeof *coef);
  double *h[2] = {calloc((size_t)cols, sizeof(double)), calloc((size_t)cols, sizeof(double))};
  double *u[2] = {calloc((size_t)cols, sizeof(double)), calloc((size_t)cols, sizeof(double))};
  double *fused[2] = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
  double ww[2] = {0, 0}, ww2[2] = {0, 0};
  got[0] = calloc((size_t)n, sizeof(double));
  got[1] = calloc((size_t)n, sizeof(double));
  CHECK(src && coef && h[0] && h[1] && got[0] && got[1] && u[0] && u[1] && fused[0] && fused[1],
        "out of host memory");
  msp_rng r = {(uint64_t)n * 977 + (uint64_t)cols};
  for (int d = 0; d < 2; d++) {
    msp_context ctx = d ? gpu : cpu;
    CHECK_OK(ctx->backend->basis_alloc(ctx, n, cols, prec, &V[d]));
    CHECK_OK(msp_vector_create(ctx, n, &w[d]));
  }
  if (staged && V[1]) V[1]->stage_bytes = 0.0;
  if (!V[0] || !V[1] || !w[0] || !w[1] || !src || !coef || !h[0] || !h[1] || !got[0] || !got[1] ||
      !u[0] || !u[1] || !fused[0] || !fused[1])
    goto done;
  for (int j = 0; j < cols; j++) {
    double nn = 0.0;
    for (int64_t i = 0; i < n; i++) {
      src[i] = msp_rng_uniform(&r) * 2 - 1;
      nn += src[i] * src[i];
    }
    for (int64_t i = 0; i < n; i++)
      src[i] /= sqrt(nn);
    for (int d = 0; d < 2; d++) {
      msp_context ctx = d ? gpu : cpu;
      set_f64(w[d], src);
      CHECK_OK(ctx->backend->basis_store(ctx, V[d], j, w[d]));
      get_f64(w[d], got[d]);
    }
    if (memcmp(got[0], got[1], (size_t)n * sizeof(double)) != 0) {
      CHECK(0, "basis %s n %lld: column %d stored differently on the two backends", pn,
            (long long)n, j);
      goto done;
    }
  }
  for (int64_t i = 0; i < n; i++)
    src[i] = sin(0.37 * (double)i) + 0.25;
  for (int k = 0; k < cols; k++)
    coef[k] = cos((double)k) / (1.0 + k);
  // Projections over the whole basis and over a middle range.
  const int ranges[2][2] = {{0, cols}, {cols / 3, cols - cols / 4}};
  for (int q = 0; q < 2; q++) {
    const int j0 = ranges[q][0], j1 = ranges[q][1];
    for (int d = 0; d < 2; d++) {
      msp_context ctx = d ? gpu : cpu;
      set_f64(w[d], src);
      CHECK_OK(ctx->backend->basis_project(ctx, V[d], j0, j1, w[d], h[d], &ww[d]));
    }
    for (int k = 0; k < j1 - j0; k++)
      CHECK(fabs(h[0][k] - h[1][k]) <= 1e-13 * (1.0 + fabs(h[0][k])),
            "basis %s n %lld: projection on column %d: cpu %.17g cuda %.17g", pn, (long long)n,
            j0 + k, h[0][k], h[1][k]);
    CHECK(fabs(ww[0] - ww[1]) <= 1e-13 * ww[0] && fabs(ww[0] - dot(src, src, n)) <= 1e-13 * ww[0],
          "basis %s n %lld: w.w of the projection: cpu %.17g cuda %.17g direct %.17g", pn,
          (long long)n, ww[0], ww[1], dot(src, src, n));
    // w -= V h over the same range.
    for (int d = 0; d < 2; d++) {
      msp_context ctx = d ? gpu : cpu;
      set_f64(w[d], src);
      CHECK_OK(ctx->backend->basis_subtract(ctx, V[d], j0, j1, coef, w[d], NULL, NULL));
      get_f64(w[d], got[d]);
    }
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++)
      worst = fmax(worst, fabs(got[0][i] - got[1][i]));
    CHECK(worst <= 1e-13, "basis %s n %lld: subtraction over %d..%d differs by %g", pn,
          (long long)n, j0, j1, worst);
    // The fused form: the same w (bit for bit on each backend), then u = V^T w and w.w of the new
    // w, equal to a separate projection (the same bits on the CPU: the same partials).
    for (int d = 0; d < 2; d++) {
      msp_context ctx = d ? gpu : cpu;
      set_f64(w[d], src);
      CHECK_OK(ctx->backend->basis_subtract(ctx, V[d], j0, j1, coef, w[d], u[d], &ww[d]));
      get_f64(w[d], fused[d]);
      CHECK(memcmp(fused[d], got[d], (size_t)n * sizeof(double)) == 0,
            "basis %s n %lld: %s: the fused subtraction changed w's bits", pn, (long long)n,
            d ? "cuda" : "cpu");
      CHECK_OK(ctx->backend->basis_project(ctx, V[d], j0, j1, w[d], h[d], &ww2[d]));
      for (int k = 0; k < j1 - j0; k++)
        CHECK(d ? fabs(u[d][k] - h[d][k]) <= 1e-13 * (1.0 + fabs(h[d][k])) : u[d][k] == h[d][k],
              "basis %s n %lld: %s: fused projection on column %d: %.17g, separate %.17g", pn,
              (long long)n, d ? "cuda" : "cpu", j0 + k, u[d][k], h[d][k]);
      CHECK(d ? fabs(ww[d] - ww2[d]) <= 1e-13 * ww2[d] : ww[d] == ww2[d],
            "basis %s n %lld: %s: fused w.w %.17g, separate %.17g", pn, (long long)n,
            d ? "cuda" : "cpu", ww[d], ww2[d]);
    }
    for (int k = 0; k < j1 - j0; k++)
      CHECK(fabs(u[0][k] - u[1][k]) <= 1e-13 * (1.0 + fabs(u[0][k])),
            "basis %s n %lld: fused projection on column %d: cpu %.17g cuda %.17g", pn,
            (long long)n, j0 + k, u[0][k], u[1][k]);
  }
  // z = V y over the first k1 columns (w holds NaN first: the combination must not read it).
  for (int64_t i = 0; i < n; i++)
    src[i] = NAN;
  for (int d = 0; d < 2; d++) {
    msp_context ctx = d ? gpu : cpu;
    set_f64(w[d], src);
    CHECK_OK(ctx->backend->basis_combine(ctx, V[d], cols - 1, coef, w[d]));
    get_f64(w[d], got[d]);
  }
  double worst = 0.0;
  for (int64_t i = 0; i < n; i++)
    worst = isfinite(got[1][i]) ? fmax(worst, fabs(got[0][i] - got[1][i])) : INFINITY;
  CHECK(worst <= 1e-13, "basis %s n %lld: combination differs by %g", pn, (long long)n, worst);
done:
  for (int d = 0; d < 2; d++) {
    msp_context ctx = d ? gpu : cpu;
    ctx->backend->basis_free(ctx, V[d]);
    msp_vector_destroy(&w[d]);
    free(got[d]);
    free(h[d]);
    free(u[d]);
    free(fused[d]);
  }
  free(src);
  free(coef);
}

// DCGS2's two passes, CPU against CUDA: columns 0 .. j stored alike (column j not normalised and
// not orthogonal, as GMRES leaves it), the fused projection with and without w, then the update
// (w, and the rewritten column j and column j + 1 through the projection over the new columns):
// the same bits on both backends, which sum in the same order with the same roundings (a
// fixed-point basis rounds at a fixed position of its column's scale, so any last-bit difference of
// w can move a stored entry by a unit and spread over the following columns). j from 0 (no
// correction) to past a group of 32 columns, n not a multiple of a chunk's rows.
static void basis_dcgs2(msp_precision prec, int64_t n, int j) {
  const char *pn = msp_precision_name(prec);
  const int cols = j + 2;
  msp__basis *V[2] = {NULL, NULL};
  msp_vector w[2] = {NULL, NULL};
  double *src = calloc((size_t)n, sizeof *src),
         *got[2] = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
  double *r[2] = {calloc(2 * (size_t)cols, sizeof(double)),
                  calloc(2 * (size_t)cols, sizeof(double))};
  double *sv = calloc((size_t)cols, sizeof(double)), *c = calloc((size_t)cols, sizeof(double));
  msp_rng rng = {(uint64_t)n * 31 + (uint64_t)j};
  CHECK(src && got[0] && got[1] && r[0] && r[1] && sv && c, "out of host memory");
  for (int d = 0; d < 2; d++) {
    msp_context ctx = d ? gpu : cpu;
    CHECK_OK(ctx->backend->basis_alloc(ctx, n, cols, prec, &V[d]));
    CHECK_OK(msp_vector_create(ctx, n, &w[d]));
  }
  if (!V[0] || !V[1] || !w[0] || !w[1] || !src || !got[0] || !got[1] || !r[0] || !r[1] || !sv || !c)
    goto done;
  for (int k = 0; k <= j; k++) {
    double nn = 0.0;
    for (int64_t i = 0; i < n; i++) {
      src[i] = msp_rng_uniform(&rng) * 2 - 1;
      nn += src[i] * src[i];
    }
    for (int64_t i = 0; i < n; i++)
      src[i] *= (k == j ? 0.7 : 1.0) / sqrt(nn);
    for (int d = 0; d < 2; d++) {
      msp_context ctx = d ? gpu : cpu;
      set_f64(w[d], src);
      CHECK_OK(ctx->backend->basis_store(ctx, V[d], k, w[d]));
    }
  }
  for (int64_t i = 0; i < n; i++)
    src[i] = sin(0.37 * (double)i) + 0.25;
  for (int withw = 0; withw < 2; withw++) {
    for (int d = 0; d < 2; d++) {
      msp_context ctx = d ? gpu : cpu;
      set_f64(w[d], src);
      CHECK_OK(ctx->backend->basis_dcgs2_project(ctx, V[d], j, withw ? w[d] : NULL, r[d]));
    }
    for (int k = 0; k < (withw ? 2 * j + 2 : j + 1); k++)
      CHECK(memcmp(&r[0][k], &r[1][k], sizeof(double)) == 0,
            "dcgs2 %s n %lld j %d: projection %d: cpu %.17g, cuda %.17g", pn, (long long)n, j, k,
            r[0][k], r[1][k]);
  }
  for (int k = 0; k < j; k++)
    sv[k] = r[0][k];
  for (int k = 0; k <= j; k++)
    c[k] = r[0][j + 1 + k] * 0.9;
  const double rjj = sqrt(r[0][j]);
  const int store = !msp_prec_is_fixed(prec);
  for (int d = 0; d < 2; d++) {
    msp_context ctx = d ? gpu : cpu;
    set_f64(w[d], src);
    CHECK_OK(ctx->backend->basis_dcgs2_update(ctx, V[d], j, sv, rjj, c, w[d], store));
    get_f64(w[d], got[d]);
  }
  int64_t first = -1;
  for (int64_t i = 0; i < n && first < 0; i++)
    if (memcmp(&got[0][i], &got[1][i], sizeof(double)) != 0) first = i;
  CHECK(first < 0, "dcgs2 %s n %lld j %d: updated w differs at row %lld (cpu %.17g, cuda %.17g)",
        pn, (long long)n, j, (long long)first, first < 0 ? 0.0 : got[0][first],
        first < 0 ? 0.0 : got[1][first]);
  // the rewritten column j (and column j + 1, or w stored there as GMRES does for fixed point)
  // through a projection of the new columns
  for (int d = 0; d < 2; d++) {
    msp_context ctx = d ? gpu : cpu;
    if (!store) {
      CHECK_OK(msp__vector_current(w[d]));
      CHECK_OK(ctx->backend->basis_store(ctx, V[d], j + 1, w[d]));
    }
    set_f64(w[d], src);
    CHECK_OK(ctx->backend->basis_dcgs2_project(ctx, V[d], j + 1, w[d], r[d]));
  }
  for (int k = 0; k < 2 * j + 4; k++)
    CHECK(memcmp(&r[0][k], &r[1][k], sizeof(double)) == 0,
          "dcgs2 %s n %lld j %d: after the update, projection %d: cpu %.17g, cuda %.17g", pn,
          (long long)n, j, k, r[0][k], r[1][k]);
done:
  for (int d = 0; d < 2; d++) {
    msp_context ctx = d ? gpu : cpu;
    ctx->backend->basis_free(ctx, V[d]);
    msp_vector_destroy(&w[d]);
    free(got[d]);
    free(r[d]);
  }
  free(src);
  free(sv);
  free(c);
}

static void basis_ops_all(int quick) {
  for (int p = 0; p < MSP_PRECISION_COUNT; p++) {
    basis_dcgs2((msp_precision)p, 1000, 0);
    basis_dcgs2((msp_precision)p, 1000, 5);
    basis_dcgs2((msp_precision)p, 2053, 17);
    basis_dcgs2((msp_precision)p, 9000, 33);
    if (!quick) basis_dcgs2((msp_precision)p, 70001, 40);
    // Enough rows that a warp of the staged first pass (src/cuda/basis_dcgs2.cu) takes more
    // column groups than its shared memory holds, so that its stages are refilled; the last chunk
    // partial, the last warp's block past the column's padding, n not a multiple of 8.
    basis_dcgs2((msp_precision)p, 200003, 100);
  }
  for (int p = 0; p < MSP_PRECISION_COUNT; p++) {
    basis_ops((msp_precision)p, 1000, 7, 0);
    basis_ops((msp_precision)p, 1000, 7, 1);
    if (!quick) basis_ops((msp_precision)p, 70001, 40, 1);
  }
  // More columns than one launch of the subtraction / combination takes.
  basis_ops(MSP_PRECISION_F32, 300, quick ? 40 : 600, 0);
  // The staged subtraction-projection's tile sizes (src/cuda/basis_update.cu, stage_rows): from 256
  // rows per tile down to 32 (f64, 400 and 480 columns), cpms4 tiles of whole 64-value groups; n
  // not a multiple of a tile, of 16 bytes or of a CPMS group.
  basis_ops(MSP_PRECISION_F64, 700, 400, 1);    // 32 rows
  basis_ops(MSP_PRECISION_F32, 3001, 90, 1);    // 128 rows, two f32 per load
  basis_ops(MSP_PRECISION_F16, 1031, 120, 1);   // 256 rows, four f16 per load
  basis_ops(MSP_PRECISION_CPMS4, 1537, 200, 1); // 64 rows, one block per SM
  if (!quick) {
    basis_ops(MSP_PRECISION_F64, 33333, 480, 1);
    basis_ops(MSP_PRECISION_FX16, 9999, 150, 1);
  }
}

// Load the same system on both backends (spec "gen:..." or a path); b = A * (sin(i)) scaled to
// norm 1 plus a constant, so the solution is not trivially structured.
static int sys_load(sys *s, const char *label, const char *spec) {
  memset(s, 0, sizeof *s);
  snprintf(s->label, sizeof s->label, "%s", label);
  for (int dev = 0; dev < 2; dev++) {
    msp_context ctx = dev ? gpu : cpu;
    const msp_status st = strncmp(spec, "gen:", 4) == 0
                              ? msp_matrix_generate(ctx, spec + 4, &s->A[dev])
                              : msp_matrix_read_mtx(ctx, spec, 0, &s->A[dev]);
    CHECK(st == MSP_SUCCESS, "%s: %s", spec, msp_last_error());
    if (st != MSP_SUCCESS) return 1;
  }
  CHECK(test_csr_from_matrix(&s->csr, s->A[0]) == 0, "%s: no host CSR", spec);
  const int64_t n = s->csr.rows;
  s->b = calloc((size_t)n + 1, sizeof *s->b);
  CHECK(s->b != NULL, "out of host memory");
  if (!s->b) return 1;
  for (int64_t i = 0; i < n; i++) {
    double t = 0.0;
    for (int64_t p = s->csr.rowptr[i]; p < s->csr.rowptr[i + 1]; p++)
      t += s->csr.val[p] * (1.0 + sin((double)s->csr.colind[p]));
    s->b[i] = t;
  }
  return 0;
}

static void sys_free(sys *s) {
  msp_matrix_destroy(&s->A[0]);
  msp_matrix_destroy(&s->A[1]);
  test_csr_free(&s->csr);
  free(s->b);
}

// first_precond: MSP_PRECOND_NONE, or JACOBI to leave the unpreconditioned runs out.
static void run_system(const char *label, const char *spec, int quick, int first_precond) {
  sys s;
  if (sys_load(&s, label, spec) == 0) {
    const msp_precision all[] = {MSP_PRECISION_F64,  MSP_PRECISION_F32,  MSP_PRECISION_F16,
                                 MSP_PRECISION_BF16, MSP_PRECISION_FX32, MSP_PRECISION_FX16};
    const msp_precision few[] = {MSP_PRECISION_F64, MSP_PRECISION_F32, MSP_PRECISION_FX16};
    const msp_precision *bases = quick ? few : all;
    const int nbases = quick ? 3 : 6;
    const int nprec = quick ? 2 : 3;
    for (int p = first_precond; p < nprec; p++)
      for (int k = 0; k <= nbases; k++) {
        msp_solver_options o = msp_solver_options_default();
        o.max_iters = MAX_ITERS;
        o.restart = quick ? 20 : 100;
        o.precond = p == 0 ? MSP_PRECOND_NONE : p == 1 ? MSP_PRECOND_JACOBI : MSP_PRECOND_ILU0;
        if (k == nbases)
          o.basis_auto = 1;
        else
          o.basis_precision = bases[k];
        compare(&s, &o);
      }
    // Modified Gram-Schmidt and the re-orthogonalising CGS once per system.
    msp_solver_options o = msp_solver_options_default();
    o.max_iters = MAX_ITERS;
    o.ortho = MSP_ORTHO_MGS;
    o.basis_precision = MSP_PRECISION_F32;
    o.precond = (msp_precond)first_precond;
    compare(&s, &o);
    o.ortho = MSP_ORTHO_CGS;
    compare(&s, &o);
    edge_cases(&s);
  }
  sys_free(&s);
}

int main(void) {
  const int rc = test_cuda_context(NAME, &gpu);
  if (rc >= 0) return rc;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  const char *q = getenv("MSP_TEST_QUICK");
  const int quick = q && *q && strcmp(q, "0") != 0;
  if (cpu) basis_ops_all(quick);
  if (cpu) {
    const char *san = getenv("MSP_TEST_SANITIZER");
    if (quick && san && *san && strcmp(san, "0") != 0) {
      // racecheck runs the basis operations above at a small fraction of their speed
      run_system("gen:convdiff3d:8", "gen:convdiff3d:8", 1, 0);
      printf("%s: under the sanitizer (MSP_TEST_SANITIZER): gen:poisson3d:8 not solved\n", NAME);
    } else if (quick) {
      run_system("gen:convdiff3d:8", "gen:convdiff3d:8", 1, 0);
      run_system("gen:poisson3d:8", "gen:poisson3d:8", 1, 0);
    } else {
      run_system("gen:convdiff3d:16", "gen:convdiff3d:16", 0, 0);
      run_system("gen:convdiff3d:12:50", "gen:convdiff3d:12:50", 0, 0);
      run_system("gen:poisson3d:16", "gen:poisson3d:16", 0, 0);
      const char *dir = test_matrices_dir();
      const char *names[] = {"sherman4", "orsirr_1", "pde2961"};
      if (dir) {
        for (int i = 0; i < 3; i++) {
          char path[4096];
          snprintf(path, sizeof path, "%s/%s.mtx.gz", dir, names[i]);
          FILE *f = fopen(path, "r");
          if (!f) {
            printf("%s: %s absent from the collection: not solved\n", NAME, names[i]);
            continue;
          }
          fclose(f);
          run_system(names[i], path, 0, i == 1 ? 1 : 0);
        }
      } else {
        printf("%s: the collection (MSP_MATRICES_DIR) is absent: generated systems only\n", NAME);
      }
    }
  }
  CHECK_OK(msp_context_destroy(&cpu));
  CHECK_OK(msp_context_destroy(&gpu));
  return msp_test_finish(NAME);
}

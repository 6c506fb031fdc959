// cross.c: the cross-test engine (cross.h): every format x storage combination x kernel on every
// backend, against a long-double oracle of the stored values and against the CPU reference.
//
// The bound. Let a~_ij be the matrix values as stored and read (k CPMS segments), x~ and y0~ the
// vectors as stored in their precision, and z_i = alpha * sum_j a~_ij x~_j + beta * y0~_i the
// exact result. The oracle knows a~_ij exactly for every precision that rounds value by value
// (IEEE types round to nearest, CPMS truncates: test_stored_value with the library's own
// rounding functions; conversions use MSP_RANGE_ALLOW so that nothing is saturated or flushed
// behind the rounding), and the BDMP formats' stored values come back from their own to_csr.
// Fixed point is the exception: the scale of a stored value is that of its block of 256 values
// in the format's order, so the oracle uses the fp64 value and bounds its storage error by
// e_A = half the largest scale <= max|a_ij| / qmax / 2. x~ and y0~ are known exactly
// (test_round_vector, checked against msp_vector_get), so the x/y input rounding is not an
// error between a backend and the oracle: both read the same stored inputs.
//   1. fp64 evaluation. Whatever the summation order or tree (scalar, vector, merge-path, ELL
//      slots, COO segments), row i takes len_i products, at most len_i - 1 additions, the
//      multiplication by alpha, the product beta * y0~ and one final addition: at most
//      m_i = len_i + 3 roundings along any path, so (Higham, Accuracy and Stability, 3.1 and
//      4.2) |y^_i - z_i| <= gamma(m_i) * M_i + m_i * eta64 = g_i, with gamma(m) = m u / (1 - m u),
//      u = 2^-53, eta64 = 2^-1075 (underflow), M_i = |alpha| sum_j (|a_ij| + e_A) |x~_j| +
//      |beta y0~_i|. Padding slots add exact zeros and no error.
//   2. The oracle's own uncertainty (fixed-point matrices): d_i = |alpha| e_A sum_j |x~_j|.
//   3. Storing y^_i in y's precision. The store is monotone, so y~_i lies between the stores of
//      z_i - (g_i + d_i) and z_i + (g_i + d_i), rounded outward: for IEEE types those stores
//      are computed exactly with the library's rounding (and its saturation at the largest
//      finite value, which makes the overflow count predictable); for fixed point the block's
//      scale s_b comes from its results, at most msp_fx_block_scale(max over the block of the
//      bound on |y^_i|), and q * s_b is one fp64 product: the interval grows by s_b / 2 plus
//      2^-52 of its ends.
// Each backend's y~ must lie in that interval. Two backends read the same stored values, so
// their difference needs no d_i: |y~_i - y~'_i| <= 2 g_i + rounding of y, with rounding =
// 2 u_y |y^|max + the smallest subnormal of y (IEEE; u_y from msp__prec_unit_roundoff) or
// s_b + 2^-52 |y^|max (fixed point). None of these has a safety factor: they are bounds.
#include "cross.h"

#include "formats.h"
#include "internal.h"
#include "precision.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NV(a) (sizeof(a) / sizeof((a)[0]))

static const msp_precision PRECS[] = {
#define CROSS_PREC_(name, tag, bytes) MSP_PRECISION_##name,
    MSP_PRECISION_LIST(CROSS_PREC_)
#undef CROSS_PREC_
};
static const msp_format FORMATS[] = {
#define CROSS_FMT_(name, tag, ident) MSP_FORMAT_##name,
    MSP_FORMAT_LIST(CROSS_FMT_)
#undef CROSS_FMT_
};
// (1, 0) with NaN in y (y must not be read), and (-0.5, 2), which reads y.
static const double AB[][2] = {{1.0, 0.0}, {-0.5, 2.0}};
static const msp_kernel CSR_KERNELS[] = {MSP_KERNEL_SCALAR, MSP_KERNEL_VECTOR, MSP_KERNEL_MERGE};

// Conversion options at and around their limits; each applies to the formats that read it and
// leaves the others as the default does. Hack sizes of two and three warps (not a power of two),
// HYB with an empty ELL part and a narrow one, ELL wider than needed, the BDMP modes.
typedef struct {
  const char *tag;
  int hack;
  int64_t hyb_k;
  int ell_extra;
  double bdmp_f;
  int bdmp_digits;
} variant;
static const variant VARIANTS[] = {
    {"", 0, -1, 0, 0.0, 0},          {" hack=64", 64, -1, 0, 0.0, 0},
    {" hack=96", 96, -1, 0, 0.0, 0}, {" hyb_k=0", 0, 0, 0, 0.0, 0},
    {" hyb_k=2", 0, 2, 0, 0.0, 0},   {" ell_width=longest+3", 0, -1, 3, 0.0, 0},
    {" bdmp_f=2", 0, -1, 0, 2.0, 0}, {" bdmp_digits=8", 0, -1, 0, 0.0, 8},
};

// Which (matrix, vector) storage pairs run. Not the full cube (64 pairs, CPMS reads on top):
// the matrix loader and the x loader / y store are independent template parameters of every
// kernel, so each loader is exercised by every vector precision with f64 matrix values and by
// every matrix precision with f64 vectors; the pairs with equal precisions cover their running
// together in one instantiation. That is 3 |P| - 2 pairs instead of |P|^2.
static int combo_runs(msp_precision mp, msp_precision vp) {
  return mp == MSP_PRECISION_F64 || vp == MSP_PRECISION_F64 || mp == vp;
}

// MSP_CROSS_FORMATS (format tags separated by commas, e.g. "csr,coo,hyb"): only these formats, for
// a device run with little time; unset or empty: all. The summary says when it is set.
static int format_selected(msp_format f) {
  const char *l = getenv("MSP_CROSS_FORMATS");
  const char *tag = msp_format_name(f);
  if (!l || !*l) return 1;
  const size_t n = tag ? strlen(tag) : 0;
  for (const char *p = l; n > 0;) {
    const char *q = strchr(p, ',');
    const size_t len = q ? (size_t)(q - p) : strlen(p);
    if (len == n && strncmp(p, tag, n) == 0) return 1;
    if (!q) break;
    p = q + 1;
  }
  return 0;
}

int64_t cross_env_max_nnz(void) {
  const char *c = getenv("MSP_CROSS_MAX_NNZ");
  return c && atoll(c) > 0 ? (int64_t)atoll(c) : 0;
}

static void note_unsupported(cross_env *e, const char *what) {
  e->unsupported++;
  for (int i = 0; i < e->nns; i++) {
    if (strcmp(e->ns[i].what, what) == 0) {
      e->ns[i].count++;
      return;
    }
  }
  if (e->nns < CROSS_MAX_UNSUPPORTED) {
    snprintf(e->ns[e->nns].what, sizeof e->ns[e->nns].what, "%s", what);
    e->ns[e->nns++].count = 1;
  }
}

// ---- the oracle ------------------------------------------------------------------------------
typedef struct {
  double *lo, *hi;  // the interval of each row's stored result
  double *pair;     // bound on the difference of two backends' stored results
  double *z;        // the oracle's value (messages; non-finite classes)
  int64_t certain;  // rows whose result must overflow y's precision (saturated and counted)
  int64_t possible; // rows whose result may
} oracle;

static double down(long double v) {
  double d = (double)v;
  return (long double)d > v ? nextafter(d, -INFINITY) : d;
}
static double up(long double v) {
  double d = (double)v;
  return (long double)d < v ? nextafter(d, INFINITY) : d;
}

// The stored value of v in precision p as a load returns it (saturating store; *over = 1 when
// it saturated), for the IEEE types, CPMS (all segments) and f64.
static double store_load(msp_precision p, double v, int *over) {
  uint64_t buf = 0; // one value of every precision fits 8 bytes
  msp_acc a;
  memset(&a, 0, sizeof a);
  a.data = &buf;
  a.n = 1;
  a.prec = p;
  a.read_segments = msp__prec_segments(p);
  *over = msp_acc_store_sat_p(p, &a, 0, v) == MSP_STORE_OVERFLOW; // a flush is no overflow
  return msp_acc_load_p(p, &a, 0);
}

// s: the stored pattern, sv its values as the oracle knows them, eA their storage error bound.
static void oracle_rows(const test_csr *s, const double *sv, double eA, double alpha,
                        const double *xs, double beta, const double *y0s, msp_precision yp,
                        oracle *o) {
  const long double u = 0x1.0p-53L;
  const int fixed = msp_prec_is_fixed(yp);
  double uy = msp__prec_unit_roundoff(yp), ylargest = 0, ysmallest = 0;
  msp__prec_limits(yp, &ylargest, &ysmallest);
  if (uy < 0) uy = 0;
  o->certain = o->possible = 0;
  for (int64_t i = 0; i < s->rows; i++) {
    long double sum = 0, mag = 0, xabs = 0;
    for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++) {
      const long double xv = xs[s->colind[k]];
      sum += (long double)sv[k] * xv;
      mag += (fabsl((long double)sv[k]) + eA) * fabsl(xv);
      xabs += fabsl(xv);
    }
    long double z = (long double)alpha * sum, m = fabsl((long double)alpha) * mag;
    if (beta != 0.0) {
      z += (long double)beta * y0s[i];
      m += fabsl((long double)beta * y0s[i]);
    }
    const long double ops = (long double)(s->rowptr[i + 1] - s->rowptr[i] + 3);
    const long double g = ops * u / (1 - ops * u) * m + ops * 0x1.0p-1075L;
    const long double w = g + fabsl((long double)alpha) * eA * xabs;
    o->z[i] = (double)z;
    if (isnan(o->z[i]) || isinf(o->z[i])) {
      o->lo[i] = o->hi[i] = o->z[i];
      o->pair[i] = 0;
      continue;
    }
    const double zl = down(z - w), zh = up(z + w);
    const double ymax = fmax(fabs(zl), fabs(zh));
    if (fixed) {
      o->lo[i] = zl; // widened by the block's scale below
      o->hi[i] = zh;
      o->pair[i] = (double)(2 * g);
      continue;
    }
    int ol = 0, oh = 0;
    o->lo[i] = store_load(yp, zl, &ol);
    o->hi[i] = store_load(yp, zh, &oh);
    o->pair[i] = up(2 * g + 2 * (long double)uy * ymax + (long double)ysmallest);
    o->certain += ol && oh && signbit(zl) == signbit(zh);
    o->possible += ol || oh;
  }
  if (!fixed) return;
  // Fixed point: the scale of each block of MSP_VEC_FX_BLOCK results comes from the block's
  // largest |y^_i|; a non-finite result makes the whole block NaN (msp_fx_vector_scale).
  for (int64_t b0 = 0; b0 < s->rows; b0 += MSP_VEC_FX_BLOCK) {
    const int64_t b1 = b0 + MSP_VEC_FX_BLOCK < s->rows ? b0 + MSP_VEC_FX_BLOCK : s->rows;
    double amax = 0;
    int nonfinite = 0;
    for (int64_t i = b0; i < b1; i++) {
      nonfinite |= !isfinite(o->z[i]);
      if (isfinite(o->z[i])) amax = fmax(amax, fmax(fabs(o->lo[i]), fabs(o->hi[i])));
    }
    const double sb = msp_fx_block_scale(yp, amax);
    for (int64_t i = b0; i < b1; i++) {
      if (nonfinite) {
        o->lo[i] = o->hi[i] = o->z[i] = NAN;
        continue;
      }
      const long double ends = 0x1.0p-52L * ((long double)amax + sb);
      o->lo[i] = down((long double)o->lo[i] - sb / 2.0L - ends);
      o->hi[i] = up((long double)o->hi[i] + sb / 2.0L + ends);
      o->pair[i] = up((long double)o->pair[i] + sb + ends);
    }
  }
}

// Rows of got outside the oracle's interval (and, with ref, farther than pair from ref).
static int64_t check_rows(int64_t rows, const double *got, const oracle *o, const double *ref,
                          const char *label) {
  int64_t bad = 0;
  for (int64_t i = 0; i < rows; i++) {
    int ok;
    if (isnan(o->z[i]))
      ok = isnan(got[i]);
    else if (isinf(o->z[i]))
      ok = got[i] == o->z[i];
    else
      ok = got[i] >= o->lo[i] && got[i] <= o->hi[i];
    if (!ok) {
      if (bad < 3)
        fprintf(stderr,
                "%s: row %lld: got %.17g, oracle %.17g, stored result must lie in [%.17g, "
                "%.17g]\n",
                label, (long long)i, got[i], o->z[i], o->lo[i], o->hi[i]);
      bad++;
      continue;
    }
    if (ref && isfinite(o->z[i]) && !(fabs(got[i] - ref[i]) <= o->pair[i])) {
      if (bad < 3)
        fprintf(stderr,
                "%s: row %lld: got %.17g, reference backend %.17g: difference %.3g > %.3g\n", label,
                (long long)i, got[i], ref[i], fabs(got[i] - ref[i]), o->pair[i]);
      bad++;
    }
  }
  if (bad) fprintf(stderr, "%s: %lld rows outside the bound\n", label, (long long)bad);
  return bad;
}

// ---- one matrix -------------------------------------------------------------------------------
typedef struct {
  cross_env *e;
  const test_csr *m;
  const char *label;
  int64_t rows, cols;
  double *x, *y0, *ynan; // the caller-side inputs
  double *xs, *y0s;      // as stored in the vector precision of the combination
  double *back;          // what msp_vector_get returns for x (cols) or y (rows)
  double *got[CROSS_MAX_CTX], *again;
  oracle o;
  int ref_valid; // got[0] holds the reference's result of the current product
  msp_vector vx[CROSS_MAX_CTX], vy[CROSS_MAX_CTX];
} work;

static void work_free(work *w) {
  free(w->x);
  free(w->y0);
  free(w->ynan);
  free(w->xs);
  free(w->y0s);
  free(w->back);
  free(w->again);
  free(w->o.lo);
  free(w->o.hi);
  free(w->o.pair);
  free(w->o.z);
  for (int c = 0; c < CROSS_MAX_CTX; c++) {
    free(w->got[c]);
    msp_vector_destroy(&w->vx[c]);
    msp_vector_destroy(&w->vy[c]);
  }
}

static int work_alloc(work *w) {
  size_t nr = (size_t)(w->rows ? w->rows : 1), nc = (size_t)(w->cols ? w->cols : 1);
  size_t nb = nr > nc ? nr : nc;
  w->x = malloc(nc * sizeof *w->x);
  w->xs = malloc(nc * sizeof *w->xs);
  w->y0 = malloc(nr * sizeof *w->y0);
  w->y0s = malloc(nr * sizeof *w->y0s);
  w->ynan = malloc(nr * sizeof *w->ynan);
  w->back = malloc(nb * sizeof *w->back);
  w->again = malloc(nr * sizeof *w->again);
  w->o.lo = malloc(nr * sizeof(double));
  w->o.hi = malloc(nr * sizeof(double));
  w->o.pair = malloc(nr * sizeof(double));
  w->o.z = malloc(nr * sizeof(double));
  int ok = w->x && w->xs && w->y0 && w->y0s && w->ynan && w->back && w->again && w->o.lo &&
           w->o.hi && w->o.pair && w->o.z;
  for (int c = 0; c < w->e->nctx; c++) {
    w->got[c] = malloc(nr * sizeof *w->got[c]);
    ok = ok && w->got[c];
  }
  return ok ? 0 : -1;
}

// Inputs the vector precisions all hold without flushing: magnitudes in [0.25, 1) (fixed point
// blocks keep them well above half a unit), random signs.
static void fill_inputs(work *w, uint64_t seed) {
  msp_rng r = {seed};
  for (int64_t j = 0; j < w->cols; j++) {
    double v = 0.25 + 0.75 * msp_rng_uniform(&r);
    w->x[j] = msp_rng_next(&r) & 1 ? -v : v;
  }
  for (int64_t i = 0; i < w->rows; i++) {
    double v = 0.25 + 0.75 * msp_rng_uniform(&r);
    w->y0[i] = msp_rng_next(&r) & 1 ? -v : v;
    w->ynan[i] = NAN;
  }
}

// Make x and y of precision vp on every context, x set; check that x reads back as the test's
// rounding says it is stored. Returns 0 when usable.
static int make_vectors(work *w, msp_precision vp, const char *label) {
  cross_env *e = w->e;
  for (int c = 0; c < e->nctx; c++) {
    msp_vector_destroy(&w->vx[c]);
    msp_vector_destroy(&w->vy[c]);
  }
  if (test_round_vector(vp, w->cols, w->x, w->xs) != 0 ||
      test_round_vector(vp, w->rows, w->y0, w->y0s) != 0) {
    CHECK(0, "%s: host allocation", label);
    return -1;
  }
  for (int c = 0; c < e->nctx; c++) {
    CHECK_OK(msp_vector_create_precision(e->ctx[c], w->cols, vp, &w->vx[c]));
    CHECK_OK(msp_vector_create_precision(e->ctx[c], w->rows, vp, &w->vy[c]));
    if (!w->vx[c] || !w->vy[c]) return -1;
    CHECK_OK(msp_vector_set(w->vx[c], w->x));
    CHECK_OK(msp_vector_get(w->vx[c], w->back));
    CHECK(w->cols == 0 || memcmp(w->back, w->xs, (size_t)w->cols * sizeof *w->xs) == 0,
          "%s: x as stored in %s on %s is not the precision's rounding of x", label,
          msp_precision_name(vp), msp_backend_name(msp_context_backend(e->ctx[c])));
  }
  return 0;
}

// One product on context c: y = (beta == 0: NaN where the precision holds it) then
// y = alpha B x + beta y, result in out. Returns the status of msp_spmv (the get's status in
// *get_st).
static msp_status product(work *w, int c, msp_matrix B, double alpha, double beta, double *out,
                          msp_status *get_st) {
  msp_vector y = w->vy[c];
  msp_status st = MSP_SUCCESS;
  if (beta == 0.0) {
    st = msp_vector_set(y, w->ynan);
    if (st == MSP_ERR_NONFINITE) st = msp_vector_set(y, w->y0); // fixed point holds no NaN
  } else {
    st = msp_vector_set(y, w->y0);
  }
  CHECK(st == MSP_SUCCESS, "setting y: %s (%s)", msp_status_name(st), msp_last_error());
  st = msp_spmv(w->e->ctx[c], alpha, B, w->vx[c], beta, y);
  *get_st = MSP_SUCCESS;
  if (st == MSP_SUCCESS) *get_st = msp_vector_get(y, out);
  if (*get_st == MSP_ERR_RANGE) {
    // The harness checks overflow (saturation); nonzero results that y's precision stores as 0
    // are counted and reported too, within the bound of y's rounding: not an overflow.
    int64_t saturated = 0, flushed = 0;
    CHECK_OK(msp_vector_range_info(y, &saturated, &flushed));
    CHECK(saturated + flushed > 0, "ERR_RANGE reported without a count");
    if (saturated == 0) *get_st = MSP_SUCCESS;
  }
  return st;
}

// Every kernel and (alpha, beta) of one stored matrix on every context, y and x in vp.
static void run_combo(work *w, msp_matrix *B, msp_format f, const test_csr *s, const double *sv,
                      double eA, msp_precision vp, const char *clabel) {
  cross_env *e = w->e;
  if (make_vectors(w, vp, clabel) != 0) {
    e->failed++;
    return;
  }
  // Kernels are options of the CSR format (msp_matrix_set_kernel refuses the others).
  msp_kernel kernels[NV(CSR_KERNELS)];
  size_t nk = 1;
  kernels[0] = msp_matrix_kernel(B[0]);
  if (f == MSP_FORMAT_CSR) {
    memcpy(kernels, CSR_KERNELS, sizeof CSR_KERNELS);
    nk = NV(CSR_KERNELS);
  }
  for (size_t a = 0; a < NV(AB); a++) {
    const double alpha = AB[a][0], beta = AB[a][1];
    oracle_rows(s, sv, eA, alpha, w->xs, beta, w->y0s, vp, &w->o);
    for (size_t k = 0; k < nk; k++) {
      char label[600];
      w->ref_valid = 0;
      snprintf(label, sizeof label, "%s x,y %s%s%s alpha %g beta %g", clabel,
               msp_precision_name(vp), f == MSP_FORMAT_CSR ? " kernel " : "",
               f == MSP_FORMAT_CSR ? msp_kernel_name(kernels[k]) : "", alpha, beta);
      for (int c = 0; c < e->nctx; c++) {
        const msp_backend bk = msp_context_backend(e->ctx[c]);
        const int before = msp_test_failures;
        char clab[700];
        snprintf(clab, sizeof clab, "%s on %s", label, msp_backend_name(bk));
        if (f == MSP_FORMAT_CSR) {
          CHECK_OK(msp_matrix_set_kernel(B[c], kernels[k]));
          CHECK(msp_matrix_kernel(B[c]) == kernels[k], "%s: the matrix reports kernel %s", clab,
                msp_kernel_name(msp_matrix_kernel(B[c])));
        }
        msp_status gst;
        msp_status st = product(w, c, B[c], alpha, beta, w->got[c], &gst);
        // Every backend runs every format with every precision of x and y.
        CHECK(st == MSP_SUCCESS, "%s: msp_spmv: %s (%s)", clab, msp_status_name(st),
              msp_last_error());
        if (st == MSP_SUCCESS) {
          CHECK(gst == MSP_SUCCESS || gst == MSP_ERR_RANGE, "%s: msp_vector_get(y): %s (%s)", clab,
                msp_status_name(gst), msp_last_error());
          CHECK(w->o.certain == 0 || gst == MSP_ERR_RANGE,
                "%s: %lld results must overflow y (%s) but msp_vector_get reported %s", clab,
                (long long)w->o.certain, msp_precision_name(vp), msp_status_name(gst));
          CHECK(w->o.possible > 0 || gst != MSP_ERR_RANGE,
                "%s: no result can overflow y (%s) but msp_vector_get reported %s (%s)", clab,
                msp_precision_name(vp), msp_status_name(gst), msp_last_error());
          // Against the oracle; after the reference, against the reference's result too.
          CHECK(check_rows(w->rows, w->got[c], &w->o, c > 0 && w->ref_valid ? w->got[0] : NULL,
                           clab) == 0,
                "%s: result outside the bound", clab);
          if (c == 0) w->ref_valid = 1;
          if (c > 0 && e->determinism) {
            // The same kernel on the same input gives the same bits.
            msp_status g2;
            msp_status s2 = product(w, c, B[c], alpha, beta, w->again, &g2);
            CHECK(s2 == MSP_SUCCESS && (g2 == MSP_SUCCESS || g2 == MSP_ERR_RANGE),
                  "%s: second product: %s / %s", clab, msp_status_name(s2), msp_status_name(g2));
            CHECK(s2 != MSP_SUCCESS || w->rows == 0 ||
                      memcmp(w->got[c], w->again, (size_t)w->rows * sizeof *w->again) == 0,
                  "%s: two identical products differ in their bits", clab);
          }
        } else if (c == 0) {
          w->ref_valid = 0; // no reference result to compare the others with
        }
        if (msp_test_failures == before)
          e->passed++;
        else
          e->failed++;
      }
    }
  }
}

static int64_t longest_row(const test_csr *m) {
  int64_t l = 0;
  for (int64_t i = 0; i < m->rows; i++)
    if (m->rowptr[i + 1] - m->rowptr[i] > l) l = m->rowptr[i + 1] - m->rowptr[i];
  return l;
}

// The stored pattern of B and its values as held by the format (msp__format_to_csr: fp64 for
// the formats that encode into a precision, the stored values for the f64-only formats).
static int stored_csr(msp_matrix B, test_csr *s) {
  memset(s, 0, sizeof *s);
  int64_t *rp = NULL;
  int32_t *ci = NULL;
  double *v = NULL;
  if (msp__format_to_csr(B, &rp, &ci, &v) != MSP_SUCCESS) return -1;
  return test_csr_take(B->rows, B->cols, rp, ci, v, s);
}

// One format, option variant and matrix precision: convert on every context, then every read
// segment count and vector precision.
static void cross_stored(work *w, msp_matrix *A, msp_format f, const variant *v, msp_precision mp,
                         double max_fill) {
  cross_env *e = w->e;
  msp_matrix B[CROSS_MAX_CTX] = {NULL};
  msp_status st[CROSS_MAX_CTX] = {MSP_SUCCESS};
  test_csr s;
  double *sv = NULL;
  memset(&s, 0, sizeof s);
  char label[400];
  snprintf(label, sizeof label, "%s %s%s values %s", w->label, msp_format_name(f), v->tag,
           msp_precision_name(mp));
  msp_convert_options o = msp_convert_options_default();
  o.format = f;
  o.precision = mp;
  o.max_fill = max_fill;
  o.range = MSP_RANGE_ALLOW; // stored values are exactly the precision's rounding (see the top)
  if (v->hack) o.hack_size = v->hack;
  if (v->hyb_k >= 0) o.hyb_k = v->hyb_k;
  if (v->ell_extra) o.ell_width = longest_row(w->m) + v->ell_extra;
  if (v->bdmp_f > 0) o.bdmp_f = v->bdmp_f;
  if (v->bdmp_digits) o.bdmp_digits = v->bdmp_digits;
  char msg0[512] = "";
  for (int c = 0; c < e->nctx; c++) {
    st[c] = msp_matrix_convert(e->ctx[c], A[c], &o, &B[c]);
    if (c == 0) snprintf(msg0, sizeof msg0, "%s", msp_last_error());
  }
  // The conversion is decided on the host from the CSR: every backend must agree.
  int agree = 1;
  for (int c = 1; c < e->nctx; c++)
    agree &= st[c] == st[0];
  if (!agree) {
    CHECK(0, "%s: conversion statuses differ: %s on the reference (%s), %s on %s (%s)", label,
          msp_status_name(st[0]), msg0, msp_status_name(st[e->nctx - 1]),
          msp_backend_name(msp_context_backend(e->ctx[e->nctx - 1])), msp_last_error());
    e->failed++;
    goto exit;
  }
  if (st[0] == MSP_ERR_FILL_LIMIT) {
    e->fill_refused++;
    goto exit;
  }
  if (st[0] == MSP_ERR_NOT_SUPPORTED && mp != MSP_PRECISION_F64 && msp__format_table[f] &&
      msp__format_table[f]->values == NULL) {
    // Documented: the format stores f64 only (BDMP chooses fp32 or fp64 per tile itself).
    char what[200];
    snprintf(what, sizeof what, "every backend: %s with matrix values in %s (f64-only format)",
             msp_format_name(f), msp_precision_name(mp));
    note_unsupported(e, what);
    goto exit;
  }
  if (st[0] != MSP_SUCCESS) {
    CHECK(0, "%s: conversion: %s (%s)", label, msp_status_name(st[0]), msg0);
    e->failed++;
    goto exit;
  }
  for (int c = 0; c < e->nctx; c++) {
    CHECK(msp_matrix_format(B[c]) == f && msp_matrix_precision(B[c]) == mp,
          "%s: the converted matrix on %s reports %s %s", label,
          msp_backend_name(msp_context_backend(e->ctx[c])),
          msp_format_name(msp_matrix_format(B[c])), msp_precision_name(msp_matrix_precision(B[c])));
  }
  if (f == MSP_FORMAT_CSR && mp == MSP_PRECISION_F64 && v == VARIANTS) {
    // The kernel rule: AUTO resolves to a kernel, the same one on every backend.
    for (int c = 0; c < e->nctx; c++) {
      CHECK_OK(msp_matrix_set_kernel(B[c], MSP_KERNEL_AUTO));
      CHECK(msp_matrix_kernel(B[c]) != MSP_KERNEL_AUTO &&
                msp_matrix_kernel(B[c]) == msp_matrix_kernel(B[0]),
            "%s: AUTO kernel resolves to %s on %s", label, msp_kernel_name(msp_matrix_kernel(B[c])),
            msp_backend_name(msp_context_backend(e->ctx[c])));
    }
  }
  if (stored_csr(B[0], &s) != 0) {
    CHECK(0, "%s: the stored CSR could not be rebuilt", label);
    e->failed++;
    goto exit;
  }
  sv = malloc((size_t)(s.nnz ? s.nnz : 1) * sizeof *sv);
  if (!sv) {
    CHECK(0, "%s: host allocation", label);
    e->failed++;
    goto exit;
  }
  double eA = 0;
  if (msp_prec_is_fixed(mp)) {
    double amax = 0;
    for (int64_t k = 0; k < s.nnz; k++)
      amax = fmax(amax, fabs(s.val[k]));
    eA = amax / msp_prec_qmax(mp) / 2;
  }
  const int segs = msp__prec_segments(mp);
  for (int k = segs > 1 ? 1 : 0; k <= (segs > 1 ? segs : 0); k++) {
    char klabel[450];
    if (segs > 1) {
      for (int c = 0; c < e->nctx; c++)
        CHECK_OK(msp_matrix_set_cpms_segments(B[c], k));
      snprintf(klabel, sizeof klabel, "%s read %d of %d segments", label, k, segs);
    } else {
      snprintf(klabel, sizeof klabel, "%s", label);
    }
    for (int64_t j = 0; j < s.nnz; j++)
      sv[j] = test_stored_value(mp, k, s.val[j]);
    for (size_t p = 0; p < NV(PRECS); p++) {
      if (!combo_runs(mp, PRECS[p])) continue;
      if (v != VARIANTS && PRECS[p] != MSP_PRECISION_F64) continue; // variants: f64 vectors
      run_combo(w, B, f, &s, sv, eA, PRECS[p], klabel);
    }
  }
exit:
  for (int c = 0; c < e->nctx; c++)
    msp_matrix_destroy(&B[c]);
  test_csr_free(&s);
  free(sv);
}

static uint64_t hash_label(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

void cross_matrix(cross_env *e, const test_csr *m, const char *label, int options) {
  work w;
  msp_matrix A[CROSS_MAX_CTX] = {NULL};
  memset(&w, 0, sizeof w);
  if (e->max_nnz > 0 && m->nnz > e->max_nnz) {
    printf("%s: %s left out: %lld entries > MSP_CROSS_MAX_NNZ %lld\n", e->name, label,
           (long long)m->nnz, (long long)e->max_nnz);
    e->capped++;
    return;
  }
  w.e = e;
  w.m = m;
  w.label = label;
  w.rows = m->rows;
  w.cols = m->cols;
  if (work_alloc(&w) != 0) {
    CHECK(0, "%s: host allocation", label);
    e->failed++;
    goto exit;
  }
  fill_inputs(&w, hash_label(label));
  for (int c = 0; c < e->nctx; c++) {
    CHECK_OK(test_csr_to_matrix(m, e->ctx[c], &A[c]));
    if (!A[c]) {
      e->failed++;
      goto exit;
    }
  }
  e->matrices++;
  // DIA and ELL run on irregular small matrices too (a DIA of rows x (rows + cols) slots stays
  // below ~32 MB); larger ones keep the library's fill limit.
  const double fill = (double)m->rows * (double)(m->rows + m->cols) <= 4e6 ? 1e9 : 3.0;
  const size_t nvar = options && m->nnz <= e->variant_max_nnz ? NV(VARIANTS) : 1;
  for (size_t fi = 0; fi < NV(FORMATS); fi++)
    for (size_t vi = 0; vi < nvar && format_selected(FORMATS[fi]); vi++)
      for (size_t p = 0; p < NV(PRECS); p++) {
        if (vi > 0 && PRECS[p] != MSP_PRECISION_F64) continue;
        cross_stored(&w, A, FORMATS[fi], &VARIANTS[vi], PRECS[p], fill);
      }
exit:
  for (int c = 0; c < e->nctx; c++)
    msp_matrix_destroy(&A[c]);
  work_free(&w);
}

void cross_spec(cross_env *e, const char *spec, int options) {
  msp_matrix A = NULL;
  test_csr m;
  memset(&m, 0, sizeof m);
  msp_status st = msp_matrix_generate(e->ctx[0], spec, &A);
  CHECK(st == MSP_SUCCESS, "generate %s: %s (%s)", spec, msp_status_name(st), msp_last_error());
  if (st == MSP_SUCCESS) {
    if (test_csr_from_matrix(&m, A) == 0)
      cross_matrix(e, &m, spec, options);
    else
      CHECK(0, "%s: could not copy the CSR out", spec);
  }
  test_csr_free(&m);
  msp_matrix_destroy(&A);
}

// ---- edge cases -------------------------------------------------------------------------------
// A CSR with the given row lengths (each at most cols): the columns of a row of length l are
// spread over cols, one in each of l equal bands, at a random place in the band (strictly
// increasing); values uniform in [-1, 1).
static int make_lengths(test_csr *m, int64_t rows, int64_t cols, const int64_t *len,
                        uint64_t seed) {
  msp_rng r = {seed};
  memset(m, 0, sizeof *m);
  m->rows = rows;
  m->cols = cols;
  m->rowptr = malloc((size_t)(rows + 1) * sizeof *m->rowptr);
  if (!m->rowptr) return -1;
  m->rowptr[0] = 0;
  for (int64_t i = 0; i < rows; i++)
    m->rowptr[i + 1] = m->rowptr[i] + (len[i] < cols ? len[i] : cols);
  m->nnz = m->rowptr[rows];
  m->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->val);
  if (!m->colind || !m->val) return -1;
  for (int64_t i = 0; i < rows; i++) {
    int64_t b = m->rowptr[i], l = m->rowptr[i + 1] - b;
    for (int64_t k = 0; k < l; k++) {
      m->colind[b + k] = (int32_t)(k * cols / l + msp_rng_range(&r, cols / l));
      m->val[b + k] = 2.0 * msp_rng_uniform(&r) - 1.0;
    }
  }
  return 0;
}

// Row lengths: `base` everywhere (base < 0: uniform in 0..-base), 0 on every `empty_every`-th
// row (0: none), and `long_len` on row `long_row` (-1: none).
static int make_pattern(test_csr *m, int64_t rows, int64_t cols, int64_t base, int64_t empty_every,
                        int64_t long_row, int64_t long_len, uint64_t seed) {
  msp_rng r = {seed ^ 0x5eedull};
  int64_t *len = malloc((size_t)(rows ? rows : 1) * sizeof *len);
  if (!len) return -1;
  for (int64_t i = 0; i < rows; i++) {
    len[i] = base < 0 ? msp_rng_range(&r, -base + 1) : base;
    if (empty_every > 0 && i % empty_every == 0) len[i] = 0;
    if (i == long_row) len[i] = long_len;
  }
  int rc = make_lengths(m, rows, cols, len, seed);
  free(len);
  return rc;
}

static void run_made(cross_env *e, test_csr *m, const char *label, int made, int options) {
  CHECK(made == 0, "%s: could not make the matrix", label);
  if (made == 0) cross_matrix(e, m, label, options);
  test_csr_free(m);
}

static void random_case(cross_env *e, int64_t rows, int64_t cols, double mean, uint64_t seed) {
  test_csr m;
  char label[128];
  snprintf(label, sizeof label, "random %lldx%lld mean %g", (long long)rows, (long long)cols, mean);
  run_made(e, &m, label, test_csr_random(&m, rows, cols, mean, seed), 1);
}

// Duplicated entries in the caller's CSR: every third row repeats some of its columns (the
// library sums them; the stored matrix is what the oracle reads).
static int make_duplicates(test_csr *m, int64_t n, uint64_t seed) {
  msp_rng r = {seed};
  memset(m, 0, sizeof *m);
  m->rows = m->cols = n;
  m->rowptr = malloc((size_t)(n + 1) * sizeof *m->rowptr);
  m->colind = malloc((size_t)(n * 8 + 1) * sizeof *m->colind);
  m->val = malloc((size_t)(n * 8 + 1) * sizeof *m->val);
  if (!m->rowptr || !m->colind || !m->val) return -1;
  int64_t k = 0;
  m->rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t l = 1 + msp_rng_range(&r, 4);
    for (int64_t q = 0; q < l; q++) {
      int32_t col = (int32_t)msp_rng_range(&r, n);
      m->colind[k] = col;
      m->val[k++] = 2.0 * msp_rng_uniform(&r) - 1.0;
      if (i % 3 == 0) { // the same column again, and in reverse order
        m->colind[k] = col;
        m->val[k++] = 2.0 * msp_rng_uniform(&r) - 1.0;
      }
    }
    m->rowptr[i + 1] = k;
  }
  m->nnz = k;
  return 0;
}

void cross_edge_cases(cross_env *e, int large) {
  test_csr m;
  uint64_t seed = 1000;
  // Empty shapes and nnz = 0.
  random_case(e, 0, 0, 0, seed++);
  random_case(e, 5, 0, 0, seed++);
  random_case(e, 0, 7, 0, seed++);
  random_case(e, 10, 10, 0, seed++);
  // 1x1, below a warp, just above a warp, beyond the hack sizes (32, 64, 96), n not a multiple
  // of 32 or 64, tall and wide.
  run_made(e, &m, "one 1x1", make_pattern(&m, 1, 1, 1, 0, -1, 0, seed++), 1);
  random_case(e, 7, 5, 2, seed++);
  random_case(e, 31, 31, 3, seed++);
  random_case(e, 33, 33, 6, seed++);
  random_case(e, 65, 70, 5, seed++);
  random_case(e, 97, 100, 12, seed++);
  random_case(e, 129, 129, 40, seed++);
  random_case(e, 1037, 999, 5, seed++);
  random_case(e, 100, 5000, 20, seed++);
  random_case(e, 5000, 100, 3, seed++);
  run_made(e, &m, "row 1x1000", make_pattern(&m, 1, 1000, 1000, 0, -1, 0, seed++), 1);
  run_made(e, &m, "column 1000x1", make_pattern(&m, 1000, 1, 1, 7, -1, 0, seed++), 1);
  // Empty rows; a row longer than a hack in a partial last hack; COO tiles of 256 entries.
  run_made(e, &m, "empty rows 777x800", make_pattern(&m, 777, 800, -10, 3, -1, 0, seed++), 1);
  run_made(e, &m, "long row in the last hack 100x600",
           make_pattern(&m, 100, 600, -2, 0, 97, 500, seed++), 1);
  run_made(e, &m, "rows of 256 100x300", make_pattern(&m, 100, 300, 256, 0, -1, 0, seed++), 0);
  run_made(e, &m, "rows of 300 50x400", make_pattern(&m, 50, 400, 300, 0, -1, 0, seed++), 0);
  // Rows over tile boundaries with about MSP__COO_ABSORB entries before their last tile: some
  // finished by the tile where they end, some by look-back; empty rows between them.
  run_made(e, &m, "rows of 0..1200 30x1300", make_pattern(&m, 30, 1300, -1200, 7, -1, 0, seed++),
           0);
  // One very long row: 20000 entries amid rows of at most one.
  {
    const int64_t n = 20000;
    int64_t *len = malloc((size_t)n * sizeof *len);
    int made = len ? 0 : -1;
    for (int64_t i = 0; made == 0 && i < n; i++)
      len[i] = i == n / 3 ? n : i % 3 == 0;
    if (made == 0) made = make_lengths(&m, n, n, len, seed++);
    free(len);
    run_made(e, &m, "one row of 20000 entries", made, 0);
  }
  // Duplicates in the caller's arrays.
  run_made(e, &m, "duplicates 500x500", make_duplicates(&m, 500, seed++), 1);
  // Values over ten decades: fixed-point block scales, f16 subnormals and CPMS truncation.
  {
    int made = test_csr_random(&m, 1000, 1000, 8, seed++);
    msp_rng r = {seed++};
    for (int64_t k = 0; made == 0 && k < m.nnz; k++)
      m.val[k] *= pow(10.0, (double)msp_rng_range(&r, 11) - 8);
    run_made(e, &m, "random 1000x1000 values 1e-8..1e2", made, 0);
  }
  // Results 10^6 apart from one block of MSP_VEC_FX_BLOCK rows to the next (a tridiagonal
  // matrix scaled per block): each fixed-point block of y needs its own scale.
  {
    const int64_t n = 1000;
    memset(&m, 0, sizeof m);
    m.rows = m.cols = n;
    m.rowptr = malloc((size_t)(n + 1) * sizeof *m.rowptr);
    m.colind = malloc((size_t)(3 * n) * sizeof *m.colind);
    m.val = malloc((size_t)(3 * n) * sizeof *m.val);
    int made = m.rowptr && m.colind && m.val ? 0 : -1;
    if (made == 0) m.rowptr[0] = 0;
    msp_rng r = {seed++};
    int64_t k = 0;
    for (int64_t i = 0; made == 0 && i < m.rows; i++) {
      const double mag = (i / MSP_VEC_FX_BLOCK) % 2 ? 1e-6 : 1.0;
      for (int64_t j = i - 1; j <= i + 1; j++) {
        if (j < 0 || j >= m.cols) continue;
        m.colind[k] = (int32_t)j;
        m.val[k++] = mag * (j == i ? 4.0 : -0.5 - 0.25 * msp_rng_uniform(&r));
      }
      m.rowptr[i + 1] = k;
    }
    m.nnz = k;
    run_made(e, &m, "tridiagonal with y blocks 1e6 apart 1000", made, 0);
  }
  // A diagonal with one far off-diagonal entry (one more diagonal, nearly all padding).
  {
    const int64_t n = 640;
    int64_t k = 0;
    memset(&m, 0, sizeof m);
    m.rows = m.cols = n;
    m.nnz = n + 1;
    m.rowptr = malloc((size_t)(n + 1) * sizeof *m.rowptr);
    m.colind = malloc((size_t)m.nnz * sizeof *m.colind);
    m.val = malloc((size_t)m.nnz * sizeof *m.val);
    int made = m.rowptr && m.colind && m.val ? 0 : -1;
    for (int64_t i = 0; made == 0 && i < n; i++) {
      m.rowptr[i] = k;
      m.colind[k] = (int32_t)i;
      m.val[k++] = 1.0 + (double)i / (double)n;
      if (i == 5) {
        m.colind[k] = (int32_t)(n - 1);
        m.val[k++] = -3.0;
      }
    }
    if (made == 0) m.rowptr[n] = k;
    run_made(e, &m, "diagonal with a far entry 640", made, 0);
  }
  // Power-law row lengths.
  run_made(e, &m, "power-law 3000", test_csr_powerlaw(&m, 3000, 3000, 1500, seed++), 0);
  // The project's generator (seeded specs): stencils and bands for DIA/HDIA, more than 256
  // diagonals (staged in pieces by the DIA kernels), R-MAT and power law for the skewed kernels.
  cross_spec(e, "laplace2d:40", 0);
  cross_spec(e, "stencil27:10", 0);
  cross_spec(e, "banded:1000:7", 0);
  cross_spec(e, "banded:400:261", 0);
  cross_spec(e, "random:2000:9:5", 0);
  cross_spec(e, "rmat:11:8:3", 0);
  cross_spec(e, "powerlaw:3000:6:4", 0);
  if (!large) return;
  // Sizes of real work: many vector blocks, merge-path tiles, a 10^6-entry row.
  random_case(e, 60013, 60013, 6, seed++);
  run_made(e, &m, "rows of 1024 +-1 600x4096", make_pattern(&m, 600, 4096, -2048, 9, -1, 0, seed++),
           0);
  run_made(e, &m, "coo long row 70000", make_pattern(&m, 300, 80000, -4, 9, 150, 70000, seed++), 0);
  run_made(e, &m, "power-law 200000", test_csr_powerlaw(&m, 200000, 200000, 100000, seed++), 0);
  {
    const int64_t n = 1000000;
    int64_t *len = calloc((size_t)(n + 1), sizeof *len);
    int made = len ? 0 : -1;
    if (made == 0) {
      len[n / 2] = n;
      made = make_lengths(&m, n + 1, n, len, seed++);
    }
    free(len);
    run_made(e, &m, "10^6-entry row among 10^6 empty rows", made, 0);
  }
  cross_spec(e, "stencil27:24", 0);
  cross_spec(e, "banded:2000:301", 0);
  cross_spec(e, "rmat:16:16:7", 0);
}

void cross_collection_matrix(const char *path, const char *name, void *user) {
  cross_env *e = (cross_env *)user;
  msp_matrix A = NULL;
  test_csr m;
  memset(&m, 0, sizeof m);
  msp_status st = msp_matrix_read_mtx(e->ctx[0], path, 0, &A);
  if (st != MSP_SUCCESS) {
    // The reader's own tests cover its refusals (e.g. non-finite values): named, not crossed.
    printf("%s: %s not crossed: the reader refuses it: %s (%s)\n", e->name, name,
           msp_status_name(st), msp_last_error());
    e->unreadable++;
    return;
  }
  if (test_csr_from_matrix(&m, A) == 0)
    cross_matrix(e, &m, name, 0);
  else
    CHECK(0, "%s: could not copy the CSR out", name);
  test_csr_free(&m);
  msp_matrix_destroy(&A);
}

int cross_finish(cross_env *e) {
  const char *only = getenv("MSP_CROSS_FORMATS");
  if (only && *only) printf("%s: only the formats %s (MSP_CROSS_FORMATS)\n", e->name, only);
  for (int i = 0; i < e->nns; i++)
    printf("%s: not supported: %s (%lld cases)\n", e->name, e->ns[i].what,
           (long long)e->ns[i].count);
  if (e->nns == CROSS_MAX_UNSUPPORTED)
    printf("%s: (more not-supported kinds than listed)\n", e->name);
  printf("%s: %lld matrices; %lld conversions refused by the fill limit on every backend alike; "
         "%lld matrices left out by MSP_CROSS_MAX_NNZ; %lld collection matrices unreadable\n",
         e->name, (long long)e->matrices, (long long)e->fill_refused, (long long)e->capped,
         (long long)e->unreadable);
  printf("cross: %lld passed, %lld failed, %lld not supported\n", (long long)e->passed,
         (long long)e->failed, (long long)e->unsupported);
  int rc = msp_test_finish(e->name);
  return e->failed || rc ? 1 : 0;
}

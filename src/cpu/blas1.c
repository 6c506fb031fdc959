// blas1.c: CPU vector operations on the encoded data (each vector read and written in its own
// storage precision); reductions in a fixed order independent of the thread count.
#include "partials.h"

#include <math.h>
#include <string.h>

// Reductions: chunks of MSP__RED_CHUNK entries are summed in index order (in parallel over
// chunks); up to GROUP chunk sums are combined pairwise in a fixed tree; groups are added in
// order. No allocation: the partials live on the stack. Arithmetic is fp64 whatever the storage.
#define GROUP MSP__RED_GROUP
// Writes: blocks of WBLOCK entries (a multiple of MSP_VEC_FX_BLOCK, so the block scales of a
// fixed-point result are set from whole blocks) computed into a stack buffer, then stored.
#define WBLOCK 1024

typedef struct {
  int op;
  msp_acc xa, ya;
  int64_t n, c0, nc; // chunks c0 .. c0+nc-1
  double s;          // MSP__RED_SQ: the scale applied before squaring
  double *part;      // nc partial results
} red_args;

// The partial result of each chunk: x.y, sum |x|, sum (s x)^2 or max |x| (NaN when
// the chunk holds one). PX and PY are constants; the op is chosen once per chunk.
MSP__CPU_INLINE void red_kernel(msp_precision PX, msp_precision PY, red_args *a) {
  const msp_acc xa = a->xa, ya = a->ya;
  const double s = a->s;
#pragma omp for schedule(static)
  for (int64_t c = 0; c < a->nc; c++) {
    const int64_t b = (a->c0 + c) * MSP__RED_CHUNK;
    const int64_t e = b + MSP__RED_CHUNK < a->n ? b + MSP__RED_CHUNK : a->n;
    double t = 0.0;
    switch (a->op) {
    case MSP__RED_DOT:
      for (int64_t i = b; i < e; i++)
        t += msp_acc_load_p(PX, &xa, i) * msp_acc_load_p(PY, &ya, i);
      break;
    case MSP__RED_ABS:
      for (int64_t i = b; i < e; i++)
        t += fabs(msp_acc_load_p(PX, &xa, i));
      break;
    case MSP__RED_SQ:
      for (int64_t i = b; i < e; i++) {
        const double v = msp_acc_load_p(PX, &xa, i) * s;
        t += v * v;
      }
      break;
    default:
      for (int64_t i = b; i < e; i++)
        t = msp_absmax_step(t, msp_acc_load_p(PX, &xa, i));
      break;
    }
    a->part[c] = t;
  }
}

#define MSP__CPU_KERNEL red_kernel
MSP__CPU_INSTANTIATE2(red_args *)
#undef MSP__CPU_KERNEL

void msp__cpu_red_partials(int op, msp_vector x, msp_vector y, double s, int64_t c0, int64_t c1,
                           double *part) {
  red_args a;
  memset(&a, 0, sizeof a);
  a.op = op;
  a.xa = msp__vector_acc(x, 0);
  a.ya = msp__vector_acc(y, 0);
  a.n = x->n;
  a.s = s;
  a.c0 = c0;
  a.nc = c1 > c0 ? c1 - c0 : 0;
  a.part = part;
#pragma omp parallel
  red_kernel_dispatch(x->prec, y->prec, &a);
}

// op over x (and y for MSP__RED_DOT; y = x otherwise). Sums: pairwise per group, groups in
// order; max: exact in any order.
static double reduce(int op, msp_vector x, msp_vector y, double s) {
  double part[GROUP];
  double total = 0.0;
  const int64_t chunks = (x->n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  for (int64_t g0 = 0; g0 < chunks; g0 += GROUP) {
    const int64_t ng = chunks - g0 < GROUP ? chunks - g0 : GROUP;
    msp__cpu_red_partials(op, x, y, s, g0, g0 + ng, part);
    if (op == MSP__RED_MAX) {
      for (int64_t c = 0; c < ng; c++)
        total = msp_absmax_step(total, part[c]);
    } else {
      total += msp__cpu_pairwise(part, ng);
    }
  }
  return total;
}

msp_status msp__cpu_dot(msp_context ctx, msp_vector x, msp_vector y, double *r) {
  *r = reduce(MSP__RED_DOT, x, y, 0.0);
  return MSP_SUCCESS;
}

msp_status msp__cpu_nrm1(msp_context ctx, msp_vector x, double *r) {
  *r = reduce(MSP__RED_ABS, x, x, 0.0);
  return MSP_SUCCESS;
}

// 2-norm scaled by the largest magnitude, so squares neither overflow nor underflow.
msp_status msp__cpu_nrm2(msp_context ctx, msp_vector x, double *r) {
  const double m = reduce(MSP__RED_MAX, x, x, 0.0);
  if (m == 0.0 || !isfinite(m)) {
    *r = m;
    return MSP_SUCCESS;
  }
  *r = m * sqrt(reduce(MSP__RED_SQ, x, x, 1.0 / m));
  return MSP_SUCCESS;
}

// ---- writes
// --------------------------------------------------------------------------------------- dst =
// alpha src + beta dst (dst not read when beta == 0) in blocks of WBLOCK entries; src is NULL for a
// fill with `value`. src read in its precision (PX constant), dst rounded by its store.
typedef struct {
  msp_acc src, dst;
  int has_src;
  double value, alpha, beta;
  int64_t n;
  int64_t over, flushed; // results out of y's range (see msp__cpu_store_p)
} write_args;

MSP__CPU_INLINE void write_kernel(msp_precision PX, write_args *a) {
  const msp_acc src = a->src, dst = a->dst;
  const double alpha = a->alpha, beta = a->beta;
  const int64_t n = a->n, nblocks = (n + WBLOCK - 1) / WBLOCK;
  // Counted apart per block: a vector here may have more than 2^31 entries, so the halves of
  // msp__cpu_store_rows's count (one block's) are split before they add up.
  int64_t over = 0, flushed = 0;
#pragma omp for schedule(static) nowait
  for (int64_t b = 0; b < nblocks; b++) {
    const int64_t i0 = b * WBLOCK, m = n - i0 < WBLOCK ? n - i0 : WBLOCK;
    double t[WBLOCK];
    if (a->has_src) {
      for (int64_t i = 0; i < m; i++)
        t[i] = msp_acc_load_p(PX, &src, i0 + i);
    } else {
      for (int64_t i = 0; i < m; i++)
        t[i] = a->value;
    }
    const int64_t c = msp__cpu_store_rows(&dst, i0, t, m, alpha, beta);
    over += c & (MSP__RANGE_FLUSH_UNIT - 1);
    flushed += c >> 32;
  }
  msp__cpu_add_over(&a->over, over);
  msp__cpu_add_over(&a->flushed, flushed);
}

#define MSP__CPU_KERNEL write_kernel
MSP__CPU_INSTANTIATE1(write_args *)
#undef MSP__CPU_KERNEL

// Run a write into dst and count its results out of range on dst.
static void write_into(msp_vector src, double value, double alpha, double beta, msp_vector dst) {
  write_args a;
  memset(&a, 0, sizeof a);
  a.has_src = src != NULL;
  if (src) a.src = msp__vector_acc(src, 0);
  a.dst = msp__vector_acc(dst, 0);
  a.value = value;
  a.alpha = alpha;
  a.beta = beta;
  a.n = dst->n;
  const msp_precision px = src ? src->prec : MSP_PRECISION_F64;
#pragma omp parallel
  write_kernel_dispatch(px, &a);
  dst->range_count += a.over;
  dst->range_flushed += a.flushed;
}

msp_status msp__cpu_axpby(msp_context ctx, double a, msp_vector x, double b, msp_vector y) {
  write_into(x, 0.0, a, b, y);
  return MSP_SUCCESS;
}

// x = a x: read in x's precision (CPMS: its segments), stored back whole. Each block is read
// into the buffer before it is stored, so reading and writing the same vector is safe.
msp_status msp__cpu_scale(msp_context ctx, double a, msp_vector x) {
  write_into(x, 0.0, a, 0.0, x);
  return MSP_SUCCESS;
}

// y = x as operations read x. Same precision (and all CPMS segments read): the encoded bytes and
// scales themselves; otherwise each value is read and rounded by y's store.
msp_status msp__cpu_copy(msp_context ctx, msp_vector x, msp_vector y) {
  const int all = msp__prec_segments(x->prec);
  if (x->prec == y->prec && (x->segments == 0 || x->segments >= all)) {
    if (x->n) memcpy(y->h_data, x->h_data, (size_t)x->n * msp__prec_bytes(x->prec));
    if (x->nscales) memcpy(y->h_scales, x->h_scales, (size_t)x->nscales * sizeof(double));
    return MSP_SUCCESS;
  }
  write_into(x, 0.0, 1.0, 0.0, y);
  return MSP_SUCCESS;
}

msp_status msp__cpu_fill(msp_context ctx, msp_vector x, double value) {
  write_into(NULL, value, 1.0, 0.0, x);
  return MSP_SUCCESS;
}

// z_i = d_i * x_i, f64 vectors (Jacobi's application: d holds the inverse diagonal).
msp_status msp__cpu_pmul(msp_context ctx, msp_vector d, msp_vector x, msp_vector z) {
  const double *dv = (const double *)d->h_data, *xv = (const double *)x->h_data;
  double *zv = (double *)z->h_data;
  const int64_t n = x->n;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    zv[i] = xv[i] * dv[i];
  return MSP_SUCCESS;
}

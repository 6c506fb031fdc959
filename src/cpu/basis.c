// basis.c: CPU Krylov-basis operations of GMRES over the compressed basis (store, projection,
// subtraction, combination), reading the stored values through the accessors, fp64 arithmetic.
//
// Aliaga, Anzt, Grutzmacher, Quintana-Orti, Tomas, "Compressed basis GMRES" ("Memory accessor"):
// the basis lives in memory in its storage precision and is converted to double on every load;
// nothing is decoded into an fp64 copy, so a projection over an f32 basis reads half the bytes of
// an f64 one. Each operation is one body per storage precision (MSP__CPU_INSTANTIATE1), which reads
// every column it needs in one pass over the rows: the row block of w (or of the result) stays in
// cache while the columns stream by.
#include "partials.h"

#include <math.h>
#include <string.h>

// Rows per block of the subtraction and combination (the block of results lives on the stack).
#define BLOCK 512
#define UBLOCK 2048 // DCGS2's second pass

// The accessor view of column j: its own array of n values (fixed point: its one scale; CPMS:
// every segment read and written).
MSP__CPU_INLINE msp_acc col_acc(const msp__basis *V, int j) {
  msp_acc a;
  memset(&a, 0, sizeof a);
  a.data = (char *)V->data + (size_t)j * (size_t)V->n * msp__prec_bytes(V->prec);
  a.n = V->n;
  a.prec = V->prec;
  a.scale_shift = MSP_CPMS_SEPARATE; // i >> 62 == 0: one scale for the column
  a.scales = V->scales ? V->scales + j : NULL;
  a.bank_shift = V->bank_shift;
  a.read_segments = msp__prec_segments(V->prec);
  return a;
}

typedef struct {
  const msp__basis *V;
  int j0, j1; // columns j0 .. j1-1 (store: column j0)
  double *w;  // f64 vector data (w, or z for the combination)
  const double *coef;
  double max;   // store: max |w| over all threads
  int scaled;   // store: the column's scale already set (msp__cpu_basis_store_scaled)
  int np;       // subtraction: the columns j0 .. j0+np-1 projected afterwards (0 or j1 - j0)
  int ww;       // projection, subtraction: w.w too, in the partials' slot np (or j1 - j0)
  double *part; // projection: the partials, part[k * kstride + c * cstride]
  int64_t kstride, cstride; // (k: the column from j0, c: the chunk)
} basis_args;

// ---- store --------------------------------------------------------------------------------------
// Fixed point takes the column's scale from max |w| first (a NaN or Inf in w gives a NaN scale,
// so the column reads NaN and the solver sees it); then every value is rounded into the column
// and read back into w. The basis vectors are normalised (|entries| <= 1), so no IEEE storage
// overflows; entries below a 16-bit format's smallest subnormal are flushed, which only
// perturbs the basis as its rounding does.
MSP__CPU_INLINE void store_kernel(msp_precision P, basis_args *a) {
  double *w = a->w;
  const int64_t n = a->V->n;
  if (msp_prec_is_fixed(P) && !a->scaled) {
    double m = 0.0;
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < n; i++)
      m = msp_absmax_step(m, w[i]);
#pragma omp critical(msp_basis_store_max)
    a->max = msp_absmax_step(a->max, m);
#pragma omp barrier
#pragma omp single
    a->V->scales[a->j0] = msp_fx_block_scale(P, a->max);
  }
  const msp_acc v = col_acc(a->V, a->j0);
#pragma omp for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    msp_acc_store_p(P, &v, i, w[i]);
    w[i] = msp_acc_load_p(P, &v, i);
  }
}
#define MSP__CPU_KERNEL store_kernel
MSP__CPU_INSTANTIATE1(basis_args *)
#undef MSP__CPU_KERNEL

// ---- projection ---------------------------------------------------------------------------------
// Chunk c of MSP__RED_CHUNK rows gives the partial dot product of every column with w, written
// to part[k * kstride + c * cstride] (with ww, w.w in slot k = j1 - j0); the CPU backend adds the
// partials of each column pairwise in a fixed tree, so the result does not depend on the thread
// count.
MSP__CPU_INLINE void project_kernel(msp_precision P, basis_args *a) {
  const msp__basis *V = a->V;
  const double *w = a->w;
  const int64_t n = V->n, nchunks = (n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  const int64_t ks = a->kstride, cs = a->cstride;
  const int cnt = a->j1 - a->j0;
#pragma omp for schedule(static)
  for (int64_t c = 0; c < nchunks; c++) {
    const int64_t b = c * MSP__RED_CHUNK, e = b + MSP__RED_CHUNK < n ? b + MSP__RED_CHUNK : n;
    for (int k = a->j0; k < a->j1; k++) {
      const msp_acc v = col_acc(V, k);
      double t = 0.0;
      for (int64_t i = b; i < e; i++)
        t += msp_acc_load_p(P, &v, i) * w[i];
      a->part[(int64_t)(k - a->j0) * ks + c * cs] = t;
    }
    if (a->ww) {
      double t = 0.0;
      for (int64_t i = b; i < e; i++)
        t += w[i] * w[i];
      a->part[(int64_t)cnt * ks + c * cs] = t;
    }
  }
}
#define MSP__CPU_KERNEL project_kernel
MSP__CPU_INSTANTIATE1(basis_args *)
#undef MSP__CPU_KERNEL

// ---- subtraction and combination ----------------------------------------------------------------
// Per block of rows: t = w (subtract) or 0 (combine), t += sign * coef[k] V_k for every column,
// then the block is written back to w.
MSP__CPU_INLINE void update_kernel(msp_precision P, basis_args *a, int subtract) {
  const msp__basis *V = a->V;
  double *w = a->w;
  const int64_t n = V->n, nblocks = (n + BLOCK - 1) / BLOCK;
#pragma omp for schedule(static)
  for (int64_t blk = 0; blk < nblocks; blk++) {
    const int64_t b = blk * BLOCK, m = n - b < BLOCK ? n - b : BLOCK;
    double t[BLOCK];
    for (int64_t i = 0; i < m; i++)
      t[i] = subtract ? w[b + i] : 0.0;
    for (int k = a->j0; k < a->j1; k++) {
      const msp_acc v = col_acc(V, k);
      const double h = subtract ? -a->coef[k - a->j0] : a->coef[k - a->j0];
      for (int64_t i = 0; i < m; i++)
        t[i] += h * msp_acc_load_p(P, &v, b + i);
    }
    memcpy(w + b, t, (size_t)m * sizeof(double));
  }
}
MSP__CPU_INLINE void subtract_kernel(msp_precision P, basis_args *a) {
  update_kernel(P, a, 1);
}
MSP__CPU_INLINE void combine_kernel(msp_precision P, basis_args *a) {
  update_kernel(P, a, 0);
}
#define MSP__CPU_KERNEL subtract_kernel
MSP__CPU_INSTANTIATE1(basis_args *)
#undef MSP__CPU_KERNEL

// ---- subtraction with the next projection
// -------------------------------------------------------- The subtraction's blocks of BLOCK rows
// (the same bits as subtract_kernel), each followed, while its columns are in cache, by its terms
// of the projection partials of the new w over columns j0 .. j0+np-1 (and of w.w): per chunk of
// MSP__RED_CHUNK rows (a multiple of BLOCK) the terms are added in row order, so the partials are
// project_kernel's, bit for bit.
MSP__CPU_INLINE void subproj_kernel(msp_precision P, basis_args *a) {
  const msp__basis *V = a->V;
  double *w = a->w;
  const int64_t n = V->n, nchunks = V->nchunks;
#pragma omp for schedule(static)
  for (int64_t c = 0; c < nchunks; c++) {
    const int64_t c0 = c * MSP__RED_CHUNK, c1 = c0 + MSP__RED_CHUNK < n ? c0 + MSP__RED_CHUNK : n;
    for (int k = 0; k <= a->np; k++)
      V->work[(int64_t)k * nchunks + c] = 0.0;
    for (int64_t b = c0; b < c1; b += BLOCK) {
      const int64_t m = c1 - b < BLOCK ? c1 - b : BLOCK;
      double t[BLOCK];
      memcpy(t, w + b, (size_t)m * sizeof(double));
      for (int k = a->j0; k < a->j1; k++) {
        const msp_acc v = col_acc(V, k);
        const double h = -a->coef[k - a->j0];
        for (int64_t i = 0; i < m; i++)
          t[i] += h * msp_acc_load_p(P, &v, b + i);
      }
      memcpy(w + b, t, (size_t)m * sizeof(double));
      for (int k = 0; k < a->np; k++) {
        const msp_acc v = col_acc(V, a->j0 + k);
        double p = V->work[(int64_t)k * nchunks + c];
        for (int64_t i = 0; i < m; i++)
          p += msp_acc_load_p(P, &v, b + i) * t[i];
        V->work[(int64_t)k * nchunks + c] = p;
      }
      if (a->ww) {
        double p = V->work[(int64_t)a->np * nchunks + c];
        for (int64_t i = 0; i < m; i++)
          p += t[i] * t[i];
        V->work[(int64_t)a->np * nchunks + c] = p;
      }
    }
  }
}
#define MSP__CPU_KERNEL subproj_kernel
MSP__CPU_INSTANTIATE1(basis_args *)
#undef MSP__CPU_KERNEL
#define MSP__CPU_KERNEL combine_kernel
MSP__CPU_INSTANTIATE1(basis_args *)
#undef MSP__CPU_KERNEL

// ---- DCGS2's two passes -------------------------------------------------------------------------
// The fp64 arithmetic runs over decoded blocks in 32 interleaved sums (a fixed pattern, so the
// bits do not depend on the thread count), which the compiler vectorises where one running sum
// in row order could not be: the passes then stream the columns as fast as a BLAS dot does.

// The arithmetic loops of DCGS2's passes also in an FMA (and AVX) build chosen at run time: the
// same operations in the same order on wider registers, so the same bits. Their products are
// fused multiply-adds written out (fma), as the CUDA backend's: one rounding each on every
// machine (a machine without FMA computes them in software, slower but alike).
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#define MSP__CPU_WIDE __attribute__((target_clones("fma", "default")))
#else
#define MSP__CPU_WIDE
#endif

// An f32 column's rows widened (exact) in the wide build too.
MSP__CPU_WIDE static void decode_f32(const float *x, int64_t m, double *buf) {
  for (int64_t i = 0; i < m; i++)
    buf[i] = (double)x[i];
}

// buf[0..m) = rows b .. b+m-1 of the column read through v.
MSP__CPU_INLINE void decode_rows(msp_precision P, const msp_acc *v, int64_t b, int64_t m,
                                 double *buf) {
  if (P == MSP_PRECISION_F32) {
    decode_f32((const float *)v->data + b, m, buf);
    return;
  }
  for (int64_t i = 0; i < m; i++)
    buf[i] = msp_acc_load_p(P, v, b + i);
}

// tq -= s1 x1, then s2 x2, and tw -= c1 x1, then c2 x2, over m rows (a fused multiply-add each).
MSP__CPU_WIDE static void axpy4(double *restrict tq, double *restrict tw, const double *restrict x1,
                                const double *restrict x2, double s1, double s2, double c1,
                                double c2, int64_t m) {
  for (int64_t i = 0; i < m; i++) {
    tq[i] = fma(-s2, x2[i], fma(-s1, x1[i], tq[i]));
    tw[i] = fma(-c2, x2[i], fma(-c1, x1[i], tw[i]));
  }
}
// tq -= s x and tw -= c x (a fused multiply-add each).
MSP__CPU_WIDE static void axpy2(double *restrict tq, double *restrict tw, const double *restrict x,
                                double s, double c, int64_t m) {
  for (int64_t i = 0; i < m; i++) {
    tq[i] = fma(-s, x[i], tq[i]);
    tw[i] = fma(-c, x[i], tw[i]);
  }
}

// Pass 1 in the CUDA backend's order (src/cuda/basis_dcgs2.cu), so that both backends give the
// same bits: a chunk of MSP__RED_CHUNK rows is 8 blocks of DBLOCK = 512 rows; in a block, lane
// l < 32 adds the products of rows l, l + 32, ... in row order (a fused multiply-add each, on
// both sides), the 32 lanes are added by halving (l with l + 16, then 8, 4, 2,
// 1), and the chunk's partial is its blocks' sums added in order. A fixed-point basis rounds at a
// fixed position of its column's scale, so a last-bit difference of w between the backends can
// move a stored entry by a unit, and in an unpreconditioned solve that difference spreads over the
// following columns (the residual histories of sherman4 with an fx32 basis parted by 8e-10 when
// only this order differed).
#define DBLOCK 512
#define DLANES 32

// The lanes' sums added as a warp adds them (a is overwritten).
static double lanes_sum(double *a) {
  for (int off = DLANES / 2; off > 0; off >>= 1)
    for (int l = 0; l < off; l++)
      a[l] += a[l + off];
  return a[0];
}

// One block of m <= DBLOCK rows: the sums of x1 y, x1 z, x2 y, x2 z added as above into
// out[0..4). Eight lanes at a time, their sums in registers; the block stays in L1 across them.
MSP__CPU_WIDE static void block4(const double *restrict x1, const double *restrict x2,
                                 const double *restrict y, const double *restrict z, int64_t m,
                                 double out[4]) {
  double a[DLANES], c[DLANES], e[DLANES], f[DLANES];
  for (int h = 0; h < DLANES; h += 8) {
    double ra[8], rc[8], re[8], rf[8];
    for (int l = 0; l < 8; l++)
      ra[l] = rc[l] = re[l] = rf[l] = 0.0;
    if (m == DBLOCK) {
      for (int k = 0; k < DBLOCK / DLANES; k++)
        for (int l = 0; l < 8; l++) {
          const int i = k * DLANES + h + l;
          ra[l] = fma(x1[i], y[i], ra[l]);
          rc[l] = fma(x1[i], z[i], rc[l]);
          re[l] = fma(x2[i], y[i], re[l]);
          rf[l] = fma(x2[i], z[i], rf[l]);
        }
    } else {
      for (int64_t i0 = h; i0 < m; i0 += DLANES)
        for (int l = 0; l < 8 && i0 + l < m; l++) {
          const int64_t i = i0 + l;
          ra[l] = fma(x1[i], y[i], ra[l]);
          rc[l] = fma(x1[i], z[i], rc[l]);
          re[l] = fma(x2[i], y[i], re[l]);
          rf[l] = fma(x2[i], z[i], rf[l]);
        }
    }
    for (int l = 0; l < 8; l++) {
      a[h + l] = ra[l];
      c[h + l] = rc[l];
      e[h + l] = re[l];
      f[h + l] = rf[l];
    }
  }
  out[0] = lanes_sum(a);
  out[1] = lanes_sum(c);
  out[2] = lanes_sum(e);
  out[3] = lanes_sum(f);
}
// One column: x y into out[0] and (z not NULL) x z into out[1].
MSP__CPU_WIDE static void block2(const double *restrict x, const double *restrict y,
                                 const double *restrict z, int64_t m, double out[2]) {
  double a[DLANES], c[DLANES];
  for (int h = 0; h < DLANES; h += 8) {
    double ra[8], rc[8];
    for (int l = 0; l < 8; l++)
      ra[l] = rc[l] = 0.0;
    for (int64_t i0 = h; i0 < m; i0 += DLANES)
      for (int l = 0; l < 8 && i0 + l < m; l++) {
        const int64_t i = i0 + l;
        ra[l] = fma(x[i], y[i], ra[l]);
        if (z) rc[l] = fma(x[i], z[i], rc[l]);
      }
    for (int l = 0; l < 8; l++) {
      a[h + l] = ra[l];
      c[h + l] = rc[l];
    }
  }
  out[0] = lanes_sum(a);
  out[1] = z ? lanes_sum(c) : 0.0;
}

// Per chunk (column j's rows decoded once), the partials of V_k . V_j and V_k . w for every
// k <= j, written to part[k * kstride + c * cstride] and part[(j + 1 + k) * kstride + c * cstride];
// two columns at a time against column j and w, a block of rows at a time.
MSP__CPU_INLINE void dcgs2_project_kernel(msp_precision P, basis_args *a) {
  const msp__basis *V = a->V;
  const double *w = a->w;
  const int j = a->j0;
  const int64_t n = V->n, nchunks = (n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  const int64_t ks = a->kstride, cs = a->cstride;
  const msp_acc vj = col_acc(V, j);
#pragma omp for schedule(static)
  for (int64_t c = 0; c < nchunks; c++) {
    const int64_t c0 = c * MSP__RED_CHUNK, c1 = c0 + MSP__RED_CHUNK < n ? c0 + MSP__RED_CHUNK : n;
    double q[MSP__RED_CHUNK], x[DBLOCK], x2b[DBLOCK];
    decode_rows(P, &vj, c0, c1 - c0, q);
    int k = 0;
    if (w) // two columns at a time, against column j and w
      for (; k + 1 <= j; k += 2) {
        const msp_acc v1 = col_acc(V, k), v2 = col_acc(V, k + 1);
        double t[4] = {0.0, 0.0, 0.0, 0.0}, s[4];
        for (int64_t b = c0; b < c1; b += DBLOCK) {
          const int64_t m = c1 - b < DBLOCK ? c1 - b : DBLOCK;
          const double *x1 = x, *x2 = x2b;
          if (P == MSP_PRECISION_F64) {
            x1 = (const double *)v1.data + b;
            x2 = (const double *)v2.data + b;
          } else {
            decode_rows(P, &v1, b, m, x);
            decode_rows(P, &v2, b, m, x2b);
          }
          block4(x1, x2, q + (b - c0), w + b, m, s);
          for (int v = 0; v < 4; v++)
            t[v] += s[v];
        }
        a->part[(int64_t)k * ks + c * cs] = t[0];
        a->part[(int64_t)(j + 1 + k) * ks + c * cs] = t[1];
        a->part[(int64_t)(k + 1) * ks + c * cs] = t[2];
        a->part[(int64_t)(j + 2 + k) * ks + c * cs] = t[3];
      }
    for (; k <= j; k++) {
      const msp_acc v = col_acc(V, k);
      double t[2] = {0.0, 0.0}, s[2];
      for (int64_t b = c0; b < c1; b += DBLOCK) {
        const int64_t m = c1 - b < DBLOCK ? c1 - b : DBLOCK;
        const double *xs = x;
        if (P == MSP_PRECISION_F64)
          xs = (const double *)v.data + b;
        else
          decode_rows(P, &v, b, m, x);
        block2(xs, q + (b - c0), w ? w + b : NULL, m, s);
        t[0] += s[0];
        t[1] += s[1];
      }
      a->part[(int64_t)k * ks + c * cs] = t[0];
      if (w) a->part[(int64_t)(j + 1 + k) * ks + c * cs] = t[1];
    }
  }
}
#define MSP__CPU_KERNEL dcgs2_project_kernel
MSP__CPU_INSTANTIATE1(basis_args *)
#undef MSP__CPU_KERNEL

// Pass 2, per block of UBLOCK rows (long runs of each column, as in pass 1): every column k < j
// decoded once for both updates, column j
// rewritten (nj: its accessor with the new scale), w finished and, with store, column j + 1.
typedef struct {
  basis_args base;
  const double *s, *c;
  double rjj;
  msp_acc nj; // column j as written
  int store;
} dcgs2_args;
MSP__CPU_INLINE void dcgs2_update_kernel(msp_precision P, dcgs2_args *d) {
  const msp__basis *V = d->base.V;
  double *w = d->base.w;
  const int j = d->base.j0;
  const int64_t n = V->n, nblocks = (n + UBLOCK - 1) / UBLOCK;
  const msp_acc vj = col_acc(V, j);
  const msp_acc vn = d->store ? col_acc(V, j + 1) : vj;
#pragma omp for schedule(static)
  for (int64_t blk = 0; blk < nblocks; blk++) {
    const int64_t b = blk * UBLOCK, m = n - b < UBLOCK ? n - b : UBLOCK;
    double tq[UBLOCK], tw[UBLOCK], x[UBLOCK], x2b[UBLOCK];
    decode_rows(P, &vj, b, m, tq);
    memcpy(tw, w + b, (size_t)m * sizeof(double));
    int k = 0;
    for (; k + 1 < j; k += 2) { // two columns per sweep over tq and tw
      const msp_acc v1 = col_acc(V, k), v2 = col_acc(V, k + 1);
      const double s1 = d->s[k], c1 = d->c[k], s2 = d->s[k + 1], c2 = d->c[k + 1];
      const double *x1 = x, *x2 = x2b;
      if (P == MSP_PRECISION_F64) {
        x1 = (const double *)v1.data + b;
        x2 = (const double *)v2.data + b;
      } else {
        decode_rows(P, &v1, b, m, x);
        decode_rows(P, &v2, b, m, x2b);
      }
      axpy4(tq, tw, x1, x2, s1, s2, c1, c2, m);
    }
    for (; k < j; k++) {
      const msp_acc v = col_acc(V, k);
      const double sk = d->s[k], ck = d->c[k];
      const double *xs = x;
      if (P == MSP_PRECISION_F64)
        xs = (const double *)v.data + b;
      else
        decode_rows(P, &v, b, m, x);
      axpy2(tq, tw, xs, sk, ck, m);
    }
    const double r = d->rjj, cj = d->c[j];
    for (int64_t i = 0; i < m; i++) {
      msp_acc_store_p(P, &d->nj, b + i, tq[i] / r);
      tq[i] = msp_acc_load_p(P, &d->nj, b + i);
      tw[i] = (tw[i] - cj * tq[i]) / r;
    }
    if (d->store) {
      for (int64_t i = 0; i < m; i++) {
        msp_acc_store_p(P, &vn, b + i, tw[i]);
        w[b + i] = msp_acc_load_p(P, &vn, b + i);
      }
    } else {
      memcpy(w + b, tw, (size_t)m * sizeof(double));
    }
  }
}
#define MSP__CPU_KERNEL dcgs2_update_kernel
MSP__CPU_INSTANTIATE1(dcgs2_args *)
#undef MSP__CPU_KERNEL

// ---- slots --------------------------------------------------------------------------------------
static void args_init(basis_args *a, const msp__basis *V, int j0, int j1, msp_vector w,
                      const double *coef) {
  memset(a, 0, sizeof *a);
  a->V = V;
  a->j0 = j0;
  a->j1 = j1;
  a->w = (double *)w->h_data;
  a->coef = coef;
}

msp_status msp__cpu_basis_alloc(msp_context ctx, int64_t n, int cols, msp_precision prec,
                                msp__basis **out) {
  msp_status st = MSP_SUCCESS;
  msp__basis *V = NULL;
  *out = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(V, 1, "GMRES Krylov basis"));
  MSP_TRY(msp__basis_header(V, n, cols, prec));
  V->nchunks = (n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  V->fuse_cols = cols; // a thread's block of rows stays in its cache between the two reads
  const size_t bytes = msp__prec_bytes(prec);
  MSP_TRY(msp__alloc_zero(&V->data, (size_t)(n > 0 ? n : 1) * (size_t)cols, bytes,
                          "GMRES Krylov basis values"));
  if (msp_prec_is_fixed(prec)) MSP_TRY(MSP_ALLOC_ZERO(V->scales, cols, "GMRES basis scales"));
  // DCGS2's projection: 2 cols partials per chunk
  MSP_TRY(MSP_ALLOC_ZERO(V->work, (V->nchunks > 0 ? V->nchunks : 1) * (2 * (int64_t)cols + 1),
                         "GMRES projection partials"));
  *out = V;
  V = NULL;
exit:
  if (V) {
    msp__free(V->data);
    msp__free(V->scales);
    msp__free(V->work);
    msp__free(V);
  }
  return st;
}

void msp__cpu_basis_free(msp_context ctx, msp__basis *V) {
  if (!V) return;
  msp__free(V->data);
  msp__free(V->scales);
  msp__free(V->work);
  msp__free(V);
}

msp_status msp__cpu_basis_store(msp_context ctx, msp__basis *V, int j, msp_vector w) {
  basis_args a;
  args_init(&a, V, j, j + 1, w, NULL);
#pragma omp parallel
  store_kernel_dispatch(V->prec, &a);
  return MSP_SUCCESS;
}

void msp__cpu_basis_store_scaled(msp__basis *V, int j, msp_vector w) {
  basis_args a;
  args_init(&a, V, j, j + 1, w, NULL);
  a.scaled = 1;
#pragma omp parallel
  store_kernel_dispatch(V->prec, &a);
}

// h[0..cnt) and *ww (when asked) from the partials.
static void project_sums(const msp__basis *V, int cnt, double *h, double *ww) {
  for (int k = 0; k < cnt; k++)
    h[k] = msp__cpu_pairwise(V->work + (int64_t)k * V->nchunks, V->nchunks);
  if (ww) *ww = msp__cpu_pairwise(V->work + (int64_t)cnt * V->nchunks, V->nchunks);
}

void msp__cpu_basis_partials(const msp__basis *V, int j0, int cnt, const double *w, int ww,
                             double *part, int64_t kstride, int64_t cstride) {
  basis_args a;
  memset(&a, 0, sizeof a);
  a.V = V;
  a.j0 = j0;
  a.j1 = j0 + (cnt > 0 ? cnt : 0);
  a.w = (double *)w;
  a.ww = ww;
  a.part = part;
  a.kstride = kstride;
  a.cstride = cstride;
#pragma omp parallel
  project_kernel_dispatch(V->prec, &a);
}

msp_status msp__cpu_basis_project(msp_context ctx, const msp__basis *V, int j0, int j1,
                                  msp_vector w, double *h, double *ww) {
  const int cnt = j1 > j0 ? j1 - j0 : 0;
  msp__cpu_basis_partials(V, j0, cnt, (const double *)w->h_data, ww != NULL, V->work, V->nchunks,
                          1);
  project_sums(V, cnt, h, ww);
  return MSP_SUCCESS;
}

msp_status msp__cpu_basis_subtract(msp_context ctx, const msp__basis *V, int j0, int j1,
                                   const double *h, msp_vector w, double *u, double *ww) {
  basis_args a;
  args_init(&a, V, j0, j1, w, h);
  if (!u && !ww) {
#pragma omp parallel
    subtract_kernel_dispatch(V->prec, &a);
    return MSP_SUCCESS;
  }
  a.np = u && j1 > j0 ? j1 - j0 : 0;
  a.ww = ww != NULL;
#pragma omp parallel
  subproj_kernel_dispatch(V->prec, &a);
  project_sums(V, a.np, u, ww);
  return MSP_SUCCESS;
}

msp_status msp__cpu_basis_combine(msp_context ctx, const msp__basis *V, int k1, const double *y,
                                  msp_vector z) {
  basis_args a;
  args_init(&a, V, 0, k1, z, y);
#pragma omp parallel
  combine_kernel_dispatch(V->prec, &a);
  return MSP_SUCCESS;
}

void msp__cpu_basis_dcgs2_partials(const msp__basis *V, int j, const double *w, double *part,
                                   int64_t kstride, int64_t cstride) {
  basis_args a;
  memset(&a, 0, sizeof a);
  a.V = V;
  a.j0 = j;
  a.j1 = j + 1;
  a.w = (double *)w;
  a.part = part;
  a.kstride = kstride;
  a.cstride = cstride;
#pragma omp parallel
  dcgs2_project_kernel_dispatch(V->prec, &a);
}

msp_status msp__cpu_basis_dcgs2_project(msp_context ctx, const msp__basis *V, int j, msp_vector w,
                                        double *r) {
  const int cnt = w ? 2 * j + 2 : j + 1;
  msp__cpu_basis_dcgs2_partials(V, j, w ? (const double *)w->h_data : NULL, V->work, V->nchunks, 1);
  for (int k = 0; k < cnt; k++)
    r[k] = msp__cpu_pairwise(V->work + (int64_t)k * V->nchunks, V->nchunks);
  return MSP_SUCCESS;
}

msp_status msp__cpu_basis_dcgs2_update(msp_context ctx, msp__basis *V, int j, const double *s,
                                       double rjj, const double *c, msp_vector w, int store) {
  dcgs2_args d;
  memset(&d, 0, sizeof d);
  args_init(&d.base, V, j, j + 1, w, NULL);
  d.s = s;
  d.c = c;
  d.rjj = rjj;
  d.store = store;
  d.nj = col_acc(V, j);
  double scale = 0.0;
  if (msp_prec_is_fixed(V->prec)) {
    // the new values are at most (max |V_j| + sum |s_k| max |V_k|) / rjj, and max |V_k| is at
    // most scale_k qmax: a scale for that bound never clips (and costs a few ulp of the old one)
    double bound = V->scales[j];
    for (int k = 0; k < j; k++)
      bound += fabs(s[k]) * V->scales[k];
    scale = msp_fx_block_scale(V->prec, bound * msp_prec_qmax(V->prec) / rjj);
    d.nj.scales = &scale;
  }
#pragma omp parallel
  dcgs2_update_kernel_dispatch(V->prec, &d);
  if (msp_prec_is_fixed(V->prec)) V->scales[j] = scale;
  return MSP_SUCCESS;
}

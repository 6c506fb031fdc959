// prec_formats.c: CPU SpMV of COO, ELL, HLL, DIA, HDIA and HYB with values in any storage
// precision.
#include "internal.h"
#include "precision.h"

// The loops of the fp64 kernels (src/cpu/<fmt>.c), with each value read through the accessor of
// A->pval (msp__matrix_encode_values encoded the format's value array in the same order; HYB's
// COO values follow its ELL part). Arithmetic is fp64; every y_i is summed by one thread in a
// fixed order. Each kernel is a static inline function of a constant precision, instantiated
// once per precision by the switch at the bottom, so the accessor's switch folds away.
#define BLOCK 64

static inline void coo_p(msp_precision p, const msp_acc *a, const msp_matrix A, const double *xv,
                         double alpha, double beta, double *yv) {
  const msp__coo *c = (const msp__coo *)A->fmt;
  int64_t rows = A->rows, nnz = A->nnz;
  // Rows are contiguous in the sorted COO: one thread per block of rows, found by binary search.
  int64_t nblocks = (rows + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t r0 = b * BLOCK, r1 = r0 + BLOCK < rows ? r0 + BLOCK : rows;
    int64_t lo = 0, hi = nnz;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (c->row[mid] < r0)
        lo = mid + 1;
      else
        hi = mid;
    }
    double t[BLOCK] = {0};
    for (int64_t k = lo; k < nnz && c->row[k] < r1; k++)
      t[c->row[k] - r0] += msp_acc_load_p(p, a, k) * xv[c->col[k]];
    for (int64_t i = r0; i < r1; i++)
      yv[i] = beta == 0.0 ? alpha * t[i - r0] : alpha * t[i - r0] + beta * yv[i];
  }
}

// ELL-like block: rows r0 .. r0+n of a column-major slot array starting at value index v0 with
// leading dimension ld and `width` slots; adds into t.
static inline void ell_block(msp_precision p, const msp_acc *a, const int32_t *col, int64_t v0,
                             int64_t ld, int64_t width, int64_t n, const double *xv, double *t) {
  for (int64_t k = 0; k < width; k++) {
    const int32_t *c = col + v0 + k * ld;
    for (int64_t r = 0; r < n; r++)
      t[r] += msp_acc_load_p(p, a, v0 + k * ld + r) * xv[c[r]];
  }
}

static inline void ell_p(msp_precision p, const msp_acc *a, const msp_matrix A, const double *xv,
                         double alpha, double beta, double *yv) {
  const msp__ell *e = (const msp__ell *)A->fmt;
  int64_t rows = A->rows, nblocks = (rows + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t r0 = b * BLOCK, n = rows - r0 < BLOCK ? rows - r0 : BLOCK;
    double t[BLOCK] = {0};
    ell_block(p, a, e->col, r0, rows, e->width, n, xv, t);
    for (int64_t r = 0; r < n; r++)
      yv[r0 + r] = beta == 0.0 ? alpha * t[r] : alpha * t[r] + beta * yv[r0 + r];
  }
}

static inline void hyb_p(msp_precision p, const msp_acc *a, const msp_matrix A, const double *xv,
                         double alpha, double beta, double *yv) {
  const msp__hyb *H = (const msp__hyb *)A->fmt;
  int64_t rows = A->rows, nblocks = (rows + BLOCK - 1) / BLOCK;
  int64_t cn = H->coo_nnz, cbase = rows * H->ell.width;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t r0 = b * BLOCK, n = rows - r0 < BLOCK ? rows - r0 : BLOCK;
    double t[BLOCK] = {0};
    ell_block(p, a, H->ell.col, r0, rows, H->ell.width, n, xv, t);
    int64_t lo = 0, hi = cn;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (H->coo.row[mid] < r0)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (int64_t q = lo; q < cn && H->coo.row[q] < r0 + n; q++)
      t[H->coo.row[q] - r0] += msp_acc_load_p(p, a, cbase + q) * xv[H->coo.col[q]];
    for (int64_t r = 0; r < n; r++)
      yv[r0 + r] = beta == 0.0 ? alpha * t[r] : alpha * t[r] + beta * yv[r0 + r];
  }
}

static inline void hll_p(msp_precision p, const msp_acc *a, const msp_matrix A, const double *xv,
                         double alpha, double beta, double *yv) {
  const msp__hll *H = (const msp__hll *)A->fmt;
  int64_t rows = A->rows, hack = H->hack;
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < H->nhacks; h++) {
    int64_t width = (H->off[h + 1] - H->off[h]) / hack;
    for (int64_t r0 = 0; r0 < hack && h * hack + r0 < rows; r0 += BLOCK) {
      int64_t i0 = h * hack + r0;
      int64_t n = rows - i0 < BLOCK ? rows - i0 : BLOCK;
      if (n > hack - r0) n = hack - r0;
      double t[BLOCK] = {0};
      ell_block(p, a, H->col, H->off[h] + r0, hack, width, n, xv, t);
      for (int64_t r = 0; r < n; r++)
        yv[i0 + r] = beta == 0.0 ? alpha * t[r] : alpha * t[r] + beta * yv[i0 + r];
    }
  }
}

static inline void dia_p(msp_precision p, const msp_acc *a, const msp_matrix A, const double *xv,
                         double alpha, double beta, double *yv) {
  const msp__dia *D = (const msp__dia *)A->fmt;
  int64_t rows = A->rows, cols = A->cols, nblocks = (rows + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t i0 = b * BLOCK, i1 = i0 + BLOCK < rows ? i0 + BLOCK : rows;
    double t[BLOCK] = {0};
    for (int64_t d = 0; d < D->ndiag; d++) {
      int64_t o = D->offsets[d];
      int64_t lo = -o > i0 ? -o : i0, hi = cols - o < i1 ? cols - o : i1;
      for (int64_t i = lo; i < hi; i++)
        t[i - i0] += msp_acc_load_p(p, a, d * rows + i) * xv[i + o];
    }
    for (int64_t i = i0; i < i1; i++)
      yv[i] = beta == 0.0 ? alpha * t[i - i0] : alpha * t[i - i0] + beta * yv[i];
  }
}

static inline void hdia_p(msp_precision p, const msp_acc *a, const msp_matrix A, const double *xv,
                          double alpha, double beta, double *yv) {
  const msp__hdia *H = (const msp__hdia *)A->fmt;
  int64_t rows = A->rows, cols = A->cols, hack = H->hack;
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < H->nhacks; h++) {
    const int64_t *off = H->offsets + H->doff[h];
    int64_t nd = H->doff[h + 1] - H->doff[h];
    for (int64_t r0 = 0; r0 < hack && h * hack + r0 < rows; r0 += BLOCK) {
      int64_t i0 = h * hack + r0;
      int64_t i1 = i0 + BLOCK < rows ? i0 + BLOCK : rows;
      if (i1 > h * hack + hack) i1 = h * hack + hack;
      double t[BLOCK] = {0};
      for (int64_t d = 0; d < nd; d++) {
        int64_t o = off[d];
        int64_t lo = -o > i0 ? -o : i0, hi = cols - o < i1 ? cols - o : i1;
        int64_t v0 = H->voff[h] + d * hack - h * hack;
        for (int64_t i = lo; i < hi; i++)
          t[i - i0] += msp_acc_load_p(p, a, v0 + i) * xv[i + o];
      }
      for (int64_t i = i0; i < i1; i++)
        yv[i] = beta == 0.0 ? alpha * t[i - i0] : alpha * t[i - i0] + beta * yv[i];
    }
  }
}

typedef void (*prec_kernel)(msp_precision, const msp_acc *, const msp_matrix, const double *,
                            double, double, double *);

static msp_status run(prec_kernel k, msp_context ctx, double alpha, const msp_matrix A,
                      msp_vector x, double beta, msp_vector y) {
  if (A->pval == NULL || A->fmt == NULL) {
    return msp__error(MSP_ERR_INTERNAL, "msp_spmv: %s matrix with %s values has no encoded values",
                      msp_format_name(A->format), msp_precision_name(A->precision));
  }
  msp_acc a = msp__prec_view(A->pval, A->opts.cpms_segments);
  k(A->precision, &a, A, x->h_data, alpha, beta, y->h_data);
  return MSP_SUCCESS;
}

// Per format: a switch over MSP_PRECISION_LIST calling KERNEL with a literal precision (inlined
// and specialised), and the dispatch-table entry msp__cpu_<fmt>_prec_spmv.
#define MSP_PREC_CASE_(name, tag, bytes)                                                           \
  case MSP_PRECISION_##name:                                                                       \
    KERNEL(MSP_PRECISION_##name, a, A, xv, alpha, beta, yv);                                       \
    break;
#define MSP_PREC_ENTRY_(fmt)                                                                       \
  static void fmt##_any(msp_precision p, const msp_acc *a, const msp_matrix A, const double *xv,   \
                        double alpha, double beta, double *yv) {                                   \
    switch (p) {                                                                                   \
      MSP_PRECISION_LIST(MSP_PREC_CASE_)                                                           \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  }                                                                                                \
  msp_status msp__cpu_##fmt##_prec_spmv(msp_context ctx, double alpha, const msp_matrix A,         \
                                        msp_vector x, double beta, msp_vector y) {                 \
    return run(fmt##_any, ctx, alpha, A, x, beta, y);                                              \
  }

#define KERNEL coo_p
MSP_PREC_ENTRY_(coo)
#undef KERNEL
#define KERNEL ell_p
MSP_PREC_ENTRY_(ell)
#undef KERNEL
#define KERNEL hll_p
MSP_PREC_ENTRY_(hll)
#undef KERNEL
#define KERNEL dia_p
MSP_PREC_ENTRY_(dia)
#undef KERNEL
#define KERNEL hdia_p
MSP_PREC_ENTRY_(hdia)
#undef KERNEL
#define KERNEL hyb_p
MSP_PREC_ENTRY_(hyb)
#undef KERNEL

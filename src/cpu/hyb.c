// hyb.c: CPU HYB SpMV: per block of rows, the ELL part then the rows' COO entries (no atomics),
// one body for every storage precision of the values and of x.
#include "ell_block.h"

// Rows per block: a multiple of MSP_VEC_FX_BLOCK, so a fixed-point y gets whole blocks.
#define HYB_BLOCK 64

// First COO entry whose row is >= r (the COO part is sorted by row).
static int64_t coo_lower_bound(const int32_t *row, int64_t n, int64_t r) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (row[mid] < r)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Weight of the first b blocks of rows: their ELL slots and rows, plus their COO entries.
typedef struct {
  const int32_t *row;
  int64_t cn, rows, width;
} hyb_weight_args;
static int64_t hyb_weight(const void *w, int64_t b) {
  const hyb_weight_args *a = (const hyb_weight_args *)w;
  const int64_t r = b * HYB_BLOCK < a->rows ? b * HYB_BLOCK : a->rows;
  return r * (a->width + 1) + coo_lower_bound(a->row, a->cn, r);
}

// Each row is summed by one thread: its K ELL slots in order, then its COO entries in order
// (a block finds its COO range by binary search, so no thread writes another's rows), and
// stored once. The bits do not depend on the thread count. The blocks are shared out by
// stored entries (msp__cpu_part_blocks), so the COO rest of long rows does not load one thread.
MSP__CPU_INLINE void hyb_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  const msp__hyb *H = (const msp__hyb *)s->A->fmt;
  const int32_t *crow = H->coo.row, *ccol = H->coo.col;
  const msp_acc va = s->va, vb = s->vb, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, width = H->ell.width, cn = H->coo_nnz, cb = s->vb_off;
  const int64_t nblocks = (rows + HYB_BLOCK - 1) / HYB_BLOCK;
  const hyb_weight_args w = {crow, cn, rows, width};
  const int64_t total = rows * (width + 1) + cn, np = msp__cpu_nparts(total);
  msp__cpu_taker tk = msp__cpu_taker_init(np);
  int64_t over = 0;
  for (int64_t q; (q = msp__cpu_next_part(&tk, &s->take)) >= 0;) {
    int64_t b0, b1;
    msp__cpu_taken_blocks(&tk, q, nblocks, total, hyb_weight, &w, &b0, &b1);
    for (int64_t b = b0; b < b1; b++) {
      const int64_t r0 = b * HYB_BLOCK, n = rows - r0 < HYB_BLOCK ? rows - r0 : HYB_BLOCK;
      double t[HYB_BLOCK];
      msp__cpu_ell_rows(PA, PX, &va, r0, H->ell.col + r0, H->ell.stride, width, n, &xa, t);
      for (int64_t p = coo_lower_bound(crow, cn, r0); p < cn && crow[p] < r0 + n; p++)
        t[crow[p] - r0] += msp_acc_load_p(PA, &vb, cb + p) * msp_acc_load_p(PX, &xa, ccol[p]);
      over += msp__cpu_store_rows(&ya, r0, t, n, alpha, beta);
    }
  }
  msp__cpu_add_over(&s->over, over);
}

#define MSP__CPU_KERNEL hyb_kernel
MSP__CPU_INSTANTIATE2(msp__cpu_spmv_args *)
#undef MSP__CPU_KERNEL

msp_status msp__cpu_hyb_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const msp__hyb *H = (const msp__hyb *)A->fmt;
  msp__cpu_spmv_args s;
  msp_status st =
      msp__cpu_spmv_setup(&s, alpha, A, H->ell.val, H->ell.stride * H->ell.width, x, beta, y);
  if (st != MSP_SUCCESS) return st;
  // fp64: the COO values are their own array; encoded: one array, the ELL part then the COO part
  // (msp__matrix_encode_values), so COO entry p is value stride * K + p.
  if (A->precision == MSP_PRECISION_F64)
    s.vb = msp__cpu_f64_view(H->coo.val, H->coo_nnz);
  else
    s.vb_off = H->ell.stride * H->ell.width;
#pragma omp parallel
  hyb_kernel_dispatch(A->precision, x->prec, &s);
  msp__vector_count_range(y, s.over);
  return MSP_SUCCESS;
}

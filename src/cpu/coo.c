// coo.c: CPU COO SpMV over row-sorted triples, blocks of rows shared out by nonzeros over OpenMP
// threads, one body for every storage precision of the values and of x.
#include "dispatch.h"

// Rows per block: a multiple of MSP_VEC_FX_BLOCK, so a fixed-point y gets whole blocks.
#define COO_BLOCK 32

// First triple whose row is >= r.
static int64_t lower_bound(const int32_t *row, int64_t n, int64_t r) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (row[mid] < r)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Weight of the first b blocks of rows: their triples plus their rows (dispatch.h).
typedef struct {
  const int32_t *row;
  int64_t nnz, rows;
} coo_weight_args;
static int64_t coo_weight(const void *w, int64_t b) {
  const coo_weight_args *a = (const coo_weight_args *)w;
  const int64_t r = b * COO_BLOCK < a->rows ? b * COO_BLOCK : a->rows;
  return lower_bound(a->row, a->nnz, r) + r;
}

// Row r's sum over its run of triples from *k (advanced past it), in msp__cpu_row_sum's order:
// pairs while the second triple ahead is still in row r (the rows are sorted, so the one before
// it is too), then the last triple of an odd run. One row-index compare per two triples, fused
// with the sum (the row indices are still read: COO stays behind CSR by those bytes, and by a
// loop end that waits for a load).
MSP__CPU_INLINE double coo_row_sum(msp_precision PA, msp_precision PX, const msp_acc *va,
                                   const int32_t *crow, const int32_t *ccol, int64_t *k,
                                   int64_t nnz, int64_t r, const msp_acc *xa) {
  int64_t j = *k;
  double s0 = 0.0, s1 = 0.0;
  for (; j + 2 <= nnz && crow[j + 1] == r; j += 2) {
    s0 += msp_acc_load_p(PA, va, j) * msp_acc_load_p(PX, xa, ccol[j]);
    s1 += msp_acc_load_p(PA, va, j + 1) * msp_acc_load_p(PX, xa, ccol[j + 1]);
  }
  double sum = s0 + s1;
  if (j < nnz && crow[j] == r) {
    sum += msp_acc_load_p(PA, va, j) * msp_acc_load_p(PX, xa, ccol[j]);
    j++;
  }
  *k = j;
  return sum;
}

// Each row is summed whole by one thread, as CSR sums it (coo_row_sum: msp__cpu_row_sum's order),
// and stored once (never a read-modify-write of y); each block of MSP_VEC_FX_BLOCK rows of y is
// written whole by one thread. Same bits as CSR, for any thread count.
MSP__CPU_INLINE void coo_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  const msp__coo *c = (const msp__coo *)s->A->fmt;
  const int32_t *crow = c->row, *ccol = c->col;
  const msp_acc va = s->va, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, nnz = s->A->nnz, nblocks = (rows + COO_BLOCK - 1) / COO_BLOCK;
  const coo_weight_args w = {crow, nnz, rows};
  const int64_t total = nnz + rows, np = msp__cpu_nparts(total);
  int64_t over = 0;
#pragma omp for schedule(dynamic, 1) nowait
  for (int64_t p = 0; p < np; p++) {
    int64_t b0, b1;
    msp__cpu_part_blocks(p, np, nblocks, total, coo_weight, &w, &b0, &b1);
    int64_t k = b0 < b1 ? lower_bound(crow, nnz, b0 * COO_BLOCK) : nnz;
    for (int64_t b = b0; b < b1; b++) {
      const int64_t r0 = b * COO_BLOCK, n = rows - r0 < COO_BLOCK ? rows - r0 : COO_BLOCK;
      double t[COO_BLOCK];
      for (int64_t r = 0; r < n; r++)
        t[r] = coo_row_sum(PA, PX, &va, crow, ccol, &k, nnz, r0 + r, &xa);
      over += msp__cpu_store_rows(&ya, r0, t, n, alpha, beta);
    }
  }
  msp__cpu_add_over(&s->over, over);
}

#define MSP__CPU_KERNEL coo_kernel
MSP__CPU_INSTANTIATE2(msp__cpu_spmv_args *)
#undef MSP__CPU_KERNEL

msp_status msp__cpu_coo_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  msp__cpu_spmv_args s;
  msp_status st =
      msp__cpu_spmv_setup(&s, alpha, A, ((const msp__coo *)A->fmt)->val, A->nnz, x, beta, y);
  if (st != MSP_SUCCESS) return st;
#pragma omp parallel
  coo_kernel_dispatch(A->precision, x->prec, &s);
  y->range_count += s.over;
  return MSP_SUCCESS;
}

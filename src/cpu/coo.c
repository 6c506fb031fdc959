// coo.c: CPU COO SpMV over row-sorted triples, split into fixed chunks of whole row blocks, one
// body for every storage precision of the values and of x.
#include "dispatch.h"

// The triples are cut into COO_CHUNKS pieces of about nnz / COO_CHUNKS triples, whose boundaries
// are moved forward to the next row that starts a block of COO_BLOCK rows: each row belongs to
// exactly one piece, is summed completely in triple order by one thread and stored once (never
// a read-modify-write of y), and each block of MSP_VEC_FX_BLOCK rows of y is written whole by
// one thread. Same bits for any thread count.
#define COO_CHUNKS 256
#define COO_BLOCK 32 // a multiple of MSP_VEC_FX_BLOCK

// First row of chunk p (0 for p = 0, rows for p = COO_CHUNKS): the row of the chunk's first
// triple rounded up to a block start. Nondecreasing in p because the rows are sorted.
static int64_t chunk_row(const int32_t *row, int64_t nnz, int64_t rows, int64_t p) {
  if (p <= 0) return 0;
  if (p >= COO_CHUNKS) return rows;
  const int64_t k = nnz * p / COO_CHUNKS;
  if (k >= nnz) return rows;
  const int64_t r = ((int64_t)row[k] + COO_BLOCK - 1) / COO_BLOCK * COO_BLOCK;
  return r < rows ? r : rows;
}

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

MSP__CPU_INLINE void coo_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  const msp__coo *c = (const msp__coo *)s->A->fmt;
  const int32_t *crow = c->row, *ccol = c->col;
  const msp_acc va = s->va, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, nnz = s->A->nnz;
  int64_t over = 0;
#pragma omp for schedule(static) nowait
  for (int64_t p = 0; p < COO_CHUNKS; p++) {
    const int64_t b = chunk_row(crow, nnz, rows, p), e = chunk_row(crow, nnz, rows, p + 1);
    int64_t k = b < e ? lower_bound(crow, nnz, b) : nnz;
    for (int64_t r0 = b; r0 < e; r0 += COO_BLOCK) {
      const int64_t n = e - r0 < COO_BLOCK ? e - r0 : COO_BLOCK;
      double t[COO_BLOCK];
      for (int64_t r = 0; r < n; r++) {
        double sum = 0.0;
        for (; k < nnz && crow[k] == r0 + r; k++)
          sum += msp_acc_load_p(PA, &va, k) * msp_acc_load_p(PX, &xa, ccol[k]);
        t[r] = sum;
      }
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

// csr.c: CPU CSR SpMV (blocks of rows shared out by nonzeros over OpenMP threads), one body for
// every storage precision of the values and of x.
#include "dispatch.h"

// Rows per block: a multiple of MSP_VEC_FX_BLOCK, so a fixed-point y gets whole blocks.
#define CSR_BLOCK 32

// Weight of the first b blocks of rows: their nonzeros plus their rows (dispatch.h).
typedef struct {
  const int64_t *rp;
  int64_t rows;
} csr_weight_args;
static int64_t csr_weight(const void *w, int64_t b) {
  const csr_weight_args *a = (const csr_weight_args *)w;
  const int64_t r = b * CSR_BLOCK < a->rows ? b * CSR_BLOCK : a->rows;
  return a->rp[r] + r;
}

// Each y_i is summed whole by one thread (msp__cpu_row_sum: an order fixed by the row's
// length), so the bits do not depend on the thread count; the blocks are shared out by
// nonzeros (msp__cpu_part_blocks), so a few long rows do not load one thread. The GPU kernel
// choice (scalar / vector / merge) does not change the CPU algorithm.
MSP__CPU_INLINE void csr_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  const int64_t *rp = s->A->rowptr;
  const int32_t *ci = s->A->colind;
  const msp_acc va = s->va, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, nblocks = (rows + CSR_BLOCK - 1) / CSR_BLOCK;
  const csr_weight_args w = {rp, rows};
  const int64_t total = rp[rows] + rows, np = msp__cpu_nparts(total);
  int64_t over = 0;
#pragma omp for schedule(dynamic, 1) nowait
  for (int64_t p = 0; p < np; p++) {
    int64_t b0, b1;
    msp__cpu_part_blocks(p, np, nblocks, total, csr_weight, &w, &b0, &b1);
    for (int64_t b = b0; b < b1; b++) {
      const int64_t r0 = b * CSR_BLOCK, n = rows - r0 < CSR_BLOCK ? rows - r0 : CSR_BLOCK;
      double t[CSR_BLOCK];
      for (int64_t r = 0; r < n; r++)
        t[r] = msp__cpu_row_sum(PA, PX, &va, ci, rp[r0 + r], rp[r0 + r + 1], &xa);
      over += msp__cpu_store_rows(&ya, r0, t, n, alpha, beta);
    }
  }
  msp__cpu_add_over(&s->over, over);
}

#define MSP__CPU_KERNEL csr_kernel
MSP__CPU_INSTANTIATE2(msp__cpu_spmv_args *)
#undef MSP__CPU_KERNEL

msp_status msp__cpu_csr_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  msp__cpu_spmv_args s;
  msp_status st = msp__cpu_spmv_setup(&s, alpha, A, A->val, A->nnz, x, beta, y);
  if (st != MSP_SUCCESS) return st;
#pragma omp parallel
  csr_kernel_dispatch(A->precision, x->prec, &s);
  y->range_count += s.over;
  return MSP_SUCCESS;
}

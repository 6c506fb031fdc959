// coo.c: CPU COO SpMV over row-sorted triples, blocks of rows shared out by nonzeros over OpenMP
// threads, one body for every storage precision of the values and of x.
#include "dispatch.h"

// Rows per block: a multiple of MSP_VEC_FX_BLOCK, so a fixed-point y gets whole blocks.
#define COO_BLOCK 32

// Weight of the first b blocks of rows: their triples plus their rows (dispatch.h).
typedef struct {
  const int64_t *rp;
  int64_t rows;
} coo_weight_args;
static int64_t coo_weight(const void *w, int64_t b) {
  const coo_weight_args *a = (const coo_weight_args *)w;
  const int64_t r = b * COO_BLOCK < a->rows ? b * COO_BLOCK : a->rows;
  return a->rp[r] + r;
}

// The triples are sorted by row, then column, so row r's triples are the run
// [rowptr[r], rowptr[r + 1]) of the matrix's host row pointers (struct msp_matrix_s: present for
// every format, and made from the same CSR as the triples). The kernel takes each row's run from
// them and reads the triples' columns and values only. A row index per entry is 4 more bytes
// per entry (16 against CSR's 12): the kernel that compared row indices, fused with the sum, was
// 1.05-1.54x CSR's time on one thread (make bench-cpu --threads 1, issue 14), and on a matrix
// whose product runs at the memory's speed (stencil27:64: CSR at 32.8 of the 33.4 GB/s that one
// core read) no loop that reads those bytes can match CSR. The partition bookkeeping reads the
// same row pointers (no binary search over the row indices). Each row is summed whole by one
// thread in msp__cpu_row_sum's order, as CSR sums it, and stored once; each block of
// MSP_VEC_FX_BLOCK rows of y is written whole by one thread. Same bits as CSR, for any thread
// count.
MSP__CPU_INLINE void coo_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  const msp__coo *c = (const msp__coo *)s->A->fmt;
  const int64_t *rp = s->A->rowptr;
  const int32_t *ccol = c->col;
  const msp_acc va = s->va, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, nblocks = (rows + COO_BLOCK - 1) / COO_BLOCK;
  const coo_weight_args w = {rp, rows};
  const int64_t total = rp[rows] + rows, np = msp__cpu_nparts(total);
  int64_t over = 0;
#pragma omp for schedule(dynamic, 1) nowait
  for (int64_t p = 0; p < np; p++) {
    int64_t b0, b1;
    msp__cpu_part_blocks(p, np, nblocks, total, coo_weight, &w, &b0, &b1);
    for (int64_t b = b0; b < b1; b++) {
      const int64_t r0 = b * COO_BLOCK, n = rows - r0 < COO_BLOCK ? rows - r0 : COO_BLOCK;
      double t[COO_BLOCK];
      for (int64_t r = 0; r < n; r++)
        t[r] = msp__cpu_row_sum(PA, PX, &va, ccol, rp[r0 + r], rp[r0 + r + 1], &xa);
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

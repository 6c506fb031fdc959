// ell.c: CPU ELL SpMV (blocks of rows over OpenMP threads, slots in column-major order), one body
// for every storage precision of the values and of x.
#include "ell_block.h"

// Rows per block: the block's partial sums stay in registers/L1 while the slots stream by; a
// multiple of MSP_VEC_FX_BLOCK, so a fixed-point y gets whole blocks.
#define ELL_BLOCK 64

// y_i = alpha * sum_k val[k * stride + i] * x[col[k * stride + i]] (+ beta y_i), k ascending: one
// thread sums each row in a fixed order, so the bits do not depend on the thread count.
// Padding slots add 0 * x[a valid column].
MSP__CPU_INLINE void ell_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  const msp__ell *e = (const msp__ell *)s->A->fmt;
  const msp_acc va = s->va, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, width = e->width;
  const int64_t nblocks = (rows + ELL_BLOCK - 1) / ELL_BLOCK;
  int64_t over = 0;
#pragma omp for schedule(dynamic, 32) nowait // 2048 rows a grab; a slowed thread takes fewer
  for (int64_t b = 0; b < nblocks; b++) {
    const int64_t r0 = b * ELL_BLOCK, n = rows - r0 < ELL_BLOCK ? rows - r0 : ELL_BLOCK;
    double t[ELL_BLOCK];
    msp__cpu_ell_rows(PA, PX, &va, r0, e->col + r0, e->stride, width, n, &xa, t);
    over += msp__cpu_store_rows(&ya, r0, t, n, alpha, beta);
  }
  msp__cpu_add_over(&s->over, over);
}

#define MSP__CPU_KERNEL ell_kernel
MSP__CPU_INSTANTIATE2(msp__cpu_spmv_args *)
#undef MSP__CPU_KERNEL

msp_status msp__cpu_ell_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const msp__ell *e = (const msp__ell *)A->fmt;
  msp__cpu_spmv_args s;
  msp_status st = msp__cpu_spmv_setup(&s, alpha, A, e->val, e->stride * e->width, x, beta, y);
  if (st != MSP_SUCCESS) return st;
#pragma omp parallel
  ell_kernel_dispatch(A->precision, x->prec, &s);
  msp__vector_count_range(y, s.over);
  return MSP_SUCCESS;
}

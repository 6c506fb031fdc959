// dia.c: CPU DIA SpMV (blocks of rows over OpenMP threads, diagonals in ascending order), one body
// for every storage precision of the values and of x.
#include "dispatch.h"

// Rows per block: partial sums of a block stay in L1 while every diagonal passes over it; a
// multiple of MSP_VEC_FX_BLOCK, so a fixed-point y gets whole blocks.
#define DIA_BLOCK 2048
// Values per cache line of fp64 values: the pass over a diagonal prefetches the next pass's
// values one line per line it reads (the diagonals lie stride * 8 bytes apart, a stride the
// hardware prefetchers do not follow from one pass to the next).
#define DIA_LINE 8

// y_i = alpha * sum_d val[d * stride + i] * x[i + off[d]] (+ beta y_i), d ascending, over the
// diagonals that meet row i inside the matrix. No column indices are read (PSBLAS Alg. 2).
// One thread sums each row in a fixed order: the bits do not depend on the thread count.
MSP__CPU_INLINE void dia_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  const msp__dia *D = (const msp__dia *)s->A->fmt;
  const msp_acc va = s->va, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, cols = s->A->cols, ndiag = D->ndiag;
  const int64_t nblocks = (rows + DIA_BLOCK - 1) / DIA_BLOCK;
  int64_t over = 0;
#pragma omp for schedule(dynamic, 1) nowait // blocks of equal work; a slowed thread takes fewer
  for (int64_t b = 0; b < nblocks; b++) {
    const int64_t i0 = b * DIA_BLOCK, i1 = i0 + DIA_BLOCK < rows ? i0 + DIA_BLOCK : rows;
    double t[DIA_BLOCK];
    for (int64_t i = i0; i < i1; i++)
      t[i - i0] = 0.0;
    for (int64_t d = 0; d < ndiag; d++) {
      const int64_t o = D->offsets[d], v0 = d * D->stride;
      // Where the next pass reads: the next diagonal's values of these rows, or after the last
      // diagonal the first diagonal's values of the next block.
      const int64_t vn = d + 1 < ndiag ? v0 + D->stride : DIA_BLOCK;
      // Rows where column i + o lies in 0..cols-1.
      const int64_t lo = -o > i0 ? -o : i0, hi = cols - o < i1 ? cols - o : i1;
      for (int64_t c0 = lo; c0 < hi; c0 += DIA_LINE) {
        const int64_t c1 = c0 + DIA_LINE < hi ? c0 + DIA_LINE : hi;
        if (PA == MSP_PRECISION_F64 && vn + c0 < s->va.n)
          __builtin_prefetch((const double *)va.data + vn + c0, 0, 0);
        for (int64_t i = c0; i < c1; i++)
          t[i - i0] += msp_acc_load_p(PA, &va, v0 + i) * msp_acc_load_p(PX, &xa, i + o);
      }
    }
    over += msp__cpu_store_rows(&ya, i0, t, i1 - i0, alpha, beta);
  }
  msp__cpu_add_over(&s->over, over);
}

#define MSP__CPU_KERNEL dia_kernel
MSP__CPU_INSTANTIATE2(msp__cpu_spmv_args *)
#undef MSP__CPU_KERNEL

msp_status msp__cpu_dia_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const msp__dia *D = (const msp__dia *)A->fmt;
  msp__cpu_spmv_args s;
  msp_status st = msp__cpu_spmv_setup(&s, alpha, A, D->val, D->stride * D->ndiag, x, beta, y);
  if (st != MSP_SUCCESS) return st;
#pragma omp parallel
  dia_kernel_dispatch(A->precision, x->prec, &s);
  msp__vector_count_range(y, s.over);
  return MSP_SUCCESS;
}

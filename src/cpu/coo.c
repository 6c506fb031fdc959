// coo.c: CPU COO SpMV over row-sorted triples, blocks of rows shared out by nonzeros over OpenMP
// threads, one body for every storage precision of the values and of x.
#include "dispatch.h"

// The triples are sorted by row, then column, so row r's triples are the run
// [rowptr[r], rowptr[r + 1]) of the matrix's host row pointers (struct msp_matrix_s: present for
// every format, and made from the same CSR as the triples): the kernel is the row-pointer product
// of dispatch.h over the triples' columns and values, and gives CSR's bits for any thread count.
// It does not read the row indices: 4 more bytes per entry (16 against CSR's 12). The kernel
// that compared them, fused with the sum, was slower than CSR on one thread, and where CSR's
// product already runs at the memory's speed no loop that reads those bytes can match it. The
// row array stays in the format (conversions, the CUDA kernels).
MSP__CPU_INLINE void coo_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  msp__cpu_rowptr_spmv(PA, PX, s, ((const msp__coo *)s->A->fmt)->col);
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
  msp__vector_count_range(y, s.over);
  return MSP_SUCCESS;
}

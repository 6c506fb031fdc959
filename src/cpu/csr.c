// csr.c: CPU CSR SpMV (blocks of rows shared out by nonzeros over OpenMP threads), one body for
// every storage precision of the values and of x.
#include "dispatch.h"

// The GPU kernel choice (scalar / vector / merge) does not change the CPU algorithm: the
// row-pointer product of dispatch.h over CSR's columns.
MSP__CPU_INLINE void csr_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  msp__cpu_rowptr_spmv(PA, PX, s, s->A->colind);
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
  msp__vector_count_range(y, s.over);
  return MSP_SUCCESS;
}

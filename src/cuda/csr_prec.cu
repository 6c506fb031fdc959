// csr_prec.cu: CUDA CSR SpMV with values in any storage precision, read through the accessors.
//
// Device arrays (msp__cuda_matrix slots):
//   d[0] rowptr int64[rows + 1]
//   d[1] colind int32[nnz]
//   d[2] values as encoded by msp__matrix_encode_values (A->pval->data, the same bytes)
//   d[3] scales double[nscales] (fixed point only)
//   i64[0] vector group size G
// fp32 is left to csr.cu (which has the merge-path kernel for it as well): its upload and product
// are called from here, so every precision of a CSR matrix enters through one slot.
#include "cuda_internal.cuh"
#include "precision.h"

#define PREC_THREADS 256

enum { SLOT_ROWPTR, SLOT_COLIND, SLOT_VAL, SLOT_SCALES };

// A group of G lanes per row (G divides 32), lanes stride over the row, the group's partial sums
// are combined with shuffles in a fixed tree: the same bits on every run. Loads go through the
// accessor for the compile-time precision P, arithmetic is fp64.
template <int P, int G>
__global__ void __launch_bounds__(PREC_THREADS)
    csr_prec_kernel(int64_t rows, const int64_t *__restrict__ rowptr,
                    const int32_t *__restrict__ colind, msp_acc acc, const double *__restrict__ x,
                    double alpha, double beta, double *__restrict__ y) {
  const int64_t tid = (int64_t)blockIdx.x * PREC_THREADS + threadIdx.x;
  const int64_t row = tid / G;
  const int lane = (int)(tid % G);
  double s = 0.0;
  // a local copy: the address of a kernel parameter would force it into local memory
  const msp_acc a = acc;
  if (row < rows) {
    const int64_t end = __ldg(rowptr + row + 1);
    for (int64_t j = __ldg(rowptr + row) + lane; j < end; j += G)
      s += msp_acc_load_p((msp_precision)P, &a, j) * __ldg(x + __ldg(colind + j));
  }
#pragma unroll
  for (int off = G / 2; off > 0; off /= 2)
    s += __shfl_down_sync(0xffffffffu, s, off, G);
  if (row < rows && lane == 0) y[row] = beta == 0.0 ? alpha * s : alpha * s + beta * y[row];
}

static int group_size(int64_t rows, int64_t nnz) {
  const double mean = rows > 0 ? (double)nnz / (double)rows : 0.0;
  int g = 1;
  while (g < 32 && (double)g < mean)
    g *= 2;
  return g;
}

extern "C" msp_status msp__cuda_csr_prec_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  if (A->precision == MSP_PRECISION_F32 || A->precision == MSP_PRECISION_F64)
    return msp__cuda_csr_upload(ctx, A);
  if (!A->pval)
    return msp__error(MSP_ERR_INTERNAL, "csr upload (cuda): %s matrix without encoded values",
                      msp_precision_name(A->precision));
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_ROWPTR, A->rowptr,
                               (size_t)(A->rows + 1) * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_COLIND, A->colind, (size_t)A->nnz * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_VAL, A->pval->data,
                               (size_t)A->nnz * msp__prec_bytes(A->precision)));
  if (A->pval->scales)
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_SCALES, A->pval->scales,
                                 (size_t)A->pval->nscales * sizeof(double)));
  m->i64[0] = group_size(A->rows, A->nnz);
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  return st;
}

template <int P>
static msp_status launch_prec(cudaStream_t s, int g, int64_t rows, const int64_t *rp,
                              const int32_t *ci, msp_acc acc, const double *x, double alpha,
                              double beta, double *y) {
  msp_status st = MSP_SUCCESS;
  const unsigned blocks = msp__cuda_blocks(rows * g, PREC_THREADS);
#define MSP_PREC_LAUNCH_(G)                                                                        \
  csr_prec_kernel<P, G><<<blocks, PREC_THREADS, 0, s>>>(rows, rp, ci, acc, x, alpha, beta, y)
  switch (g) {
  case 1:
    MSP_PREC_LAUNCH_(1);
    break;
  case 2:
    MSP_PREC_LAUNCH_(2);
    break;
  case 4:
    MSP_PREC_LAUNCH_(4);
    break;
  case 8:
    MSP_PREC_LAUNCH_(8);
    break;
  case 16:
    MSP_PREC_LAUNCH_(16);
    break;
  default:
    MSP_PREC_LAUNCH_(32);
    break;
  }
#undef MSP_PREC_LAUNCH_
  MSP_CUDA_CHECK_LAUNCH("csr_prec_kernel");
exit:
  return st;
}

extern "C" msp_status msp__cuda_csr_prec_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                              msp_vector x, double beta, msp_vector y) {
  if (A->precision == MSP_PRECISION_F32 || A->precision == MSP_PRECISION_F64)
    return msp__cuda_csr_spmv(ctx, alpha, A, x, beta, y);
  if (A->rows == 0) return MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  if (!m || !A->pval)
    return msp__error(MSP_ERR_INTERNAL, "csr spmv (cuda): the matrix has no device data");
  // The accessor is the host view with the device arrays in place of the host ones; CPMS reads
  // the segments the matrix's view asks for now (msp_matrix_set_cpms_segments).
  msp_acc acc = msp__prec_view(A->pval, A->opts.cpms_segments);
  acc.data = m->d[SLOT_VAL];
  acc.scales = (const double *)m->d[SLOT_SCALES];
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t *rp = (const int64_t *)m->d[SLOT_ROWPTR];
  const int32_t *ci = (const int32_t *)m->d[SLOT_COLIND];
  const int g = (int)m->i64[0];
  switch (A->precision) {
#define MSP_PREC_CASE_(name, tag, bytes)                                                           \
  case MSP_PRECISION_##name:                                                                       \
    return launch_prec<MSP_PRECISION_##name>(s, g, A->rows, rp, ci, acc, x->d_data, alpha, beta,   \
                                             y->d_data);
    MSP_PRECISION_LIST(MSP_PREC_CASE_)
#undef MSP_PREC_CASE_
  default:
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "csr spmv (cuda): unknown precision %d",
                      (int)A->precision);
  }
}

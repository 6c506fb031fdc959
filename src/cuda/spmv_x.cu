// spmv_x.cu: the products of an x whose precision the kernels are not compiled for with the
// values' precision (msp__pair_compiled, access.cuh): x copied into an f64 work vector, then the
// format's product with that copy as x.
//
// The copy is x's values as x's own loader reads them (loader<PX>: CPMS with the segments x
// reads, fixed point with its block scales), one double each, which f64 stores exactly; the
// format's kernel reads them back through loader<f64>. Every kernel does its arithmetic in fp64
// on the values its loaders return, so the products see the same numbers as a kernel compiled
// for the pair would. The one difference is where a kernel's tuning follows x's precision: the
// CSR vector kernel's slots per step (csr.cuh vector_unroll) are those of an f64 x, which may
// fuse a multiply and an add that the pair's tuning would round apart, or the reverse; the
// result stays within the bound of every evaluation order (tests/cross.c). tests/cuda_pairs.c
// checks the products of every such pair against those of an f64 x holding x's values, bit for
// bit.
#include "access.cuh"

#define XWORK_THREADS 256

template <msp_precision PX>
__global__ void __launch_bounds__(XWORK_THREADS)
    xwork_kernel(int64_t n, const loader<PX> x, double *__restrict__ w) {
  const int64_t stride = (int64_t)gridDim.x * XWORK_THREADS;
  for (int64_t i = (int64_t)blockIdx.x * XWORK_THREADS + threadIdx.x; i < n; i += stride)
    w[i] = x(i);
}

// The precision whose pairs A's kernels are compiled for: its values' (f64 for BDMP, whose
// kernels read fp64 and fp32 values through loaders of their own).
static msp_precision values_prec(const msp_matrix A) {
  return A->format == MSP_FORMAT_BDMP_PBP || A->format == MSP_FORMAT_BDMP_TCKI ? MSP_PRECISION_F64
                                                                               : A->precision;
}

extern "C" msp_status msp__cuda_spmv_x(msp_context ctx, double alpha, const msp_matrix A,
                                       msp_vector x, double beta, msp_vector y, msp__spmv_fn spmv) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(ctx);
  struct msp_vector_s t;
  if (msp__pair_compiled(values_prec(A), x->prec)) return spmv(ctx, alpha, A, x, beta, y);
  MSP_TRY(msp__cuda_f64_work(ctx, &c->d_xwork, &c->xwork_n, x, &t, "x"));
  if (x->n == 0) // the empty x's one element, 0 as in an empty vector (backend.cu)
    MSP_CUDA_TRY(cudaMemsetAsync(c->d_xwork, 0, sizeof(double), c->stream));
  if (x->n > 0)
    MSP_TRY(msp__prec_dispatch(x->prec, [&](auto px) -> msp_status {
      msp_status s2 = MSP_SUCCESS;
      const int64_t want = (x->n + XWORK_THREADS - 1) / XWORK_THREADS,
                    cap = (int64_t)(c->sm_count > 0 ? c->sm_count : 1) * 32;
      xwork_kernel<decltype(px)::value>
          <<<(unsigned)(want < cap ? want : cap), XWORK_THREADS, 0, c->stream>>>(
              x->n, msp__vector_loader<decltype(px)::value>(x), c->d_xwork);
      {
        const cudaError_t e = cudaPeekAtLastError();
        if (e != cudaSuccess) s2 = msp__cuda_status(e, "xwork_kernel", __FILE__, __LINE__);
      }
      return s2;
    }));
  MSP_TRY(spmv(ctx, alpha, A, &t, beta, y));
exit:
  return st;
}

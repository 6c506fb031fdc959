// vector_prec.cu: encode/decode of vectors stored in a reduced precision, through the accessors.
//
// A reduced-precision vector keeps its values encoded in d_enc (and, fixed point, its one scale
// in d_scales[0]); operations run the fp64 kernels of blas1.cu and the SpMV files on the work
// copy d_data. The core calls decode before an operation reads the vector and encode after one
// writes it. Each kernel is one template over the precision; the launchers switch over
// MSP_PRECISION_LIST. The loads and stores are those of src/common/precision.h, so the encoded
// bytes are the CPU's bit for bit.
#include "cuda_internal.cuh"
#include "precision.h"

#define VP_THREADS 256
#define VP_MAX_BLOCKS 1024 // partial maxima of the scale reduction: fit in MSP__CUDA_SCRATCH

static_assert(VP_MAX_BLOCKS <= MSP__CUDA_SCRATCH, "vector scale scratch too small");

template <int P>
__global__ void __launch_bounds__(VP_THREADS)
    decode_kernel(int64_t n, msp_acc acc, double *__restrict__ out) {
  const msp_acc a = acc; // a local copy: the address of a parameter would go to local memory
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = msp_acc_load_p((msp_precision)P, &a, i);
}

template <int P>
__global__ void __launch_bounds__(VP_THREADS)
    encode_kernel(int64_t n, const double *__restrict__ in, msp_acc acc) {
  const msp_acc a = acc;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    msp_acc_store_p((msp_precision)P, &a, i, __ldg(in + i));
}

// max(a, b) of magnitudes that keeps a NaN. The maximum is exact in any order, so the scale is
// the CPU's (src/cpu/vector_prec.c) for any grid.
__device__ __forceinline__ double vp_max(double a, double b) {
  return (a > b || isnan(a)) ? a : b;
}

__device__ __forceinline__ double block_max(double m) {
  __shared__ double sh[VP_THREADS];
  sh[threadIdx.x] = m;
  __syncthreads();
  for (int w = VP_THREADS / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) sh[threadIdx.x] = vp_max(sh[threadIdx.x], sh[threadIdx.x + w]);
    __syncthreads();
  }
  return sh[0];
}

__global__ void __launch_bounds__(VP_THREADS)
    absmax_partials(int64_t n, const double *__restrict__ x, double *__restrict__ partial) {
  double m = 0.0;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    m = vp_max(m, fabs(__ldg(x + i)));
  m = block_max(m);
  if (threadIdx.x == 0) partial[blockIdx.x] = m;
}

// One block: the maximum of the nb partials becomes the vector's scale, on the device (no
// synchronisation with the host).
__global__ void __launch_bounds__(VP_THREADS)
    absmax_scale(int nb, const double *__restrict__ partial, double qmax, double *scale) {
  double m = 0.0;
  for (int i = threadIdx.x; i < nb; i += VP_THREADS)
    m = vp_max(m, partial[i]);
  m = block_max(m);
  if (threadIdx.x == 0) scale[0] = msp_fx_vector_scale(m, qmax);
}

static unsigned vp_blocks(msp_context ctx, int64_t n) {
  const int64_t cap = (int64_t)msp__cuda(ctx)->sm_count * 32;
  const int64_t want = (n + VP_THREADS - 1) / VP_THREADS;
  const int64_t b = want < cap ? want : cap;
  return (unsigned)(b > 0 ? b : 1);
}

// The view of v's device data; CPMS reads `segments` (0: all; stores always write all).
static msp_acc device_view(const msp_vector v, int segments) {
  msp_acc a = msp__prec_view(v->enc, segments);
  a.data = v->d_enc;
  a.scales = v->d_scales;
  return a;
}

template <int P> static msp_status decode_p(msp_vector v) {
  msp_status st = MSP_SUCCESS;
  const msp_acc a = device_view(v, v->segments);
  decode_kernel<P>
      <<<vp_blocks(v->ctx, v->n), VP_THREADS, 0, msp__cuda(v->ctx)->stream>>>(v->n, a, v->d_data);
  MSP_CUDA_CHECK_LAUNCH("decode_kernel");
exit:
  return st;
}

template <int P> static msp_status encode_p(msp_vector v) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(v->ctx);
  const msp_acc a = device_view(v, 0);
  if (P == MSP_PRECISION_FX32 || P == MSP_PRECISION_FX16) {
    // the scale first (max |work|), then the values quantised with it, in stream order
    const int64_t want = (v->n + VP_THREADS - 1) / VP_THREADS;
    const int nb = (int)(want < VP_MAX_BLOCKS ? (want > 0 ? want : 1) : VP_MAX_BLOCKS);
    absmax_partials<<<nb, VP_THREADS, 0, c->stream>>>(v->n, v->d_data, c->d_scratch);
    MSP_CUDA_CHECK_LAUNCH("absmax_partials");
    absmax_scale<<<1, VP_THREADS, 0, c->stream>>>(
        nb, c->d_scratch, P == MSP_PRECISION_FX32 ? MSP_FX32_MAX : MSP_FX16_MAX, v->d_scales);
    MSP_CUDA_CHECK_LAUNCH("absmax_scale");
  }
  if (v->n > 0) {
    encode_kernel<P><<<vp_blocks(v->ctx, v->n), VP_THREADS, 0, c->stream>>>(v->n, v->d_data, a);
    MSP_CUDA_CHECK_LAUNCH("encode_kernel");
  }
exit:
  return st;
}

extern "C" msp_status msp__cuda_vector_decode(msp_vector v) {
  if (v->n == 0) return MSP_SUCCESS;
  switch (v->prec) {
#define MSP_VP_CASE_(name, tag, bytes)                                                             \
  case MSP_PRECISION_##name:                                                                       \
    return decode_p<MSP_PRECISION_##name>(v);
    MSP_PRECISION_LIST(MSP_VP_CASE_)
#undef MSP_VP_CASE_
  default:
    return msp__error(MSP_ERR_INTERNAL, "vector decode (cuda): unknown precision %d", (int)v->prec);
  }
}

extern "C" msp_status msp__cuda_vector_encode(msp_vector v) {
  switch (v->prec) {
#define MSP_VP_CASE_(name, tag, bytes)                                                             \
  case MSP_PRECISION_##name:                                                                       \
    return encode_p<MSP_PRECISION_##name>(v);
    MSP_PRECISION_LIST(MSP_VP_CASE_)
#undef MSP_VP_CASE_
  default:
    return msp__error(MSP_ERR_INTERNAL, "vector encode (cuda): unknown precision %d", (int)v->prec);
  }
}

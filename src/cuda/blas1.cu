// blas1.cu: CUDA vector operations on encoded vectors; reductions in a fixed order (deterministic).
//
// Every operation reads and writes the vectors' device data in their storage precision: x and y
// are each read through the loader of their own precision (one template instantiation per
// precision, or per pair for dot, from msp__prec_dispatch), arithmetic is fp64, and a written
// vector is stored through access.cuh's rounding stores: an overflow is saturated and counted
// in its d_range; a fixed-point vector gets the scale of each block of 32 values from the
// block's new values, a warp per block. No fp64 work copy: an f32 vector moves half the bytes.
#include "access.cuh"

#include <math.h>
#include <string.h>

// Reductions: the vector is cut into `blocks` contiguous ranges, a function of n only (never of
// the device), each summed by one block in a fixed order (thread-strided sums, then a fixed
// shuffle tree); one block then sums the partials in the same fixed way. The same n gives the
// same bits on any GPU and on every run.
#define RED_BLOCKS 1024 // at most; RED_BLOCKS * 2 partials + 2 results fit in MSP__CUDA_SCRATCH
#define RED_THREADS 256
#define EW_THREADS 256

static_assert(2 * RED_BLOCKS + 2 <= MSP__CUDA_SCRATCH, "reduction scratch too small");

enum red_op { RED_DOT, RED_ABS, RED_SQ_MAX, RED_SQ_SCALED };

// max(|a|, |b|) that keeps a NaN (fmax would drop it).
__device__ __forceinline__ double max_nan(double a, double b) {
  return (a > b || isnan(a)) ? a : b;
}

// Fixed-order block sum of (s, m): shuffle tree in each warp, then warp 0 over the warp sums.
// Returns the block's result in thread 0.
template <int OP> __device__ __forceinline__ void block_reduce(double &s, double &m) {
  __shared__ double sh_s[RED_THREADS / 32], sh_m[RED_THREADS / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    s += __shfl_down_sync(0xffffffffu, s, off);
    if (OP == RED_SQ_MAX) m = max_nan(m, __shfl_down_sync(0xffffffffu, m, off));
  }
  if (lane == 0) {
    sh_s[warp] = s;
    sh_m[warp] = m;
  }
  __syncthreads();
  if (warp == 0) {
    s = lane < RED_THREADS / 32 ? sh_s[lane] : 0.0;
    m = lane < RED_THREADS / 32 ? sh_m[lane] : 0.0;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      s += __shfl_down_sync(0xffffffffu, s, off);
      if (OP == RED_SQ_MAX) m = max_nan(m, __shfl_down_sync(0xffffffffu, m, off));
    }
  }
}

// Block b sums entries [b * chunk, min(n, (b + 1) * chunk)); partial[b] (and partial[nb + b] for
// the maximum magnitude). y is read by RED_DOT only.
template <int OP, msp_precision PX, msp_precision PY>
__global__ void __launch_bounds__(RED_THREADS)
    reduce_partials(int64_t n, int64_t chunk, const loader<PX> x, const loader<PY> y, double scale,
                    double *__restrict__ partial) {
  const int64_t begin = (int64_t)blockIdx.x * chunk;
  const int64_t end = begin + chunk < n ? begin + chunk : n;
  double s = 0.0, m = 0.0;
#pragma unroll 4
  for (int64_t i = begin + threadIdx.x; i < end; i += RED_THREADS) {
    const double xi = x(i);
    if (OP == RED_DOT) s += xi * y(i);
    if (OP == RED_ABS) s += fabs(xi);
    if (OP == RED_SQ_MAX) {
      s += xi * xi;
      m = max_nan(m, fabs(xi));
    }
    if (OP == RED_SQ_SCALED) {
      const double v = xi * scale;
      s += v * v;
    }
  }
  block_reduce<OP>(s, m);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = s;
    if (OP == RED_SQ_MAX) partial[gridDim.x + blockIdx.x] = m;
  }
}

// One block: out[0] = sum of the nb partials, out[1] = their maximum (RED_SQ_MAX).
template <int OP>
__global__ void __launch_bounds__(RED_THREADS)
    reduce_final(int nb, const double *__restrict__ partial, double *__restrict__ out) {
  double s = 0.0, m = 0.0;
  for (int i = threadIdx.x; i < nb; i += RED_THREADS) {
    s += partial[i];
    if (OP == RED_SQ_MAX) m = max_nan(m, partial[nb + i]);
  }
  block_reduce<OP>(s, m);
  if (threadIdx.x == 0) {
    out[0] = s;
    out[1] = m;
  }
}

// Enqueue a reduction over n > 0 entries: out[0] = sum, out[1] = max magnitude (RED_SQ_MAX) in
// the context's scratch (*res, valid until the stream's next reduction).
template <int OP, msp_precision PX, msp_precision PY>
static msp_status reduce_enqueue(msp_context ctx, int64_t n, const loader<PX> &x,
                                 const loader<PY> &y, double scale, const double **res) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(ctx);
  // The partition depends on n only: ceil(n / nb) entries per block.
  const int64_t want = (n + RED_THREADS - 1) / RED_THREADS;
  const int nb = (int)(want < RED_BLOCKS ? want : RED_BLOCKS);
  const int64_t chunk = (n + nb - 1) / nb;
  double *partial = c->d_scratch;
  double *out = c->d_scratch + 2 * RED_BLOCKS;
  reduce_partials<OP, PX, PY><<<nb, RED_THREADS, 0, c->stream>>>(n, chunk, x, y, scale, partial);
  MSP_CUDA_CHECK_LAUNCH("reduce_partials");
  reduce_final<OP><<<1, RED_THREADS, 0, c->stream>>>(nb, partial, out);
  MSP_CUDA_CHECK_LAUNCH("reduce_final");
  *res = out;
exit:
  return st;
}

// Run a reduction over n > 0 entries; r[0] = sum, r[1] = max magnitude (RED_SQ_MAX). The one
// synchronisation of these operations: the scalar goes back to the host.
template <int OP, msp_precision PX, msp_precision PY>
static msp_status reduce(msp_context ctx, int64_t n, const loader<PX> &x, const loader<PY> &y,
                         double scale, double r[2]) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(ctx);
  const double *out = NULL;
  MSP_TRY((reduce_enqueue<OP, PX, PY>(ctx, n, x, y, scale, &out)));
  MSP_CUDA_TRY(
      cudaMemcpyAsync(c->h_result, out, 2 * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
  MSP_CUDA_TRY(cudaStreamSynchronize(c->stream));
  r[0] = c->h_result[0];
  r[1] = c->h_result[1];
exit:
  return st;
}

// A reduction of one vector, x in its own precision (the y loader is not read).
template <int OP>
static msp_status reduce1(msp_context ctx, msp_vector x, double scale, double r[2]) {
  return msp__prec_dispatch(x->prec, [&](auto px) {
    loader<MSP_PRECISION_F64> none;
    memset(&none, 0, sizeof none);
    return reduce<OP>(ctx, x->n, msp__vector_loader<decltype(px)::value>(x), none, scale, r);
  });
}

extern "C" msp_status msp__cuda_dot(msp_context ctx, msp_vector x, msp_vector y, double *r) {
  msp_status st = MSP_SUCCESS;
  double v[2] = {0.0, 0.0};
  if (x->n > 0)
    MSP_TRY(msp__prec_dispatch(x->prec, [&](auto px) {
      return msp__prec_dispatch(y->prec, [&](auto py) {
        return reduce<RED_DOT>(ctx, x->n, msp__vector_loader<decltype(px)::value>(x),
                               msp__vector_loader<decltype(py)::value>(y), 1.0, v);
      });
    }));
  *r = v[0];
exit:
  return st;
}

extern "C" msp_status msp__cuda_nrm1(msp_context ctx, msp_vector x, double *r) {
  msp_status st = MSP_SUCCESS;
  double v[2] = {0.0, 0.0};
  if (x->n > 0) MSP_TRY(reduce1<RED_ABS>(ctx, x, 1.0, v));
  *r = v[0];
exit:
  return st;
}

// The reductions with their results left on the device (*out, valid until the stream's next
// reduction; NULL for an empty x: the results are 0), enqueued with no wait: the distributed
// layer adds the ranks' values on the device. dot and nrm1: out[0]; nrm2: msp__cuda_nrm2's first
// pass, out[0] the sum of squares and out[1] the largest magnitude.
extern "C" msp_status msp__cuda_dot_dev(msp_context ctx, msp_vector x, msp_vector y,
                                        const double **out) {
  *out = NULL;
  if (x->n == 0) return MSP_SUCCESS;
  return msp__prec_dispatch(x->prec, [&](auto px) {
    return msp__prec_dispatch(y->prec, [&](auto py) {
      return reduce_enqueue<RED_DOT>(ctx, x->n, msp__vector_loader<decltype(px)::value>(x),
                                     msp__vector_loader<decltype(py)::value>(y), 1.0, out);
    });
  });
}

template <int OP> static msp_status reduce1_dev(msp_context ctx, msp_vector x, const double **out) {
  *out = NULL;
  if (x->n == 0) return MSP_SUCCESS;
  return msp__prec_dispatch(x->prec, [&](auto px) {
    loader<MSP_PRECISION_F64> none;
    memset(&none, 0, sizeof none);
    return reduce_enqueue<OP>(ctx, x->n, msp__vector_loader<decltype(px)::value>(x), none, 1.0,
                              out);
  });
}

extern "C" msp_status msp__cuda_nrm1_dev(msp_context ctx, msp_vector x, const double **out) {
  return reduce1_dev<RED_ABS>(ctx, x, out);
}

extern "C" msp_status msp__cuda_nrm2_dev(msp_context ctx, msp_vector x, const double **out) {
  return reduce1_dev<RED_SQ_MAX>(ctx, x, out);
}

// One pass gives the plain sum of squares and the largest magnitude m. The plain sum is used
// when it neither overflowed nor risks underflow (m >= 2^-450, so m^2 is a normal number and
// squares too small to count are below m^2 * 2^-174); otherwise a second pass sums (x / m)^2,
// as the CPU backend does. NaN anywhere gives NaN, an infinity gives Inf, as on the CPU.
extern "C" msp_status msp__cuda_nrm2(msp_context ctx, msp_vector x, double *r) {
  msp_status st = MSP_SUCCESS;
  double v[2] = {0.0, 0.0};
  *r = 0.0;
  if (x->n == 0) goto exit;
  MSP_TRY(reduce1<RED_SQ_MAX>(ctx, x, 1.0, v));
  {
    const double m = v[1];
    if (m == 0.0 || !isfinite(m)) {
      *r = m;
    } else if (isfinite(v[0]) && m >= 0x1p-450) {
      *r = sqrt(v[0]);
    } else {
      MSP_TRY(reduce1<RED_SQ_SCALED>(ctx, x, 1.0 / m, v));
      *r = m * sqrt(v[0]);
    }
  }
exit:
  return st;
}

// ---- element-wise operations: only enqueued -----------------------------------------------------
static unsigned ew_blocks(msp_context ctx, int64_t n) {
  // A grid-stride loop over at most 32 blocks per multiprocessor (as many as one can hold).
  const int64_t cap = (int64_t)msp__cuda(ctx)->sm_count * 32;
  const int64_t want = (n + EW_THREADS - 1) / EW_THREADS;
  return (unsigned)(want < cap ? want : cap);
}

// y_i = a * x_i + b * y_i (READ_X; fill: a with x_i = 1), y not read when b == 0 (so a NaN in y
// does not propagate), rounded into y's precision by its store. x is read with plain loads,
// not the read-only path: it may be y itself (scale, axpby of a vector with itself). A
// fixed-point y takes a warp per block of 32 values (ystore_warp: the block's values are all read
// before its new scale and values are written, so x == y is safe there too).
template <msp_precision PX, bool READ_X>
__global__ void __launch_bounds__(EW_THREADS)
    ew_kernel(int64_t n, double a, const msp_acc xa, double b, const ystore y) {
  const msp_acc x = xa; // a local copy: the address of a parameter would go to local memory
  if (!msp_prec_is_fixed(y.a.prec)) { // uniform over the launch
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
      ystore_row(y, i, a, READ_X ? msp_acc_load_p(PX, &x, i) : 1.0, b);
    return;
  }
  const int64_t nblk = (n + MSP_VEC_FX_BLOCK - 1) >> MSP_VEC_FX_SHIFT;
  const int64_t warps = (int64_t)gridDim.x * (EW_THREADS / 32);
  for (int64_t blk = ((int64_t)blockIdx.x * EW_THREADS + threadIdx.x) >> 5; blk < nblk;
       blk += warps) { // the same blk for all lanes of a warp
    const int64_t i = (blk << MSP_VEC_FX_SHIFT) + (threadIdx.x & 31);
    const bool valid = i < n;
    ystore_warp(y, i, valid, a, READ_X && valid ? msp_acc_load_p(PX, &x, i) : 1.0, b);
  }
}

// Enqueue y = a * x + b * y with x in its own precision.
template <msp_precision PX>
static msp_status ew_enqueue(msp_context ctx, int64_t n, double a, msp_vector x, double b,
                             msp_vector y) {
  msp_status st = MSP_SUCCESS;
  ew_kernel<PX, true><<<ew_blocks(ctx, n), EW_THREADS, 0, msp__cuda(ctx)->stream>>>(
      n, a, msp__vector_acc(x, 1), b, msp__vector_ystore(y));
  MSP_CUDA_CHECK_LAUNCH("ew_kernel");
exit:
  return st;
}
static msp_status ew_launch(msp_context ctx, int64_t n, double a, msp_vector x, double b,
                            msp_vector y) {
  return msp__prec_dispatch(
      x->prec, [&](auto px) { return ew_enqueue<decltype(px)::value>(ctx, n, a, x, b, y); });
}

// The context's fp64 work array *d (grown to v's length, *have values) and t, a shallow copy of v
// whose device data is that array: what a format's kernel reads or writes as an f64 vector in v's
// place. role ("x", "y") names v in the error, which is formatted only on failure (the call is on
// every such product).
extern "C" msp_status msp__cuda_f64_work(msp_context ctx, double **d, int64_t *have,
                                         const msp_vector v, struct msp_vector_s *t,
                                         const char *role) {
  msp_status st = MSP_SUCCESS;
  const int64_t n = v->n > 0 ? v->n : 1; // a valid pointer for an empty vector too
  if (*have < n) {
    if (*d) MSP_CUDA_TRY(cudaFree(*d)); // cudaFree waits for the device
    *d = NULL;
    *have = 0;
    const cudaError_t e = cudaMalloc((void **)d, (size_t)n * sizeof(double));
    if (e != cudaSuccess) {
      *d = NULL;
      st = msp__cuda_status(e, "cudaMalloc", __FILE__, __LINE__);
      return msp__error(st,
                        "CUDA backend: cannot allocate %zu bytes of device memory for the fp64 "
                        "work copy of a %s %s (%s)",
                        (size_t)n * sizeof(double), msp_precision_name(v->prec), role,
                        cudaGetErrorString(e));
    }
    *have = n;
  }
  *t = *v;
  t->prec = MSP_PRECISION_F64;
  t->segments = 0;
  t->bank_shift = MSP_CPMS_SEPARATE;
  t->nscales = 0;
  t->h_data = NULL;
  t->h_scales = NULL;
  t->d_data = *d;
  t->d_scales = NULL;
exit:
  return st;
}

// A fixed-point y from kernels that finish rows one lane or one fix-up at a time (see
// cuda_internal.cuh): their product alpha*A*x into the context's fp64 work vector t (y's shallow
// copy with fp64 device data, so the format's kernel takes its plain fp64 store), then
// y = 1 * t + beta * y through ew_kernel, a warp per block of 32 values.
extern "C" msp_status msp__cuda_spmv_fixed_y(msp_context ctx, double alpha, const msp_matrix A,
                                             msp_vector x, double beta, msp_vector y,
                                             msp__spmv_fn spmv) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(ctx);
  struct msp_vector_s t;
  if (y->n == 0) return MSP_SUCCESS;
  MSP_TRY(msp__cuda_f64_work(ctx, &c->d_ywork, &c->ywork_n, y, &t, "y"));
  MSP_TRY(spmv(ctx, alpha, A, x, 0.0, &t));
  ew_kernel<MSP_PRECISION_F64, true><<<ew_blocks(ctx, y->n), EW_THREADS, 0, c->stream>>>(
      y->n, 1.0, msp__vector_acc(&t, 1), beta, msp__vector_ystore(y));
  MSP_CUDA_CHECK_LAUNCH("ew_kernel");
exit:
  return st;
}

extern "C" msp_status msp__cuda_axpby(msp_context ctx, double a, msp_vector x, double b,
                                      msp_vector y) {
  if (x->n == 0) return MSP_SUCCESS;
  return ew_launch(ctx, x->n, a, x, b, y);
}

extern "C" msp_status msp__cuda_scale(msp_context ctx, double a, msp_vector x) {
  if (x->n == 0) return MSP_SUCCESS;
  return ew_launch(ctx, x->n, a, x, 0.0, x);
}

// The same precision read in full: the encoded bytes and scales as they are (exact, and the
// fewest bytes). Otherwise each value is read in x's precision (CPMS: the segments x reads) and
// stored in y's.
extern "C" msp_status msp__cuda_copy(msp_context ctx, msp_vector x, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int all = msp__prec_segments(x->prec);
  if (x->n == 0) goto exit;
  if (x->prec == y->prec && (x->segments <= 0 || x->segments >= all)) {
    MSP_CUDA_TRY(cudaMemcpyAsync(y->d_data, x->d_data, (size_t)x->n * msp__prec_bytes(x->prec),
                                 cudaMemcpyDeviceToDevice, s));
    if (x->nscales > 0)
      MSP_CUDA_TRY(cudaMemcpyAsync(y->d_scales, x->d_scales, (size_t)x->nscales * sizeof(double),
                                   cudaMemcpyDeviceToDevice, s));
  } else {
    MSP_TRY(ew_launch(ctx, x->n, 1.0, x, 0.0, y));
  }
exit:
  return st;
}

extern "C" msp_status msp__cuda_fill(msp_context ctx, msp_vector x, double value) {
  msp_status st = MSP_SUCCESS;
  msp_acc none;
  memset(&none, 0, sizeof none);
  if (x->n == 0) goto exit;
  ew_kernel<MSP_PRECISION_F64, false>
      <<<ew_blocks(ctx, x->n), EW_THREADS, 0, msp__cuda(ctx)->stream>>>(x->n, value, none, 0.0,
                                                                        msp__vector_ystore(x));
  MSP_CUDA_CHECK_LAUNCH("ew_kernel");
exit:
  return st;
}

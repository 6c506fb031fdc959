// access.cuh: device loaders and stores over the storage precisions, and the one dispatch switch.
//
// Every CUDA kernel is one template over its loaders (STYLE.md 5): `loader<P>` reads stored value
// j of a matrix's value array or of a vector as a double, through the accessors of
// src/common/precision.h (bit for bit what the CPU backend reads); the launcher picks P with
// msp__prec_dispatch, the one switch over MSP_PRECISION_LIST. Results go into y through `ystore`,
// chosen at run time per row (a store per row costs nothing next to the row's loads), which
// rounds to y's precision and counts the results that overflow it (saturated, never Inf).
#ifndef MSP_CUDA_ACCESS_CUH
#define MSP_CUDA_ACCESS_CUH

#include "cuda_internal.cuh"
#include "precision.h"

#include <type_traits>

// ---- loaders
// -------------------------------------------------------------------------------------
// operator()(j): a read through the read-only cache (values read more than once, x);
// stream(j): the same value with an evict-first hint (ld.global.cs), for arrays read once per
// product (matrix values and indices), which leaves L2 to x. `prec` names the precision, which
// kernels use to pick their compile-time tuning (a loader of another kind, such as BDMP-PBP's in
// src/cuda/bdmp.cu, names the precision whose tuning suits it).
template <msp_precision P> struct loader {
  static constexpr msp_precision prec = P;
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const {
    const msp_acc c = a; // a local copy: the address of a parameter would go to local memory
    return msp_acc_load_p(P, &c, j);
  }
  __device__ __forceinline__ double stream(int64_t j) const { return (*this)(j); }
};
template <> struct loader<MSP_PRECISION_F64> {
  static constexpr msp_precision prec = MSP_PRECISION_F64;
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const {
    return __ldg((const double *)a.data + j);
  }
  __device__ __forceinline__ double stream(int64_t j) const {
    return __ldcs((const double *)a.data + j);
  }
};
template <> struct loader<MSP_PRECISION_F32> {
  static constexpr msp_precision prec = MSP_PRECISION_F32;
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const {
    return (double)__ldg((const float *)a.data + j);
  }
  __device__ __forceinline__ double stream(int64_t j) const {
    return (double)__ldcs((const float *)a.data + j);
  }
};
template <> struct loader<MSP_PRECISION_F16> {
  static constexpr msp_precision prec = MSP_PRECISION_F16;
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const {
    return msp_f16_to_double(__ldg((const unsigned short *)a.data + j));
  }
  __device__ __forceinline__ double stream(int64_t j) const {
    return msp_f16_to_double(__ldcs((const unsigned short *)a.data + j));
  }
};
template <> struct loader<MSP_PRECISION_BF16> {
  static constexpr msp_precision prec = MSP_PRECISION_BF16;
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const {
    return msp_bf16_to_double(__ldg((const unsigned short *)a.data + j));
  }
  __device__ __forceinline__ double stream(int64_t j) const {
    return msp_bf16_to_double(__ldcs((const unsigned short *)a.data + j));
  }
};
// Fixed point: the integer streamed, its block's scale through the read-only cache (one scale
// serves 256 matrix values or 32 vector values, so it stays in L1).
template <> struct loader<MSP_PRECISION_FX32> {
  static constexpr msp_precision prec = MSP_PRECISION_FX32;
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const {
    return (double)__ldg((const int *)a.data + j) * __ldg(a.scales + (j >> a.scale_shift));
  }
  __device__ __forceinline__ double stream(int64_t j) const {
    return (double)__ldcs((const int *)a.data + j) * __ldg(a.scales + (j >> a.scale_shift));
  }
};
template <> struct loader<MSP_PRECISION_FX16> {
  static constexpr msp_precision prec = MSP_PRECISION_FX16;
  msp_acc a;
  __device__ __forceinline__ double operator()(int64_t j) const {
    return (double)__ldg((const short *)a.data + j) * __ldg(a.scales + (j >> a.scale_shift));
  }
  __device__ __forceinline__ double stream(int64_t j) const {
    return (double)__ldcs((const short *)a.data + j) * __ldg(a.scales + (j >> a.scale_shift));
  }
};
// CPMS (msp_cpms_read's addressing, bit for bit): value j's group base from one shift (no
// division), then only the read_segments segments it needs. In CPMS-i the lanes of a warp that
// read consecutive values read whole 128-byte banks of those segments and never touch the others,
// so reading K of S segments moves K / S of the bytes. CPMS-s (bank_shift 62) is one group.
template <bool STREAM, typename T> __device__ __forceinline__ uint64_t cpms_seg(const T *p) {
  return STREAM ? (uint64_t)__ldcs(p) : (uint64_t)__ldg(p);
}
template <> struct loader<MSP_PRECISION_CPMS2> {
  static constexpr msp_precision prec = MSP_PRECISION_CPMS2;
  msp_acc a;
  template <bool STREAM> __device__ __forceinline__ double load(int64_t j) const {
    const unsigned *seg = (const unsigned *)a.data;
    const int64_t g0 = (j >> a.bank_shift) << a.bank_shift;
    const int64_t at = g0 + j; // g0 * 2 + (j - g0)
    uint64_t bits = cpms_seg<STREAM>(seg + at) << 32;
    if (a.read_segments > 1) { // the group's bank length (the last group may be short)
      const int64_t rest = a.n - g0, bank = (int64_t)1 << a.bank_shift;
      bits |= cpms_seg<STREAM>(seg + at + (rest < bank ? rest : bank));
    }
    return msp_bits_f64(bits);
  }
  __device__ __forceinline__ double operator()(int64_t j) const { return load<false>(j); }
  __device__ __forceinline__ double stream(int64_t j) const { return load<true>(j); }
};
template <> struct loader<MSP_PRECISION_CPMS4> {
  static constexpr msp_precision prec = MSP_PRECISION_CPMS4;
  msp_acc a;
  template <bool STREAM> __device__ __forceinline__ double load(int64_t j) const {
    const unsigned short *seg = (const unsigned short *)a.data;
    const int64_t g0 = (j >> a.bank_shift) << a.bank_shift, bank = (int64_t)1 << a.bank_shift;
    const int64_t m = a.n - g0 < bank ? a.n - g0 : bank;
    const int64_t at = 3 * g0 + j; // g0 * 4 + (j - g0)
    uint64_t bits = cpms_seg<STREAM>(seg + at) << 48;
#pragma unroll
    for (int s = 1; s < 4; s++)
      if (s < a.read_segments) bits |= cpms_seg<STREAM>(seg + at + s * m) << (48 - 16 * s);
    return msp_bits_f64(bits);
  }
  __device__ __forceinline__ double operator()(int64_t j) const {
    return load<false>(j);
  }
  __device__ __forceinline__ double stream(int64_t j) const {
    return load<true>(j);
  }
};

// ---- the one switch over the precisions
// ----------------------------------------------------------
template <msp_precision P> using msp__prec_c = std::integral_constant<msp_precision, P>;

// Call f(msp__prec_c<P>{}) for the run-time precision p: f instantiates its kernels for P, so
// adding a row to MSP_PRECISION_LIST instantiates every kernel for it.
template <class F> static msp_status msp__prec_dispatch(msp_precision p, F &&f) {
  switch (p) {
#define MSP_DISPATCH_CASE_(name, tag, bytes)                                                       \
  case MSP_PRECISION_##name:                                                                       \
    return f(msp__prec_c<MSP_PRECISION_##name>{});
    MSP_PRECISION_LIST(MSP_DISPATCH_CASE_)
#undef MSP_DISPATCH_CASE_
  default:
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "CUDA backend: unknown storage precision %d",
                      (int)p);
  }
}

// ---- the pairs (values, x) the products are compiled for
// The product kernels are templates over the loader of the values (precision PA) and that of x
// (PX). The pairs compiled: x in f64, in f32 or in the values' own precision (the vectors of the
// API's default, of single-precision work and of a product whose operands share their storage,
// as PageRank's); with MSP_CUDA_ALL_PAIRS (CMake option of that name), every pair. An x of
// another precision reaches the kernels of (PA, f64) instead (msp__cuda_spmv_x, spmv_x.cu): its
// values as its loader reads them, copied into an f64 work vector, which holds each of them
// exactly, so the kernels read the same numbers. BDMP's kernels take PA = f64.
__host__ __device__ constexpr bool msp__pair_compiled(msp_precision pa, msp_precision px) {
#ifdef MSP_CUDA_ALL_PAIRS
  return (void)pa, (void)px, true;
#else
  return px == MSP_PRECISION_F64 || px == MSP_PRECISION_F32 || px == pa;
#endif
}

// f(msp__prec_c<PX>{}) for x's run-time precision px, for the PX compiled with values PA; f is not
// instantiated for the others, which msp__cuda_spmv_x has turned into an f64 x before.
template <msp_precision PA, class F> static msp_status msp__x_dispatch(msp_precision px, F &&f) {
  return msp__prec_dispatch(px, [&](auto c) -> msp_status {
    if constexpr (msp__pair_compiled(PA, decltype(c)::value)) {
      return f(c);
    } else {
      return msp__error(MSP_ERR_INTERNAL,
                        "CUDA backend: no kernel for %s values with a %s x (such an x is read "
                        "through an f64 copy, msp__cuda_spmv_x)",
                        msp_precision_name(PA), msp_precision_name(decltype(c)::value));
    }
  });
}

// ---- device views of matrices and vectors
// -------------------------------------------------------- The loader of a vector's device values
// (CPMS: the segments v->segments asks for).
template <msp_precision P> static inline loader<P> msp__vector_loader(const msp_vector v) {
  loader<P> l;
  l.a = msp__vector_acc(v, 1);
  return l;
}

// y's store: its device values (CPMS: every segment written) and its two range counters
// (overflowed and saturated; nonzero and stored as 0).
struct ystore {
  msp_acc a;
  unsigned long long *range;
};
static inline ystore msp__vector_ystore(const msp_vector y) {
  ystore s;
  s.a = msp__vector_store_acc(y, 1);
  s.range = y->d_range;
  return s;
}

// Value i of y as stored (beta != 0 reads it).
__device__ __forceinline__ double ystore_load(const ystore &y, int64_t i) {
  if (y.a.prec == MSP_PRECISION_F64) return ((const double *)y.a.data)[i];
  const msp_acc c = y.a;
  return msp_acc_load(&c, i);
}

// y_i = alpha s + beta y_i, rounded into y's precision (not fixed point: see ystore_warp); y is
// not read when beta == 0 (NaN in y stays out). An overflow is saturated and counted, a nonzero
// stored as 0 counted.
__device__ __forceinline__ void ystore_row(const ystore &y, int64_t i, double alpha, double s,
                                           double beta) {
  if (y.a.prec == MSP_PRECISION_F64) {
    double *d = (double *)y.a.data;
    d[i] = beta == 0.0 ? alpha * s : alpha * s + beta * d[i];
    return;
  }
  const double v = beta == 0.0 ? alpha * s : alpha * s + beta * ystore_load(y, i);
  const msp_acc c = y.a;
  const int r = msp_acc_store_sat(&c, i, v);
  if (r) atomicAdd(y.range + (r == MSP_STORE_FLUSHED), 1ull);
}

// Fixed-point y from a whole warp whose lane l holds row row0 + l (row0 a multiple of
// MSP_VEC_FX_BLOCK = 32; lanes with row >= rows pass valid = false). Every lane of the warp must
// call it (it shuffles). The block's scale comes from its new values: all lanes read their old
// values (beta != 0) before any lane writes.
__device__ __forceinline__ void ystore_warp(const ystore &y, int64_t row, bool valid, double alpha,
                                            double s, double beta) {
  const msp_acc c = y.a;
  double v = 0.0;
  if (valid) v = beta == 0.0 ? alpha * s : alpha * s + beta * msp_acc_load(&c, row);
  double m = valid ? msp_absmax_step(0.0, v) : 0.0;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    m = msp_absmax_step(m, __shfl_xor_sync(0xffffffffu, m, off));
  const double scale = msp_fx_block_scale(c.prec, m);
  __syncwarp();
  if (valid) {
    if ((row & (MSP_VEC_FX_BLOCK - 1)) == 0) ((double *)c.scales)[row >> MSP_VEC_FX_SHIFT] = scale;
    const double q = msp__fx_quantize(v, scale, msp_prec_qmax(c.prec));
    if (c.prec == MSP_PRECISION_FX32)
      ((int32_t *)c.data)[row] = (int32_t)q;
    else
      ((int16_t *)c.data)[row] = (int16_t)q;
    if (msp_fx_store_flushed(v, q, scale)) atomicAdd(y.range + 1, 1ull);
  }
}

// Either store, for kernels with one thread per row in which a warp holds 32 consecutive rows
// starting at a multiple of 32 (scalar CSR, ELL, HLL, DIA, HDIA): all lanes call it.
__device__ __forceinline__ void ystore_thread_row(const ystore &y, int64_t row, bool valid,
                                                  double alpha, double s, double beta) {
  if (msp_prec_is_fixed(y.a.prec))
    ystore_warp(y, row, valid, alpha, s, beta);
  else if (valid)
    ystore_row(y, row, alpha, s, beta);
}

// ---- y in f64, the common case, as a type of its own
// Kernels whose threads finish rows after a few loads each (the CSR kernels: a warp of the vector
// kernel on a 27-point stencil does one step of loads per row) spend a measurable share of their
// instructions in the run-time tests of ystore, enough to slow the product.
// They take the store as a template parameter Y: ystore_f64 when y is f64 (a plain store), ystore
// otherwise; msp__ystore_dispatch picks it. Same operations and order: the same bits.
struct ystore_f64 {
  double *d;
};
__device__ __forceinline__ double ystore_load(const ystore_f64 &y, int64_t i) {
  return y.d[i];
}
__device__ __forceinline__ void ystore_row(const ystore_f64 &y, int64_t i, double alpha, double s,
                                           double beta) {
  y.d[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y.d[i];
}
__device__ __forceinline__ void ystore_thread_row(const ystore_f64 &y, int64_t row, bool valid,
                                                  double alpha, double s, double beta) {
  if (valid) ystore_row(y, row, alpha, s, beta);
}
template <class Y> constexpr bool ystore_is_f64 = std::is_same<Y, ystore_f64>::value;

// Call f(store) with ystore_f64 for an f64 y and ystore for every other precision.
template <class F> static msp_status msp__ystore_dispatch(const msp_vector y, F &&f) {
  if (y->prec == MSP_PRECISION_F64) {
    ystore_f64 s;
    s.d = (double *)msp__vector_store_acc(y, 1).data;
    return f(s);
  }
  return f(msp__vector_ystore(y));
}

#endif

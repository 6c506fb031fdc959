// formats.cuh: shared by the CUDA COO, ELL, HLL, DIA, HDIA, HYB files (and HYB's ELL, COO parts).
//
// Each format's kernel is one template over the loader of its values (loader<PA>) and the loader
// of x (loader<PX>), instantiated for the pairs of MSP_PRECISION_LIST that msp__pair_compiled
// names (access.cuh) by msp__fmt_dispatch2; y is written through `ystore`, which picks the rounding
// store of y's precision at run time (access.cuh). One device layout per format whatever the
// precision: the format's value array in the host's order (the f64 host array, or A->pval: the same
// array encoded), in one slot, plus a slot of fixed-point scales (one per 2^MSP_FX_BLOCK_SHIFT
// values).
#ifndef MSP_CUDA_FORMATS_CUH
#define MSP_CUDA_FORMATS_CUH

#include "access.cuh"

#include <limits.h>
#include <stdint.h>
#include <string.h>

// Threads per block of every kernel here: 8 warps.
#define MSP__FMT_BLOCK 256
// Blocks per SM the row kernels ask the compiler to fit (__launch_bounds__): 4 x 256 threads caps
// them at 64 registers, half the SM's 2048 threads resident, which with MSP__FMT_UNROLL loads in
// flight per thread covers HBM latency (checked with -Xptxas -v: no spills).
#define MSP__FMT_MIN_BLOCKS 4
// Slots (diagonals, ELL columns) whose loads a thread issues before the first use: a memory-bound
// kernel needs several independent loads in flight per thread to cover HBM latency
// (/work/.library/device/HOPPER.md, "several independent loads in flight").
#define MSP__FMT_UNROLL 8
// The same for a loader: 4 for cpms4, whose four segment loads per value (and their addresses)
// would not fit eight values in 64 registers (ptxas: spills), 8 for the others.
template <class L> constexpr int msp__fmt_unroll = L::prec == MSP_PRECISION_CPMS4 ? 4 : 8;

// ---- device helpers -----------------------------------------------------------------------------
// Index arrays read by many threads (hack and diagonal offsets): the read-only cache.
template <typename T> __device__ __forceinline__ T msp__ld(const T *p) {
  return __ldg(p);
}
__device__ __forceinline__ int64_t msp__ld(const int64_t *p) {
  return (int64_t)__ldg((const long long *)p);
}
// Index arrays read once per product (ELL columns, row lengths): evict-first, so that x keeps its
// place in L2 (the values go through loader::stream for the same reason).
__device__ __forceinline__ int32_t msp__ld_once(const int32_t *p) {
  return __ldcs(p);
}

// A cursor over a loader's array that moves by a fixed stride (ELL slots, diagonals, a hack's
// slots): the row kernels keep eight loads in flight, and addresses formed from an index each
// time (a 64-bit multiply-add per slot and array) overflow their 64 registers into spills, where a
// walking pointer costs one add. load() returns what a register holds until the value's use: f32,
// f16 and bf16 as a float (exact: one register instead of two), the others as the loader's
// double. Decoded exactly as the loader decodes.
//
// ALIGNED (msp__stride_aligned: the stride is a multiple of the fixed-point scale block and of the
// CPMS group, and the groups the cursor visits are whole, as in ELL and DIA from
// MSP__STRIDE_MIN_ROWS rows, internal.h): fixed point walks its scale pointer too (one scale
// block per stride step), and CPMS walks the address of its first segment, the others at a fixed
// distance (the bank, or the array length for separate segment arrays). Otherwise (small
// matrices, other bank sizes) fixed point finds its scale from the pointer and CPMS reads through
// the loader at the index, as the loader does.
template <class L, bool ALIGNED = false> struct msp__cursor {
  const L &l;
  int64_t j, s;
  __device__ __forceinline__ msp__cursor(const L &l_, int64_t j_, int64_t s_)
      : l(l_), j(j_), s(s_) {}
  __device__ __forceinline__ double load() const { return l.stream(j); }
  __device__ __forceinline__ void step() { j += s; }
};
template <class T> struct msp__ptr_cursor {
  const T *p;
  int64_t s;
  __device__ __forceinline__ msp__ptr_cursor(const void *data, int64_t j, int64_t s_)
      : p((const T *)data + j), s(s_) {}
  __device__ __forceinline__ void step() { p += s; }
};
template <bool A> struct msp__cursor<loader<MSP_PRECISION_F64>, A> : msp__ptr_cursor<double> {
  __device__ __forceinline__ msp__cursor(const loader<MSP_PRECISION_F64> &l, int64_t j, int64_t s)
      : msp__ptr_cursor(l.a.data, j, s) {}
  __device__ __forceinline__ double load() const { return __ldcs(p); }
};
template <bool A> struct msp__cursor<loader<MSP_PRECISION_F32>, A> : msp__ptr_cursor<float> {
  __device__ __forceinline__ msp__cursor(const loader<MSP_PRECISION_F32> &l, int64_t j, int64_t s)
      : msp__ptr_cursor(l.a.data, j, s) {}
  __device__ __forceinline__ float load() const { return __ldcs(p); }
};
template <bool A>
struct msp__cursor<loader<MSP_PRECISION_F16>, A> : msp__ptr_cursor<unsigned short> {
  __device__ __forceinline__ msp__cursor(const loader<MSP_PRECISION_F16> &l, int64_t j, int64_t s)
      : msp__ptr_cursor(l.a.data, j, s) {}
  __device__ __forceinline__ float load() const { return (float)msp_f16_to_double(__ldcs(p)); }
};
template <bool A>
struct msp__cursor<loader<MSP_PRECISION_BF16>, A> : msp__ptr_cursor<unsigned short> {
  __device__ __forceinline__ msp__cursor(const loader<MSP_PRECISION_BF16> &l, int64_t j, int64_t s)
      : msp__ptr_cursor(l.a.data, j, s) {}
  __device__ __forceinline__ float load() const { return (float)msp_bf16_to_double(__ldcs(p)); }
};
template <class Q, msp_precision P, bool ALIGNED> struct msp__fx_cursor {
  const loader<P> &l; // the kernel's parameter: its fields are read in place, not held
  const Q *p;
  int64_t s;
  __device__ __forceinline__ msp__fx_cursor(const loader<P> &l_, int64_t j, int64_t s_)
      : l(l_), p((const Q *)l_.a.data + j), s(s_) {}
  // The index for the scale comes back from the pointer: no second walking register.
  __device__ __forceinline__ double load() const {
    return (double)__ldcs(p) * __ldg(l.a.scales + ((p - (const Q *)l.a.data) >> l.a.scale_shift));
  }
  __device__ __forceinline__ void step() { p += s; }
};
template <class Q, msp_precision P> struct msp__fx_cursor<Q, P, true> {
  const Q *p;
  const double *sp; // the scale of the value at p
  int64_t s, ss;    // steps of p and of sp
  __device__ __forceinline__ msp__fx_cursor(const loader<P> &l, int64_t j, int64_t s_)
      : p((const Q *)l.a.data + j), sp(l.a.scales + (j >> l.a.scale_shift)), s(s_),
        ss(s_ >> l.a.scale_shift) {}
  __device__ __forceinline__ double load() const { return (double)__ldcs(p) * __ldg(sp); }
  __device__ __forceinline__ void step() {
    p += s;
    sp += ss;
  }
};
template <bool A>
struct msp__cursor<loader<MSP_PRECISION_FX32>, A> : msp__fx_cursor<int, MSP_PRECISION_FX32, A> {
  using msp__fx_cursor<int, MSP_PRECISION_FX32, A>::msp__fx_cursor;
};
template <bool A>
struct msp__cursor<loader<MSP_PRECISION_FX16>, A> : msp__fx_cursor<short, MSP_PRECISION_FX16, A> {
  using msp__fx_cursor<short, MSP_PRECISION_FX16, A>::msp__fx_cursor;
};
// CPMS with whole groups: segment t of value j sits at j + (S - 1) g0 + t m, with g0 = j rounded
// down to the group and m the bank (CPMS-i) or the array length (CPMS-s, whose one group is the
// array: g0 = 0), so a step of s values moves the first segment by s + (S - 1) (s rounded down to
// the group) and the others follow at multiples of m.
template <class T, int S> struct msp__cpms_cursor {
  const T *p;
  int64_t m, dp;
  int k; // segments read
  template <class L> __device__ __forceinline__ msp__cpms_cursor(const L &l, int64_t j, int64_t s) {
    const int sep = l.a.bank_shift >= MSP_CPMS_SEPARATE;
    const int64_t group = sep ? 0 : ~(((int64_t)1 << l.a.bank_shift) - 1);
    p = (const T *)l.a.data + j + (S - 1) * (j & group);
    m = sep ? l.a.n : (int64_t)1 << l.a.bank_shift;
    dp = s + (S - 1) * (s & group);
    k = l.a.read_segments;
  }
  __device__ __forceinline__ double load() const {
    uint64_t bits = (uint64_t)__ldcs(p) << (64 - 64 / S);
#pragma unroll
    for (int t = 1; t < S; t++)
      if (t < k) bits |= (uint64_t)__ldcs(p + t * m) << (64 - 64 / S * (t + 1));
    return msp_bits_f64(bits);
  }
  __device__ __forceinline__ void step() {
    p += dp;
  }
};
template <> struct msp__cursor<loader<MSP_PRECISION_CPMS2>, true> : msp__cpms_cursor<unsigned, 2> {
  using msp__cpms_cursor<unsigned, 2>::msp__cpms_cursor;
};
template <>
struct msp__cursor<loader<MSP_PRECISION_CPMS4>, true> : msp__cpms_cursor<unsigned short, 4> {
  using msp__cpms_cursor<unsigned short, 4>::msp__cpms_cursor;
};

// Whether the aligned cursor applies to a view of stride `stride` (host side): fixed point when
// the stride is a whole number of scale blocks, CPMS when it is a whole number of groups (CPMS-s
// always), every other precision always (their cursors do not depend on it). The array must
// also hold whole groups where the cursor walks (the formats' strides make it so).
static inline bool msp__stride_aligned(const msp_acc &a, int64_t stride) {
  if (msp_prec_is_fixed(a.prec))
    return a.scale_shift >= MSP_CPMS_SEPARATE ||
           (stride & (((int64_t)1 << a.scale_shift) - 1)) == 0;
  if (a.prec == MSP_PRECISION_CPMS2 || a.prec == MSP_PRECISION_CPMS4)
    return a.bank_shift >= MSP_CPMS_SEPARATE || (stride & (((int64_t)1 << a.bank_shift) - 1)) == 0;
  return true;
}
// Whether a loader's cursor has an aligned form (the kernels are instantiated twice only then).
template <class L>
constexpr bool msp__has_aligned_cursor =
    L::prec == MSP_PRECISION_FX32 || L::prec == MSP_PRECISION_FX16 ||
    L::prec == MSP_PRECISION_CPMS2 || L::prec == MSP_PRECISION_CPMS4;
// f(std::bool_constant<ALIGNED>) for the view la.a walked with `stride`.
template <class L, class F> static msp_status msp__with_cursor(const L &la, int64_t stride, F &&f) {
  if constexpr (msp__has_aligned_cursor<L>) {
    if (!msp__stride_aligned(la.a, stride)) return f(std::false_type{});
  }
  return f(std::true_type{});
}

// Sum of len slots of an ELL-like row: slot k holds value va[j0 + k * stride] and column
// col[j0 + k * stride] (column-major: consecutive threads read consecutive memory). Loads of
// msp__fmt_unroll slots are issued before their products: whole groups of them without tests,
// then the last slots predicated (slots past len issue no loads), so a short row still has all of
// its loads in flight at once. Sums in slot order.
template <class LA, class LX, bool ALIGNED>
__device__ __forceinline__ double msp__ell_row_sum(const int32_t *__restrict__ col, const LA &va,
                                                   int64_t j0, int64_t stride, int64_t len,
                                                   const LX &x) {
  constexpr int U = msp__fmt_unroll<LA>;
  double sum = 0.0;
  msp__cursor<LA, ALIGNED> vc(va, j0, stride);
  const int32_t *__restrict__ cp = col + j0;
  // U slots from k; FULL (a compile-time constant): all U inside the row, no predicates
  auto group = [&](auto full, int64_t k) {
    constexpr bool FULL = decltype(full)::value;
    decltype(vc.load()) v[U];
    int32_t c[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const bool ok = FULL || k + u < len;
      v[u] = ok ? vc.load() : 0;
      c[u] = ok ? msp__ld_once(cp) : -1;
      vc.step();
      cp += stride;
    }
    double xv[U];
#pragma unroll
    for (int u = 0; u < U; u++)
      xv[u] = FULL || c[u] >= 0 ? x(c[u]) : 0.0;
#pragma unroll
    for (int u = 0; u < U; u++)
      sum += (double)v[u] * xv[u];
  };
  int64_t k = 0;
  for (; k + U <= len; k += U)
    group(std::true_type{}, k);
  if (k < len) group(std::false_type{}, k);
  return sum;
}

// Values j .. j+7 of a loader's array into v (COO: a lane's 8 consecutive triples), those at or
// past `end` read as 0. Where j is a multiple of 8 and all 8 are inside, the stored bytes come in
// 16-byte evict-first loads (cudaMalloc aligns the array to 256 bytes, so 8 values from a multiple
// of 8 are 16-byte aligned for every width of 2 bytes or more) and are decoded as the loader
// decodes them; fixed point: the 8 share one scale (a scale block, 256 values, is a multiple of
// 8); CPMS where the 8 values lie in one whole group (below). Otherwise one load per value.
template <msp_precision P>
__device__ __forceinline__ void msp__load8(const loader<P> &l, int64_t j, int64_t end,
                                           double (&v)[8]) {
  constexpr bool vec = P == MSP_PRECISION_F64 || P == MSP_PRECISION_F32 || P == MSP_PRECISION_F16 ||
                       P == MSP_PRECISION_BF16 || P == MSP_PRECISION_FX32 ||
                       P == MSP_PRECISION_FX16;
  if constexpr (vec) {
    if ((j & 7) == 0 && j + 8 <= end) {
      if constexpr (P == MSP_PRECISION_F64) {
        const double2 *q = reinterpret_cast<const double2 *>((const double *)l.a.data + j);
#pragma unroll
        for (int c = 0; c < 4; c++) {
          const double2 u = __ldcs(q + c);
          v[2 * c] = u.x;
          v[2 * c + 1] = u.y;
        }
      } else if constexpr (P == MSP_PRECISION_F32 || P == MSP_PRECISION_FX32) {
        const int4 *q = reinterpret_cast<const int4 *>((const int32_t *)l.a.data + j);
        int32_t w[8];
#pragma unroll
        for (int c = 0; c < 2; c++) {
          const int4 u = __ldcs(q + c);
          w[4 * c] = u.x;
          w[4 * c + 1] = u.y;
          w[4 * c + 2] = u.z;
          w[4 * c + 3] = u.w;
        }
        if constexpr (P == MSP_PRECISION_F32) {
#pragma unroll
          for (int k = 0; k < 8; k++)
            v[k] = (double)__int_as_float(w[k]);
        } else {
          const double s = __ldg(l.a.scales + (j >> l.a.scale_shift));
#pragma unroll
          for (int k = 0; k < 8; k++)
            v[k] = (double)w[k] * s;
        }
      } else {
        const uint4 u = __ldcs(reinterpret_cast<const uint4 *>((const uint16_t *)l.a.data + j));
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
        uint16_t h[8];
#pragma unroll
        for (int c = 0; c < 4; c++) { // little endian: the lower half is the lower index
          h[2 * c] = (uint16_t)(w[c] & 0xffffu);
          h[2 * c + 1] = (uint16_t)(w[c] >> 16);
        }
        if constexpr (P == MSP_PRECISION_F16) {
#pragma unroll
          for (int k = 0; k < 8; k++)
            v[k] = msp_f16_to_double(h[k]);
        } else if constexpr (P == MSP_PRECISION_BF16) {
#pragma unroll
          for (int k = 0; k < 8; k++)
            v[k] = msp_bf16_to_double(h[k]);
        } else {
          const double s = __ldg(l.a.scales + (j >> l.a.scale_shift));
#pragma unroll
          for (int k = 0; k < 8; k++)
            v[k] = (double)(int16_t)h[k] * s;
        }
      }
      return;
    }
  }
  if constexpr (P == MSP_PRECISION_CPMS2 || P == MSP_PRECISION_CPMS4) {
    // CPMS: where the 8 values lie in one whole group whose segment banks hold them 16-byte
    // aligned (a bank of a multiple of 8 values; CPMS-s with a length that is a multiple of 8),
    // each segment read comes in 16-byte loads (cpms2: 2, cpms4: 1), only for the segments read.
    constexpr int S = P == MSP_PRECISION_CPMS2 ? 2 : 4;
    using T = typename std::conditional<S == 2, uint32_t, uint16_t>::type;
    const int sep = l.a.bank_shift >= MSP_CPMS_SEPARATE;
    const int64_t bank = sep ? 0 : (int64_t)1 << l.a.bank_shift;
    const int64_t g0 = sep ? 0 : (j >> l.a.bank_shift) << l.a.bank_shift;
    const bool whole = sep ? (l.a.n & 7) == 0 : bank >= 8 && g0 + bank <= l.a.n;
    if ((j & 7) == 0 && j + 8 <= end && whole) {
      const int64_t m = sep ? l.a.n : bank; // from one segment to the next
      const T *q = (const T *)l.a.data + j + (S - 1) * g0;
      uint64_t bits[8];
#pragma unroll
      for (int k = 0; k < 8; k++)
        bits[k] = 0;
#pragma unroll
      for (int t = 0; t < S; t++) {
        if (t >= l.a.read_segments) break;
        const uint4 *w = reinterpret_cast<const uint4 *>(q + t * m);
        T seg[8];
        if constexpr (S == 2) {
          const uint4 u0 = __ldcs(w), u1 = __ldcs(w + 1);
          const uint32_t h[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
#pragma unroll
          for (int k = 0; k < 8; k++)
            seg[k] = h[k];
        } else {
          const uint4 u = __ldcs(w);
          const uint32_t h[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
          for (int c = 0; c < 4; c++) { // little endian: the lower half is the lower index
            seg[2 * c] = (uint16_t)(h[c] & 0xffffu);
            seg[2 * c + 1] = (uint16_t)(h[c] >> 16);
          }
        }
#pragma unroll
        for (int k = 0; k < 8; k++)
          bits[k] |= (uint64_t)seg[k] << (64 - 64 / S * (t + 1));
      }
#pragma unroll
      for (int k = 0; k < 8; k++)
        v[k] = msp_bits_f64(bits[k]);
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < 8; k++)
    v[k] = j + k < end ? l.stream(j + k) : 0.0;
}

// ---- the one dispatch over the pair (values, x) -------------------------------------------------
// f(loader<PA>, loader<PX>) for the run-time precisions of the value view va and of x's view xa:
// every format's launcher calls it once, so each kernel is instantiated for every value
// precision of MSP_PRECISION_LIST with the x precisions compiled for it (msp__pair_compiled,
// access.cuh), and a new row instantiates them all.
template <class F>
static msp_status msp__fmt_dispatch2(const msp_acc &va, const msp_acc &xa, F &&f) {
  return msp__prec_dispatch(va.prec, [&](auto pa) {
    return msp__x_dispatch<decltype(pa)::value>(xa.prec, [&](auto px) {
      loader<decltype(pa)::value> la;
      loader<decltype(px)::value> lx;
      la.a = va;
      lx.a = xa;
      return f(la, lx);
    });
  });
}

// ---- host helpers for the uploads ---------------------------------------------------------------
// Values other than f64 come encoded in A->pval (msp__matrix_encode_values), in the order of the
// format's host value array. Row indices and diagonal offsets travel as int32 on the device, so
// rows and columns must fit an int32.
static inline msp_status msp__fmt_check(const msp_matrix A, const char *fmt) {
  if (A->precision != MSP_PRECISION_F64 && !A->pval)
    return msp__error(MSP_ERR_INTERNAL, "CUDA %s upload: %s matrix without encoded values", fmt,
                      msp_precision_name(A->precision) ? msp_precision_name(A->precision) : "?");
  if (A->rows > INT32_MAX || A->cols > INT32_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "CUDA %s upload: %lld x %lld matrix; rows and columns must fit in int32", fmt,
                      (long long)A->rows, (long long)A->cols);
  if (!A->fmt) return msp__error(MSP_ERR_INTERNAL, "CUDA %s upload: no host format data", fmt);
  return MSP_SUCCESS;
}

// The value slot `vslot`: f64, the host value array of n0 values followed by a second of n1 (HYB:
// its ELL part, then its COO part; one array, one addressing); another precision, A->pval (the
// same values encoded as one array), and its fixed-point scales in slot `sslot`.
static inline msp_status msp__fmt_put_values(msp_context ctx, msp__cuda_matrix *m,
                                             const msp_matrix A, int vslot, int sslot,
                                             const double *v0, int64_t n0, const double *v1,
                                             int64_t n1) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  if (A->pval) {
    const msp__prec_array *p = A->pval;
    if (p->n != n0 + n1)
      return msp__error(MSP_ERR_INTERNAL,
                        "CUDA %s upload: %lld encoded values for a value array of %lld",
                        msp_format_name(A->format), (long long)p->n, (long long)(n0 + n1));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, vslot, p->data, (size_t)p->n * msp__prec_bytes(p->prec)));
    if (p->scales && p->nscales > 0)
      MSP_TRY(msp__cuda_matrix_put(ctx, m, sslot, p->scales, (size_t)p->nscales * sizeof(double)));
  } else if (n1 == 0) {
    MSP_TRY(msp__cuda_matrix_put(ctx, m, vslot, v0, (size_t)n0 * sizeof(double)));
  } else {
    MSP_TRY(msp__cuda_matrix_put(ctx, m, vslot, NULL, (size_t)(n0 + n1) * sizeof(double)));
    // Pageable sources: each copy returns once its data is staged.
    if (n0 > 0)
      MSP_CUDA_TRY(
          cudaMemcpyAsync(m->d[vslot], v0, (size_t)n0 * sizeof(double), cudaMemcpyHostToDevice, s));
    MSP_CUDA_TRY(cudaMemcpyAsync((double *)m->d[vslot] + n0, v1, (size_t)n1 * sizeof(double),
                                 cudaMemcpyHostToDevice, s));
  }
exit:
  return st;
}

// The device view of A's value array in slots vslot (values) and sslot (fixed-point scales). Built
// at each product: CPMS reads the segments the matrix asks for now (msp_matrix_set_cpms_segments
// may change them after the upload).
static inline msp_acc msp__fmt_values(const msp_matrix A, const msp__cuda_matrix *m, int vslot,
                                      int sslot) {
  msp_acc a;
  if (A->pval) {
    a = msp__prec_view(A->pval, A->opts.cpms_segments);
  } else {
    memset(&a, 0, sizeof a);
    a.prec = MSP_PRECISION_F64;
    a.scale_shift = MSP_FX_BLOCK_SHIFT;
    a.read_segments = 1;
  }
  a.data = m->d[vslot];
  a.scales = (const double *)m->d[sslot];
  return a;
}

// Whether an ELL-like kernel should read per-row lengths (int32 per row) and stop at them instead
// of running over every padded slot: worth it when the padding is more than two slots per row on
// average (a padded slot costs an index and a value, the length 4 bytes per row; lanes past their
// length skip whole sectors only where their neighbours are past theirs too, hence the margin).
static inline int msp__fmt_use_rowlen(int64_t rows, int64_t slots, int64_t nnz) {
  return rows > 0 && slots - nnz > 2 * rows;
}

// ---- parts shared with HYB ----------------------------------------------------------------------
// An ELL part: `rows` x `width`, column-major with leading dimension e->stride (the host layout:
// one index addresses a slot's column and its value), and per-row lengths when use_rowlen. Fills
// slots s0 (col, int32), s0+1 (rowlen, int32, only when used) and the scalars i64[q0] = width,
// i64[q0+1] = use_rowlen, i64[q0+2] = stride. Its values are the first stride * width of the
// caller's value array.
msp_status msp__cuda_ell_part_upload(msp_context ctx, msp__cuda_matrix *m, int s0, int q0,
                                     int64_t rows, const msp__ell *e, int64_t stored_nnz);
// y = alpha * ELL * x + beta * y over all rows, from the slots written above, values va (from
// index 0), x's view xa and y's store (every precision of y, fixed point included). HYB: the rows
// whose bit is set in tail (NULL: none) get part[i] = alpha * ELL_i x + beta * y_i (fp64)
// instead, for the COO part to finish.
msp_status msp__cuda_ell_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   int64_t rows, const msp_acc &va, const msp_acc &xa,
                                   const ystore &y, double alpha, double beta, const uint32_t *tail,
                                   double *part);

// A COO part (triples sorted by row, then column), reduced by equal shares of MSP__COO_TILE
// triples per warp without atomics, in one launch. Fills slots s0 .. s0+4 (row, col, head partials
// and the straddling rows' plan, tail partials, look-back flags) and the scalars i64[q0] = tiles,
// i64[q0+1] = absorbed rows, i64[q0+2] = look-back rows, i64[q0+3] = nnz, i64[q0+4] = warps per
// block. coo.cu documents the scheme.
#define MSP__COO_ITEMS 8                    // consecutive triples per lane
#define MSP__COO_TILE (32 * MSP__COO_ITEMS) // triples per warp
msp_status msp__cuda_coo_part_upload(msp_context ctx, msp__cuda_matrix *m, int s0, int q0,
                                     int64_t nnz, const int32_t *row, const int32_t *col);
// For every row r with triples: y_r = alpha * sum_r + beta * y_r (y_r not read when beta == 0),
// or with part (HYB) y_r = alpha * sum_r + part[r], rounded once into y's precision; triple k's
// value is va[voff + k]. Rows without triples are not touched. y must not be fixed point (a row's
// sum is finished by one lane, never by a warp holding a whole block of 32 rows): the
// caller goes through msp__cuda_spmv_fixed_y for it.
msp_status msp__cuda_coo_part_spmv(cudaStream_t s, const msp__cuda_matrix *m, int s0, int q0,
                                   const msp_acc &va, int64_t voff, const msp_acc &xa,
                                   const ystore &y, double alpha, double beta, const double *part);

#endif

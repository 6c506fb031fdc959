// basis.cuh: what the two files of the CUDA Krylov-basis operations share (basis.cu: slots,
// store, projection, Jacobi; basis_update.cu: subtraction and combination, fused or not with the
// next projection): the launch shapes, the device view of a basis, and the projection's block
// sums, which the fused subtraction reuses. See basis.cu for the design.
#ifndef MSP_CUDA_BASIS_CUH
#define MSP_CUDA_BASIS_CUH

#include "access.cuh"

#include <string.h>

#define PROJ_THREADS 256
#define PROJ_ROWS 2 // rows of w per thread, held in registers: a block covers 512 rows
#define PROJ_CHUNK (PROJ_THREADS * PROJ_ROWS)
#define PROJ_GROUP 32 // columns whose warp sums are staged in shared memory between barriers
#define PROJ_UNROLL 4 // columns read together (loads in flight per thread)
#define RED_THREADS 256
#define EW_THREADS 256
#define MAXC 496  // coefficients per launch of the subtraction and combination (under 4 KiB)
#define FEWC 32   // the small parameter block (early columns of a cycle, MGS)
#define FUSE_L2 4 // subtraction and projection fused up to this many L2 sizes of columns
#define STAGE_THREADS 512 // threads of a staged block (it owns PROJ_CHUNK rows, as a projection's)
#define COL_LD 256 // a column's values start at a multiple of this many values (16-byte copies)
#define STAGE_BUDGET (96 * 1024) // shared memory of a staged block: two blocks per SM
#define STAGE_LIMIT (200 * 1024) // the most a staged block asks for (then one block per SM)

// Row blocks of the projection and of the fixed-point maximum: a function of n only.
static inline int64_t proj_blocks(int64_t n) {
  return (n + PROJ_CHUNK - 1) / PROJ_CHUNK;
}

// DCGS2's first pass: one partial per warp of 32 lanes, 8 warps per chunk of MSP__RED_CHUNK rows
// (basis_dcgs2.cu).
static inline int64_t dcgs2_warps(int64_t n) {
  return (n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK * 8;
}

// Values from one column's start to the next: n rounded up to COL_LD, so that every column and
// every tile of the staged kernel starts on a 16-byte boundary whatever n and the value width.
static inline int64_t col_ld(int64_t n) {
  return (n + COL_LD - 1) / COL_LD * COL_LD;
}

// What the kernels need of a basis, passed by value.
struct bview {
  char *data;
  double *scales; // fixed point: one per column
  int64_t n;
  size_t col_bytes; // col_ld(n) * bytes per value: from one column to the next
  int vbytes;       // bytes per value
  int bank_shift;
  int segments;
};

static inline bview view_of(const msp__basis *V) {
  bview b;
  b.data = (char *)V->data;
  b.scales = V->scales;
  b.n = V->n;
  b.col_bytes = (size_t)col_ld(V->n) * msp__prec_bytes(V->prec);
  b.vbytes = (int)msp__prec_bytes(V->prec);
  b.bank_shift = V->bank_shift;
  b.segments = msp__prec_segments(V->prec);
  return b;
}

// The accessor view of column j.
template <msp_precision P> __device__ __forceinline__ msp_acc col_acc(const bview &V, int j) {
  msp_acc a;
  a.data = V.data + (size_t)j * V.col_bytes;
  a.n = V.n;
  a.prec = P;
  a.scale_shift = MSP_CPMS_SEPARATE; // i >> 62 == 0: the column's one scale
  a.scales = V.scales ? V.scales + j : NULL;
  a.bank_shift = V.bank_shift;
  a.read_segments = V.segments;
  return a;
}
template <msp_precision P> __device__ __forceinline__ loader<P> col(const bview &V, int j) {
  loader<P> l;
  l.a = col_acc<P>(V, j);
  return l;
}

// Asynchronous 16-byte copies from global to shared memory (cp.async, cached in L2 only): issue,
// close a group of them, wait for all, or for all but the N most recent groups; another thread
// sees the copied bytes only after a barrier (__syncthreads, or __syncwarp within a warp).
__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Fixed-order sum of s over the block (shuffle tree per warp, then warp 0 over the warp sums);
// the result in thread 0. MAX: the NaN-keeping maximum magnitude instead of the sum.
template <bool MAX> __device__ __forceinline__ double block_reduce(double s) {
  __shared__ double sh[RED_THREADS / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const double o = __shfl_down_sync(0xffffffffu, s, off);
    s = MAX ? msp_absmax_step(s, o) : s + o;
  }
  if (lane == 0) sh[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < RED_THREADS / 32 ? sh[lane] : 0.0;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      const double o = __shfl_down_sync(0xffffffffu, s, off);
      s = MAX ? msp_absmax_step(s, o) : s + o;
    }
  }
  return s;
}

// ---- projection ---------------------------------------------------------------------------------
// Block b: rows b * PROJ_CHUNK + r * PROJ_THREADS + threadIdx.x (r < PROJ_ROWS), whose values of w
// the thread holds in wv; for every column k in j0..j1-1, partial[(k - j0) * nb + b] = the block's
// sum of V_k(i) w_i, each thread's terms in order of r, then the warps' shuffle trees, then the
// warp sums in order of the warp. WW (uniform): also the block's sum of w_i^2, in
// partial[(j1 - j0) * nb + b], the same way.
template <msp_precision P>
__device__ __forceinline__ void project_block(const bview &V, int j0, int j1,
                                              const double (&wv)[PROJ_ROWS], int64_t base,
                                              int64_t nb, double *__restrict__ partial, bool ww) {
  __shared__ double sh[PROJ_THREADS / 32][PROJ_GROUP];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int g0 = j0; g0 < j1; g0 += PROJ_GROUP) {
    const int gn = j1 - g0 < PROJ_GROUP ? j1 - g0 : PROJ_GROUP;
    for (int c0 = 0; c0 < gn; c0 += PROJ_UNROLL) {
      double s[PROJ_UNROLL];
#pragma unroll
      for (int u = 0; u < PROJ_UNROLL; u++) {
        s[u] = 0.0;
        if (c0 + u < gn) {
          const loader<P> v = col<P>(V, g0 + c0 + u);
#pragma unroll
          for (int r = 0; r < PROJ_ROWS; r++) {
            const int64_t i = base + (int64_t)r * PROJ_THREADS;
            if (i < V.n) s[u] += v.stream(i) * wv[r];
          }
        }
      }
#pragma unroll
      for (int off = 16; off > 0; off >>= 1)
#pragma unroll
        for (int u = 0; u < PROJ_UNROLL; u++)
          s[u] += __shfl_down_sync(0xffffffffu, s[u], off);
      if (lane == 0)
#pragma unroll
        for (int u = 0; u < PROJ_UNROLL; u++)
          if (c0 + u < gn) sh[warp][c0 + u] = s[u];
    }
    __syncthreads();
    if ((int)threadIdx.x < gn) {
      double t = 0.0;
#pragma unroll
      for (int wp = 0; wp < PROJ_THREADS / 32; wp++)
        t += sh[wp][threadIdx.x];
      partial[(int64_t)(g0 - j0 + (int)threadIdx.x) * nb + blockIdx.x] = t;
    }
    __syncthreads();
  }
  if (ww) {
    double t = 0.0;
#pragma unroll
    for (int r = 0; r < PROJ_ROWS; r++)
      t += wv[r] * wv[r]; // rows past n hold 0
    t = block_reduce<false>(t);
    if (threadIdx.x == 0) partial[(int64_t)(j1 - j0) * nb + blockIdx.x] = t;
  }
}

// The thread's rows of w (0 past n), as project_block holds them.
__device__ __forceinline__ void load_rows(int64_t n, const double *__restrict__ w, int64_t base,
                                          double (&wv)[PROJ_ROWS]) {
#pragma unroll
  for (int r = 0; r < PROJ_ROWS; r++) {
    const int64_t i = base + (int64_t)r * PROJ_THREADS;
    wv[r] = i < n ? w[i] : 0.0;
  }
}

static inline unsigned ew_blocks(msp_context ctx, int64_t n) {
  const int64_t cap = (int64_t)msp__cuda(ctx)->sm_count * 16;
  const int64_t want = (n + EW_THREADS - 1) / EW_THREADS;
  return (unsigned)(want < cap ? want : cap);
}

// The projections (and w.w) from the partials of the last projection pass into h[0..cnt) and
// *ww, with the one synchronisation of these operations (basis.cu).
msp_status msp__cuda_basis_finish(msp_context ctx, const msp__basis *V, int cnt, double *h,
                                  double *ww);
// A new basis's fuse_cols (the most columns for which basis_subtract with u reads them once),
// stage_bytes, and its staged kernels' shared-memory limit (basis_update.cu).
void msp__cuda_basis_setup(msp_context ctx, msp__basis *V);
extern "C" msp_status msp__cuda_basis_project(msp_context ctx, const msp__basis *V, int j0, int j1,
                                              msp_vector w, double *h, double *ww);

#endif

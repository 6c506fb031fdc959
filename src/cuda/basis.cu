// basis.cu: CUDA Krylov-basis operations of GMRES over the compressed basis (store, projection,
// subtraction, combination) and the pointwise product of Jacobi, fp64 arithmetic.
//
// papers/cb-gmres-compressed-basis.txt ("Memory accessor"): the basis stays on the device in its
// storage precision and every load converts to double (loader<P> of access.cuh, one template per
// operation instantiated through msp__prec_dispatch); nothing is decoded into an fp64 copy, so a
// projection over an f32 basis reads half the bytes of an f64 one. Each operation is one fused
// pass over the columns it needs:
//  - projection: block b owns a fixed range of PROJ_CHUNK rows; it keeps its rows of w in
//    registers, walks the columns j0..j1-1 and writes one partial per column (and, asked, one of
//    w.w) to the workspace; a second kernel adds the partials of each column in a fixed order,
//    and the host gets all j1 - j0 values with one copy (the only synchronisation of these
//    operations). The row ranges depend on n only: the same n gives the same bits on every run
//    and every GPU;
//  - subtraction followed by a projection (classical Gram-Schmidt's re-orthogonalisation test
//    needs ||w|| after the subtraction, and its second pass V^T w): one kernel over the same
//    row blocks does both, staging tiles of the columns in shared memory so that they cross DRAM
//    once (staged_subtract_project), or where no tile fits, reading them twice with the second
//    read from L2 (subtract_project_kernel);
//  - subtraction and combination: one thread per row reads its value of every column once and
//    writes its row of the result once; the coefficients travel as a kernel parameter (no host
//    to device copy, no synchronisation), up to MAXC columns per launch;
//  - store: rounding into column j and reading back into w in one pass (fixed point: the
//    column's scale from max |w| first, reduced on the device).
// Column j is its own accessor view (fixed point: one scale, scales[j]; CPMS: every segment read
// and written), as in src/cpu/basis.c, so both backends store and read the same bits.
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
static int64_t proj_blocks(int64_t n) {
  return (n + PROJ_CHUNK - 1) / PROJ_CHUNK;
}

// Values from one column's start to the next: n rounded up to COL_LD, so that every column and
// every tile of the staged kernel starts on a 16-byte boundary whatever n and the value width.
static int64_t col_ld(int64_t n) {
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

static bview view_of(const msp__basis *V) {
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

template <msp_precision P>
__global__ void __launch_bounds__(PROJ_THREADS)
    project_partials(const bview V, int j0, int j1, const double *__restrict__ w, int64_t nb,
                     double *__restrict__ partial, bool ww) {
  const int64_t base = (int64_t)blockIdx.x * PROJ_CHUNK + threadIdx.x;
  double wv[PROJ_ROWS];
  load_rows(V.n, w, base, wv);
  project_block<P>(V, j0, j1, wv, base, nb, partial, ww);
}

// Block k: out[k] = the sum of partial[k * nb .. k * nb + nb) (thread-strided, then the tree).
__global__ void __launch_bounds__(RED_THREADS)
    project_final(int64_t nb, const double *__restrict__ partial, double *__restrict__ out) {
  const double *p = partial + (int64_t)blockIdx.x * nb;
  double s = 0.0;
  for (int64_t b = threadIdx.x; b < nb; b += RED_THREADS)
    s += p[b];
  s = block_reduce<false>(s);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// ---- store --------------------------------------------------------------------------------------
// Fixed point: partial[b] = max |w_i| over block b's rows (NaN kept), then one block writes the
// column's scale from the maximum of the partials (msp_fx_block_scale, as the CPU).
__global__ void __launch_bounds__(PROJ_THREADS)
    absmax_partials(int64_t n, const double *__restrict__ w, double *__restrict__ partial) {
  const int64_t base = (int64_t)blockIdx.x * PROJ_CHUNK + threadIdx.x;
  double m = 0.0;
#pragma unroll
  for (int r = 0; r < PROJ_ROWS; r++) {
    const int64_t i = base + (int64_t)r * PROJ_THREADS;
    if (i < n) m = msp_absmax_step(m, w[i]);
  }
  m = block_reduce<true>(m);
  if (threadIdx.x == 0) partial[blockIdx.x] = m;
}
__global__ void __launch_bounds__(RED_THREADS)
    absmax_scale(int64_t nb, const double *__restrict__ partial, msp_precision p,
                 double *__restrict__ scale) {
  double m = 0.0;
  for (int64_t b = threadIdx.x; b < nb; b += RED_THREADS)
    m = msp_absmax_step(m, partial[b]);
  m = block_reduce<true>(m);
  if (threadIdx.x == 0) *scale = msp_fx_block_scale(p, m);
}

// Column j = w rounded by the store; w = the values as stored (f64: already).
template <msp_precision P>
__global__ void __launch_bounds__(EW_THREADS) store_kernel(const bview V, int j, double *w) {
  const msp_acc a = col_acc<P>(V, j);
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < V.n; i += stride) {
    msp_acc_store_p(P, &a, i, w[i]);
    if (P != MSP_PRECISION_F64) w[i] = msp_acc_load_p(P, &a, i); // f64 stores w exactly
  }
}

// ---- subtraction and combination ----------------------------------------------------------------
template <int C> struct coefs { double c[C]; };

// The kernel parameter of cnt <= C coefficients sign * coef[k] (zeros after them).
template <int C> static coefs<C> coefs_of(const double *coef, int cnt, double sign) {
  coefs<C> h;
  memset(&h, 0, sizeof h);
  for (int k = 0; k < cnt; k++)
    h.c[k] = sign * coef[k];
  return h;
}

// The one arithmetic of every subtraction and combination kernel: for VEC rows at once (v(k, x):
// their values in column k), t = base, then t += h_k v_k for the columns in order (a fused
// multiply-add each), so a fused subtraction leaves the same bits of w as update_kernel. (Eight
// partial sums over k mod 8, spread over 8 threads per row in the staged kernel, ran up to 1.3x
// faster there, but with an f32 basis the CPU and CUDA residual histories of GMRES on pde2961
// then parted by 1.5e-8 after 239 iterations; rounding each product as the CPU does, orsirr_1
// with Jacobi then converged one iteration later on CUDA: tests/cuda_gmres.c.)
template <int VEC, int C, class LOAD>
__device__ __forceinline__ void seq_sum(const double (&base)[VEC], int cnt, const coefs<C> &h,
                                        LOAD v, double (&t)[VEC]) {
#pragma unroll
  for (int r = 0; r < VEC; r++)
    t[r] = base[r];
#pragma unroll 8
  for (int k = 0; k < cnt; k++) {
    double x[VEC];
    v(k, x);
    const double c = h.c[k];
#pragma unroll
    for (int r = 0; r < VEC; r++)
      t[r] += c * x[r];
  }
}
// One row (v(k): its value in column k).
template <int C, class LOAD>
__device__ __forceinline__ double seq_sum1(double base, int cnt, const coefs<C> &h, LOAD v) {
  const double b[1] = {base};
  double t[1];
  seq_sum(
      b, cnt, h, [&](int k, double(&x)[1]) { x[0] = v(k); }, t);
  return t[0];
}

// w_i = (ZERO ? 0 : w_i) + sum over k < cnt of h.c[k] V_{j0+k}(i), as seq_sum (the subtraction
// passes -h).
template <msp_precision P, int C, bool ZERO>
__global__ void __launch_bounds__(EW_THREADS)
    update_kernel(const bview V, int j0, int cnt, const __grid_constant__ coefs<C> h,
                  double *__restrict__ w) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < V.n; i += stride)
    w[i] = seq_sum1(ZERO ? 0.0 : w[i], cnt, h, [&](int k) { return col<P>(V, j0 + k).stream(i); });
}

static unsigned ew_blocks(msp_context ctx, int64_t n) {
  const int64_t cap = (int64_t)msp__cuda(ctx)->sm_count * 16;
  const int64_t want = (n + EW_THREADS - 1) / EW_THREADS;
  return (unsigned)(want < cap ? want : cap);
}

// One launch over columns j0 .. j0+cnt-1 (cnt <= C) with coefficients sign * coef[0..cnt).
template <msp_precision P, int C>
static msp_status update_launch(msp_context ctx, const bview &b, int j0, int cnt,
                                const double *coef, double sign, bool zero, double *w) {
  msp_status st = MSP_SUCCESS;
  const coefs<C> h = coefs_of<C>(coef, cnt, sign);
  const unsigned g = ew_blocks(ctx, b.n);
  const cudaStream_t s = msp__cuda(ctx)->stream;
  if (zero)
    update_kernel<P, C, true><<<g, EW_THREADS, 0, s>>>(b, j0, cnt, h, w);
  else
    update_kernel<P, C, false><<<g, EW_THREADS, 0, s>>>(b, j0, cnt, h, w);
  MSP_CUDA_CHECK_LAUNCH("update_kernel");
exit:
  return st;
}

// w (= zero ? 0 : w) + sign * sum over k in j0..j1-1 of coef[k - j0] V_k; one pass when
// j1 - j0 <= MAXC, otherwise one pass per MAXC columns.
static msp_status update(msp_context ctx, const msp__basis *V, int j0, int j1, const double *coef,
                         double sign, bool zero, msp_vector w) {
  msp_status st = MSP_SUCCESS;
  const bview b = view_of(V);
  double *d = (double *)w->d_data;
  if (V->n == 0) goto exit;
  if (j1 <= j0) { // no column: the combination is 0, the subtraction leaves w
    if (zero)
      MSP_CUDA_TRY(cudaMemsetAsync(d, 0, (size_t)V->n * sizeof(double), msp__cuda(ctx)->stream));
    goto exit;
  }
  MSP_TRY(msp__prec_dispatch(V->prec, [&](auto pc) -> msp_status {
    constexpr msp_precision P = decltype(pc)::value;
    for (int k = j0; k < j1; k += MAXC) {
      const int cnt = j1 - k < MAXC ? j1 - k : MAXC;
      const bool z = zero && k == j0;
      const msp_status s =
          cnt <= FEWC ? update_launch<P, FEWC>(ctx, b, k, cnt, coef + (k - j0), sign, z, d)
                      : update_launch<P, MAXC>(ctx, b, k, cnt, coef + (k - j0), sign, z, d);
      if (s != MSP_SUCCESS) return s;
    }
    return MSP_SUCCESS;
  }));
exit:
  return st;
}

// ---- subtraction with the next projection
// -------------------------------------------------------- w -= sum over k < cnt of h_k V_{j0+k}
// (h.c holds -h; each row's terms as seq_sum, as update_kernel: the same bits), then, from the
// same block, the projection partials of the new w over columns j0 .. j0+np-1 (np = cnt or 0) and
// with WW its w.w (project_block). The block's column values are read twice: first through the
// read-only cache, so that they are still in L2 for the second, streamed, read: the basis crosses
// DRAM about once where a subtraction and a projection cross it twice, and no launch or
// synchronisation separates them.
template <msp_precision P, int C>
__global__ void __launch_bounds__(PROJ_THREADS)
    subtract_project_kernel(const bview V, int j0, int cnt, const __grid_constant__ coefs<C> h,
                            double *__restrict__ w, int np, int64_t nb,
                            double *__restrict__ partial, bool ww) {
  const int64_t base = (int64_t)blockIdx.x * PROJ_CHUNK + threadIdx.x;
  double wv[PROJ_ROWS];
  load_rows(V.n, w, base, wv);
#pragma unroll
  for (int r = 0; r < PROJ_ROWS; r++) {
    const int64_t i = base + (int64_t)r * PROJ_THREADS;
    if (i < V.n) wv[r] = seq_sum1(wv[r], cnt, h, [&](int k) { return col<P>(V, j0 + k)(i); });
  }
#pragma unroll
  for (int r = 0; r < PROJ_ROWS; r++) {
    const int64_t i = base + (int64_t)r * PROJ_THREADS;
    if (i < V.n) w[i] = wv[r];
  }
  project_block<P>(V, j0, j0 + np, wv, base, nb, partial, ww);
}

// The projections (and w.w) from the partials of the last projection pass into h[0..cnt) and
// *ww: one block per value, one copy to the host, the one synchronisation of these operations.
static msp_status project_finish(msp_context ctx, const msp__basis *V, int cnt, double *h,
                                 double *ww) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t nb = V->nchunks;
  const int vals = cnt + (ww ? 1 : 0);
  double *d_h = V->work + (size_t)nb * (size_t)(V->cols + 1);
  if (vals == 0) goto exit;
  project_final<<<(unsigned)vals, RED_THREADS, 0, s>>>(nb, V->work, d_h);
  MSP_CUDA_CHECK_LAUNCH("project_final");
  MSP_CUDA_TRY(
      cudaMemcpyAsync(V->host_h, d_h, (size_t)vals * sizeof(double), cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
  if (cnt > 0) memcpy(h, V->host_h, (size_t)cnt * sizeof(double));
  if (ww) *ww = V->host_h[cnt];
exit:
  return st;
}

template <msp_precision P, int C>
static msp_status subtract_project_launch(msp_context ctx, const msp__basis *V, int j0, int cnt,
                                          const double *coef, bool proj, bool ww, double *w) {
  msp_status st = MSP_SUCCESS;
  const coefs<C> h = coefs_of<C>(coef, cnt, -1.0);
  const int64_t nb = V->nchunks;
  subtract_project_kernel<P, C><<<(unsigned)nb, PROJ_THREADS, 0, msp__cuda(ctx)->stream>>>(
      view_of(V), j0, cnt, h, w, proj ? cnt : 0, nb, V->work, ww);
  MSP_CUDA_CHECK_LAUNCH("subtract_project_kernel");
exit:
  return st;
}

// ---- staged subtraction with the next projection -----------------------------------------------
// What subtract_project_kernel computes, for classical Gram-Schmidt's re-orthogonalisation on a
// basis too large for its second read to find the columns in L2 (subtract_project_kernel's rows
// of all resident blocks, times the columns, exceed L2 from a few columns on at 10^6 rows). Block
// b (STAGE_THREADS threads) owns the same PROJ_CHUNK rows, walked in tiles of R rows:
//  - the tile of every column (R values each, in their encoding) and the tile's rows of w are
//    copied into shared memory (cp.async, 16 bytes per copy, L2 only);
//  - the rows of w get the subtraction as seq_sum (the same bits of w as update_kernel), a
//    thread on VEC rows at once (tile_vec: one 8-byte load serves 2 f32 or 4 16-bit values);
//  - each thread sums the tile's V_k(i) w_i over its rows for its column k, the lanes of a warp
//    on consecutive columns each from its own row on (no bank conflict), added in tile order to
//    the block's sum of column k.
// So the basis crosses DRAM once for both, whatever its size. It runs where the columns exceed
// L2 (V->stage_bytes); below, subtract_project_kernel's second read is an L2 hit. R: the largest
// power of two from 256 down to 32 whose tile fits STAGE_BUDGET (two blocks per SM, one loading
// while the other computes), else the smallest that fits STAGE_LIMIT; CPMS tiles hold whole
// groups of banks. The sums are a function of n, the column count and the precision only: the
// same bits on every run. Measured on the H100 (n = 2^21, 50-300 columns; copies alone: 3,050
// GB/s with two blocks per SM, 2,500 with one): 2,350-2,710 GB/s in f64 and 1,580-1,960 in f32,
// where a plain subtraction runs at 2,610-2,940 and 2,140-2,680; the f32 rows wait on their
// chains of dependent adds (seq_sum), 32 threads a block at 64 rows. Versions measured and
// dropped: a warp per column with shuffles for the sums (1,600-2,100 GB/s in f64); every lane
// starting its column at the same row (55% of the shared-memory wavefronts bank conflicts); two
// buffers per block, the next tile's copies issued before the sums of this one, in half as tall
// tiles (1,770-2,840 GB/s in f64, 1,350-2,150 in f32, with the eight partial sums); the eight
// partial sums of seq_sum's note (f64 2,340-2,880, f32 1,800-2,570).
__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// Value t of column j's tile (rows values copied to col), as msp_acc_load_p reads it from the
// column (the same double); CPMS: the tile starts on a group, so its groups are laid out as in
// the column with `rows` values.
template <msp_precision P>
__device__ __forceinline__ double tile_load(const bview &V, const unsigned char *col, int rows,
                                            int j, int t) {
  if constexpr (P == MSP_PRECISION_F64) return ((const double *)col)[t];
  if constexpr (P == MSP_PRECISION_F32) return (double)((const float *)col)[t];
  if constexpr (P == MSP_PRECISION_F16) return msp_f16_to_double(((const uint16_t *)col)[t]);
  if constexpr (P == MSP_PRECISION_BF16) return msp_bf16_to_double(((const uint16_t *)col)[t]);
  if constexpr (P == MSP_PRECISION_FX32)
    return msp_fx32_to_double(((const int32_t *)col)[t], __ldg(V.scales + j));
  if constexpr (P == MSP_PRECISION_FX16)
    return msp_fx16_to_double(((const int16_t *)col)[t], __ldg(V.scales + j));
  if constexpr (P == MSP_PRECISION_CPMS2)
    return msp_cpms_read(col, rows, 2, V.bank_shift, t, V.segments);
  if constexpr (P == MSP_PRECISION_CPMS4)
    return msp_cpms_read(col, rows, 4, V.bank_shift, t, V.segments);
  return 0.0;
}

// Values per 8-byte load of a tile: 8 / bytes for the encodings stored value by value, 1 for
// f64 and CPMS (whose segments lie apart).
__host__ __device__ constexpr int tile_vec(msp_precision p) {
  return p == MSP_PRECISION_F32 || p == MSP_PRECISION_FX32                              ? 2
         : p == MSP_PRECISION_F16 || p == MSP_PRECISION_BF16 || p == MSP_PRECISION_FX16 ? 4
                                                                                        : 1;
}
// Values t .. t+VEC-1 of column j's tile (t a multiple of VEC) from one 8-byte load: half the
// shared-memory loads of f32 (a quarter of the 16-bit encodings) that tile_load would issue.
template <msp_precision P>
__device__ __forceinline__ void tile_load_vec(const bview &V, const unsigned char *col, int rows,
                                              int j, int t, double (&x)[tile_vec(P)]) {
  constexpr int VEC = tile_vec(P);
  if constexpr (VEC == 1) {
    x[0] = tile_load<P>(V, col, rows, j, t);
  } else {
    const uint2 u = *(const uint2 *)(col + (size_t)t * (8 / VEC));
    if constexpr (P == MSP_PRECISION_F32) {
      x[0] = (double)__uint_as_float(u.x);
      x[1] = (double)__uint_as_float(u.y);
    } else if constexpr (P == MSP_PRECISION_FX32) {
      const double sc = __ldg(V.scales + j);
      x[0] = msp_fx32_to_double((int32_t)u.x, sc);
      x[1] = msp_fx32_to_double((int32_t)u.y, sc);
    } else {
      const uint16_t hv[4] = {(uint16_t)(u.x & 0xffffu), (uint16_t)(u.x >> 16),
                              (uint16_t)(u.y & 0xffffu), (uint16_t)(u.y >> 16)};
      const double sc = P == MSP_PRECISION_FX16 ? __ldg(V.scales + j) : 0.0;
#pragma unroll
      for (int r = 0; r < 4; r++)
        x[r] = P == MSP_PRECISION_F16    ? msp_f16_to_double(hv[r])
               : P == MSP_PRECISION_BF16 ? msp_bf16_to_double(hv[r])
                                         : msp_fx16_to_double((int16_t)hv[r], sc);
    }
  }
}

template <msp_precision P, int C>
__global__ void __launch_bounds__(STAGE_THREADS)
    staged_subtract_project(const bview V, int j0, int cnt, const __grid_constant__ coefs<C> h,
                            double *__restrict__ w, int R, int64_t nb, double *__restrict__ partial,
                            bool ww) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int VEC = tile_vec(P);
  const int seg = R * V.vbytes; // bytes of one column's tile: a power of two, at least 64
  const int per_shift = __ffs(seg >> 4) - 1;          // 16-byte copies per column: 1 << per_shift
  double *wsh = (double *)(smem + (size_t)cnt * seg); // the tile's rows of the new w
  double *acc = wsh + R;                              // the block's sums, then w.w
  double *red = acc + MAXC + 1; // STAGE_THREADS: the projection's parts x nsum
  const int nsum = cnt + (ww ? 1 : 0);
  const int t = threadIdx.x;
  // The projection's threads: K column lanes by `parts` parts of the tile's rows, so that few
  // columns still keep every thread busy.
  const int parts = nsum > 256 ? 1 : nsum > 128 ? 2 : nsum > 64 ? 4 : 8;
  const int K = STAGE_THREADS / parts, part = t / K, span = (R + parts - 1) / parts;
  for (int k = t; k < nsum; k += STAGE_THREADS)
    acc[k] = 0.0;
  const int64_t b0 = (int64_t)blockIdx.x * PROJ_CHUNK;
  for (int t0 = 0; t0 < PROJ_CHUNK && b0 + t0 < V.n; t0 += R) {
    const int64_t r0 = b0 + t0;
    const int rows = V.n - r0 < R ? (int)(V.n - r0) : R;
    // Whole tiles copied, past n too: the column's padding (R divides COL_LD), never summed.
    const char *src = V.data + (size_t)j0 * V.col_bytes + (size_t)r0 * V.vbytes;
    for (int c = t; c < (cnt << per_shift); c += STAGE_THREADS) {
      const int k = c >> per_shift, q = c & ((1 << per_shift) - 1);
      cp_async16(smem + (size_t)k * seg + q * 16, src + (size_t)k * V.col_bytes + q * 16);
    }
    // The tile's rows of w into wsh with the columns (a load of w after the wait would stall
    // every tile on a round trip to memory); rows past n: zeros, as w ends at n.
    if (t < R / 2) {
      const int valid = rows - 2 * t; // rows of this 16-byte piece inside w
      if (valid >= 2) {
        cp_async16(wsh + 2 * t, w + r0 + 2 * t);
      } else {
        wsh[2 * t] = valid == 1 ? w[r0 + 2 * t] : 0.0;
        wsh[2 * t + 1] = 0.0;
      }
    }
    cp_async_wait_all();
    __syncthreads();
    // The subtraction (seq_sum): a thread per group of VEC rows (rows past n: garbage of the
    // padding, never written).
    if (t * VEC < rows) {
      double base[VEC], x[VEC];
#pragma unroll
      for (int r = 0; r < VEC; r++)
        base[r] = wsh[t * VEC + r];
      seq_sum(
          base, cnt, h,
          [&](int k, double(&y)[VEC]) {
            tile_load_vec<P>(V, smem + (size_t)k * seg, rows, j0 + k, t * VEC, y);
          },
          x);
#pragma unroll
      for (int r = 0; r < VEC; r++)
        if (t * VEC + r < rows) {
          w[r0 + t * VEC + r] = x[r];
          wsh[t * VEC + r] = x[r];
        }
    }
    __syncthreads();
    // Thread t sums rows lo..hi-1 of column k (k == cnt: w.w) in the order lo + (k + c) % len,
    // c = 0, 1, ...: at every step the lanes of a warp, on consecutive columns, read consecutive
    // rows (no bank conflict; starting every lane at lo instead made 55% of the shared-memory
    // wavefronts conflicts on the H100), and all lanes take the same number of steps.
    for (int k = t % K; k < nsum; k += K) {
      const int lo = part * span, hi = rows < lo + span ? rows : lo + span, len = hi - lo;
      double s = 0.0;
      if (len > 0 && k < cnt && len % VEC == 0) {
        // VEC rows per step (one load of the tile, wsh in 16-byte loads), groups in the same
        // skewed order
        const unsigned char *col = smem + (size_t)k * seg;
        const int lg = len / VEC, start = k % lg;
#pragma unroll 4
        for (int c = 0; c < lg; c++) {
          const int i = lo + (start + c < lg ? start + c : start + c - lg) * VEC;
          double x[VEC];
          tile_load_vec<P>(V, col, rows, j0 + k, i, x);
#pragma unroll
          for (int r = 0; r < VEC; r += 2) {
            if constexpr (VEC == 1) {
              s += x[0] * wsh[i];
            } else {
              const double2 w2 = *(const double2 *)(wsh + i + r);
              s += x[r] * w2.x;
              s += x[r + 1] * w2.y;
            }
          }
        }
      } else if (len > 0) {
        const int start = lo + k % len;
        if (k < cnt) {
          const unsigned char *col = smem + (size_t)k * seg;
#pragma unroll 8
          for (int c = 0; c < len; c++) {
            const int i = start + c < hi ? start + c : start + c - len;
            s += tile_load<P>(V, col, rows, j0 + k, i) * wsh[i];
          }
        } else {
          for (int c = 0; c < len; c++) {
            const int i = start + c < hi ? start + c : start + c - len;
            s += wsh[i] * wsh[i];
          }
        }
      }
      if (parts == 1)
        acc[k] += s;
      else
        red[part * nsum + k] = s;
    }
    if (parts > 1) { // the parts of each column in order
      __syncthreads();
      for (int k = t; k < nsum; k += STAGE_THREADS) {
        double s = red[k];
        for (int q = 1; q < parts; q++)
          s += red[q * nsum + k];
        acc[k] += s;
      }
    }
    __syncthreads(); // the tile and wsh are free for the next one
  }
  for (int k = t; k < nsum; k += STAGE_THREADS)
    partial[(int64_t)k * nb + blockIdx.x] = acc[k];
}

// Shared memory of a staged block of cnt columns in tiles of R rows.
static size_t stage_smem(const msp__basis *V, int cnt, int R) {
  return (size_t)cnt * (size_t)R * msp__prec_bytes(V->prec) +
         ((size_t)R + MAXC + 1 + STAGE_THREADS) * sizeof(double);
}

// Rows per tile of the staged kernel for cnt columns; 0 when no tile fits.
static int stage_rows(const msp__basis *V, int cnt) {
  const int group = msp__prec_segments(V->prec) > 1 ? 1 << V->bank_shift : 1;
  if (cnt < 1 || cnt > MAXC || group > 256) return 0;
  for (int R = 256; R >= 32 && R >= group; R >>= 1)
    if (stage_smem(V, cnt, R) <= STAGE_BUDGET) return R;
  const int R = group > 32 ? group : 32;
  return stage_smem(V, cnt, R) <= STAGE_LIMIT ? R : 0;
}

template <msp_precision P, int C>
static msp_status staged_launch(msp_context ctx, const msp__basis *V, int j0, int cnt,
                                const double *coef, int R, bool ww, double *w) {
  msp_status st = MSP_SUCCESS;
  const coefs<C> h = coefs_of<C>(coef, cnt, -1.0);
  const int64_t nb = V->nchunks;
  const size_t smem = stage_smem(V, cnt, R);
  MSP_CUDA_TRY(cudaFuncSetAttribute(staged_subtract_project<P, C>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  MSP_CUDA_TRY(cudaFuncSetAttribute(staged_subtract_project<P, C>,
                                    cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared));
  staged_subtract_project<P, C><<<(unsigned)nb, STAGE_THREADS, smem, msp__cuda(ctx)->stream>>>(
      view_of(V), j0, cnt, h, w, R, nb, V->work, ww);
  MSP_CUDA_CHECK_LAUNCH("staged_subtract_project");
exit:
  return st;
}

// ---- Jacobi: z = d .* x -------------------------------------------------------------------------
__global__ void __launch_bounds__(EW_THREADS)
    pmul_kernel(int64_t n, const double *__restrict__ d, const double *__restrict__ x,
                double *__restrict__ z) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    z[i] = x[i] * d[i];
}

// ---- slots --------------------------------------------------------------------------------------
static void basis_release(msp__basis *V) {
  if (!V) return;
  if (V->data) (void)cudaFree(V->data);
  if (V->scales) (void)cudaFree(V->scales);
  if (V->work) (void)cudaFree(V->work);
  if (V->host_h) (void)cudaFreeHost(V->host_h);
  (void)cudaGetLastError();
  msp__free(V);
}

// The workspace: (cols + 1) * nb projection partials (the columns and w.w; also the nb maxima of
// a fixed-point store), then the cols + 1 sums of one call.
extern "C" msp_status msp__cuda_basis_alloc(msp_context ctx, int64_t n, int cols,
                                            msp_precision prec, msp__basis **out) {
  msp_status st = MSP_SUCCESS;
  msp__basis *V = NULL;
  *out = NULL;
  const int64_t nb = proj_blocks(n) > 0 ? proj_blocks(n) : 1;
  const size_t bytes = msp__prec_bytes(prec);
  const size_t vals = (size_t)col_ld(n > 0 ? n : 1) * (size_t)cols;
  const size_t work = ((size_t)nb + 1) * ((size_t)cols + 1);
  MSP_TRY(MSP_ALLOC_ZERO(V, 1, "GMRES Krylov basis"));
  MSP_TRY(msp__basis_header(V, n, cols, prec));
  V->nchunks = nb;
  MSP_CUDA_TRY(cudaSetDevice(ctx->device));
  // Not zeroed: GMRES reads only the columns it has stored.
  MSP_CUDA_TRY(cudaMalloc(&V->data, vals * bytes));
  if (msp_prec_is_fixed(prec)) {
    MSP_CUDA_TRY(cudaMalloc((void **)&V->scales, (size_t)cols * sizeof(double)));
    MSP_CUDA_TRY(
        cudaMemsetAsync(V->scales, 0, (size_t)cols * sizeof(double), msp__cuda(ctx)->stream));
  }
  MSP_CUDA_TRY(cudaMalloc((void **)&V->work, work * sizeof(double)));
  MSP_CUDA_TRY(cudaMallocHost((void **)&V->host_h, ((size_t)cols + 1) * sizeof(double)));
  // The fused subtraction-projection (u asked) pays while its second read of the columns costs
  // no DRAM traffic: always in the staged kernel, up to the columns whose tile fits shared
  // memory (stage_rows); beyond, subtract_project_kernel's second read finds the columns in L2
  // only while the rows of its resident blocks stay there, so it is asked for up to FUSE_L2 L2
  // sizes of columns. Measured on the H100 (50 MB L2), GMRES per iteration with m = 100,
  // subtract_project_kernel at every size: 0.286 -> 0.257 ms (f64 basis) and 0.245 -> 0.196
  // (f32) on gen:poisson3d:64 (n = 262,144; up to 210 MB of columns), but 1.388 -> 1.520 ms on
  // gen:convdiff3d:128 (n = 2,097,152; up to 1.7 GB), the reason for the staged kernel.
  {
    const double col = (double)(n > 0 ? n : 1) * (double)bytes;
    const double fit = FUSE_L2 * (double)msp__cuda(ctx)->l2_bytes / col;
    int staged = cols < MAXC ? cols : MAXC;
    while (staged > 0 && stage_rows(V, staged) == 0)
      staged--;
    V->fuse_cols = fit >= (double)cols ? cols : (int)fit;
    if (staged > V->fuse_cols) V->fuse_cols = staged;
    V->stage_bytes = (double)msp__cuda(ctx)->l2_bytes;
  }
  *out = V;
  V = NULL;
exit:
  basis_release(V);
  return st;
}

extern "C" void msp__cuda_basis_free(msp_context ctx, msp__basis *V) {
  if (!V) return;
  // Work queued on the basis finishes before its memory goes (errors cannot be reported here).
  (void)cudaStreamSynchronize(msp__cuda(ctx)->stream);
  basis_release(V);
}

extern "C" msp_status msp__cuda_basis_store(msp_context ctx, msp__basis *V, int j, msp_vector w) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const bview b = view_of(V);
  double *d = (double *)w->d_data;
  if (V->n == 0) goto exit;
  if (msp_prec_is_fixed(V->prec)) {
    const int64_t nb = proj_blocks(V->n);
    absmax_partials<<<(unsigned)nb, PROJ_THREADS, 0, s>>>(V->n, d, V->work);
    MSP_CUDA_CHECK_LAUNCH("absmax_partials");
    absmax_scale<<<1, RED_THREADS, 0, s>>>(nb, V->work, V->prec, V->scales + j);
    MSP_CUDA_CHECK_LAUNCH("absmax_scale");
  }
  MSP_TRY(msp__prec_dispatch(V->prec, [&](auto pc) -> msp_status {
    msp_status st = MSP_SUCCESS;
    store_kernel<decltype(pc)::value><<<ew_blocks(ctx, V->n), EW_THREADS, 0, s>>>(b, j, d);
    MSP_CUDA_CHECK_LAUNCH("store_kernel");
  exit:
    return st;
  }));
exit:
  return st;
}

extern "C" msp_status msp__cuda_basis_project(msp_context ctx, const msp__basis *V, int j0, int j1,
                                              msp_vector w, double *h, double *ww) {
  msp_status st = MSP_SUCCESS;
  const bview b = view_of(V);
  const int cnt = j1 > j0 ? j1 - j0 : 0;
  const int64_t nb = V->nchunks;
  if (cnt == 0 && !ww) goto exit;
  if (V->n == 0) {
    for (int k = 0; k < cnt; k++)
      h[k] = 0.0;
    if (ww) *ww = 0.0;
    goto exit;
  }
  MSP_TRY(msp__prec_dispatch(V->prec, [&](auto pc) -> msp_status {
    msp_status st = MSP_SUCCESS;
    project_partials<decltype(pc)::value>
        <<<(unsigned)nb, PROJ_THREADS, 0, msp__cuda(ctx)->stream>>>(
            b, j0, j0 + cnt, (const double *)w->d_data, nb, V->work, ww != NULL);
    MSP_CUDA_CHECK_LAUNCH("project_partials");
  exit:
    return st;
  }));
  MSP_TRY(project_finish(ctx, V, cnt, h, ww));
exit:
  return st;
}

// Without u and ww, the subtraction alone (update: no synchronisation). Otherwise one fused pass
// (subtract_project_kernel) when the coefficients fit a launch; else the subtraction, then the
// projection.
extern "C" msp_status msp__cuda_basis_subtract(msp_context ctx, const msp__basis *V, int j0, int j1,
                                               const double *h, msp_vector w, double *u,
                                               double *ww) {
  msp_status st = MSP_SUCCESS;
  const int cnt = j1 > j0 ? j1 - j0 : 0;
  if (!u && !ww) return update(ctx, V, j0, j1, h, -1.0, false, w);
  if (V->n == 0 || cnt == 0 || cnt > MAXC) {
    MSP_TRY(update(ctx, V, j0, j1, h, -1.0, false, w));
    MSP_TRY(msp__cuda_basis_project(ctx, V, j0, u ? j1 : j0, w, u, ww));
    goto exit;
  }
  MSP_TRY(msp__prec_dispatch(V->prec, [&](auto pc) -> msp_status {
    constexpr msp_precision P = decltype(pc)::value;
    double *d = (double *)w->d_data;
    // Without u, one read of the columns anyway; with columns that fit L2,
    // subtract_project_kernel's second read is an L2 hit (and its projection the same bits as
    // basis_project's): the staged kernel where they do not.
    const double col = (double)V->n * (double)msp__prec_bytes(V->prec);
    const bool in_l2 = (double)cnt * col <= V->stage_bytes;
    const int R = u && !in_l2 ? stage_rows(V, cnt) : 0;
    if (R > 0)
      return cnt <= FEWC ? staged_launch<P, FEWC>(ctx, V, j0, cnt, h, R, ww != NULL, d)
                         : staged_launch<P, MAXC>(ctx, V, j0, cnt, h, R, ww != NULL, d);
    return cnt <= FEWC
               ? subtract_project_launch<P, FEWC>(ctx, V, j0, cnt, h, u != NULL, ww != NULL, d)
               : subtract_project_launch<P, MAXC>(ctx, V, j0, cnt, h, u != NULL, ww != NULL, d);
  }));
  MSP_TRY(project_finish(ctx, V, u ? cnt : 0, u, ww));
exit:
  return st;
}

extern "C" msp_status msp__cuda_basis_combine(msp_context ctx, const msp__basis *V, int k1,
                                              const double *y, msp_vector z) {
  return update(ctx, V, 0, k1, y, 1.0, true, z);
}

extern "C" msp_status msp__cuda_pmul(msp_context ctx, msp_vector d, msp_vector x, msp_vector z) {
  msp_status st = MSP_SUCCESS;
  if (x->n == 0) goto exit;
  pmul_kernel<<<ew_blocks(ctx, x->n), EW_THREADS, 0, msp__cuda(ctx)->stream>>>(
      x->n, (const double *)d->d_data, (const double *)x->d_data, (double *)z->d_data);
  MSP_CUDA_CHECK_LAUNCH("pmul_kernel");
exit:
  return st;
}

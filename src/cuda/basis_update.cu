// basis_update.cu: the CUDA basis's subtraction w -= V h (with, asked, the next projection V^T w
// and w.w from the same read of the columns) and combination z = V y, fp64 arithmetic over the
// stored values (the design: basis.cu).
#include "basis.cuh"

#include <math.h>

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
// partial sums over k mod 8, spread over 8 threads per row in the staged kernel, were faster there,
// but with an f32 basis the CPU and CUDA residual histories of GMRES then parted, and even with
// each product rounded as the CPU does a CUDA solve took one more iteration: tests/cuda_gmres.c.)
// EXACT: each product rounded and then added, the CPU's operations, for the combination: DCGS2's
// passes give the CPU's bits, and the combination is then the only difference left between a
// cycle's ends.
template <int VEC, int C, class LOAD, bool EXACT = false>
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
      t[r] = EXACT ? __dadd_rn(t[r], __dmul_rn(c, x[r])) : t[r] + c * x[r];
  }
}
// One row (v(k): its value in column k).
template <int C, bool EXACT = false, class LOAD>
__device__ __forceinline__ double seq_sum1(double base, int cnt, const coefs<C> &h, LOAD v) {
  const double b[1] = {base};
  double t[1];
  auto load = [&](int k, double(&x)[1]) { x[0] = v(k); };
  seq_sum<1, C, decltype(load), EXACT>(b, cnt, h, load, t);
  return t[0];
}

// w_i = (ZERO ? 0 : w_i) + sum over k < cnt of h.c[k] V_{j0+k}(i), as seq_sum (the subtraction
// passes -h; the combination is EXACT).
template <msp_precision P, int C, bool ZERO, bool EXACT>
__global__ void __launch_bounds__(EW_THREADS)
    update_kernel(const bview V, int j0, int cnt, const __grid_constant__ coefs<C> h,
                  double *__restrict__ w) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < V.n; i += stride)
    w[i] = seq_sum1<C, EXACT>(ZERO ? 0.0 : w[i], cnt, h,
                              [&](int k) { return col<P>(V, j0 + k).stream(i); });
}

// One launch over columns j0 .. j0+cnt-1 (cnt <= C) with coefficients sign * coef[0..cnt).
template <msp_precision P, int C>
static msp_status update_launch(msp_context ctx, const bview &b, int j0, int cnt,
                                const double *coef, double sign, bool zero, double *w) {
  msp_status st = MSP_SUCCESS;
  const coefs<C> h = coefs_of<C>(coef, cnt, sign);
  const unsigned g = ew_blocks(ctx, b.n);
  const cudaStream_t s = msp__cuda(ctx)->stream;
  if (sign > 0.0) { // the combination
    if (zero)
      update_kernel<P, C, true, true><<<g, EW_THREADS, 0, s>>>(b, j0, cnt, h, w);
    else
      update_kernel<P, C, false, true><<<g, EW_THREADS, 0, s>>>(b, j0, cnt, h, w);
  } else if (zero) {
    update_kernel<P, C, true, false><<<g, EW_THREADS, 0, s>>>(b, j0, cnt, h, w);
  } else {
    update_kernel<P, C, false, false><<<g, EW_THREADS, 0, s>>>(b, j0, cnt, h, w);
  }
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
// same bits on every run. It runs close to a plain subtraction's rate in f64; in f32 the rows
// wait on their chains of dependent adds (seq_sum), 32 threads a block at 64 rows. Versions
// tried and dropped, all slower: a warp per column with shuffles for the sums; every lane
// starting its column at the same row (bank conflicts); two buffers per block, the next tile's
// copies issued before the sums of this one, in half as tall tiles; the eight partial sums of
// seq_sum's note (docs/design.md, "Kernel choices and what was measured", has the rates).

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
    // rows (no bank conflict; starting every lane at lo instead made most shared-memory
    // wavefronts conflict), and all lanes take the same number of steps.
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
  const size_t smem = stage_smem(V, cnt, R); // at most STAGE_LIMIT (msp__cuda_basis_setup)
  staged_subtract_project<P, C><<<(unsigned)nb, STAGE_THREADS, smem, msp__cuda(ctx)->stream>>>(
      view_of(V), j0, cnt, h, w, R, nb, V->work, ww);
  MSP_CUDA_CHECK_LAUNCH("staged_subtract_project");
exit:
  return st;
}

// The fused subtraction-projection (u asked) pays while its second read of the columns costs no
// DRAM traffic: always in the staged kernel, up to the columns whose tile fits shared memory
// (stage_rows); beyond, subtract_project_kernel's second read finds the columns in L2 only while
// the rows of its resident blocks stay there, so it is asked for up to FUSE_L2 L2 sizes of
// columns. Used at every size, subtract_project_kernel made GMRES faster where the columns were
// a few L2 sizes but slower where they were many times L2, the reason for the staged kernel.
void msp__cuda_basis_setup(msp_context ctx, msp__basis *V) {
  const double col = (double)(V->n > 0 ? V->n : 1) * (double)msp__prec_bytes(V->prec);
  const double fit = FUSE_L2 * (double)msp__cuda(ctx)->l2_bytes / col;
  const int fused = fit >= (double)V->cols ? V->cols : (int)fit;
  // The staged kernels of V's precision may take up to STAGE_LIMIT of shared memory, allowed once
  // here rather than before every launch; a device that refuses it (less shared memory per block
  // than STAGE_LIMIT) runs without them.
  cudaError_t e = cudaSuccess;
  (void)msp__prec_dispatch(V->prec, [&](auto pc) -> msp_status {
    constexpr msp_precision P = decltype(pc)::value;
    const void *kernels[2] = {(const void *)staged_subtract_project<P, FEWC>,
                              (const void *)staged_subtract_project<P, MAXC>};
    for (int k = 0; k < 2 && e == cudaSuccess; k++) {
      e = cudaFuncSetAttribute(kernels[k], cudaFuncAttributeMaxDynamicSharedMemorySize,
                               STAGE_LIMIT);
      if (e == cudaSuccess)
        e = cudaFuncSetAttribute(kernels[k], cudaFuncAttributePreferredSharedMemoryCarveout,
                                 cudaSharedmemCarveoutMaxShared);
    }
    return MSP_SUCCESS;
  });
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    V->fuse_cols = fused;
    V->stage_bytes = HUGE_VAL;
    return;
  }
  int staged = V->cols < MAXC ? V->cols : MAXC;
  while (staged > 0 && stage_rows(V, staged) == 0)
    staged--;
  V->fuse_cols = staged > fused ? staged : fused;
  V->stage_bytes = (double)msp__cuda(ctx)->l2_bytes;
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
  MSP_TRY(msp__cuda_basis_finish(ctx, V, u ? cnt : 0, u, ww));
exit:
  return st;
}

extern "C" msp_status msp__cuda_basis_combine(msp_context ctx, const msp__basis *V, int k1,
                                              const double *y, msp_vector z) {
  return update(ctx, V, 0, k1, y, 1.0, true, z);
}

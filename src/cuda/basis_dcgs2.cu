// basis_dcgs2.cu: the CUDA basis's two passes of DCGS2 (src/solvers/gmres.c): the fused
// projection r = (V_<=j^T v_j, V_<=j^T w), one reduction, and the update that rewrites column j
// corrected and leaves w orthogonalised once as column j + 1; fp64 arithmetic over the stored
// values (the design of the basis: basis.cu).
//
// Pass 1 (dcgs2_partials): block b owns 256 R rows, R per thread (f64 2 rows, the others 4); the
// thread keeps its rows of v_j and w in registers and, for a group of 8 columns, its 16 products
// (8 columns x 2 vectors). The warp adds them with one transposed butterfly: 16 shuffles leave
// each lane pair with the warp's sum of one value (a tree per value takes 5 shuffles each). The
// warp sums of 4 groups are staged in shared memory between two barriers and added in warp order
// into one partial per value and block; a second kernel adds each value's partials in a fixed
// order, and the host gets all 2 j + 2 values with one copy: the iteration's only
// synchronisation. The kernel is kept to few registers so that 3 or 4 blocks share an SM: with
// 2, a block in its reduction left the SM's memory pipe idle. The row ranges depend on n and the
// format only: the same bits on every run and every GPU.
//
// Pass 2 (dcgs2_update): blocks of 256 R rows (R as in pass 1), each thread its R rows of column j
// and w; every
// column k < j is read once for both updates (column j's correction with s, w's projection with
// c), in order of k, an FMA each; the coefficients come through one asynchronous copy to the
// device (no synchronisation) and shared memory. Column j is rewritten (fixed point: with the
// bounding scale computed on the device from the scales and s, as the CPU does), and w, divided
// by r_jj, goes to column j + 1 as stored.
#include "basis.cuh"

#define DG 8 // columns per group of pass 1: 2 DG = 16 values, one per lane pair after the butterfly
#define DSUPER 4 // groups whose warp sums are staged in shared memory between two barriers
#define DTHREADS 256

// Bytes per value from MSP_PRECISION_LIST, at compile time.
static constexpr int dbytes(msp_precision p) {
#define MSP_DCGS2_BYTES_(name, tag, bytes) p == MSP_PRECISION_##name ? bytes:
  return MSP_PRECISION_LIST(MSP_DCGS2_BYTES_) 8;
#undef MSP_DCGS2_BYTES_
}
// Rows per thread: 16 bytes of each column (8 of a 16-bit one).
template <msp_precision P> struct drows { static constexpr int R = dbytes(P) >= 8 ? 2 : 4; };
// Rows per thread of pass 2: as pass 1's (8 rows of a 16-bit column ran slower than 4).
template <msp_precision P> struct urows { static constexpr int R = drows<P>::R; };

// One step of the transposed butterfly over LEN values across the lanes that differ in bit OFF:
// the lane keeps the half that its bit OFF selects, plus its partner's copy of that half.
template <int LEN, int OFF>
__device__ __forceinline__ void butterfly(double (&p)[2 * DG], int lane) {
  constexpr int H = LEN / 2;
  const bool up = (lane & OFF) != 0;
#pragma unroll
  for (int i = 0; i < H; i++) {
    const double send = up ? p[i] : p[i + H];
    const double keep = up ? p[i + H] : p[i];
    p[i] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
  }
}

template <msp_precision P, int R>
__global__ void __launch_bounds__(DTHREADS,
                                  R == 2 ? 4 : 3) // few registers: many warps hide latency
    dcgs2_partials(const bview V, int j, const double *__restrict__ w, int64_t nb,
                   double *__restrict__ part) {
  __shared__ double sh[DSUPER][DTHREADS / 32][2 * DG];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t base = (int64_t)blockIdx.x * (DTHREADS * R) + threadIdx.x;
  double q[R], wv[R];
  {
    const loader<P> lj = col<P>(V, j);
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int64_t i = base + (int64_t)r * DTHREADS;
      q[r] = i < V.n ? lj(i) : 0.0;
      wv[r] = w && i < V.n ? w[i] : 0.0;
    }
  }
  for (int s0 = 0; s0 <= j; s0 += DSUPER * DG) {
    for (int g = 0; g < DSUPER; g++) {
      const int g0 = s0 + g * DG;
      const int gn = j + 1 - g0 < DG ? j + 1 - g0 : DG; // may be <= 0: zeros
      double p[2 * DG];
#pragma unroll
      for (int c = 0; c < DG; c++) {
        p[2 * c] = 0.0;
        p[2 * c + 1] = 0.0;
        if (c < gn) {
          const loader<P> v = col<P>(V, g0 + c);
#pragma unroll
          for (int r = 0; r < R; r++) {
            const int64_t i = base + (int64_t)r * DTHREADS;
            if (i < V.n) {
              const double x = v.stream(i);
              p[2 * c] += x * q[r];
              p[2 * c + 1] += x * wv[r];
            }
          }
        }
      }
      // 16 values over 32 lanes: four halving steps leave lanes 2 v and 2 v + 1 with halves of
      // value v, which one more exchange adds (the same sum on both)
      butterfly<16, 16>(p, lane);
      butterfly<8, 8>(p, lane);
      butterfly<4, 4>(p, lane);
      butterfly<2, 2>(p, lane);
      p[0] += __shfl_xor_sync(0xffffffffu, p[0], 1);
      if (!(lane & 1)) sh[g][warp][lane >> 1] = p[0]; // value v: column g0 + v / 2, w if v odd
    }
    __syncthreads();
    if ((int)threadIdx.x < DSUPER * 2 * DG) {
      const int g = (int)threadIdx.x / (2 * DG), v = (int)threadIdx.x % (2 * DG);
      const int c = s0 + g * DG + v / 2;
      if (c <= j) {
        double t = 0.0;
#pragma unroll
        for (int wp = 0; wp < DTHREADS / 32; wp++)
          t += sh[g][wp][v];
        const int slot = (v & 1) ? j + 1 + c : c;
        if (w || !(v & 1)) part[(int64_t)slot * nb + blockIdx.x] = t;
      }
    }
    __syncthreads();
  }
}

// Block k: out[k] = the sum of partial[k * nb .. k * nb + nb) (thread-strided, then the tree).
__global__ void __launch_bounds__(RED_THREADS)
    dcgs2_final(int64_t nb, const double *__restrict__ partial, double *__restrict__ out) {
  const double *p = partial + (int64_t)blockIdx.x * nb;
  double s = 0.0;
  for (int64_t b = threadIdx.x; b < nb; b += RED_THREADS)
    s += p[b];
  s = block_reduce<false>(s);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// Fixed point: the scale of the rewritten column j from the old scales and s (in the CPU's order).
__global__ void dcgs2_scale(const double *__restrict__ scales, const double *__restrict__ s, int j,
                            double rjj, msp_precision p, double *__restrict__ out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  double bound = scales[j];
  for (int k = 0; k < j; k++) // each product rounded, as the CPU's (no contraction): its bits
    bound = __dadd_rn(bound, __dmul_rn(fabs(s[k]), scales[k]));
  *out = msp_fx_block_scale(p, bound * msp_prec_qmax(p) / rjj);
}

// coef: s[0..j) then c[0..j].
template <msp_precision P, int R>
__global__ void __launch_bounds__(DTHREADS)
    dcgs2_update(const bview V, int j, const double *__restrict__ coef, double rjj,
                 double *__restrict__ w, bool store, const double *__restrict__ newscale) {
  extern __shared__ double cs[];
  for (int t = threadIdx.x; t < 2 * j + 1; t += DTHREADS)
    cs[t] = coef[t];
  __syncthreads();
  const int64_t base = (int64_t)blockIdx.x * (DTHREADS * R) + threadIdx.x;
  double tq[R], tw[R];
  {
    const loader<P> lj = col<P>(V, j);
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int64_t i = base + (int64_t)r * DTHREADS;
      tq[r] = i < V.n ? lj(i) : 0.0;
      tw[r] = i < V.n ? w[i] : 0.0;
    }
  }
#pragma unroll 4
  for (int k = 0; k < j; k++) {
    const loader<P> v = col<P>(V, k);
    const double sk = cs[k], ck = cs[j + k];
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int64_t i = base + (int64_t)r * DTHREADS;
      if (i < V.n) {
        const double x = v.stream(i);
        tq[r] -= sk * x;
        tw[r] -= ck * x;
      }
    }
  }
  msp_acc aj = col_acc<P>(V, j);
  if (newscale) aj.scales = newscale;
  const msp_acc an = col_acc<P>(V, store ? j + 1 : j);
  const double cj = cs[2 * j];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int64_t i = base + (int64_t)r * DTHREADS;
    if (i < V.n) {
      msp_acc_store_p(P, &aj, i, tq[r] / rjj);
      const double qn = msp_acc_load_p(P, &aj, i);
      const double t = (tw[r] - cj * qn) / rjj;
      if (store) {
        msp_acc_store_p(P, &an, i, t);
        w[i] = msp_acc_load_p(P, &an, i);
      } else {
        w[i] = t;
      }
    }
  }
}

// The workspace of DCGS2 inside V->work (basis.cu sizes it): the partials [2 cols][nb], then the
// 2 cols sums, the 2 cols coefficients and the new scale.
static double *dcgs2_sums(const msp__basis *V) {
  return V->work + (size_t)V->nchunks * 2 * (size_t)V->cols;
}

extern "C" msp_status msp__cuda_basis_dcgs2_project(msp_context ctx, const msp__basis *V, int j,
                                                    msp_vector w, double *r) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const bview b = view_of(V);
  const int cnt = w ? 2 * j + 2 : j + 1;
  double *d_r = dcgs2_sums(V);
  if (V->n == 0) {
    for (int k = 0; k < cnt; k++)
      r[k] = 0.0;
    goto exit;
  }
  MSP_TRY(msp__prec_dispatch(V->prec, [&](auto pc) -> msp_status {
    msp_status st = MSP_SUCCESS;
    constexpr msp_precision P = decltype(pc)::value;
    constexpr int R = drows<P>::R;
    const int64_t nb = (V->n + DTHREADS * R - 1) / (DTHREADS * R);
    dcgs2_partials<P, R>
        <<<(unsigned)nb, DTHREADS, 0, s>>>(b, j, w ? (const double *)w->d_data : NULL, nb, V->work);
    MSP_CUDA_CHECK_LAUNCH("dcgs2_partials");
    // the sums in the slots' order: column dots 0..j, then (with w) w's j + 1
    dcgs2_final<<<(unsigned)cnt, RED_THREADS, 0, s>>>(nb, V->work, d_r);
    MSP_CUDA_CHECK_LAUNCH("dcgs2_final");
  exit:
    return st;
  }));
  MSP_CUDA_TRY(
      cudaMemcpyAsync(V->host_h, d_r, (size_t)cnt * sizeof(double), cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
  memcpy(r, V->host_h, (size_t)cnt * sizeof(double));
exit:
  return st;
}

extern "C" msp_status msp__cuda_basis_dcgs2_update(msp_context ctx, msp__basis *V, int j,
                                                   const double *sv, double rjj, const double *c,
                                                   msp_vector w, int store) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const bview b = view_of(V);
  double *d_coef = dcgs2_sums(V) + 2 * (size_t)V->cols;
  double *d_scale = d_coef + 2 * (size_t)V->cols;
  double *h_coef = V->host_h + 2 * (size_t)V->cols;
  const int fixed = msp_prec_is_fixed(V->prec);
  if (V->n == 0) goto exit;
  // the previous iteration's copy from h_coef finished before the projection's copy back, which
  // the host waited for: h_coef is free
  if (j > 0) memcpy(h_coef, sv, (size_t)j * sizeof(double));
  memcpy(h_coef + j, c, (size_t)(j + 1) * sizeof(double));
  MSP_CUDA_TRY(cudaMemcpyAsync(d_coef, h_coef, (size_t)(2 * j + 1) * sizeof(double),
                               cudaMemcpyHostToDevice, s));
  if (fixed) {
    dcgs2_scale<<<1, 32, 0, s>>>(V->scales, d_coef, j, rjj, V->prec, d_scale);
    MSP_CUDA_CHECK_LAUNCH("dcgs2_scale");
  }
  MSP_TRY(msp__prec_dispatch(V->prec, [&](auto pc) -> msp_status {
    msp_status st = MSP_SUCCESS;
    constexpr msp_precision P = decltype(pc)::value;
    constexpr int R = urows<P>::R;
    const int64_t nb = (V->n + DTHREADS * R - 1) / (DTHREADS * R);
    dcgs2_update<P, R><<<(unsigned)nb, DTHREADS, (size_t)(2 * j + 1) * sizeof(double), s>>>(
        b, j, d_coef, rjj, (double *)w->d_data, store != 0, fixed ? d_scale : NULL);
    MSP_CUDA_CHECK_LAUNCH("dcgs2_update");
  exit:
    return st;
  }));
  if (fixed)
    MSP_CUDA_TRY(
        cudaMemcpyAsync(V->scales + j, d_scale, sizeof(double), cudaMemcpyDeviceToDevice, s));
exit:
  return st;
}

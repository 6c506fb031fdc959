// basis_dcgs2.cu: the CUDA basis's two passes of DCGS2 (src/solvers/gmres_dcgs2.c): the fused
// projection r = (V_<=j^T v_j, V_<=j^T w), one reduction, and the update that rewrites column j
// corrected and leaves w orthogonalised once as column j + 1; fp64 arithmetic over the stored
// values (the design of the basis: basis.cu). Both passes give the CPU backend's bits
// (src/cpu/basis.c): a fixed-point basis rounds at a fixed position of its column's scale, so a
// last-bit difference of w moves a stored entry by a unit, and without a preconditioner that
// difference spreads over the following columns and the residual history.
//
// Pass 1 (dcgs2_partials): the rows fall into the CPU's reduction chunks of MSP__RED_CHUNK, a
// chunk into 8 blocks of DBLOCK = 512 rows, one per warp; lane l owns its block's rows l, l + 32,
// ... (DROWS = 16 of them), whose values of v_j and w it keeps in registers; a CUDA block of 64
// threads is two warps, and a system too small to fill the GPU also splits the column groups
// over blockIdx.y. For a group of 4 columns a thread forms its 8 sums (4 columns x 2 vectors) in
// row order, a fused multiply-add each (fma, as the C code writes it); the warp adds them with one
// transposed butterfly (9 shuffles for 8 values, in the tree that pairs lanes l and l + 16, then
// 8, 4, 2, 1) and writes one partial per value and warp, with no barrier. dcgs2_final adds each
// chunk's 8 warp sums in order and the chunks' sums pairwise, as msp__cpu_pairwise does, and the
// host gets all 2 j + 2 values with one copy: the iteration's only synchronisation. The f64 basis
// loads its values straight into registers (8 bytes a load). The narrow precisions (f32, f16,
// bf16, fx32, fx16; dcgs2_partials_staged) have the same lanes, sums and order, but each warp
// copies its block of every column in 16-byte pieces into its own shared memory, NSTAGE groups
// ahead (cp.async, no block barrier), and the lanes read their rows from there: loaded straight
// into registers, a lane's rows of a column are 32 values apart, so each load moved 2 or 4 bytes
// and the loads that registers could keep in flight held a half or a quarter of f64's bytes,
// which left those passes short of the memory's latency-bandwidth product.
//
// Pass 2 (dcgs2_update): blocks of 256 R rows, each thread its R rows of column j and w; every
// column k < j is read once for both updates (column j's correction with s, w's projection with
// c), in order of k, a fused multiply-add each (the CPU's operations); the coefficients come
// through one asynchronous copy to the device (no synchronisation) and shared memory. Column j is
// rewritten (fixed point: with the bounding scale computed on the device from the scales and s, as
// the CPU does), and w, divided by r_jj, goes to column j + 1 as stored. A row's updates are its
// own, so the narrow precisions (dcgs2_update_vec) give a thread the 4 or 8 rows of one 16-byte
// piece of every column and load several columns' pieces before their first use: one load per 16
// bytes where the 2-byte precisions spent one per value, and 128 bytes in flight per thread.
#include "basis.cuh"

#define DG 4 // columns per group of pass 1: 2 DG = 8 values, one per 4 lanes after the butterfly
#define DTHREADS 256 // threads of a pass-2 block
#define DLANES 256   // lanes of a chunk in pass 1: 8 warps, one per block of DBLOCK rows
#define DBLOCK 512   // rows of a warp in pass 1 (src/cpu/basis.c's DBLOCK)
#define PTHREADS 64  // threads of a pass-1 block: a chunk's warps over 4 blocks
#define NSTAGE 3     // groups of columns in a warp's shared memory in the staged pass 1
#define UTHREADS 128 // threads of a block of dcgs2_update_vec
#define UUNROLL 8    // columns whose 16-byte pieces a thread of dcgs2_update_vec loads together

#define DROWS (DBLOCK / 32) // rows per lane of pass 1
static_assert(DBLOCK * (DLANES / 32) == MSP__RED_CHUNK, "pass 1's warps cover the CPU's chunks");

// Bytes per value from MSP_PRECISION_LIST, at compile time.
static constexpr int dbytes(msp_precision p) {
#define MSP_DCGS2_BYTES_(name, tag, bytes) p == MSP_PRECISION_##name ? bytes:
  return MSP_PRECISION_LIST(MSP_DCGS2_BYTES_) 8;
#undef MSP_DCGS2_BYTES_
}
// Rows per thread of pass 2: 16 bytes of each column (8 of a 16-bit one; 8 rows of a 16-bit
// column ran slower than 4).
template <msp_precision P> struct urows { static constexpr int R = dbytes(P) >= 8 ? 2 : 4; };

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

// Column k's values as its loader streams them (the same bits), a fixed-point column's one scale
// read once per thread instead of once per value.
template <msp_precision P> struct colv {
  loader<P> l;
  double sc;
  __device__ __forceinline__ colv(const bview &V, int k) : l(col<P>(V, k)), sc(0.0) {
    if constexpr (P == MSP_PRECISION_FX32 || P == MSP_PRECISION_FX16) sc = __ldg(V.scales + k);
  }
  __device__ __forceinline__ double operator()(int64_t i) const {
    if constexpr (P == MSP_PRECISION_FX32)
      return (double)__ldcs((const int *)l.a.data + i) * sc;
    else if constexpr (P == MSP_PRECISION_FX16)
      return (double)__ldcs((const short *)l.a.data + i) * sc;
    else
      return l.stream(i);
  }
};

// The precisions stored value by value in 2 or 4 bytes: their passes read the columns in 16-byte
// pieces (dcgs2_partials_staged, dcgs2_update_vec).
template <msp_precision P> struct narrow {
  static constexpr bool value = P == MSP_PRECISION_F32 || P == MSP_PRECISION_F16 ||
                                P == MSP_PRECISION_BF16 || P == MSP_PRECISION_FX32 ||
                                P == MSP_PRECISION_FX16;
};
// A narrow value as the double that colv and the loaders give for it: a 4-byte one from its bits
// u, a 2-byte one from y, which holds it in bits 16 to 31 (the bits below are ignored); sc: a
// fixed-point column's scale. The 2-byte ones are built with integer operations and one fp64
// multiplication or subtraction instead of a conversion instruction: 64-bit conversions issue at
// a quarter of the rate of fp64 fused multiply-adds, and these passes convert a value per 2 bytes.
// f16 and bf16: the sign, exponent and fraction shifted to where a double's are (an all-ones
// exponent, Inf or NaN, made all ones in the double's too) give 2^-1008 (f16) or 2^-896 (bf16)
// times the value, subnormals included, so the multiplication by the power of two is exact;
// fx16: the integer q as the double 2^52 + 2^15 + q, less 2^52 + 2^15. Every finite value and
// the infinities get the conversions' bits, NaN stays NaN (checked on all 65536 patterns).
template <msp_precision P> __device__ __forceinline__ double decode(unsigned u, double sc) {
  if constexpr (P == MSP_PRECISION_F32) return (double)__uint_as_float(u);
  if constexpr (P == MSP_PRECISION_FX32) return (double)(int)u * sc;
  return 0.0;
}
template <msp_precision P> __device__ __forceinline__ double decode16(unsigned y, double sc) {
  if constexpr (P == MSP_PRECISION_F16) {
    const unsigned h = (unsigned)((int)y >> 6) & 0x81fffc00u;
    const unsigned c = (h + 0x00100000u) & 0x02000000u; // exponent 31: 0x7e000000 more
    return __hiloint2double((int)(c * 63u + h), 0) * 0x1p1008;
  }
  if constexpr (P == MSP_PRECISION_BF16) {
    const unsigned h = (unsigned)((int)y >> 3) & 0x8fffe000u;
    const unsigned c = (h + 0x00100000u) & 0x10000000u; // exponent 255: 0x70000000 more
    return __hiloint2double((int)(c * 7u + h), 0) * 0x1p896;
  }
  if constexpr (P == MSP_PRECISION_FX16)
    return (__hiloint2double(0x43300000, (int)((y ^ 0x80000000u) >> 16)) -
            __hiloint2double(0x43300000, 0x8000)) *
           sc;
  return 0.0;
}
// Value r of a 16-byte piece of a narrow column.
template <msp_precision P>
__device__ __forceinline__ double piece_value(const uint4 &u, int r, double sc) {
  const unsigned wd = (r * dbytes(P) / 4) == 0   ? u.x
                      : (r * dbytes(P) / 4) == 1 ? u.y
                      : (r * dbytes(P) / 4) == 2 ? u.z
                                                 : u.w;
  if constexpr (dbytes(P) == 4) return decode<P>(wd, sc);
  return decode16<P>((r & 1) ? wd : wd << 16, sc);
}

// Pass 1's start, in both kernels: the warp's chunk and block, and the lane's rows of column j
// and w (0 past n).
struct p1rows {
  int64_t base;  // the lane's first row
  int64_t wslot; // the warp's partial slot
  bool full;     // no row of the chunk past n
};
__device__ __forceinline__ p1rows p1_rows(const bview &V) {
  const int64_t chunk = blockIdx.x / (DLANES / PTHREADS);
  const int lc = (int)(blockIdx.x % (DLANES / PTHREADS)) * PTHREADS + (int)threadIdx.x;
  // warp lc / 32 of the chunk owns its block of DBLOCK rows, lane l its rows l, l + 32, ...
  p1rows r;
  r.base = chunk * MSP__RED_CHUNK + (int64_t)(lc >> 5) * DBLOCK + (lc & 31);
  r.wslot = chunk * (DLANES / 32) + (lc >> 5);
  r.full = (chunk + 1) * MSP__RED_CHUNK <= V.n;
  return r;
}
template <msp_precision P>
__device__ __forceinline__ void p1_load(const bview &V, int j, const double *__restrict__ w,
                                        const p1rows &pr, double (&q)[DROWS], double (&wv)[DROWS]) {
  const loader<P> lj = col<P>(V, j);
#pragma unroll
  for (int r = 0; r < DROWS; r++) {
    const int64_t i = pr.base + (int64_t)r * 32;
    q[r] = pr.full || i < V.n ? lj(i) : 0.0;
    wv[r] = w && (pr.full || i < V.n) ? w[i] : 0.0;
  }
}
// Pass 1's end of a group: the 8 sums of every lane added over the warp and written.
__device__ __forceinline__ void p1_group_out(double (&p)[2 * DG], int lane, int g0, int j, bool hw,
                                             const p1rows &pr, int64_t nw,
                                             double *__restrict__ part) {
  // 8 values over 32 lanes: three halving steps leave lanes 4 v .. 4 v + 3 with quarters of
  // value v, which two more exchanges add (the same sum on all four)
  butterfly<8, 16>(p, lane);
  butterfly<4, 8>(p, lane);
  butterfly<2, 4>(p, lane);
  p[0] = __dadd_rn(p[0], __shfl_xor_sync(0xffffffffu, p[0], 2));
  p[0] = __dadd_rn(p[0], __shfl_xor_sync(0xffffffffu, p[0], 1));
  const int v = lane >> 2, c = g0 + v / 2; // value v: column g0 + v / 2, w if v odd
  if (!(lane & 3) && c <= j && (hw || !(v & 1)))
    part[(int64_t)((v & 1) ? j + 1 + c : c) * nw + pr.wslot] = p[0];
}

template <msp_precision P>
__global__ void __launch_bounds__(PTHREADS)
    dcgs2_partials(const bview V, int j, const double *__restrict__ w, int64_t nw, int gslice,
                   double *__restrict__ part) {
  const int lane = threadIdx.x & 31;
  const p1rows pr = p1_rows(V);
  const int64_t base = pr.base;
  const bool full = pr.full;
  double q[DROWS], wv[DROWS];
  p1_load<P>(V, j, w, pr, q, wv);
  // this block's slice of the column groups (blockIdx.y): every value is one warp's alone
  const int gbeg = (int)blockIdx.y * gslice * DG, gend = gbeg + gslice * DG;
  for (int g0 = gbeg; g0 <= j && g0 < gend; g0 += DG) {
    const int gn = j + 1 - g0 < DG ? j + 1 - g0 : DG;
    double p[2 * DG];
#pragma unroll
    for (int c = 0; c < DG; c++) {
      p[2 * c] = 0.0;
      p[2 * c + 1] = 0.0;
      if (c < gn) {
        const colv<P> v(V, g0 + c);
#pragma unroll
        for (int r = 0; r < DROWS; r++) {
          const int64_t i = base + (int64_t)r * 32;
          if (full || i < V.n) {
            const double x = v(i);
            p[2 * c] = fma(x, q[r], p[2 * c]);
            p[2 * c + 1] = fma(x, wv[r], p[2 * c + 1]);
          }
        }
      }
    }
    p1_group_out(p, lane, g0, j, w != NULL, pr, nw, part);
  }
}

// Pass 1 for the narrow precisions: the same lanes, rows, sums and order as dcgs2_partials, but
// each warp copies its DBLOCK rows of a group's DG columns into its own shared memory in 16-byte
// pieces (cp.async), NSTAGE groups deep, and every lane then reads its rows from there.
template <msp_precision P>
__global__ void __launch_bounds__(PTHREADS)
    dcgs2_partials_staged(const bview V, int j, const double *__restrict__ w, int64_t nw,
                          int gslice, double *__restrict__ part) {
  constexpr int VB = dbytes(P), SEG = DBLOCK * VB, STAGE = DG * SEG;
  extern __shared__ __align__(16) unsigned char dsm[];
  unsigned char *buf = dsm + (size_t)(threadIdx.x >> 5) * (NSTAGE * STAGE);
  const int lane = threadIdx.x & 31;
  const p1rows pr = p1_rows(V);
  const int64_t base = pr.base, row0 = base - lane;
  const bool full = pr.full;
  // bytes of the warp's block inside a column's allocation (col_ld: whole pieces; rows past n
  // are copied from the padding and never summed)
  const int64_t avail = (int64_t)V.col_bytes - row0 * VB;
  const int gbeg = (int)blockIdx.y * gslice * DG, gend = gbeg + gslice * DG;
  const int glast = j < gend - 1 ? j : gend - 1;
  const int ng = gbeg <= glast ? (glast - gbeg) / DG + 1 : 0; // groups of this slice
  // Group gi's copies into stage gi % NSTAGE, closed as one cp.async group (empty past ng, so
  // that every wait counts the same groups).
  auto issue = [&](int gi) {
    if (gi < ng) {
      const int g0 = gbeg + gi * DG;
      unsigned char *dst = buf + (gi % NSTAGE) * STAGE;
#pragma unroll
      for (int c = 0; c < DG; c++)
        if (g0 + c <= j) {
          const char *src = V.data + (size_t)(g0 + c) * V.col_bytes + (size_t)row0 * VB;
#pragma unroll
          for (int pc = lane; pc < SEG / 16; pc += 32)
            if ((int64_t)pc * 16 < avail) cp_async16(dst + c * SEG + pc * 16, src + pc * 16);
        }
    }
    cp_async_commit();
  };
#pragma unroll
  for (int gi = 0; gi < NSTAGE - 1; gi++)
    issue(gi);
  double q[DROWS], wv[DROWS];
  p1_load<P>(V, j, w, pr, q, wv); // under the first copies
  for (int gi = 0; gi < ng; gi++) {
    __syncwarp(); // every lane is done with the stage that group gi + NSTAGE - 1 refills
    issue(gi + NSTAGE - 1);
    cp_async_wait<NSTAGE - 1>(); // this lane's copies of group gi have landed
    __syncwarp();                // and every lane's
    const int g0 = gbeg + gi * DG, gn = j + 1 - g0 < DG ? j + 1 - g0 : DG;
    const unsigned char *st = buf + (gi % NSTAGE) * STAGE;
    double p[2 * DG];
#pragma unroll
    for (int c = 0; c < DG; c++) {
      p[2 * c] = 0.0;
      p[2 * c + 1] = 0.0;
      if (c < gn) {
        const double sc =
            P == MSP_PRECISION_FX32 || P == MSP_PRECISION_FX16 ? __ldg(V.scales + g0 + c) : 0.0;
        const unsigned char *cb = st + c * SEG + lane * VB;
#pragma unroll
        for (int r = 0; r < DROWS; r++) {
          const int64_t i = base + (int64_t)r * 32;
          if (full || i < V.n) {
            const double x =
                VB == 4 ? decode<P>(*(const unsigned *)(cb + r * 32 * VB), sc)
                        : decode16<P>((unsigned)*(const uint16_t *)(cb + r * 32 * VB) << 16, sc);
            p[2 * c] = fma(x, q[r], p[2 * c]);
            p[2 * c + 1] = fma(x, wv[r], p[2 * c + 1]);
          }
        }
      }
    }
    p1_group_out(p, lane, g0, j, w != NULL, pr, nw, part);
  }
  cp_async_wait_all(); // nothing left in flight (the copies past ng are empty groups)
}
// Shared memory of a staged pass-1 block.
template <msp_precision P> static constexpr size_t staged_smem() {
  return (size_t)(PTHREADS / 32) * NSTAGE * DG * DBLOCK * dbytes(P);
}

// Block k: out[k] from the warp sums partial[k * nw .. k * nw + nw): each chunk's 8 in order,
// then the chunks' sums pairwise, as msp__cpu_pairwise (a[i] += a[i + w] for i a multiple of
// 2 w, w = 1, 2, 4, ...); in shared memory, or in place (a chunk's sum in its first warp's slot)
// where they do not fit it.
#define FINAL_SMEM 4096
__global__ void __launch_bounds__(RED_THREADS)
    dcgs2_final(int64_t nw, double *__restrict__ partial, double *__restrict__ out) {
  __shared__ double sp[FINAL_SMEM];
  constexpr int W = DLANES / 32;
  const int64_t nc = nw / W;
  double *p = partial + (int64_t)blockIdx.x * nw;
  const bool in_smem = nc <= FINAL_SMEM;
  const int64_t st = in_smem ? 1 : W; // a chunk's sum at a[c * st]
  double *a = in_smem ? sp : p;
  for (int64_t c = threadIdx.x; c < nc; c += RED_THREADS) {
    double t = 0.0;
#pragma unroll
    for (int k = 0; k < W; k++)
      t = __dadd_rn(t, p[c * W + k]);
    a[c * st] = t;
  }
  __syncthreads();
  for (int64_t w = 1; w < nc; w *= 2) {
    for (int64_t i = 2 * w * threadIdx.x; i + w < nc; i += 2 * w * RED_THREADS)
      a[i * st] = __dadd_rn(a[i * st], a[(i + w) * st]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = nc > 0 ? a[0] : 0.0;
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
    const colv<P> v(V, k);
    const double sk = cs[k], ck = cs[j + k];
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int64_t i = base + (int64_t)r * DTHREADS;
      if (i < V.n) {
        const double x = v(i);
        tq[r] = fma(-sk, x, tq[r]);
        tw[r] = fma(-ck, x, tw[r]);
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
      msp_acc_store_p(P, &aj, i, __ddiv_rn(tq[r], rjj));
      const double qn = msp_acc_load_p(P, &aj, i);
      const double t = __ddiv_rn(__dsub_rn(tw[r], __dmul_rn(cj, qn)), rjj);
      if (store) {
        msp_acc_store_p(P, &an, i, t);
        w[i] = msp_acc_load_p(P, &an, i);
      } else {
        w[i] = t;
      }
    }
  }
}

// Pass 2 for the narrow precisions: thread t owns the 16 / bytes consecutive rows of one 16-byte
// piece of every column, loads U columns' pieces before their first use, and does for each
// row what dcgs2_update does, in the same order (each row's updates are its own: the same bits).
template <msp_precision P, int R = 16 / dbytes(P), int U = UUNROLL>
__global__ void __launch_bounds__(UTHREADS)
    dcgs2_update_vec(const bview V, int j, const double *__restrict__ coef, double rjj,
                     double *__restrict__ w, bool store, const double *__restrict__ newscale) {
  constexpr bool FX = P == MSP_PRECISION_FX32 || P == MSP_PRECISION_FX16;
  extern __shared__ double cs[];
  for (int t = threadIdx.x; t < 2 * j + 1; t += UTHREADS)
    cs[t] = coef[t];
  __syncthreads();
  const int64_t base = ((int64_t)blockIdx.x * UTHREADS + threadIdx.x) * R;
  if (base >= V.n) return;
  const bool full = base + R <= V.n;
  double tq[R], tw[R];
  {
    const loader<P> lj = col<P>(V, j);
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int64_t i = base + r;
      tq[r] = full || i < V.n ? lj(i) : 0.0;
      tw[r] = full || i < V.n ? w[i] : 0.0;
    }
  }
  if (full) {
    const char *c0 = V.data + (size_t)base * dbytes(P); // 16-byte aligned: col_ld
    int k = 0;
    for (; k + U <= j; k += U) {
      uint4 u[U];
#pragma unroll
      for (int a = 0; a < U; a++)
        u[a] = __ldcs((const uint4 *)(c0 + (size_t)(k + a) * V.col_bytes));
#pragma unroll
      for (int a = 0; a < U; a++) {
        const double sk = cs[k + a], ck = cs[j + k + a];
        const double sc = FX ? __ldg(V.scales + k + a) : 0.0;
#pragma unroll
        for (int r = 0; r < R; r++) {
          const double x = piece_value<P>(u[a], r, sc);
          tq[r] = fma(-sk, x, tq[r]);
          tw[r] = fma(-ck, x, tw[r]);
        }
      }
    }
    for (; k < j; k++) {
      const uint4 u = __ldcs((const uint4 *)(c0 + (size_t)k * V.col_bytes));
      const double sk = cs[k], ck = cs[j + k];
      const double sc = FX ? __ldg(V.scales + k) : 0.0;
#pragma unroll
      for (int r = 0; r < R; r++) {
        const double x = piece_value<P>(u, r, sc);
        tq[r] = fma(-sk, x, tq[r]);
        tw[r] = fma(-ck, x, tw[r]);
      }
    }
  } else {
    for (int k = 0; k < j; k++) {
      const colv<P> v(V, k);
      const double sk = cs[k], ck = cs[j + k];
#pragma unroll
      for (int r = 0; r < R; r++) {
        const int64_t i = base + r;
        if (i < V.n) {
          const double x = v(i);
          tq[r] = fma(-sk, x, tq[r]);
          tw[r] = fma(-ck, x, tw[r]);
        }
      }
    }
  }
  msp_acc aj = col_acc<P>(V, j);
  if (newscale) aj.scales = newscale;
  const msp_acc an = col_acc<P>(V, store ? j + 1 : j);
  const double cj = cs[2 * j];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int64_t i = base + r;
    if (i < V.n) {
      msp_acc_store_p(P, &aj, i, __ddiv_rn(tq[r], rjj));
      const double qn = msp_acc_load_p(P, &aj, i);
      const double t = __ddiv_rn(__dsub_rn(tw[r], __dmul_rn(cj, qn)), rjj);
      if (store) {
        msp_acc_store_p(P, &an, i, t);
        w[i] = msp_acc_load_p(P, &an, i);
      } else {
        w[i] = t;
      }
    }
  }
}

// The workspace of DCGS2 inside V->work (basis.cu sizes it): the partials [2 cols][nw], then the
// 2 cols sums, the 2 cols coefficients and the new scale.
static double *dcgs2_sums(const msp__basis *V) {
  return V->work + (size_t)dcgs2_warps(V->n > 0 ? V->n : 1) * 2 * (size_t)V->cols;
}

// The projection's sums left on the device (*out, valid until V's next operation; NULL when V
// has no rows: the sums are 0), enqueued with no wait: the distributed layer reduces them over
// the ranks on the device.
extern "C" msp_status msp__cuda_basis_dcgs2_sums(msp_context ctx, const msp__basis *V, int j,
                                                 msp_vector w, const double **out) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const bview b = view_of(V);
  const int cnt = w ? 2 * j + 2 : j + 1;
  double *d_r = dcgs2_sums(V);
  *out = NULL;
  if (V->n == 0) goto exit;
  MSP_TRY(msp__prec_dispatch(V->prec, [&](auto pc) -> msp_status {
    msp_status st = MSP_SUCCESS;
    constexpr msp_precision P = decltype(pc)::value;
    const int64_t nc = (V->n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK, nw = dcgs2_warps(V->n);
    static_assert(DLANES / 32 == 8, "dcgs2_warps: 8 warps per chunk");
    // a system too small to give every SM 32 warps of rows splits the column groups over
    // blockIdx.y as well (the same bits: each value is still one warp's sum)
    // (the staged kernel keeps fewer warps resident, each with its copies in flight: 16 per SM
    // fill it, and every further slice reads w and column j again)
    const int groups = (j + DG) / DG;
    const int64_t want = (int64_t)msp__cuda(ctx)->sm_count * (narrow<P>::value ? 16 : 32);
    int slices = nw >= want ? 1 : (int)((want + nw - 1) / nw);
    if (slices > groups) slices = groups;
    const int gslice = (groups + slices - 1) / slices;
    slices = (groups + gslice - 1) / gslice;
    const dim3 grid((unsigned)(nc * (DLANES / PTHREADS)), (unsigned)slices);
    const double *wd = w ? (const double *)w->d_data : NULL;
    if constexpr (narrow<P>::value) {
      static_assert(staged_smem<P>() <= 48 * 1024, "within the default shared-memory limit");
      dcgs2_partials_staged<P>
          <<<grid, PTHREADS, staged_smem<P>(), s>>>(b, j, wd, nw, gslice, V->work);
      MSP_CUDA_CHECK_LAUNCH("dcgs2_partials_staged");
    } else {
      dcgs2_partials<P><<<grid, PTHREADS, 0, s>>>(b, j, wd, nw, gslice, V->work);
      MSP_CUDA_CHECK_LAUNCH("dcgs2_partials");
    }
    // the sums in the slots' order: column dots 0..j, then (with w) w's j + 1
    dcgs2_final<<<(unsigned)cnt, RED_THREADS, 0, s>>>(nw, V->work, d_r);
    MSP_CUDA_CHECK_LAUNCH("dcgs2_final");
  exit:
    return st;
  }));
  *out = d_r;
exit:
  return st;
}

extern "C" msp_status msp__cuda_basis_dcgs2_project(msp_context ctx, const msp__basis *V, int j,
                                                    msp_vector w, double *r) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int cnt = w ? 2 * j + 2 : j + 1;
  const double *d_r = NULL;
  MSP_TRY(msp__cuda_basis_dcgs2_sums(ctx, V, j, w, &d_r));
  if (!d_r) {
    for (int k = 0; k < cnt; k++)
      r[k] = 0.0;
    goto exit;
  }
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
    const size_t smem = (size_t)(2 * j + 1) * sizeof(double);
    if constexpr (narrow<P>::value) {
      constexpr int64_t rows = (int64_t)UTHREADS * (16 / dbytes(P)); // a block's
      const int64_t nb = (V->n + rows - 1) / rows;
      dcgs2_update_vec<P><<<(unsigned)nb, UTHREADS, smem, s>>>(
          b, j, d_coef, rjj, (double *)w->d_data, store != 0, fixed ? d_scale : NULL);
      MSP_CUDA_CHECK_LAUNCH("dcgs2_update_vec");
    } else {
      constexpr int R = urows<P>::R;
      const int64_t nb = (V->n + DTHREADS * R - 1) / (DTHREADS * R);
      dcgs2_update<P, R><<<(unsigned)nb, DTHREADS, smem, s>>>(
          b, j, d_coef, rjj, (double *)w->d_data, store != 0, fixed ? d_scale : NULL);
      MSP_CUDA_CHECK_LAUNCH("dcgs2_update");
    }
  exit:
    return st;
  }));
  if (fixed)
    MSP_CUDA_TRY(
        cudaMemcpyAsync(V->scales + j, d_scale, sizeof(double), cudaMemcpyDeviceToDevice, s));
exit:
  return st;
}

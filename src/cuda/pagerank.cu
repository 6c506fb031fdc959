// pagerank.cu: the CUDA power iteration of PageRank (msp__backend.pr_step), one kernel template
// over the rank vectors' storage precision (f64, cpms2, cpms4) and the lanes per node.
//
// The pull form gathers q = p ./ outdeg over the rows of G^T, VS lanes per node (VS from the
// mean in-degree), read through loader<P> (CPMS: only the segments read). Nodes with more than
// LONG_ROW in-edges (the hubs of power-law graphs) are summed first by a block each, so no warp
// waits on a hub. Each node's update writes p_k and q_k in full and adds to three sums (change,
// dangling mass, total) that are reduced in a fixed order: block b covers nodes [b BLOCK_ROWS,
// (b + 1) BLOCK_ROWS) (a partition that depends on n only), then one block adds the partials.
// The same bits on every run and every GPU. A lane group takes two nodes at a time (rows g and
// g + groups of the block), so each lane has two gathers in flight.
#include "access.cuh"

#include <string.h>

#define PR_THREADS 256
#define BLOCK_ROWS 2048 // nodes per CUDA block
#define LONG_ROW 1024   // longer rows are summed by a block each (pr_long)

typedef struct {
  int64_t *rowptr;
  int32_t *colind, *outdeg;
  int32_t *longrows; // nodes with more than LONG_ROW in-edges, increasing
  int64_t nlong;
  double *ylong; // alpha * their sums
  double *part;  // 3 partial sums per block
  int64_t nblocks;
  double *sums; // 3 results
  int vs;       // lanes per node
} cuda_pr;

// Fixed-order sum over the block (shuffle tree per warp, then warp 0); thread 0 gets it.
__device__ __forceinline__ double pr_block_sum(double s, double *sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    s += __shfl_down_sync(0xffffffffu, s, off);
  __syncthreads(); // sh may still be read by a previous call
  if (lane == 0) sh[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < PR_THREADS / 32 ? sh[lane] : 0.0;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
      s += __shfl_down_sync(0xffffffffu, s, off);
  }
  return s;
}

// One block per hub: ylong[b] = alpha * sum of q over the in-edges of longrows[b].
template <msp_precision P>
__global__ void __launch_bounds__(PR_THREADS)
    pr_long(const int64_t *__restrict__ rp, const int32_t *__restrict__ ci,
            const int32_t *__restrict__ longrows, const loader<P> q, double alpha,
            double *__restrict__ ylong) {
  __shared__ double sh[PR_THREADS / 32];
  const int32_t i = longrows[blockIdx.x];
  double s = 0.0;
  for (int64_t k = rp[i] + threadIdx.x; k < rp[i + 1]; k += PR_THREADS)
    s += q(__ldcs(ci + k));
  s = pr_block_sum(s, sh);
  if (threadIdx.x == 0) ylong[blockIdx.x] = alpha * s;
}

struct pr_kargs {
  const int64_t *rp;
  const int32_t *ci, *deg, *longrows;
  int64_t nlong;
  const double *ylong, *y, *v;
  double alpha, c, vconst;
  int64_t n, nblocks;
  double *part;
};

// The update of node i (lane 0 of its group): p_k, q_k and the three sums.
template <msp_precision P>
__device__ __forceinline__ void pr_update(const pr_kargs &a, const loader<P> &p, const msp_acc &pn,
                                          const msp_acc &qn, bool want_q, int64_t i, double s,
                                          double &gam, double &dang, double &tot) {
  const double x = s + a.c * (a.v ? a.v[i] : a.vconst);
  const double old = p(i);
  const int32_t d = a.deg[i];
  msp_acc_store_p(P, &pn, i, x);
  if (want_q) msp_acc_store_p(P, &qn, i, d ? x / (double)d : 0.0);
  gam += fabs(x - old);
  if (!d) dang += x;
  tot += x;
}

__device__ __forceinline__ double pr_hub(const pr_kargs &a, int64_t i) {
  int64_t lo = 0, hi = a.nlong - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (a.longrows[mid] < i)
      lo = mid + 1;
    else
      hi = mid;
  }
  return a.ylong[lo];
}

template <msp_precision P, int VS, bool PULL>
__global__ void __launch_bounds__(PR_THREADS)
    pr_main(const pr_kargs a, const loader<P> q, const loader<P> p, const msp_acc pn,
            const msp_acc qn, bool want_q) {
  __shared__ double sh[PR_THREADS / 32];
  constexpr int GROUPS = PR_THREADS / VS;
  const int lane = threadIdx.x % VS;
  const int64_t r0 = (int64_t)blockIdx.x * BLOCK_ROWS;
  const int64_t r1 = r0 + BLOCK_ROWS < a.n ? r0 + BLOCK_ROWS : a.n;
  double gam = 0.0, dang = 0.0, tot = 0.0;
  // the same trip count for every thread of the block: every lane reaches the shuffles
  for (int64_t t = r0; t < r1; t += 2 * GROUPS) {
    const int64_t i0 = t + threadIdx.x / VS, i1 = i0 + GROUPS;
    double s0 = 0.0, s1 = 0.0;
    if (PULL) {
      int64_t b0 = 0, l0 = 0, b1 = 0, l1 = 0;
      if (i0 < r1) {
        b0 = a.rp[i0];
        l0 = a.rp[i0 + 1] - b0;
      }
      if (i1 < r1) {
        b1 = a.rp[i1];
        l1 = a.rp[i1 + 1] - b1;
      }
      const bool h0 = l0 > LONG_ROW, h1 = l1 > LONG_ROW;
      if (h0) l0 = 0;
      if (h1) l1 = 0;
      const int64_t longest = l0 > l1 ? l0 : l1;
      for (int64_t k = lane; k < longest; k += VS) {
        const double g0 = k < l0 ? q(__ldcs(a.ci + b0 + k)) : 0.0;
        const double g1 = k < l1 ? q(__ldcs(a.ci + b1 + k)) : 0.0;
        s0 += g0;
        s1 += g1;
      }
#pragma unroll
      for (int off = VS / 2; off > 0; off >>= 1) {
        s0 += __shfl_xor_sync(0xffffffffu, s0, off, VS);
        s1 += __shfl_xor_sync(0xffffffffu, s1, off, VS);
      }
      s0 = h0 ? pr_hub(a, i0) : a.alpha * s0;
      s1 = h1 ? pr_hub(a, i1) : a.alpha * s1;
    } else {
      if (i0 < r1) s0 = a.y[i0];
      if (i1 < r1) s1 = a.y[i1];
    }
    if (lane == 0) {
      if (i0 < r1) pr_update<P>(a, p, pn, qn, want_q, i0, s0, gam, dang, tot);
      if (i1 < r1) pr_update<P>(a, p, pn, qn, want_q, i1, s1, gam, dang, tot);
    }
  }
  gam = pr_block_sum(gam, sh);
  dang = pr_block_sum(dang, sh);
  tot = pr_block_sum(tot, sh);
  if (threadIdx.x == 0) {
    a.part[blockIdx.x] = gam;
    a.part[a.nblocks + blockIdx.x] = dang;
    a.part[2 * a.nblocks + blockIdx.x] = tot;
  }
}

// One block: sums[r] = the sum of the nb partials of r, in a fixed order.
__global__ void __launch_bounds__(PR_THREADS)
    pr_final(int64_t nb, const double *__restrict__ part, double *__restrict__ sums) {
  __shared__ double sh[PR_THREADS / 32];
  for (int r = 0; r < 3; r++) {
    double s = 0.0;
    for (int64_t b = threadIdx.x; b < nb; b += PR_THREADS)
      s += part[r * nb + b];
    s = pr_block_sum(s, sh);
    if (threadIdx.x == 0) sums[r] = s;
  }
}

extern "C" void msp__cuda_pr_free(msp_context ctx, msp__prgraph *g) {
  (void)ctx;
  if (!g || !g->dev) return;
  cuda_pr *d = (cuda_pr *)g->dev;
  cudaFree(d->rowptr);
  cudaFree(d->colind);
  cudaFree(d->outdeg);
  cudaFree(d->longrows);
  cudaFree(d->ylong);
  cudaFree(d->part);
  cudaFree(d->sums);
  msp__free(d);
  g->dev = NULL;
}

extern "C" msp_status msp__cuda_pr_upload(msp_context ctx, msp__prgraph *g) {
  msp_status st = MSP_SUCCESS;
  cudaStream_t s = msp__cuda(ctx)->stream;
  cuda_pr *d = NULL;
  int32_t *hl = NULL;
  const size_t n1 = (size_t)(g->n > 0 ? g->n : 1), nz1 = (size_t)(g->nnz > 0 ? g->nnz : 1);
  MSP_TRY(MSP_ALLOC_ZERO(d, 1, "PageRank device graph"));
  g->dev = d;
  for (int64_t i = 0; i < g->n; i++)
    d->nlong += g->rowptr[i + 1] - g->rowptr[i] > LONG_ROW;
  MSP_TRY(MSP_ALLOC(hl, d->nlong > 0 ? d->nlong : 1, "PageRank hub list"));
  {
    int64_t m = 0;
    for (int64_t i = 0; i < g->n; i++)
      if (g->rowptr[i + 1] - g->rowptr[i] > LONG_ROW) hl[m++] = (int32_t)i;
  }
  {
    const double mean = g->n > 0 ? (double)g->nnz / (double)g->n : 0.0;
    d->vs = 1; // the largest power of two <= the mean in-degree (as the CSR vector kernel)
    while (d->vs < 32 && 2 * d->vs <= mean)
      d->vs *= 2;
  }
  MSP_CUDA_TRY(cudaMalloc((void **)&d->rowptr, (n1 + 1) * sizeof(int64_t)));
  MSP_CUDA_TRY(cudaMalloc((void **)&d->colind, nz1 * sizeof(int32_t)));
  MSP_CUDA_TRY(cudaMalloc((void **)&d->outdeg, n1 * sizeof(int32_t)));
  MSP_CUDA_TRY(cudaMalloc((void **)&d->longrows, (d->nlong + 1) * sizeof(int32_t)));
  MSP_CUDA_TRY(cudaMalloc((void **)&d->ylong, (d->nlong + 1) * sizeof(double)));
  d->nblocks = (g->n + BLOCK_ROWS - 1) / BLOCK_ROWS;
  MSP_CUDA_TRY(cudaMalloc((void **)&d->part, 3 * (size_t)(d->nblocks + 1) * sizeof(double)));
  MSP_CUDA_TRY(cudaMalloc((void **)&d->sums, 3 * sizeof(double)));
  MSP_CUDA_TRY(cudaMemcpyAsync(d->rowptr, g->rowptr, (size_t)(g->n + 1) * sizeof(int64_t),
                               cudaMemcpyHostToDevice, s));
  if (g->nnz > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(d->colind, g->colind, (size_t)g->nnz * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, s));
  if (g->n > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(d->outdeg, g->outdeg, (size_t)g->n * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, s));
  if (d->nlong > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(d->longrows, hl, (size_t)d->nlong * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s)); // hl is freed below
exit:
  msp__free(hl);
  if (st != MSP_SUCCESS) msp__cuda_pr_free(ctx, g);
  return st;
}

template <msp_precision P, int VS>
static msp_status pr_launch(msp_context ctx, cuda_pr *d, const pr_kargs &k, const msp__pr_step *a) {
  msp_status st = MSP_SUCCESS;
  cudaStream_t s = msp__cuda(ctx)->stream;
  const loader<P> p = msp__vector_loader<P>(a->p);
  const msp_acc pn = msp__vector_store_acc(a->pn, 1);
  if (a->y) {
    pr_main<P, VS, false><<<(unsigned)d->nblocks, PR_THREADS, 0, s>>>(k, p, p, pn, pn, false);
  } else {
    const loader<P> q = msp__vector_loader<P>(a->q);
    const msp_acc qn = msp__vector_store_acc(a->qn, 1);
    if (d->nlong > 0) {
      pr_long<P><<<(unsigned)d->nlong, PR_THREADS, 0, s>>>(d->rowptr, d->colind, d->longrows, q,
                                                           a->alpha, d->ylong);
      MSP_CUDA_CHECK_LAUNCH("pr_long");
    }
    pr_main<P, VS, true><<<(unsigned)d->nblocks, PR_THREADS, 0, s>>>(k, q, p, pn, qn, true);
  }
  MSP_CUDA_CHECK_LAUNCH("pr_main");
exit:
  return st;
}

extern "C" msp_status msp__cuda_pr_step(msp_context ctx, const msp__prgraph *g,
                                        const msp__pr_step *a, double sums[3]) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(ctx);
  cuda_pr *d = (cuda_pr *)g->dev;
  pr_kargs k;
  memset(&k, 0, sizeof k);
  k.rp = d->rowptr;
  k.ci = d->colind;
  k.deg = d->outdeg;
  k.longrows = d->longrows;
  k.nlong = d->nlong;
  k.ylong = d->ylong;
  k.y = a->y ? (const double *)a->y->d_data : NULL;
  k.v = a->v ? (const double *)a->v->d_data : NULL;
  k.alpha = a->alpha;
  k.c = a->c;
  k.vconst = a->vconst;
  k.n = g->n;
  k.part = d->part;
  const int vs = a->y ? 1 : d->vs; // the values form reads y only: a node per thread
  k.nblocks = d->nblocks;
  st = msp__prec_dispatch(a->p->prec, [&](auto pc) -> msp_status {
    constexpr msp_precision P = decltype(pc)::value;
    if constexpr (P == MSP_PRECISION_F64 || P == MSP_PRECISION_CPMS2 || P == MSP_PRECISION_CPMS4) {
      switch (vs) {
      case 1:
        return pr_launch<P, 1>(ctx, d, k, a);
      case 2:
        return pr_launch<P, 2>(ctx, d, k, a);
      case 4:
        return pr_launch<P, 4>(ctx, d, k, a);
      case 8:
        return pr_launch<P, 8>(ctx, d, k, a);
      case 16:
        return pr_launch<P, 16>(ctx, d, k, a);
      default:
        return pr_launch<P, 32>(ctx, d, k, a);
      }
    } else {
      return msp__error(MSP_ERR_NOT_SUPPORTED,
                        "PageRank: rank vectors are f64, cpms2 or cpms4, not %s",
                        msp_precision_name(P));
    }
  });
  if (st != MSP_SUCCESS) return st;
  pr_final<<<1, PR_THREADS, 0, c->stream>>>(d->nblocks, d->part, d->sums);
  MSP_CUDA_CHECK_LAUNCH("pr_final");
  MSP_CUDA_TRY(
      cudaMemcpyAsync(c->h_result, d->sums, 3 * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
  MSP_CUDA_TRY(cudaStreamSynchronize(c->stream));
  memcpy(sums, c->h_result, 3 * sizeof(double));
exit:
  return st;
}

// pagerank.cu: the CUDA power iteration of PageRank (msp__backend.pr_step) over the rank vectors'
// storage precision (f64, cpms2, cpms4).
//
// The pull form is the CSR product y = alpha G^T q, q = p ./ outdeg, run by the tuned CSR kernels
// of csr.cuh (scalar, vector or merge path: the CSR rule's choice for G^T's rows, as an SpMV with
// G^T would take) over a unit value loader: no value is read, and q is gathered through loader<P>
// (CPMS: only the segments read). Then one pass over the nodes (pr_update) writes p_k and q_k in
// full and adds to three sums (change, dangling mass, total) reduced in a fixed order: block b
// covers nodes [b BLOCK_ROWS, (b + 1) BLOCK_ROWS) (a partition that depends on n only), then one
// block adds the partials. The values form hands its own y (an SpMV with stored 1/O_i) to the
// same update. The same bits on every run and every GPU.
//
// A pull kernel of its own (lane groups of the mean in-degree, two rows per group, a block per
// hub) was slower than the values form on the CSR kernels; the unit loader gives the pull the
// CSR kernels' balance and loads in flight, and reads 4 bytes per edge where the values form
// reads 12. The separate y costs 16 bytes per node.
#include "csr.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <string.h>

#define PR_THREADS 256
#define BLOCK_ROWS 2048 // nodes per CUDA block of the update

// The values of G^T's pull: every stored entry is 1 (nothing is loaded). prec tunes the vector
// kernel as a 4-byte value stream would (vector_unroll, vector_index64 of csr.cuh).
struct pr_unit {
  static constexpr msp_precision prec = MSP_PRECISION_F32;
  __device__ __forceinline__ double operator()(int64_t) const { return 1.0; }
  __device__ __forceinline__ double stream(int64_t) const { return 1.0; }
};

typedef struct {
  msp__cuda_matrix gt; // the structure of G^T and its merge-path plan (csr.cu slots)
  msp_kernel kernel;   // the CSR rule's kernel for G^T's rows
  int32_t *outdeg;
  double *y;    // pull form: alpha G^T q
  double *part; // 3 partial sums per block
  int64_t nblocks;
  double *sums; // 3 results
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

struct pr_kargs {
  const int32_t *deg;
  const double *y, *v;
  double c, vconst;
  int64_t n, nblocks;
  double *part;
};

// p_k = y + c v, q_k = p_k / outdeg, and the block's partial sums of |p_k - p_{k-1}|, the
// dangling mass and the total.
template <msp_precision P>
__global__ void __launch_bounds__(PR_THREADS)
    pr_update(const pr_kargs a, const loader<P> p, const msp_acc pn, const msp_acc qn,
              bool want_q) {
  __shared__ double sh[PR_THREADS / 32];
  const int64_t r0 = (int64_t)blockIdx.x * BLOCK_ROWS;
  const int64_t r1 = r0 + BLOCK_ROWS < a.n ? r0 + BLOCK_ROWS : a.n;
  double gam = 0.0, dang = 0.0, tot = 0.0;
  for (int64_t i = r0 + threadIdx.x; i < r1; i += PR_THREADS) {
    const double x = a.y[i] + a.c * (a.v ? a.v[i] : a.vconst);
    const double old = p(i);
    const int32_t d = a.deg[i];
    msp_acc_store_p(P, &pn, i, x);
    if (want_q) msp_acc_store_p(P, &qn, i, d ? x / (double)d : 0.0);
    gam += fabs(x - old);
    if (!d) dang += x;
    tot += x;
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
  for (int i = 0; i < MSP__CUDA_MAX_ARRAYS; i++)
    cudaFree(d->gt.d[i]);
  msp__free(d->gt.extra);
  cudaFree(d->outdeg);
  cudaFree(d->y);
  cudaFree(d->part);
  cudaFree(d->sums);
  msp__free(d);
  g->dev = NULL;
}

// ---- G^T's structure built on the device (msp__backend.pr_transpose) -------------------------
// Each edge (i, j) of G becomes the key (inv[j] << B) | inv[i] (B bits hold a node number; inv
// the identity in the file's order); a radix sort of the keys (CUB, LSD: stable) lists the edges
// of G^T by row and, within a row, by source: the same structure, entry for entry, as the host
// build (src/solvers/pagerank.c), since G holds no duplicate edge. Then rowptr[r] = the first key
// of row r or later (a binary search per row).
__global__ void pr_keys(int64_t n, int64_t nnz, const int64_t *__restrict__ rp,
                        const int32_t *__restrict__ ci, const int32_t *__restrict__ inv, int bits,
                        uint64_t *__restrict__ keys) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nnz; k += stride) {
    int64_t lo = 0, hi = n - 1; // the row of entry k: the last i with rp[i] <= k
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (__ldg(rp + mid) <= k)
        lo = mid;
      else
        hi = mid - 1;
    }
    const int64_t j = __ldg(ci + k);
    const uint64_t src = (uint64_t)(inv ? __ldg(inv + lo) : lo);
    const uint64_t dst = (uint64_t)(inv ? __ldg(inv + j) : j);
    keys[k] = (dst << bits) | src;
  }
}

__global__ void pr_split(int64_t n, int64_t nnz, const uint64_t *__restrict__ keys, int bits,
                         int64_t *__restrict__ rowptr, int32_t *__restrict__ colind) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const uint64_t mask = ((uint64_t)1 << bits) - 1;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nnz; k += stride)
    colind[k] = (int32_t)(keys[k] & mask);
  for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r <= n; r += stride) {
    int64_t lo = 0, hi = nnz; // the first key of row r or later
    const uint64_t first = (uint64_t)r << bits;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (keys[mid] < first)
        lo = mid + 1;
      else
        hi = mid;
    }
    rowptr[r] = r == n ? nnz : lo;
  }
}

static msp_status pr_finish_upload(msp_context ctx, msp__prgraph *g, cuda_pr *d);

extern "C" msp_status msp__cuda_pr_transpose(msp_context ctx, const msp_matrix G,
                                             const int32_t *inv, msp__prgraph *g) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(ctx);
  cudaStream_t s = c->stream;
  cuda_pr *d = NULL;
  const int64_t n = g->n, nnz = g->nnz;
  int64_t *rp_in = NULL, *h_rowptr = NULL;
  int32_t *ci_in = NULL, *d_inv = NULL;
  uint64_t *k0 = NULL, *k1 = NULL;
  void *temp = NULL;
  size_t temp_bytes = 0;
  int bits = 1;
  while (bits < 31 && ((int64_t)1 << bits) < n)
    bits++;
  const unsigned blocks = msp__cuda_blocks(nnz > n ? nnz : n + 1, PR_THREADS);
  const bool own_in = !(G->format == MSP_FORMAT_CSR && G->dev &&
                        ((const msp__cuda_matrix *)G->dev)->d[SLOT_ROWPTR]);
  MSP_TRY(MSP_ALLOC_ZERO(d, 1, "PageRank device graph"));
  g->dev = d;
  MSP_TRY(MSP_ALLOC(h_rowptr, n + 1, "PageRank: rows of the transpose"));
  // G's structure on the device: its own when G is a CSR matrix there, else a copy
  if (!own_in) {
    const msp__cuda_matrix *gm = (const msp__cuda_matrix *)G->dev;
    rp_in = (int64_t *)gm->d[SLOT_ROWPTR];
    ci_in = (int32_t *)gm->d[SLOT_COLIND];
  } else {
    MSP_CUDA_TRY(cudaMalloc((void **)&rp_in, (size_t)(n + 1) * sizeof(int64_t)));
    MSP_CUDA_TRY(cudaMalloc((void **)&ci_in, (size_t)(nnz > 0 ? nnz : 1) * sizeof(int32_t)));
    MSP_CUDA_TRY(cudaMemcpyAsync(rp_in, G->rowptr, (size_t)(n + 1) * sizeof(int64_t),
                                 cudaMemcpyHostToDevice, s));
    if (nnz > 0)
      MSP_CUDA_TRY(cudaMemcpyAsync(ci_in, G->colind, (size_t)nnz * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, s));
  }
  if (inv) {
    MSP_CUDA_TRY(cudaMalloc((void **)&d_inv, (size_t)n * sizeof(int32_t)));
    MSP_CUDA_TRY(
        cudaMemcpyAsync(d_inv, inv, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice, s));
  }
  MSP_CUDA_TRY(cudaMalloc(&d->gt.d[SLOT_ROWPTR], (size_t)(n + 1) * sizeof(int64_t)));
  d->gt.bytes[SLOT_ROWPTR] = (size_t)(n + 1) * sizeof(int64_t);
  MSP_CUDA_TRY(cudaMalloc(&d->gt.d[SLOT_COLIND], (size_t)(nnz > 0 ? nnz : 1) * sizeof(int32_t)));
  d->gt.bytes[SLOT_COLIND] = (size_t)nnz * sizeof(int32_t);
  if (d->gt.count < SLOT_COLIND + 1) d->gt.count = SLOT_COLIND + 1;
  if (nnz > 0) {
    MSP_CUDA_TRY(cudaMalloc((void **)&k0, (size_t)nnz * sizeof(uint64_t)));
    MSP_CUDA_TRY(cudaMalloc((void **)&k1, (size_t)nnz * sizeof(uint64_t)));
    cub::DoubleBuffer<uint64_t> kb(k0, k1);
    MSP_CUDA_TRY(cub::DeviceRadixSort::SortKeys(NULL, temp_bytes, kb, nnz, 0, 2 * bits, s));
    MSP_CUDA_TRY(cudaMalloc(&temp, temp_bytes > 0 ? temp_bytes : 1));
    pr_keys<<<blocks, PR_THREADS, 0, s>>>(n, nnz, rp_in, ci_in, d_inv, bits, k0);
    MSP_CUDA_CHECK_LAUNCH("pr_keys");
    MSP_CUDA_TRY(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, kb, nnz, 0, 2 * bits, s));
    pr_split<<<blocks, PR_THREADS, 0, s>>>(n, nnz, kb.Current(), bits,
                                           (int64_t *)d->gt.d[SLOT_ROWPTR],
                                           (int32_t *)d->gt.d[SLOT_COLIND]);
    MSP_CUDA_CHECK_LAUNCH("pr_split");
  } else {
    MSP_CUDA_TRY(cudaMemsetAsync(d->gt.d[SLOT_ROWPTR], 0, (size_t)(n + 1) * sizeof(int64_t), s));
  }
  MSP_CUDA_TRY(cudaMemcpyAsync(h_rowptr, d->gt.d[SLOT_ROWPTR], (size_t)(n + 1) * sizeof(int64_t),
                               cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
  // the merge-path plan and the kernel choice from the host row pointers (the columns stay on the
  // device: g->rowptr and g->colind are not made)
  g->rowptr = h_rowptr;
  st = pr_finish_upload(ctx, g, d);
  g->rowptr = NULL;
exit:
  msp__free(h_rowptr);
  if (own_in) {
    cudaFree(rp_in);
    cudaFree(ci_in);
  }
  cudaFree(d_inv);
  cudaFree(k0);
  cudaFree(k1);
  cudaFree(temp);
  if (st != MSP_SUCCESS) msp__cuda_pr_free(ctx, g);
  return st;
}

extern "C" msp_status msp__cuda_pr_upload(msp_context ctx, msp__prgraph *g) {
  msp_status st = MSP_SUCCESS;
  cuda_pr *d = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(d, 1, "PageRank device graph"));
  g->dev = d;
  st = pr_finish_upload(ctx, g, d);
exit:
  return st;
}

// The kernel choice, the CSR structure (uploaded from g->colind unless already on the device)
// with its merge-path plan, the out-degrees and the work arrays; on failure everything in g->dev
// is freed.
static msp_status pr_finish_upload(msp_context ctx, msp__prgraph *g, cuda_pr *d) {
  msp_status st = MSP_SUCCESS;
  cudaStream_t s = msp__cuda(ctx)->stream;
  const size_t n1 = (size_t)(g->n > 0 ? g->n : 1);
  {
    msp_matrix_stats stats; // what the CSR rule reads: the mean and the longest row
    memset(&stats, 0, sizeof stats);
    stats.rows = stats.cols = g->n;
    stats.nnz = g->nnz;
    for (int64_t i = 0; i < g->n; i++)
      if (g->rowptr[i + 1] - g->rowptr[i] > stats.row_max)
        stats.row_max = g->rowptr[i + 1] - g->rowptr[i];
    stats.row_mean = g->n > 0 ? (double)g->nnz / (double)g->n : 0.0;
    stats.skewness = stats.row_mean > 0 ? (double)stats.row_max / stats.row_mean : 0.0;
    d->kernel = msp_choose_kernel(&stats, NULL, 0);
  }
  MSP_TRY(msp__cuda_csr_structure_upload(ctx, &d->gt, g->n, g->nnz, g->rowptr, g->colind));
  MSP_CUDA_TRY(cudaMalloc((void **)&d->outdeg, n1 * sizeof(int32_t)));
  MSP_CUDA_TRY(cudaMalloc((void **)&d->y, n1 * sizeof(double)));
  d->nblocks = (g->n + BLOCK_ROWS - 1) / BLOCK_ROWS;
  MSP_CUDA_TRY(cudaMalloc((void **)&d->part, 3 * (size_t)(d->nblocks + 1) * sizeof(double)));
  MSP_CUDA_TRY(cudaMalloc((void **)&d->sums, 3 * sizeof(double)));
  if (g->n > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(d->outdeg, g->outdeg, (size_t)g->n * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
exit:
  if (st != MSP_SUCCESS) msp__cuda_pr_free(ctx, g);
  return st;
}

template <msp_precision P>
static msp_status pr_launch(msp_context ctx, const msp__prgraph *g, cuda_pr *d, pr_kargs k,
                            const msp__pr_step *a) {
  msp_status st = MSP_SUCCESS;
  cudaStream_t s = msp__cuda(ctx)->stream;
  const loader<P> p = msp__vector_loader<P>(a->p);
  const msp_acc pn = msp__vector_store_acc(a->pn, 1);
  msp_acc qn = pn;
  if (!a->y) { // the pull: y = alpha G^T q on the CSR kernels, q read with its segments
    ystore_f64 ys;
    ys.d = d->y;
    MSP_TRY((msp__cuda_csr_launch<pr_unit, P>(ctx, d->kernel, &d->gt, g->n, pr_unit(), a->q,
                                              a->alpha, 0.0, ys)));
    k.y = d->y;
    qn = msp__vector_store_acc(a->qn, 1);
  }
  pr_update<P><<<(unsigned)d->nblocks, PR_THREADS, 0, s>>>(k, p, pn, qn, a->y == NULL);
  MSP_CUDA_CHECK_LAUNCH("pr_update");
exit:
  return st;
}

// One iteration with its three sums left on the device (*out, valid until g's next step),
// enqueued with no wait: the distributed layer adds the ranks' sums on the device.
extern "C" msp_status msp__cuda_pr_step_dev(msp_context ctx, const msp__prgraph *g,
                                            const msp__pr_step *a, const double **out) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(ctx);
  cuda_pr *d = (cuda_pr *)g->dev;
  *out = NULL;
  pr_kargs k;
  memset(&k, 0, sizeof k);
  k.deg = d->outdeg;
  k.y = a->y ? (const double *)a->y->d_data : NULL;
  k.v = a->v ? (const double *)a->v->d_data : NULL;
  k.c = a->c;
  k.vconst = a->vconst;
  k.n = g->n;
  k.part = d->part;
  k.nblocks = d->nblocks;
  st = msp__prec_dispatch(a->p->prec, [&](auto pc) -> msp_status {
    constexpr msp_precision P = decltype(pc)::value;
    if constexpr (P == MSP_PRECISION_F64 || P == MSP_PRECISION_CPMS2 || P == MSP_PRECISION_CPMS4) {
      return pr_launch<P>(ctx, g, d, k, a);
    } else {
      return msp__error(MSP_ERR_NOT_SUPPORTED,
                        "PageRank: rank vectors are f64, cpms2 or cpms4, not %s",
                        msp_precision_name(P));
    }
  });
  if (st != MSP_SUCCESS) return st;
  pr_final<<<1, PR_THREADS, 0, c->stream>>>(d->nblocks, d->part, d->sums);
  MSP_CUDA_CHECK_LAUNCH("pr_final");
  *out = d->sums;
exit:
  return st;
}

extern "C" msp_status msp__cuda_pr_step(msp_context ctx, const msp__prgraph *g,
                                        const msp__pr_step *a, double sums[3]) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(ctx);
  const double *d_sums = NULL;
  MSP_TRY(msp__cuda_pr_step_dev(ctx, g, a, &d_sums));
  MSP_CUDA_TRY(
      cudaMemcpyAsync(c->h_result, d_sums, 3 * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
  MSP_CUDA_TRY(cudaStreamSynchronize(c->stream));
  memcpy(sums, c->h_result, 3 * sizeof(double));
exit:
  return st;
}

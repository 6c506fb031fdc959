// ilu.cu: ILU(0)'s triangular solves on the device (the preconditioner of src/solvers/precond.c),
// so that a preconditioned GMRES iteration never sends its vector to the host.
//
// z = U^-1 L^-1 v with the factors of precond.c (L unit lower in the strictly lower part of A's
// pattern, U upper with the diagonal), as the host solves them: row i of the forward solve is
// t = v_i, then t -= l_ik y_k for its entries in column order, y_i = t; the backward solve goes
// from the last row up, t = y_i, t -= u_ik z_k, z_i = t / u_ii. Every product and subtraction is
// rounded on its own (__dmul_rn, __dsub_rn: no fused multiply-add, as the C11 host code) and in
// the same order, so the device gives the host's bits and GMRES the same iterations on both
// backends.
//
// Sync-free scheduling (a row waits only for the rows it reads, not for a whole level): warps
// claim batches of ILU_BATCH consecutive rows from a counter (in solve order: increasing rows
// forward, decreasing backward) and solve their rows in that order. A row is finished when its
// flag holds the solve's epoch (release store after its value; readers acquire before loading the
// value, both at device scope, values through L2). A warp waits only for rows that come before
// its own in solve order, all of them claimed earlier by warps already running, so the earliest
// unfinished row always has what it needs: no deadlock, whatever the scheduling. The lanes of a
// warp wait for and load a row's entries in parallel (32 at a time); the subtractions then run in
// column order from shuffles. The epoch (two per application) makes the flags of the previous
// solve stale without clearing them; they are cleared when it wraps.
//
// Measured (H100, 27 Nov, mixsparse-bench-solve, restart 100, f64 basis, ms per GMRES iteration
// with ILU(0); Jacobi in brackets): gen:convdiff3d:128 8.26 [1.08], gen:poisson3d:128 8.26
// [1.10], gen:poisson3d:64 1.26 [0.23]: the solves are bound by the latency of the rows'
// dependency chains, not by their bytes. Measured and not taken (same job): the rows sorted by
// level set at upload, a lane per row, each lane polling the flags of the rows it reads with
// relaxed loads and one acquire fence: 22.1, 22.2 and 7.95 ms, 2.7x-6.3x slower (the spinning
// lanes of many warps at once, and scattered rows).
#include "cuda_internal.cuh"

#include <string.h>

#define ILU_THREADS 256
#define ILU_BATCH 32 // rows a warp claims at once (consecutive rows: a stencil's chain)

typedef struct {
  int64_t n;
  int64_t *rowptr;             // n + 1
  int32_t *colind;             // nnz
  double *lu;                  // nnz
  int64_t *diag;               // n: position of the diagonal entry in row i
  unsigned *flag;              // n: epoch of the solve that finished row i
  unsigned long long *counter; // 2: batches claimed by the forward and the backward solve
  unsigned epoch;              // of the last solve
  int blocks;                  // resident blocks of the persistent grid
} ilu_dev;

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// FORWARD: y = L^-1 v into x (unit diagonal, entries left of the diagonal). Backward: x = U^-1 x
// in place (x holds y; entries right of the diagonal, then the division by the pivot).
template <bool FORWARD>
__global__ void __launch_bounds__(ILU_THREADS)
    ilu_solve(int64_t n, const int64_t *__restrict__ rowptr, const int32_t *__restrict__ colind,
              const double *__restrict__ lu, const int64_t *__restrict__ diag,
              const double *__restrict__ v, double *x, unsigned *flag, unsigned epoch,
              unsigned long long *counter) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int64_t batches = (n + ILU_BATCH - 1) / ILU_BATCH;
  for (;;) {
    unsigned long long b = 0;
    if (lane == 0) b = atomicAdd(counter, 1ull);
    b = __shfl_sync(full, b, 0);
    if ((int64_t)b >= batches) return; // the whole warp leaves together
    for (int r = 0; r < ILU_BATCH; r++) {
      const int64_t k = (int64_t)b * ILU_BATCH + r;
      if (k >= n) break;
      const int64_t i = FORWARD ? k : n - 1 - k;
      const int64_t d = __ldg(diag + i);
      const int64_t lo = FORWARD ? __ldg(rowptr + i) : d + 1;
      const int64_t hi = FORWARD ? d : __ldg(rowptr + i + 1);
      double t = FORWARD ? __ldg(v + i) : __ldcg(x + i);
      for (int64_t p0 = lo; p0 < hi; p0 += 32) {
        const int64_t p = p0 + lane;
        double prod = 0.0;
        if (p < hi) {
          const int32_t c = __ldg(colind + p);
          while (ld_acquire(flag + c) != epoch) {
          }
          prod = __dmul_rn(__ldg(lu + p), __ldcg(x + c));
        }
        const int cnt = hi - p0 < 32 ? (int)(hi - p0) : 32;
        for (int l = 0; l < cnt; l++)
          t = __dsub_rn(t, __shfl_sync(full, prod, l));
      }
      if (!FORWARD) t = __ddiv_rn(t, __ldg(lu + d));
      if (lane == 0) {
        __stcg(x + i, t);
        st_release(flag + i, epoch);
      }
      __syncwarp();
    }
  }
}

static void ilu_release(ilu_dev *h) {
  if (!h) return;
  if (h->rowptr) (void)cudaFree(h->rowptr);
  if (h->colind) (void)cudaFree(h->colind);
  if (h->lu) (void)cudaFree(h->lu);
  if (h->diag) (void)cudaFree(h->diag);
  if (h->flag) (void)cudaFree(h->flag);
  if (h->counter) (void)cudaFree(h->counter);
  msp__free(h);
}

static msp_status put(msp_context ctx, void **dst, const void *src, size_t bytes,
                      const char *what) {
  msp_status st = MSP_SUCCESS;
  const cudaError_t e = cudaMalloc(dst, bytes > 0 ? bytes : 1);
  if (e != cudaSuccess) {
    *dst = NULL;
    st = msp__cuda_status(e, "cudaMalloc", __FILE__, __LINE__);
    return msp__error(st, "ILU(0) on the device: cannot allocate %zu bytes for %s (%s)", bytes,
                      what, cudaGetErrorString(e));
  }
  if (src && bytes)
    MSP_CUDA_TRY(cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyHostToDevice, msp__cuda(ctx)->stream));
  else
    MSP_CUDA_TRY(cudaMemsetAsync(*dst, 0, bytes > 0 ? bytes : 1, msp__cuda(ctx)->stream));
exit:
  return st;
}

extern "C" msp_status msp__cuda_ilu_upload(msp_context ctx, int64_t n, const int64_t *rowptr,
                                           const int32_t *colind, const double *lu,
                                           const int64_t *diag, void **out) {
  msp_status st = MSP_SUCCESS;
  ilu_dev *h = NULL;
  const int64_t nnz = rowptr[n];
  int per_sm = 0;
  *out = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(h, 1, "ILU(0) device record"));
  h->n = n;
  MSP_CUDA_TRY(cudaSetDevice(ctx->device));
  MSP_TRY(put(ctx, (void **)&h->rowptr, rowptr, (size_t)(n + 1) * sizeof(int64_t), "row pointers"));
  MSP_TRY(put(ctx, (void **)&h->colind, colind, (size_t)nnz * sizeof(int32_t), "columns"));
  MSP_TRY(put(ctx, (void **)&h->lu, lu, (size_t)nnz * sizeof(double), "factors"));
  MSP_TRY(put(ctx, (void **)&h->diag, diag, (size_t)n * sizeof(int64_t), "diagonal positions"));
  MSP_TRY(put(ctx, (void **)&h->flag, NULL, (size_t)n * sizeof(unsigned), "row flags"));
  MSP_TRY(put(ctx, (void **)&h->counter, NULL, 2 * sizeof(unsigned long long), "counters"));
  MSP_CUDA_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ilu_solve<true>, ILU_THREADS, 0));
  h->blocks = (per_sm > 0 ? per_sm : 1) * msp__cuda(ctx)->sm_count;
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
  *out = h;
  h = NULL;
exit:
  ilu_release(h);
  return st;
}

extern "C" msp_status msp__cuda_ilu_apply(msp_context ctx, void *dev, msp_vector v, msp_vector z) {
  msp_status st = MSP_SUCCESS;
  ilu_dev *h = (ilu_dev *)dev;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  if (h->n == 0) return MSP_SUCCESS;
  if (h->epoch > 0xfffffff0u) { // the epochs wrap: no flag may hold a future epoch
    MSP_CUDA_TRY(cudaMemsetAsync(h->flag, 0, (size_t)h->n * sizeof(unsigned), s));
    h->epoch = 0;
  }
  MSP_CUDA_TRY(cudaMemsetAsync(h->counter, 0, 2 * sizeof(unsigned long long), s));
  {
    const int64_t batches = (h->n + ILU_BATCH - 1) / ILU_BATCH;
    const int64_t want = (batches + ILU_THREADS / 32 - 1) / (ILU_THREADS / 32);
    const unsigned grid = (unsigned)(want < h->blocks ? want : h->blocks);
    double *x = (double *)z->d_data;
    ilu_solve<true><<<grid, ILU_THREADS, 0, s>>>(h->n, h->rowptr, h->colind, h->lu, h->diag,
                                                 (const double *)v->d_data, x, h->flag, ++h->epoch,
                                                 h->counter);
    MSP_CUDA_CHECK_LAUNCH("ilu_solve<forward>");
    ilu_solve<false><<<grid, ILU_THREADS, 0, s>>>(h->n, h->rowptr, h->colind, h->lu, h->diag, NULL,
                                                  x, h->flag, ++h->epoch, h->counter + 1);
    MSP_CUDA_CHECK_LAUNCH("ilu_solve<backward>");
  }
exit:
  return st;
}

extern "C" void msp__cuda_ilu_free(msp_context ctx, void *dev) {
  if (!dev) return;
  (void)cudaSetDevice(ctx->device);
  (void)cudaStreamSynchronize(msp__cuda(ctx)->stream);
  ilu_release((ilu_dev *)dev);
}

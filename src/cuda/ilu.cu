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
// The solves are bound by the latency of the rows' dependency chains, not by their bytes, so an
// ILU(0) iteration of GMRES costs several Jacobi ones. Tried and not taken: the rows sorted by
// level set at upload, a lane per row, each lane polling the flags of the rows it reads with
// relaxed loads and one acquire fence, several times slower (the spinning lanes of many warps at
// once, and scattered rows).
#include "cuda_internal.cuh"

#define ILU_THREADS 256
#define ILU_BATCH 32 // rows a warp claims at once (consecutive rows: a stencil's chain)

// The device arrays are the slots of a matrix record (msp__cuda_matrix_put allocates and fills
// them, ilu_release frees them).
enum { ILU_ROWPTR, ILU_COLIND, ILU_LU, ILU_DIAG, ILU_FLAG, ILU_COUNTER };
typedef struct {
  msp__cuda_matrix m; // rowptr int64[n + 1], colind int32[nnz], lu double[nnz], diag int64[n]
                      // (position of a_ii), flag unsigned[n] (epoch of the solve that finished
                      // row i), counter uint64[2] (batches claimed forward / backward)
  int64_t n;
  unsigned epoch; // of the last solve
  int blocks;     // resident blocks of the persistent grid
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
  for (int i = 0; i < MSP__CUDA_MAX_ARRAYS; i++)
    if (h->m.d[i]) (void)cudaFree(h->m.d[i]);
  (void)cudaGetLastError();
  msp__free(h);
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
  MSP_TRY(msp__cuda_matrix_put(ctx, &h->m, ILU_ROWPTR, rowptr, (size_t)(n + 1) * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, &h->m, ILU_COLIND, colind, (size_t)nnz * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, &h->m, ILU_LU, lu, (size_t)nnz * sizeof(double)));
  MSP_TRY(msp__cuda_matrix_put(ctx, &h->m, ILU_DIAG, diag, (size_t)n * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, &h->m, ILU_FLAG, NULL, (size_t)n * sizeof(unsigned)));
  MSP_TRY(msp__cuda_matrix_put(ctx, &h->m, ILU_COUNTER, NULL, 2 * sizeof(unsigned long long)));
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
  const int64_t *rowptr = (const int64_t *)h->m.d[ILU_ROWPTR];
  const int32_t *colind = (const int32_t *)h->m.d[ILU_COLIND];
  const double *lu = (const double *)h->m.d[ILU_LU];
  const int64_t *diag = (const int64_t *)h->m.d[ILU_DIAG];
  unsigned *flag = (unsigned *)h->m.d[ILU_FLAG];
  unsigned long long *counter = (unsigned long long *)h->m.d[ILU_COUNTER];
  if (h->epoch > 0xfffffff0u) { // the epochs wrap: no flag may hold a future epoch
    MSP_CUDA_TRY(cudaMemsetAsync(flag, 0, (size_t)h->n * sizeof(unsigned), s));
    h->epoch = 0;
  }
  MSP_CUDA_TRY(cudaMemsetAsync(counter, 0, 2 * sizeof(unsigned long long), s));
  {
    const int64_t batches = (h->n + ILU_BATCH - 1) / ILU_BATCH;
    const int64_t want = (batches + ILU_THREADS / 32 - 1) / (ILU_THREADS / 32);
    const unsigned grid = (unsigned)(want < h->blocks ? want : h->blocks);
    double *x = (double *)z->d_data;
    ilu_solve<true><<<grid, ILU_THREADS, 0, s>>>(
        h->n, rowptr, colind, lu, diag, (const double *)v->d_data, x, flag, ++h->epoch, counter);
    MSP_CUDA_CHECK_LAUNCH("ilu_solve<forward>");
    ilu_solve<false><<<grid, ILU_THREADS, 0, s>>>(h->n, rowptr, colind, lu, diag, NULL, x, flag,
                                                  ++h->epoch, counter + 1);
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

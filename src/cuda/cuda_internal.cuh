// cuda_internal.cuh: what the CUDA backend's files share: error mapping, device matrix layout.
#ifndef MSP_CUDA_INTERNAL_CUH
#define MSP_CUDA_INTERNAL_CUH

#include <cuda_runtime.h>

#include "internal.h"

// Map a CUDA error to a status: allocation failures to MSP_ERR_OUT_OF_MEMORY, the rest to
// MSP_ERR_DEVICE, with the call, file and line in the message.
extern "C" msp_status msp__cuda_status(cudaError_t e, const char *call, const char *file, int line);

// Jump to `exit` with st set when a CUDA runtime call fails (the function's one exit label).
#define MSP_CUDA_TRY(call)                                                                         \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      st = msp__cuda_status(e_, #call, __FILE__, __LINE__);                                        \
      goto exit;                                                                                   \
    }                                                                                              \
  } while (0)
// After a launch: check the launch itself (no synchronisation).
#define MSP_CUDA_CHECK_LAUNCH(name) MSP_CUDA_TRY(cudaPeekAtLastError())

// The context's backend data.
typedef struct {
  cudaStream_t stream;
  cudaStream_t aux_stream; // second stream (BDMP-PBP runs its two parts concurrently)
  cudaEvent_t fork, join;
  int sm_count;
  int l2_bytes;      // L2 cache size
  double *d_scratch; // reduction scratch (partial sums + result), MSP__CUDA_SCRATCH doubles
  double *h_result;  // pinned host slot for reduction results
  double *d_ywork;   // fp64 y of the kernels that cannot write a fixed-point y (grown on demand)
  int64_t ywork_n;   // its length
  double *d_xwork;   // fp64 copy of an x whose pair with the values is not compiled (spmv_x.cu)
  int64_t xwork_n;   // its length
} msp__cuda_ctx;

#define MSP__CUDA_SCRATCH 8192
#define MSP__CUDA_RESULTS 8 // doubles in the pinned h_result slot

static inline msp__cuda_ctx *msp__cuda(msp_context ctx) {
  return (msp__cuda_ctx *)ctx->impl;
}

// A matrix's device data: up to MSP__CUDA_MAX_ARRAYS device arrays owned by the matrix (freed
// by the backend's matrix_free), plus small per-format facts. Each format's upload fills the
// arrays in the order its .cu file documents.
#define MSP__CUDA_MAX_ARRAYS 24
typedef struct {
  void *d[MSP__CUDA_MAX_ARRAYS];
  size_t bytes[MSP__CUDA_MAX_ARRAYS];
  int count;
  int64_t i64[12]; // per-format scalars (e.g. widths, partition counts)
  void *extra;     // per-format host-side extra (freed with msp__free when not NULL)
} msp__cuda_matrix;

#ifdef __cplusplus
extern "C" {
#endif
// Allocate a zeroed device matrix record on A->dev (call first in an upload).
msp_status msp__cuda_matrix_new(msp_matrix A, msp__cuda_matrix **out);
// Allocate device array slot `slot` of `bytes` and copy `host` (may be NULL: zero-filled) in,
// on the context's stream. bytes == 0 leaves the slot NULL.
msp_status msp__cuda_matrix_put(msp_context ctx, msp__cuda_matrix *m, int slot, const void *host,
                                size_t bytes);

// A format's upload (src/cuda/<fmt>.cu): builds A->dev from A's host data. backend.cu calls it
// through its per-format table; on failure backend.cu frees whatever A->dev holds.
typedef msp_status (*msp__cuda_upload_fn)(msp_context ctx, msp_matrix A);

// CSR (csr.cu): upload and y = alpha*A*x + beta*y with A->kernel (scalar, vector, merge), for
// every storage precision of the values (other than f64: A->pval), of x and of y, read and
// written through src/cuda/access.cuh. The merge path writes a fixed-point y through
// msp__cuda_spmv_fixed_y.
msp_status msp__cuda_csr_upload(msp_context ctx, msp_matrix A);
msp_status msp__cuda_csr_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                              double beta, msp_vector y);

// y = alpha*A*x + beta*y into a fixed-point y for the kernels that cannot set its block scales
// themselves (blas1.cu): spmv (a format's product) writes alpha*A*x into the context's fp64 work
// vector, then one pass over y, a warp per block of 32 values, adds beta*y and stores the block
// with its scale (ystore_warp). Used where a row is finished by one lane or a fix-up rather than
// by a warp holding an aligned block of 32 rows (merge-path CSR, COO, HYB, BDMP-TCKI): 16 more
// bytes per row than a kernel that stores y itself.
msp_status msp__cuda_spmv_fixed_y(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                                  double beta, msp_vector y, msp__spmv_fn spmv);

// The context's fp64 work array *d, grown to v's length (*have values; role, "x" or "y", names v
// in the error), and t, a shallow copy of v whose device data is that array (blas1.cu): the f64
// vector a format's kernel reads or writes in v's place.
msp_status msp__cuda_f64_work(msp_context ctx, double **d, int64_t *have, const msp_vector v,
                              struct msp_vector_s *t, const char *role);

// A format's product for an x of any precision (spmv_x.cu): spmv itself where the kernels are
// compiled for the pair (A's values, x) (msp__pair_compiled, access.cuh); otherwise spmv on an
// f64 copy of x in the context's work vector, made on the context's stream by x's own loader (the
// same numbers: f64 holds every value of the other precisions exactly). The backend's table
// holds msp__cuda_spmv_any_x<format's spmv>, so every product, the distributed layer's included,
// comes through it.
msp_status msp__cuda_spmv_x(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                            double beta, msp_vector y, msp__spmv_fn spmv);

// COO, ELL, HLL, DIA, HDIA, HYB (coo.cu, ell.cu, hll.cu, dia.cu, hdia.cu, hyb.cu): upload from
// A->fmt (values: the host f64 array or A->pval, in the format's own order) and
// y = alpha*A*x + beta*y for every storage precision of A, x and y, one kernel per format
// (deterministic, no atomics). COO and HYB write a fixed-point y through msp__cuda_spmv_fixed_y.
msp_status msp__cuda_coo_upload(msp_context ctx, msp_matrix A);
msp_status msp__cuda_coo_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                              double beta, msp_vector y);
msp_status msp__cuda_ell_upload(msp_context ctx, msp_matrix A);
msp_status msp__cuda_ell_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                              double beta, msp_vector y);
msp_status msp__cuda_hll_upload(msp_context ctx, msp_matrix A);
msp_status msp__cuda_hll_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                              double beta, msp_vector y);
msp_status msp__cuda_dia_upload(msp_context ctx, msp_matrix A);
msp_status msp__cuda_dia_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                              double beta, msp_vector y);
msp_status msp__cuda_hdia_upload(msp_context ctx, msp_matrix A);
msp_status msp__cuda_hdia_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                               double beta, msp_vector y);
msp_status msp__cuda_hyb_upload(msp_context ctx, msp_matrix A);
msp_status msp__cuda_hyb_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                              double beta, msp_vector y);

// BDMP-PBP / BDMP-TCKI (bdmp.cu): every storage precision of x and y (TCKI and PBP's merge path
// write a fixed-point y through msp__cuda_spmv_fixed_y).
msp_status msp__cuda_bdmp_pbp_upload(msp_context ctx, msp_matrix A);
// BDMP-PBP / BDMP-TCKI built on the device from A into B (bdmp_convert.cu, bdmp_tcki_convert.cu;
// the backend's bdmp_convert).
msp_status msp__cuda_bdmp_pbp_convert(msp_context ctx, const msp_matrix A, msp_matrix B);
msp_status msp__cuda_bdmp_tcki_convert(msp_context ctx, const msp_matrix A, msp_matrix B);
msp_status msp__cuda_bdmp_pbp_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                                   double beta, msp_vector y);
msp_status msp__cuda_bdmp_tcki_upload(msp_context ctx, msp_matrix A);
msp_status msp__cuda_bdmp_tcki_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                                    double beta, msp_vector y);

// Vector operations (blas1.cu) on the vectors' encoded device data, in every storage precision
// (x and y each in their own), fp64 arithmetic; results rounded into the written vector's
// precision (fixed point: a scale per 32 values from their new values; overflow saturated and
// counted in its d_range). Deterministic for any device (fixed grid and summation order).
// Reductions synchronise the context's stream to hand back the scalar; the rest only enqueue.
msp_status msp__cuda_dot(msp_context ctx, msp_vector x, msp_vector y, double *r);
msp_status msp__cuda_nrm2(msp_context ctx, msp_vector x, double *r);
msp_status msp__cuda_nrm1(msp_context ctx, msp_vector x, double *r);
msp_status msp__cuda_axpby(msp_context ctx, double a, msp_vector x, double b, msp_vector y);
msp_status msp__cuda_scale(msp_context ctx, double a, msp_vector x);
msp_status msp__cuda_copy(msp_context ctx, msp_vector x, msp_vector y);
msp_status msp__cuda_fill(msp_context ctx, msp_vector x, double value);

// PageRank (pagerank.cu): the graph's device copy, or G^T built on the device, and one power
// iteration (msp__backend's pr_upload, pr_transpose, pr_free, pr_step).
msp_status msp__cuda_pr_upload(msp_context ctx, msp__prgraph *g);
msp_status msp__cuda_pr_transpose(msp_context ctx, const msp_matrix G, const int32_t *inv,
                                  msp__prgraph *g);
void msp__cuda_pr_free(msp_context ctx, msp__prgraph *g);
msp_status msp__cuda_pr_step(msp_context ctx, const msp__prgraph *g, const msp__pr_step *a,
                             double sums[3]);
#ifdef __cplusplus
}
#endif

// The backend table's entry for a format's product F: msp__cuda_spmv_x around it.
template <msp__spmv_fn F>
static msp_status msp__cuda_spmv_any_x(msp_context ctx, double alpha, const msp_matrix A,
                                       msp_vector x, double beta, msp_vector y) {
  return msp__cuda_spmv_x(ctx, alpha, A, x, beta, y, F);
}

// Number of blocks of `block` threads that cover n items (n > 0; callers skip empty launches).
static inline unsigned msp__cuda_blocks(int64_t n, int block) {
  return (unsigned)((n + block - 1) / block);
}

#endif

// prec_formats.cu: CUDA SpMV of COO, ELL, HLL, DIA, HDIA and HYB with values in any storage
// precision.
//
// The values are A->pval (msp__matrix_encode_values: the format's value array in its own order;
// HYB's COO values follow its ELL part), read through the accessors of src/common/precision.h;
// arithmetic is fp64. One thread per row, summing in the order of the CPU kernels
// (src/cpu/prec_formats.c): the same sums, deterministic. Device arrays (msp__cuda_matrix slots):
//   all formats: d[0] values (encoded bytes), d[1] scales (fixed point only)
//   COO : d[2] row pointers int64[rows+1] (the COO is sorted by row: its CSR row pointers),
//         d[3] columns int32[nnz]
//   ELL : d[2] columns int32[rows * width]; i64[0] width
//   HLL : d[2] columns, d[3] hack offsets int64[nhacks+1]; i64[0] hack
//   DIA : d[2] offsets int64[ndiag]; i64[0] ndiag
//   HDIA: d[2] offsets, d[3] doff int64[nhacks+1], d[4] voff int64[nhacks+1]; i64[0] hack
//   HYB : d[2] ELL columns, d[3] COO columns, d[4] COO row pointers int64[rows+1]; i64[0] K
#include "cuda_internal.cuh"
#include "precision.h"

#define PF_THREADS 256

enum { S_VAL, S_SCALES, S_A, S_B, S_C };

__device__ __forceinline__ void pf_store(double *y, int64_t i, double alpha, double s,
                                         double beta) {
  y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
}

template <int P>
__global__ void __launch_bounds__(PF_THREADS)
    coo_prec(int64_t rows, msp_acc acc, const int64_t *__restrict__ rp,
             const int32_t *__restrict__ col, const double *__restrict__ x, double alpha,
             double beta, double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * PF_THREADS + threadIdx.x;
  if (i >= rows) return;
  const msp_acc a = acc; // a local copy: a parameter's address would go to local memory
  double s = 0.0;
  for (int64_t k = rp[i]; k < rp[i + 1]; k++)
    s += msp_acc_load_p((msp_precision)P, &a, k) * __ldg(x + __ldg(col + k));
  pf_store(y, i, alpha, s, beta);
}

template <int P>
__global__ void __launch_bounds__(PF_THREADS)
    ell_prec(int64_t rows, msp_acc acc, const int32_t *__restrict__ col, int64_t width,
             const int32_t *__restrict__ ccol, const int64_t *__restrict__ crp,
             const double *__restrict__ x, double alpha, double beta, double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * PF_THREADS + threadIdx.x;
  if (i >= rows) return;
  const msp_acc a = acc;
  double s = 0.0;
  for (int64_t k = 0; k < width; k++) {
    const int64_t q = k * rows + i; // column-major: consecutive threads, consecutive slots
    s += msp_acc_load_p((msp_precision)P, &a, q) * __ldg(x + __ldg(col + q));
  }
  if (crp) { // HYB: the row's COO entries, stored after the ELL part
    const int64_t base = rows * width;
    for (int64_t k = crp[i]; k < crp[i + 1]; k++)
      s += msp_acc_load_p((msp_precision)P, &a, base + k) * __ldg(x + __ldg(ccol + k));
  }
  pf_store(y, i, alpha, s, beta);
}

template <int P>
__global__ void __launch_bounds__(PF_THREADS)
    hll_prec(int64_t rows, msp_acc acc, const int32_t *__restrict__ col,
             const int64_t *__restrict__ off, int64_t hack, const double *__restrict__ x,
             double alpha, double beta, double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * PF_THREADS + threadIdx.x;
  if (i >= rows) return;
  const msp_acc a = acc;
  const int64_t h = i / hack, r = i - h * hack;
  const int64_t o0 = off[h], width = (off[h + 1] - o0) / hack;
  double s = 0.0;
  for (int64_t k = 0; k < width; k++) {
    const int64_t q = o0 + k * hack + r;
    s += msp_acc_load_p((msp_precision)P, &a, q) * __ldg(x + __ldg(col + q));
  }
  pf_store(y, i, alpha, s, beta);
}

template <int P>
__global__ void __launch_bounds__(PF_THREADS)
    dia_prec(int64_t rows, int64_t cols, msp_acc acc, const int64_t *__restrict__ offsets,
             int64_t ndiag, const double *__restrict__ x, double alpha, double beta,
             double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * PF_THREADS + threadIdx.x;
  if (i >= rows) return;
  const msp_acc a = acc;
  double s = 0.0;
  for (int64_t d = 0; d < ndiag; d++) {
    const int64_t j = i + offsets[d];
    if (j >= 0 && j < cols) s += msp_acc_load_p((msp_precision)P, &a, d * rows + i) * __ldg(x + j);
  }
  pf_store(y, i, alpha, s, beta);
}

template <int P>
__global__ void __launch_bounds__(PF_THREADS)
    hdia_prec(int64_t rows, int64_t cols, msp_acc acc, const int64_t *__restrict__ offsets,
              const int64_t *__restrict__ doff, const int64_t *__restrict__ voff, int64_t hack,
              const double *__restrict__ x, double alpha, double beta, double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * PF_THREADS + threadIdx.x;
  if (i >= rows) return;
  const msp_acc a = acc;
  const int64_t h = i / hack, r = i - h * hack;
  const int64_t d0 = doff[h], nd = doff[h + 1] - d0, v0 = voff[h];
  double s = 0.0;
  for (int64_t d = 0; d < nd; d++) {
    const int64_t j = i + offsets[d0 + d];
    if (j >= 0 && j < cols)
      s += msp_acc_load_p((msp_precision)P, &a, v0 + d * hack + r) * __ldg(x + j);
  }
  pf_store(y, i, alpha, s, beta);
}

// ---- uploads
// -------------------------------------------------------------------------------------
static msp_status put_values(msp_context ctx, msp__cuda_matrix *m, const msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(msp__cuda_matrix_put(ctx, m, S_VAL, A->pval->data,
                               (size_t)A->pval->n * msp__prec_bytes(A->precision)));
  if (A->pval->scales)
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_SCALES, A->pval->scales,
                                 (size_t)A->pval->nscales * sizeof(double)));
exit:
  return st;
}

static msp_status check(const msp_matrix A, const char *what) {
  if (!A->pval || !A->fmt)
    return msp__error(MSP_ERR_INTERNAL, "%s upload (cuda): %s matrix without encoded values", what,
                      msp_precision_name(A->precision));
  return MSP_SUCCESS;
}

extern "C" msp_status msp__cuda_coo_prec_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  MSP_TRY(check(A, "coo"));
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(put_values(ctx, m, A));
  // sorted by row then column, exactly the CSR order: the CSR row pointers delimit its rows
  MSP_TRY(msp__cuda_matrix_put(ctx, m, S_A, A->rowptr, (size_t)(A->rows + 1) * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, S_B, ((const msp__coo *)A->fmt)->col,
                               (size_t)A->nnz * sizeof(int32_t)));
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  return st;
}

extern "C" msp_status msp__cuda_ell_prec_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  MSP_TRY(check(A, "ell"));
  {
    const msp__ell *e = (const msp__ell *)A->fmt;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    MSP_TRY(put_values(ctx, m, A));
    MSP_TRY(
        msp__cuda_matrix_put(ctx, m, S_A, e->col, (size_t)(A->rows * e->width) * sizeof(int32_t)));
    m->i64[0] = e->width;
  }
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  return st;
}

extern "C" msp_status msp__cuda_hll_prec_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  MSP_TRY(check(A, "hll"));
  {
    const msp__hll *H = (const msp__hll *)A->fmt;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    MSP_TRY(put_values(ctx, m, A));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_A, H->col, (size_t)H->off[H->nhacks] * sizeof(int32_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_B, H->off, (size_t)(H->nhacks + 1) * sizeof(int64_t)));
    m->i64[0] = H->hack;
  }
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  return st;
}

extern "C" msp_status msp__cuda_dia_prec_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  MSP_TRY(check(A, "dia"));
  {
    const msp__dia *D = (const msp__dia *)A->fmt;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    MSP_TRY(put_values(ctx, m, A));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_A, D->offsets, (size_t)D->ndiag * sizeof(int64_t)));
    m->i64[0] = D->ndiag;
  }
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  return st;
}

extern "C" msp_status msp__cuda_hdia_prec_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  MSP_TRY(check(A, "hdia"));
  {
    const msp__hdia *H = (const msp__hdia *)A->fmt;
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    MSP_TRY(put_values(ctx, m, A));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_A, H->offsets,
                                 (size_t)H->doff[H->nhacks] * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_B, H->doff, (size_t)(H->nhacks + 1) * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_C, H->voff, (size_t)(H->nhacks + 1) * sizeof(int64_t)));
    m->i64[0] = H->hack;
  }
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  return st;
}

extern "C" msp_status msp__cuda_hyb_prec_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  int64_t *crp = NULL;
  MSP_TRY(check(A, "hyb"));
  {
    const msp__hyb *H = (const msp__hyb *)A->fmt;
    MSP_TRY(MSP_ALLOC_ZERO(crp, A->rows + 1, "HYB COO row pointers"));
    for (int64_t k = 0; k < H->coo_nnz; k++)
      crp[H->coo.row[k] + 1]++;
    for (int64_t i = 0; i < A->rows; i++)
      crp[i + 1] += crp[i];
    MSP_TRY(msp__cuda_matrix_new(A, &m));
    MSP_TRY(put_values(ctx, m, A));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_A, H->ell.col,
                                 (size_t)(A->rows * H->ell.width) * sizeof(int32_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_B, H->coo.col, (size_t)H->coo_nnz * sizeof(int32_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, S_C, crp, (size_t)(A->rows + 1) * sizeof(int64_t)));
    m->i64[0] = H->ell.width;
  }
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  msp__free(crp);
  return st;
}

// ---- products
// ------------------------------------------------------------------------------------
template <int P>
static void launch(msp_format f, const msp__cuda_matrix *m, const msp_matrix A, msp_acc acc,
                   const double *x, double alpha, double beta, double *y, cudaStream_t s) {
  const int64_t rows = A->rows;
  const unsigned blocks = msp__cuda_blocks(rows, PF_THREADS);
  switch (f) {
  case MSP_FORMAT_COO:
    coo_prec<P><<<blocks, PF_THREADS, 0, s>>>(rows, acc, (const int64_t *)m->d[S_A],
                                              (const int32_t *)m->d[S_B], x, alpha, beta, y);
    break;
  case MSP_FORMAT_ELL:
    ell_prec<P><<<blocks, PF_THREADS, 0, s>>>(rows, acc, (const int32_t *)m->d[S_A], m->i64[0],
                                              NULL, NULL, x, alpha, beta, y);
    break;
  case MSP_FORMAT_HYB:
    ell_prec<P><<<blocks, PF_THREADS, 0, s>>>(rows, acc, (const int32_t *)m->d[S_A], m->i64[0],
                                              (const int32_t *)m->d[S_B],
                                              (const int64_t *)m->d[S_C], x, alpha, beta, y);
    break;
  case MSP_FORMAT_HLL:
    hll_prec<P><<<blocks, PF_THREADS, 0, s>>>(rows, acc, (const int32_t *)m->d[S_A],
                                              (const int64_t *)m->d[S_B], m->i64[0], x, alpha, beta,
                                              y);
    break;
  case MSP_FORMAT_DIA:
    dia_prec<P><<<blocks, PF_THREADS, 0, s>>>(rows, A->cols, acc, (const int64_t *)m->d[S_A],
                                              m->i64[0], x, alpha, beta, y);
    break;
  case MSP_FORMAT_HDIA:
    hdia_prec<P><<<blocks, PF_THREADS, 0, s>>>(
        rows, A->cols, acc, (const int64_t *)m->d[S_A], (const int64_t *)m->d[S_B],
        (const int64_t *)m->d[S_C], m->i64[0], x, alpha, beta, y);
    break;
  default:
    break;
  }
}

static msp_status prec_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                            double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  if (A->rows == 0) return MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  if (!m || !A->pval)
    return msp__error(MSP_ERR_INTERNAL, "%s spmv (cuda): the matrix has no device data",
                      msp_format_name(A->format));
  msp_acc acc = msp__prec_view(A->pval, A->opts.cpms_segments);
  acc.data = m->d[S_VAL];
  acc.scales = (const double *)m->d[S_SCALES];
  const cudaStream_t s = msp__cuda(ctx)->stream;
  switch (A->precision) {
#define MSP_PF_CASE_(name, tag, bytes)                                                             \
  case MSP_PRECISION_##name:                                                                       \
    launch<MSP_PRECISION_##name>(A->format, m, A, acc, x->d_data, alpha, beta, y->d_data, s);      \
    break;
    MSP_PRECISION_LIST(MSP_PF_CASE_)
#undef MSP_PF_CASE_
  default:
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "spmv (cuda): unknown precision %d",
                      (int)A->precision);
  }
  MSP_CUDA_CHECK_LAUNCH("prec_formats kernel");
exit:
  return st;
}

#define MSP_PF_ENTRY_(fmt)                                                                         \
  extern "C" msp_status msp__cuda_##fmt##_prec_spmv(msp_context ctx, double alpha,                 \
                                                    const msp_matrix A, msp_vector x, double beta, \
                                                    msp_vector y) {                                \
    return prec_spmv(ctx, alpha, A, x, beta, y);                                                   \
  }
MSP_PF_ENTRY_(coo)
MSP_PF_ENTRY_(ell)
MSP_PF_ENTRY_(hll)
MSP_PF_ENTRY_(dia)
MSP_PF_ENTRY_(hdia)
MSP_PF_ENTRY_(hyb)

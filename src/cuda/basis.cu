// basis.cu: CUDA Krylov-basis operations of GMRES over the compressed basis (store, projection,
// subtraction, combination) and the pointwise product of Jacobi, fp64 arithmetic; the
// subtraction and the combination are in basis_update.cu.
//
// Aliaga, Anzt, Grutzmacher, Quintana-Orti, Tomas, "Compressed basis GMRES" ("Memory accessor"):
// the basis stays on the device in its storage precision and every load converts to double
// (loader<P> of access.cuh, one template per operation instantiated through msp__prec_dispatch);
// nothing is decoded into an fp64 copy, so a projection over an f32 basis reads half the bytes of
// an f64 one. Each operation is one fused pass over the columns it needs:
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
#include "basis.cuh"

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

// One block per value, one copy to the host.
msp_status msp__cuda_basis_finish(msp_context ctx, const msp__basis *V, int cnt, double *h,
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
// SCALE: the scale of precision p for that maximum; otherwise the maximum itself (the distributed
// layer takes the maximum over every rank first).
template <bool SCALE>
__global__ void __launch_bounds__(RED_THREADS)
    absmax_scale(int64_t nb, const double *__restrict__ partial, msp_precision p,
                 double *__restrict__ out) {
  double m = 0.0;
  for (int64_t b = threadIdx.x; b < nb; b += RED_THREADS)
    m = msp_absmax_step(m, partial[b]);
  m = block_reduce<true>(m);
  if (threadIdx.x == 0) *out = SCALE ? msp_fx_block_scale(p, m) : m;
}

__global__ void set_scale(double *scale, double v) {
  *scale = v;
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
// a fixed-point store), then the cols + 1 sums of one call; or DCGS2's (basis_dcgs2.cu).
extern "C" msp_status msp__cuda_basis_alloc(msp_context ctx, int64_t n, int cols,
                                            msp_precision prec, msp__basis **out) {
  msp_status st = MSP_SUCCESS;
  msp__basis *V = NULL;
  *out = NULL;
  const int64_t nb = proj_blocks(n) > 0 ? proj_blocks(n) : 1;
  const size_t bytes = msp__prec_bytes(prec);
  const size_t vals = (size_t)col_ld(n > 0 ? n : 1) * (size_t)cols;
  // the larger of the projections' (cols + 1) (nb + 1) and DCGS2's 2 cols nw + 4 cols + 1
  // (basis_dcgs2.cu: nw warp partials per value)
  const size_t work1 = ((size_t)nb + 1) * ((size_t)cols + 1);
  const size_t work2 = 2 * (size_t)cols * (size_t)dcgs2_warps(n > 0 ? n : 1) + 4 * (size_t)cols + 1;
  const size_t work = work1 > work2 ? work1 : work2;
  MSP_TRY(MSP_ALLOC_ZERO(V, 1, "GMRES Krylov basis"));
  MSP_TRY(msp__basis_header(V, n, cols, prec));
  V->nchunks = nb;
  MSP_CUDA_TRY(cudaSetDevice(ctx->device));
  // Not zeroed: GMRES reads only the columns it has stored. But each column's padding (rows n to
  // col_ld(n)) is: the passes that copy whole 16-byte pieces or tiles read it and never use it.
  MSP_CUDA_TRY(cudaMalloc(&V->data, vals * bytes));
  {
    const int64_t ld = col_ld(n > 0 ? n : 1), used = n > 0 ? n : 0;
    if (ld > used)
      MSP_CUDA_TRY(cudaMemset2DAsync((char *)V->data + (size_t)used * bytes, (size_t)ld * bytes, 0,
                                     (size_t)(ld - used) * bytes, (size_t)cols,
                                     msp__cuda(ctx)->stream));
  }
  if (msp_prec_is_fixed(prec)) {
    MSP_CUDA_TRY(cudaMalloc((void **)&V->scales, (size_t)cols * sizeof(double)));
    MSP_CUDA_TRY(
        cudaMemsetAsync(V->scales, 0, (size_t)cols * sizeof(double), msp__cuda(ctx)->stream));
  }
  MSP_CUDA_TRY(cudaMalloc((void **)&V->work, work * sizeof(double)));
  // the projections' values, or DCGS2's 2 cols values and 2 cols coefficients
  MSP_CUDA_TRY(cudaMallocHost((void **)&V->host_h, (4 * (size_t)cols + 1) * sizeof(double)));
  msp__cuda_basis_setup(ctx, V);
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

// Column j = w rounded by the store, w = the values as stored (the column's scale set before).
static msp_status store_column(msp_context ctx, msp__basis *V, int j, msp_vector w) {
  const bview b = view_of(V);
  double *d = (double *)w->d_data;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  return msp__prec_dispatch(V->prec, [&](auto pc) -> msp_status {
    msp_status st = MSP_SUCCESS;
    store_kernel<decltype(pc)::value><<<ew_blocks(ctx, V->n), EW_THREADS, 0, s>>>(b, j, d);
    MSP_CUDA_CHECK_LAUNCH("store_kernel");
  exit:
    return st;
  });
}

// max |w_i| (NaN kept) into *out on the device: the partials in V's workspace, then one block.
template <bool SCALE>
static msp_status absmax_of(msp_context ctx, const msp__basis *V, msp_vector w, double *out) {
  msp_status st = MSP_SUCCESS;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t nb = proj_blocks(V->n);
  absmax_partials<<<(unsigned)nb, PROJ_THREADS, 0, s>>>(V->n, (const double *)w->d_data, V->work);
  MSP_CUDA_CHECK_LAUNCH("absmax_partials");
  absmax_scale<SCALE><<<1, RED_THREADS, 0, s>>>(nb, V->work, V->prec, out);
  MSP_CUDA_CHECK_LAUNCH("absmax_scale");
exit:
  return st;
}

extern "C" msp_status msp__cuda_basis_store(msp_context ctx, msp__basis *V, int j, msp_vector w) {
  msp_status st = MSP_SUCCESS;
  if (V->n == 0) goto exit;
  if (msp_prec_is_fixed(V->prec)) MSP_TRY(absmax_of<true>(ctx, V, w, V->scales + j));
  MSP_TRY(store_column(ctx, V, j, w));
exit:
  return st;
}

// For the distributed layer, whose fixed-point column takes its scale from max |w| over every
// rank: this rank's max |w_i| left on the device (*dv, in V's workspace until its next
// operation), and column j stored with a given scale.
extern "C" msp_status msp__cuda_basis_absmax_dev(msp_context ctx, const msp__basis *V, msp_vector w,
                                                 const double **dv) {
  msp_status st = MSP_SUCCESS;
  double *out = V->work + proj_blocks(V->n > 0 ? V->n : 1);
  *dv = NULL;
  if (V->n == 0) {
    MSP_CUDA_TRY(cudaMemsetAsync(out, 0, sizeof *out, msp__cuda(ctx)->stream));
  } else {
    MSP_TRY(absmax_of<false>(ctx, V, w, out));
  }
  *dv = out;
exit:
  return st;
}

extern "C" msp_status msp__cuda_basis_store_scaled(msp_context ctx, msp__basis *V, int j,
                                                   msp_vector w, double scale) {
  msp_status st = MSP_SUCCESS;
  set_scale<<<1, 1, 0, msp__cuda(ctx)->stream>>>(V->scales + j, scale);
  MSP_CUDA_CHECK_LAUNCH("set_scale");
  if (V->n > 0) MSP_TRY(store_column(ctx, V, j, w));
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
  MSP_TRY(msp__cuda_basis_finish(ctx, V, cnt, h, ww));
exit:
  return st;
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

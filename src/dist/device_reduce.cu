// device_reduce.cu: the reductions of CUDA ranks over NCCL (the ranks' values gathered on the
// device and combined there in rank order, the same bits as the host transport's MPI path), this
// rank's parts of them left on the device (dot products, norms, PageRank's sums, DCGS2's
// projection), and a fixed-point Krylov column's scale over the ranks.
#include "device.cuh"

// ---- kernels ------------------------------------------------------------------------------------
// The ranks' values combined in rank order (all: size rows of m values and a status), one thread
// per result, with explicit IEEE operations (no contraction) so that the host's combination of
// the same values (reduce.c) has the same bits; out: the m results, then the size statuses.
__global__ void combine_ranks(const double *__restrict__ all, int size, int m, int mode,
                              double *__restrict__ out) {
  const int ld = m + 1;
  for (int k = threadIdx.x; k < m; k += blockDim.x) {
    double t = all[k];
    if (mode == MSP__DIST_SUM) {
      for (int q = 1; q < size; q++)
        t = __dadd_rn(t, all[(size_t)q * ld + k]);
    } else {
      double mx = 0.0;
      for (int q = 0; q < size; q++)
        mx = msp_absmax_step(mx, all[(size_t)q * ld + k]);
      t = mx;
      if (mode == MSP__DIST_NRM2 && mx != 0.0 && isfinite(mx)) {
        double sq = 0.0;
        for (int q = 0; q < size; q++) {
          const double v = __ddiv_rn(all[(size_t)q * ld + k], mx);
          sq = __dadd_rn(sq, __dmul_rn(v, v));
        }
        t = __dmul_rn(mx, __dsqrt_rn(sq));
      }
    }
    out[k] = t;
  }
  for (int q = threadIdx.x; q < size; q += blockDim.x)
    out[m + q] = all[(size_t)q * ld + m];
}
__global__ void put_value(double *p, double v) {
  *p = v;
}
// A rank's 2-norm from the first pass of msp__cuda_nrm2 (sm: the sum of squares and the largest
// magnitude; NULL: no rows), as that function takes it: out[0] the norm, out[1] 1 where the pass
// cannot give it (the sum overflowed or may have lost squares to underflow: a second pass).
__global__ void nrm2_local(const double *sm, double *out) {
  double r = 0.0, second = 0.0;
  if (sm) {
    const double s = sm[0], m = sm[1];
    if (m == 0.0 || !isfinite(m))
      r = m;
    else if (isfinite(s) && m >= 0x1p-450)
      r = __dsqrt_rn(s);
    else
      second = 1.0;
  }
  out[0] = r;
  out[1] = second;
}

// ---- a fixed-point Krylov column over the ranks ------------------------------------------------
msp_status msp__dev_absmax(msp_context ctx, const msp__basis *V, msp_vector w, double *m) {
  msp_status st = MSP_SUCCESS;
  dev_ctx *c = (dev_ctx *)msp__dist_of(ctx)->dev;
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const double *dv = NULL;
  MSP_TRY(msp__cuda_basis_absmax_dev(ctx, V, w, &dv));
  MSP_CUDA_TRY(cudaMemcpyAsync(c->h_max, dv, sizeof(double), cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
  *m = *c->h_max;
exit:
  return st;
}

// ---- reductions over NCCL ----------------------------------------------------------------------
// On the compute stream, after the step that made the values: this rank's values and status into
// the send buffer, one ncclAllGather of every rank's into d_all, the combination in rank order,
// one copy of the results and statuses to the host and the one wait. A rank whose step failed
// still takes part (zeros and its status), so no rank is left waiting.
msp_status msp__dev_reduce(msp_dist d, const double *v, const double *dv, int m, msp_status lst,
                           int mode, double *out, int *codes, double *seconds) {
  msp_status st = MSP_SUCCESS;
#ifdef MSP_HAVE_NCCL
  dev_ctx *c = (dev_ctx *)d->dev;
  const cudaStream_t s = msp__cuda(d->ctx)->stream;
  int gathering = 0; // 1 from the steps whose failure leaves the others in the gather
  *seconds = 0.0;
  if (d->failed != MSP_SUCCESS) return msp__dist_failed_error(d);
  if (!c->nccl) return msp__error(MSP_ERR_INTERNAL, "distributed reduction: no NCCL communicator");
  MSP_CUDA_TRY(cudaSetDevice(c->device));
  if (m > c->red_cap) {
    // every rank reduces the same number of values, so every rank grows here; agreed, since a
    // rank that could not would leave the others in the gather; after a failure every rank has
    // none (red_cap 0), so the next reduction grows on every rank again
    int cap = c->red_cap > RED_VALUES ? c->red_cap : RED_VALUES;
    while (cap < m)
      cap *= 2;
    msp_status gst =
        cudaEventRecord(c->red1, s) == cudaSuccess
            ? MSP_SUCCESS
            : msp__cuda_status(cudaGetLastError(), "cudaEventRecord", __FILE__, __LINE__);
    if (gst == MSP_SUCCESS) gst = msp__dev_wait(d, c->red1); // (the buffers are in use until then)
    if (gst == MSP_SUCCESS) gst = msp__dev_red_buffers(c, cap);
    st = msp__dist_agree(d, gst);
    if (st != MSP_SUCCESS) {
      msp__dev_red_release(c);
      goto exit;
    }
  }
  gathering = 1;
  MSP_CUDA_TRY(cudaEventRecord(c->red0, s)); // (once the step's values are made)
  if (lst == MSP_SUCCESS && dv) {
    MSP_CUDA_TRY(
        cudaMemcpyAsync(c->d_send, dv, (size_t)m * sizeof(double), cudaMemcpyDeviceToDevice, s));
  } else if (lst == MSP_SUCCESS && v) {
    memcpy(c->h_in, v, (size_t)m * sizeof(double)); // (the last reduction's copy has finished)
    MSP_CUDA_TRY(
        cudaMemcpyAsync(c->d_send, c->h_in, (size_t)m * sizeof(double), cudaMemcpyHostToDevice, s));
  } else if (m > 0) {
    MSP_CUDA_TRY(cudaMemsetAsync(c->d_send, 0, (size_t)m * sizeof(double), s));
  }
  put_value<<<1, 1, 0, s>>>(c->d_send + m, (double)lst);
  MSP_CUDA_CHECK_LAUNCH("put_value");
  NCCL_TRY(ncclAllGather(c->d_send, c->d_all, (size_t)m + 1, ncclDouble, c->nccl, s));
  combine_ranks<<<1, 256, 0, s>>>(c->d_all, c->size, m, mode, c->d_out);
  MSP_CUDA_CHECK_LAUNCH("combine_ranks");
  MSP_CUDA_TRY(cudaMemcpyAsync(c->h_out, c->d_out, ((size_t)m + (size_t)c->size) * sizeof(double),
                               cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaEventRecord(c->red1, s));
  gathering = 0; // (the wait gives NCCL up itself on a failure)
  MSP_TRY(msp__dev_wait(d, c->red1));
  {
    float ms = 0.0f;
    MSP_CUDA_TRY(cudaEventElapsedTime(&ms, c->red0, c->red1));
    *seconds = 1e-3 * ms;
  }
  if (m > 0) memcpy(out, c->h_out, (size_t)m * sizeof(double));
  for (int q = 0; q < c->size; q++)
    codes[q] = (int)c->h_out[m + q];
exit:
  if (st != MSP_SUCCESS && gathering) st = msp__dev_give_up(d, st);
#else
  (void)d, (void)v, (void)dv, (void)m, (void)lst, (void)mode, (void)out, (void)codes;
  *seconds = 0.0;
  st = msp__error(MSP_ERR_NOT_BUILT, "distributed reduction: built without NCCL");
#endif
  return st;
}

msp_status msp__dev_dcgs2_sums(msp_context ctx, const msp__basis *V, int j, msp_vector w,
                               const double **dv) {
  return msp__cuda_basis_dcgs2_sums(ctx, V, j, w, dv);
}

// NCCL's collectives connected: one gather of one value, waited for.
msp_status msp__dev_warm(msp_dist d) {
  msp_status st = MSP_SUCCESS;
  const double zero = 0.0;
  double out = 0.0, seconds = 0.0;
  int *codes = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(codes, d->size, "distributed context"));
  st = msp__dev_reduce(d, &zero, NULL, 1, MSP_SUCCESS, MSP__DIST_SUM, &out, codes, &seconds);
exit:
  msp__free(codes);
  return st;
}

// ---- this rank's part of a reduction, left on the device ---------------------------------------
msp_status msp__dev_dot_dev(msp_context ctx, msp_vector x, msp_vector y, const double **dv) {
  return msp__cuda_dot_dev(ctx, x, y, dv);
}

msp_status msp__dev_nrm1_dev(msp_context ctx, msp_vector x, const double **dv) {
  return msp__cuda_nrm1_dev(ctx, x, dv);
}

msp_status msp__dev_nrm2_dev(msp_context ctx, msp_vector x, const double **dv) {
  msp_status st = MSP_SUCCESS;
  dev_ctx *c = (dev_ctx *)msp__dist_of(ctx)->dev;
  const double *sm = NULL;
  *dv = NULL;
  MSP_TRY(msp__cuda_nrm2_dev(ctx, x, &sm));
  nrm2_local<<<1, 1, 0, msp__cuda(ctx)->stream>>>(sm, c->d_loc);
  MSP_CUDA_CHECK_LAUNCH("nrm2_local");
  *dv = c->d_loc;
exit:
  return st;
}

msp_status msp__dev_pr_step_dev(msp_context ctx, const msp__prgraph *lg, const msp__pr_step *a,
                                const double **dv) {
  return msp__cuda_pr_step_dev(ctx, lg, a, dv);
}

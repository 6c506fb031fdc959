// device.cu: the device transport of CUDA ranks (msp__dist_devops): the halo gathered on the GPU,
// moved by NCCL or through pinned host buffers, and the split product overlapping it.
//
// A product of the split layout (dist.c, build_split) on the compute stream S of the context and
// the communication stream C of the distributed context, with no host synchronisation on the
// NCCL path and no allocation (every buffer is made with the matrix):
//   S: record ev_x (x ready);
//   C: wait ev_x; gather the entries the neighbours read into the send buffer (x's storage
//      precision for IEEE x; fixed point and CPMS decoded to f64);
//   S: meanwhile y = alpha Ad x + beta y (own columns: needs no halo), record ta;
//   C: grouped ncclSend / ncclRecv, each neighbour's entries straight into the halo vector (host
//      transport: the send buffer down to pinned memory, MPI between the pinned buffers once the
//      copy is done, the received halo up), record th;
//   S: wait th; yo = Ao halo; y[brow] += alpha yo.
// The own columns' product is enqueued before NCCL's calls, so that the device computes while the
// host enqueues the exchange (NCCL's group costs the host microseconds), and nothing of the
// exchange (the gather neither) stands before it on S; C has the device's highest priority, so
// that the gather's and NCCL's kernels get multiprocessors as soon as blocks of the product
// retire, and the halo arrives while the product runs.
// PSBLAS stages only the halo through the host (PSBLAS-Extensions reference guide: the GPU
// descriptor's exchange); PETSc splits a rank's rows into its diagonal and off-diagonal blocks so
// that the first product needs no communication (MatMult_MPIAIJ).
#include "device.cuh"

// ---- a rank that fails where the others wait for it in NCCL ------------------------------------
// This rank gives NCCL up after a failure st (its own, or another rank's notice already in
// d->failed): the others are told when it is its own (msp__dist_notify), the communicator is
// aborted (which ends NCCL's kernels waiting on this device). Returns st.
msp_status msp__dev_give_up(msp_dist d, msp_status st) {
  msp__dist_notify(d, st); // (nothing when a notice set d->failed first)
#ifdef MSP_HAVE_NCCL
  dev_ctx *c = (dev_ctx *)d->dev;
  if (c && c->nccl) {
    ncclCommAbort(c->nccl);
    c->nccl = NULL;
  }
#endif
  return st;
}

typedef struct {
  cudaEvent_t ev;
  dev_ctx *c;
} ev_poll;

// msp__dist_wait's poll of an event: done, not yet, or failed (the device, or NCCL's own error).
static int poll_event(void *arg, msp_status *st) {
  const ev_poll *w = (const ev_poll *)arg;
  const cudaError_t e = cudaEventQuery(w->ev);
  if (e == cudaSuccess) return 1;
  if (e != cudaErrorNotReady) {
    *st = msp__cuda_status(e, "cudaEventQuery", __FILE__, __LINE__);
    return -1;
  }
#ifdef MSP_HAVE_NCCL
  ncclResult_t a = ncclSuccess;
  if (w->c->nccl && ncclCommGetAsyncError(w->c->nccl, &a) == ncclSuccess && a != ncclSuccess &&
      a != ncclInProgress) {
    *st = nccl_status(a, "an operation");
    return -1;
  }
#endif
  return 0;
}

// Wait for ev. With NCCL (or after a failure) the wait watches for another rank's failure
// notice and gives NCCL up on a failure; otherwise a plain wait.
msp_status msp__dev_wait(msp_dist d, cudaEvent_t ev) {
  dev_ctx *c = (dev_ctx *)d->dev;
  int watch = d->failed != MSP_SUCCESS;
#ifdef MSP_HAVE_NCCL
  watch |= c->nccl != NULL;
#endif
  if (watch) {
    ev_poll w = {ev, c};
    const msp_status st = msp__dist_wait(d, poll_event, &w);
    return st == MSP_SUCCESS ? st : msp__dev_give_up(d, st);
  }
  const cudaError_t e = cudaEventSynchronize(ev);
  return e == cudaSuccess ? MSP_SUCCESS
                          : msp__cuda_status(e, "cudaEventSynchronize", __FILE__, __LINE__);
}

// ---- kernels ------------------------------------------------------------------------------------
// The entries sent, as stored (T: the element of an IEEE precision).
template <typename T>
__global__ void gather_raw(const T *__restrict__ x, const int32_t *__restrict__ idx, int64_t n,
                           T *__restrict__ out) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[idx[i]];
}
// The entries sent, decoded (fixed point, CPMS with its read segments).
__global__ void gather_decode(msp_acc xa, const int32_t *__restrict__ idx, int64_t n,
                              double *__restrict__ out) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = msp_acc_load(&xa, idx[i]);
}
// y[brow[k]] += a yo[k]: the halo columns' sums into their rows (each row once: no race).
__global__ void add_rows(double *__restrict__ y, const int32_t *__restrict__ brow,
                         const double *__restrict__ yo, int64_t n, double a) {
  const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n) y[brow[k]] += a * yo[k];
}

// PageRank's q = p ./ outdeg from the stored p (every segment: the value the update computed).
__global__ void pr_q_kernel(int64_t n, const int32_t *__restrict__ deg, msp_acc pn, msp_acc qn) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double x = msp_acc_load(&pn, i);
  msp_acc_store(&qn, i, deg[i] ? x / (double)deg[i] : 0.0);
}

// ---- the context --------------------------------------------------------------------------------
// The reduction buffers freed (none: red_cap 0).
void msp__dev_red_release(dev_ctx *c) {
  cudaFree(c->d_send);
  cudaFree(c->d_all);
  cudaFree(c->d_out);
  cudaFreeHost(c->h_out);
  cudaFreeHost(c->h_in);
  c->d_send = c->d_all = c->d_out = c->h_out = c->h_in = NULL;
  c->red_cap = 0;
}

static void dev_fini(msp_dist d) {
  dev_ctx *c = (dev_ctx *)d->dev;
  if (!c) return;
  (void)cudaSetDevice(c->device);
#ifdef MSP_HAVE_NCCL
  // (after a rank's failure the communicator is aborted: its destroy could wait for that rank)
  if (c->nccl && d->failed != MSP_SUCCESS)
    ncclCommAbort(c->nccl);
  else if (c->nccl)
    ncclCommDestroy(c->nccl);
#endif
  if (c->comm) cudaStreamDestroy(c->comm);
  cudaFree(c->d_loc);
  cudaFreeHost(c->h_max);
  msp__dev_red_release(c);
  if (c->red0) cudaEventDestroy(c->red0);
  if (c->red1) cudaEventDestroy(c->red1);
  msp__free(c);
  d->dev = NULL;
}

// The reduction buffers for cap values (the old ones freed: no reduction is in flight).
msp_status msp__dev_red_buffers(dev_ctx *c, int cap) {
  msp_status st = MSP_SUCCESS;
  const size_t ld = (size_t)cap + 1;
  msp__dev_red_release(c);
  MSP_CUDA_TRY(cudaMalloc(&c->d_send, ld * sizeof(double)));
  MSP_CUDA_TRY(cudaMalloc(&c->d_all, ld * (size_t)c->size * sizeof(double)));
  MSP_CUDA_TRY(cudaMalloc(&c->d_out, ((size_t)cap + (size_t)c->size) * sizeof(double)));
  MSP_CUDA_TRY(cudaMallocHost(&c->h_out, ((size_t)cap + (size_t)c->size) * sizeof(double)));
  MSP_CUDA_TRY(cudaMallocHost(&c->h_in, ld * sizeof(double)));
  c->red_cap = cap;
exit:
  return st;
}

static msp_status dev_init(msp_dist d, const void *nccl_id) {
  msp_status st = MSP_SUCCESS;
  dev_ctx *c = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(c, 1, "distributed device context"));
  d->dev = c;
  c->device = d->device;
  MSP_CUDA_TRY(cudaSetDevice(c->device));
  {
    // the device's highest priority (the smallest number) for the halo's stream
    int least = 0, greatest = 0;
    MSP_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    MSP_CUDA_TRY(cudaStreamCreateWithPriority(&c->comm, cudaStreamNonBlocking, greatest));
  }
  MSP_CUDA_TRY(cudaMalloc(&c->d_loc, 2 * sizeof(double)));
  MSP_CUDA_TRY(cudaMallocHost(&c->h_max, sizeof(double)));
  c->size = d->size;
  if (nccl_id) {
    MSP_TRY(msp__dev_red_buffers(c, RED_VALUES));
    MSP_CUDA_TRY(cudaEventCreate(&c->red0));
    MSP_CUDA_TRY(cudaEventCreate(&c->red1));
  }
  if (nccl_id) {
#ifdef MSP_HAVE_NCCL
    ncclUniqueId id;
    memcpy(&id, nccl_id, sizeof id);
    NCCL_TRY(ncclCommInitRank(&c->nccl, d->size, id, d->rank));
#else
    st = msp__error(MSP_ERR_NOT_BUILT, "msp_dist_create: built without NCCL");
#endif
  }
exit:
  return st;
}

#ifdef MSP_HAVE_NCCL
static msp_status dev_nccl_unique_id(void *id) {
  msp_status st = MSP_SUCCESS;
  static_assert(sizeof(ncclUniqueId) == MSP__DIST_NCCL_ID, "NCCL's unique id size");
  NCCL_TRY(ncclGetUniqueId((ncclUniqueId *)id));
exit:
  return st;
}
#endif

static msp_status dev_uuid(int device, unsigned char uuid[16]) {
  msp_status st = MSP_SUCCESS;
  cudaDeviceProp p;
  MSP_CUDA_TRY(cudaGetDeviceProperties(&p, device));
  memcpy(uuid, p.uuid.bytes, 16);
exit:
  return st;
}

// ---- the matrix's buffers ----------------------------------------------------------------------
static void dev_mat_free(msp__dist_mat *m) {
  dev_mat *b = (dev_mat *)m->dev;
  if (!b) return;
  (void)cudaSetDevice(m->d->device);
  cudaFree(b->d_sidx);
  cudaFree(b->d_brow);
  cudaFree(b->d_sbuf);
  cudaFreeHost(b->h_sbuf);
  cudaFreeHost(b->h_rbuf);
  if (b->ev_x) cudaEventDestroy(b->ev_x);
  if (b->ev_c) cudaEventDestroy(b->ev_c);
  for (int k = 0; k < RING; k++) {
    if (b->t0[k]) cudaEventDestroy(b->t0[k]);
    if (b->ta[k]) cudaEventDestroy(b->ta[k]);
    if (b->th[k]) cudaEventDestroy(b->th[k]);
    if (b->t1[k]) cudaEventDestroy(b->t1[k]);
  }
  msp__free(b);
  m->dev = NULL;
}

static msp_status dev_mat_init(msp_dist d, msp__dist_mat *m) {
  msp_status st = MSP_SUCCESS;
  dev_mat *b = NULL;
  const int64_t ns = m->soff[m->nsend], nh = m->nb + m->na;
  // The copies on the compute stream S (pageable sources: staged before the calls return), so
  // that the products enqueued after them on S, and the gathers on the communication stream
  // that wait for S, see them.
  const cudaStream_t S = msp__cuda(d->ctx)->stream;
  MSP_TRY(MSP_ALLOC_ZERO(b, 1, "distributed matrix device buffers"));
  m->dev = b;
  MSP_CUDA_TRY(cudaSetDevice(d->device));
  if (ns) {
    MSP_CUDA_TRY(cudaMalloc(&b->d_sidx, (size_t)ns * sizeof(int32_t)));
    MSP_CUDA_TRY(cudaMemcpyAsync(b->d_sidx, m->sidx, (size_t)ns * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, S));
    MSP_CUDA_TRY(cudaMalloc(&b->d_sbuf, (size_t)ns * sizeof(double)));
    MSP_CUDA_TRY(cudaMallocHost(&b->h_sbuf, (size_t)ns * sizeof(double)));
  }
  if (nh) MSP_CUDA_TRY(cudaMallocHost(&b->h_rbuf, (size_t)nh * sizeof(double)));
  if (m->boundary) {
    int32_t *tmp = NULL;
    MSP_TRY(MSP_ALLOC(tmp, m->boundary, "distributed matrix rows"));
    for (int64_t k = 0; k < m->boundary; k++)
      tmp[k] = (int32_t)m->brow[k];
    cudaError_t e = cudaMalloc(&b->d_brow, (size_t)m->boundary * sizeof(int32_t));
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(b->d_brow, tmp, (size_t)m->boundary * sizeof(int32_t),
                          cudaMemcpyHostToDevice, S);
    msp__free(tmp);
    MSP_CUDA_TRY(e);
  }
  MSP_CUDA_TRY(cudaEventCreateWithFlags(&b->ev_x, cudaEventDisableTiming));
  MSP_CUDA_TRY(cudaEventCreateWithFlags(&b->ev_c, cudaEventDisableTiming));
  for (int k = 0; k < RING; k++) {
    MSP_CUDA_TRY(cudaEventCreate(&b->t0[k]));
    MSP_CUDA_TRY(cudaEventCreate(&b->ta[k]));
    MSP_CUDA_TRY(cudaEventCreate(&b->th[k]));
    MSP_CUDA_TRY(cudaEventCreate(&b->t1[k]));
  }
exit:
  return st;
}

// The device times of the product in ring slot k, once it has finished: its time, and the time
// the compute stream waited for the halo after the own columns (0 when the halo came first).
static msp_status settle(msp__dist_mat *m, int k) {
  msp_status st = MSP_SUCCESS;
  dev_mat *b = (dev_mat *)m->dev;
  float all = 0.0f, wait = 0.0f;
  if (!b->pending[k]) return MSP_SUCCESS;
  b->pending[k] = 0;
  MSP_TRY(msp__dev_wait(m->d, b->t1[k]));
  MSP_CUDA_TRY(cudaEventElapsedTime(&all, b->t0[k], b->t1[k]));
  MSP_CUDA_TRY(cudaEventElapsedTime(&wait, b->ta[k], b->th[k]));
  m->spmv_s += 1e-3 * all;
  if (wait > 0.0f) m->wait_s += 1e-3 * wait;
exit:
  return st;
}

static msp_status dev_flush(msp__dist_mat *m) {
  msp_status st = MSP_SUCCESS;
  if (!m->dev) return MSP_SUCCESS;
  MSP_CUDA_TRY(cudaSetDevice(m->d->device));
  for (int k = 0; k < RING; k++)
    MSP_TRY(settle(m, k));
exit:
  return st;
}

// ---- the product --------------------------------------------------------------------------------
#define TAG_HALO 105

static msp_status host_exchange(msp__dist_mat *m, size_t es) {
  msp_dist d = m->d;
  dev_mat *b = (dev_mat *)m->dev;
  int nreq = 0, bad = 0;
  for (int k = 0; k < m->nrecv; k++)
    bad |= MPI_Irecv((char *)b->h_rbuf + (size_t)m->hoff[k] * es, (int)((size_t)m->rcnt[k] * es),
                     MPI_BYTE, m->rrank[k], TAG_HALO, d->comm, &m->req[nreq++]) != MPI_SUCCESS;
  for (int k = 0; k < m->nsend; k++)
    bad |= MPI_Isend((char *)b->h_sbuf + (size_t)m->soff[k] * es,
                     (int)((size_t)(m->soff[k + 1] - m->soff[k]) * es), MPI_BYTE, m->srank[k],
                     TAG_HALO, d->comm, &m->req[nreq++]) != MPI_SUCCESS;
  bad |= MPI_Waitall(nreq, m->req, MPI_STATUSES_IGNORE) != MPI_SUCCESS;
  return bad ? msp__dist_mpi_fail("msp_spmv", "the halo's MPI exchange") : MSP_SUCCESS;
}

// A product's steps before the exchange: the ring slot, the gather into the send buffer, the
// event the communication stream waits for, and (host transport) the copy down.
static msp_status dev_before(msp__dist_mat *m, dev_mat *b, msp_vector x, cudaStream_t S,
                             cudaStream_t C, int k, msp_precision hp, size_t es, int comm,
                             int nccl) {
  msp_dist d = m->d;
  const int64_t ns = m->soff[m->nsend];
  msp_status st = MSP_SUCCESS;
  MSP_CUDA_TRY(cudaSetDevice(d->device));
  MSP_TRY(settle(m, k));
  MSP_CUDA_TRY(cudaEventRecord(b->t0[k], S));
  if (comm) {
    // x is ready (and the last product's halo read) once S's work so far is done; the gather
    // runs on C beside the own columns' product (x != y: nothing writes x meanwhile)
    MSP_CUDA_TRY(cudaEventRecord(b->ev_x, S));
    MSP_CUDA_TRY(cudaStreamWaitEvent(C, b->ev_x, 0));
    if (ns) {
      const unsigned g = msp__cuda_blocks(ns, 256);
      if (hp != x->prec)
        gather_decode<<<g, 256, 0, C>>>(msp__vector_acc(x, 1), b->d_sidx, ns, (double *)b->d_sbuf);
      else if (es == 8)
        gather_raw<<<g, 256, 0, C>>>((const unsigned long long *)x->d_data, b->d_sidx, ns,
                                     (unsigned long long *)b->d_sbuf);
      else if (es == 4)
        gather_raw<<<g, 256, 0, C>>>((const unsigned *)x->d_data, b->d_sidx, ns,
                                     (unsigned *)b->d_sbuf);
      else
        gather_raw<<<g, 256, 0, C>>>((const unsigned short *)x->d_data, b->d_sidx, ns,
                                     (unsigned short *)b->d_sbuf);
      MSP_CUDA_CHECK_LAUNCH("gather");
    }
    if (!nccl && ns) {
      MSP_CUDA_TRY(
          cudaMemcpyAsync(b->h_sbuf, b->d_sbuf, (size_t)ns * es, cudaMemcpyDeviceToHost, C));
      MSP_CUDA_TRY(cudaEventRecord(b->ev_c, C));
    }
  }
exit:
  return st;
}

static msp_status dev_spmv(msp_context ctx, msp__dist_mat *m, double alpha, msp_vector x,
                           double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = m->d;
  dev_ctx *c = (dev_ctx *)d->dev;
  dev_mat *b = (dev_mat *)m->dev;
  const msp__backend *base = d->base;
  cudaStream_t S = msp__cuda(ctx)->stream, C = c->comm;
  const msp_precision hp = msp__dist_halo_prec(x->prec);
  const size_t es = msp__prec_bytes(hp);
  const int64_t ns = m->soff[m->nsend], nh = m->nb + m->na;
  msp_vector xh = m->xh[hp];
  const int comm = ns > 0 || nh > 0, nccl = d->transport == MSP_DIST_TRANSPORT_NCCL;
  const int k = (int)(b->seq % RING);
  const int direct = y->prec == MSP_PRECISION_F64;
  msp_vector t = direct ? y : m->yt;
  // after another rank's device failed, NCCL is given up: no exchange to take part in
  if (nccl && d->failed != MSP_SUCCESS) return msp__dist_failed_error(d);
  // This rank's steps before and beside the exchange: a failure there still takes part in the
  // exchange (the neighbours wait for it) and is returned after it.
  msp_status pre = dev_before(m, b, x, S, C, k, hp, es, comm, nccl);
  if (nccl && d->failed != MSP_SUCCESS) return msp__dist_failed_error(d); // (its waits learnt it)
  // the own columns, while the halo moves
  if (pre == MSP_SUCCESS)
    pre = base->spmv[m->Ad->format](ctx, direct ? alpha : 1.0, m->Ad, x, direct ? beta : 0.0, t);
  if (pre == MSP_SUCCESS && cudaEventRecord(b->ta[k], S) != cudaSuccess)
    pre = msp__cuda_status(cudaGetLastError(), "cudaEventRecord", __FILE__, __LINE__);
  if (comm && nccl) {
#ifdef MSP_HAVE_NCCL
    NCCL_TRY(ncclGroupStart());
    for (int q = 0; q < m->nrecv; q++)
      NCCL_TRY(ncclRecv((char *)xh->d_data + (size_t)m->hoff[q] * es, (size_t)m->rcnt[q] * es,
                        ncclUint8, m->rrank[q], c->nccl, C));
    for (int q = 0; q < m->nsend; q++)
      NCCL_TRY(ncclSend((const char *)b->d_sbuf + (size_t)m->soff[q] * es,
                        (size_t)(m->soff[q + 1] - m->soff[q]) * es, ncclUint8, m->srank[q], c->nccl,
                        C));
    NCCL_TRY(ncclGroupEnd());
#endif
  }
  if (comm && !nccl) {
    if (pre == MSP_SUCCESS && ns) {
      const cudaError_t e = cudaEventSynchronize(b->ev_c);
      if (e != cudaSuccess) pre = msp__cuda_status(e, "cudaEventSynchronize", __FILE__, __LINE__);
    }
    MSP_TRY(host_exchange(m, es));
    if (pre == MSP_SUCCESS && nh)
      MSP_CUDA_TRY(
          cudaMemcpyAsync(xh->d_data, b->h_rbuf, (size_t)nh * es, cudaMemcpyHostToDevice, C));
  }
  if (pre != MSP_SUCCESS) return pre;
  // the halo columns once the halo is in (and the send buffer free again for the next product)
  MSP_CUDA_TRY(cudaEventRecord(b->th[k], comm ? C : S));
  if (comm) MSP_CUDA_TRY(cudaStreamWaitEvent(S, b->th[k], 0));
  if (m->Ao) {
    MSP_TRY(base->spmv[m->Ao->format](ctx, 1.0, m->Ao, xh, 0.0, m->yo));
    add_rows<<<msp__cuda_blocks(m->boundary, 256), 256, 0, S>>>((double *)t->d_data, b->d_brow,
                                                                (const double *)m->yo->d_data,
                                                                m->boundary, direct ? alpha : 1.0);
    MSP_CUDA_CHECK_LAUNCH("add_rows");
  }
  if (!direct) MSP_TRY(base->axpby(ctx, alpha, m->yt, beta, y));
  MSP_CUDA_TRY(cudaEventRecord(b->t1[k], S));
  b->pending[k] = 1;
  b->seq++;
  m->products++;
  m->bytes_sent += (double)ns * (double)es;
  d->products++;
  d->bytes_sent += (double)ns * (double)es;
exit:
  // a device or NCCL failure on the NCCL path may leave the neighbours waiting for this rank
  if (st != MSP_SUCCESS && nccl && d->failed == MSP_SUCCESS) st = msp__dev_give_up(d, st);
  return st;
}

// ---- PageRank's q on the device ----------------------------------------------------------------
static msp_status dev_pr_degrees(msp_context ctx, int64_t n, const int32_t *outdeg, void **dev) {
  msp_status st = MSP_SUCCESS;
  int32_t *d_deg = NULL;
  *dev = NULL;
  MSP_CUDA_TRY(cudaSetDevice(ctx->device));
  MSP_CUDA_TRY(cudaMalloc((void **)&d_deg, (size_t)(n > 0 ? n : 1) * sizeof(int32_t)));
  if (n)
    MSP_CUDA_TRY(cudaMemcpyAsync(d_deg, outdeg, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice,
                                 msp__cuda(ctx)->stream));
  *dev = d_deg;
  d_deg = NULL;
exit:
  cudaFree(d_deg);
  return st;
}

static msp_status dev_pr_q(msp_context ctx, const void *dev, msp_vector pn, msp_vector qn) {
  msp_status st = MSP_SUCCESS;
  if (pn->n == 0) return MSP_SUCCESS;
  pr_q_kernel<<<msp__cuda_blocks(pn->n, 256), 256, 0, msp__cuda(ctx)->stream>>>(
      pn->n, (const int32_t *)dev, msp__vector_store_acc(pn, 1), msp__vector_store_acc(qn, 1));
  MSP_CUDA_CHECK_LAUNCH("pr_q_kernel");
exit:
  return st;
}

static void dev_pr_degrees_free(void *dev) {
  cudaFree(dev);
}

// The halo's peers connected: one exchange of the send buffer into the f64 halo (values of no
// use: every product overwrites the halo it reads), waited for.
static msp_status dev_mat_warm(msp__dist_mat *m) {
  msp_status st = MSP_SUCCESS;
#ifdef MSP_HAVE_NCCL
  msp_dist d = m->d;
  dev_ctx *c = (dev_ctx *)d->dev;
  dev_mat *b = (dev_mat *)m->dev;
  msp_vector xh = m->xh[MSP_PRECISION_F64];
  if (d->failed != MSP_SUCCESS) return msp__dist_failed_error(d);
  if (!c->nccl || (m->nrecv == 0 && m->nsend == 0)) return MSP_SUCCESS;
  MSP_CUDA_TRY(cudaSetDevice(c->device));
  NCCL_TRY(ncclGroupStart());
  for (int q = 0; q < m->nrecv; q++)
    NCCL_TRY(ncclRecv((double *)xh->d_data + m->hoff[q], (size_t)m->rcnt[q], ncclDouble,
                      m->rrank[q], c->nccl, c->comm));
  for (int q = 0; q < m->nsend; q++)
    NCCL_TRY(ncclSend((const double *)b->d_sbuf + m->soff[q], (size_t)(m->soff[q + 1] - m->soff[q]),
                      ncclDouble, m->srank[q], c->nccl, c->comm));
  NCCL_TRY(ncclGroupEnd());
  MSP_CUDA_TRY(cudaEventRecord(b->ev_c, c->comm));
  return msp__dev_wait(d, b->ev_c); // (gives NCCL up itself on a failure)
exit:
  if (st != MSP_SUCCESS && d->failed == MSP_SUCCESS) st = msp__dev_give_up(d, st);
#else
  (void)m;
#endif
  return st;
}

static msp__dist_devops make_ops(void) {
  msp__dist_devops o;
  memset(&o, 0, sizeof o);
  o.init = dev_init;
  o.fini = dev_fini;
#ifdef MSP_HAVE_NCCL
  o.nccl_unique_id = dev_nccl_unique_id;
#endif
  o.device_uuid = dev_uuid;
  o.mat_init = dev_mat_init;
  o.mat_free = dev_mat_free;
  o.spmv = dev_spmv;
  o.flush = dev_flush;
  o.absmax = msp__dev_absmax;
  o.basis_store_scaled = msp__cuda_basis_store_scaled;
  o.pr_degrees = dev_pr_degrees;
  o.pr_q = dev_pr_q;
  o.pr_degrees_free = dev_pr_degrees_free;
  o.reduce = msp__dev_reduce;
  o.dcgs2_sums = msp__cuda_basis_dcgs2_sums ? msp__dev_dcgs2_sums : NULL;
  o.absmax_dev = msp__cuda_basis_absmax_dev;
  o.warm = msp__dev_warm;
  o.mat_warm = dev_mat_warm;
  o.dot_dev = msp__cuda_dot_dev ? msp__dev_dot_dev : NULL;
  o.nrm1_dev = msp__cuda_nrm1_dev ? msp__dev_nrm1_dev : NULL;
  o.nrm2_dev = msp__cuda_nrm2_dev ? msp__dev_nrm2_dev : NULL;
  o.pr_step_dev = msp__cuda_pr_step_dev ? msp__dev_pr_step_dev : NULL;
  return o;
}

extern "C" const msp__dist_devops *msp__dist_devops_cuda(void) {
  static const msp__dist_devops ops = make_ops();
  return &ops;
}

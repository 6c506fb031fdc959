// product.c: the distributed product y = alpha A x + beta y, its halo exchange overlapped with the
// interior rows (the descriptor and the layout are made in dist.c).
#include "dist.h"

#define TAG_HALO 104

// ---- the product ----------------------------------------------------------------------------
// y = alpha A x + beta y for this rank's rows. CPU ranks with one process's bits: post the halo's
// receives, send the entries the neighbours read, copy the own entries into the extended x, sum
// the interior rows, wait, sum the boundary rows, store alpha t + beta y. The split layout (ranks
// that reduce on their own backend): split_spmv_host here, the device transport's on CUDA ranks.
msp_status msp__dist_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                          double beta, msp_vector y) {
  msp_dist d = msp__dist_of(ctx);
  msp__dist_mat *m = msp__dist_mat_of(A);
  if (!m) // a local matrix
    return msp__dist_defer(d, d->base->spmv[A->format](ctx, alpha, A, x, beta, y));
  return msp__dist_mat_spmv(ctx, m, alpha, x, beta, y);
}

// The split layout's product on the host (CPU ranks that reduce on their own backend: the same
// steps as the device's, so the layout and the halo's precision are tested without a GPU):
// gather the sent entries in the halo's precision, post the exchange, y = alpha Ad x + beta y
// (t = Ad x for a y that is not f64), wait, yo = Ao halo, y[brow] += alpha yo (t[brow] += yo,
// then y = alpha t + beta y).
static msp_status split_spmv_host(msp_context ctx, msp__dist_mat *m, double alpha, msp_vector x,
                                  double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = m->d;
  const msp__backend *base = d->base;
  const double t0 = MPI_Wtime();
  const msp_precision hp = msp__dist_halo_prec(x->prec);
  const size_t es = msp__prec_bytes(hp);
  msp_vector xh = m->xh[hp];
  char *sb = (char *)m->sbuf;
  int nreq = 0;
  MSP_TRY(msp__vector_on_host(x));
  const msp_acc xa = msp__vector_acc(x, 0);
  const int64_t ns = m->soff[m->nsend];
  if (hp == x->prec) {
    for (int64_t i = 0; i < ns; i++)
      memcpy(sb + (size_t)i * es, (const char *)x->h_data + (size_t)m->sidx[i] * es, es);
  } else {
    for (int64_t i = 0; i < ns; i++)
      ((double *)(void *)sb)[i] = msp_acc_load(&xa, m->sidx[i]);
  }
  for (int k = 0; k < m->nrecv && st == MSP_SUCCESS; k++)
    if (MPI_Irecv((char *)xh->h_data + (size_t)m->hoff[k] * es, (int)((size_t)m->rcnt[k] * es),
                  MPI_BYTE, m->rrank[k], TAG_HALO, d->comm, &m->req[nreq++]) != MPI_SUCCESS)
      st = msp__dist_mpi_fail("msp_spmv", "MPI_Irecv");
  for (int k = 0; k < m->nsend && st == MSP_SUCCESS; k++)
    if (MPI_Isend(sb + (size_t)m->soff[k] * es, (int)((size_t)(m->soff[k + 1] - m->soff[k]) * es),
                  MPI_BYTE, m->srank[k], TAG_HALO, d->comm, &m->req[nreq++]) != MPI_SUCCESS)
      st = msp__dist_mpi_fail("msp_spmv", "MPI_Isend");
  const int direct = y->prec == MSP_PRECISION_F64;
  msp_vector t = direct ? y : m->yt;
  if (st == MSP_SUCCESS)
    st = base->spmv[m->Ad->format](ctx, direct ? alpha : 1.0, m->Ad, x, direct ? beta : 0.0, t);
  const double t1 = MPI_Wtime();
  if (MPI_Waitall(nreq, m->req, MPI_STATUSES_IGNORE) != MPI_SUCCESS && st == MSP_SUCCESS)
    st = msp__dist_mpi_fail("msp_spmv", "MPI_Waitall");
  const double t2 = MPI_Wtime();
  if (st != MSP_SUCCESS) goto exit;
  if (m->Ao) {
    msp__vector_host_written(xh);
    MSP_TRY(base->spmv[m->Ao->format](ctx, 1.0, m->Ao, xh, 0.0, m->yo));
    const double a = direct ? alpha : 1.0, *yo = (const double *)m->yo->h_data;
    double *tv = (double *)t->h_data;
    for (int64_t k = 0; k < m->boundary; k++)
      tv[m->brow[k]] += a * yo[k];
  }
  if (!direct) MSP_TRY(base->axpby(ctx, alpha, m->yt, beta, y));
  m->products++;
  m->bytes_sent += (double)ns * (double)es;
  d->products++;
  d->bytes_sent += (double)ns * (double)es;
  m->wait_s += t2 - t1;
  m->spmv_s += MPI_Wtime() - t0;
exit:
  return st;
}

msp_status msp__dist_mat_spmv(msp_context ctx, msp__dist_mat *m, double alpha, msp_vector x,
                              double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = m->d;
  if (m->split)
    return msp__dist_defer(d, d->dops ? d->dops->spmv(ctx, m, alpha, x, beta, y)
                                      : split_spmv_host(ctx, m, alpha, x, beta, y));
  const msp__backend *base = d->base;
  const double t0 = MPI_Wtime();
  double *xe = (double *)m->xext->h_data;
  int nreq = 0;
  // A device rank stages through the host: x comes down once (its sent and own entries), the
  // extended x goes up (own entries before the interior rows, the whole after the halo), the
  // parts' row sums come down and the assembled rows go up for the store (no-ops on the CPU).
  MSP_TRY(msp__vector_on_host(x));
  const msp_acc xa = msp__vector_acc(x, 0);
  // (MPI's default error handler aborts the job on a failed call; these checks matter only
  // under MPI_ERRORS_RETURN, and then the requests posted so far are completed first)
  for (int k = 0; k < m->nrecv && st == MSP_SUCCESS; k++)
    if (MPI_Irecv(xe + m->roff[k], (int)m->rcnt[k], MPI_DOUBLE, m->rrank[k], TAG_HALO, d->comm,
                  &m->req[nreq++]) != MPI_SUCCESS)
      st = msp__dist_mpi_fail("msp_spmv", "MPI_Irecv");
  const int64_t ns = m->soff[m->nsend];
#pragma omp parallel for schedule(static) if (ns > 65536)
  for (int64_t i = 0; i < ns; i++)
    m->sbuf[i] = msp_acc_load(&xa, m->sidx[i]);
  for (int k = 0; k < m->nsend && st == MSP_SUCCESS; k++)
    if (MPI_Isend(m->sbuf + m->soff[k], (int)(m->soff[k + 1] - m->soff[k]), MPI_DOUBLE, m->srank[k],
                  TAG_HALO, d->comm, &m->req[nreq++]) != MPI_SUCCESS)
      st = msp__dist_mpi_fail("msp_spmv", "MPI_Isend");
  // own entries: the bytes themselves when x is f64 (decoding would give the same doubles)
  const int64_t rows = m->rows, nb = m->nb;
  if (x->prec == MSP_PRECISION_F64) {
    if (rows) memcpy(xe + nb, x->h_data, (size_t)rows * sizeof(double));
  } else {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; i++)
      xe[nb + i] = msp_acc_load(&xa, i);
  }
  msp__vector_host_written(m->xext);
  if (m->Ai && st == MSP_SUCCESS) {
    // (on a device the halo entries go up stale: the interior rows do not read them)
    st = msp__vector_current(m->xext);
    if (st == MSP_SUCCESS)
      st = base->spmv[m->Ai->format](d->inner, 1.0, m->Ai, m->xext, 0.0, m->yi);
    if (st == MSP_SUCCESS) msp__vector_written(m->yi);
  }
  const double t1 = MPI_Wtime();
  if (MPI_Waitall(nreq, m->req, MPI_STATUSES_IGNORE) != MPI_SUCCESS && st == MSP_SUCCESS)
    st = msp__dist_mpi_fail("msp_spmv", "MPI_Waitall");
  const double t2 = MPI_Wtime();
  if (st != MSP_SUCCESS) goto exit;
  if (m->Ab) {
    msp__vector_host_written(m->xext); // the halo arrived on the host
    MSP_TRY(msp__vector_current(m->xext));
    MSP_TRY(base->spmv[m->Ab->format](d->inner, 1.0, m->Ab, m->xext, 0.0, m->yb));
    msp__vector_written(m->yb);
    MSP_TRY(msp__vector_on_host(m->yb));
  }
  if (m->Ai) MSP_TRY(msp__vector_on_host(m->yi));
  double *yt = (double *)m->yt->h_data;
  const double *yi = (const double *)m->yi->h_data, *yb = (const double *)m->yb->h_data;
  const int64_t ni = m->Ai ? m->Ai->rows : 0, nbd = m->Ab ? m->Ab->rows : 0;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < ni; k++)
    yt[m->irow[k]] = yi[k];
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < nbd; k++)
    yt[m->brow[k]] = yb[k];
  msp__vector_host_written(m->yt);
  MSP_TRY(msp__vector_current(m->yt));
  MSP_TRY(base->axpby(ctx, alpha, m->yt, beta, y));
  m->products++;
  m->bytes_sent += (double)ns * sizeof(double);
  d->products++;
  d->bytes_sent += (double)ns * sizeof(double);
  m->wait_s += t2 - t1;
  m->spmv_s += MPI_Wtime() - t0;
exit:
  return st;
}

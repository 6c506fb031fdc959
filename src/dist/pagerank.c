// pagerank.c: PageRank's backend slots for a distributed context, so that msp_pagerank (the one
// solver, src/solvers/pagerank.c) runs over the ranks: the pull form's graph G^T distributed by
// rows as G is (each rank the in-edges of its nodes, from an exchange of the edges), the pull as
// a distributed product of G^T's pattern with q, the update and its sums over the ranks.
//
// Bits: the CPU pull sums each row of G^T as the CSR kernel sums a row (even and odd entries
// apart, then added, then an odd last entry: src/cpu/pagerank.c, src/cpu/dispatch.h), each
// product 1.0 * q_j is q_j, and both multiply the row sum by alpha once: the CSR product of the
// pattern (values 1.0) is the pull, bit for bit. The update is the CPU's, node by node, its
// chunk sums added in the CPU's tree over every rank's chunks (tree.c); the solver's host sums
// (the start, the dangling mass, the final normalisation) continue from rank to rank
// (msp__dist_host_fold). So iterations, change history and ranks have one process's bits in the
// natural node order; the degree order (a renumbering of all nodes) and the values form are
// refused.
#include "dist.h"
#include "partials.h"

#include <math.h>
#include <stdlib.h>

#define TAG_FOLD 201

typedef struct {
  msp__dist_mat *gt; // G^T's rows of this rank's nodes
  msp_vector y;      // f64: alpha G^T q
  // Device ranks: the rank's nodes as a graph of the backend (out-degrees, no edges), whose
  // pr_step runs the update on the device in its values form with y = alpha G^T q.
  msp__prgraph lg;
  int have_lg;
  void *ddeg; // the out-degrees on the device, for q = p ./ outdeg (the values form writes p only)
} dist_pr;

msp_status msp__dist_host_fold(msp_context ctx, double *state, int n, int phase) {
  msp_dist d = msp__dist_of(ctx);
  if (phase == 0) {
    if (d->rank > 0 && MPI_Recv(state, n, MPI_DOUBLE, d->rank - 1, TAG_FOLD, d->comm,
                                MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return msp__error(MSP_ERR_INTERNAL, "msp_pagerank: MPI_Recv failed");
    return MSP_SUCCESS;
  }
  if (d->rank + 1 < d->size &&
      MPI_Send(state, n, MPI_DOUBLE, d->rank + 1, TAG_FOLD, d->comm) != MPI_SUCCESS)
    return msp__error(MSP_ERR_INTERNAL, "msp_pagerank: MPI_Send failed");
  if (MPI_Bcast(state, n, MPI_DOUBLE, d->size - 1, d->comm) != MPI_SUCCESS)
    return msp__error(MSP_ERR_INTERNAL, "msp_pagerank: MPI_Bcast failed");
  return MSP_SUCCESS;
}

// The values form builds G^T's values from the whole graph on one process.
msp_status msp__dist_pr_upload(msp_context ctx, msp__prgraph *g) {
  (void)ctx;
  (void)g;
  return msp__error(MSP_ERR_NOT_SUPPORTED,
                    "msp_pagerank: the values form (values, weighted) is not distributed: use the "
                    "pull form");
}

void msp__dist_pr_free(msp_context ctx, msp__prgraph *g) {
  (void)ctx;
  if (!g || !g->dev) return;
  dist_pr *w = (dist_pr *)g->dev;
  if (w->have_lg) msp__dist_of(ctx)->base->pr_free(ctx, &w->lg);
  if (w->ddeg) msp__dist_of(ctx)->dops->pr_degrees_free(w->ddeg);
  msp__free(w->lg.rowptr);
  msp__free(w->lg.colind);
  msp__dist_mat_free(w->gt);
  msp_vector_destroy(&w->y);
  msp__free(w);
  g->dev = NULL;
}

// This rank's rows of G with global columns, in order, from either layout: the interior and
// boundary parts (extended numbering: [halo below, own, halo above]) merged by row, or the split
// layout's own columns (local numbering) then its halo columns (numbered in the halo).
static msp_status rank_rows(const msp__dist_mat *m, int64_t **prp, int32_t **pcg) {
  msp_status st = MSP_SUCCESS;
  int64_t *rp = NULL;
  int32_t *cg = NULL;
  MSP_TRY(MSP_ALLOC(rp, m->rows + 1, "PageRank: rows of G"));
  MSP_TRY(MSP_ALLOC(cg, m->nnz > 0 ? m->nnz : 1, "PageRank: rows of G"));
  rp[0] = 0;
  int64_t at = 0;
  if (m->split) {
    for (int64_t i = 0, b = 0; i < m->rows; i++) {
      for (int64_t p = m->Ad->rowptr[i]; p < m->Ad->rowptr[i + 1]; p++)
        cg[at++] = (int32_t)(m->row0 + m->Ad->colind[p]);
      if (m->Ao && b < m->boundary && m->brow[b] == i) {
        for (int64_t p = m->Ao->rowptr[b]; p < m->Ao->rowptr[b + 1]; p++)
          cg[at++] = m->halo[m->Ao->colind[p]];
        b++;
      }
      rp[i + 1] = at;
    }
  } else {
    const msp_matrix parts[2] = {m->Ai, m->Ab};
    for (int64_t i = 0, a = 0, b = 0; i < m->rows; i++) {
      const int k = a < (m->Ai ? m->Ai->rows : 0) && m->irow[a] == i ? 0 : 1;
      const int64_t r = k == 0 ? a++ : b++;
      for (int64_t p = parts[k]->rowptr[r]; p < parts[k]->rowptr[r + 1]; p++) {
        const int32_t c = parts[k]->colind[p];
        cg[at++] = c < m->nb             ? m->halo[c]
                   : c < m->nb + m->rows ? (int32_t)(m->row0 + c - m->nb)
                                         : m->halo[c - m->rows];
      }
      rp[i + 1] = at;
    }
  }
  *prp = rp;
  *pcg = cg;
  rp = NULL;
  cg = NULL;
exit:
  msp__free(rp);
  msp__free(cg);
  return st;
}

msp_status msp__dist_pr_transpose(msp_context ctx, const msp_matrix G, const int32_t *inv,
                                  msp__prgraph *g) {
  msp_status st = MSP_SUCCESS, lst = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  const msp__dist_mat *m = msp__dist_mat_of(G);
  const int P = d->size;
  int *scnt = NULL, *rcnt = NULL, *sdsp = NULL, *rdsp = NULL;
  int32_t *sbuf = NULL, *rbuf = NULL, *ci = NULL;
  int64_t *rp = NULL, *fill = NULL, *grp = NULL;
  int32_t *gcg = NULL;
  double *val = NULL;
  dist_pr *w = NULL;
  if (!m)
    lst = msp__error(MSP_ERR_INVALID_ARGUMENT,
                     "msp_pagerank: G is not a distributed matrix (msp_dist_matrix_scatter)");
  else if (inv)
    lst = msp__error(MSP_ERR_NOT_SUPPORTED,
                     "msp_pagerank: the degree order renumbers every node: not distributed (use "
                     "the natural order)");
  MSP_TRY(msp__dist_agree(d, lst));
  lst = rank_rows(m, &grp, &gcg);
  MSP_TRY(msp__dist_agree(d, lst));
  // out-degrees of this rank's nodes (G's rows), and the edges to send: (destination, source)
  // pairs grouped by the destination's owner, in row order
  const int64_t nnz = grp[m->rows];
  for (int64_t i = 0; i < m->rows; i++)
    g->outdeg[i] = (int32_t)(grp[i + 1] - grp[i]);
  if (2 * nnz > INT32_MAX)
    lst = msp__error(MSP_ERR_NOT_SUPPORTED,
                     "msp_pagerank: %lld edges on rank %d exceed MPI's int counts of the exchange",
                     (long long)nnz, d->rank);
  MSP_TRY(msp__dist_agree(d, lst));
  lst = MSP_ALLOC_ZERO(scnt, 4 * (int64_t)P, "PageRank: edge counts");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(sbuf, 2 * (nnz > 0 ? nnz : 1), "PageRank: edges sent");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(fill, P, "PageRank: edge cursors");
  MSP_TRY(msp__dist_agree(d, lst));
  rcnt = scnt + P;
  sdsp = scnt + 2 * P;
  rdsp = scnt + 3 * P;
  for (int64_t p = 0; p < nnz; p++)
    scnt[msp__dist_owner(d->off, P, gcg[p])] += 2;
  for (int q = 0; q < P; q++)
    fill[q] = sdsp[q] = q ? sdsp[q - 1] + scnt[q - 1] : 0;
  for (int64_t i = 0; i < m->rows; i++)
    for (int64_t p = grp[i]; p < grp[i + 1]; p++) {
      const int32_t j = gcg[p];
      const int q = msp__dist_owner(d->off, P, j);
      sbuf[fill[q]++] = j;
      sbuf[fill[q]++] = (int32_t)(m->row0 + i);
    }
  if (MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, d->comm) != MPI_SUCCESS) {
    st = msp__error(MSP_ERR_INTERNAL, "msp_pagerank: MPI_Alltoall failed");
    goto exit;
  }
  int64_t nr = 0;
  for (int q = 0; q < P; q++)
    nr += rcnt[q];
  for (int q = 0; q < P && nr <= INT32_MAX; q++)
    rdsp[q] = q ? rdsp[q - 1] + rcnt[q - 1] : 0;
  lst = nr > INT32_MAX ? msp__error(MSP_ERR_NOT_SUPPORTED,
                                    "msp_pagerank: %lld in-edges of rank %d's nodes exceed MPI's "
                                    "int counts of the exchange",
                                    (long long)(nr / 2), d->rank)
                       : MSP_ALLOC(rbuf, nr > 0 ? nr : 1, "PageRank: edges received");
  MSP_TRY(msp__dist_agree(d, lst));
  if (MPI_Alltoallv(sbuf, scnt, sdsp, MPI_INT32_T, rbuf, rcnt, rdsp, MPI_INT32_T, d->comm) !=
      MPI_SUCCESS) {
    st = msp__error(MSP_ERR_INTERNAL, "msp_pagerank: MPI_Alltoallv failed");
    goto exit;
  }
  // G^T's rows of this rank's nodes: a stable counting sort by destination; the sources arrive
  // in increasing order (ranks in order, each rank's rows in order), as the one-process
  // transpose lists them
  const int64_t ne = nr / 2;
  lst = MSP_ALLOC_ZERO(rp, m->rows + 1, "PageRank: rows of the transpose");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(ci, ne > 0 ? ne : 1, "PageRank: transpose");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(val, ne > 0 ? ne : 1, "PageRank: transpose");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC_ZERO(w, 1, "PageRank: distributed graph");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC_ZERO(w->gt, 1, "PageRank: distributed graph");
  MSP_TRY(msp__dist_agree(d, lst));
  for (int64_t e = 0; e < ne; e++)
    rp[rbuf[2 * e] - m->row0 + 1]++;
  for (int64_t i = 0; i < m->rows; i++)
    rp[i + 1] += rp[i];
  msp__free(fill);
  fill = NULL;
  lst = MSP_ALLOC(fill, m->rows > 0 ? m->rows : 1, "PageRank: transpose cursors");
  MSP_TRY(msp__dist_agree(d, lst));
  memcpy(fill, rp, (size_t)m->rows * sizeof *fill);
  for (int64_t e = 0; e < ne; e++) {
    const int64_t at = fill[rbuf[2 * e] - m->row0]++;
    ci[at] = rbuf[2 * e + 1];
    val[at] = 1.0;
  }
  w->gt->magic = MSP__MAGIC_DIST_MAT;
  w->gt->d = d;
  w->gt->grows = m->grows;
  w->gt->gnnz = m->gnnz;
  w->gt->row0 = m->row0;
  w->gt->rows = m->rows;
  w->gt->nnz = ne;
  {
    msp_convert_options co = msp_convert_options_default();
    co.format = MSP_FORMAT_CSR;
    co.precision = MSP_PRECISION_F64;
    MSP_TRY(msp__dist_build(d, rp, ci, val, &co, w->gt));
  }
  MSP_TRY(msp__dist_agree(d, msp_vector_create(d->inner, m->rows, &w->y)));
  if (d->base->kind != MSP_BACKEND_CPU) {
    // the update on the device: the rank's nodes as a graph without edges (values form)
    w->lg.n = m->rows;
    w->lg.nnz = 0;
    w->lg.outdeg = g->outdeg;
    lst = MSP_ALLOC_ZERO(w->lg.rowptr, m->rows + 1, "PageRank: rank graph");
    if (lst == MSP_SUCCESS) lst = MSP_ALLOC_ZERO(w->lg.colind, 1, "PageRank: rank graph");
    if (lst == MSP_SUCCESS) lst = d->base->pr_upload(ctx, &w->lg);
    w->have_lg = lst == MSP_SUCCESS;
    if (lst == MSP_SUCCESS) lst = d->dops->pr_degrees(ctx, m->rows, g->outdeg, &w->ddeg);
    MSP_TRY(msp__dist_agree(d, lst));
  }
  g->nnz = ne;
  g->dev = w;
  w = NULL;
exit:
  if (w) {
    if (w->have_lg) d->base->pr_free(ctx, &w->lg);
    if (w->ddeg) d->dops->pr_degrees_free(w->ddeg);
    msp__free(w->lg.rowptr);
    msp__free(w->lg.colind);
    msp__dist_mat_free(w->gt);
    msp_vector_destroy(&w->y);
    msp__free(w);
  }
  msp__free(grp);
  msp__free(gcg);
  msp__free(scnt);
  msp__free(sbuf);
  msp__free(rbuf);
  msp__free(fill);
  msp__free(rp);
  msp__free(ci);
  msp__free(val);
  return st;
}

// ---- the update (src/cpu/pagerank.c's, node by node), partials [chunk][3]
typedef struct {
  const msp__prgraph *g;
  const msp__pr_step *a;
  msp_acc p, pn, qn;
  const double *y, *v;
  double *part;
  int64_t nchunks;
} upd_args;

MSP__CPU_INLINE void upd_kernel(msp_precision PV, upd_args *A) {
  const int64_t n = A->g->n;
#pragma omp for schedule(static)
  for (int64_t ch = 0; ch < A->nchunks; ch++) {
    const int64_t b = ch * MSP__RED_CHUNK, e = b + MSP__RED_CHUNK < n ? b + MSP__RED_CHUNK : n;
    msp__cpu_pr_update_chunk(PV, A->g, A->a, A->y, A->v, A->p, A->pn, A->qn, b, e,
                             A->part + ch * 3);
  }
}
#define MSP__CPU_KERNEL upd_kernel
MSP__CPU_INSTANTIATE1(upd_args *)
#undef MSP__CPU_KERNEL

msp_status msp__dist_pr_step(msp_context ctx, const msp__prgraph *g, const msp__pr_step *a,
                             double sums[3]) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  dist_pr *w = (dist_pr *)g->dev;
  const msp_vector y = a->y ? a->y : w->y;
  if (!a->y) { // the pull: y = alpha G^T q, G^T's pattern times q
    MSP_TRY(msp__dist_mat_spmv(ctx, w->gt, a->alpha, a->q, 0.0, w->y));
  }
  if (w->have_lg) {
    // device ranks: the backend's update in its values form, the ranks' sums added in rank order
    // (over NCCL the sums go from the update's kernels to the gather on the device, no wait)
    msp__pr_step b = *a;
    b.y = y;
    if (msp__dist_nccl_reduces(d) && d->dops->pr_step_dev) {
      const double *dv = NULL;
      msp_status lst = d->dops->pr_step_dev(ctx, &w->lg, &b, &dv);
      if (lst == MSP_SUCCESS && a->qn) lst = d->dops->pr_q(ctx, w->ddeg, a->pn, a->qn);
      MSP_TRY(msp__dist_sum_ranks_dev(d, lst == MSP_SUCCESS ? dv : NULL, sums, 3, lst));
      goto exit;
    }
    msp_status lst = d->base->pr_step(ctx, &w->lg, &b, sums);
    if (lst == MSP_SUCCESS && a->qn) lst = d->dops->pr_q(ctx, w->ddeg, a->pn, a->qn);
    MSP_TRY(msp__dist_sum_ranks(d, sums, 3, lst));
    goto exit;
  }
  upd_args A;
  memset(&A, 0, sizeof A);
  A.g = g;
  A.a = a;
  A.p = msp__vector_acc(a->p, 0);
  A.pn = msp__vector_store_acc(a->pn, 0);
  if (a->qn) A.qn = msp__vector_store_acc(a->qn, 0);
  A.y = (const double *)y->h_data;
  if (a->v) A.v = (const double *)a->v->h_data;
  A.nchunks = (g->n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  // (a rank whose partials cannot be made still joins the reduction, which returns the failure)
  const msp_status lst = msp__dist_partials(d, A.nchunks, 3, &A.part);
  if (lst == MSP_SUCCESS) {
#pragma omp parallel
    upd_kernel_dispatch(a->p->prec, &A);
  }
  double *res = NULL;
  MSP_TRY(msp__dist_tree_reduce(d, lst == MSP_SUCCESS ? A.nchunks : msp__dist_tree_failed(lst), 3,
                                0, 0, &res));
  for (int r = 0; r < 3; r++)
    sums[r] = res[r];
exit:
  return st;
}

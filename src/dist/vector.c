// vector.c: a distributed matrix's queries, the vectors' scatter from and gather to the root, and
// GMRES's checks on a distributed context.
#include "dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

// ---- queries and vectors
// --------------------------------------------------------------------------
msp_status msp_dist_matrix_info_get(const msp_matrix A, msp_dist_matrix_info *info) {
  MSP_CHECK_ARG(info, "msp_dist_matrix_info_get: info is NULL");
  const msp__dist_mat *m = msp__dist_mat_of(A);
  MSP_CHECK_ARG(m, "msp_dist_matrix_info_get: A is not a distributed matrix");
  memset(info, 0, sizeof *info);
  info->rank = m->d->rank;
  info->size = m->d->size;
  info->global_rows = m->grows;
  info->global_nnz = m->gnnz;
  info->row0 = m->row0;
  info->rows = m->rows;
  info->nnz = m->nnz;
  if (m->dev && m->d->dops) (void)m->d->dops->flush((msp__dist_mat *)(uintptr_t)m);
  info->interior_rows = m->split ? m->interior : m->Ai ? m->Ai->rows : 0;
  info->boundary_rows = m->split ? m->boundary : m->Ab ? m->Ab->rows : 0;
  info->halo = m->nb + m->na;
  info->send_entries = m->soff[m->nsend];
  info->neighbours = m->neighbours;
  const msp_matrix P = m->split ? m->Ad : m->Ai ? m->Ai : m->Ab;
  info->format = P ? P->format : MSP_FORMAT_CSR;
  info->precision = P ? P->precision : MSP_PRECISION_F64;
  info->products = m->products;
  info->bytes_sent = m->bytes_sent;
  info->spmv_s = m->spmv_s;
  info->wait_s = m->wait_s;
  info->halo_bytes = m->products ? m->bytes_sent / (double)m->products : 0.0;
  info->transport = m->d->transport;
  info->partition = m->d->partition;
  info->partition_s = m->d->partition_s;
  return MSP_SUCCESS;
}

// Counts and displacements of the rows of every rank (MPI int counts).
static msp_status row_counts(const msp__dist_mat *m, const char *fn) {
  msp_dist d = m->d;
  for (int r = 0; r < d->size; r++) {
    if (d->off[r + 1] > INT_MAX)
      return msp__error(MSP_ERR_NOT_SUPPORTED, "%s: %lld rows exceed MPI's int counts", fn,
                        (long long)d->off[r + 1]);
    d->counts[r] = (int)(d->off[r + 1] - d->off[r]);
    d->displs[r] = (int)d->off[r];
  }
  return MSP_SUCCESS;
}

static msp_status vector_checks(const msp__dist_mat *m, int root, const double *global,
                                msp_vector x, const char *fn) {
  MSP_CHECK_ARG(m, "%s: A is not a distributed matrix", fn);
  MSP_CHECK_ARG(root >= 0 && root < m->d->size, "%s: root %d outside the %d ranks", fn, root,
                m->d->size);
  MSP_CHECK_ARG(m->d->rank != root || global, "%s: the root's global array is NULL", fn);
  msp_status st = msp__check_vector(x, fn, "x");
  if (st != MSP_SUCCESS) return st;
  if (x->n != m->rows)
    return msp__error(MSP_ERR_DIMENSION_MISMATCH,
                      "%s: x has %lld entries but A has %lld rows on rank %d", fn, (long long)x->n,
                      (long long)m->rows, m->d->rank);
  return row_counts(m, fn);
}

msp_status msp_dist_vector_scatter(const msp_matrix A, int root, const double *global,
                                   msp_vector x) {
  const char *fn = "msp_dist_vector_scatter";
  msp_status st = MSP_SUCCESS;
  const msp__dist_mat *m = msp__dist_mat_of(A);
  double *buf = NULL;
  MSP_CHECK_ARG(m, "%s: A is not a distributed matrix", fn);
  msp_dist d = m->d;
  double *pg = NULL; // the root's array in the layout's numbering (METIS)
  st = vector_checks(m, root, global, x, fn);
  if (st == MSP_SUCCESS) st = MSP_ALLOC(buf, m->rows > 0 ? m->rows : 1, "vector part");
  if (st == MSP_SUCCESS && d->perm && d->rank == root) {
    st = MSP_ALLOC(pg, d->grows, "renumbered vector");
    if (st == MSP_SUCCESS)
      for (int64_t i = 0; i < d->grows; i++)
        pg[i] = global[d->perm[i]];
  }
  MSP_TRY(msp__dist_agree(d, st));
  if (MPI_Scatterv(pg ? pg : global, d->counts, d->displs, MPI_DOUBLE, buf, (int)m->rows,
                   MPI_DOUBLE, root, d->comm) != MPI_SUCCESS) {
    st = msp__dist_mpi_fail(fn, "MPI_Scatterv");
    goto exit;
  }
  MSP_TRY(msp__dist_agree(d, msp_vector_set(x, buf)));
exit:
  msp__free(buf);
  msp__free(pg);
  return st;
}

msp_status msp_dist_vector_gather(const msp_matrix A, int root, msp_vector x, double *global) {
  const char *fn = "msp_dist_vector_gather";
  msp_status st = MSP_SUCCESS;
  const msp__dist_mat *m = msp__dist_mat_of(A);
  double *buf = NULL;
  MSP_CHECK_ARG(m, "%s: A is not a distributed matrix", fn);
  msp_dist d = m->d;
  st = vector_checks(m, root, global, x, fn);
  if (st == MSP_SUCCESS) st = MSP_ALLOC(buf, m->rows > 0 ? m->rows : 1, "vector part");
  if (st == MSP_SUCCESS) st = msp_vector_get(x, buf);
  double *pg = NULL; // the root's array in the layout's numbering (METIS)
  if (st == MSP_SUCCESS && d->perm && d->rank == root)
    st = MSP_ALLOC(pg, d->grows, "renumbered vector");
  MSP_TRY(msp__dist_agree(d, st));
  if (MPI_Gatherv(buf, (int)m->rows, MPI_DOUBLE, pg ? pg : global, d->counts, d->displs, MPI_DOUBLE,
                  root, d->comm) != MPI_SUCCESS) {
    st = msp__dist_mpi_fail(fn, "MPI_Gatherv");
    goto exit;
  }
  if (pg)
    for (int64_t i = 0; i < d->grows; i++)
      global[d->perm[i]] = pg[i];
exit:
  msp__free(buf);
  msp__free(pg);
  return st;
}

msp_status msp_dist_gmres(msp_dist d, const msp_matrix A, msp_vector b, msp_vector x,
                          const msp_solver_options *opts, msp_solver_report *rep) {
  MSP_CHECK_ARG(msp__dist_ok(d), "msp_dist_gmres: d is not a distributed context");
  const msp__dist_mat *m = msp__dist_mat_of(A);
  msp_status st = m && m->d == d ? MSP_SUCCESS
                                 : msp__error(MSP_ERR_INVALID_ARGUMENT,
                                              "msp_dist_gmres: A is not a distributed matrix of d");
  const msp_solver_options o = opts ? *opts : msp_solver_options_default();
  if (st == MSP_SUCCESS && o.precond == MSP_PRECOND_ILU0)
    st = msp__error(MSP_ERR_NOT_SUPPORTED,
                    "msp_dist_gmres: ILU(0) of each rank's diagonal block is another "
                    "preconditioner than one process's ILU(0): use none or jacobi");
  if (st == MSP_SUCCESS) {
    int64_t least = INT64_MAX;
    for (int r = 0; r < d->size; r++)
      if (d->off[r + 1] - d->off[r] < least) least = d->off[r + 1] - d->off[r];
    const int64_t mcap = o.restart < m->grows ? o.restart : m->grows;
    if (mcap > least)
      st = msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_dist_gmres: restart %d exceeds the %lld rows of the smallest rank "
                      "(GMRES caps it at the rows it sees): use fewer ranks or restart <= %lld",
                      o.restart, (long long)least, (long long)least);
  }
  MSP_TRY(msp__dist_agree(d, st));
  st = msp_gmres(d->ctx, A, b, x, opts, rep);
exit:
  return st;
}

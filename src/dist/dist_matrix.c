// dist_matrix.c: distributed matrices: the row layout, the scatter of a matrix from the root or
// its generation by each rank, and the communication descriptor.
//
// As PSBLAS's descriptors (PSBLAS-Extensions reference guide, 1.1), each rank keeps, per
// neighbour, the list of its entries of x that the neighbour reads (sent) and how many entries it
// reads from the neighbour (received into the halo); the descriptor is built once, when the
// matrix is distributed, and each product only packs, sends and receives.
//
// Bits: a rank's rows are renumbered into an extended x = [halo below row0, own entries, halo
// above], a monotonic renumbering of the columns, so every row keeps its entries in their order
// and the CPU kernel sums it as one process does; the row sums are written in fp64 (exact), then
// y = alpha t + beta y is stored by the CPU backend's axpby, the store of every CPU kernel, in
// blocks aligned as on one process (row0 is a multiple of MSP_DIST_CHUNK).
#include "dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_ROWPTR 101
#define TAG_COLIND 102
#define TAG_VAL 103
// Point-to-point messages in pieces of at most this many elements (MPI counts are int).
#define PIECE ((int64_t)1 << 28)

// The distributed matrix in A->dev when A is a handle (another matrix of a distributed context
// on a device backend holds the backend's data there: its first word is no MSP__MAGIC_DIST_MAT,
// and a distributed matrix names its handle).
static msp__dist_mat *dist_mat_of_dev(const msp_matrix A) {
  if (!A->dev || *(const uint32_t *)A->dev != MSP__MAGIC_DIST_MAT) return NULL;
  msp__dist_mat *m = (msp__dist_mat *)A->dev;
  return m->handle == A ? m : NULL;
}

msp__dist_mat *msp__dist_mat_of(const msp_matrix A) {
  if (!msp__matrix_ok(A) || !A->dev || A->ctx->backend->spmv[0] != msp__dist_spmv) return NULL;
  return dist_mat_of_dev(A);
}

void msp__dist_mat_free(msp__dist_mat *m) {
  if (!m) return;
  msp_matrix_destroy(&m->Ai);
  msp_matrix_destroy(&m->Ab);
  msp_vector_destroy(&m->xext);
  msp_vector_destroy(&m->yi);
  msp_vector_destroy(&m->yb);
  msp_vector_destroy(&m->yt);
  msp__free(m->irow);
  msp__free(m->brow);
  msp__free(m->rrank);
  msp__free(m->srank);
  msp__free(m->roff);
  msp__free(m->rcnt);
  msp__free(m->soff);
  msp__free(m->sidx);
  msp__free(m->sbuf);
  msp__free(m->req);
  msp__free(m->halo);
  if (m->dev && m->d->dops) m->d->dops->mat_free(m);
  msp_matrix_destroy(&m->Ad);
  msp_matrix_destroy(&m->Ao);
  msp__free(m->hoff);
  for (int p = 0; p < MSP_PRECISION_COUNT; p++)
    msp_vector_destroy(&m->xh[p]);
  msp_vector_destroy(&m->yo);
  m->magic = MSP__MAGIC_FREED;
  msp__free(m);
}

void msp__dist_matrix_free(msp_matrix A) {
  msp__dist_mat *m = dist_mat_of_dev(A);
  if (m)
    msp__dist_mat_free(m);
  else if (A->dev)
    msp__dist_of(A->ctx)->base->matrix_free(A); // a local matrix of a device rank's context
  A->dev = NULL;
}

// The row layout: boundaries at chunk multiples, rank r's first chunk the one whose prefix of
// nonzeros is nearest r / size of them, each rank at least one chunk.
static void partition(int64_t rows, const int64_t *rowptr, int size, int64_t *off) {
  const int64_t chunks = (rows + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK, nnz = rowptr[rows];
  off[0] = 0;
  int64_t prev = 0;
  for (int r = 1; r < size; r++) {
    const double target = (double)nnz * r / size;
    int64_t lo = prev + 1, hi = chunks - (size - r); // chunk index range for rank r's start
    // first chunk boundary whose prefix reaches the target, then the nearer of it and the one
    // before
    int64_t a = lo, b = hi;
    while (a < b) {
      const int64_t mid = a + (b - a) / 2;
      if ((double)rowptr[mid * MSP__RED_CHUNK] < target)
        a = mid + 1;
      else
        b = mid;
    }
    if (a > lo && target - (double)rowptr[(a - 1) * MSP__RED_CHUNK] <
                      (double)rowptr[a * MSP__RED_CHUNK] - target)
      a--;
    off[r] = a * MSP__RED_CHUNK;
    prev = a;
  }
  off[size] = rows;
}

static msp_status send_big(const void *buf, int64_t n, MPI_Datatype t, size_t esize, int to,
                           int tag, MPI_Comm comm) {
  for (int64_t o = 0; o < n || (n == 0 && o == 0); o += PIECE) {
    const int64_t c = n - o < PIECE ? n - o : PIECE;
    if (MPI_Send((const char *)buf + (size_t)o * esize, (int)c, t, to, tag, comm) != MPI_SUCCESS)
      return msp__dist_mpi_fail("msp_dist_matrix_scatter", "MPI_Send");
    if (n == 0) break;
  }
  return MSP_SUCCESS;
}

static msp_status recv_big(void *buf, int64_t n, MPI_Datatype t, size_t esize, int from, int tag,
                           MPI_Comm comm) {
  for (int64_t o = 0; o < n || (n == 0 && o == 0); o += PIECE) {
    const int64_t c = n - o < PIECE ? n - o : PIECE;
    if (MPI_Recv((char *)buf + (size_t)o * esize, (int)c, t, from, tag, comm, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
      return msp__dist_mpi_fail("msp_dist_matrix_scatter", "MPI_Recv");
    if (n == 0) break;
  }
  return MSP_SUCCESS;
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

// The owner of global row / column j: the last r with off[r] <= j (dist.h).
int msp__dist_owner(const int64_t *off, int size, int64_t j) {
  int a = 0, b = size - 1;
  while (a < b) {
    const int mid = (a + b + 1) / 2;
    if (off[mid] <= j)
      a = mid;
    else
      b = mid - 1;
  }
  return a;
}

// Position of j in the sorted array h[0..n) (present).
static int64_t find_i32(const int32_t *h, int64_t n, int32_t j) {
  int64_t a = 0, b = n - 1;
  while (a < b) {
    const int64_t mid = a + (b - a) / 2;
    if (h[mid] < j)
      a = mid + 1;
    else
      b = mid;
  }
  return a;
}

// Root: check G and the layout; every rank: the same status.
static msp_status root_checks(msp_dist d, int root, const msp_matrix G) {
  if (d->rank != root) return MSP_SUCCESS;
  msp_status st = msp__check_matrix(G, "msp_dist_matrix_scatter", "G");
  if (st != MSP_SUCCESS) return st;
  if (G->rows != G->cols)
    return msp__error(MSP_ERR_INVALID_MATRIX,
                      "msp_dist_matrix_scatter: G is %lld x %lld, not square (the rows of x and y "
                      "are laid out alike)",
                      (long long)G->rows, (long long)G->cols);
  if (G->rows == 0)
    return msp__error(MSP_ERR_INVALID_MATRIX,
                      "msp_dist_matrix_scatter: G has no rows: nothing to distribute");
  const int64_t chunks = (G->rows + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  if (chunks < d->size)
    return msp__error(MSP_ERR_INVALID_MATRIX,
                      "msp_dist_matrix_scatter: %d ranks but G has %lld rows, %lld chunk%s of %d "
                      "rows; each rank needs at least one chunk: run at most %lld rank%s",
                      d->size, (long long)G->rows, (long long)chunks, chunks == 1 ? "" : "s",
                      MSP__RED_CHUNK, (long long)chunks, chunks == 1 ? "" : "s");
  if (d->off && G->rows != d->grows)
    return msp__error(MSP_ERR_DIMENSION_MISMATCH,
                      "msp_dist_matrix_scatter: G has %lld rows but the context's layout %lld "
                      "(fixed by its first matrix)",
                      (long long)G->rows, (long long)d->grows);
  return MSP_SUCCESS;
}

// The parts' matrix (rows of the local CSR listed in `which`, columns mapped by cmap) converted
// with opts, in the inner context.
static msp_status make_part(msp_dist d, const int64_t *rp, const int32_t *cmap, const double *val,
                            const int64_t *which, int64_t nrows, int64_t cols,
                            const msp_convert_options *opts, msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  int64_t *prp = NULL;
  int32_t *pci = NULL;
  double *pv = NULL;
  msp_matrix M = NULL;
  *out = NULL;
  if (nrows == 0) return MSP_SUCCESS;
  int64_t nnz = 0;
  for (int64_t k = 0; k < nrows; k++)
    nnz += rp[which[k] + 1] - rp[which[k]];
  MSP_TRY(MSP_ALLOC(prp, nrows + 1, "distributed matrix part"));
  MSP_TRY(MSP_ALLOC(pci, nnz > 0 ? nnz : 1, "distributed matrix part"));
  MSP_TRY(MSP_ALLOC(pv, nnz > 0 ? nnz : 1, "distributed matrix part"));
  prp[0] = 0;
  for (int64_t k = 0, p = 0; k < nrows; k++) {
    for (int64_t q = rp[which[k]]; q < rp[which[k] + 1]; q++, p++) {
      pci[p] = cmap[q];
      pv[p] = val[q];
    }
    prp[k + 1] = p;
  }
  MSP_TRY(msp_matrix_from_csr(d->inner, nrows, cols, prp, pci, pv, MSP_READ_ALLOW_NONFINITE, &M));
  MSP_TRY(msp_matrix_convert(d->inner, M, opts, out));
exit:
  msp_matrix_destroy(&M);
  msp__free(prp);
  msp__free(pci);
  msp__free(pv);
  return st;
}

// The split layout (d->split): Ad, every row's own columns (local numbering); Ao, the boundary
// rows' halo columns (numbered in the halo, cmap's k below nb and k - rows above); the halo
// vectors, Ao's row sums, and the device transport's buffers. ncnt / ndsp: the entries received
// from each rank and where they start in the halo.
static msp_status build_split(msp_dist d, const int64_t *rp, const int32_t *ci, const double *val,
                              const int32_t *cmap, const int *ncnt, const int *ndsp,
                              const msp_convert_options *opts, msp__dist_mat *m) {
  msp_status st = MSP_SUCCESS, lst = MSP_SUCCESS;
  const int64_t lo = m->row0, hi = m->row0 + m->rows, rows = m->rows, nnz = rp[rows];
  const int64_t nh = m->nb + m->na;
  int64_t *drp = NULL, *orp = NULL;
  int32_t *dci = NULL, *oci = NULL;
  double *dv = NULL, *ov = NULL;
  msp_matrix M = NULL;
  int64_t nown = 0, nbnd = 0;
  for (int64_t p = 0; p < nnz; p++)
    nown += ci[p] >= lo && ci[p] < hi;
  for (int64_t i = 0; i < rows; i++) {
    int inside = 1;
    for (int64_t p = rp[i]; p < rp[i + 1] && inside; p++)
      inside = ci[p] >= lo && ci[p] < hi;
    nbnd += !inside;
  }
  lst = MSP_ALLOC(drp, rows + 1, "distributed matrix part");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(dci, nown > 0 ? nown : 1, "distributed matrix part");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(dv, nown > 0 ? nown : 1, "distributed matrix part");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(orp, nbnd + 1, "distributed matrix part");
  if (lst == MSP_SUCCESS)
    lst = MSP_ALLOC(oci, nnz - nown > 0 ? nnz - nown : 1, "distributed matrix part");
  if (lst == MSP_SUCCESS)
    lst = MSP_ALLOC(ov, nnz - nown > 0 ? nnz - nown : 1, "distributed matrix part");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(m->brow, nbnd > 0 ? nbnd : 1, "distributed matrix rows");
  if (lst == MSP_SUCCESS)
    lst = MSP_ALLOC(m->hoff, m->nrecv > 0 ? m->nrecv : 1, "distributed matrix descriptor");
  MSP_TRY(msp__dist_agree(d, lst));
  for (int k = 0, q = 0; q < d->size; q++)
    if (ncnt[q]) m->hoff[k++] = ndsp[q];
  drp[0] = orp[0] = 0;
  for (int64_t i = 0, pd = 0, po = 0, b = 0; i < rows; i++) {
    const int64_t po0 = po;
    for (int64_t p = rp[i]; p < rp[i + 1]; p++) {
      if (ci[p] >= lo && ci[p] < hi) {
        dci[pd] = (int32_t)(ci[p] - lo);
        dv[pd++] = val[p];
      } else {
        oci[po] = cmap[p] < m->nb ? cmap[p] : (int32_t)(cmap[p] - rows);
        ov[po++] = val[p];
      }
    }
    drp[i + 1] = pd;
    if (po > po0) {
      m->brow[b++] = i;
      orp[b] = po;
    }
  }
  lst = msp_matrix_from_csr(d->inner, rows, rows, drp, dci, dv, MSP_READ_ALLOW_NONFINITE, &M);
  if (lst == MSP_SUCCESS) lst = msp_matrix_convert(d->inner, M, opts, &m->Ad);
  msp_matrix_destroy(&M);
  if (lst == MSP_SUCCESS && nbnd) {
    // the boundary rows' halo part: few entries, CSR in the values' precision
    msp_convert_options oo = opts ? *opts : msp_convert_options_default();
    oo.format = MSP_FORMAT_CSR;
    oo.kernel = MSP_KERNEL_AUTO;
    lst = msp_matrix_from_csr(d->inner, nbnd, nh, orp, oci, ov, MSP_READ_ALLOW_NONFINITE, &M);
    if (lst == MSP_SUCCESS) lst = msp_matrix_convert(d->inner, M, &oo, &m->Ao);
    msp_matrix_destroy(&M);
  }
  if (lst == MSP_SUCCESS && !d->base->spmv[m->Ad->format])
    lst = msp__error(MSP_ERR_NOT_SUPPORTED,
                     "msp_dist_matrix_scatter: format %s with %s values has no kernel on the %s "
                     "backend",
                     msp_format_name(m->Ad->format), msp_precision_name(m->Ad->precision),
                     d->base->name);
  // the halo in each precision it can travel in, Ao's sums, every row's sums (a y that is not f64)
  const msp_precision hp[4] = {MSP_PRECISION_F64, MSP_PRECISION_F32, MSP_PRECISION_F16,
                               MSP_PRECISION_BF16};
  for (int k = 0; k < 4 && lst == MSP_SUCCESS && nh > 0; k++)
    lst = msp_vector_create_precision(d->inner, nh, hp[k], &m->xh[hp[k]]);
  if (lst == MSP_SUCCESS && nbnd) lst = msp_vector_create(d->inner, nbnd, &m->yo);
  if (lst == MSP_SUCCESS) lst = msp_vector_create(d->ctx, rows, &m->yt);
  m->split = 1;
  m->interior = rows - nbnd;
  m->boundary = nbnd; // (the device buffers are sized from it)
  if (lst == MSP_SUCCESS && d->dops) lst = d->dops->mat_init(d, m);
  st = msp__dist_agree(d, lst);
  if (st == MSP_SUCCESS && d->dops && d->nccl_ok) st = msp__dist_agree(d, d->dops->mat_warm(m));
exit:
  msp__free(drp);
  msp__free(dci);
  msp__free(dv);
  msp__free(orp);
  msp__free(oci);
  msp__free(ov);
  return st;
}

// Build this rank's share from its rows (rp rebased to 0, global columns): the halo, the
// descriptor (with the other ranks), the parts, the work vectors.
msp_status msp__dist_build(msp_dist d, const int64_t *rp, const int32_t *ci, const double *val,
                           const msp_convert_options *opts, msp__dist_mat *m) {
  msp_status st = MSP_SUCCESS, lst = MSP_SUCCESS;
  const int P = d->size;
  const int64_t lo = m->row0, hi = m->row0 + m->rows, rows = m->rows, nnz = rp[rows];
  int32_t *halo = NULL, *cmap = NULL;
  int64_t nh = 0;
  int *ncnt = NULL, *gcnt = NULL, *ndsp = NULL, *gdsp = NULL;
  // the halo: columns outside [lo, hi), sorted, unique
  for (int64_t p = 0; p < nnz; p++)
    nh += ci[p] < lo || ci[p] >= hi;
  lst = MSP_ALLOC(halo, nh > 0 ? nh : 1, "distributed matrix halo");
  m->halo = halo; // kept (freed with m): the global columns of the extended x's halo
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(cmap, nnz > 0 ? nnz : 1, "distributed matrix columns");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC_ZERO(ncnt, 4 * (int64_t)P, "distributed matrix counts");
  MSP_TRY(msp__dist_agree(d, lst));
  gcnt = ncnt + P;
  ndsp = ncnt + 2 * P;
  gdsp = ncnt + 3 * P;
  nh = 0;
  for (int64_t p = 0; p < nnz; p++)
    if (ci[p] < lo || ci[p] >= hi) halo[nh++] = ci[p];
  qsort(halo, (size_t)nh, sizeof *halo, cmp_i32);
  {
    int64_t u = 0;
    for (int64_t i = 0; i < nh; i++)
      if (u == 0 || halo[i] != halo[u - 1]) halo[u++] = halo[i];
    nh = u;
  }
  m->nb = 0;
  while (m->nb < nh && halo[m->nb] < lo)
    m->nb++;
  m->na = nh - m->nb;
  // the extended numbering: [halo below, own, halo above]
  for (int64_t p = 0; p < nnz; p++) {
    const int32_t j = ci[p];
    if (j >= lo && j < hi) {
      cmap[p] = (int32_t)(m->nb + (j - lo));
    } else {
      const int64_t k = find_i32(halo, nh, j);
      cmap[p] = (int32_t)(k < m->nb ? k : k + rows);
    }
  }
  // the descriptor: what each owner sends me (my halo, grouped by owner: sorted columns make
  // each owner's entries contiguous), and what I send (asked by each rank)
  for (int64_t i = 0; i < nh; i++)
    ncnt[msp__dist_owner(d->off, P, halo[i])]++;
  if (MPI_Alltoall(ncnt, 1, MPI_INT, gcnt, 1, MPI_INT, d->comm) != MPI_SUCCESS) {
    st = msp__dist_mpi_fail("msp_dist_matrix_scatter", "MPI_Alltoall");
    goto exit;
  }
  int64_t ns = 0;
  for (int q = 0; q < P; q++) {
    ndsp[q] = q ? ndsp[q - 1] + ncnt[q - 1] : 0;
    gdsp[q] = q ? gdsp[q - 1] + gcnt[q - 1] : 0;
    ns += gcnt[q];
    m->nrecv += ncnt[q] > 0;
    m->nsend += gcnt[q] > 0;
  }
  lst = MSP_ALLOC(m->sidx, ns > 0 ? ns : 1, "distributed matrix send list");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(m->sbuf, ns > 0 ? ns : 1, "distributed matrix send");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(m->rrank, m->nrecv + 1, "distributed matrix descriptor");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(m->srank, m->nsend + 1, "distributed matrix descriptor");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(m->roff, m->nrecv + 1, "distributed matrix descriptor");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(m->rcnt, m->nrecv + 1, "distributed matrix descriptor");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(m->soff, m->nsend + 1, "distributed matrix descriptor");
  if (lst == MSP_SUCCESS)
    lst = MSP_ALLOC(m->req, m->nrecv + m->nsend + 1, "distributed matrix requests");
  MSP_TRY(msp__dist_agree(d, lst));
  if (MPI_Alltoallv(halo, ncnt, ndsp, MPI_INT32_T, m->sidx, gcnt, gdsp, MPI_INT32_T, d->comm) !=
      MPI_SUCCESS) {
    st = msp__dist_mpi_fail("msp_dist_matrix_scatter", "MPI_Alltoallv");
    goto exit;
  }
  for (int64_t i = 0; i < ns; i++)
    m->sidx[i] = (int32_t)(m->sidx[i] - lo);
  {
    int kr = 0, ks = 0;
    m->soff[0] = 0;
    for (int q = 0; q < P; q++) {
      if (ncnt[q]) {
        m->rrank[kr] = q;
        m->rcnt[kr] = ncnt[q];
        m->roff[kr] = ndsp[q] < m->nb ? ndsp[q] : ndsp[q] + rows;
        kr++;
      }
      if (gcnt[q]) {
        m->srank[ks] = q;
        m->soff[ks + 1] = gdsp[q] + gcnt[q];
        ks++;
      }
    }
    for (int q = 0; q < P; q++)
      m->neighbours += ncnt[q] > 0 || gcnt[q] > 0;
  }
  if (d->split) {
    MSP_TRY(build_split(d, rp, ci, val, cmap, ncnt, ndsp, opts, m));
    goto exit;
  }
  // interior and boundary rows
  int64_t ni = 0, nbnd = 0;
  for (int64_t i = 0; i < rows; i++) {
    int inside = 1;
    for (int64_t p = rp[i]; p < rp[i + 1] && inside; p++)
      inside = ci[p] >= lo && ci[p] < hi;
    ni += inside;
  }
  nbnd = rows - ni;
  const int64_t next = m->nb + rows + m->na;
  lst = MSP_ALLOC(m->irow, ni > 0 ? ni : 1, "distributed matrix rows");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(m->brow, nbnd > 0 ? nbnd : 1, "distributed matrix rows");
  if (lst == MSP_SUCCESS) lst = msp_vector_create(d->inner, next, &m->xext);
  if (lst == MSP_SUCCESS) lst = msp_vector_create(d->inner, ni, &m->yi);
  if (lst == MSP_SUCCESS) lst = msp_vector_create(d->inner, nbnd, &m->yb);
  if (lst == MSP_SUCCESS) lst = msp_vector_create(d->ctx, rows, &m->yt);
  MSP_TRY(msp__dist_agree(d, lst));
  for (int64_t i = 0, a = 0, b = 0; i < rows; i++) {
    int inside = 1;
    for (int64_t p = rp[i]; p < rp[i + 1] && inside; p++)
      inside = ci[p] >= lo && ci[p] < hi;
    if (inside)
      m->irow[a++] = i;
    else
      m->brow[b++] = i;
  }
  lst = make_part(d, rp, cmap, val, m->irow, ni, next, opts, &m->Ai);
  if (lst == MSP_SUCCESS) lst = make_part(d, rp, cmap, val, m->brow, nbnd, next, opts, &m->Ab);
  for (int k = 0; k < 2 && lst == MSP_SUCCESS; k++) {
    const msp_matrix part = k ? m->Ab : m->Ai;
    if (part && !d->base->spmv[part->format])
      lst = msp__error(MSP_ERR_NOT_SUPPORTED,
                       "msp_dist_matrix_scatter: format %s with %s values has no kernel on the "
                       "%s backend",
                       msp_format_name(part->format), msp_precision_name(part->precision),
                       d->base->name);
  }
  MSP_TRY(msp__dist_agree(d, lst));
exit:
  msp__free(cmap);
  msp__free(ncnt);
  return st;
}

// The handle: this rank's diagonal block (own columns, local numbering) as a CSR matrix of the
// distributed context (what a preconditioner built from A's rows sees: Jacobi's diagonal), with
// the distributed matrix in A->dev. Made on the host context and handed to the distributed one:
// its CSR stays on the host (a device backend's data would take A->dev).
static msp_status make_handle(msp_dist d, const int64_t *rp, const int32_t *ci, const double *val,
                              msp__dist_mat *m, msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  const int64_t rows = m->rows, lo = m->row0, hi = lo + rows;
  int64_t *brp = NULL;
  int32_t *bci = NULL;
  double *bv = NULL;
  int64_t nnz = 0;
  for (int64_t p = 0; p < rp[rows]; p++)
    nnz += ci[p] >= lo && ci[p] < hi;
  MSP_TRY(MSP_ALLOC(brp, rows + 1, "distributed matrix diagonal block"));
  MSP_TRY(MSP_ALLOC(bci, nnz > 0 ? nnz : 1, "distributed matrix diagonal block"));
  MSP_TRY(MSP_ALLOC(bv, nnz > 0 ? nnz : 1, "distributed matrix diagonal block"));
  brp[0] = 0;
  for (int64_t i = 0, k = 0; i < rows; i++) {
    for (int64_t p = rp[i]; p < rp[i + 1]; p++)
      if (ci[p] >= lo && ci[p] < hi) {
        bci[k] = (int32_t)(ci[p] - lo);
        bv[k++] = val[p];
      }
    brp[i + 1] = k;
  }
  MSP_TRY(msp_matrix_from_csr(d->host, rows, rows, brp, bci, bv, MSP_READ_ALLOW_NONFINITE, out));
  msp__context_detach(d->host);
  (*out)->ctx = d->ctx;
  msp__context_attach(d->ctx);
  (*out)->dev = m;
  m->handle = *out;
exit:
  msp__free(brp);
  msp__free(bci);
  msp__free(bv);
  return st;
}

msp_status msp_dist_matrix_scatter(msp_dist d, int root, const msp_matrix G,
                                   const msp_convert_options *opts, msp_matrix *A) {
  msp_status st = MSP_SUCCESS, lst = MSP_SUCCESS;
  msp__dist_mat *m = NULL;
  int64_t *rp = NULL;
  int32_t *ci = NULL;
  double *val = NULL;
  int64_t *newoff = NULL;
  int32_t *newperm = NULL;
  // the root's rows: G's, or P G P^T's under a METIS layout
  const int64_t *grp = NULL;
  const int32_t *gci = NULL;
  const double *gval = NULL;
  int64_t *prp = NULL;
  int32_t *pci = NULL;
  double *pval = NULL;
  MSP_CHECK_ARG(msp__dist_ok(d), "msp_dist_matrix_scatter: d is not a distributed context");
  MSP_CHECK_ARG(A, "msp_dist_matrix_scatter: A is NULL");
  *A = NULL;
  MSP_CHECK_ARG(root >= 0 && root < d->size,
                "msp_dist_matrix_scatter: root %d outside the %d ranks", root, d->size);
  MSP_TRY(msp__dist_agree(d, root_checks(d, root, G)));
  // the layout (root's partition of the first matrix), and the global sizes
  int64_t sizes[2] = {0, 0};
  if (d->rank == root) {
    sizes[0] = G->rows;
    sizes[1] = G->nnz;
  }
  if (MPI_Bcast(sizes, 2, MPI_INT64_T, root, d->comm) != MPI_SUCCESS) {
    st = msp__dist_mpi_fail("msp_dist_matrix_scatter", "MPI_Bcast");
    goto exit;
  }
  if (!d->off) {
    lst = MSP_ALLOC(newoff, d->size + 1, "distributed row layout");
    MSP_TRY(msp__dist_agree(d, lst));
    if (d->partition == MSP_DIST_PARTITION_METIS) {
      lst = MSP_ALLOC(newperm, sizes[0], "distributed row renumbering");
      MSP_TRY(msp__dist_agree(d, lst));
      if (d->rank == root) {
        const double t0 = MPI_Wtime();
        lst = msp__dist_metis(G, d->size, newperm, newoff);
        d->partition_s = MPI_Wtime() - t0;
      }
      MSP_TRY(msp__dist_agree(d, lst));
      if (MPI_Bcast(newperm, (int)sizes[0], MPI_INT32_T, root, d->comm) != MPI_SUCCESS) {
        st = msp__dist_mpi_fail("msp_dist_matrix_scatter", "MPI_Bcast");
        goto exit;
      }
    } else if (d->rank == root) {
      partition(G->rows, G->rowptr, d->size, newoff);
    }
    if (MPI_Bcast(newoff, d->size + 1, MPI_INT64_T, root, d->comm) != MPI_SUCCESS) {
      st = msp__dist_mpi_fail("msp_dist_matrix_scatter", "MPI_Bcast");
      goto exit;
    }
    d->off = newoff;
    d->perm = newperm;
    d->grows = sizes[0];
    newoff = NULL;
    newperm = NULL;
  }
  if (d->rank == root) {
    if (d->perm) lst = msp__dist_permute(G, d->perm, &prp, &pci, &pval);
    grp = prp ? prp : G->rowptr;
    gci = prp ? pci : G->colind;
    gval = prp ? pval : G->val;
  }
  MSP_TRY(msp__dist_agree(d, lst));
  lst = MSP_ALLOC_ZERO(m, 1, "distributed matrix");
  MSP_TRY(msp__dist_agree(d, lst));
  m->magic = MSP__MAGIC_DIST_MAT;
  m->d = d;
  m->grows = sizes[0];
  m->gnnz = sizes[1];
  m->row0 = d->off[d->rank];
  m->rows = d->off[d->rank + 1] - m->row0;
  // rows: the root sends each rank its rows' CSR, the row pointers first, then (once every rank
  // has room for them) the columns and values; the root's own rows are rebased copies
  {
    const int64_t p0 = d->rank == root ? grp[m->row0] : 0;
    lst = MSP_ALLOC(rp, m->rows + 1, "distributed matrix rows");
    MSP_TRY(msp__dist_agree(d, lst));
    if (d->rank == root) {
      for (int r = 0; r < d->size; r++)
        if (r != root)
          MSP_TRY(send_big(grp + d->off[r], d->off[r + 1] - d->off[r] + 1, MPI_INT64_T,
                           sizeof(int64_t), r, TAG_ROWPTR, d->comm));
      for (int64_t i = 0; i <= m->rows; i++)
        rp[i] = grp[m->row0 + i] - p0;
    } else {
      MSP_TRY(recv_big(rp, m->rows + 1, MPI_INT64_T, sizeof(int64_t), root, TAG_ROWPTR, d->comm));
      for (int64_t i = m->rows; i >= 0; i--)
        rp[i] -= rp[0];
    }
    const int64_t nnz = rp[m->rows];
    lst = MSP_ALLOC(ci, nnz > 0 ? nnz : 1, "distributed matrix rows");
    if (lst == MSP_SUCCESS) lst = MSP_ALLOC(val, nnz > 0 ? nnz : 1, "distributed matrix rows");
    MSP_TRY(msp__dist_agree(d, lst));
    if (d->rank == root) {
      for (int r = 0; r < d->size; r++) {
        if (r == root) continue;
        const int64_t q0 = grp[d->off[r]], q1 = grp[d->off[r + 1]];
        MSP_TRY(send_big(gci + q0, q1 - q0, MPI_INT32_T, sizeof(int32_t), r, TAG_COLIND, d->comm));
        MSP_TRY(send_big(gval + q0, q1 - q0, MPI_DOUBLE, sizeof(double), r, TAG_VAL, d->comm));
      }
      if (nnz) {
        memcpy(ci, gci + p0, (size_t)nnz * sizeof *ci);
        memcpy(val, gval + p0, (size_t)nnz * sizeof *val);
      }
    } else {
      MSP_TRY(recv_big(ci, nnz, MPI_INT32_T, sizeof(int32_t), root, TAG_COLIND, d->comm));
      MSP_TRY(recv_big(val, nnz, MPI_DOUBLE, sizeof(double), root, TAG_VAL, d->comm));
    }
  }
  m->nnz = rp[m->rows];
  MSP_TRY(msp__dist_build(d, rp, ci, val, opts, m));
  lst = make_handle(d, rp, ci, val, m, A);
  if (lst == MSP_SUCCESS) m = NULL; // *A owns it now
  st = msp__dist_agree(d, lst);
  if (st != MSP_SUCCESS) msp_matrix_destroy(A); // another rank failed: this one's too
exit:
  msp__dist_mat_free(m);
  msp__free(rp);
  msp__free(ci);
  msp__free(val);
  msp__free(newoff);
  msp__free(newperm);
  msp__free(prp);
  msp__free(pci);
  msp__free(pval);
  return st;
}

// This rank's rows [row0, row0 + rows) of an R-MAT graph of `edges` edges (2^scale rows), made by
// every rank together: each draws an equal share of the edge list, sends each edge to the rank
// owning its row (one all-to-all), and sorts what it received row by row (a counting pass over
// the rows, then each row's columns), dropping duplicates as msp_matrix_generate's sorted list
// does: the same rows, columns and values as one process's graph. Collective (errors agreed).
static msp_status rmat_rows(msp_dist d, const char *spec, int64_t row0, int64_t rows, int64_t edges,
                            int scale, int64_t **prp, int32_t **pci, double **pval) {
  msp_status st = MSP_SUCCESS, lst = MSP_SUCCESS;
  const int P = d->size;
  const int64_t e0 = edges * d->rank / P, e1 = edges * (d->rank + 1) / P, ne = e1 - e0;
  const uint64_t cmask = ((uint64_t)1 << scale) - 1;
  uint64_t *key = NULL, *sbuf = NULL, *rbuf = NULL;
  int *scnt = NULL, *sdsp = NULL, *rcnt = NULL, *rdsp = NULL;
  int64_t *rp = NULL, *fill = NULL, nr = 0, gr = 0, ge = 0;
  int32_t *col = NULL, *ci = NULL;
  double *val = NULL;
  int sc = 0;
  *prp = NULL;
  *pci = NULL;
  *pval = NULL;
  lst = MSP_ALLOC(key, ne > 0 ? ne : 1, "R-MAT edges");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(sbuf, ne > 0 ? ne : 1, "R-MAT edges");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC_ZERO(scnt, P, "R-MAT exchange");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(sdsp, P, "R-MAT exchange");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(rcnt, P, "R-MAT exchange");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(rdsp, P, "R-MAT exchange");
  if (lst == MSP_SUCCESS) lst = msp__matrix_generate_edges(spec, e0, e1, &gr, &ge, &sc, key);
  if (lst == MSP_SUCCESS && ne > INT_MAX)
    lst = msp__error(MSP_ERR_NOT_SUPPORTED,
                     "msp_dist_matrix_generate: %lld edges on one rank exceed MPI's int counts "
                     "(use more ranks)",
                     (long long)ne);
  MSP_TRY(msp__dist_agree(d, lst));
  // the edges by the rank owning their row, in edge order within each rank
  for (int64_t k = 0; k < ne; k++)
    scnt[msp__dist_owner(d->off, P, (int64_t)(key[k] >> scale))]++;
  for (int q = 0, o = 0; q < P; q++) {
    sdsp[q] = o;
    o += scnt[q];
  }
  for (int64_t k = 0; k < ne; k++)
    sbuf[sdsp[msp__dist_owner(d->off, P, (int64_t)(key[k] >> scale))]++] = key[k];
  for (int q = 0, o = 0; q < P; q++) {
    sdsp[q] = o;
    o += scnt[q];
  }
  msp__free(key);
  key = NULL;
  if (MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, d->comm) != MPI_SUCCESS) {
    st = msp__dist_mpi_fail("msp_dist_matrix_generate", "MPI_Alltoall");
    goto exit;
  }
  for (int q = 0; q < P; q++) {
    rdsp[q] = (int)nr;
    nr += rcnt[q];
  }
  lst = nr > INT_MAX ? msp__error(MSP_ERR_NOT_SUPPORTED,
                                  "msp_dist_matrix_generate: %lld edges for one rank exceed MPI's "
                                  "int counts (use more ranks)",
                                  (long long)nr)
                     : MSP_ALLOC(rbuf, nr > 0 ? nr : 1, "R-MAT edges");
  MSP_TRY(msp__dist_agree(d, lst));
  if (MPI_Alltoallv(sbuf, scnt, sdsp, MPI_UINT64_T, rbuf, rcnt, rdsp, MPI_UINT64_T, d->comm) !=
      MPI_SUCCESS) {
    st = msp__dist_mpi_fail("msp_dist_matrix_generate", "MPI_Alltoallv");
    goto exit;
  }
  msp__free(sbuf);
  sbuf = NULL;
  // row by row (a counting pass), each row's columns sorted, duplicates dropped
  lst = MSP_ALLOC_ZERO(rp, rows + 1, "R-MAT rows");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(fill, rows > 0 ? rows : 1, "R-MAT rows");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(col, nr > 0 ? nr : 1, "R-MAT rows");
  if (lst != MSP_SUCCESS) goto agree;
  for (int64_t k = 0; k < nr; k++)
    rp[(int64_t)(rbuf[k] >> scale) - row0 + 1]++;
  for (int64_t i = 0; i < rows; i++) {
    rp[i + 1] += rp[i];
    fill[i] = rp[i];
  }
  for (int64_t k = 0; k < nr; k++)
    col[fill[(int64_t)(rbuf[k] >> scale) - row0]++] = (int32_t)(rbuf[k] & cmask);
  msp__free(rbuf);
  rbuf = NULL;
  int64_t nnz = 0;
  for (int64_t i = 0; i < rows; i++) {
    const int64_t a = rp[i], b = rp[i + 1];
    qsort(col + a, (size_t)(b - a), sizeof *col, cmp_i32);
    fill[i] = nnz; // the row's start once compacted
    for (int64_t k = a; k < b; k++)
      if (k == a || col[k] != col[k - 1]) col[nnz++] = col[k];
  }
  for (int64_t i = 0; i < rows; i++)
    rp[i] = fill[i];
  rp[rows] = nnz;
  lst = MSP_ALLOC(ci, nnz > 0 ? nnz : 1, "R-MAT rows");
  if (lst == MSP_SUCCESS) lst = MSP_ALLOC(val, nnz > 0 ? nnz : 1, "R-MAT rows");
  if (lst == MSP_SUCCESS) {
    if (nnz) memcpy(ci, col, (size_t)nnz * sizeof *ci);
    lst = msp__matrix_generate_edge_values(spec, row0, rows, rp, ci, val);
  }
agree:
  MSP_TRY(msp__dist_agree(d, lst));
  *prp = rp;
  *pci = ci;
  *pval = val;
  rp = NULL;
  ci = NULL;
  val = NULL;
exit:
  msp__free(key);
  msp__free(sbuf);
  msp__free(rbuf);
  msp__free(scnt);
  msp__free(sdsp);
  msp__free(rcnt);
  msp__free(rdsp);
  msp__free(rp);
  msp__free(fill);
  msp__free(col);
  msp__free(ci);
  msp__free(val);
  return st;
}

msp_status msp_dist_matrix_generate(msp_dist d, const char *spec, const msp_convert_options *opts,
                                    msp_matrix *A) {
  msp_status st = MSP_SUCCESS, lst = MSP_SUCCESS;
  msp__dist_mat *m = NULL;
  int64_t *rp = NULL, *newoff = NULL;
  int32_t *ci = NULL;
  double *val = NULL;
  int64_t grows = 0, gcols = 0;
  MSP_CHECK_ARG(msp__dist_ok(d), "msp_dist_matrix_generate: d is not a distributed context");
  MSP_CHECK_ARG(A, "msp_dist_matrix_generate: A is NULL");
  *A = NULL;
  {
    // every rank names the same spec (rank 0's, compared)
    int len = spec ? (int)strlen(spec) : -1, len0 = len;
    if (MPI_Bcast(&len0, 1, MPI_INT, 0, d->comm) != MPI_SUCCESS)
      return msp__dist_mpi_fail("msp_dist_matrix_generate", "MPI_Bcast");
    char *s0 = NULL;
    lst = len0 < 0 ? MSP_SUCCESS : MSP_ALLOC(s0, len0 + 1, "generator spec");
    if (lst == MSP_SUCCESS && s0 && d->rank == 0) memcpy(s0, spec, (size_t)len0 + 1);
    int bad = lst != MSP_SUCCESS, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, d->comm);
    if (!any && s0 && MPI_Bcast(s0, len0 + 1, MPI_CHAR, 0, d->comm) != MPI_SUCCESS) any = 1;
    if (!any && lst == MSP_SUCCESS)
      lst = len != len0 || (spec && memcmp(spec, s0, (size_t)len0))
                ? msp__error(MSP_ERR_INVALID_ARGUMENT,
                             "msp_dist_matrix_generate: the ranks name different specs")
            : !spec ? msp__error(MSP_ERR_INVALID_ARGUMENT, "msp_dist_matrix_generate: spec is NULL")
                    : MSP_SUCCESS;
    msp__free(s0);
    if (any && lst == MSP_SUCCESS)
      lst = msp__error(MSP_ERR_OUT_OF_MEMORY, "msp_dist_matrix_generate: a rank could not "
                                              "allocate the spec");
    MSP_TRY(msp__dist_agree(d, lst));
  }
  // the sizes (the same on every rank: the spec is), then the layout; R-MAT's edge list is drawn
  // by every rank and sent to the rows' owners
  int64_t redges = 0;
  int rscale = 0;
  const int rmat =
      msp__matrix_generate_edges(spec, 0, 0, &grows, &redges, &rscale, NULL) == MSP_SUCCESS;
  msp__clear_error();
  if (rmat)
    gcols = grows;
  else
    MSP_TRY(msp__dist_agree(
        d, msp__matrix_generate_rows(spec, 0, 0, &grows, &gcols, NULL, NULL, NULL)));
  const int64_t chunks = (grows + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  if (grows != gcols)
    lst = msp__error(MSP_ERR_INVALID_MATRIX, "msp_dist_matrix_generate: %s is not square", spec);
  else if (chunks < d->size)
    lst = msp__error(MSP_ERR_INVALID_MATRIX,
                     "msp_dist_matrix_generate: %d ranks but %s has %lld rows, %lld chunk%s of %d "
                     "rows; each rank needs at least one chunk",
                     d->size, spec, (long long)grows, (long long)chunks, chunks == 1 ? "" : "s",
                     MSP__RED_CHUNK);
  else if (d->off && grows != d->grows)
    lst = msp__error(MSP_ERR_DIMENSION_MISMATCH,
                     "msp_dist_matrix_generate: %s has %lld rows but the context's layout %lld",
                     spec, (long long)grows, (long long)d->grows);
  else if (!d->off && d->partition != MSP_DIST_PARTITION_BLOCKS)
    lst = msp__error(MSP_ERR_NOT_SUPPORTED,
                     "msp_dist_matrix_generate: a METIS layout partitions the whole graph on one "
                     "rank: distribute it with msp_dist_matrix_scatter");
  MSP_TRY(msp__dist_agree(d, lst));
  if (!d->off) {
    // blocks of whole chunks, the same number of chunks per rank (give or take one)
    MSP_TRY(msp__dist_agree(d, MSP_ALLOC(newoff, d->size + 1, "distributed row layout")));
    for (int r = 0; r <= d->size; r++) {
      const int64_t c = chunks * r / d->size * MSP__RED_CHUNK;
      newoff[r] = c < grows ? c : grows;
    }
    d->off = newoff;
    d->grows = grows;
    newoff = NULL;
  }
  MSP_TRY(msp__dist_agree(d, MSP_ALLOC_ZERO(m, 1, "distributed matrix")));
  m->magic = MSP__MAGIC_DIST_MAT;
  m->d = d;
  m->grows = grows;
  m->row0 = d->off[d->rank];
  m->rows = d->off[d->rank + 1] - m->row0;
  if (rmat) {
    MSP_TRY(rmat_rows(d, spec, m->row0, m->rows, redges, rscale, &rp, &ci, &val));
  } else {
    lst =
        msp__matrix_generate_rows(spec, m->row0, m->row0 + m->rows, &grows, &gcols, &rp, &ci, &val);
    MSP_TRY(msp__dist_agree(d, lst));
  }
  m->nnz = rp[m->rows];
  {
    int64_t nnz = m->nnz;
    if (MPI_Allreduce(&nnz, &m->gnnz, 1, MPI_INT64_T, MPI_SUM, d->comm) != MPI_SUCCESS) {
      st = msp__dist_mpi_fail("msp_dist_matrix_generate", "MPI_Allreduce");
      goto exit;
    }
  }
  MSP_TRY(msp__dist_build(d, rp, ci, val, opts, m));
  lst = make_handle(d, rp, ci, val, m, A);
  if (lst == MSP_SUCCESS) m = NULL; // *A owns it now
  st = msp__dist_agree(d, lst);
  if (st != MSP_SUCCESS) msp_matrix_destroy(A);
exit:
  msp__dist_mat_free(m);
  msp__free(rp);
  msp__free(ci);
  msp__free(val);
  msp__free(newoff);
  return st;
}

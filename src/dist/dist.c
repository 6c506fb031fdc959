// dist.c: distributed contexts and matrices over MPI: the row layout, the scatter of a matrix
// from the root and the communication descriptor (the product is in product.c, the vectors'
// scatter and gather in vector.c).
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

msp_status msp__dist_mpi_fail(const char *fn, const char *call) {
  return msp__error(MSP_ERR_INTERNAL, "%s: %s failed", fn, call);
}

msp_status msp__dist_defer(msp_dist d, msp_status st) {
  if (st == MSP_SUCCESS || !d->split) return st;
  if (d->pending == MSP_SUCCESS) {
    d->pending = st;
    snprintf(d->pending_msg, sizeof d->pending_msg, "%s", msp_last_error());
  }
  return MSP_SUCCESS;
}

msp_status msp__dist_agree(msp_dist d, msp_status st) {
  if (st == MSP_SUCCESS && d->pending != MSP_SUCCESS)
    st = msp__error(d->pending, "%s", d->pending_msg); // kept from an earlier step
  d->pending = MSP_SUCCESS;
  struct {
    int failed, rank;
  } mine = {st != MSP_SUCCESS, d->rank}, first;
  if (MPI_Allreduce(&mine, &first, 1, MPI_2INT, MPI_MAXLOC, d->comm) != MPI_SUCCESS)
    return msp__dist_mpi_fail("msp_dist", "MPI_Allreduce");
  if (!first.failed) return MSP_SUCCESS;
  int code = (int)st;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", msp_last_error());
  if (MPI_Bcast(&code, 1, MPI_INT, first.rank, d->comm) != MPI_SUCCESS ||
      MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first.rank, d->comm) != MPI_SUCCESS)
    return msp__dist_mpi_fail("msp_dist", "MPI_Bcast");
  msg[sizeof msg - 1] = '\0';
  if (d->rank == first.rank) return st;
  return msp__error((msp_status)code, "rank %d: %s", first.rank, msg);
}

// ---- context ------------------------------------------------------------------------------------
static void dist_matrix_free(msp_matrix A);

// The vector and basis operations of split contexts: a failure is kept for the next collective
// call (msp__dist_defer), so the solver goes on to it on every rank.
static msp_status defer_axpby(msp_context ctx, double a, msp_vector x, double b, msp_vector y) {
  msp_dist d = msp__dist_of(ctx);
  return msp__dist_defer(d, d->base->axpby(ctx, a, x, b, y));
}
static msp_status defer_scale(msp_context ctx, double a, msp_vector x) {
  msp_dist d = msp__dist_of(ctx);
  return msp__dist_defer(d, d->base->scale(ctx, a, x));
}
static msp_status defer_copy(msp_context ctx, msp_vector x, msp_vector y) {
  msp_dist d = msp__dist_of(ctx);
  return msp__dist_defer(d, d->base->copy(ctx, x, y));
}
static msp_status defer_fill(msp_context ctx, msp_vector x, double value) {
  msp_dist d = msp__dist_of(ctx);
  return msp__dist_defer(d, d->base->fill(ctx, x, value));
}
static msp_status defer_pmul(msp_context ctx, msp_vector dv, msp_vector x, msp_vector z) {
  msp_dist d = msp__dist_of(ctx);
  return msp__dist_defer(d, d->base->pmul(ctx, dv, x, z));
}
static msp_status defer_combine(msp_context ctx, const msp__basis *V, int k1, const double *y,
                                msp_vector z) {
  msp_dist d = msp__dist_of(ctx);
  return msp__dist_defer(d, d->base->basis_combine(ctx, V, k1, y, z));
}

msp_status msp__dist_set_exact(msp_dist d, int exact) {
  if (exact && d->base->kind != MSP_BACKEND_CPU)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "distributed context: the exact reductions are the CPU backend's (%s ranks)",
                      d->base->name);
  d->exact = exact != 0;
  d->split = !d->exact;
  d->table.axpby = d->split ? defer_axpby : d->base->axpby;
  d->table.scale = d->split ? defer_scale : d->base->scale;
  d->table.copy = d->split ? defer_copy : d->base->copy;
  d->table.fill = d->split ? defer_fill : d->base->fill;
  d->table.pmul = d->split ? defer_pmul : d->base->pmul;
  d->table.basis_combine = d->split ? defer_combine : d->base->basis_combine;
  if (d->exact) {
    d->table.dot = msp__dist_dot;
    d->table.nrm1 = msp__dist_nrm1;
    d->table.nrm2 = msp__dist_nrm2;
    d->table.basis_store = msp__dist_basis_store;
    d->table.basis_project = msp__dist_basis_project;
    d->table.basis_subtract = msp__dist_basis_subtract;
    d->table.basis_dcgs2_project = msp__dist_basis_dcgs2_project;
  } else {
    d->table.dot = msp__dist_sum_dot;
    d->table.nrm1 = msp__dist_sum_nrm1;
    d->table.nrm2 = msp__dist_sum_nrm2;
    d->table.basis_store = msp__dist_sum_basis_store;
    d->table.basis_project = msp__dist_sum_basis_project;
    d->table.basis_subtract = msp__dist_sum_basis_subtract;
    d->table.basis_dcgs2_project = msp__dist_sum_basis_dcgs2_project;
  }
  return MSP_SUCCESS;
}

#ifndef MSP_HAVE_CUDA
// (the device transport is registered by device.cu in a build with CUDA)
const msp__dist_devops *msp__dist_devops_cuda(void) {
  return NULL;
}
#endif

// This rank among the ranks of its node (what picks its GPU).
static msp_status local_rank(msp_dist d) {
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &node) !=
      MPI_SUCCESS)
    return msp__dist_mpi_fail("msp_dist_create", "MPI_Comm_split_type");
  MPI_Comm_rank(node, &d->local_rank);
  MPI_Comm_size(node, &d->local_size);
  MPI_Comm_free(&node);
  return MSP_SUCCESS;
}

const char *msp_dist_transport_name(msp_dist_transport t) {
  switch (t) {
  case MSP_DIST_TRANSPORT_AUTO:
    return "auto";
  case MSP_DIST_TRANSPORT_NCCL:
    return "nccl";
  case MSP_DIST_TRANSPORT_HOST:
    return "host";
  case MSP_DIST_TRANSPORT_MPI:
    return "mpi";
  }
  return "unknown";
}

// 1 when two ranks of the communicator hold the same GPU (by UUID; a rank's GPU in uuids[16 r]).
int msp__dist_gpus_shared(const unsigned char *uuids, int size) {
  for (int a = 0; a < size; a++)
    for (int b = a + 1; b < size; b++)
      if (!memcmp(uuids + 16 * a, uuids + 16 * b, 16)) return 1;
  return 0;
}

// A CUDA rank's device transport: the communication stream, and NCCL's communicator when the
// build has NCCL and no two ranks share a GPU (then the default transport); agreed by all ranks.
static msp_status device_transport(msp_dist d) {
  msp_status st = MSP_SUCCESS;
  unsigned char *uuids = NULL;
  unsigned char id[MSP__DIST_NCCL_ID];
  d->dops = msp__dist_devops_cuda();
  if (!d->dops)
    return msp__error(MSP_ERR_NOT_BUILT, "msp_dist_create_backend: the distributed layer was "
                                         "built without CUDA");
  st = MSP_ALLOC_ZERO(uuids, 16 * (int64_t)d->size, "distributed context");
  if (st == MSP_SUCCESS) st = d->dops->device_uuid(d->device, uuids + 16 * d->rank);
  MSP_TRY(msp__dist_agree(d, st));
  if (MPI_Allgather(MPI_IN_PLACE, 16, MPI_UNSIGNED_CHAR, uuids, 16, MPI_UNSIGNED_CHAR, d->comm) !=
      MPI_SUCCESS) {
    st = msp__dist_mpi_fail("msp_dist_create", "MPI_Allgather");
    goto exit;
  }
  // NCCL: rank 0's unique id to every rank (NOT_BUILT on rank 0 means no NCCL for anyone)
  int use_nccl = !msp__dist_gpus_shared(uuids, d->size) && d->size > 1;
  if (use_nccl) {
    int have =
        d->rank == 0 && d->dops->nccl_unique_id ? d->dops->nccl_unique_id(id) == MSP_SUCCESS : 0;
    msp__clear_error();
    if (MPI_Bcast(&have, 1, MPI_INT, 0, d->comm) != MPI_SUCCESS ||
        (have && MPI_Bcast(id, MSP__DIST_NCCL_ID, MPI_UNSIGNED_CHAR, 0, d->comm) != MPI_SUCCESS)) {
      st = msp__dist_mpi_fail("msp_dist_create", "MPI_Bcast");
      goto exit;
    }
    use_nccl = have;
  }
  MSP_TRY(msp__dist_agree(d, d->dops->init(d, use_nccl ? id : NULL)));
  d->nccl_ok = use_nccl;
  d->transport = use_nccl ? MSP_DIST_TRANSPORT_NCCL : MSP_DIST_TRANSPORT_HOST;
exit:
  msp__free(uuids);
  return st;
}

msp_status msp_dist_set_transport(msp_dist d, msp_dist_transport t) {
  msp_status st = MSP_SUCCESS;
  MSP_CHECK_ARG(msp__dist_ok(d), "msp_dist_set_transport: d is not a distributed context");
  int k[2] = {(int)t, -(int)t};
  if (MPI_Allreduce(MPI_IN_PLACE, k, 2, MPI_INT, MPI_MAX, d->comm) != MPI_SUCCESS)
    return msp__dist_mpi_fail("msp_dist_set_transport", "MPI_Allreduce");
  if (k[0] != -k[1])
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp_dist_set_transport: the ranks name different transports");
  if (t == MSP_DIST_TRANSPORT_AUTO) {
    t = d->dops ? (d->nccl_ok ? MSP_DIST_TRANSPORT_NCCL : MSP_DIST_TRANSPORT_HOST)
                : MSP_DIST_TRANSPORT_MPI;
  } else if (t != MSP_DIST_TRANSPORT_NCCL && t != MSP_DIST_TRANSPORT_HOST &&
             t != MSP_DIST_TRANSPORT_MPI) {
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp_dist_set_transport: unknown transport %d (auto, nccl, host)", (int)t);
  } else if (!d->dops && t != MSP_DIST_TRANSPORT_MPI) {
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_dist_set_transport: %s is a transport of CUDA ranks; these are %s "
                      "ranks (their halo goes over MPI)",
                      msp_dist_transport_name(t), d->base->name);
  } else if (d->dops && t == MSP_DIST_TRANSPORT_MPI) {
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_dist_set_transport: CUDA ranks move the halo by nccl or host");
  } else if (t == MSP_DIST_TRANSPORT_NCCL && !d->nccl_ok) {
    return msp__error(MSP_ERR_NOT_SUPPORTED, "msp_dist_set_transport: no NCCL communicator (%s)",
                      d->size < 2 ? "one rank"
                      : d->dops->nccl_unique_id == NULL
                          ? "built without NCCL"
                          : "built without NCCL, or two ranks share a GPU");
  }
  d->transport = t;
  return st;
}

msp_dist_transport msp_dist_get_transport(const msp_dist d) {
  return msp__dist_ok(d) ? d->transport : MSP_DIST_TRANSPORT_AUTO;
}
int msp_dist_device(const msp_dist d) {
  return msp__dist_ok(d) ? d->device : -1;
}
int msp_dist_local_rank(const msp_dist d) {
  return msp__dist_ok(d) ? d->local_rank : -1;
}

msp_status msp_dist_create(MPI_Comm comm, msp_dist *out) {
  return msp_dist_create_backend(comm, MSP_BACKEND_CPU, 0, out);
}

msp_status msp_dist_create_backend(MPI_Comm comm, msp_backend backend, int device, msp_dist *out) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = NULL;
  int inited = 0;
  MSP_CHECK_ARG(out, "msp_dist_create: out is NULL");
  *out = NULL;
  MPI_Initialized(&inited);
  MSP_CHECK_ARG(inited, "msp_dist_create: MPI is not initialised (call MPI_Init first)");
  MSP_CHECK_ARG(backend == MSP_BACKEND_CPU || backend == MSP_BACKEND_CUDA,
                "msp_dist_create_backend: backend %d is neither MSP_BACKEND_CPU nor "
                "MSP_BACKEND_CUDA (every rank names its backend)",
                (int)backend);
  {
    // every rank has its object or none goes on (a rank that gave up would leave the others
    // waiting in the collective calls that follow)
    int failed = MSP_ALLOC_ZERO(d, 1, "distributed context") != MSP_SUCCESS, any = 0;
    if (d) d->comm = MPI_COMM_NULL;
    if (MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) {
      st = msp__dist_mpi_fail("msp_dist_create", "MPI_Allreduce");
      goto exit;
    }
    if (any) {
      st = failed ? MSP_ERR_OUT_OF_MEMORY
                  : msp__error(MSP_ERR_OUT_OF_MEMORY,
                               "msp_dist_create: another rank could not allocate its context");
      goto exit;
    }
  }
  if (MPI_Comm_dup(comm, &d->comm) != MPI_SUCCESS) {
    d->comm = MPI_COMM_NULL;
    st = msp__dist_mpi_fail("msp_dist_create", "MPI_Comm_dup");
    goto exit;
  }
  MPI_Comm_rank(d->comm, &d->rank);
  MPI_Comm_size(d->comm, &d->size);
  {
    // one backend for all (the two kinds of reductions are different collectives)
    int kinds[2] = {(int)backend, -(int)backend};
    if (MPI_Allreduce(MPI_IN_PLACE, kinds, 2, MPI_INT, MPI_MAX, d->comm) != MPI_SUCCESS) {
      st = msp__dist_mpi_fail("msp_dist_create", "MPI_Allreduce");
      goto exit;
    }
    if (kinds[0] != -kinds[1]) {
      st = msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp_dist_create_backend: the ranks name different backends (rank %d: %s)",
                      d->rank, msp_backend_name(backend));
      goto exit;
    }
  }
  st = MSP_ALLOC_ZERO(d->counts, d->size, "distributed context");
  if (st == MSP_SUCCESS) st = MSP_ALLOC_ZERO(d->displs, d->size, "distributed context");
  if (st == MSP_SUCCESS) st = MSP_ALLOC_ZERO(d->chunks, d->size, "distributed context");
  MSP_TRY(msp__dist_agree(d, st));
  MSP_TRY(local_rank(d));
  d->device = -1;
  if (backend == MSP_BACKEND_CUDA) {
    // one GPU per rank: the node-local rank modulo the GPUs this rank sees, unless named
    int count = 0;
    if (device < MSP_DIST_DEVICE_LOCAL)
      st = msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp_dist_create_backend: device %d (a GPU ordinal, or "
                      "MSP_DIST_DEVICE_LOCAL for the node-local rank's)",
                      device);
    else if (device == MSP_DIST_DEVICE_LOCAL && (st = msp_device_count(&count)) == MSP_SUCCESS)
      d->device = count > 0 ? d->local_rank % count : 0;
    else
      d->device = device;
  }
  // (a CUDA rank's contexts: its GPU; ranks sharing a GPU share it alike)
  const int dev = d->device < 0 ? 0 : d->device;
  if (st == MSP_SUCCESS) st = msp_context_create(backend, dev, &d->inner);
  if (st == MSP_SUCCESS) st = msp_context_create(backend, dev, &d->ctx);
  if (st == MSP_SUCCESS && backend != MSP_BACKEND_CPU)
    st = msp_context_create(MSP_BACKEND_CPU, 0, &d->host);
  MSP_TRY(msp__dist_agree(d, st));
  if (!d->host) d->host = d->inner;
  d->base = d->ctx->backend;
  // The rank's table with the product of distributed matrices and the reductions rerouted: the
  // solvers call these slots and never know (STYLE.md 6: one dispatch table).
  d->table = *d->base;
  d->table.name = backend == MSP_BACKEND_CPU ? "cpu+mpi" : "cuda+mpi";
  for (int f = 0; f < MSP_FORMAT_COUNT; f++)
    d->table.spmv[f] = msp__dist_spmv;
  d->table.matrix_free = dist_matrix_free;
  // a distributed matrix's device data is not a CUDA record: BDMP is built on the host
  d->table.bdmp_convert = NULL;
  MSP_TRY(msp__dist_set_exact(d, backend == MSP_BACKEND_CPU));
  // PageRank (pagerank.c): the pull form's graph, step and host sums over the ranks (CUDA ranks:
  // the pull a distributed product, the update the backend's)
  d->table.pr_upload = msp__dist_pr_upload;
  d->table.pr_transpose = msp__dist_pr_transpose;
  d->table.pr_free = msp__dist_pr_free;
  d->table.pr_step = msp__dist_pr_step;
  d->table.host_fold = msp__dist_host_fold;
  d->ctx->backend = &d->table;
  d->transport = MSP_DIST_TRANSPORT_MPI;
  if (backend == MSP_BACKEND_CUDA) MSP_TRY(device_transport(d));
  d->magic = MSP__MAGIC_DIST;
  *out = d;
  d = NULL;
exit:
  if (d) {
    if (d->dops) d->dops->fini(d);
    msp_context_destroy(&d->ctx);
    if (d->host != d->inner) msp_context_destroy(&d->host);
    msp_context_destroy(&d->inner);
    if (d->comm != MPI_COMM_NULL) MPI_Comm_free(&d->comm);
    msp__free(d->counts);
    msp__free(d->displs);
    msp__free(d->chunks);
    msp__free(d);
  }
  return st;
}

int msp__dist_ok(const msp_dist d) {
  return d && d->magic == MSP__MAGIC_DIST;
}

msp_status msp_dist_destroy(msp_dist *pd) {
  msp_status st = MSP_SUCCESS;
  if (!pd || !*pd) return MSP_SUCCESS;
  msp_dist d = *pd;
  MSP_CHECK_ARG(msp__dist_ok(d), "msp_dist_destroy: not a distributed context");
  if (d->ctx->live > 0)
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp_dist_destroy: %lld matrices or vectors of its context are not "
                      "destroyed yet",
                      (long long)d->ctx->live);
  if (d->dops) d->dops->fini(d); // the communicator and stream, before the contexts
  d->ctx->backend = d->base;     // the context's own table, for its destroy
  st = msp_context_destroy(&d->ctx);
  if (st != MSP_SUCCESS) {
    d->ctx->backend = &d->table;
    return st;
  }
  if (d->host != d->inner) MSP_TRY(msp_context_destroy(&d->host));
  d->host = NULL;
  MSP_TRY(msp_context_destroy(&d->inner));
  MPI_Comm_free(&d->comm);
  msp__dist_reduce_free(d);
  msp__free(d->off);
  msp__free(d->perm);
  msp__free(d->counts);
  msp__free(d->displs);
  msp__free(d->chunks);
  d->magic = MSP__MAGIC_FREED;
  msp__free(d);
  *pd = NULL;
exit:
  return st;
}

msp_status msp_dist_traffic(const msp_dist d, int64_t *products, double *bytes_sent) {
  MSP_CHECK_ARG(msp__dist_ok(d) && products && bytes_sent,
                "msp_dist_traffic: d is not a distributed context, or NULL results");
  *products = d->products;
  *bytes_sent = d->bytes_sent;
  return MSP_SUCCESS;
}

msp_status msp_dist_set_partition(msp_dist d, msp_dist_partition kind) {
  msp_status st = MSP_SUCCESS;
  MSP_CHECK_ARG(msp__dist_ok(d), "msp_dist_set_partition: d is not a distributed context");
  int k[2] = {(int)kind, -(int)kind};
  if (MPI_Allreduce(MPI_IN_PLACE, k, 2, MPI_INT, MPI_MAX, d->comm) != MPI_SUCCESS)
    return msp__dist_mpi_fail("msp_dist_set_partition", "MPI_Allreduce");
  if (k[0] != -k[1])
    st = msp__error(MSP_ERR_INVALID_ARGUMENT,
                    "msp_dist_set_partition: the ranks name different partitions");
  else if (kind != MSP_DIST_PARTITION_BLOCKS && kind != MSP_DIST_PARTITION_METIS)
    st = msp__error(MSP_ERR_INVALID_ARGUMENT,
                    "msp_dist_set_partition: unknown partition %d (blocks or metis)", (int)kind);
  else if (d->off && kind != d->partition)
    st = msp__error(MSP_ERR_INVALID_ARGUMENT,
                    "msp_dist_set_partition: the context's row layout is fixed by its first "
                    "matrix already");
  else if (kind == MSP_DIST_PARTITION_METIS && !msp__dist_have_metis())
    st = msp__error(MSP_ERR_NOT_SUPPORTED,
                    "msp_dist_set_partition: mixsparse was built without METIS (Debian: "
                    "libmetis-dev); only the contiguous blocks");
  if (st == MSP_SUCCESS) d->partition = kind;
  return st;
}

msp_status msp_dist_permutation(const msp_dist d, int64_t *perm) {
  MSP_CHECK_ARG(msp__dist_ok(d) && perm,
                "msp_dist_permutation: d is not a distributed context, or perm is NULL");
  MSP_CHECK_ARG(d->off, "msp_dist_permutation: no row layout yet (scatter a matrix first)");
  for (int64_t i = 0; i < d->grows; i++)
    perm[i] = d->perm ? d->perm[i] : i;
  return MSP_SUCCESS;
}

msp_context msp_dist_context(const msp_dist d) {
  return msp__dist_ok(d) ? d->ctx : NULL;
}
int msp_dist_rank(const msp_dist d) {
  return msp__dist_ok(d) ? d->rank : -1;
}
int msp_dist_size(const msp_dist d) {
  return msp__dist_ok(d) ? d->size : 0;
}

// ---- the matrix
// -----------------------------------------------------------------------------------
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

static void dist_matrix_free(msp_matrix A) {
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
  // the sizes (the same on every rank: the spec is), then the layout
  MSP_TRY(
      msp__dist_agree(d, msp__matrix_generate_rows(spec, 0, 0, &grows, &gcols, NULL, NULL, NULL)));
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
  lst = msp__matrix_generate_rows(spec, m->row0, m->row0 + m->rows, &grows, &gcols, &rp, &ci, &val);
  MSP_TRY(msp__dist_agree(d, lst));
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

// dist.c: distributed contexts over MPI: the ranks' agreement, the devices and transports, the
// operations table (the distributed matrices are in dist_matrix.c, the product in product.c,
// the vectors' scatter and gather in vector.c).

#include "dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

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

// ---- a device that fails where the others may wait for it -------------------------------------
// NCCL's operations have no failure status across ranks: a rank that skips one leaves its peers'
// kernels waiting for ever. So a rank that cannot take its part tells every other rank over MPI
// (a one-int message on a tag of its own, sent once), and every wait for device work behind
// NCCL's calls watches for such a notice; a rank that receives one gives NCCL up (the device
// transport aborts its communicator) and returns the failure, as the failed rank does.
#define TAG_FAILED 301

// The notices' send buffers: a request is not waited for, so its buffer must outlive the context.
static const int failed_codes[MSP_STATUS_COUNT] = {
#define MSP_FAILED_CODE_(name, code, text) code,
    MSP_STATUS_MAP(MSP_FAILED_CODE_)
#undef MSP_FAILED_CODE_
};

void msp__dist_notify(msp_dist d, msp_status st) {
  if (d->failed != MSP_SUCCESS) return;
  d->failed = st > MSP_SUCCESS && st < MSP_STATUS_COUNT ? st : MSP_ERR_DEVICE;
  d->failed_rank = d->rank;
  snprintf(d->failed_msg, sizeof d->failed_msg, "%s", msp_last_error());
  for (int r = 0; r < d->size; r++) {
    if (r == d->rank) continue;
    MPI_Request req;
    // (a small message: sent eagerly; the request is not waited for)
    if (MPI_Isend(&failed_codes[d->failed], 1, MPI_INT, r, TAG_FAILED, d->comm, &req) ==
        MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

msp_status msp__dist_failed_error(const msp_dist d) {
  if (d->failed_rank == d->rank) return msp__error(d->failed, "%s", d->failed_msg);
  return msp__error(d->failed, "rank %d: %s (its device failed there; NCCL given up)",
                    d->failed_rank, msp_status_string(d->failed));
}

// A notice from another rank, received: 1 (d->failed set), else 0.
static int noticed(msp_dist d) {
  int flag = 0, code = 0;
  MPI_Status s;
  if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_FAILED, d->comm, &flag, &s) != MPI_SUCCESS || !flag) return 0;
  if (MPI_Recv(&code, 1, MPI_INT, s.MPI_SOURCE, TAG_FAILED, d->comm, MPI_STATUS_IGNORE) !=
      MPI_SUCCESS)
    return 0;
  if (d->failed == MSP_SUCCESS) {
    d->failed = code != 0 ? (msp_status)code : MSP_ERR_DEVICE;
    d->failed_rank = s.MPI_SOURCE;
  }
  return 1;
}

msp_status msp__dist_wait(msp_dist d, int (*poll)(void *arg, msp_status *st), void *arg) {
  if (d->failed != MSP_SUCCESS) return msp__dist_failed_error(d);
  for (unsigned k = 0;; k++) {
    msp_status st = MSP_SUCCESS;
    const int r = poll(arg, &st);
    if (r > 0) return MSP_SUCCESS;
    if (r < 0) return st != MSP_SUCCESS ? st : msp__error(MSP_ERR_DEVICE, "a device wait failed");
    // (the notice is looked for once the wait is no longer short: a probe costs about a
    // microsecond, a poll of the device less)
    if (k >= 256 && k % 64 == 0 && noticed(d)) return msp__dist_failed_error(d);
  }
}

// Notices nobody waited for, received before the communicator is freed.
static void drain_notices(msp_dist d) {
  while (noticed(d)) {
  }
}

// The backend table's agreement for the solvers' steps without a collective operation.
static msp_status agree_step(msp_context ctx, msp_status st) {
  return msp__dist_agree(msp__dist_of(ctx), st);
}

// ---- context ------------------------------------------------------------------------------------

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
  // NCCL: rank 0's unique id to every rank (NOT_BUILT on rank 0 means no NCCL for anyone); one
  // rank too, so that a job's transport and reductions are the same whatever its rank count
  int use_nccl = !msp__dist_gpus_shared(uuids, d->size);
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
  if (use_nccl) MSP_TRY(msp__dist_agree(d, d->dops->warm(d)));
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
                      d->dops->nccl_unique_id == NULL
                          ? "built without NCCL"
                          : "two ranks share a GPU, or NCCL gave no unique id");
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
  d->table.matrix_free = msp__dist_matrix_free;
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
  d->table.agree = agree_step;
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
  drain_notices(d);
  d->ctx->backend = d->base; // the context's own table, for its destroy
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

msp_status msp_dist_reductions(const msp_dist d, int64_t *count, double *seconds) {
  MSP_CHECK_ARG(msp__dist_ok(d) && count && seconds,
                "msp_dist_reductions: d is not a distributed context, or NULL results");
  *count = d->reductions;
  *seconds = d->reduce_s;
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

// dist.h: the distributed layer's objects (src/dist): the context on a communicator, the
// distributed matrix with its communication descriptor, and the deterministic reductions.
#ifndef MSP_DIST_H
#define MSP_DIST_H

#include "internal.h"
#include "mixsparse_mpi.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MSP__MAGIC_DIST 0x6d737064u     // "mspd"
#define MSP__MAGIC_DIST_MAT 0x6d73704du // "mspM"

#if MSP_DIST_CHUNK != MSP__RED_CHUNK
#error "a rank's rows must be whole chunks of the CPU reductions"
#endif

// The device transport of CUDA ranks (device.cu, registered when the build has CUDA): the halo
// gathered on the GPU into a send buffer made with the matrix, moved by NCCL on a communication
// stream or through pinned host buffers holding only the halo entries, the interior product
// overlapping it on the compute stream (see product.c). NULL slots: not built.
typedef struct msp__dist_mat_s msp__dist_mat;
typedef struct {
  // The context's device state (d->dev): the communication stream on d's device; NCCL's
  // communicator when `nccl_id` (NCCL's unique id, made by rank 0 with `nccl_unique_id` and
  // broadcast over MPI) is not NULL. Collective only through NCCL.
  msp_status (*init)(msp_dist d, const void *nccl_id);
  void (*fini)(msp_dist d); // NULL d->dev accepted
  // NCCL's unique id (MSP__DIST_NCCL_ID bytes); MSP_ERR_NOT_BUILT without NCCL.
  msp_status (*nccl_unique_id)(void *id);
  // The 16 bytes that name the physical GPU `device` (its UUID): ranks that share a GPU cannot
  // use NCCL between them.
  msp_status (*device_uuid)(int device, unsigned char uuid[16]);
  // The matrix's device buffers (m->dev): send list and buffer, boundary rows, pinned host halo,
  // events. Not collective.
  msp_status (*mat_init)(msp_dist d, msp__dist_mat *m);
  void (*mat_free)(msp__dist_mat *m); // NULL m->dev accepted
  // The product of the split layout on the device (product.c documents the steps).
  msp_status (*spmv)(msp_context ctx, msp__dist_mat *m, double alpha, msp_vector x, double beta,
                     msp_vector y);
  // Wait for the products in flight and add their device times to m's figures.
  msp_status (*flush)(msp__dist_mat *m);
  // A fixed-point Krylov column with the scale of the whole distributed vector: *m = this rank's
  // largest |w_i| (f64 w on the device, V's workspace used; waits for it); column j of V = w
  // stored with `scale`, w overwritten with the values as stored (the backend's basis_store with
  // a given scale).
  msp_status (*absmax)(msp_context ctx, const msp__basis *V, msp_vector w, double *m);
  msp_status (*basis_store_scaled)(msp_context ctx, msp__basis *V, int j, msp_vector w,
                                   double scale);
  // PageRank's q = p ./ outdeg (the backend's update in its values form writes p only): the n
  // out-degrees uploaded once (*dev, freed by pr_degrees_free); qn_i = pn_i / outdeg_i (0 when
  // dangling), pn read with all its segments (the value the update stored).
  msp_status (*pr_degrees)(msp_context ctx, int64_t n, const int32_t *outdeg, void **dev);
  msp_status (*pr_q)(msp_context ctx, const void *dev, msp_vector pn, msp_vector qn);
  void (*pr_degrees_free)(void *dev);
  // The reductions of the NCCL transport: every rank's m values (dv on the device, else v on
  // the host; neither after a failure: zeros) and its status lst gathered into device memory by
  // one ncclAllGather, combined there in rank order (mode: MSP__DIST_SUM, _NRM2 or _MAX, below),
  // the m results copied to out and each rank's status to codes (d->size); *seconds the device
  // time from the values to the results on the host (the step that made them not counted). The
  // one wait of the step is for that copy. Collective through NCCL.
  msp_status (*reduce)(msp_dist d, const double *v, const double *dv, int m, msp_status lst,
                       int mode, double *out, int *codes, double *seconds);
  // The steps before a reduction with their values left on the device (*dv, valid until the
  // next operation of V or of the context; NULL: no values, zeros): the backend's DCGS2
  // projection (NULL slot where the backend has no such entry), and this rank's largest |w_i|
  // (f64 w).
  msp_status (*dcgs2_sums)(msp_context ctx, const msp__basis *V, int j, msp_vector w,
                           const double **dv);
  msp_status (*absmax_dev)(msp_context ctx, const msp__basis *V, msp_vector w, const double **dv);
  // NCCL connects its peers at their first operation; these make that happen while the context
  // (its collectives) and a matrix (its halo's peers) are made, not inside the first timed
  // product or solve. Collective through NCCL: called once every rank has its buffers.
  msp_status (*warm)(msp_dist d);
  msp_status (*mat_warm)(msp__dist_mat *m);
  // This rank's part of a reduction left on the device (*dv, valid until the context's next
  // operation; NULL: zeros), enqueued with no wait, for the NCCL reductions: the backend's dot
  // product and 1-norm (one value), its 2-norm (two values: the norm, and 1 where its first pass
  // cannot give it, as msp__cuda_nrm2 then makes a second; every rank then takes the host path),
  // and PageRank's update with its three sums (pr_step's, the graph lg's). NULL slots: the
  // backend has no such entry.
  msp_status (*dot_dev)(msp_context ctx, msp_vector x, msp_vector y, const double **dv);
  msp_status (*nrm1_dev)(msp_context ctx, msp_vector x, const double **dv);
  msp_status (*nrm2_dev)(msp_context ctx, msp_vector x, const double **dv);
  msp_status (*pr_step_dev)(msp_context ctx, const msp__prgraph *lg, const msp__pr_step *a,
                            const double **dv);
} msp__dist_devops;
// How a reduction combines the ranks' values, in rank order (the same on the host and device):
// SUM v_0 + v_1 + ...; NRM2 (one value, each rank's 2-norm) m sqrt(sum (v_q / m)^2) with m the
// largest |v_q|; MAX the largest |v_q| (NaN kept).
enum { MSP__DIST_SUM = 0, MSP__DIST_NRM2 = 1, MSP__DIST_MAX = 2 };
#define MSP__DIST_NCCL_ID 128
const msp__dist_devops *msp__dist_devops_cuda(void); // NULL without CUDA

// 1 when two of the size ranks' GPUs (16-byte UUIDs, rank r's at uuids + 16 r) are the same.
int msp__dist_gpus_shared(const unsigned char *uuids, int size);

// A node of a summation tree of chunk partials (tree.c).
typedef struct {
  int64_t pos, s; // the tree node of s chunks (a power of two) from global chunk pos
} msp__dist_block;

struct msp_dist_s {
  uint32_t magic;
  MPI_Comm comm; // duplicated from the caller's
  int rank, size;
  msp_context ctx;          // the distributed context: backend = &table (msp__dist_of)
  msp_context inner;        // a plain context of the rank's backend for the distributed parts
  msp_context host;         // a CPU context (inner itself on CPU ranks): the handles' host CSR
  const msp__backend *base; // the rank's backend (CPU or CUDA), whose operations table reroutes
  msp__backend table;
  // 1: the reductions are the CPU backend's trees over the ranks (one process's bits; CPU ranks);
  // 0: each rank's backend reduces its part, the ranks' values are added in rank order (CUDA
  // ranks: within rounding of one process, the same bits for the same number of ranks)
  int exact;
  // The row layout, fixed by the first distributed matrix: rank r owns [off[r], off[r + 1]).
  int64_t grows;
  int64_t *off; // size + 1 (NULL before the first matrix)
  // The partition kind (msp_dist_set_partition) and, for METIS, the renumbering of the layout:
  // row i of the distributed matrices is row perm[i] of the root's (grows; NULL for blocks).
  msp_dist_partition partition;
  int32_t *perm;
  double partition_s; // the root's seconds in the partitioner (0 elsewhere)
  // Reduction workspace, grown when a reduction needs more (then kept).
  int *counts, *displs; // size each
  int64_t *chunks;      // size: every rank's chunk count
  double *part, *all, *col, *vals;
  size_t part_cap, all_cap, col_cap, vals_cap;
  // The gather of the ranks' values (reduce.c gather_ranks) and the projections it sums: sizes
  // that are the same on every rank, grown only with every rank's agreement.
  double *gsend, *grecv, *gproj;
  size_t gsend_cap, grecv_cap, gproj_cap;
  msp__dist_block *blk; // every rank's tree nodes
  size_t blk_cap;
  int64_t products;  // products of distributed matrices made with this context (all of them)
  double bytes_sent; // and the bytes of x this rank sent for them
  // 1: the matrices take the split layout (PETSc's diagonal and off-diagonal blocks): the rank's
  // own columns of every row in one part read x itself, the halo columns of the boundary rows in
  // another read the received halo. Ranks that reduce on their own backend (exact 0) use it.
  int split;
  int device;                   // the GPU of a CUDA rank (-1 on CPU ranks)
  int local_rank, local_size;   // this rank among the ranks of its node (MPI_COMM_TYPE_SHARED)
  msp_dist_transport transport; // what moves the halo of the products (never AUTO)
  int nccl_ok;                  // 1 when NCCL's communicator exists (every rank alike)
  const msp__dist_devops *dops; // CUDA ranks: the device transport; NULL otherwise
  void *dev;                    // its state (device.cu)
  // Split contexts: a failure of this rank's own part of a step (a device error in a product or
  // a vector operation) is kept here and returned by every rank at the next reduction or
  // agreement, so that no rank is left waiting in a collective call the failing one skipped.
  msp_status pending;
  char pending_msg[512];
  // The reductions over the ranks so far and the seconds spent in them, from the step's values
  // to the combined result on this rank (the exchange and the wait for the other ranks; over
  // NCCL the device's time, so the step's own kernels, not waited for before, are not counted).
  int64_t reductions;
  double reduce_s;
  // A rank whose device failed where the others may wait for it in NCCL (msp__dist_notify): its
  // status and rank once this rank knows (MSP_SUCCESS before); NCCL is then given up on every rank.
  msp_status failed;
  int failed_rank;
  char failed_msg[256];
};

// A rank's share of a distributed matrix (the handle's A->dev).
struct msp__dist_mat_s {
  uint32_t magic;
  msp_matrix handle; // the handle whose dev this is (set once the handle is made)
  msp_dist d;
  int64_t grows, gnnz, row0, rows, nnz;
  int64_t nb, na;        // halo entries below row0 and above row0 + rows in the extended x
  msp_matrix Ai, Ab;     // interior and boundary rows (NULL when none), columns in the extended x
  int64_t *irow, *brow;  // this rank's row of each row of Ai / Ab
  msp_vector xext;       // f64: [halo below, own entries, halo above] (inner)
  msp_vector yi, yb, yt; // f64 row sums of Ai, Ab (inner); all rows in order (the context's)
  int nrecv, nsend;
  int *rrank, *srank;
  int64_t *roff, *rcnt; // receive rcnt[k] values from rrank[k] into xext at roff[k]
  int64_t *soff;        // send sidx[soff[k] .. soff[k + 1]) to srank[k]
  int32_t *halo;        // the global columns of the halo (nb + na, increasing)
  int32_t *sidx;        // this rank's rows of the entries sent
  double *sbuf;
  MPI_Request *req; // nrecv + nsend
  int neighbours;
  int64_t products;
  double bytes_sent, spmv_s, wait_s;
  // The split layout (d->split): Ad (rows x rows, own columns in local numbering, every row),
  // Ao (the boundary rows brow x the halo, columns numbered in the halo's increasing global
  // order, which is the receive order: each neighbour's entries contiguous at hoff[k]).
  int split;
  int64_t interior, boundary; // rows without / with halo columns
  msp_matrix Ad, Ao;
  int64_t *hoff;                      // nrecv: where rrank[k]'s entries land in the halo
  msp_vector xh[MSP_PRECISION_COUNT]; // the received halo, one per IEEE precision of x (f64 for
                                      // the others: decoded when gathered)
  msp_vector yo;                      // f64 sums of Ao's rows
  void *dev;                          // the device transport's buffers (CUDA ranks)
};

// The halo's precision for an x of precision p: p itself when its values travel as they are
// stored (IEEE: f64, f32, f16, bf16), else f64 (fixed point and CPMS are decoded on the way).
static inline msp_precision msp__dist_halo_prec(msp_precision p) {
  return p == MSP_PRECISION_F32 || p == MSP_PRECISION_F16 || p == MSP_PRECISION_BF16
             ? p
             : MSP_PRECISION_F64;
}

// The tail of distributing a matrix of rows rp/ci/val (global columns): its descriptor
// (msp__dist_build), the handle *A owning *m (then *m is NULL), every rank's status agreed (a
// rank whose handle failed makes every rank's fail). Collective.
msp_status msp__dist_finish(msp_dist d, const int64_t *rp, const int32_t *ci, const double *val,
                            const msp_convert_options *opts, msp__dist_mat **m, msp_matrix *A);
// The row layout of `size` ranks balancing the nonzeros: boundaries at chunk multiples, each rank
// at least one chunk; prefix[c * stride] is the count of nonzeros before chunk c (c < chunks),
// nnz the total.
void msp__dist_cut_nnz(int64_t rows, const int64_t *prefix, int64_t stride, int64_t nnz, int size,
                       int64_t *off);
// qsort's order of int32_t values.
int msp__dist_cmp_i32(const void *a, const void *b);
// Tests: build every halo by sorting its entries instead of with the bitmap (the same arrays).
void msp__dist_halo_force_sort(int on);
// Build m's halo, descriptor, parts and work vectors from its rows (m->row0, m->rows set; rp
// rebased to 0, global columns) converted with opts. Collective (errors agreed).
msp_status msp__dist_build(msp_dist d, const int64_t *rp, const int32_t *ci, const double *val,
                           const msp_convert_options *opts, msp__dist_mat *m);
void msp__dist_mat_free(msp__dist_mat *m); // NULL accepted
// The table's matrix_free for a handle of a distributed context (dist_matrix.c).
void msp__dist_matrix_free(msp_matrix A);
// y = alpha M x + beta y for this rank's rows of m (x, y this rank's parts, current on the
// backend's side; on a device backend x and the parts' results are staged through the host).
msp_status msp__dist_mat_spmv(msp_context ctx, msp__dist_mat *m, double alpha, msp_vector x,
                              double beta, msp_vector y);

// Rows [r0, r1) of a generated matrix (src/core/generate.c; row-wise generators only): the
// whole matrix's sizes, and with r0 < r1 its rows' CSR (rp from 0, global columns; msp__free).
msp_status msp__matrix_generate_rows(const char *spec, int64_t r0, int64_t r1, int64_t *rows,
                                     int64_t *cols, int64_t **rp, int32_t **ci, double **val);

// R-MAT graphs in parts (src/core/generate.c): the sizes (keys NULL), or edges [e0, e1) of the
// one edge list packed as row * 2^scale + col; the values of sorted deduplicated rows from r0.
msp_status msp__matrix_generate_edges(const char *spec, int64_t e0, int64_t e1, int64_t *rows,
                                      int64_t *edges, int *scale, uint64_t *keys);
msp_status msp__matrix_generate_edge_values(const char *spec, int64_t r0, int64_t n,
                                            const int64_t *rp, const int32_t *ci, double *val);

// The distributed matrix behind a handle of a distributed context (NULL for any other matrix).
msp__dist_mat *msp__dist_mat_of(const msp_matrix A);

// The distributed context whose table ctx uses (ctx made by msp_dist_create*): the context's
// impl stays its backend's (CUDA: stream and handles).
static inline msp_dist msp__dist_of(msp_context ctx) {
  return (msp_dist)(void *)((char *)(void *)(uintptr_t)ctx->backend -
                            offsetof(struct msp_dist_s, table));
}
// Set the table's reductions: exact (the CPU trees, CPU ranks only) or the backend's own, summed
// in rank order (what CUDA ranks use; tests call it with 0 on CPU ranks to run that path).
// MSP_ERR_NOT_SUPPORTED for exact on another backend than the CPU. Not collective.
msp_status msp__dist_set_exact(msp_dist d, int exact);
// The rank owning global row (or column) j: the last r with off[r] <= j (off: the size + 1 row
// boundaries of the ranks).
int msp__dist_owner(const int64_t *off, int size, int64_t j);

// The graph partitioner (partition.c): 1 when the build has METIS.
int msp__dist_have_metis(void);
// Root: G's rows into size parts by METIS; perm (G->rows) the rows by (part, row), off (size + 1)
// the ranks' boundaries at chunk multiples. MSP_ERR_NOT_SUPPORTED without METIS.
msp_status msp__dist_metis(const msp_matrix G, int size, int32_t *perm, int64_t *off);
// P G P^T in new CSR arrays (row i = G's row perm[i], columns renumbered and sorted).
msp_status msp__dist_permute(const msp_matrix G, const int32_t *perm, int64_t **prp, int32_t **pci,
                             double **pval);

// Agree on a status across the ranks: every rank returns the first failing rank's status and
// message (the message prefixed with that rank's number on the others). Collective.
msp_status msp__dist_agree(msp_dist d, msp_status st);

// ---- summation trees cut along the ranks (tree.c) ----------------------------------------------
// The chunk partials of [0, total) are summed as the CPU backend does: in consecutive trees of
// `group` chunks (blas1.c: MSP__RED_GROUP, the trees' sums then added in order from 0.0:
// `grouped`), or in one tree (basis.c, pagerank.c: group = total, its sum the result). The nodes
// that tile chunks [a, b) (the largest each time), written to out unless NULL; returns their count.
int64_t msp__dist_tree_blocks(int64_t a, int64_t b, int64_t total, int64_t group,
                              msp__dist_block *out);
// The value of each of the nblk nodes of chunks [a, b): out[j * m + k] from part[(c - a) * m + k]
// (m values per chunk); work holds b - a values.
void msp__dist_tree_local(const msp__dist_block *blk, int64_t nblk, int64_t a, int64_t total,
                          int64_t group, const double *part, int m, double *work, double *out);
// The sum of value k from the nodes of every rank (all nblk of them, in order, values
// vals[j * m + k]) into *result; 0 when the nodes do not tile [0, total) (a bug).
int msp__dist_tree_sum(const msp__dist_block *blk, int64_t nblk, int64_t total, int64_t group,
                       int grouped, const double *vals, int m, int k, double *result);

// The table's rerouted operations (reduce.c): reductions through the deterministic gather.
msp_status msp__dist_dot(msp_context, msp_vector, msp_vector, double *);
msp_status msp__dist_nrm1(msp_context, msp_vector, double *);
msp_status msp__dist_nrm2(msp_context, msp_vector, double *);
msp_status msp__dist_basis_project(msp_context, const msp__basis *, int, int, msp_vector, double *,
                                   double *);
msp_status msp__dist_basis_subtract(msp_context, const msp__basis *, int, int, const double *,
                                    msp_vector, double *, double *);
msp_status msp__dist_basis_store(msp_context, msp__basis *, int, msp_vector);
msp_status msp__dist_basis_dcgs2_project(msp_context, const msp__basis *, int, msp_vector,
                                         double *);
void msp__dist_reduce_free(msp_dist d);
// The same slots for ranks that reduce on their own backend (exact 0): the backend's result per
// rank, the ranks' values gathered and added in rank order.
msp_status msp__dist_sum_dot(msp_context, msp_vector, msp_vector, double *);
msp_status msp__dist_sum_nrm1(msp_context, msp_vector, double *);
msp_status msp__dist_sum_nrm2(msp_context, msp_vector, double *);
msp_status msp__dist_sum_basis_project(msp_context, const msp__basis *, int, int, msp_vector,
                                       double *, double *);
msp_status msp__dist_sum_basis_subtract(msp_context, const msp__basis *, int, int, const double *,
                                        msp_vector, double *, double *);
msp_status msp__dist_sum_basis_store(msp_context, msp__basis *, int, msp_vector);
msp_status msp__dist_sum_basis_dcgs2_project(msp_context, const msp__basis *, int, msp_vector,
                                             double *);
// v[k] = the sum over the ranks, in rank order, of their v[k] (k < m): the same bits on every
// rank. lst: this rank's status of the step that made v (or a kept failure): any rank's failure
// is returned by every rank (the first failing rank's status). Collective.
msp_status msp__dist_sum_ranks(msp_dist d, double *v, int m, msp_status lst);
// The same over NCCL with this rank's m values on the device (dv: valid until the next operation
// of the context; NULL: zeros), the sums into out. Collective through NCCL.
msp_status msp__dist_sum_ranks_dev(msp_dist d, const double *dv, double *out, int m,
                                   msp_status lst);
// Keep a failure of this rank's own part of a step for the next collective call (split contexts:
// returns MSP_SUCCESS then); st itself otherwise. Not collective.
msp_status msp__dist_defer(msp_dist d, msp_status st);
// The partials buffer for nchunks chunks of m values ([chunk][value], d->part), and their sums
// over every rank's chunks in the CPU backend's trees (see msp__dist_tree_sum; group 0: one
// tree): (*out)[0..m), valid until the next reduction. Collective.
msp_status msp__dist_partials(msp_dist d, int64_t nchunks, int m, double **out);
msp_status msp__dist_tree_reduce(msp_dist d, int64_t nchunks, int m, int64_t group, int grouped,
                                 double **out);
// The nchunks to pass msp__dist_tree_reduce when this rank's part failed with lst (its partials
// not made): the rank still joins the reduction, which then returns the failure on every rank.
static inline int64_t msp__dist_tree_failed(msp_status lst) {
  return -(int64_t)lst;
}
// 1 when d's reductions go through NCCL on the device: CUDA ranks whose transport is NCCL (the
// host transport and CPU ranks reduce over MPI on the host).
static inline int msp__dist_nccl_reduces(const msp_dist d) {
  return d->dops && d->transport == MSP_DIST_TRANSPORT_NCCL && d->nccl_ok;
}
// "fn: call failed" (MSP_ERR_INTERNAL) for a failed MPI call.
msp_status msp__dist_mpi_fail(const char *fn, const char *call);
// ---- a device that fails where the others may wait for it (dist.c) ----------------------------
// This rank cannot complete its part of NCCL's operations (its device failed with st): every
// other rank is sent a notice (once), and d->failed is set. Not collective.
void msp__dist_notify(msp_dist d, msp_status st);
// Wait until poll(arg, &st) answers 1 (done) or -1 (failed: st), watching meanwhile for
// another rank's notice: MSP_SUCCESS, the poll's failure (this rank's own: the caller notifies
// the others), or MSP_ERR_DEVICE-like the notice's status naming the failed rank (d->failed set
// from then on). A wait for device work behind NCCL's calls, so that a rank whose peer failed
// gives up instead of waiting forever. Not collective.
msp_status msp__dist_wait(msp_dist d, int (*poll)(void *arg, msp_status *st), void *arg);
// d->failed's error ("rank r: its device failed (...)" on the other ranks).
msp_status msp__dist_failed_error(const msp_dist d);

// 1 when d is a live distributed context.
int msp__dist_ok(const msp_dist d);
// The spmv slot of a distributed context (product.c): a distributed matrix's product, or the
// base backend's for a rank's local matrix.
msp_status msp__dist_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                          double beta, msp_vector y);
// PageRank's slots (pagerank.c).
msp_status msp__dist_host_fold(msp_context ctx, double *state, int n, int phase);
msp_status msp__dist_pr_upload(msp_context ctx, msp__prgraph *g);
msp_status msp__dist_pr_transpose(msp_context ctx, const msp_matrix G, const int32_t *inv,
                                  msp__prgraph *g);
void msp__dist_pr_free(msp_context ctx, msp__prgraph *g);
msp_status msp__dist_pr_step(msp_context ctx, const msp__prgraph *g, const msp__pr_step *a,
                             double sums[3]);

#ifdef __cplusplus
}
#endif
#endif

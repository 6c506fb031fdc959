// mixsparse_mpi.h: the distributed layer (libmixsparse_mpi): matrices whose rows are spread over
// the ranks of an MPI communicator, and the same products and solvers as on one process.
//
// A distributed context (msp_dist) is a CPU context whose operations are the CPU backend's, with
// these rerouted: the product of a distributed matrix (halo exchange overlapped with the interior
// rows); the reductions (dot products, norms, GMRES's projections), where each rank sends the
// nodes of the CPU backend's summation tree of MSP_DIST_CHUNK-row chunks that its chunks hold and
// every rank adds them up in the order one process does; and PageRank's graph, step and host sums
// (the pull form in the natural node order). (CUDA ranks, msp_dist_create_backend, reroute the
// product and reduce on the GPU instead: within rounding of one process, not its bits.)
// Rows are cut at multiples of MSP_DIST_CHUNK, so a rank owns whole chunks, and the results (SpMV
// values, norms, GMRES's iterations and residual history, PageRank's iterations, changes and ranks)
// have the same bits for any number of ranks as on one process, for IEEE and CPMS value precisions
// (fixed-point matrix values take a scale per block of stored values, which a rank's share of the
// matrix cuts differently: close, not bit-identical). msp_gmres and msp_pagerank are called as on
// one process, with the distributed context, a distributed matrix and this rank's vector parts (see
// msp_dist_gmres for GMRES's conditions; msp_pagerank refuses the values form, weighted graphs
// and the degree order with MSP_ERR_NOT_SUPPORTED on every rank).
//
// Every function here is collective over the context's communicator unless it says otherwise:
// every rank calls it, in the same order. Errors found on one rank (bad input on the root) are
// sent to every rank, which all return the same status; the message on the other ranks names the
// rank that found it.
#ifndef MIXSPARSE_MPI_H
#define MIXSPARSE_MPI_H

#include "mixsparse.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

// Rows per reduction chunk: every rank's first row is a multiple of it.
#define MSP_DIST_CHUNK 4096

typedef struct msp_dist_s *msp_dist;

// Make a distributed context on comm (duplicated; MPI must be initialised). Its msp_context
// (msp_dist_context) makes vectors (each rank's part of a distributed vector) and is passed to
// msp_spmv, msp_dot, msp_nrm2, msp_gmres, ... like any other context. MSP_ERR_INVALID_ARGUMENT
// (NULL out, MPI not initialised), MSP_ERR_OUT_OF_MEMORY. Its ranks are CPU ranks:
// msp_dist_create_backend(comm, MSP_BACKEND_CPU, 0, out).
msp_status msp_dist_create(MPI_Comm comm, msp_dist *out);
// The same with every rank on `backend` (every rank names the same): MSP_BACKEND_CPU, or
// MSP_BACKEND_CUDA on GPU `device` of the rank's node, or, with MSP_DIST_DEVICE_LOCAL, on GPU
// (node-local rank modulo the GPUs the rank sees): one GPU per rank, the node-local rank from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). Ranks may share a GPU (two ranks on one GPU both
// pass device 0); NCCL is then not used (see msp_dist_transport).
// On CUDA ranks the vectors and the parts of the distributed matrices live on the GPU and a
// product never leaves it (beyond the halo entries): a kernel gathers the entries of x that the
// neighbours read into a device buffer made with the matrix, NCCL moves them (or pinned host
// buffers holding only those entries, over MPI), in x's storage precision for IEEE precisions
// (f64, f32, f16, bf16; fixed point and CPMS travel decoded as f64), while the rows' own columns
// are summed on the compute stream; the halo columns of the boundary rows are added after an
// event, without a host synchronisation. The reductions are the GPU's own, each rank's value
// gathered and the values added in rank order: every rank has the same bits, the same for the
// same number of ranks, and results within rounding of one GPU process (not its bits; the CPU
// ranks keep the one-process bits). msp_pagerank runs on CUDA ranks too (the pull a
// distributed product, the update the GPU's, its sums added in rank order: within rounding of one
// GPU); a fixed-point GMRES basis is refused there (MSP_ERR_NOT_SUPPORTED on every rank).
// MSP_ERR_INVALID_ARGUMENT (another backend, a device below MSP_DIST_DEVICE_LOCAL),
// MSP_ERR_NOT_BUILT (no CUDA in this build), MSP_ERR_NO_DEVICE, MSP_ERR_DEVICE (on every rank, the
// failing rank named).
#define MSP_DIST_DEVICE_LOCAL (-1)
msp_status msp_dist_create_backend(MPI_Comm comm, msp_backend backend, int device, msp_dist *out);
// Destroy (NULL accepted; *d set to NULL). The matrices and vectors made with its context must be
// destroyed first (MSP_ERR_INVALID_ARGUMENT otherwise, as msp_context_destroy).
msp_status msp_dist_destroy(msp_dist *d);
// The context of d (NULL for NULL). Not collective.
msp_context msp_dist_context(const msp_dist d);
// The products of distributed matrices run with d's context so far (those inside msp_pagerank
// and msp_gmres included) and the bytes of x this rank sent for them. Not collective.
// MSP_ERR_INVALID_ARGUMENT (d not a distributed context, NULL results).
msp_status msp_dist_traffic(const msp_dist d, int64_t *products, double *bytes_sent);
// The reductions over the ranks run with d's context so far (dot products, norms, GMRES's
// projections, PageRank's sums) and the seconds this rank spent in them, from its own part's
// values to the combined result (the exchange, and the wait for the slowest rank). CUDA ranks
// over NCCL reduce on the device (ncclAllGather of the ranks' values, added in rank order there;
// the seconds are device time from the values to the results on the host); over the host
// transport and on CPU ranks they go over MPI (host time). Not collective.
msp_status msp_dist_reductions(const msp_dist d, int64_t *count, double *seconds);
// What moves the halo of a context's products between CUDA ranks.
typedef enum {
  MSP_DIST_TRANSPORT_AUTO = 0, // NCCL when the build has it and the ranks' GPUs are distinct,
                               // else host
  MSP_DIST_TRANSPORT_NCCL = 1, // NCCL on a communication stream (communicator bootstrapped over
                               // MPI: the unique id from rank 0)
  MSP_DIST_TRANSPORT_HOST = 2, // pinned host buffers holding only the halo entries, over MPI
  MSP_DIST_TRANSPORT_MPI = 3   // CPU ranks: the halo over MPI from the host vectors
} msp_dist_transport;
// Choose the transport of d's products (CUDA ranks; every rank names the same). AUTO picks as
// described; MSP_ERR_NOT_SUPPORTED for NCCL where it is not built or the ranks share a GPU, and
// for NCCL or HOST on CPU ranks. Collective.
msp_status msp_dist_set_transport(msp_dist d, msp_dist_transport t);
// The transport in use (never AUTO) and its name ("nccl", "host", "mpi"); the GPU of this rank
// (-1 on CPU ranks) and its node-local rank. Not collective.
msp_dist_transport msp_dist_get_transport(const msp_dist d);
const char *msp_dist_transport_name(msp_dist_transport t);
int msp_dist_device(const msp_dist d);
int msp_dist_local_rank(const msp_dist d);

// This rank and the number of ranks (-1 / 0 for NULL). Not collective.
int msp_dist_rank(const msp_dist d);
int msp_dist_size(const msp_dist d);

// How the first distributed matrix of a context lays the rows out (msp_dist_set_partition).
typedef enum {
  // contiguous blocks of the rows in their order, balanced by nonzeros (the default)
  MSP_DIST_PARTITION_BLOCKS = 0,
  // METIS (when the build found it): the root splits the symmetrised pattern (no self loops)
  // into one part per rank with METIS_PartGraphKway (vertex weights: the rows' entries; fixed
  // seed, so the same parts on every run), renumbers the rows by (part, original row) and cuts the
  // renumbered rows into blocks at the multiples of MSP_DIST_CHUNK nearest the parts' boundaries.
  // Every distributed matrix of the context is then P G P^T and each rank holds a contiguous
  // block of the renumbered rows: fewer halo entries and neighbours on irregular graphs.
  // msp_dist_vector_scatter / _gather apply the renumbering, so the root's arrays keep G's
  // numbering. The bits are those of one process on P G P^T (msp_dist_permutation gives P), not
  // on G: within rounding of one process on G.
  MSP_DIST_PARTITION_METIS = 1
} msp_dist_partition;
// Set the partition of d's row layout; before the first distributed matrix
// (MSP_ERR_INVALID_ARGUMENT after it, or another kind); every rank names the same.
// MSP_ERR_NOT_SUPPORTED for METIS in a build without it ("built without METIS"). Collective.
msp_status msp_dist_set_partition(msp_dist d, msp_dist_partition kind);
// The renumbering of d's layout: perm[i] (i < the layout's rows) the root's row that is row i of
// the distributed matrices (the identity for blocks). MSP_ERR_INVALID_ARGUMENT (no layout yet,
// NULL perm). Not collective.
msp_status msp_dist_permutation(const msp_dist d, int64_t *perm);

// Spread the rows of G, which the root rank holds (the other ranks pass NULL; G may belong to
// any context), over the ranks: contiguous blocks balanced by nonzeros (under a METIS layout,
// msp_dist_set_partition: blocks of the rows of P G P^T cut at METIS's parts), each boundary a
// multiple of MSP_DIST_CHUNK rows, every rank at least one chunk. The first distributed matrix of a
// context fixes its row layout; a later one must have as many rows and gets the same blocks. Each
// rank converts its rows with opts (NULL: defaults; the format and precision of both its parts:
// interior rows, whose columns it owns, and boundary rows, which read entries of x owned by other
// ranks) and builds its communication descriptor (per neighbour rank: the entries of x it sends
// and how many it receives). *A (out) is this rank's handle: rows = cols = this rank's rows;
// msp_spmv(msp_dist_context(d), alpha, *A, x, beta, y) with x and y this rank's parts computes
// this rank's rows of the global product. Destroy with msp_matrix_destroy.
// MSP_ERR_INVALID_ARGUMENT (G NULL on the root, root out of range), MSP_ERR_INVALID_MATRIX (G not
// square, no rows, more ranks than chunks of MSP_DIST_CHUNK rows), MSP_ERR_DIMENSION_MISMATCH
// (rows differ from the context's layout), MSP_ERR_OUT_OF_MEMORY, the conversion's statuses.
msp_status msp_dist_matrix_scatter(msp_dist d, int root, const msp_matrix G,
                                   const msp_convert_options *opts, msp_matrix *A);

// The matrix msp_matrix_generate would make from `spec` (without "gen:"; every rank names the
// same), each rank generating only its own rows (no scatter, no rank holding the whole matrix):
// the same rows, values and handle as msp_dist_matrix_scatter of the generated matrix, under the
// first matrix's layout or, for the first, blocks with the same number of MSP_DIST_CHUNK-row
// chunks per rank (give or take one). An R-MAT graph's edge list is drawn by every rank, an equal
// share each, and each edge sent to its row's owner (one all-to-all of the edges; the rows then
// sorted and deduplicated as one process does); as the first matrix, its blocks balance the
// edges drawn (counted per chunk of rows over every rank) instead of the rows.
// MSP_ERR_NOT_SUPPORTED under a METIS layout (scatter the matrix then).
// MSP_ERR_INVALID_ARGUMENT (a bad spec, the ranks' specs differ), MSP_ERR_INVALID_MATRIX (not
// square, fewer chunks than ranks), MSP_ERR_DIMENSION_MISMATCH (rows differ from the layout's),
// MSP_ERR_OUT_OF_MEMORY, the conversion's statuses. Collective.
msp_status msp_dist_matrix_generate(msp_dist d, const char *spec, const msp_convert_options *opts,
                                    msp_matrix *A);

// What a rank holds of a distributed matrix and what its products have cost so far. Not
// collective.
typedef struct {
  int rank, size;
  int64_t global_rows, global_nnz;
  int64_t row0, rows, nnz;              // this rank's rows [row0, row0 + rows) and their entries
  int64_t interior_rows, boundary_rows; // rows reading only own entries of x / reading the halo
  int64_t halo;                         // entries of x received per product
  int64_t send_entries;                 // entries of x sent per product
  int neighbours;                       // ranks exchanged with (sent to or received from)
  msp_format format;                    // the parts' format and precision (interior, or boundary
  msp_precision precision;              // when there are no interior rows)
  int64_t products;                     // products so far
  double bytes_sent;                    // bytes of x sent by this rank over all products
  double spmv_s;                        // seconds in the products (wall, this rank)
  double wait_s;                        // of which waiting for the halo after the interior rows
                                        // (CUDA ranks: device time the compute stream waited)
  double halo_bytes;                    // bytes this rank sends per product (the halo's precision)
  msp_dist_transport transport;         // what moved them
  msp_dist_partition partition;         // the layout's partition
  double partition_s;                   // the root's seconds in the partitioner (0 elsewhere)
} msp_dist_matrix_info;
msp_status msp_dist_matrix_info_get(const msp_matrix A, msp_dist_matrix_info *info);

// Copy the root's global array (rows of A values; NULL on the other ranks) into each rank's part
// x (A's rows on this rank, rounded by x's precision) / gather every rank's part into the root's
// global array (NULL on the other ranks). MSP_ERR_INVALID_ARGUMENT (A not distributed, NULL
// array on the root), MSP_ERR_DIMENSION_MISMATCH (x not of A's rows on this rank).
msp_status msp_dist_vector_scatter(const msp_matrix A, int root, const double *global,
                                   msp_vector x);
msp_status msp_dist_vector_gather(const msp_matrix A, int root, msp_vector x, double *global);

// msp_gmres on a distributed matrix, after the checks that keep it the one-process iteration:
// the restart at most every rank's rows (GMRES caps it at the rows it sees), and no ILU(0)
// (the factorisation of a rank's diagonal block is another preconditioner). Then the iteration
// counts, residual history and solution bits are those of one process. Collective.
msp_status msp_dist_gmres(msp_dist d, const msp_matrix A, msp_vector b, msp_vector x,
                          const msp_solver_options *opts, msp_solver_report *rep);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif

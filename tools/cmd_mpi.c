// cmd_mpi.c: `mixsparse spmv|solve` started by mpirun with more than one rank: rank 0 reads the
// matrix and scatters its rows (libmixsparse_mpi), every rank runs its share, and rank 0 reports
// per-rank and total times, bytes sent, the parallel efficiency against the same work on one
// process (measured on rank 0 first) and whether the result has the one-process bits.
#include "cmd.h"
#include "common.h"
#include "internal.h" // msp__same_file
#include "mixsparse_mpi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *mpi_help =
    "usage: mpirun -np N mixsparse spmv FILE [--backend cpu|cuda] [--format F] [--precision P]\n"
    "         [--vector-precision P] [--x ones|random:SEED|X.mtx] [--repeat R] [--json]\n"
    "       mpirun -np N mixsparse solve FILE [--backend cpu|cuda] [--rhs ones|random:SEED|B.mtx]\n"
    "         [--restart M]\n"
    "         [--rtol R] [--atol A] [--max-iters N] [--basis P] [--precond none|jacobi]\n"
    "         [--ortho cgs|mgs] [--format F] [--precision P] [--json]\n"
    "       mpirun -np N mixsparse pagerank FILE [--backend cpu|cuda] [--alpha A] [--tol T]\n"
    "         [--max-iters N]\n"
    "         [--precision f64|cpms2|cpms4|auto] [--layout L] [--bank BYTES] [--json]\n"
    "       (each also [--partition blocks|metis] [--transport auto|nccl|host]\n"
    "        [--no-reference] [--output OUT.mtx])\n"
    "  Rank 0 reads FILE and scatters the rows in blocks balanced by nonzeros, each a multiple\n"
    "  of 4096 rows (a gen:SPEC is made by each rank for its own rows, an R-MAT graph's blocks\n"
    "  balanced by its edges); the products exchange the halo while the interior rows\n"
    "  are summed. Rank 0 first runs the same work alone (the one-process reference of the\n"
    "  efficiency and of the bits); the report gives each rank's rows, halo, bytes sent and\n"
    "  time, the total time, speedup and parallel efficiency. PageRank runs the pull form in\n"
    "  the natural node order (the values form and the degree order are not distributed).\n"
    "  --partition metis: rank 0 splits the graph with METIS (when built with it) and renumbers\n"
    "  the rows by part, each rank a block of the renumbered rows: fewer halo entries on\n"
    "  irregular graphs; the results, gathered in the file's numbering, are one process's on the\n"
    "  renumbered matrix (within rounding of one process on the file's, not its bits).\n"
    "  --backend cuda: one GPU per rank (the node-local rank modulo the GPUs it sees; ranks\n"
    "  may share one); the halo gathered on the GPU and moved by NCCL (--transport nccl, the\n"
    "  default when built with it and the GPUs are distinct) or through pinned host buffers\n"
    "  holding only the halo entries (--transport host), in x's storage precision; the\n"
    "  reductions the GPU's (within rounding of one GPU process, whose bits they need not\n"
    "  have); default and auto: CPU ranks. The report names each\n"
    "  rank's GPU and the transport.\n"
    "  --no-reference: skip rank 0's one-process run (a matrix larger than one process can\n"
    "  hold); no efficiency or bit comparison is reported then, and with a gen: matrix no rank\n"
    "  makes the whole matrix.\n"
    "  --output OUT.mtx: rank 0 writes the gathered result (y, x or p) as one process does.\n";

#define MPI_SPMV_OPTIONS                                                                           \
  (OPT_JSON | OPT_ALLOW_NONFINITE | OPT_BACKEND | OPT_FORMAT | OPT_KERNEL | OPT_PRECISION |        \
   OPT_VPRECISION | OPT_RANGE | OPT_X | OPT_REPEAT | OPT_MAX_FILL | OPT_OUTPUT)
#define MPI_SOLVE_OPTIONS                                                                          \
  (OPT_JSON | OPT_ALLOW_NONFINITE | OPT_BACKEND | OPT_FORMAT | OPT_PRECISION | OPT_RANGE |         \
   OPT_RHS | OPT_RESTART | OPT_RTOL | OPT_ATOL | OPT_MAX_ITERS | OPT_BASIS | OPT_PRECOND |         \
   OPT_ORTHO | OPT_OUTPUT)

#define MPI_PR_OPTIONS                                                                             \
  (OPT_JSON | OPT_ALLOW_NONFINITE | OPT_BACKEND | OPT_PRECISION | OPT_ALPHA | OPT_TOL |            \
   OPT_MAX_ITERS | OPT_LAYOUT | OPT_BANK | OPT_OUTPUT)

// The partition of the runs (--partition) and rank 0's seconds in it.
static msp_dist_partition g_partition = MSP_DIST_PARTITION_BLOCKS;
static double g_partition_s = 0.0;
// --transport (CUDA ranks) and --no-reference
static msp_dist_transport g_transport = MSP_DIST_TRANSPORT_AUTO;
static msp_dist g_dist; // the run's distributed context (for the per-rank figures)
static int g_noref = 0;
// --no-reference on a gen: matrix over blocks: no rank makes the whole matrix (every rank
// generates its rows; rank 0 learns the size from them and makes x or b afterwards)
static int g_lazy = 0;

// Rank 0 writes the gathered result to --output (as one process writes it).
static msp_status write_output(const options *o, const double *v, int64_t n) {
  msp_context c = NULL;
  msp_vector w = NULL;
  msp_status st = msp_context_create(MSP_BACKEND_CPU, 0, &c);
  if (st == MSP_SUCCESS) st = msp_vector_create(c, n, &w);
  if (st == MSP_SUCCESS) st = msp_vector_set(w, v);
  if (st == MSP_SUCCESS) st = msp_vector_write_mtx(w, o->output);
  if (st != MSP_SUCCESS) fail(st, o->output);
  msp_vector_destroy(&w);
  msp_context_destroy(&c);
  return st;
}

enum { NSTAT = 13 }; // per-rank figures gathered on rank 0

// Rank 0's status to every rank; on the others a failure is rank 0's (already reported there).
static msp_status share_status(msp_status st) {
  int s = (int)st;
  MPI_Bcast(&s, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return (msp_status)s;
}

static int same_bits(const double *a, const double *b, int64_t n) {
  return n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

// The per-rank table and the totals (rank 0 prints; st[r * NSTAT + k] as filled in fill_stats).
static void fill_stats(const msp_matrix A, double seconds, double *s) {
  msp_dist_matrix_info in;
  memset(&in, 0, sizeof in);
  msp_dist_matrix_info_get(A, &in);
  s[0] = (double)in.row0;
  s[1] = (double)in.rows;
  s[2] = (double)in.nnz;
  s[3] = (double)in.interior_rows;
  s[4] = (double)in.halo;
  s[5] = (double)in.neighbours;
  s[6] = in.products ? in.bytes_sent / (double)in.products : 0.0;
  s[7] = seconds;
  s[8] = in.products ? in.wait_s / (double)in.products : 0.0;
  s[9] = (double)msp_dist_device(g_dist);
  s[10] = (double)msp_dist_local_rank(g_dist);
  int64_t reductions = 0;
  double reduce_s = 0.0;
  msp_dist_reductions(g_dist, &reductions, &reduce_s);
  s[11] = (double)reductions;
  s[12] = reduce_s;
}

// Rank 0, after the one-process run (status st): the buffers of the comparison (want and got: n
// values, stats: every rank's figures) and the run's result v in want; a failure reported.
static msp_status reference_result(msp_status st, msp_vector v, int64_t n, int size, double **want,
                                   double **got, double **stats) {
  *want = malloc((size_t)(n > 0 ? n : 1) * sizeof **want);
  *got = malloc((size_t)(n > 0 ? n : 1) * sizeof **got);
  *stats = malloc((size_t)size * NSTAT * sizeof **stats);
  if (st == MSP_SUCCESS && (!*want || !*got || !*stats)) st = MSP_ERR_OUT_OF_MEMORY;
  if (st == MSP_SUCCESS && v) st = msp_vector_get(v, *want);
  if (st == MSP_SUCCESS && !v) memset(*want, 0, (size_t)(n > 0 ? n : 1) * sizeof **want);
  if (st != MSP_SUCCESS) fail(st, "one-process reference");
  return st;
}

// Every rank's rows of rank 0's G (*A, described in *in) and one or two vectors of that many
// rows in precision prec (v2 may be NULL). 1 when every rank has them; otherwise 0, rank 0 has
// said why (`what`: the vectors).
static int scatter_rows(msp_dist d, msp_matrix G, const msp_convert_options *co, const options *o,
                        msp_precision prec, msp_matrix *A, msp_dist_matrix_info *in, msp_vector *v1,
                        msp_vector *v2, const char *what, int rank) {
  // a generated matrix: each rank generates its own rows (no scatter; R-MAT's edges drawn by
  // every rank and sent to their rows' owners); METIS layouts take the scatter from rank 0
  msp_status st = MSP_ERR_NOT_SUPPORTED;
  if (!strncmp(o->file, "gen:", 4) && g_partition == MSP_DIST_PARTITION_BLOCKS)
    st = msp_dist_matrix_generate(d, o->file + 4, co, A);
  if (st == MSP_ERR_NOT_SUPPORTED) st = msp_dist_matrix_scatter(d, 0, G, co, A);
  if (st != MSP_SUCCESS) {
    if (rank == 0) fail(st, o->file);
    return 0;
  }
  memset(in, 0, sizeof *in);
  msp_dist_matrix_info_get(*A, in);
  g_partition_s = in->partition_s;
  st = msp_vector_create_precision(msp_dist_context(d), in->rows, prec, v1);
  if (st == MSP_SUCCESS && v2)
    st = msp_vector_create_precision(msp_dist_context(d), in->rows, prec, v2);
  int bad = st != MSP_SUCCESS, anybad = 0;
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (anybad && rank == 0) fail(st ? st : MSP_ERR_OUT_OF_MEMORY, what);
  return !anybad;
}

// After the distributed run (status st, mytime seconds on this rank): the slowest rank's time
// (*total), the result v gathered into got on rank 0 and every rank's figures into stats on
// rank 0 (pull: bytes sent per product of G^T, msp_dist_traffic's, and no halo wait). A failure
// is reported by rank 0 as `what`'s.
static msp_status finish_run(msp_dist d, msp_matrix A, msp_vector v, msp_status st, double mytime,
                             int pull, double *got, double *total, double *stats, const char *what,
                             int rank) {
  double mine[NSTAT];
  *total = 0.0;
  MPI_Allreduce(&mytime, total, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (st == MSP_SUCCESS) st = msp_dist_vector_gather(A, 0, v, got);
  if (st != MSP_SUCCESS) {
    if (rank == 0) fail(st, what);
    return st;
  }
  fill_stats(A, mytime, mine);
  if (pull) {
    int64_t products = 0;
    double bytes = 0.0;
    msp_dist_traffic(d, &products, &bytes);
    mine[6] = products ? bytes / (double)products : 0.0; // G^T's products: one per iteration
    mine[8] = 0.0;
  }
  MPI_Gather(mine, NSTAT, MPI_DOUBLE, stats, NSTAT, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return MSP_SUCCESS;
}

// The largest |got - want| over the largest |want| (rank 0's comparison under METIS).
static double rel_diff(const double *want, const double *got, int64_t n) {
  double dmax = 0.0, wmax = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const double dd = fabs(got[i] - want[i]), w = fabs(want[i]);
    if (dd > dmax || dd != dd) dmax = dd;
    if (w > wmax) wmax = w;
  }
  return wmax > 0 ? dmax / wmax : dmax;
}

static void report(const char *what, int size, const double *st, double total, double one, int same,
                   double diff, const options *o, json *j) {
  double bytes = 0.0, halo = 0.0, nbrs = 0.0;
  const char *pname = g_partition == MSP_DIST_PARTITION_METIS ? "metis" : "blocks";
  for (int r = 0; r < size; r++) {
    bytes += st[r * NSTAT + 6];
    halo += st[r * NSTAT + 4];
    nbrs += st[r * NSTAT + 5];
  }
  const double speedup = total > 0 ? one / total : 0.0, eff = speedup / size;
  const char *tname = msp_dist_transport_name(msp_dist_get_transport(g_dist));
  if (j) {
    json_int(j, "ranks", size);
    json_string(j, "ranks_backend", o->backend == MSP_BACKEND_CUDA ? "cuda" : "cpu");
    json_string(j, "transport", tname);
    json_bool(j, "reference", !g_noref);
    json_array(j, "per_rank");
    for (int r = 0; r < size; r++) {
      const double *s = st + r * NSTAT;
      json_object(j, NULL);
      json_int(j, "rank", r);
      json_int(j, "row0", (long long)s[0]);
      json_int(j, "rows", (long long)s[1]);
      json_int(j, "nnz", (long long)s[2]);
      json_int(j, "interior_rows", (long long)s[3]);
      json_int(j, "halo", (long long)s[4]);
      json_int(j, "neighbours", (long long)s[5]);
      json_number(j, "bytes_sent_per_product", s[6]);
      json_number(j, "seconds", s[7]);
      json_number(j, "halo_wait_seconds_per_product", s[8]);
      json_int(j, "gpu", (long long)s[9]);
      json_int(j, "local_rank", (long long)s[10]);
      json_int(j, "reductions", (long long)s[11]);
      json_number(j, "reduce_seconds", s[12]);
      json_end(j);
    }
    json_end(j);
    json_number(j, "seconds", total);
    json_number(j, "one_process_seconds", one);
    json_number(j, "speedup", speedup);
    json_number(j, "parallel_efficiency", eff);
    json_number(j, "bytes_sent_per_product", bytes);
    json_string(j, "partition", pname);
    json_number(j, "partition_seconds", g_partition_s);
    json_int(j, "halo_total", (long long)halo);
    json_int(j, "neighbours_total", (long long)nbrs);
    json_number(j, "max_rel_diff_from_one_process", diff);
    json_bool(j, "same_bits_as_one_process", same);
    return;
  }
  printf("%s on %d %s ranks (%s), halo transport %s\n", what, size,
         o->backend == MSP_BACKEND_CUDA ? "CUDA" : "CPU", o->file, tname);
  printf("%5s %4s %10s %10s %12s %10s %8s %5s %14s %12s %12s %10s %12s\n", "rank", "gpu", "row0",
         "rows", "nnz", "interior", "halo", "nbrs", "sent B/prod", "time s", "wait ms/prod",
         "reductions", "reduce s");
  for (int r = 0; r < size; r++) {
    const double *s = st + r * NSTAT;
    printf("%5d %4.0f %10.0f %10.0f %12.0f %10.0f %8.0f %5.0f %14.0f %12.6f %12.4f %10.0f %12.6f\n",
           r, s[9], s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8] * 1e3, s[11], s[12]);
  }
  if (g_noref)
    printf("total %.6f s (slowest rank); no one-process reference (--no-reference); %.0f bytes "
           "sent per product over all ranks\n",
           total, bytes);
  else
    printf("total %.6f s (slowest rank), one process %.6f s: speedup %.2f, parallel efficiency "
           "%.0f%%; %.0f bytes sent per product over all ranks\n",
           total, one, speedup, 100.0 * eff, bytes);
  if (!strcmp(what, "pagerank"))
    printf("(interior, halo, neighbours: of G's rows; bytes sent and wait: the pull's products "
           "with G^T)\n");
  printf("partition %s", pname);
  if (g_partition == MSP_DIST_PARTITION_METIS) printf(" (METIS %.3f s on rank 0)", g_partition_s);
  printf(": %.0f halo entries and %.0f neighbour links over all ranks\n", halo, nbrs);
  if (g_noref) return;
  if (g_partition == MSP_DIST_PARTITION_METIS)
    printf("result bits %s one process's on the file's numbering (max relative difference "
           "%.3e; the bits are one process's on the renumbered matrix)\n",
           same ? "identical to" : "differ from", diff);
  else
    printf("result bits %s one process's\n", same ? "identical to" : "DIFFERENT from");
}

// spmv: `repeat` products after one warm-up, on one process (rank 0) and distributed.
static int run_spmv(const options *o, msp_dist d, msp_context ref, msp_matrix G, int rank, int size,
                    json *j) {
  msp_status st = MSP_SUCCESS;
  int rc = EXIT_FAILED;
  const msp_convert_options co = convert_options_of(o);
  msp_matrix B = NULL, A = NULL;
  msp_vector xv = NULL, yv = NULL, xl = NULL, yl = NULL;
  double *x = NULL, *want = NULL, *got = NULL, *stats = NULL;
  double one = 0.0;
  int64_t n = 0;
  if (rank == 0 && !g_lazy) {
    n = msp_matrix_rows(G);
    st = make_x(ref, o, n, &x);
    if (!g_noref) {
      if (st == MSP_SUCCESS) st = msp_matrix_convert(ref, G, &co, &B);
      if (st == MSP_SUCCESS) st = msp_vector_create_precision(ref, n, o->vprecision, &xv);
      if (st == MSP_SUCCESS) st = msp_vector_create_precision(ref, n, o->vprecision, &yv);
      if (st == MSP_SUCCESS) st = msp_vector_set(xv, x);
      if (st == MSP_SUCCESS) st = msp_spmv(ref, 1.0, B, xv, 0.0, yv);
      const double t0 = now_s();
      for (int k = 0; k < o->repeat && st == MSP_SUCCESS; k++)
        st = msp_spmv(ref, 1.0, B, xv, 0.0, yv);
      if (st == MSP_SUCCESS) st = msp_context_synchronize(ref); // (a GPU's products end here)
      one = (now_s() - t0) / o->repeat;
    }
    st = reference_result(st, yv, n, size, &want, &got, &stats);
    msp_matrix_destroy(&B);
  }
  if (share_status(st) != MSP_SUCCESS) goto exit;
  msp_dist_matrix_info in;
  if (!scatter_rows(d, G, &co, o, o->vprecision, &A, &in, &xl, &yl, "vectors", rank)) goto exit;
  if (g_lazy) {
    if (rank == 0) {
      n = in.global_rows;
      st = reference_result(make_x(ref, o, n, &x), NULL, n, size, &want, &got, &stats);
    }
    if (share_status(st) != MSP_SUCCESS) goto exit;
  }
  st = msp_dist_vector_scatter(A, 0, x, xl);
  if (st == MSP_SUCCESS) st = msp_spmv(msp_dist_context(d), 1.0, A, xl, 0.0, yl); // warm-up
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int k = 0; k < o->repeat && st == MSP_SUCCESS; k++)
    st = msp_spmv(msp_dist_context(d), 1.0, A, xl, 0.0, yl);
  if (st == MSP_SUCCESS) st = msp_context_synchronize(msp_dist_context(d));
  const double mytime = (MPI_Wtime() - t0) / o->repeat;
  double total = 0.0;
  if (finish_run(d, A, yl, st, mytime, 0, got, &total, stats, "distributed product", rank) !=
      MSP_SUCCESS)
    goto exit;
  if (rank == 0) {
    if (j) {
      json_string(j, "command", "spmv");
      json_string(j, "format", msp_format_name(in.format));
      json_string(j, "precision", msp_precision_name(in.precision));
      json_int(j, "rows", in.global_rows);
      json_int(j, "nnz", in.global_nnz);
    }
    report("spmv", size, stats, total, one, same_bits(want, got, n), rel_diff(want, got, n), o, j);
    if (o->output && write_output(o, got, n) != MSP_SUCCESS) goto exit;
  }
  rc = EXIT_OK;
exit:
  msp_matrix_destroy(&A);
  msp_vector_destroy(&xl);
  msp_vector_destroy(&yl);
  msp_vector_destroy(&xv);
  msp_vector_destroy(&yv);
  free(x);
  free(want);
  free(got);
  free(stats);
  return rc;
}

// solve: GMRES on one process (rank 0) and distributed; the same iterations are expected.
static int run_solve(const options *o, msp_dist d, msp_context ref, msp_matrix G, int rank,
                     int size, json *j) {
  msp_status st = MSP_SUCCESS;
  int rc = EXIT_FAILED;
  const msp_convert_options co = convert_options_of(o);
  msp_matrix B = NULL, A = NULL;
  msp_vector bv = NULL, xv = NULL, bl = NULL, xl = NULL;
  double *b = NULL, *want = NULL, *got = NULL, *stats = NULL;
  msp_solver_report r1, r2;
  memset(&r1, 0, sizeof r1);
  memset(&r2, 0, sizeof r2);
  msp_solver_options so = msp_solver_options_default(); // as `mixsparse solve` fills it
  if (o->given & OPT_RESTART) so.restart = o->restart;
  if (o->given & OPT_RTOL) so.rtol = o->rtol;
  if (o->given & OPT_ATOL) so.atol = o->atol;
  if (o->given & OPT_MAX_ITERS) so.max_iters = o->max_iters;
  if (o->given & OPT_BASIS) {
    so.basis_auto = o->basis_auto;
    if (!o->basis_auto) so.basis_precision = o->basis;
  }
  if (o->given & OPT_PRECOND) so.precond = o->precond;
  if (o->given & OPT_ORTHO) so.ortho = o->ortho;
  int64_t n = 0;
  options ox = *o;
  ox.x_spec = o->rhs;
  if (rank == 0 && !g_lazy) {
    n = msp_matrix_rows(G);
    st = make_x(ref, &ox, n, &b);
    if (st == MSP_SUCCESS) st = msp_matrix_convert(ref, G, &co, &B);
    if (st == MSP_SUCCESS) st = msp_vector_create(ref, n, &bv);
    if (st == MSP_SUCCESS) st = msp_vector_create(ref, n, &xv);
    if (st == MSP_SUCCESS) st = msp_vector_set(bv, b);
    if (st == MSP_SUCCESS && !g_noref) st = msp_gmres(ref, B, bv, xv, &so, &r1);
    st = reference_result(st, g_noref ? NULL : xv, n, size, &want, &got, &stats);
    msp_matrix_destroy(&B);
  }
  if (share_status(st) != MSP_SUCCESS) goto exit;
  msp_dist_matrix_info in;
  if (!scatter_rows(d, G, &co, o, MSP_PRECISION_F64, &A, &in, &bl, &xl, "vectors", rank)) goto exit;
  if (g_lazy) {
    if (rank == 0) {
      n = in.global_rows;
      st = reference_result(make_x(ref, &ox, n, &b), NULL, n, size, &want, &got, &stats);
    }
    if (share_status(st) != MSP_SUCCESS) goto exit;
  }
  st = msp_dist_vector_scatter(A, 0, b, bl);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  if (st == MSP_SUCCESS) st = msp_dist_gmres(d, A, bl, xl, &so, &r2);
  const double mytime = MPI_Wtime() - t0;
  double total = 0.0;
  if (finish_run(d, A, xl, st, mytime, 0, got, &total, stats, "distributed GMRES", rank) !=
      MSP_SUCCESS)
    goto exit;
  if (rank == 0) {
    const int same = r1.iterations == r2.iterations && same_bits(want, got, n);
    if (j) {
      json_string(j, "command", "solve");
      json_int(j, "rows", in.global_rows);
      json_int(j, "nnz", in.global_nnz);
      json_bool(j, "converged", r2.converged);
      json_int(j, "iterations", r2.iterations);
      json_int(j, "one_process_iterations", r1.iterations);
      json_number(j, "rel_residual", r2.rel_residual);
      // (the solve's setup: the preconditioner and the basis's allocation; part of both times)
      json_number(j, "setup_seconds", r2.setup_s);
      json_number(j, "one_process_setup_seconds", r1.setup_s);
    } else {
      printf("GMRES: %s after %lld iterations (one process: %lld), relative residual %.3e\n",
             r2.converged ? "converged" : "not converged", (long long)r2.iterations,
             (long long)r1.iterations, r2.rel_residual);
    }
    report("solve", size, stats, total, r1.time_s, same, rel_diff(want, got, n), o, j);
    if (o->output && write_output(o, got, n) != MSP_SUCCESS) goto exit;
  }
  rc = r2.converged ? EXIT_OK : 3;
exit:
  msp_matrix_destroy(&A);
  msp_vector_destroy(&bl);
  msp_vector_destroy(&xl);
  msp_vector_destroy(&bv);
  msp_vector_destroy(&xv);
  free(b);
  free(want);
  free(got);
  free(stats);
  return rc;
}

// pagerank: the pull form in the natural order, on one process (rank 0) and distributed.
static int run_pagerank(const options *o, const msp_pagerank_options *po, msp_dist d,
                        msp_context ref, msp_matrix G, int rank, int size, json *j) {
  msp_status st = MSP_SUCCESS;
  int rc = EXIT_FAILED;
  msp_matrix A = NULL;
  msp_vector p1 = NULL, p2 = NULL;
  double *want = NULL, *got = NULL, *stats = NULL;
  msp_pagerank_report r1, r2;
  memset(&r1, 0, sizeof r1);
  memset(&r2, 0, sizeof r2);
  int64_t n = 0;
  if (rank == 0 && !g_lazy) {
    n = msp_matrix_rows(G);
    st = msp_vector_create(ref, n, &p1);
    if (st == MSP_SUCCESS && !g_noref) st = msp_pagerank(ref, G, po, p1, &r1);
    st = reference_result(st, g_noref ? NULL : p1, n, size, &want, &got, &stats);
  }
  if (share_status(st) != MSP_SUCCESS) goto exit;
  msp_convert_options co = msp_convert_options_default();
  co.format = MSP_FORMAT_CSR;
  msp_dist_matrix_info in;
  if (!scatter_rows(d, G, &co, o, MSP_PRECISION_F64, &A, &in, &p2, NULL, "rank vector", rank))
    goto exit;
  if (g_lazy) {
    if (rank == 0) {
      n = in.global_rows;
      st = reference_result(MSP_SUCCESS, NULL, n, size, &want, &got, &stats);
    }
    if (share_status(st) != MSP_SUCCESS) goto exit;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  st = msp_pagerank(msp_dist_context(d), A, po, p2, &r2);
  const double mytime = MPI_Wtime() - t0;
  double total = 0.0;
  if (finish_run(d, A, p2, st, mytime, 1, got, &total, stats, "distributed pagerank", rank) !=
      MSP_SUCCESS)
    goto exit;
  if (rank == 0) {
    const int same = r1.iterations == r2.iterations && same_bits(want, got, n);
    if (j) {
      json_string(j, "command", "pagerank");
      json_int(j, "nodes", in.global_rows);
      json_int(j, "edges", in.global_nnz);
      json_bool(j, "converged", r2.converged);
      json_int(j, "iterations", r2.iterations);
      json_int(j, "one_process_iterations", r1.iterations);
      json_number(j, "change", r2.change);
      json_int(j, "dangling", r2.dangling);
      // the power iterations alone (the setup builds G^T: an exchange of the edges here)
      json_number(j, "iteration_seconds", r2.time_s);
      json_number(j, "setup_seconds", r2.setup_s);
      json_number(j, "one_process_iteration_seconds", r1.time_s);
    } else {
      printf("PageRank: %s after %lld iterations (one process: %lld), change %.3e, %lld "
             "dangling nodes\n",
             r2.converged ? "converged" : "not converged", (long long)r2.iterations,
             (long long)r1.iterations, r2.change, (long long)r2.dangling);
    }
    report("pagerank", size, stats, total, r1.time_s + r1.setup_s, same, rel_diff(want, got, n), o,
           j);
    if (o->output && write_output(o, got, n) != MSP_SUCCESS) goto exit;
  }
  rc = EXIT_OK;
exit:
  msp_matrix_destroy(&A);
  msp_vector_destroy(&p1);
  msp_vector_destroy(&p2);
  free(want);
  free(got);
  free(stats);
  return rc;
}

int cmd_mpi_ranks(void) {
  // what the launchers tell each process: Open MPI, MPICH / Intel MPI (Hydra's PMI), PMIx
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
  for (size_t k = 0; k < sizeof vars / sizeof *vars; k++) {
    const char *v = getenv(vars[k]);
    if (v && atoi(v) > 0) return atoi(v);
  }
  return 1;
}

// Every rank's `bad` (0: fine) to all: the largest, so that the ranks take the same branch and
// meet the same collective calls next (a rank leaving alone would leave the others waiting).
static int agree_max(int bad) {
  int worst = bad;
  MPI_Allreduce(&bad, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

// The first rank (lowest number) where `bad` holds, `size` where none: the one rank 0 names.
static int first_rank(int bad, int rank, int size) {
  int mine = bad ? rank : size, first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return first;
}

// FNV-1a over the command line (each argument with its terminating NUL, so "a b" != "ab").
static uint64_t argv_hash(int argc, char **argv) {
  uint64_t h = UINT64_C(14695981039346656037);
  for (int i = 0; i < argc; i++)
    for (const char *c = argv[i];; c++) {
      h = (h ^ (unsigned char)*c) * UINT64_C(1099511628211);
      if (!*c) break;
    }
  return h;
}

int cmd_mpi(int argc, char **argv) {
  int rank = 0, size = 1, rc = EXIT_FAILED;
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // rank 0 speaks for all (the errors of the others reach it through the library)
  if (rank != 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) rc = EXIT_FAILED;
  }
  const int solve = !strcmp(argv[0], "solve"), pagerank = !strcmp(argv[0], "pagerank");
  options o;
  options_init(&o);
  o.rhs = "ones";
  o.x0 = "zero";
  msp_context ref = NULL;
  msp_dist d = NULL;
  msp_matrix G = NULL;
  json *j = NULL;
  msp_pagerank_options po = msp_pagerank_options_default();
  po.order = MSP_PAGERANK_ORDER_NATURAL; // the degree order is not distributed
  o.raw_precision = pagerank;            // pagerank's --precision: f64|cpms2|cpms4|auto
  {
    // One command line for the job: ranks given other commands, options or files would run
    // different collective calls (and hang) or be silently ignored. Compared before anything
    // else, so every rank refuses alike.
    uint64_t mine = argv_hash(argc, argv), root = mine;
    MPI_Bcast(&root, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    const int other = first_rank(mine != root, rank, size);
    if (other < size) {
      if (rank == 0)
        fprintf(stderr,
                "%s: rank %d was given another command line than rank 0 (every rank must run "
                "the same command with the same options and files): nothing was run\n",
                prog, other);
      rc = EXIT_USAGE;
      goto exit;
    }
  }
  // --partition blocks|metis (this command's own option: taken out before the common ones)
  {
    int k = 0;
    for (int i = 0; i < argc; i++) {
      const char *v = NULL;
      if (!strcmp(argv[i], "--no-reference")) {
        g_noref = 1;
        continue;
      }
      if (!strcmp(argv[i], "--transport") || !strncmp(argv[i], "--transport=", 12)) {
        const char *t = argv[i][11] == '=' ? argv[i] + 12 : i + 1 < argc ? argv[++i] : NULL;
        if (t && !strcmp(t, "auto"))
          g_transport = MSP_DIST_TRANSPORT_AUTO;
        else if (t && !strcmp(t, "nccl"))
          g_transport = MSP_DIST_TRANSPORT_NCCL;
        else if (t && !strcmp(t, "host"))
          g_transport = MSP_DIST_TRANSPORT_HOST;
        else {
          if (rank == 0)
            fprintf(stderr, "%s: --transport %s: expected auto, nccl or host\n", prog,
                    t ? t : "(missing)");
          rc = EXIT_USAGE;
          goto exit;
        }
        continue;
      }
      if (!strcmp(argv[i], "--partition")) {
        if (i + 1 >= argc) {
          if (rank == 0) fprintf(stderr, "%s: --partition needs blocks or metis\n", prog);
          rc = EXIT_USAGE;
          goto exit;
        }
        v = argv[++i];
      } else if (!strncmp(argv[i], "--partition=", 12)) {
        v = argv[i] + 12;
      } else {
        argv[k++] = argv[i];
        continue;
      }
      if (!strcmp(v, "blocks"))
        g_partition = MSP_DIST_PARTITION_BLOCKS;
      else if (!strcmp(v, "metis"))
        g_partition = MSP_DIST_PARTITION_METIS;
      else {
        if (rank == 0) fprintf(stderr, "%s: --partition %s: expected blocks or metis\n", prog, v);
        rc = EXIT_USAGE;
        goto exit;
      }
    }
    argc = k;
  }
  rc = parse_options(argc, argv,
                     pagerank ? MPI_PR_OPTIONS
                     : solve  ? MPI_SOLVE_OPTIONS
                              : MPI_SPMV_OPTIONS,
                     1, &o);
  if (rc) goto exit;
  if (pagerank) {
    if (o.precision_arg && (rc = parse_pagerank_mode(o.precision_arg, &po.precision)) != EXIT_OK)
      goto exit;
    if (o.given & OPT_ALPHA) po.alpha = o.alpha;
    if (o.given & OPT_TOL) po.tol = o.tol;
    if (o.given & OPT_MAX_ITERS) po.max_iters = o.max_iters;
    po.separate = o.separate;
    po.bank_bytes = o.bank;
  }
  if (o.help) {
    fputs(mpi_help, stdout);
    rc = EXIT_OK;
    goto exit;
  }
  rc = EXIT_FAILED;
  // --output must not replace an input (the matrix, x or b), as any rank sees the files
  {
    int refused = 0;
    const char *inputs[3] = {o.file && strncmp(o.file, "gen:", 4) ? o.file : NULL, o.x_spec, o.rhs};
    for (int k = 0; o.output && k < 3 && !refused; k++) {
      int same = 0;
      if (inputs[k] && strcmp(inputs[k], "ones") && strncmp(inputs[k], "random:", 7) &&
          msp__same_file(o.output, inputs[k], &same) == MSP_SUCCESS && same) {
        if (rank == 0)
          fprintf(stderr, "%s: --output %s is the input file %s: refusing to overwrite it\n", prog,
                  o.output, inputs[k]);
        refused = 1;
      }
    }
    const int who = first_rank(refused, rank, size);
    if (who < size) {
      if (rank == 0 && who != 0)
        fprintf(stderr,
                "%s: --output %s is an input file as rank %d sees it: refusing to overwrite it\n",
                prog, o.output, who);
      rc = EXIT_USAGE;
      goto exit;
    }
  }
  if (solve && o.precond == MSP_PRECOND_ILU0) {
    if (rank == 0) fprintf(stderr, "%s: --precond ilu0 is not distributed: none or jacobi\n", prog);
    rc = EXIT_USAGE;
    goto exit;
  }
  // CUDA ranks when asked for; otherwise (cpu, auto) CPU ranks, as every rank must agree
  if (o.backend != MSP_BACKEND_CUDA) o.backend = MSP_BACKEND_CPU;
  // one GPU per rank: the node-local rank's (the reference on rank 0's GPU)
  msp_status st = msp_dist_create_backend(
      MPI_COMM_WORLD, o.backend, o.backend == MSP_BACKEND_CUDA ? MSP_DIST_DEVICE_LOCAL : 0, &d);
  if (st == MSP_SUCCESS)
    st = msp_context_create(o.backend, msp_dist_device(d) < 0 ? 0 : msp_dist_device(d), &ref);
  {
    // A rank whose context failed must not leave the others in the collective calls that
    // follow: all fail, rank 0 naming the first failing rank and its status.
    const int who = first_rank(st != MSP_SUCCESS, rank, size);
    if (who < size) {
      if (rank == who && rank == 0)
        fail(st, o.backend == MSP_BACKEND_CUDA ? "--backend cuda" : "context");
      const int worst = agree_max((int)st);
      if (rank == 0 && who != 0)
        fprintf(stderr, "%s: rank %d: %s: %s (%s); no rank ran\n", prog, who,
                o.backend == MSP_BACKEND_CUDA ? "--backend cuda" : "context",
                msp_status_string((msp_status)worst), msp_status_name((msp_status)worst));
      goto exit;
    }
  }
  g_dist = d;
  if (g_transport != MSP_DIST_TRANSPORT_AUTO || o.backend == MSP_BACKEND_CUDA) {
    st = msp_dist_set_transport(d, g_transport);
    if (st != MSP_SUCCESS) {
      fail(st, "--transport");
      rc = EXIT_USAGE;
      goto exit;
    }
  }
  st = msp_dist_set_partition(d, g_partition);
  if (st != MSP_SUCCESS) {
    fail(st, "--partition");
    rc = EXIT_USAGE;
    goto exit;
  }
  g_lazy = g_noref && !strncmp(o.file, "gen:", 4) && g_partition == MSP_DIST_PARTITION_BLOCKS;
  if (rank == 0 && !g_lazy) {
    st = load_matrix(ref, &o, &G);
    if (st != MSP_SUCCESS) fail(st, o.file);
  }
  if (share_status(st) != MSP_SUCCESS) goto exit;
  if (o.json && rank == 0) {
    j = json_new();
    if (!j) {
      fail(MSP_ERR_OUT_OF_MEMORY, "JSON");
      goto exit;
    }
    json_string(j, "file", o.file);
  }
  rc = pagerank ? run_pagerank(&o, &po, d, ref, G, rank, size, j)
       : solve  ? run_solve(&o, d, ref, G, rank, size, j)
                : run_spmv(&o, d, ref, G, rank, size, j);
  if (j) {
    const int jr = json_finish(j, NULL);
    j = NULL;
    if (rc == EXIT_OK) rc = jr;
  }
exit:
  if (j) json_free(j);
  msp_matrix_destroy(&G);
  msp_dist_destroy(&d);
  msp_context_destroy(&ref);
  // one exit status for the job: the worst over the ranks
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

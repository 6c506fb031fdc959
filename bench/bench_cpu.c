// bench_cpu.c: mixsparse-bench-cpu, the CPU backend's SpMV (fp64, y = A x) in each of our formats
// and AUTO against Eigen, SuiteSparse:GraphBLAS and librsb, in one process on the same matrices.
//
// Every candidate of a matrix is timed in turn inside each repetition (interleaved, so a slow
// phase of the machine hits all of them alike; each repetition starts one candidate later); a
// sample is a batch of products sized to last about BATCH_S; the table gives the median sample. The
// ratio of a candidate is its median over the fastest peer's. The results of every candidate are
// checked against our CSR product (max |y - y_csr| / max |y_csr| <= CHECK_TOL). A peer that was not
// found at build time is reported as skipped. The machine's memory read bandwidth is measured first
// (a summing read of BW_BYTES with the same thread count), so that the times can be read as
// fractions of it.
//
//   mixsparse-bench-cpu [--threads T] [--reps R] [--no-tune] [--min] [SPEC ...]
// --min ranks by the fastest sample instead of the median (on a machine shared with other work,
// whose time slices land on some samples).
// SPEC: gen:<generator spec> or a name of the collection (MSP_MATRICES_DIR, default
// ../shared/matrices beside the repository: NAME.mtx.gz) or a path to a .mtx/.mtx.gz file.
#define _POSIX_C_SOURCE 199309L // clock_gettime under -std=c11

#include "mixsparse.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef MSP_HAVE_EIGEN
#include "bench_cpu_peers.h"
#endif
#ifdef MSP_HAVE_GRAPHBLAS
#include <GraphBLAS.h>
#endif
#ifdef MSP_HAVE_RSB
#include <rsb.h>
#endif

#define BATCH_S 0.02            // one timed sample lasts about this long
#define CHECK_TOL 1e-12         // relative difference allowed against our CSR product
#define BW_BYTES (512ull << 20) // bytes read by the bandwidth kernel
#define MAX_CAND 16

static const char *default_specs[] = {"gen:stencil27:64", "gen:random:2000000:16",
                                      "gen:rmat:20:16",   "soc-Epinions1",
                                      "web-NotreDame",    "wave",
                                      "copter2",          "bcsstk29"};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// The 1-minute load average (Linux /proc/loadavg; -1 elsewhere): other work on the machine
// shows in the times, so the report gives it.
static double load_average(void) {
  double l = -1.0;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1.0;
    fclose(f);
  }
  return l;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// ---- memory read bandwidth ---------------------------------------------------------------------
// GB/s of the best of 5 passes summing BW_BYTES of doubles with `threads` threads (first-touch
// by the same static split, so each thread reads its own pages; BW_BYTES is a multiple of 64).
static double read_bandwidth(int threads) {
  const size_t n = BW_BYTES / sizeof(double);
  double *a = malloc(n * sizeof *a);
  if (!a) return 0.0;
  omp_set_num_threads(threads);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++)
    a[i] = (double)(i & 7);
  double best = 0.0;
  volatile double sink = 0.0; // keeps the sums alive
  for (int r = 0; r < 5; r++) {
    // eight independent sums, so that the add latency does not limit the read
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0, t0 = now_s();
#pragma omp parallel for schedule(static) reduction(+ : s0, s1, s2, s3, s4, s5, s6, s7)
    for (size_t i = 0; i < n; i += 8) {
      s0 += a[i];
      s1 += a[i + 1];
      s2 += a[i + 2];
      s3 += a[i + 3];
      s4 += a[i + 4];
      s5 += a[i + 5];
      s6 += a[i + 6];
      s7 += a[i + 7];
    }
    double bw = (double)(n * sizeof *a) / (now_s() - t0) / 1e9;
    sink += s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
    if (bw > best) best = bw;
  }
  free(a);
  return best;
}

// ---- candidates
// ----------------------------------------------------------------------------------
typedef enum { K_OURS, K_EIGEN, K_GRAPHBLAS, K_RSB } cand_kind;

typedef struct {
  char name[32];
  cand_kind kind;
  int is_peer;
  msp_matrix M;                          // ours
  void *peer;                            // Eigen matrix / GrB_Matrix / rsb_mtx_t
  double *t;                             // samples (reps)
  double median, fastest, stat, reldiff; // stat: the median, or with --min the fastest
  char note[96];
} cand;

typedef struct {
  msp_context ctx;
  int64_t rows, cols, nnz;
  int64_t *rowptr;
  int32_t *colind;
  double *val;
  double *hx, *hy, *ref;
  msp_vector x, y;
#ifdef MSP_HAVE_GRAPHBLAS
  GrB_Vector gx, gy;
#endif
} problem;

static int run_once(problem *p, cand *c) {
  switch (c->kind) {
  case K_OURS:
    return msp_spmv(p->ctx, 1.0, c->M, p->x, 0.0, p->y) == MSP_SUCCESS ? 0 : -1;
#ifdef MSP_HAVE_EIGEN
  case K_EIGEN:
    bench_eigen_spmv(c->peer, p->rows, p->cols, p->hx, p->hy);
    return 0;
#endif
#ifdef MSP_HAVE_GRAPHBLAS
  case K_GRAPHBLAS:
    if (GrB_mxv(p->gy, NULL, NULL, GxB_PLUS_TIMES_FP64, (GrB_Matrix)c->peer, p->gx, NULL) !=
        GrB_SUCCESS)
      return -1;
    return GrB_Vector_wait(p->gy, GrB_MATERIALIZE) == GrB_SUCCESS ? 0 : -1;
#endif
#ifdef MSP_HAVE_RSB
  case K_RSB: {
    const double one = 1.0, zero = 0.0;
    return rsb_spmv(RSB_TRANSPOSITION_N, &one, (const struct rsb_mtx_t *)c->peer, p->hx, 1, &zero,
                    p->hy, 1) == RSB_ERR_NO_ERROR
               ? 0
               : -1;
  }
#endif
  default:
    return -1;
  }
}

// The candidate's y in p->hy (after one product).
static int result_of(problem *p, cand *c) {
  if (run_once(p, c) != 0) return -1;
  if (c->kind == K_OURS) return msp_vector_get(p->y, p->hy) == MSP_SUCCESS ? 0 : -1;
#ifdef MSP_HAVE_GRAPHBLAS
  if (c->kind == K_GRAPHBLAS) {
    GrB_Index nv = 0;
    if (GrB_Vector_nvals(&nv, p->gy) != GrB_SUCCESS) return -1;
    GrB_Index *I = malloc((nv ? nv : 1) * sizeof *I);
    double *X = malloc((nv ? nv : 1) * sizeof *X);
    int rc = -1;
    if (I && X && GrB_Vector_extractTuples_FP64(I, X, &nv, p->gy) == GrB_SUCCESS) {
      memset(p->hy, 0, (size_t)p->rows * sizeof *p->hy);
      for (GrB_Index k = 0; k < nv; k++)
        p->hy[I[k]] = X[k];
      rc = 0;
    }
    free(I);
    free(X);
    return rc;
  }
#endif
  return 0;
}

static double max_reldiff(const double *y, const double *ref, int64_t n) {
  double m = 0.0, d = 0.0;
  for (int64_t i = 0; i < n; i++) {
    if (fabs(ref[i]) > m) m = fabs(ref[i]);
    double e = fabs(y[i] - ref[i]);
    if (!(e <= d)) d = e; // NaN propagates
  }
  return m > 0 ? d / m : d;
}

static void free_cand(cand *c) {
  if (c->kind == K_OURS) msp_matrix_destroy(&c->M);
#ifdef MSP_HAVE_EIGEN
  if (c->kind == K_EIGEN && c->peer) bench_eigen_destroy(c->peer);
#endif
#ifdef MSP_HAVE_GRAPHBLAS
  if (c->kind == K_GRAPHBLAS && c->peer) {
    GrB_Matrix G = (GrB_Matrix)c->peer;
    GrB_Matrix_free(&G);
  }
#endif
#ifdef MSP_HAVE_RSB
  if (c->kind == K_RSB && c->peer) rsb_mtx_free((struct rsb_mtx_t *)c->peer);
#endif
  c->peer = NULL;
  free(c->t);
  c->t = NULL;
}

// ---- loading
// -------------------------------------------------------------------------------------
static msp_status load(msp_context ctx, const char *spec, const char *dir, msp_matrix *A,
                       char *label, size_t n) {
  if (strncmp(spec, "gen:", 4) == 0) {
    snprintf(label, n, "%s", spec + 4);
    return msp_matrix_generate(ctx, spec + 4, A);
  }
  char path[4096];
  if (strchr(spec, '/') || strstr(spec, ".mtx"))
    snprintf(path, sizeof path, "%s", spec);
  else
    snprintf(path, sizeof path, "%s/%s.mtx.gz", dir, spec);
  const char *base = strrchr(spec, '/');
  snprintf(label, n, "%s", base ? base + 1 : spec);
  return msp_matrix_read_mtx(ctx, path, 0, A);
}

// ---- one matrix
// ----------------------------------------------------------------------------------
typedef struct {
  char label[64];
  int64_t rows, nnz;
  double best_peer, auto_t, own_best, csr_t;
  char auto_fmt[32], own_fmt[32], peer_name[32];
  int ok;
} row_result;

static const msp_format our_formats[] = {MSP_FORMAT_CSR, MSP_FORMAT_COO, MSP_FORMAT_ELL,
                                         MSP_FORMAT_HLL, MSP_FORMAT_DIA, MSP_FORMAT_HDIA,
                                         MSP_FORMAT_HYB, MSP_FORMAT_AUTO};
#define N_OURS (int)(sizeof our_formats / sizeof our_formats[0])

static int bench_matrix(msp_context ctx, const char *spec, const char *dir, int threads, int reps,
                        int tune, int use_min, row_result *res) {
  problem p;
  cand c[MAX_CAND];
  int nc = 0, rc = -1;
  msp_matrix A = NULL;
  memset(&p, 0, sizeof p);
  memset(c, 0, sizeof c);
  memset(res, 0, sizeof *res);
  p.ctx = ctx;
  omp_set_num_threads(threads);
  double t0 = now_s();
  if (load(ctx, spec, dir, &A, res->label, sizeof res->label) != MSP_SUCCESS) {
    printf("%s: cannot load (%s)\n", spec, msp_last_error());
    if (strncmp(spec, "gen:", 4) != 0)
      printf("  (the collection is read from %s: set MSP_MATRICES_DIR)\n", dir);
    return -1;
  }
  p.rows = msp_matrix_rows(A);
  p.cols = msp_matrix_cols(A);
  p.nnz = msp_matrix_nnz(A);
  res->rows = p.rows;
  res->nnz = p.nnz;
  p.rowptr = malloc((size_t)(p.rows + 1) * sizeof *p.rowptr);
  p.colind = malloc((size_t)(p.nnz ? p.nnz : 1) * sizeof *p.colind);
  p.val = malloc((size_t)(p.nnz ? p.nnz : 1) * sizeof *p.val);
  p.hx = malloc((size_t)(p.cols ? p.cols : 1) * sizeof *p.hx);
  p.hy = malloc((size_t)(p.rows ? p.rows : 1) * sizeof *p.hy);
  p.ref = malloc((size_t)(p.rows ? p.rows : 1) * sizeof *p.ref);
  if (!p.rowptr || !p.colind || !p.val || !p.hx || !p.hy || !p.ref) {
    printf("%s: out of memory\n", res->label);
    goto done;
  }
  if (msp_matrix_get_csr(A, p.rowptr, p.colind, p.val) != MSP_SUCCESS) goto done;
  // x: values in [-1, 1) from a fixed linear congruential sequence
  uint64_t s = 12345;
  for (int64_t j = 0; j < p.cols; j++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p.hx[j] = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
  if (msp_vector_create(ctx, p.cols, &p.x) != MSP_SUCCESS ||
      msp_vector_create(ctx, p.rows, &p.y) != MSP_SUCCESS ||
      msp_vector_set(p.x, p.hx) != MSP_SUCCESS)
    goto done;

  // ours
  for (int f = 0; f < N_OURS; f++) {
    cand *k = &c[nc];
    msp_convert_options o = msp_convert_options_default();
    o.format = our_formats[f];
    k->kind = K_OURS;
    snprintf(k->name, sizeof k->name, "%s",
             our_formats[f] == MSP_FORMAT_AUTO ? "auto" : msp_format_name(our_formats[f]));
    if (msp_matrix_convert(ctx, A, &o, &k->M) != MSP_SUCCESS) {
      printf("  %-5s skipped: %s\n", k->name, msp_last_error());
      continue;
    }
    if (our_formats[f] == MSP_FORMAT_AUTO) {
      snprintf(k->note, sizeof k->note, "%s", msp_format_name(msp_matrix_format(k->M)));
      snprintf(res->auto_fmt, sizeof res->auto_fmt, "%s", k->note);
      printf("  auto: %s\n", msp_matrix_choice_reason(k->M));
    }
    nc++;
  }
  // peers
#ifdef MSP_HAVE_EIGEN
  c[nc].kind = K_EIGEN;
  c[nc].is_peer = 1;
  snprintf(c[nc].name, sizeof c[nc].name, "eigen");
  c[nc].peer = bench_eigen_create(p.rows, p.cols, p.rowptr, p.colind, p.val, threads);
  if (c[nc].peer)
    nc++;
  else
    printf("  eigen: out of memory\n");
#endif
#ifdef MSP_HAVE_GRAPHBLAS
  {
    GrB_Matrix G = NULL;
    GrB_Index *I = malloc((size_t)(p.nnz ? p.nnz : 1) * sizeof *I);
    GrB_Index *J = malloc((size_t)(p.nnz ? p.nnz : 1) * sizeof *J);
    GrB_Index *V = malloc((size_t)(p.cols ? p.cols : 1) * sizeof *V);
    int ok = I && J && V;
    if (ok) {
      for (int64_t i = 0; i < p.rows; i++)
        for (int64_t k = p.rowptr[i]; k < p.rowptr[i + 1]; k++) {
          I[k] = (GrB_Index)i;
          J[k] = (GrB_Index)p.colind[k];
        }
      for (int64_t j = 0; j < p.cols; j++)
        V[j] = (GrB_Index)j;
      ok = GrB_Matrix_new(&G, GrB_FP64, (GrB_Index)p.rows, (GrB_Index)p.cols) == GrB_SUCCESS &&
           GxB_Matrix_Option_set(G, GxB_FORMAT, GxB_BY_ROW) == GrB_SUCCESS &&
           GrB_Matrix_build_FP64(G, I, J, p.val, (GrB_Index)p.nnz, GrB_PLUS_FP64) == GrB_SUCCESS &&
           GrB_Matrix_wait(G, GrB_MATERIALIZE) == GrB_SUCCESS &&
           GrB_Vector_new(&p.gx, GrB_FP64, (GrB_Index)p.cols) == GrB_SUCCESS &&
           GrB_Vector_build_FP64(p.gx, V, p.hx, (GrB_Index)p.cols, GrB_PLUS_FP64) == GrB_SUCCESS &&
           GrB_Vector_wait(p.gx, GrB_MATERIALIZE) == GrB_SUCCESS &&
           GrB_Vector_new(&p.gy, GrB_FP64, (GrB_Index)p.rows) == GrB_SUCCESS;
    }
    free(I);
    free(J);
    free(V);
    if (ok) {
      c[nc].kind = K_GRAPHBLAS;
      c[nc].is_peer = 1;
      c[nc].peer = G;
      snprintf(c[nc].name, sizeof c[nc].name, "graphblas");
      nc++;
    } else {
      printf("  graphblas: could not build the matrix\n");
      if (G) GrB_Matrix_free(&G);
    }
  }
#endif
#ifdef MSP_HAVE_RSB
  {
    rsb_coo_idx_t *IA = malloc((size_t)(p.nnz ? p.nnz : 1) * sizeof *IA);
    rsb_err_t err = RSB_ERR_NO_ERROR;
    struct rsb_mtx_t *R = NULL;
    if (IA) {
      for (int64_t i = 0; i < p.rows; i++)
        for (int64_t k = p.rowptr[i]; k < p.rowptr[i + 1]; k++)
          IA[k] = (rsb_coo_idx_t)i;
      R = rsb_mtx_alloc_from_coo_const(p.val, IA, p.colind, (rsb_nnz_idx_t)p.nnz,
                                       RSB_NUMERICAL_TYPE_DOUBLE, (rsb_coo_idx_t)p.rows,
                                       (rsb_coo_idx_t)p.cols, 1, 1,
                                       RSB_FLAG_DEFAULT_RSB_MATRIX_FLAGS, &err);
    }
    free(IA);
    if (R && tune) {
      // librsb's own autotuning of its blocking for this product (its threads stay as set)
      const double one = 1.0, zero = 0.0;
      err = rsb_tune_spmm(&R, NULL, NULL, 0, 0.0, RSB_TRANSPOSITION_N, &one, NULL, 1,
                          RSB_FLAG_WANT_COLUMN_MAJOR_ORDER, p.hx, (rsb_nnz_idx_t)p.cols, &zero,
                          p.hy, (rsb_nnz_idx_t)p.rows);
      if (err != RSB_ERR_NO_ERROR) printf("  rsb: tuning failed (untuned matrix kept)\n");
    }
    if (R) {
      c[nc].kind = K_RSB;
      c[nc].is_peer = 1;
      c[nc].peer = R;
      snprintf(c[nc].name, sizeof c[nc].name, tune ? "rsb(tuned)" : "rsb");
      nc++;
    } else {
      printf("  rsb: could not build the matrix\n");
    }
  }
#endif
  printf("  setup %.1f s; timing %d candidates\n", now_s() - t0, nc);
  fflush(stdout);

  // reference: our CSR (candidate 0)
  if (nc == 0 || c[0].kind != K_OURS || result_of(&p, &c[0]) != 0) goto done;
  memcpy(p.ref, p.hy, (size_t)p.rows * sizeof *p.ref);
  for (int i = 0; i < nc; i++) {
    if (result_of(&p, &c[i]) != 0) {
      printf("  %s: product failed\n", c[i].name);
      goto done;
    }
    c[i].reldiff = max_reldiff(p.hy, p.ref, p.rows);
    if (!(c[i].reldiff <= CHECK_TOL)) {
      printf("  %s: WRONG RESULT, max |y - y_csr| / max |y_csr| = %.3g > %.0e\n", c[i].name,
             c[i].reldiff, CHECK_TOL);
      goto done;
    }
  }
  // batch size from a warm product of our CSR
  // (the fastest of 5 warm products: one slowed by other work would make the batch too short)
  double one = 0.0;
  for (int w = 0; w < 5; w++) {
    double a = now_s();
    run_once(&p, &c[0]);
    a = now_s() - a;
    if (w == 0 || a < one) one = a;
  }
  int batch = one > 0 ? (int)(BATCH_S / one) : 1000;
  if (batch < 1) batch = 1;
  if (batch > 1000) batch = 1000;
  for (int i = 0; i < nc; i++) {
    c[i].t = malloc((size_t)reps * sizeof *c[i].t);
    if (!c[i].t) goto done;
    run_once(&p, &c[i]); // warm
  }
  // Each repetition starts one candidate further on, so that none always follows the same one.
  for (int r = 0; r < reps; r++)
    for (int j = 0; j < nc; j++) {
      const int i = (j + r) % nc;
      double a = now_s();
      for (int b = 0; b < batch; b++)
        run_once(&p, &c[i]);
      c[i].t[r] = (now_s() - a) / batch;
    }
  double best_peer = 0, own_best = 0, auto_t = 0;
  for (int i = 0; i < nc; i++) {
    qsort(c[i].t, (size_t)reps, sizeof *c[i].t, cmp_double);
    c[i].median = c[i].t[reps / 2];
    c[i].fastest = c[i].t[0];
    c[i].stat = use_min ? c[i].fastest : c[i].median;
    if (c[i].is_peer && (best_peer == 0 || c[i].stat < best_peer)) {
      best_peer = c[i].stat;
      memcpy(res->peer_name, c[i].name, sizeof res->peer_name); // both char[32]
    }
    if (!c[i].is_peer && strcmp(c[i].name, "auto") != 0 &&
        (own_best == 0 || c[i].stat < own_best)) {
      own_best = c[i].stat;
      memcpy(res->own_fmt, c[i].name, sizeof res->own_fmt);
    }
    if (!strcmp(c[i].name, "auto")) auto_t = c[i].stat;
    if (!strcmp(c[i].name, "csr")) res->csr_t = c[i].stat;
  }
  res->best_peer = best_peer;
  res->own_best = own_best;
  res->auto_t = auto_t;
  printf("  %-11s %10s %10s %8s %7s %9s  (%d reps x %d products; GB/s and ratio to the best "
         "peer from the %s)\n",
         "", "median ms", "fastest ms", "GB/s", "ratio", "reldiff", reps, batch,
         use_min ? "fastest" : "median");
  for (int i = 0; i < nc; i++) {
    double bytes = 12.0 * (double)p.nnz + 8.0 * (double)(p.rows + 1) +
                   8.0 * (double)(p.rows + p.cols); // CSR's bytes (x read once)
    printf("  %-11s %10.3f %10.3f %8.1f %7.2f %9.1e  %s\n", c[i].name, 1e3 * c[i].median,
           1e3 * c[i].fastest, bytes / c[i].stat / 1e9, best_peer > 0 ? c[i].stat / best_peer : 0.0,
           c[i].reldiff, c[i].note);
  }
  res->ok = 1;
  rc = 0;
done:
  for (int i = 0; i < nc; i++)
    free_cand(&c[i]);
#ifdef MSP_HAVE_GRAPHBLAS
  if (p.gx) GrB_Vector_free(&p.gx);
  if (p.gy) GrB_Vector_free(&p.gy);
#endif
  msp_vector_destroy(&p.x);
  msp_vector_destroy(&p.y);
  msp_matrix_destroy(&A);
  free(p.rowptr);
  free(p.colind);
  free(p.val);
  free(p.hx);
  free(p.hy);
  free(p.ref);
  fflush(stdout);
  return rc;
}

int main(int argc, char **argv) {
  int threads = 2, reps = 11, tune = 1, use_min = 0, nspec = 0;
  const size_t ndef = sizeof default_specs / sizeof *default_specs;
  const char **specs = calloc((size_t)argc + ndef, sizeof *specs);
  if (!specs) return 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-tune"))
      tune = 0;
    else if (!strcmp(argv[i], "--min"))
      use_min = 1;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: mixsparse-bench-cpu [--threads T] [--reps R] [--no-tune] [--min] [SPEC ...]\n"
             "  --min: rank by the fastest sample instead of the median (a machine shared with\n"
             "  other work)\n"
             "  SPEC: gen:<generator spec>, a name in MSP_MATRICES_DIR (NAME.mtx.gz) or a path\n");
      free(specs);
      return 0;
    } else
      specs[nspec++] = argv[i];
  }
  if (threads < 1 || reps < 1) {
    fprintf(stderr, "--threads and --reps must be >= 1\n");
    free(specs);
    return 1;
  }
  if (nspec == 0)
    for (size_t i = 0; i < ndef; i++)
      specs[nspec++] = default_specs[i];
  const char *dir = getenv("MSP_MATRICES_DIR");
  if (!dir || !*dir) dir = MSP_BENCH_DEFAULT_MATRICES;
  if (access(dir, R_OK) != 0)
    printf("note: matrix collection %s not found (set MSP_MATRICES_DIR); its matrices are "
           "skipped\n",
           dir);

  printf("mixsparse-bench-cpu: fp64 y = A x, %d threads, %d interleaved repetitions, ratios of "
         "the %s\n",
         threads, reps, use_min ? "fastest samples" : "medians");
#ifdef MSP_HAVE_EIGEN
  printf("peer: %s\n", bench_eigen_version());
#else
  printf("peer: Eigen skipped (not found at build time: Debian libeigen3-dev)\n");
#endif
#ifdef MSP_HAVE_GRAPHBLAS
  if (GrB_init(GrB_NONBLOCKING) != GrB_SUCCESS) {
    fprintf(stderr, "GrB_init failed\n");
    free(specs);
    return 1;
  }
  GxB_Global_Option_set(GxB_NTHREADS, threads);
  printf("peer: SuiteSparse:GraphBLAS %d.%d.%d (GrB_mxv, GxB_PLUS_TIMES_FP64, by row)\n",
         GxB_IMPLEMENTATION_MAJOR, GxB_IMPLEMENTATION_MINOR, GxB_IMPLEMENTATION_SUB);
#else
  printf("peer: GraphBLAS skipped (not found at build time: Debian libsuitesparse-dev)\n");
#endif
#ifdef MSP_HAVE_RSB
  if (rsb_lib_init(RSB_NULL_INIT_OPTIONS) != RSB_ERR_NO_ERROR) {
    fprintf(stderr, "rsb_lib_init failed\n");
    free(specs);
    return 1;
  }
  {
    rsb_int_t nt = threads;
    rsb_lib_set_opt(RSB_IO_WANT_EXECUTING_THREADS, &nt);
  }
  printf("peer: librsb (rsb_spmv%s)\n", tune ? " after rsb_tune_spmm" : ", untuned");
#else
  printf("peer: librsb skipped (not found at build time: Debian librsb-dev)\n");
#endif
  double bw = read_bandwidth(threads);
  printf("memory read bandwidth: %.1f GB/s (%d threads, %llu MB summed, best of 5)\n", bw, threads,
         (unsigned long long)(BW_BYTES >> 20));
  printf("load average at the start: %.2f (%ld CPUs online)\n", load_average(),
         sysconf(_SC_NPROCESSORS_ONLN));

  msp_context ctx = NULL;
  // Exactly --threads threads, like the peers (the library's default would give way to load).
  if (msp_context_create(MSP_BACKEND_CPU, 0, &ctx) != MSP_SUCCESS ||
      msp_context_set_threads(ctx, threads) != MSP_SUCCESS) {
    fprintf(stderr, "%s\n", msp_last_error());
    msp_context_destroy(&ctx);
    free(specs);
    return 1;
  }
  row_result *res = calloc((size_t)nspec, sizeof *res);
  if (!res) {
    msp_context_destroy(&ctx);
    free(specs);
    return 1;
  }
  for (int i = 0; i < nspec; i++) {
    printf("\nmatrix %d of %d: %s\n", i + 1, nspec, specs[i]);
    fflush(stdout);
    bench_matrix(ctx, specs[i], dir, threads, reps, tune, use_min, &res[i]);
  }

  printf(
      "\n| matrix | rows | nnz | best peer (ms) | csr / peer | auto / peer (format) | best own / "
      "peer (format) | auto / best own |\n|---|---|---|---|---|---|---|---|\n");
  double g_auto = 0, g_own = 0, worst_auto = 0, worst_own = 0;
  int ng = 0;
  for (int i = 0; i < nspec; i++) {
    row_result *r = &res[i];
    if (!r->ok) continue;
    if (r->best_peer <= 0) {
      printf("| %s | %lld | %lld | (no peer) | | | | %.2f |\n", r->label, (long long)r->rows,
             (long long)r->nnz, r->auto_t / r->own_best);
      continue;
    }
    double ra = r->auto_t / r->best_peer, ro = r->own_best / r->best_peer;
    printf("| %s | %lld | %lld | %.3f (%s) | %.2f | %.2f (%s) | %.2f (%s) | %.2f |\n", r->label,
           (long long)r->rows, (long long)r->nnz, 1e3 * r->best_peer, r->peer_name,
           r->csr_t / r->best_peer, ra, r->auto_fmt, ro, r->own_fmt, r->auto_t / r->own_best);
    g_auto += log(ra);
    g_own += log(ro);
    if (ra > worst_auto) worst_auto = ra;
    if (r->auto_t / r->own_best > worst_own) worst_own = r->auto_t / r->own_best;
    ng++;
  }
  if (ng)
    printf("\ngeomean auto / best peer %.2f (worst %.2f); geomean best own / best peer %.2f; "
           "worst auto / best own %.2f\n",
           exp(g_auto / ng), worst_auto, exp(g_own / ng), worst_own);
  printf("load average at the end: %.2f\n", load_average());
  free(res);
  free(specs);
  msp_context_destroy(&ctx);
#ifdef MSP_HAVE_RSB
  rsb_lib_exit(RSB_NULL_EXIT_OPTIONS);
#endif
#ifdef MSP_HAVE_GRAPHBLAS
  GrB_finalize();
#endif
  return 0;
}

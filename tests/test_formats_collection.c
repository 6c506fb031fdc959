// test_formats_collection.c: every format on every matrix of ../shared/matrices: conversion,
// exact round trip and SpMV against the long-double oracle; fill-limit refusals are counted.
#include "internal.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Matrices above this many nonzeros (as listed in INDEX.tsv) are left out; 0: none. The whole
// collection runs in under a minute on two cores, so none is left out now.
#define MAX_NNZ 0
// A format refused at the default max_fill is retried at RETRY_FILL when the CSR footprint is
// at most RETRY_CSR_BYTES (so the retry allocates at most RETRY_FILL x that), to test its
// layout on small matrices whose hack padding alone exceeds 3 x CSR.
#define RETRY_FILL 50.0
#define RETRY_CSR_BYTES (1 << 20)

static const msp_format formats[] = {MSP_FORMAT_CSR, MSP_FORMAT_COO, MSP_FORMAT_ELL,
                                     MSP_FORMAT_HLL, MSP_FORMAT_DIA, MSP_FORMAT_HDIA,
                                     MSP_FORMAT_HYB};
#define NF (int)(sizeof formats / sizeof formats[0])

typedef struct {
  msp_context cpu;
  int matrices, unreadable;
  int converted[NF], refused[NF], refused_retry[NF], failed[NF];
  int auto_choice[MSP_FORMAT_COUNT];
} run_state;

// Round trip: msp__format_to_csr(B) equals m (DIA/HDIA: m without its stored zeros).
static int round_trip_ok(const test_csr *m, msp_matrix B, const char *label) {
  int64_t *rp = NULL;
  int32_t *ci = NULL;
  double *v = NULL;
  int ok = 1, dia = B->format == MSP_FORMAT_DIA || B->format == MSP_FORMAT_HDIA;
  if (msp__format_to_csr(B, &rp, &ci, &v) != MSP_SUCCESS) {
    fprintf(stderr, "%s: msp__format_to_csr: %s\n", label, msp_last_error());
    return 0;
  }
  int64_t n = 0;
  for (int64_t i = 0; i < m->rows && ok; i++) {
    if (rp[i] != n) ok = 0;
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1] && ok; k++) {
      if (dia && m->val[k] == 0.0) continue;
      if (n >= rp[m->rows] || ci[n] != m->colind[k] || memcmp(&v[n], &m->val[k], sizeof v[n]) != 0)
        ok = 0;
      n++;
    }
  }
  if (ok && rp[m->rows] != n) ok = 0;
  if (!ok) fprintf(stderr, "%s: round trip differs from the source\n", label);
  msp__free(rp);
  msp__free(ci);
  msp__free(v);
  return ok;
}

static int spmv_ok(msp_context cpu, const test_csr *m, msp_matrix B, const double *hx,
                   const double *y0, const char *label) {
  static const double ab[][2] = {{1.0, 0.0}, {1.5, -0.5}};
  size_t ny = (size_t)(m->rows ? m->rows : 1);
  double *got = malloc(ny * sizeof *got), *ref = malloc(ny * sizeof *ref);
  msp_vector x = NULL, y = NULL;
  int ok = got && ref && msp_vector_create(cpu, m->cols, &x) == MSP_SUCCESS &&
           msp_vector_create(cpu, m->rows, &y) == MSP_SUCCESS &&
           msp_vector_set(x, hx) == MSP_SUCCESS;
  for (int c = 0; c < 2 && ok; c++) {
    char lab[300];
    snprintf(lab, sizeof lab, "%s alpha %g beta %g", label, ab[c][0], ab[c][1]);
    if (ab[c][1] == 0.0)
      ok = msp_vector_fill(y, NAN) == MSP_SUCCESS; // must not be read
    else
      ok = msp_vector_set(y, y0) == MSP_SUCCESS;
    ok = ok && msp_spmv(cpu, ab[c][0], B, x, ab[c][1], y) == MSP_SUCCESS &&
         msp_vector_get(y, got) == MSP_SUCCESS;
    if (!ok) {
      fprintf(stderr, "%s: %s\n", lab, msp_last_error());
      break;
    }
    test_oracle_spmv(m, ab[c][0], hx, ab[c][1], y0, ref);
    ok = test_compare_rows(m, ab[c][0], hx, ab[c][1], y0, got, ref, lab) == 0;
  }
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  free(got);
  free(ref);
  return ok;
}

static void visit(const char *path, const char *name, void *user) {
  run_state *s = user;
  msp_matrix A = NULL;
  test_csr m;
  memset(&m, 0, sizeof m);
  if (msp_matrix_read_mtx(s->cpu, path, 0, &A) != MSP_SUCCESS) {
    // The reader's own tests cover its refusals (NaN values, malformed files).
    printf("%s: not read (%s)\n", name, msp_last_error());
    s->unreadable++;
    return;
  }
  s->matrices++;
  CHECK(test_csr_from_matrix(&m, A) == 0, "%s: CSR copy", name);
  size_t nx = (size_t)(m.cols ? m.cols : 1), ny = (size_t)(m.rows ? m.rows : 1);
  double *hx = malloc(nx * sizeof *hx), *y0 = malloc(ny * sizeof *y0);
  msp_rng r = {(uint64_t)m.nnz + 7};
  for (int64_t j = 0; j < m.cols; j++)
    hx[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
  for (int64_t i = 0; i < m.rows; i++)
    y0[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
  double csr_bytes = (double)msp_matrix_bytes(A);
  for (int f = 0; f < NF; f++) {
    msp_convert_options o = msp_convert_options_default();
    msp_matrix B = NULL;
    char label[512];
    snprintf(label, sizeof label, "%s as %s", name, msp_format_name(formats[f]));
    o.format = formats[f];
    msp_status st = msp_matrix_convert(s->cpu, A, &o, &B);
    if (st == MSP_ERR_FILL_LIMIT) {
      s->refused[f]++;
      if (csr_bytes <= RETRY_CSR_BYTES) {
        o.max_fill = RETRY_FILL;
        st = msp_matrix_convert(s->cpu, A, &o, &B);
        if (st == MSP_ERR_FILL_LIMIT) s->refused_retry[f]++;
      }
    }
    if (st == MSP_ERR_FILL_LIMIT) continue;
    CHECK(st == MSP_SUCCESS, "%s: %s (%s)", label, msp_status_name(st), msp_last_error());
    if (!B) {
      s->failed[f]++;
      continue;
    }
    int ok = round_trip_ok(&m, B, label);
    CHECK(ok, "%s: round trip", label);
    int sok = spmv_ok(s->cpu, &m, B, hx, y0, label);
    CHECK(sok, "%s: SpMV against the oracle", label);
    if (ok && sok)
      s->converted[f]++;
    else
      s->failed[f]++;
    msp_matrix_destroy(&B);
  }
  // AUTO: must give a working matrix; which format it picks is tallied, not asserted.
  {
    msp_convert_options o = msp_convert_options_default();
    msp_matrix B = NULL;
    o.format = MSP_FORMAT_AUTO;
    CHECK_OK(msp_matrix_convert(s->cpu, A, &o, &B));
    if (B) {
      s->auto_choice[B->format]++;
      char label[512];
      snprintf(label, sizeof label, "%s as auto (%s)", name, msp_format_name(B->format));
      CHECK(spmv_ok(s->cpu, &m, B, hx, y0, label), "%s: SpMV against the oracle", label);
    }
    msp_matrix_destroy(&B);
  }
  free(hx);
  free(y0);
  test_csr_free(&m);
  msp_matrix_destroy(&A);
}

static void count_only(const char *path, const char *name, void *user) {}

int main(void) {
  run_state s;
  memset(&s, 0, sizeof s);
  if (!test_matrices_dir())
    return msp_test_skip("test_formats_collection",
                         "the matrix collection is absent (set MSP_MATRICES_DIR to "
                         "../shared/matrices)");
  if (msp_context_create(MSP_BACKEND_CPU, 0, &s.cpu) != MSP_SUCCESS) {
    fprintf(stderr, "cannot create a CPU context: %s\n", msp_last_error());
    return 1;
  }
  int all = test_for_each_matrix(0, count_only, NULL);
  int visited = test_for_each_matrix(MAX_NNZ, visit, &s);
  if (MAX_NNZ > 0)
    printf("%d matrices listed; %d visited with nnz <= %d in INDEX.tsv (%d left out as larger), "
           "%d read\n",
           all, visited, MAX_NNZ, all - visited, s.matrices);
  else
    printf("%d matrices listed (complex ones excluded), %d visited (no nnz limit), %d read\n", all,
           visited, s.matrices);
  for (int f = 0; f < NF; f++)
    printf("%-5s converted and checked %4d, refused at max_fill 3: %4d (of which still refused "
           "at %.0f: %d), failed %d\n",
           msp_format_name(formats[f]), s.converted[f], s.refused[f], RETRY_FILL,
           s.refused_retry[f], s.failed[f]);
  printf("auto chose:");
  for (int f = 0; f < MSP_FORMAT_COUNT; f++)
    if (s.auto_choice[f]) printf(" %s %d", msp_format_name((msp_format)f), s.auto_choice[f]);
  printf("\n");
  CHECK(s.matrices > 0, "no matrix of the collection could be read");
  msp_context_destroy(&s.cpu);
  return msp_test_finish("test_formats_collection");
}

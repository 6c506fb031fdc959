// test_mtx_collection.c: read every matrix of ../shared/matrices (INDEX.tsv) and check it.
//
// real / integer / pattern files must read with the INDEX's dimensions and an entry count that
// fits the symmetry (general: equal; symmetric and skew-symmetric: between nnz and 2 nnz after
// expansion), and the expansion must really be (skew-)symmetric: A equals A^T (or -A^T) entry by
// entry. Complex files must be refused with ERR_MM_UNSUPPORTED.
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Check A == sign * A^T exactly (the CSR has sorted columns, so does the transpose built here).
static int check_symmetry(msp_matrix A, double sign, const char *name) {
  int64_t n = msp_matrix_rows(A), nnz = msp_matrix_nnz(A);
  int64_t *rp = malloc((size_t)(n + 1) * sizeof *rp), *tp = calloc((size_t)n + 1, sizeof *tp);
  int32_t *ci = malloc((size_t)(nnz ? nnz : 1) * sizeof *ci),
          *ti = malloc((size_t)(nnz ? nnz : 1) * sizeof *ti);
  double *v = malloc((size_t)(nnz ? nnz : 1) * sizeof *v),
         *tv = malloc((size_t)(nnz ? nnz : 1) * sizeof *tv);
  int ok = 0;
  if (!rp || !tp || !ci || !ti || !v || !tv) {
    CHECK(0, "%s: host allocation failed", name);
    goto done;
  }
  CHECK_OK(msp_matrix_get_csr(A, rp, ci, v));
  for (int64_t k = 0; k < nnz; k++)
    tp[ci[k] + 1]++;
  for (int64_t i = 0; i < n; i++)
    tp[i + 1] += tp[i];
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = rp[i]; k < rp[i + 1]; k++) {
      int64_t p = tp[ci[k]]++;
      ti[p] = (int32_t)i;
      tv[p] = sign * v[k];
    }
  for (int64_t i = n; i > 0; i--)
    tp[i] = tp[i - 1];
  tp[0] = 0;
  ok = memcmp(rp, tp, (size_t)(n + 1) * sizeof *rp) == 0 &&
       memcmp(ci, ti, (size_t)nnz * sizeof *ci) == 0;
  for (int64_t k = 0; ok && k < nnz; k++)
    ok = v[k] == tv[k];
  CHECK(ok, "%s: the expanded matrix is not %ssymmetric", name, sign < 0 ? "skew-" : "");
done:
  free(rp);
  free(tp);
  free(ci);
  free(ti);
  free(v);
  free(tv);
  return ok;
}

int main(void) {
  const char *dir = test_matrices_dir();
  if (!dir) return msp_test_skip("test_mtx_collection", "../shared/matrices not found");
  char path[4096], line[8192];
  snprintf(path, sizeof path, "%s/INDEX.tsv", dir);
  FILE *f = fopen(path, "r");
  if (!f) return msp_test_skip("test_mtx_collection", "../shared/matrices not found");
  msp_context ctx = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  int read = 0, refused = 0, first = 1;
  long long total = 0;
  while (ctx && fgets(line, sizeof line, f)) {
    if (first) { // header
      first = 0;
      continue;
    }
    char name[1024], sym[64], field[64];
    long long rows = 0, cols = 0, nnz = 0;
    if (sscanf(line, "%1023[^\t]\t%lld\t%lld\t%lld\t%63[^\t]\t%63[^\t]", name, &rows, &cols, &nnz,
               sym, field) != 6) {
      CHECK(0, "INDEX.tsv: cannot parse line: %s", line);
      continue;
    }
    snprintf(path, sizeof path, "%s/%s.mtx.gz", dir, name);
    msp_matrix A = NULL;
    msp_status st = msp_matrix_read_mtx(ctx, path, 0, &A);
    if (strcmp(field, "complex") == 0) {
      CHECK(st == MSP_ERR_MM_UNSUPPORTED, "%s (complex): %s, expected ERR_MM_UNSUPPORTED: %s", name,
            msp_status_name(st), msp_last_error());
      CHECK(A == NULL, "%s: matrix returned for a complex file", name);
      refused++;
      msp_matrix_destroy(&A);
      continue;
    }
    CHECK(st == MSP_SUCCESS, "%s: %s: %s", name, msp_status_name(st), msp_last_error());
    if (st != MSP_SUCCESS) continue;
    read++;
    int64_t got = msp_matrix_nnz(A);
    total += got;
    CHECK(msp_matrix_rows(A) == rows && msp_matrix_cols(A) == cols,
          "%s: %lld x %lld, INDEX says %lld x %lld", name, (long long)msp_matrix_rows(A),
          (long long)msp_matrix_cols(A), rows, cols);
    if (strcmp(sym, "general") == 0) {
      CHECK(got == nnz, "%s: %lld entries, INDEX says %lld", name, (long long)got, nnz);
    } else {
      CHECK(got >= nnz && got <= 2 * nnz, "%s (%s): %lld entries after expansion, INDEX says %lld",
            name, sym, (long long)got, nnz);
      check_symmetry(A, strcmp(sym, "skew-symmetric") == 0 ? -1.0 : 1.0, name);
    }
    msp_matrix_destroy(&A);
  }
  fclose(f);
  msp_context_destroy(&ctx);
  printf("test_mtx_collection: %d matrices read (%lld entries), %d complex refused\n", read, total,
         refused);
  CHECK(read > 0, "no matrix read from %s", dir);
  return msp_test_finish("test_mtx_collection");
}

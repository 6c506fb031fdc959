// bench_dump.c: the matrix dump of the C benchmarks for their Python peers (bench_dump.h).
#include "bench_dump.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bench_tag(const char *spec, char *tag, size_t n) {
  const char *s = strncmp(spec, "gen:", 4) == 0 ? spec + 4 : spec;
  const char *slash = strrchr(s, '/');
  if (slash) s = slash + 1;
  snprintf(tag, n, "%s", s);
  for (char *c = tag; *c; c++)
    if (*c == ':' || *c == '.') *c = '_';
  char *ext = strstr(tag, "_mtx");
  if (ext) *ext = '\0';
}

// One array to DIR/TAG.EXT; 0 on success.
static int write_array(const char *dir, const char *tag, const char *ext, const void *p,
                       size_t size, size_t count) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%s", dir, tag, ext);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  const int ok = fwrite(p, size, count, f) == count;
  return fclose(f) == 0 && ok ? 0 : -1;
}

int bench_dump_csr(msp_matrix A, const char *dir, const char *tag, int values) {
  const int64_t n = msp_matrix_rows(A), nnz = msp_matrix_nnz(A);
  int64_t *rp = malloc((size_t)(n + 1) * sizeof *rp);
  int32_t *ci = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof *ci);
  double *va = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof *va);
  int rc = -1;
  char path[1024];
  FILE *f = NULL;
  if (!rp || !ci || !va || msp_matrix_get_csr(A, rp, ci, va) != MSP_SUCCESS) goto exit;
  if (write_array(dir, tag, "rowptr", rp, sizeof *rp, (size_t)n + 1) != 0 ||
      write_array(dir, tag, "colind", ci, sizeof *ci, (size_t)nnz) != 0 ||
      (values && write_array(dir, tag, "val", va, sizeof *va, (size_t)nnz) != 0))
    goto exit;
  snprintf(path, sizeof path, "%s/%s.txt", dir, tag);
  if (!(f = fopen(path, "w"))) goto exit;
  fprintf(f, "%lld %lld\n", (long long)n, (long long)nnz);
  rc = fclose(f) == 0 ? 0 : -1;
  f = NULL;
exit:
  if (f) fclose(f);
  free(rp);
  free(ci);
  free(va);
  return rc;
}

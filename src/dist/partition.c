// partition.c: the optional graph partitioner of the distributed layer (METIS, when the build
// found it): rank 0 splits the symmetrised pattern of G (no self loops) into one part per rank,
// balanced by nonzeros; the rows are renumbered by (part, original row), and the ranks' blocks of
// the renumbered rows are cut at the multiples of MSP_DIST_CHUNK nearest the parts' boundaries
// (so the reductions keep one process's bits, of the permuted matrix P G P^T).
#include "dist.h"

#include <stdlib.h>
#include <string.h>

#ifdef MSP_HAVE_METIS
#include <metis.h>
#endif

int msp__dist_have_metis(void) {
#ifdef MSP_HAVE_METIS
  return 1;
#else
  return 0;
#endif
}

// The ranks' row boundaries: rank r starts at the chunk multiple nearest the first row of part r
// (cum[r]), each rank at least one chunk.
static void cut(int64_t rows, const int64_t *cum, int size, int64_t *off) {
  const int64_t C = MSP__RED_CHUNK, chunks = (rows + C - 1) / C;
  off[0] = 0;
  int64_t prev = 0;
  for (int r = 1; r < size; r++) {
    int64_t a = (cum[r] + C / 2) / C;
    const int64_t lo = prev + 1, hi = chunks - (size - r);
    a = a < lo ? lo : a > hi ? hi : a;
    off[r] = a * C;
    prev = a;
  }
  off[size] = rows;
}

#ifdef MSP_HAVE_METIS
static int cmp_idx(const void *a, const void *b) {
  const idx_t x = *(const idx_t *)a, y = *(const idx_t *)b;
  return (x > y) - (x < y);
}

msp_status msp__dist_metis(const msp_matrix G, int size, int32_t *perm, int64_t *off) {
  msp_status st = MSP_SUCCESS;
  const int64_t n = G->rows, nnz = G->nnz;
  idx_t *xadj = NULL, *adj = NULL, *vw = NULL, *part = NULL;
  int64_t *fill = NULL, *cum = NULL;
  if (n > (int64_t)IDX_MAX || 2 * nnz > (int64_t)IDX_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_dist_matrix_scatter: G (%lld rows, %lld entries) exceeds METIS's "
                      "%d-bit indices",
                      (long long)n, (long long)nnz, (int)IDXTYPEWIDTH);
  MSP_TRY(MSP_ALLOC_ZERO(xadj, n + 1, "METIS graph"));
  MSP_TRY(MSP_ALLOC(adj, 2 * nnz > 0 ? 2 * nnz : 1, "METIS graph"));
  MSP_TRY(MSP_ALLOC(vw, n > 0 ? n : 1, "METIS graph"));
  MSP_TRY(MSP_ALLOC(part, n > 0 ? n : 1, "METIS parts"));
  MSP_TRY(MSP_ALLOC(fill, n + 1, "METIS graph"));
  MSP_TRY(MSP_ALLOC_ZERO(cum, size + 1, "METIS parts"));
  // both directions of every off-diagonal entry, then each row sorted and made unique
  for (int64_t i = 0; i < n; i++)
    for (int64_t p = G->rowptr[i]; p < G->rowptr[i + 1]; p++)
      if (G->colind[p] != i) {
        xadj[i + 1]++;
        xadj[G->colind[p] + 1]++;
      }
  for (int64_t i = 0; i < n; i++)
    xadj[i + 1] += xadj[i];
  for (int64_t i = 0; i <= n; i++)
    fill[i] = xadj[i];
  for (int64_t i = 0; i < n; i++)
    for (int64_t p = G->rowptr[i]; p < G->rowptr[i + 1]; p++) {
      const int64_t j = G->colind[p];
      if (j == i) continue;
      adj[fill[i]++] = (idx_t)j;
      adj[fill[j]++] = (idx_t)i;
    }
  {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
      const int64_t a = xadj[i], b = xadj[i + 1];
      qsort(adj + a, (size_t)(b - a), sizeof *adj, cmp_idx);
      xadj[i] = (idx_t)k;
      for (int64_t p = a; p < b; p++)
        if (p == a || adj[p] != adj[p - 1]) adj[k++] = adj[p];
      // balance by the rows' stored entries (an empty row still weighs 1)
      const int64_t w = G->rowptr[i + 1] - G->rowptr[i];
      vw[i] = (idx_t)(w > 0 ? w : 1);
    }
    xadj[n] = (idx_t)k;
  }
  if (size == 1) {
    for (int64_t i = 0; i < n; i++)
      part[i] = 0;
  } else {
    idx_t nv = (idx_t)n, ncon = 1, np = (idx_t)size, cutv = 0;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = 1; // deterministic: the same parts on every run
    options[METIS_OPTION_NUMBERING] = 0;
    const int rc = METIS_PartGraphKway(&nv, &ncon, xadj, adj, vw, NULL, NULL, &np, NULL, NULL,
                                       options, &cutv, part);
    if (rc != METIS_OK) {
      st = msp__error(rc == METIS_ERROR_MEMORY ? MSP_ERR_OUT_OF_MEMORY : MSP_ERR_INTERNAL,
                      "msp_dist_matrix_scatter: METIS_PartGraphKway failed (%d) on %lld rows "
                      "into %d parts",
                      rc, (long long)n, size);
      goto exit;
    }
  }
  // rows by (part, original row): a counting sort, stable
  for (int64_t i = 0; i < n; i++)
    cum[part[i] + 1]++;
  for (int r = 0; r < size; r++)
    cum[r + 1] += cum[r];
  for (int r = 0; r <= size; r++)
    fill[r] = cum[r];
  for (int64_t i = 0; i < n; i++)
    perm[fill[part[i]]++] = (int32_t)i;
  cut(n, cum, size, off);
exit:
  msp__free(xadj);
  msp__free(adj);
  msp__free(vw);
  msp__free(part);
  msp__free(fill);
  msp__free(cum);
  return st;
}
#else
msp_status msp__dist_metis(const msp_matrix G, int size, int32_t *perm, int64_t *off) {
  (void)G, (void)size, (void)perm, (void)off, (void)cut;
  return msp__error(MSP_ERR_NOT_SUPPORTED,
                    "msp_dist_set_partition: mixsparse was built without METIS (Debian: "
                    "libmetis-dev): only MSP_DIST_PARTITION_BLOCKS");
}
#endif

typedef struct {
  int32_t c;
  double v;
} colval;

static int cmp_colval(const void *a, const void *b) {
  const int32_t x = ((const colval *)a)->c, y = ((const colval *)b)->c;
  return (x > y) - (x < y);
}

msp_status msp__dist_permute(const msp_matrix G, const int32_t *perm, int64_t **prp, int32_t **pci,
                             double **pval) {
  msp_status st = MSP_SUCCESS;
  const int64_t n = G->rows, nnz = G->nnz;
  int32_t *inv = NULL;
  colval *row = NULL;
  int64_t *rp = NULL, maxlen = 1;
  int32_t *ci = NULL;
  double *val = NULL;
  *prp = NULL;
  *pci = NULL;
  *pval = NULL;
  for (int64_t i = 0; i < n; i++)
    if (G->rowptr[i + 1] - G->rowptr[i] > maxlen) maxlen = G->rowptr[i + 1] - G->rowptr[i];
  MSP_TRY(MSP_ALLOC(inv, n, "permuted matrix"));
  MSP_TRY(MSP_ALLOC(row, maxlen, "permuted matrix"));
  MSP_TRY(MSP_ALLOC(rp, n + 1, "permuted matrix"));
  MSP_TRY(MSP_ALLOC(ci, nnz > 0 ? nnz : 1, "permuted matrix"));
  MSP_TRY(MSP_ALLOC(val, nnz > 0 ? nnz : 1, "permuted matrix"));
  for (int64_t i = 0; i < n; i++)
    inv[perm[i]] = (int32_t)i;
  rp[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t a = G->rowptr[perm[i]], len = G->rowptr[perm[i] + 1] - a;
    for (int64_t p = 0; p < len; p++) {
      row[p].c = inv[G->colind[a + p]];
      row[p].v = G->val[a + p];
    }
    qsort(row, (size_t)len, sizeof *row, cmp_colval); // columns are unique: the order is total
    for (int64_t p = 0; p < len; p++) {
      ci[rp[i] + p] = row[p].c;
      val[rp[i] + p] = row[p].v;
    }
    rp[i + 1] = rp[i] + len;
  }
  *prp = rp;
  *pci = ci;
  *pval = val;
  rp = NULL;
  ci = NULL;
  val = NULL;
exit:
  msp__free(inv);
  msp__free(row);
  msp__free(rp);
  msp__free(ci);
  msp__free(val);
  return st;
}

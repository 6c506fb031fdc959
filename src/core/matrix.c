// matrix.c: matrix handles: creation from CSR or triples, validation, analysis, kernel rule.
#include "convert.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// Rule of the adaptive SpMV design notes ("Design Philosophy"): mean row length below 4 -> scalar
// (too little work per row for a group of threads); skewness (row_max / row_mean) below 10 ->
// vector (balanced rows keep a warp busy); otherwise merge-path (perfect work partitioning).
#define MSP__SCALAR_MEAN_BELOW 4.0
#define MSP__VECTOR_SKEW_BELOW 10.0
// One refinement: short rows of near-equal length (mean below 6, skewness below 1.5) also go to
// the scalar kernel, which runs near the read bandwidth there: a thread's few entries share one or
// two cache lines, which its neighbours' rows continue.
// The same holds for short rows whose spread is small (row_cv <= UNIFORM_CV) even when the
// longest row is up to about 3 times the mean (meshes: delaunay, crack, dw8192): a thread's row
// still ends with its neighbours', so the warp's loads stay together and no lane waits. It is the
// spread that decides, not the longest row: docs/performance.md ("The AUTO rule on the
// collection") has the kernels side by side.
#define MSP__SCALAR_UNIFORM_MEAN_BELOW 6.0
#define MSP__SCALAR_UNIFORM_SKEW_BELOW 1.5
#define MSP__SCALAR_UNIFORM_CV 0.35
// A second one: on large near-banded matrices (at least 2^17 rows, no more occupied diagonals
// than rows) rows of near-equal length up to a mean of 9 go to the scalar kernel too, which was
// faster there on 7-point stencils and narrow bands. The collection's meshes of this kind have
// fewer rows and keep the choice of the rule above.
#define MSP__SCALAR_BANDED_MEAN_BELOW 9.0
// Both refinements below for large near-banded matrices (at least this many rows, and no more
// occupied diagonals than rows: consecutive rows read nearby columns).
#define MSP__BANDED_MIN_ROWS 131072
// Values stored in 2 bytes (f16, bf16, fx16): where the rule gives the vector kernel, rows are
// shorter than 32 on average, there are at least 2^17 rows and no more occupied diagonals than
// rows (near-banded: consecutive rows read nearby columns), the scalar kernel. A thread's row of
// 2-byte values spans few cache lines, its neighbours' rows continue them, and a load of x reads
// the same column offset of 32 consecutive rows; the vector kernel is bound by its gathers of x
// there (csr.cuh). Where the conditions fail the vector kernel stays faster: on scattered
// columns, on rows of 64, and on matrices too small to fill the GPU with a thread per row. The
// rule's one known loss is on rows that fill the vector groups exactly (banded rows of 16), for
// f16 though not fx16. Wider values stay with the vector kernel, as do CPMS values, whose
// segments read may change after the conversion.
#define MSP__NARROW_SCALAR_MEAN_BELOW 32.0
// Two more from the collection (docs/performance.md, the SpMV collection table): short rows of very
// unequal length (mean below 4, skewness at least VECTOR_SKEW_BELOW, as in web graphs with a few
// hubs) go to the merge path, not the scalar kernel, whose thread on a hub's row holds up its whole
// block; and few long rows (fewer than VECTOR_MIN_ROWS rows, mean at least MERGE_FEW_ROWS_MEAN)
// too: a group per row leaves most of the GPU idle there, the merge path splits the rows over all
// of it.
#define MSP__VECTOR_MIN_ROWS 1024
#define MSP__MERGE_FEW_ROWS_MEAN 32.0

msp_status msp__matrix_alloc(msp_context ctx, int64_t rows, int64_t cols, int64_t nnz,
                             msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  msp_matrix A = NULL;
  *out = NULL;
  if (rows < 0 || cols < 0 || nnz < 0)
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "matrix of %lld x %lld with %lld nonzeros",
                      (long long)rows, (long long)cols, (long long)nnz);
  if (rows > INT32_MAX || cols > INT32_MAX)
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "matrix of %lld x %lld: dimensions must fit in 32-bit indices",
                      (long long)rows, (long long)cols);
  // The CSR arrays and the analysis bitmaps (rows + cols bits), before any of them is allocated:
  // an impossible size fails at once instead of after committing gigabytes.
  {
    size_t need = msp__bytes_mul_add((size_t)rows + 1, sizeof(int64_t), sizeof *A);
    need = msp__bytes_mul_add((size_t)nnz, sizeof(int32_t) + sizeof(double), need);
    need = msp__bytes_mul_add(((size_t)rows + (size_t)cols) / 8 + 1, 2, need);
    // the format analysis's marks of diagonals (HDIA's count: an int32 per row and column)
    need = msp__bytes_mul_add((size_t)rows + (size_t)cols + 1, sizeof(int32_t), need);
    char what[96];
    snprintf(what, sizeof what, "a %lld x %lld matrix with %lld nonzeros", (long long)rows,
             (long long)cols, (long long)nnz);
    MSP_TRY(msp__memory_check(need, what));
  }
  MSP_TRY(MSP_ALLOC_ZERO(A, 1, "matrix"));
  A->magic = MSP__MAGIC_MATRIX;
  A->ctx = ctx;
  msp__context_attach(ctx);
  A->rows = rows;
  A->cols = cols;
  A->nnz = nnz;
  A->format = MSP_FORMAT_CSR;
  A->kernel = MSP_KERNEL_AUTO;
  A->precision = MSP_PRECISION_F64;
  A->opts = msp_convert_options_default();
  MSP_TRY(MSP_ALLOC_ZERO(A->rowptr, rows + 1, "matrix row pointers"));
  MSP_TRY(MSP_ALLOC(A->colind, nnz, "matrix column indices"));
  MSP_TRY(MSP_ALLOC(A->val, nnz, "matrix values"));
  *out = A;
  A = NULL;
exit:
  msp_matrix_destroy(&A);
  return st;
}

msp_status msp_matrix_destroy(msp_matrix *A) {
  if (!A || !*A) return MSP_SUCCESS;
  msp_matrix M = *A;
  if (!msp__matrix_ok(M)) return msp__check_matrix(M, "msp_matrix_destroy", "*A");
  if (M->dev && M->ctx && M->ctx->backend->matrix_free) M->ctx->backend->matrix_free(M);
  if (M->fmt) msp__format_free(M->format, M->fmt);
  msp__matrix_prec_free(M);
  msp__free(M->rowptr);
  msp__free(M->colind);
  msp__free(M->val);
  M->magic = MSP__MAGIC_FREED;
  msp__context_detach(M->ctx);
  msp__free(M);
  *A = NULL;
  return MSP_SUCCESS;
}

// Large and near-banded, the condition of both refinements above.
static int large_near_banded(const msp_matrix_stats *s) {
  return s->rows >= MSP__BANDED_MIN_ROWS && s->diagonals <= s->rows;
}

msp_kernel msp_choose_kernel(const msp_matrix_stats *s, char *reason, size_t n) {
  msp_kernel k;
  char buf[200];
  if (!s) {
    msp__error(MSP_ERR_INVALID_ARGUMENT, "msp_choose_kernel: stats is NULL");
    if (reason && n) snprintf(reason, n, "no statistics (stats is NULL): no kernel chosen");
    return MSP_KERNEL_AUTO;
  }
  if (s->nnz > 0 && s->skewness >= MSP__VECTOR_SKEW_BELOW) {
    k = MSP_KERNEL_MERGE;
    snprintf(buf, sizeof buf,
             "skewness (max/mean row length) %.2f >= %.0f: merge-path (equal work per thread)",
             s->skewness, MSP__VECTOR_SKEW_BELOW);
  } else if (s->nnz > 0 && s->rows < MSP__VECTOR_MIN_ROWS &&
             s->row_mean >= MSP__MERGE_FEW_ROWS_MEAN) {
    k = MSP_KERNEL_MERGE;
    snprintf(buf, sizeof buf,
             "%lld rows < %d of mean length %.2f >= %.0f: merge-path (the rows split over the "
             "whole GPU)",
             (long long)s->rows, MSP__VECTOR_MIN_ROWS, s->row_mean, MSP__MERGE_FEW_ROWS_MEAN);
  } else if (s->nnz == 0 || s->row_mean < MSP__SCALAR_MEAN_BELOW) {
    k = MSP_KERNEL_SCALAR;
    snprintf(buf, sizeof buf, "mean row length %.2f < %.0f: scalar (a thread per row)", s->row_mean,
             MSP__SCALAR_MEAN_BELOW);
  } else if (s->row_mean < MSP__SCALAR_UNIFORM_MEAN_BELOW &&
             s->skewness < MSP__SCALAR_UNIFORM_SKEW_BELOW) {
    k = MSP_KERNEL_SCALAR;
    snprintf(buf, sizeof buf,
             "short near-uniform rows (mean %.2f < %.0f, skewness %.2f < %.1f): scalar (a "
             "thread per row)",
             s->row_mean, MSP__SCALAR_UNIFORM_MEAN_BELOW, s->skewness,
             MSP__SCALAR_UNIFORM_SKEW_BELOW);
  } else if (s->row_mean < MSP__SCALAR_UNIFORM_MEAN_BELOW && s->row_cv <= MSP__SCALAR_UNIFORM_CV) {
    k = MSP_KERNEL_SCALAR;
    snprintf(buf, sizeof buf,
             "short rows of small spread (mean %.2f < %.0f, row_cv %.2f <= %.2f): scalar (a "
             "thread per row)",
             s->row_mean, MSP__SCALAR_UNIFORM_MEAN_BELOW, s->row_cv, MSP__SCALAR_UNIFORM_CV);
  } else if (s->row_mean < MSP__SCALAR_BANDED_MEAN_BELOW &&
             s->skewness < MSP__SCALAR_UNIFORM_SKEW_BELOW && large_near_banded(s)) {
    k = MSP_KERNEL_SCALAR;
    snprintf(buf, sizeof buf,
             "short near-uniform rows on a large near-banded matrix (mean %.2f < %.0f, skewness "
             "%.2f < %.1f, %lld rows, %lld occupied diagonals): scalar (a thread per row)",
             s->row_mean, MSP__SCALAR_BANDED_MEAN_BELOW, s->skewness,
             MSP__SCALAR_UNIFORM_SKEW_BELOW, (long long)s->rows, (long long)s->diagonals);
  } else {
    k = MSP_KERNEL_VECTOR;
    snprintf(buf, sizeof buf,
             "mean row length %.2f >= %.0f and skewness (max/mean row length) %.2f < %.0f: "
             "vector (a group of threads per row)",
             s->row_mean, MSP__SCALAR_MEAN_BELOW, s->skewness, MSP__VECTOR_SKEW_BELOW);
  }
  if (reason && n) snprintf(reason, n, "%s", buf);
  return k;
}

msp_kernel msp__choose_kernel_prec(const msp_matrix_stats *s, msp_precision p, char *reason,
                                   size_t n) {
  msp_kernel k = msp_choose_kernel(s, reason, n);
  if (k == MSP_KERNEL_VECTOR &&
      (p == MSP_PRECISION_F16 || p == MSP_PRECISION_BF16 || p == MSP_PRECISION_FX16) &&
      s->row_mean < MSP__NARROW_SCALAR_MEAN_BELOW && large_near_banded(s)) {
    k = MSP_KERNEL_SCALAR;
    if (reason && n)
      snprintf(reason, n,
               "%s values (2 bytes) on %lld rows of mean length %.2f < %.0f with %lld occupied "
               "diagonals (near-banded): scalar (a thread per row)",
               msp_precision_name(p), (long long)s->rows, s->row_mean,
               MSP__NARROW_SCALAR_MEAN_BELOW, (long long)s->diagonals);
  }
  return k;
}

msp_status msp__analyze(msp_matrix A) {
  msp_matrix_stats *s = &A->stats;
  memset(s, 0, sizeof *s);
  s->rows = A->rows;
  s->cols = A->cols;
  s->nnz = A->nnz;
  if (A->rows == 0) return MSP_SUCCESS;
  int64_t rmin = INT64_MAX, rmax = 0, empty = 0;
  long double sum2 = 0;
  for (int64_t i = 0; i < A->rows; i++) {
    int64_t len = A->rowptr[i + 1] - A->rowptr[i];
    if (len < rmin) rmin = len;
    if (len > rmax) rmax = len;
    if (len == 0) empty++;
    sum2 += (long double)len * (long double)len;
  }
  s->row_min = rmin;
  s->row_max = rmax;
  s->empty_rows = empty;
  s->row_mean = (double)A->nnz / (double)A->rows;
  long double var = sum2 / A->rows - (long double)s->row_mean * s->row_mean;
  s->row_std = var > 0 ? sqrt((double)var) : 0.0;
  s->row_cv = s->row_mean > 0 ? s->row_std / s->row_mean : 0.0;
  s->skewness = s->row_mean > 0 ? (double)rmax / s->row_mean : 0.0;
  if (A->nnz == 0) return MSP_SUCCESS;
  s->ell_fill = ((double)A->rows * (double)rmax - (double)A->nnz) / (double)A->nnz;
  // Occupied diagonals: offsets j - i in -(rows-1)..cols-1, one bit each.
  int64_t span = A->rows + A->cols;
  uint8_t *seen = msp__calloc((size_t)(span + 7) / 8, 1);
  if (!seen)
    return msp__error(MSP_ERR_OUT_OF_MEMORY, "matrix analysis: cannot allocate %lld bytes",
                      (long long)(span + 7) / 8);
  int64_t ndiag = 0, lower = 0, upper = 0;
  long double asum = 0, asum2 = 0;
  for (int64_t i = 0; i < A->rows; i++) {
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      int64_t d = (int64_t)A->colind[k] - i;
      if (-d > lower) lower = -d;
      if (d > upper) upper = d;
      int64_t b = d + A->rows;
      if (!(seen[b >> 3] & (1u << (b & 7)))) {
        seen[b >> 3] |= (uint8_t)(1u << (b & 7));
        ndiag++;
      }
      long double a = fabs(A->val[k]);
      asum += a;
      asum2 += a * a;
    }
  }
  msp__free(seen);
  s->diagonals = ndiag;
  s->lower_bandwidth = lower;
  s->upper_bandwidth = upper;
  s->bandwidth = lower > upper ? lower : upper;
  s->dia_fill = ((double)A->rows * (double)s->diagonals - (double)A->nnz) / (double)A->nnz;
  s->abs_mean = (double)(asum / A->nnz);
  long double avar = asum2 / A->nnz - (asum / A->nnz) * (asum / A->nnz);
  s->abs_std = avar > 0 ? sqrt((double)avar) : 0.0;
  return MSP_SUCCESS;
}

msp_status msp__matrix_finish(msp_matrix *A) {
  msp_status st = MSP_SUCCESS;
  msp_matrix M = *A;
  MSP_TRY(msp__analyze(M));
  MSP_TRY(msp__analyze_formats(M, &M->stats));
  if (M->kernel == MSP_KERNEL_AUTO || M->format == MSP_FORMAT_CSR) {
    char why[200];
    msp_kernel k = msp_choose_kernel(&M->stats, why, sizeof why);
    if (M->kernel == MSP_KERNEL_AUTO) {
      M->kernel = k;
      snprintf(M->reason, sizeof M->reason, "csr: %s", why);
    }
  }
  if (M->ctx && M->ctx->backend->matrix_upload) MSP_TRY(M->ctx->backend->matrix_upload(M->ctx, M));
exit:
  if (st != MSP_SUCCESS) msp_matrix_destroy(A);
  return st;
}

// Stable merge sort of (col, val) pairs by column (stability keeps duplicates in input order,
// so their sum is the same every time).
static void sort_row(int32_t *col, double *val, int64_t n, int32_t *tc, double *tv) {
  if (n < 2) return;
  int sorted = 1;
  for (int64_t k = 1; k < n && sorted; k++)
    sorted = col[k - 1] <= col[k];
  if (sorted) return;
  if (n <= 16) {
    for (int64_t k = 1; k < n; k++) {
      int32_t c = col[k];
      double v = val[k];
      int64_t j = k - 1;
      while (j >= 0 && col[j] > c) {
        col[j + 1] = col[j];
        val[j + 1] = val[j];
        j--;
      }
      col[j + 1] = c;
      val[j + 1] = v;
    }
    return;
  }
  int64_t h = n / 2;
  sort_row(col, val, h, tc, tv);
  sort_row(col + h, val + h, n - h, tc, tv);
  int64_t a = 0, b = h, o = 0;
  while (a < h && b < n) {
    if (col[b] < col[a]) {
      tc[o] = col[b];
      tv[o++] = val[b++];
    } else {
      tc[o] = col[a];
      tv[o++] = val[a++];
    }
  }
  while (a < h) {
    tc[o] = col[a];
    tv[o++] = val[a++];
  }
  while (b < n) {
    tc[o] = col[b];
    tv[o++] = val[b++];
  }
  memcpy(col, tc, (size_t)n * sizeof *col);
  memcpy(val, tv, (size_t)n * sizeof *val);
}

// Sort every row by column and sum duplicates in place; updates rowptr and A->nnz. With
// `finite` set, a sum of finite duplicates that is not finite (1e308 + 1e308) stops the merge
// with MSP_ERR_NONFINITE and no message, *bad_row and *bad_col (0-based) naming the entry, for
// the caller to name the input's entries; the input said nothing non-finite, so neither may the
// matrix without the caller's opt-in.
static msp_status sort_and_merge(msp_matrix A, int finite, int64_t *bad_row, int32_t *bad_col) {
  msp_status st = MSP_SUCCESS;
  int32_t *tc = NULL;
  double *tv = NULL;
  int64_t maxlen = 0;
  for (int64_t i = 0; i < A->rows; i++) {
    int64_t len = A->rowptr[i + 1] - A->rowptr[i];
    if (len > maxlen) maxlen = len;
  }
  MSP_TRY(MSP_ALLOC(tc, maxlen, "row sort buffer"));
  MSP_TRY(MSP_ALLOC(tv, maxlen, "row sort buffer"));
  int64_t out = 0;
  for (int64_t i = 0; i < A->rows; i++) {
    int64_t b = A->rowptr[i], e = A->rowptr[i + 1];
    sort_row(A->colind + b, A->val + b, e - b, tc, tv);
    A->rowptr[i] = out;
    for (int64_t k = b; k < e; k++) {
      if (out > A->rowptr[i] && A->colind[out - 1] == A->colind[k]) {
        const double sum = A->val[out - 1] + A->val[k];
        if (finite && !isfinite(sum) && isfinite(A->val[out - 1]) && isfinite(A->val[k])) {
          *bad_row = i;
          *bad_col = A->colind[k];
          st = MSP_ERR_NONFINITE;
          goto exit;
        }
        A->val[out - 1] = sum;
      } else {
        A->colind[out] = A->colind[k];
        A->val[out] = A->val[k];
        out++;
      }
    }
  }
  A->rowptr[A->rows] = out;
  A->nnz = out;
exit:
  msp__free(tc);
  msp__free(tv);
  return st;
}

msp_status msp__matrix_from_triples(msp_context ctx, int64_t rows, int64_t cols, int64_t nnz,
                                    const int32_t *row, const int32_t *col, const double *val,
                                    unsigned flags, int64_t bad[2], msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  msp_matrix A = NULL;
  int64_t *next = NULL;
  int32_t bad_col = -1;
  *out = NULL;
  bad[0] = bad[1] = -1;
  MSP_TRY(msp__matrix_alloc(ctx, rows, cols, nnz, &A));
  for (int64_t k = 0; k < nnz; k++)
    A->rowptr[row[k] + 1]++;
  for (int64_t i = 0; i < rows; i++)
    A->rowptr[i + 1] += A->rowptr[i];
  MSP_TRY(MSP_ALLOC(next, rows + 1, "row fill positions"));
  memcpy(next, A->rowptr, (size_t)(rows + 1) * sizeof *next);
  for (int64_t k = 0; k < nnz; k++) {
    int64_t p = next[row[k]]++;
    A->colind[p] = col[k];
    A->val[p] = val[k];
  }
  MSP_FREE(next); // 8 bytes a row, not held through the analysis

  st = sort_and_merge(A, !(flags & MSP_READ_ALLOW_NONFINITE), &bad[0], &bad_col);
  if (st == MSP_ERR_NONFINITE) {
    bad[1] = bad_col;
    st = msp__error(MSP_ERR_NONFINITE,
                    "the entries at row %lld, column %lld sum to a value that is not finite "
                    "(MSP_READ_ALLOW_NONFINITE accepts it)",
                    (long long)bad[0] + 1, (long long)bad[1] + 1);
  }
  if (st != MSP_SUCCESS) goto exit;
  MSP_TRY(msp__matrix_finish(&A));
  *out = A;
  A = NULL;
exit:
  msp__free(next);
  msp_matrix_destroy(&A);
  return st;
}

msp_status msp_matrix_from_csr(msp_context ctx, int64_t rows, int64_t cols, const int64_t *rowptr,
                               const int32_t *colind, const double *values, unsigned flags,
                               msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  msp_matrix A = NULL;
  MSP_CHECK_ARG(out, "msp_matrix_from_csr: out is NULL");
  *out = NULL;
  MSP_TRY(msp__check_context(ctx, "msp_matrix_from_csr", "ctx"));
  MSP_CHECK_ARG(rows >= 0 && cols >= 0, "msp_matrix_from_csr: negative size %lld x %lld",
                (long long)rows, (long long)cols);
  MSP_CHECK_ARG(rowptr, "msp_matrix_from_csr: rowptr is NULL");
  if (rowptr[0] != 0)
    return msp__error(MSP_ERR_INVALID_MATRIX, "msp_matrix_from_csr: rowptr[0] = %lld, not 0",
                      (long long)rowptr[0]);
  for (int64_t i = 0; i < rows; i++)
    if (rowptr[i + 1] < rowptr[i])
      return msp__error(MSP_ERR_INVALID_MATRIX,
                        "msp_matrix_from_csr: rowptr decreases at row %lld (%lld -> %lld)",
                        (long long)i, (long long)rowptr[i], (long long)rowptr[i + 1]);
  int64_t nnz = rowptr[rows];
  MSP_CHECK_ARG(nnz == 0 || (colind && values),
                "msp_matrix_from_csr: colind or values is NULL with %lld nonzeros", (long long)nnz);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
      if (colind[k] < 0 || colind[k] >= cols)
        return msp__error(MSP_ERR_INVALID_MATRIX,
                          "msp_matrix_from_csr: colind[%lld] = %d (row %lld) outside 0..%lld",
                          (long long)k, colind[k], (long long)i, (long long)cols - 1);
      if (!(flags & MSP_READ_ALLOW_NONFINITE) && !isfinite(values[k]))
        return msp__error(MSP_ERR_NONFINITE,
                          "msp_matrix_from_csr: values[%lld] (row %lld, column %d) is %g",
                          (long long)k, (long long)i, colind[k], values[k]);
    }
  MSP_TRY(msp__matrix_alloc(ctx, rows, cols, nnz, &A));
  memcpy(A->rowptr, rowptr, (size_t)(rows + 1) * sizeof *rowptr);
  if (nnz) {
    memcpy(A->colind, colind, (size_t)nnz * sizeof *colind);
    memcpy(A->val, values, (size_t)nnz * sizeof *values);
  }
  {
    int64_t bi = -1;
    int32_t bj = -1;
    const int threads_prev = msp__threads_enter(ctx);
    st = sort_and_merge(A, !(flags & MSP_READ_ALLOW_NONFINITE), &bi, &bj);
    msp__threads_leave(threads_prev);
    if (st == MSP_ERR_NONFINITE) {
      // Name the caller's entries of (bi, bj), in their order, and the first non-finite sum.
      char list[256];
      size_t used = 0;
      int shown = 0;
      double sum = 0.0;
      int64_t at = -1;
      list[0] = '\0';
      for (int64_t k = rowptr[bi]; k < rowptr[bi + 1]; k++) {
        if (colind[k] != bj) continue;
        sum += values[k];
        if (at < 0 && !isfinite(sum)) at = k;
        if (shown < 4 && used < sizeof list) {
          used += (size_t)snprintf(list + used, sizeof list - used, "%svalues[%lld] = %.17g",
                                   shown ? ", " : "", (long long)k, values[k]);
          shown++;
        }
      }
      st = msp__error(MSP_ERR_NONFINITE,
                      "msp_matrix_from_csr: the duplicates of row %lld, column %d (%s%s) sum to "
                      "%g at values[%lld]; each is finite (MSP_READ_ALLOW_NONFINITE accepts it)",
                      (long long)bi, bj, list, shown == 4 ? ", ..." : "", sum, (long long)at);
    }
    if (st != MSP_SUCCESS) goto exit;
  }
  MSP_TRY_THREADS(ctx, msp__matrix_finish(&A));
  *out = A;
  A = NULL;
exit:
  msp_matrix_destroy(&A);
  return st;
}

int64_t msp_matrix_rows(const msp_matrix A) {
  return msp__matrix_ok(A) ? A->rows : 0;
}
int64_t msp_matrix_cols(const msp_matrix A) {
  return msp__matrix_ok(A) ? A->cols : 0;
}
int64_t msp_matrix_nnz(const msp_matrix A) {
  return msp__matrix_ok(A) ? A->nnz : 0;
}
msp_format msp_matrix_format(const msp_matrix A) {
  return msp__matrix_ok(A) ? A->format : MSP_FORMAT_CSR;
}
msp_kernel msp_matrix_kernel(const msp_matrix A) {
  return msp__matrix_ok(A) ? A->kernel : MSP_KERNEL_AUTO;
}
msp_precision msp_matrix_precision(const msp_matrix A) {
  return msp__matrix_ok(A) ? A->precision : MSP_PRECISION_F64;
}
const char *msp_matrix_choice_reason(const msp_matrix A) {
  return msp__matrix_ok(A) ? A->reason : "";
}

size_t msp_matrix_bytes(const msp_matrix A) {
  if (!msp__matrix_ok(A)) return 0;
  return msp__format_bytes(A);
}

msp_status msp_matrix_get_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind,
                              double *values) {
  msp_status st = msp__check_matrix(A, "msp_matrix_get_csr", "A");
  if (st != MSP_SUCCESS) return st;
  if (rowptr) memcpy(rowptr, A->rowptr, (size_t)(A->rows + 1) * sizeof *rowptr);
  if (colind && A->nnz) memcpy(colind, A->colind, (size_t)A->nnz * sizeof *colind);
  if (values && A->nnz) memcpy(values, A->val, (size_t)A->nnz * sizeof *values);
  return MSP_SUCCESS;
}

msp_status msp_matrix_set_kernel(msp_matrix A, msp_kernel kernel) {
  msp_status st = msp__check_matrix(A, "msp_matrix_set_kernel", "A");
  if (st != MSP_SUCCESS) return st;
  MSP_CHECK_ARG((unsigned)kernel < MSP_KERNEL_COUNT, "msp_matrix_set_kernel: unknown kernel %d",
                (int)kernel);
  if (A->format != MSP_FORMAT_CSR)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_matrix_set_kernel: kernels apply to CSR matrices, this one is %s",
                      msp_format_name(A->format));
  char why[200];
  if (kernel == MSP_KERNEL_AUTO) {
    A->kernel = msp__choose_kernel_prec(&A->stats, A->precision, why, sizeof why);
    snprintf(A->reason, sizeof A->reason, "csr: %s", why);
  } else {
    A->kernel = kernel;
    snprintf(A->reason, sizeof A->reason, "csr with the %s kernel: named by the caller",
             msp_kernel_name(kernel));
  }
  return MSP_SUCCESS;
}

msp_status msp_matrix_analyze(const msp_matrix A, msp_matrix_stats *stats) {
  msp_status st = msp__check_matrix(A, "msp_matrix_analyze", "A");
  if (st != MSP_SUCCESS) return st;
  MSP_CHECK_ARG(stats, "msp_matrix_analyze: stats is NULL");
  *stats = A->stats;
  return MSP_SUCCESS;
}

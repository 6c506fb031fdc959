// bdmp.c: BDMP conversion: 16x16 tiles, per-tile precision (threshold or error-bounded), then
// PBP here and TCKI in bdmp_tcki.c; the report and the PBP record.
#include "bdmp.h"

#include "formats.h"
#include "precision.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double cost;
  int64_t t;
} tile_cost;

static int cost_cmp(const void *a, const void *b) {
  const tile_cost *x = (const tile_cost *)a, *y = (const tile_cost *)b;
  if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
  return x->t < y->t ? -1 : x->t > y->t; // ties by position: deterministic
}

// fp32 holds a value with relative error at most u32 only in its normal range (or as an exact
// zero); a tile with anything outside stays fp64 in every mode (subnormal fp32 values lose
// relative accuracy, values beyond FLT_MAX become Inf).
static int fits_f32(double a) {
  double m = fabs(a);
  return m == 0.0 || (m >= FLT_MIN && m <= FLT_MAX);
}

// |a| if rounding a to fp32 changes it (its contribution to F_i), 0 if fp32 holds it exactly.
static double f32_cost(double a) {
  return (double)msp_f32_from_double(a) == a ? 0.0 : fabs(a);
}
// The same with exact values counted like any other (the paper's rule, bdmp_paper_rule).
static double f32_cost_paper(double a) {
  return fabs(a);
}

// ---- deterministic sums (bdmp.h) ---------------------------------------------------------------
static double sum_term(double a, int mode, double mean) {
  if (mode == MSP__BDMP_SUM_ID) return a;
  if (mode == MSP__BDMP_SUM_ABS) return fabs(a);
  const double d = fabs(a) - mean;
  return d * d;
}

// One chunk of terms v[0 .. n) (n <= MSP__BDMP_SUM_CHUNK), as a warp sums it.
static double chunk_sum(const double *v, int64_t n, int mode, double mean) {
  double s[32], t[32];
  for (int l = 0; l < 32; l++) {
    s[l] = 0.0;
    for (int64_t k = l; k < n; k += 32)
      s[l] += sum_term(v[k], mode, mean);
  }
  for (int off = 16; off > 0; off >>= 1) {
    for (int l = 0; l < 32; l++)
      t[l] = s[l] + s[l ^ off];
    memcpy(s, t, sizeof s);
  }
  return s[0];
}

static msp_status det_sum(const double *v, int64_t n, int mode, double mean, double *out) {
  msp_status st = MSP_SUCCESS;
  double *buf[2] = {NULL, NULL};
  const int64_t c = MSP__BDMP_SUM_CHUNK;
  *out = 0.0;
  if (n == 0) return MSP_SUCCESS;
  MSP_TRY(MSP_ALLOC(buf[0], (n + c - 1) / c, "BDMP sum partials"));
  MSP_TRY(MSP_ALLOC(buf[1], (n + c - 1) / c, "BDMP sum partials"));
  for (int level = 0;; level++) {
    double *part = buf[level & 1]; // the other buffer holds this level's terms from level 1 on
    const int64_t nc = (n + c - 1) / c;
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < nc; q++)
      part[q] = chunk_sum(v + q * c, q * c + c < n ? c : n - q * c, mode, mean);
    if (nc == 1) {
      *out = part[0];
      break;
    }
    v = part;
    n = nc;
    mode = MSP__BDMP_SUM_ID;
  }
exit:
  MSP_FREE(buf[0]);
  MSP_FREE(buf[1]);
  return st;
}

msp_status msp__bdmp_lambda(const double *val, int64_t nnz, double f, double *lambda) {
  msp_status st = MSP_SUCCESS;
  double sum = 0, sq = 0;
  *lambda = 0;
  if (nnz == 0) return MSP_SUCCESS;
  MSP_TRY(det_sum(val, nnz, MSP__BDMP_SUM_ABS, 0.0, &sum));
  const double mean = sum / (double)nnz;
  MSP_TRY(det_sum(val, nnz, MSP__BDMP_SUM_DEV2, mean, &sq));
  const double sd = sqrt(sq / (double)nnz);
  *lambda = f * (mean + 3.0 * sd);
exit:
  return st;
}

// ---- precision selection -----------------------------------------------------------------------
// The paper (3.1.2) states its rule per element: a value inside (-lambda, lambda) is stored in
// single precision, others in double. We store precision per 16x16 tile, so that a tile is read
// as one stream of one type (a tile's values in one stream in TCKI, one sub-matrix per precision
// in PBP) and the precision costs no per-element flag. The per-tile rule that keeps the paper's
// guarantee for every element is: a tile is fp32 exactly when every value in it lies in
// (-lambda, lambda) (max |a| < lambda) and fits fp32's normal range; one large value keeps the
// whole tile in fp64. So no element that the paper would keep in fp64 is ever rounded to fp32;
// some small elements that the paper would round stay fp64 (more accurate, a few more bytes).
// Beyond the paper, a value that fp32 holds exactly (integers below 2^24, pattern matrices'
// ones, short binary fractions) costs nothing in fp32, so it never keeps its tile in fp64: a
// tile goes to fp32 when each value is exact in fp32 or small as above. Without this, a matrix
// whose values are all equal (std 0, lambda = f * mean) would stay entirely in fp64.
// bdmp_paper_rule = 1 turns this off (for comparisons with the paper).
//
// Error-bounded mode (beyond the paper): storing a_ij in fp32 changes row i's result by at most
// u32 |a_ij| |x_j| (0 when fp32 holds a_ij exactly), so by at most u32 * F_i * max|x| with F_i =
// sum of |a_ij| over the row's inexact fp32 entries. A tile may go to fp32 only while every row
// it touches keeps u32 F_i <= 5 10^-D S_i (S_i = sum_j |a_ij|), which gives every row at least D
// significant digits relative to S_i max|x| for every x (Eq. 3 with the row's absolute scale).
// Tiles are taken greedily, the cheapest first (cost: the largest share of a row's budget the
// tile would use), to put as many tiles as possible into fp32 under the budgets.
static msp_status select_precision(const msp_matrix B, const msp_convert_options *o,
                                   const msp__bdmp_ent *ent, const msp__bdmp_tile *tiles,
                                   int64_t ntiles, const int64_t *tile_ptr, int64_t nbrows,
                                   uint8_t *is64, msp__bdmp_info *info) {
  const int paper = o->bdmp_paper_rule != 0;
  double (*cost_of)(double) = paper ? f32_cost_paper : f32_cost;
  msp_status st = MSP_SUCCESS;
  const double *val = B->val;
  double *rowsum = NULL, *used = NULL;
  tile_cost *order = NULL;
  int64_t rows = B->rows;
  MSP_TRY(MSP_ALLOC_ZERO(rowsum, rows, "BDMP row sums"));
  MSP_TRY(MSP_ALLOC_ZERO(used, rows, "BDMP fp32 row sums"));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; i++) {
    double s = 0;
    for (int64_t k = B->rowptr[i]; k < B->rowptr[i + 1]; k++)
      s += fabs(val[k]);
    rowsum[i] = s;
  }
  info->lambda = 0;
  info->digits = o->bdmp_digits > 0 ? o->bdmp_digits : 0;
  if (o->bdmp_digits <= 0) {
    double lambda = o->bdmp_lambda;
    // lambda = f (mean|A| + 3 std|A|) (paper Eq. 5), over the stored entries
    if (!(lambda > 0)) MSP_TRY(msp__bdmp_lambda(val, B->nnz, o->bdmp_f, &lambda));
    info->lambda = lambda;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < ntiles; t++) {
      int f32 = 1;
      for (int64_t e = tiles[t].start; e < tiles[t].start + tiles[t].n && f32; e++) {
        double a = val[ent[e].k];
        f32 = (!paper && f32_cost(a) == 0.0) || (fabs(a) < lambda && fits_f32(a));
      }
      is64[t] = (uint8_t)!f32;
    }
  } else {
    // budget_i = 5 10^-D S_i / u32, in units of |a|
    double rel = 5.0 * pow(10.0, -(double)o->bdmp_digits) / MSP_U_F32;
    MSP_TRY(MSP_ALLOC(order, ntiles, "BDMP tile order"));
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < ntiles; t++) {
      double cost = 0;
      int ok = 1;
      int64_t e = tiles[t].start, end = e + tiles[t].n;
      while (e < end) {
        int r = (int)((ent[e].key >> 4) & 15);
        int64_t i = tiles[t].br * MSP_BDMP_TILE + r;
        double ti = 0;
        for (; e < end && (int)((ent[e].key >> 4) & 15) == r; e++) {
          double a = val[ent[e].k];
          ok &= cost_of(a) == 0.0 || fits_f32(a);
          ti += cost_of(a);
        }
        double budget = rel * rowsum[i];
        if (ti > 0) cost = fmax(cost, budget > 0 ? ti / budget : HUGE_VAL);
      }
      order[t].cost = ok ? cost : HUGE_VAL;
      order[t].t = t;
      is64[t] = 1;
    }
    // The greedy pass block row by block row: a tile's budgets are those of its own block row's
    // rows, which no other block row's tiles use, so taking each block row's tiles in (cost, t)
    // order takes the same tiles as one pass over all tiles in that order, and the block rows are
    // independent (the same choice with any number of threads; src/cuda/bdmp_convert.cu does the
    // same).
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t br = 0; br < nbrows; br++) {
      const int64_t q0 = tile_ptr[br], q1 = tile_ptr[br + 1];
      qsort(order + q0, (size_t)(q1 - q0), sizeof *order, cost_cmp);
      for (int64_t q = q0; q < q1 && order[q].cost <= 1.0; q++) {
        int64_t t = order[q].t;
        double ti[MSP_BDMP_TILE] = {0};
        for (int64_t e = tiles[t].start; e < tiles[t].start + tiles[t].n; e++) {
          ti[(ent[e].key >> 4) & 15] += cost_of(val[ent[e].k]);
        }
        int ok = 1;
        for (int r = 0; r < MSP_BDMP_TILE && ok; r++) {
          int64_t i = br * MSP_BDMP_TILE + r;
          if (ti[r] > 0) ok = used[i] + ti[r] <= rel * rowsum[i];
        }
        if (!ok) continue;
        for (int r = 0; r < MSP_BDMP_TILE; r++) {
          if (ti[r] > 0) used[br * MSP_BDMP_TILE + r] += ti[r];
        }
        is64[t] = 0;
      }
    }
  }
  // The guarantee actually reached (both modes), from the final choice: each row's fp32
  // entries in column order (tiles in block-column order, a tile's row in column order).
  int64_t tiles32 = 0, nnz32 = 0;
  double bound = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : tiles32, nnz32) reduction(max : bound)
  for (int64_t br = 0; br < nbrows; br++) {
    const int64_t r0 = br * MSP_BDMP_TILE;
    const int nr = (int)(rows - r0 < MSP_BDMP_TILE ? rows - r0 : MSP_BDMP_TILE);
    for (int r = 0; r < nr; r++)
      used[r0 + r] = 0;
    for (int64_t t = tile_ptr[br]; t < tile_ptr[br + 1]; t++) {
      if (is64[t]) continue;
      tiles32++;
      nnz32 += tiles[t].n;
      for (int64_t e = tiles[t].start; e < tiles[t].start + tiles[t].n; e++) {
        // the true error bound: exact values cost nothing under either rule
        used[r0 + (int64_t)((ent[e].key >> 4) & 15)] += f32_cost(val[ent[e].k]);
      }
    }
    for (int r = 0; r < nr; r++) {
      if (rowsum[r0 + r] > 0) bound = fmax(bound, MSP_U_F32 * used[r0 + r] / rowsum[r0 + r]);
    }
  }
  info->tiles = ntiles;
  info->tiles32 = tiles32;
  info->nnz32 = nnz32;
  info->nnz64 = B->nnz - nnz32;
  info->bound = bound;
exit:
  MSP_FREE(rowsum);
  MSP_FREE(used);
  MSP_FREE(order);
  return st;
}

// ---- host data -------------------------------------------------------------------------------
static void pbp_free(void *fmt) {
  msp__bdmp_pbp *P = fmt;
  if (P == NULL) return;
  MSP_FREE(P->rowptr);
  MSP_FREE(P->colind);
  MSP_FREE(P->meta);
  MSP_FREE(P->v32);
  MSP_FREE(P->v64);
  msp__free(P);
}

// ---- PBP ---------------------------------------------------------------------------------------
// B's structure as it is, each value in v32 or v64 by its tile's precision (entry64), and the
// words of precision bits with their running fp64 counts (bdmp.h).
static msp_status build_pbp(msp_matrix B, const uint8_t *entry64, const msp__bdmp_info *info,
                            msp__bdmp_pbp **out) {
  msp_status st = MSP_SUCCESS;
  msp__bdmp_pbp *P = NULL;
  const int64_t rows = B->rows, nnz = B->nnz;
  const int64_t words = (nnz + MSP__PBP_WORD - 1) / MSP__PBP_WORD;
  if (info->nnz64 > (int64_t)UINT32_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_matrix_convert: bdmp-pbp holds at most %lu fp64 entries, this matrix "
                      "would store %lld",
                      (unsigned long)UINT32_MAX, (long long)info->nnz64);
  MSP_TRY(MSP_ALLOC_ZERO(P, 1, "BDMP-PBP header"));
  P->info = *info;
  MSP_TRY(MSP_ALLOC(P->rowptr, rows + 1, "BDMP-PBP row pointers"));
  MSP_TRY(MSP_ALLOC(P->colind, nnz, "BDMP-PBP columns"));
  MSP_TRY(MSP_ALLOC(P->meta, 2 * words, "BDMP-PBP precision words"));
  MSP_TRY(MSP_ALLOC(P->v32, info->nnz32, "BDMP-PBP fp32 values"));
  MSP_TRY(MSP_ALLOC(P->v64, info->nnz64, "BDMP-PBP fp64 values"));
  memcpy(P->rowptr, B->rowptr, (size_t)(rows + 1) * sizeof *P->rowptr);
  if (nnz > 0) memcpy(P->colind, B->colind, (size_t)nnz * sizeof *P->colind);
    // The words' bits in parallel, then their running counts in order.
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < words; g++) {
    uint32_t mask = 0;
    for (int64_t k = g * MSP__PBP_WORD; k < nnz && k < (g + 1) * MSP__PBP_WORD; k++)
      mask |= (uint32_t)(entry64[k] != 0) << (k - g * MSP__PBP_WORD);
    P->meta[2 * g] = mask;
  }
  uint32_t before = 0;
  for (int64_t g = 0; g < words; g++) {
    P->meta[2 * g + 1] = before;
    before += (uint32_t)__builtin_popcount(P->meta[2 * g]);
  }
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < words; g++) {
    int64_t c = P->meta[2 * g + 1];
    for (int64_t k = g * MSP__PBP_WORD; k < nnz && k < (g + 1) * MSP__PBP_WORD; k++) {
      if (entry64[k])
        P->v64[c++] = B->val[k];
      else
        P->v32[k - c] = msp_f32_from_double(B->val[k]);
    }
  }
  *out = P;
  P = NULL;
exit:
  pbp_free(P);
  return st;
}

// ---- plan and build ----------------------------------------------------------------------------
// The footprint depends on each tile's precision, which only build decides: plan checks the
// options and leaves *bytes 0 (BDMP is not held against max_fill).
msp_status msp__bdmp_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                          size_t n, msp_format format) {
  if (o->bdmp_digits < 0 || o->bdmp_digits > 15) {
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp_matrix_convert: bdmp_digits %d (0 = threshold mode, 1..15)",
                      o->bdmp_digits);
  }
  if (o->bdmp_digits == 0 && !(o->bdmp_lambda > 0) && !(o->bdmp_f > 0 && isfinite(o->bdmp_f))) {
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp_matrix_convert: bdmp_f %g must be positive and finite (or set "
                      "bdmp_lambda > 0)",
                      o->bdmp_f);
  }
  *bytes = 0;
  snprintf(what, n, "%s", msp_format_name(format));
  return MSP_SUCCESS;
}

// Tile B's host CSR, choose each tile's precision and build PBP or TCKI (format) into *fmt.
msp_status msp__bdmp_build(const msp_matrix B, msp_format format, const msp_convert_options *o,
                           void **fmt) {
  msp_status st = MSP_SUCCESS;
  msp__bdmp_ent *ent = NULL;
  msp__bdmp_tile *tiles = NULL;
  int64_t *tile_ptr = NULL;
  uint8_t *is64 = NULL, *entry64 = NULL;
  msp__bdmp_info info;
  memset(&info, 0, sizeof info);
  *fmt = NULL;
  int64_t rows = B->rows, nnz = B->nnz;
  int64_t nbrows = (rows + MSP_BDMP_TILE - 1) / MSP_BDMP_TILE;
  MSP_TRY(MSP_ALLOC(ent, nnz, "BDMP entries"));
  MSP_TRY(MSP_ALLOC_ZERO(tile_ptr, nbrows + 1, "BDMP tile pointers"));
  // Entries of block row br are exactly CSR positions rowptr[16 br] .. rowptr[16 br + 16]:
  // order each such range by (block column, row, column). The rows' columns are sorted already,
  // so a 16-way merge on the block column does it: take the smallest block column among the
  // rows' cursors, then that tile's entries row by row (O(16) per tile plus O(1) per entry).
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t br = 0; br < nbrows; br++) {
    int64_t r0 = br * MSP_BDMP_TILE, r1 = r0 + MSP_BDMP_TILE < rows ? r0 + MSP_BDMP_TILE : rows;
    int64_t cur[MSP_BDMP_TILE], end[MSP_BDMP_TILE];
    int nr = (int)(r1 - r0);
    for (int r = 0; r < nr; r++) {
      cur[r] = B->rowptr[r0 + r];
      end[r] = B->rowptr[r0 + r + 1];
    }
    int64_t out = B->rowptr[r0], cnt = 0;
    for (;;) {
      int64_t bc = INT64_MAX;
      for (int r = 0; r < nr; r++) {
        if (cur[r] < end[r] && (B->colind[cur[r]] >> 4) < bc) bc = B->colind[cur[r]] >> 4;
      }
      if (bc == INT64_MAX) break;
      cnt++;
      for (int r = 0; r < nr; r++) {
        for (; cur[r] < end[r] && (B->colind[cur[r]] >> 4) == bc; cur[r]++) {
          uint64_t j = (uint64_t)B->colind[cur[r]];
          ent[out].key = ((uint64_t)bc << 8) | ((uint64_t)r << 4) | (j & 15);
          ent[out++].k = cur[r];
        }
      }
    }
    tile_ptr[br + 1] = cnt;
  }
  for (int64_t br = 0; br < nbrows; br++)
    tile_ptr[br + 1] += tile_ptr[br];
  int64_t ntiles = tile_ptr[nbrows];
  MSP_TRY(MSP_ALLOC(tiles, ntiles, "BDMP tiles"));
  MSP_TRY(MSP_ALLOC(is64, ntiles, "BDMP tile precisions"));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t br = 0; br < nbrows; br++) {
    int64_t r0 = br * MSP_BDMP_TILE, r1 = r0 + MSP_BDMP_TILE < rows ? r0 + MSP_BDMP_TILE : rows;
    int64_t lo = B->rowptr[r0], hi = B->rowptr[r1], t = tile_ptr[br] - 1;
    for (int64_t e = lo; e < hi; e++) {
      if (e == lo || (ent[e].key >> 8) != (ent[e - 1].key >> 8)) {
        t++;
        tiles[t].start = e;
        tiles[t].n = 0;
        tiles[t].br = br;
        tiles[t].bc = (int32_t)(ent[e].key >> 8);
      }
      tiles[t].n++;
    }
  }
  MSP_TRY(select_precision(B, o, ent, tiles, ntiles, tile_ptr, nbrows, is64, &info));
  if (format == MSP_FORMAT_BDMP_PBP) {
    MSP_TRY(MSP_ALLOC(entry64, nnz, "BDMP entry precisions"));
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < ntiles; t++) {
      for (int64_t e = tiles[t].start; e < tiles[t].start + tiles[t].n; e++) {
        entry64[ent[e].k] = is64[t];
      }
    }
    msp__bdmp_pbp *P = NULL;
    MSP_TRY(build_pbp(B, entry64, &info, &P));
    *fmt = P;
  } else {
    msp__bdmp_tcki *T = NULL;
    MSP_TRY(msp__bdmp_build_tcki(B, ent, tiles, ntiles, tile_ptr, nbrows, is64, &info, &T));
    *fmt = T;
  }
exit:
  MSP_FREE(ent);
  MSP_FREE(tiles);
  MSP_FREE(tile_ptr);
  MSP_FREE(is64);
  MSP_FREE(entry64);
  return st;
}

static size_t pbp_bytes(const msp_matrix A) {
  // What a product reads (the layout of bdmp.h): the CSR structure, one 8-byte word per 32
  // entries, and each value in its precision. (The CUDA layouts of bdmp.cu read no more: the
  // words, or 8 bytes a row of fp64 counts, or neither where one precision holds every value.)
  const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)A->fmt;
  const int64_t words = (A->nnz + MSP__PBP_WORD - 1) / MSP__PBP_WORD;
  return (size_t)((A->rows + 1) * 8 + A->nnz * 4 + words * 8 + P->info.nnz32 * 4 +
                  P->info.nnz64 * 8);
}

static msp_status pbp_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
  const int64_t rows = A->rows, nnz = A->nnz;
  const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)A->fmt;
  memcpy(rowptr, P->rowptr, (size_t)(rows + 1) * sizeof *rowptr);
  if (!colind) return MSP_SUCCESS;
  if (nnz > 0) memcpy(colind, P->colind, (size_t)nnz * sizeof *colind);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < nnz; k++) {
    int64_t at;
    val[k] = msp__pbp_split(P->meta, k, &at) ? P->v64[at] : (double)P->v32[at];
  }
  return MSP_SUCCESS;
}

msp_status msp_matrix_bdmp_info(const msp_matrix A, msp_bdmp_report *r) {
  MSP_CHECK_HANDLE(msp__check_matrix(A, "msp_matrix_bdmp_info", "A"));
  MSP_CHECK_ARG(r, "msp_matrix_bdmp_info: r is NULL");
  memset(r, 0, sizeof *r);
  if ((A->format != MSP_FORMAT_BDMP_PBP && A->format != MSP_FORMAT_BDMP_TCKI) || !A->fmt) {
    return msp__error(MSP_ERR_NOT_SUPPORTED, "msp_matrix_bdmp_info: the matrix is %s, not BDMP",
                      msp_format_name(A->format));
  }
  const msp__bdmp_info *in = (const msp__bdmp_info *)A->fmt; // first member of both layouts
  r->lambda = in->lambda;
  r->digits = in->digits;
  r->bound = in->bound;
  r->tiles = in->tiles;
  r->tiles_f32 = in->tiles32;
  r->nnz_f32 = in->nnz32;
  r->nnz_f64 = in->nnz64;
  r->convert_device_ms = in->convert_ms;
  if (A->format == MSP_FORMAT_BDMP_TCKI) {
    const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)A->fmt;
    for (int f = 0; f < 4; f++)
      r->tile_formats[f] = T->fmt_count[f];
    const msp__tcki_dev_size *z = &T->dev; // the arrays a product reads: slabs with padding
    r->bytes_values = z->n32 * 4 + z->n64 * 8 + (z->rows_nnz - z->rows_n64) * 4 + z->rows_n64 * 8;
    r->bytes_indices = z->nidx + (z->rows_brows > 0 ? (A->rows + 1) * 8 + z->rows_nnz * 4 : 0);
    r->bytes_meta = (int64_t)msp__bdmp_tcki_bytes(A) - r->bytes_values - r->bytes_indices;
    r->csr_brows = T->csr_brows;
    r->csr_nnz = T->csr_nnz;
  } else {
    r->bytes_values = in->nnz32 * 4 + in->nnz64 * 8;
    r->bytes_indices = (A->rows + 1) * 8 + A->nnz * 4;
    r->bytes_meta = (int64_t)pbp_bytes(A) - r->bytes_values - r->bytes_indices;
  }
  return MSP_SUCCESS;
}

msp_status msp__bdmp_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val) {
  return A->format == MSP_FORMAT_BDMP_PBP ? pbp_to_csr(A, rowptr, colind, val)
                                          : msp__bdmp_tcki_to_csr(A, rowptr, colind, val);
}

// ---- the PBP record (TCKI's ends bdmp_tcki.c)
// ---------------------------------------------------------------------------
static msp_status pbp_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                           size_t n) {
  return msp__bdmp_plan(A, o, bytes, what, n, MSP_FORMAT_BDMP_PBP);
}
static msp_status pbp_build(const msp_matrix A, const msp_convert_options *o, void **fmt) {
  return msp__bdmp_build(A, MSP_FORMAT_BDMP_PBP, o, fmt);
}

const msp__format_ops msp__fmt_bdmp_pbp = {
    .format = MSP_FORMAT_BDMP_PBP,
    .tag = "bdmp-pbp",
    .has_fmt = 1,
    .max_fill_checked = 0,
    .plan = pbp_plan,
    .build = pbp_build,
    .bytes = pbp_bytes,
    .to_csr = pbp_to_csr,
    .free = pbp_free,
    .values = NULL,
    .f64_only = MSP__BDMP_F64_ONLY,
};

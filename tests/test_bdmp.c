// test_bdmp.c: BDMP-PBP and BDMP-TCKI: tile precision and format rules, placement, SpMV bounds.
#include "testlib.h"

#include "bdmp.h"
#include "internal.h"
#include "precision.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static msp_context ctx;

// Build A from a test_csr, then B in `format` with options o. Returns MSP status.
static msp_status make_bdmp(const test_csr *m, msp_format format, msp_convert_options o,
                            msp_matrix *B) {
  msp_matrix A = NULL;
  *B = NULL;
  msp_status st = test_csr_to_matrix(m, ctx, &A);
  if (st != MSP_SUCCESS) return st;
  o.format = format;
  st = msp_matrix_convert(ctx, A, &o, B);
  msp_matrix_destroy(&A);
  return st;
}

// A test_csr from dense triples (row-major order given), rows x cols.
static int csr_from_triples(test_csr *m, int64_t rows, int64_t cols, int64_t n, const int *ri,
                            const int *ci, const double *v) {
  memset(m, 0, sizeof *m);
  m->rows = rows;
  m->cols = cols;
  m->nnz = n;
  m->rowptr = calloc((size_t)rows + 1, sizeof *m->rowptr);
  m->colind = malloc((size_t)(n ? n : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(n ? n : 1) * sizeof *m->val);
  if (!m->rowptr || !m->colind || !m->val) return -1;
  for (int64_t k = 0; k < n; k++)
    m->rowptr[ri[k] + 1]++;
  for (int64_t i = 0; i < rows; i++)
    m->rowptr[i + 1] += m->rowptr[i];
  for (int64_t k = 0; k < n; k++) {
    m->colind[k] = ci[k];
    m->val[k] = v[k];
  }
  return 0;
}

// The stored matrix (values as BDMP holds them) rebuilt from the format's arrays alone.
static int stored_csr(const msp_matrix B, test_csr *s) {
  memset(s, 0, sizeof *s);
  s->rows = B->rows;
  s->cols = B->cols;
  s->rowptr = malloc((size_t)(B->rows + 1) * sizeof *s->rowptr);
  if (!s->rowptr) return -1;
  if (msp__bdmp_to_csr(B, s->rowptr, NULL, NULL) != MSP_SUCCESS) return -1;
  s->nnz = s->rowptr[B->rows];
  s->colind = malloc((size_t)(s->nnz ? s->nnz : 1) * sizeof *s->colind);
  s->val = malloc((size_t)(s->nnz ? s->nnz : 1) * sizeof *s->val);
  if (!s->colind || !s->val) return -1;
  return msp__bdmp_to_csr(B, s->rowptr, s->colind, s->val) == MSP_SUCCESS ? 0 : -1;
}

// Every nonzero in exactly one place: the rebuilt pattern equals the original and each value is
// the original (fp64) or its fp32 rounding; the fp32 count matches the report.
static void check_placement(const test_csr *m, const msp_matrix B, const char *label) {
  test_csr s;
  int rc = stored_csr(B, &s);
  CHECK(rc == 0, "%s: rebuilding CSR failed: %s", label, msp_last_error());
  if (rc != 0) {
    test_csr_free(&s);
    return;
  }
  CHECK(s.nnz == m->nnz, "%s: %lld entries stored, matrix has %lld", label, (long long)s.nnz,
        (long long)m->nnz);
  int64_t badpat = 0, badval = 0, n32 = 0;
  for (int64_t i = 0; i <= m->rows && s.nnz == m->nnz; i++)
    badpat += s.rowptr[i] != m->rowptr[i];
  for (int64_t k = 0; k < m->nnz && s.nnz == m->nnz && badpat == 0; k++) {
    badpat += s.colind[k] != m->colind[k];
    double a = m->val[k], f = (double)(float)a;
    if (s.val[k] != a) {
      if (s.val[k] == f)
        n32++;
      else
        badval++;
    }
  }
  CHECK(badpat == 0, "%s: %lld pattern differences after the round trip", label, (long long)badpat);
  CHECK(badval == 0, "%s: %lld values neither a_ij nor fp32(a_ij)", label, (long long)badval);
  msp_bdmp_report r;
  CHECK_OK(msp_matrix_bdmp_info(B, &r));
  CHECK(r.nnz_f32 + r.nnz_f64 == m->nnz, "%s: %lld + %lld != nnz %lld", label, (long long)r.nnz_f32,
        (long long)r.nnz_f64, (long long)m->nnz);
  CHECK(n32 <= r.nnz_f32, "%s: %lld values rounded but only %lld reported fp32", label,
        (long long)n32, (long long)r.nnz_f32);
  test_csr_free(&s);
}

// SpMV of B against the long-double oracle of the stored values (fp64 arithmetic bound), for
// several alpha/beta, with NaN in y when beta == 0.
static void check_spmv(const msp_matrix B, const char *label, uint64_t seed) {
  test_csr s;
  if (stored_csr(B, &s) != 0) {
    CHECK(0, "%s: rebuilding CSR failed", label);
    test_csr_free(&s);
    return;
  }
  int64_t rows = B->rows, cols = B->cols;
  double *x = malloc((size_t)(cols ? cols : 1) * sizeof *x);
  double *y0 = malloc((size_t)(rows ? rows : 1) * sizeof *y0);
  double *got = malloc((size_t)(rows ? rows : 1) * sizeof *got);
  double *ref = malloc((size_t)(rows ? rows : 1) * sizeof *ref);
  msp_vector vx = NULL, vy = NULL, vx16 = NULL, vy32 = NULL;
  if (!x || !y0 || !got || !ref) {
    CHECK(0, "out of memory");
    goto done;
  }
  msp_rng r = {seed};
  for (int64_t j = 0; j < cols; j++)
    x[j] = 2 * msp_rng_uniform(&r) - 1;
  for (int64_t i = 0; i < rows; i++)
    y0[i] = 2 * msp_rng_uniform(&r) - 1;
  CHECK_OK(msp_vector_create(ctx, cols, &vx));
  CHECK_OK(msp_vector_create(ctx, rows, &vy));
  if (!vx || !vy) goto done;
  CHECK_OK(msp_vector_set(vx, x));
  double ab[3][2] = {{1, 0}, {-0.5, 2}, {2, 1}};
  for (int c = 0; c < 3; c++) {
    double alpha = ab[c][0], beta = ab[c][1];
    if (beta == 0) {
      CHECK_OK(msp_vector_fill(vy, NAN));
    } else {
      CHECK_OK(msp_vector_set(vy, y0));
    }
    CHECK_OK(msp_spmv(ctx, alpha, B, vx, beta, vy));
    CHECK_OK(msp_vector_get(vy, got));
    test_oracle_spmv(&s, alpha, x, beta, y0, ref);
    char l2[160];
    snprintf(l2, sizeof l2, "%s alpha %g beta %g", label, alpha, beta);
    CHECK(test_compare_rows(&s, alpha, x, beta, y0, got, ref, l2) == 0, "%s: rows off", l2);
  }
  // x in f16 and y in f32: x is read as stored, and y is the f32 rounding of the fp64 product on
  // the decoded x (the f64 kernel on f64 vectors holding the same values), bit for bit
  CHECK_OK(msp_vector_create_precision(ctx, cols, MSP_PRECISION_F16, &vx16));
  CHECK_OK(msp_vector_create_precision(ctx, rows, MSP_PRECISION_F32, &vy32));
  if (!vx16 || !vy32) goto done;
  for (int64_t j = 0; j < cols; j++)
    x[j] = (x[j] < 0 ? -0.25 : 0.25) + 0.75 * x[j]; // |x| >= 0.25: no f16 subnormals
  CHECK_OK(msp_vector_set(vx16, x));
  CHECK_OK(msp_vector_get(vx16, x));
  CHECK_OK(msp_vector_set(vx, x));
  CHECK_OK(msp_vector_set(vy, y0));
  CHECK_OK(msp_vector_set(vy32, y0));
  CHECK_OK(msp_vector_get(vy32, y0)); // the decoded y0 in both
  CHECK_OK(msp_vector_set(vy, y0));
  CHECK_OK(msp_spmv(ctx, 1.5, B, vx, -0.5, vy));
  CHECK_OK(msp_spmv(ctx, 1.5, B, vx16, -0.5, vy32));
  CHECK_OK(msp_vector_get(vy, ref));
  CHECK_OK(msp_vector_get(vy32, got));
  int64_t bad = 0;
  for (int64_t i = 0; i < rows; i++)
    bad += got[i] != (double)(float)ref[i];
  CHECK(bad == 0, "%s: x f16, y f32: %lld entries differ from the rounding of the fp64 product",
        label, (long long)bad);
done:
  msp_vector_destroy(&vx);
  msp_vector_destroy(&vy);
  msp_vector_destroy(&vx16);
  msp_vector_destroy(&vy32);
  free(x);
  free(y0);
  free(got);
  free(ref);
  test_csr_free(&s);
}

// ---- TCKI's GPU layout, read on the host
// The arrays of msp__bdmp_tcki_device and msp__bdmp_tcki_rows (bdmp.h) read as the CUDA kernels
// read them: every row's entries (column, value) gathered from the chunks' slabs and the
// CSR-like part must be the stored matrix's row, value for value; padding holds 0 and no row
// past the end holds an entry; the chunks are those of the tile block rows, in order, at least
// one for each (an empty one may have none beside a CSR-like part); a block row of several chunks
// has consecutive part slots and its run; the CSR-like part's precision words count its fp64
// entries. The kernels themselves are checked on the GPU (tests/cuda_cross.c against the CPU).
typedef struct {
  int32_t col;
  double val;
} col_val;
static int col_val_cmp(const void *a, const void *b) {
  const col_val *x = a, *y = b;
  return x->col < y->col ? -1 : x->col > y->col ? 1 : 0;
}

static void check_device_layout(const msp_matrix B, const char *label) {
  if (msp_matrix_format(B) != MSP_FORMAT_BDMP_TCKI) return;
  const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)B->fmt;
  msp__tcki_dev_size z;
  msp__tcki_dev d;
  msp__bdmp_pbp P;
  test_csr s;
  col_val *got = NULL;
  int64_t *cnt = NULL, bad = 0, badpad = 0, badchunk = 0, badrow = 0, badwords = 0;
  memset(&d, 0, sizeof d);
  memset(&P, 0, sizeof P);
  msp__bdmp_tcki_device(T, &z, NULL);
  CHECK(memcmp(&z, &T->dev, sizeof z) == 0,
        "%s: the record's GPU layout sizes (%lld chunks, %lld index bytes) are not its layout's "
        "(%lld, %lld)",
        label, (long long)T->dev.nchunks, (long long)T->dev.nidx, (long long)z.nchunks,
        (long long)z.nidx);
  d.chunk = malloc((size_t)(z.nchunks + 1) * sizeof *d.chunk);
  d.tcol = malloc((size_t)(z.ntcol + 1) * sizeof *d.tcol);
  d.runs = malloc((size_t)(3 * z.nsplit + 1) * sizeof *d.runs);
  d.idx = malloc((size_t)(z.nidx + 1));
  d.val32 = malloc((size_t)(z.n32 + 1) * sizeof *d.val32);
  d.val64 = malloc((size_t)(z.n64 + 1) * sizeof *d.val64);
  const int rc = stored_csr(B, &s);
  if (rc == 0) {
    got = malloc((size_t)(s.nnz + 1) * sizeof *got);
    cnt = calloc((size_t)B->rows + 1, sizeof *cnt);
  }
  if (rc != 0 || !d.chunk || !d.tcol || !d.runs || !d.idx || !d.val32 || !d.val64 || !got || !cnt) {
    CHECK(0, "%s: out of memory", label);
    goto done;
  }
  msp__tcki_dev_size z2;
  msp__bdmp_tcki_device(T, &z2, &d);
  CHECK(memcmp(&z, &z2, sizeof z) == 0, "%s: the sizes differ between the two passes", label);
  CHECK_OK(msp__bdmp_tcki_rows(T, B->rows, &P));
  if (!P.rowptr) goto done;
#define PUT_ENTRY(row, c, v)                                                                       \
  do {                                                                                             \
    if ((row) >= B->rows || s.rowptr[(row)] + cnt[(row)] >= s.rowptr[(row) + 1]) {                 \
      badrow++;                                                                                    \
    } else {                                                                                       \
      got[s.rowptr[(row)] + cnt[(row)]].col = (c);                                                 \
      got[s.rowptr[(row)] + cnt[(row)]++].val = (v);                                               \
    }                                                                                              \
  } while (0)
  // the tile part
  int64_t c = 0, nsplit = 0, nparts = 0;
  for (int64_t br = 0; br < T->nbrows; br++) {
    if (msp__bdmp_brow_csr(T, br)) continue;
    const int64_t c0 = c;
    while (c < z.nchunks && d.chunk[c].br == br)
      c++;
    const int64_t n = c - c0;
    if (n == 0) { // only an empty block row beside a CSR-like part may have none
      badchunk += T->tile_ptr[br + 1] > T->tile_ptr[br] || T->csr_brows == 0;
      continue;
    }
    if (n > 1) {
      badchunk += nsplit >= z.nsplit || d.runs[3 * nsplit] != br ||
                  d.runs[3 * nsplit + 1] != nparts || d.runs[3 * nsplit + 2] != n;
      for (int64_t k = c0; k < c; k++)
        badchunk += d.chunk[k].part != nparts + (k - c0);
      nsplit++;
      nparts += n;
    } else {
      badchunk += d.chunk[c0].part != -1;
    }
    for (int64_t k = c0; k < c; k++) {
      const msp__tcki_chunk *ch = &d.chunk[k];
      const int nt = (int)(ch->packed & 0xffu), w64 = (int)((ch->packed >> 8) & 0xffu),
                w32 = (int)((ch->packed >> 16) & 0xffu);
      badchunk += nt > MSP__TCKI_CHUNK_TILES || (ch->packed >> 24) != 0;
      for (int r = 0; r < MSP_BDMP_TILE; r++) {
        for (int q = 0; q < w64 + w32; q++) {
          const uint8_t b = d.idx[ch->ioff + (int64_t)q * MSP_BDMP_TILE + r];
          const double v =
              q < w64 ? d.val64[ch->v64off + (int64_t)q * MSP_BDMP_TILE + r]
                      : (double)d.val32[ch->v32off + (int64_t)(q - w64) * MSP_BDMP_TILE + r];
          if (b == MSP__TCKI_PAD) {
            badpad += v != 0.0;
          } else if ((b >> 4) >= nt) {
            bad++;
          } else {
            PUT_ENTRY(br * MSP_BDMP_TILE + r,
                      d.tcol[ch->first + (b >> 4)] * MSP_BDMP_TILE + (b & 15), v);
          }
        }
      }
    }
  }
  badchunk += c != z.nchunks || nsplit != z.nsplit || nparts != z.nparts;
  // the CSR-like part, as PBP reads it
  for (int64_t i = 0; i < B->rows; i++) {
    for (int64_t k = P.rowptr[i]; k < P.rowptr[i + 1]; k++) {
      int64_t at;
      const int f64 = msp__pbp_split(P.meta, k, &at);
      PUT_ENTRY(i, P.colind[k], f64 ? P.v64[at] : (double)P.v32[at]);
    }
  }
  {
    const int64_t nnz = P.rowptr[B->rows];
    badwords +=
        P.info.nnz32 + P.info.nnz64 != nnz ||
        (nnz > 0 && msp__pbp_f64_before(P.meta, nnz - 1) +
                            (int64_t)((P.meta[2 * ((nnz - 1) / 32)] >> ((nnz - 1) % 32)) & 1u) !=
                        P.info.nnz64) ||
        (z.rows_brows > 0) != (nnz > 0 || T->csr_brows > 0) || nnz != T->csr_nnz ||
        z.rows_nnz != nnz || z.rows_n64 != P.info.nnz64;
  }
#undef PUT_ENTRY
  for (int64_t i = 0; i < B->rows; i++) {
    const int64_t b = s.rowptr[i], e = s.rowptr[i + 1];
    if (cnt[i] != e - b) {
      bad++;
      continue;
    }
    qsort(got + b, (size_t)(e - b), sizeof *got, col_val_cmp);
    for (int64_t k = b; k < e; k++)
      bad += got[k].col != s.colind[k] || memcmp(&got[k].val, &s.val[k], sizeof(double)) != 0;
  }
  CHECK(bad == 0 && badpad == 0 && badrow == 0 && badchunk == 0 && badwords == 0,
        "%s: GPU layout: %lld entries differ from the stored matrix, %lld nonzero padding, %lld "
        "entries in no row or too many, %lld chunk or part errors, %lld CSR-like part errors",
        label, (long long)bad, (long long)badpad, (long long)badrow, (long long)badchunk,
        (long long)badwords);
done:
  msp__bdmp_pbp_clear(&P);
  free(d.chunk);
  free(d.tcol);
  free(d.runs);
  free(d.idx);
  free(d.val32);
  free(d.val64);
  free(got);
  free(cnt);
  test_csr_free(&s);
}

// ---- hand-built tiles: precision rule
// ------------------------------------------------------------
static void test_precision_rule(void) {
  // 32 x 32, four tiles, lambda fixed at 1:
  //   (0,0): 0.1 and 0.3       -> fp32 (small)
  //   (0,1): 0.1 and 10.1      -> fp64 (one large inexact value keeps the tile in fp64)
  //   (1,0): 0.5 and 1e-40     -> fp64 (outside fp32's normal range)
  //   (1,1): 2 and -7          -> fp32 (large, but fp32 holds them exactly)
  int ri[] = {0, 3, 1, 2, 17, 20, 18, 30};
  int ci[] = {0, 5, 17, 20, 1, 2, 18, 31};
  double v[] = {0.1, 0.3, 0.1, 10.1, 0.5, 1e-40, 2.0, -7.0};
  test_csr m;
  // csr_from_triples wants entries grouped by row in order
  int ord[] = {0, 2, 3, 1, 4, 6, 5, 7};
  int r2[8], c2[8];
  double v2[8];
  for (int k = 0; k < 8; k++) {
    r2[k] = ri[ord[k]];
    c2[k] = ci[ord[k]];
    v2[k] = v[ord[k]];
  }
  if (csr_from_triples(&m, 32, 32, 8, r2, c2, v2) != 0) {
    CHECK(0, "out of memory");
    test_csr_free(&m);
    return;
  }
  msp_convert_options o = msp_convert_options_default();
  o.bdmp_lambda = 1.0;
  msp_matrix B = NULL;
  CHECK_OK(make_bdmp(&m, MSP_FORMAT_BDMP_TCKI, o, &B));
  if (B) {
    const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)B->fmt;
    CHECK(T->ntiles == 4 && T->nbrows == 2, "4 tiles in 2 block rows, got %lld in %lld",
          (long long)T->ntiles, (long long)T->nbrows);
    if (T->ntiles == 4) {
      int want64[4] = {0, 1, 1, 0};
      for (int t = 0; t < 4; t++) {
        int is64 = (T->tile_fmt[t] & MSP__TILE_F64) != 0;
        CHECK(is64 == want64[t], "tile %d: fp64 = %d, expected %d", t, is64, want64[t]);
      }
    }
    msp_bdmp_report r;
    CHECK_OK(msp_matrix_bdmp_info(B, &r));
    CHECK(r.lambda == 1.0 && r.tiles == 4 && r.tiles_f32 == 2 && r.nnz_f32 == 4,
          "report: lambda %g tiles %lld fp32 tiles %lld fp32 nnz %lld", r.lambda,
          (long long)r.tiles, (long long)r.tiles_f32, (long long)r.nnz_f32);
    check_placement(&m, B, "hand-built precision TCKI");
    check_device_layout(B, "hand-built precision TCKI");
    check_spmv(B, "hand-built precision TCKI", 1);
  }
  msp_matrix_destroy(&B);
  // The paper's rule alone: the exact tile (1,1) stays in fp64 (its values are not below lambda).
  o.bdmp_paper_rule = 1;
  CHECK_OK(make_bdmp(&m, MSP_FORMAT_BDMP_TCKI, o, &B));
  if (B) {
    const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)B->fmt;
    CHECK(T->ntiles == 4 && (T->tile_fmt[3] & MSP__TILE_F64) && !(T->tile_fmt[0] & MSP__TILE_F64),
          "paper rule: tile (1,1) must be fp64 and tile (0,0) fp32");
  }
  msp_matrix_destroy(&B);
  o.bdmp_paper_rule = 0;
  CHECK_OK(make_bdmp(&m, MSP_FORMAT_BDMP_PBP, o, &B));
  if (B) {
    const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)B->fmt;
    int64_t n64 = 0, at;
    for (int64_t k = 0; k < P->rowptr[32]; k++)
      n64 += msp__pbp_split(P->meta, k, &at);
    CHECK(P->rowptr[32] - n64 == 4 && n64 == 4, "PBP split 4 + 4, got %lld + %lld",
          (long long)(P->rowptr[32] - n64), (long long)n64);
    check_placement(&m, B, "hand-built precision PBP");
    check_spmv(B, "hand-built precision PBP", 2);
  }
  msp_matrix_destroy(&B);
  // Dynamic threshold: lambda = f (mean|A| + 3 std|A|) over the stored values.
  {
    double sum = 0, sq = 0;
    for (int k = 0; k < 8; k++)
      sum += fabs(v[k]);
    double mean = sum / 8;
    for (int k = 0; k < 8; k++)
      sq += (fabs(v[k]) - mean) * (fabs(v[k]) - mean);
    double want = 0.3 * (mean + 3 * sqrt(sq / 8));
    o = msp_convert_options_default();
    o.bdmp_f = 0.3;
    CHECK_OK(make_bdmp(&m, MSP_FORMAT_BDMP_PBP, o, &B));
    msp_bdmp_report r;
    if (B) {
      CHECK_OK(msp_matrix_bdmp_info(B, &r));
      CHECK(fabs(r.lambda - want) <= 1e-14 * want, "lambda %.17g, expected %.17g", r.lambda, want);
    }
    msp_matrix_destroy(&B);
  }
  // A pattern matrix (every value 1: lambda = f * 1 is below all of them) goes wholly to fp32
  // at no cost, in both modes, with a guaranteed bound of 0.
  {
    test_csr p;
    if (test_csr_random(&p, 300, 300, 7, 5) == 0) {
      for (int64_t k = 0; k < p.nnz; k++)
        p.val[k] = 1.0;
      for (int mode = 0; mode < 2; mode++) {
        o = msp_convert_options_default();
        o.bdmp_digits = mode ? 12 : 0;
        CHECK_OK(make_bdmp(&p, MSP_FORMAT_BDMP_TCKI, o, &B));
        msp_bdmp_report r;
        if (B) {
          CHECK_OK(msp_matrix_bdmp_info(B, &r));
          CHECK(r.nnz_f32 == p.nnz && r.bound == 0.0,
                "pattern matrix, mode %d: %lld of %lld in fp32, bound %g", mode,
                (long long)r.nnz_f32, (long long)p.nnz, r.bound);
        }
        msp_matrix_destroy(&B);
      }
      // the paper's rule alone keeps it in fp64 (lambda = 0.5 * (1 + 0) is below every value)
      o = msp_convert_options_default();
      o.bdmp_paper_rule = 1;
      CHECK_OK(make_bdmp(&p, MSP_FORMAT_BDMP_PBP, o, &B));
      if (B) {
        msp_bdmp_report r;
        CHECK_OK(msp_matrix_bdmp_info(B, &r));
        CHECK(r.nnz_f32 == 0, "pattern matrix, paper rule: %lld in fp32", (long long)r.nnz_f32);
      }
      msp_matrix_destroy(&B);
    } else {
      CHECK(0, "generator");
    }
    test_csr_free(&p);
  }
  // Bad options are refused.
  o = msp_convert_options_default();
  o.bdmp_f = 0;
  CHECK_STATUS(make_bdmp(&m, MSP_FORMAT_BDMP_PBP, o, &B), MSP_ERR_INVALID_ARGUMENT);
  o = msp_convert_options_default();
  o.bdmp_digits = 16;
  CHECK_STATUS(make_bdmp(&m, MSP_FORMAT_BDMP_TCKI, o, &B), MSP_ERR_INVALID_ARGUMENT);
  o = msp_convert_options_default();
  o.precision = MSP_PRECISION_F32;
  CHECK_STATUS(make_bdmp(&m, MSP_FORMAT_BDMP_TCKI, o, &B), MSP_ERR_NOT_SUPPORTED);
  test_csr_free(&m);
}

// ---- hand-built tiles: format rule
// --------------------------------------------------------------- One block row of 16 rows, block
// column b holds tile b with the row lengths given.
static void test_format_rule(void) {
  // tile 0: 5 entries (density 0.0195)      -> COO
  // tile 1: 6 entries (0.0234), CV 1.29    -> HYB, K = 1 (6 of 16 rows reach 1: a third)
  // tile 2: every row 4 entries (CV 0)      -> ELL
  // tile 3: rows alternate 2 and 4 (CV 1/3) -> CSR
  // tile 4: row 0 full, rows 1..15 one each -> HYB, K = 1, 15 entries in its CSR part
  // tile 5: rows 0..13 three entries, 14..15 empty: CV 0.38 -> CSR
  int len[6][16];
  memset(len, 0, sizeof len);
  for (int r = 0; r < 5; r++)
    len[0][r * 3] = 1;
  for (int r = 0; r < 6; r++)
    len[1][r] = 1;
  for (int r = 0; r < 16; r++)
    len[2][r] = 4;
  for (int r = 0; r < 16; r++)
    len[3][r] = r % 2 ? 4 : 2;
  len[4][0] = 16;
  for (int r = 1; r < 16; r++)
    len[4][r] = 1;
  for (int r = 0; r < 14; r++)
    len[5][r] = 3;
  int want[6] = {MSP__TILE_COO, MSP__TILE_HYB, MSP__TILE_ELL,
                 MSP__TILE_CSR, MSP__TILE_HYB, MSP__TILE_CSR};
  int want_w[6] = {0, 1, 4, 0, 1, 0};
  int *ri = malloc(6 * 256 * sizeof *ri), *ci = malloc(6 * 256 * sizeof *ci);
  double *v = malloc(6 * 256 * sizeof *v);
  test_csr m;
  memset(&m, 0, sizeof m);
  if (!ri || !ci || !v) {
    CHECK(0, "out of memory");
    goto done;
  }
  int n = 0;
  msp_rng rng = {7};
  for (int r = 0; r < 16; r++) {
    for (int b = 0; b < 6; b++) {
      for (int c = 0; c < len[b][r]; c++) {
        ri[n] = r;
        // spread the columns over the tile (distinct, ascending)
        ci[n] = b * 16 + (len[b][r] == 16 ? c : (c * 5 + r) % 16);
        v[n] = 0.5 + msp_rng_uniform(&rng);
        n++;
      }
    }
  }
  // sort each row's columns (the spread above is not monotone)
  for (int a = 0; a < n; a++) {
    for (int b = a + 1; b < n && ri[b] == ri[a]; b++) {
      if (ci[b] < ci[a]) {
        int t = ci[a];
        ci[a] = ci[b];
        ci[b] = t;
      }
    }
  }
  if (csr_from_triples(&m, 16, 96, n, ri, ci, v) != 0) {
    CHECK(0, "out of memory");
    goto done;
  }
  msp_matrix B = NULL;
  CHECK_OK(make_bdmp(&m, MSP_FORMAT_BDMP_TCKI, msp_convert_options_default(), &B));
  if (B) {
    const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)B->fmt;
    CHECK(T->ntiles == 6, "6 tiles, got %lld", (long long)T->ntiles);
    for (int t = 0; t < 6 && t < T->ntiles; t++) {
      CHECK((T->tile_fmt[t] & 3) == want[t], "tile %d: format %d, expected %d", t,
            T->tile_fmt[t] & 3, want[t]);
      CHECK(T->tile_width[t] == want_w[t], "tile %d: width %d, expected %d", t, T->tile_width[t],
            want_w[t]);
    }
    msp_bdmp_report r;
    CHECK_OK(msp_matrix_bdmp_info(B, &r));
    CHECK(r.tile_formats[MSP__TILE_COO] == 1 && r.tile_formats[MSP__TILE_ELL] == 1 &&
              r.tile_formats[MSP__TILE_CSR] == 2 && r.tile_formats[MSP__TILE_HYB] == 2,
          "tile format counts %lld %lld %lld %lld", (long long)r.tile_formats[0],
          (long long)r.tile_formats[1], (long long)r.tile_formats[2], (long long)r.tile_formats[3]);
    check_placement(&m, B, "hand-built formats");
    check_device_layout(B, "hand-built formats");
    check_spmv(B, "hand-built formats", 3);
  }
  msp_matrix_destroy(&B);
done:
  free(ri);
  free(ci);
  free(v);
  test_csr_free(&m);
}

// ---- random matrices: placement and SpMV
// ----------------------------------------------------------
static void test_random(void) {
  struct {
    int64_t rows, cols;
    double mean;
    int powerlaw;
  } cases[] = {{0, 0, 0, 0},      {1, 1, 1, 0},       {17, 33, 3, 0},     {100, 37, 5, 0},
               {500, 500, 0, 0},  {1000, 1000, 8, 0}, {777, 1500, 20, 0}, {2000, 2000, 300, 1},
               {4096, 64, 30, 0}, {33, 5000, 60, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    test_csr m;
    int rc =
        cases[c].powerlaw
            ? test_csr_powerlaw(&m, cases[c].rows, cases[c].cols, (int64_t)cases[c].mean, 100 + c)
            : test_csr_random(&m, cases[c].rows, cases[c].cols, cases[c].mean, 100 + c);
    if (rc != 0) {
      CHECK(0, "generator failed");
      test_csr_free(&m);
      continue;
    }
    // magnitudes over several decades, so both precisions occur
    msp_rng r = {200 + c};
    for (int64_t k = 0; k < m.nnz; k++)
      m.val[k] *= pow(10.0, (double)msp_rng_range(&r, 5) - 2);
    for (int v = 0; v < 2; v++) {
      msp_format f = v ? MSP_FORMAT_BDMP_TCKI : MSP_FORMAT_BDMP_PBP;
      for (int mode = 0; mode < 3; mode++) {
        msp_convert_options o = msp_convert_options_default();
        if (mode == 1) o.bdmp_f = 2.0;
        if (mode == 2) o.bdmp_digits = 8;
        char label[160];
        snprintf(label, sizeof label, "%s %lldx%lld nnz %lld mode %d", msp_format_name(f),
                 (long long)m.rows, (long long)m.cols, (long long)m.nnz, mode);
        msp_matrix B = NULL;
        CHECK_OK(make_bdmp(&m, f, o, &B));
        if (!B) continue;
        CHECK(msp_matrix_format(B) == f, "%s: format %d", label, (int)msp_matrix_format(B));
        check_placement(&m, B, label);
        check_device_layout(B, label);
        check_spmv(B, label, 300 + c);
        CHECK(msp_matrix_bytes(B) > 0 || m.rows == 0, "%s: footprint 0", label);
        msp_matrix_destroy(&B);
      }
    }
    test_csr_free(&m);
  }
}

// ---- TCKI block-row kinds: tiles or CSR-like
// ----------------------------------------------------------
// A test_csr of `rows` x `cols`: rows below `band_rows` hold the band |i - j| <= 12 (well-filled
// tiles), the others `per` random distinct columns over the whole width (one or two entries per
// tile), row `long_row` (if in range) `long_len` of them. Values over five decades, so both
// precisions occur in both kinds.
static int mixed_csr(test_csr *m, int64_t rows, int64_t cols, int64_t band_rows, int64_t per,
                     int64_t long_row, int64_t long_len, uint64_t seed) {
  memset(m, 0, sizeof *m);
  m->rows = rows;
  m->cols = cols;
  m->rowptr = calloc((size_t)rows + 1, sizeof *m->rowptr);
  if (!m->rowptr) return -1;
  for (int64_t i = 0; i < rows; i++) {
    int64_t len = i < band_rows ? (i + 12 < cols ? i + 12 : cols - 1) - (i > 12 ? i - 12 : 0) + 1
                                : (i == long_row ? long_len : per);
    if (len > cols) len = cols;
    if (len < 0) len = 0;
    m->rowptr[i + 1] = m->rowptr[i] + len;
  }
  m->nnz = m->rowptr[rows];
  m->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->val);
  if (!m->colind || !m->val) return -1;
  msp_rng r = {seed};
  for (int64_t i = 0; i < rows; i++) {
    int64_t k = m->rowptr[i], len = m->rowptr[i + 1] - k;
    if (i < band_rows) {
      for (int64_t c = 0; c < len; c++)
        m->colind[k + c] = (int32_t)((i > 12 ? i - 12 : 0) + c);
    } else {
      // one column in each of len equal bands: distinct and ascending
      for (int64_t c = 0; c < len; c++) {
        int64_t lo = c * cols / len, hi = (c + 1) * cols / len;
        m->colind[k + c] = (int32_t)(lo + msp_rng_range(&r, hi - lo));
      }
    }
    for (int64_t c = 0; c < len; c++)
      m->val[k + c] = (2 * msp_rng_uniform(&r) - 1) * pow(10.0, (double)msp_rng_range(&r, 5) - 2);
  }
  return 0;
}

// y = A x with 1 and 2 threads: the same bits.
static void check_threads(const msp_matrix B, const char *label) {
  int64_t rows = B->rows, cols = B->cols;
  double *x = malloc((size_t)(cols ? cols : 1) * sizeof *x);
  double *y1 = malloc((size_t)(rows ? rows : 1) * sizeof *y1);
  double *y2 = malloc((size_t)(rows ? rows : 1) * sizeof *y2);
  const int saved = omp_get_max_threads();
  if (!x || !y1 || !y2) {
    CHECK(0, "out of memory");
    goto done;
  }
  msp_rng r = {99};
  for (int64_t j = 0; j < cols; j++)
    x[j] = 2 * msp_rng_uniform(&r) - 1;
  for (int t = 1; t <= 2; t++) {
    omp_set_num_threads(t);
    CHECK_OK(test_spmv(ctx, B, x, t == 1 ? y1 : y2));
  }
  CHECK(rows == 0 || memcmp(y1, y2, (size_t)rows * sizeof *y1) == 0,
        "%s: 1 and 2 threads give different bits", label);
done:
  omp_set_num_threads(saved);
  free(x);
  free(y1);
  free(y2);
}

// The product against the CSR fp64 product of the original matrix: within the guaranteed
// storage bound plus fp64 arithmetic (as eb_matrix).
static void check_against_f64(const test_csr *m, const msp_matrix B, const char *label) {
  int64_t rows = m->rows, cols = m->cols;
  double *x = malloc((size_t)(cols ? cols : 1) * sizeof *x);
  double *got = malloc((size_t)(rows ? rows : 1) * sizeof *got);
  double *ref = malloc((size_t)(rows ? rows : 1) * sizeof *ref);
  msp_bdmp_report r;
  if (!x || !got || !ref) {
    CHECK(0, "out of memory");
    goto done;
  }
  CHECK_OK(msp_matrix_bdmp_info(B, &r));
  msp_rng rng = {5};
  double xmax = 0;
  for (int64_t j = 0; j < cols; j++) {
    x[j] = 2 * msp_rng_uniform(&rng) - 1;
    xmax = fmax(xmax, fabs(x[j]));
  }
  const msp_status st = test_spmv(ctx, B, x, got);
  CHECK_OK(st);
  if (st != MSP_SUCCESS) goto done;
  test_oracle_spmv(m, 1.0, x, 0.0, NULL, ref);
  int64_t bad = 0;
  for (int64_t i = 0; i < rows; i++) {
    double rowsum = 0, mag = 0;
    int64_t len = m->rowptr[i + 1] - m->rowptr[i];
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++) {
      rowsum += fabs(m->val[k]);
      mag += fabs(m->val[k] * x[m->colind[k]]);
    }
    double b = r.bound * rowsum * xmax + 4.0 * 0x1.0p-52 * (double)(len + 2) * mag * (1 + 1e-6);
    bad += !(fabs(got[i] - ref[i]) <= b);
  }
  CHECK(bad == 0, "%s: %lld rows beyond the guaranteed bound against CSR fp64", label,
        (long long)bad);
done:
  free(x);
  free(got);
  free(ref);
}

// TCKI's stored values are PBP's (the same selection, entry by entry): both to_csr the same bits.
static void check_same_as_pbp(const test_csr *m, const msp_matrix B, msp_convert_options o,
                              const char *label) {
  msp_matrix P = NULL;
  test_csr sb, sp;
  memset(&sb, 0, sizeof sb);
  memset(&sp, 0, sizeof sp);
  CHECK_OK(make_bdmp(m, MSP_FORMAT_BDMP_PBP, o, &P));
  if (P && stored_csr(B, &sb) == 0 && stored_csr(P, &sp) == 0 && sb.nnz == sp.nnz) {
    int64_t diff = 0;
    for (int64_t k = 0; k < sb.nnz; k++)
      diff += sb.colind[k] != sp.colind[k] || memcmp(&sb.val[k], &sp.val[k], sizeof(double)) != 0;
    CHECK(diff == 0, "%s: %lld stored entries differ from PBP's", label, (long long)diff);
  } else {
    CHECK(0, "%s: rebuilding CSR failed", label);
  }
  msp_matrix_destroy(&P);
  test_csr_free(&sb);
  test_csr_free(&sp);
}

typedef struct {
  int64_t csr_brows, tile_brows, seg64, seg32, split; // split: CSR-like block rows of > 2 segments
} kind_counts;

// The kinds as stored, with the layout's invariants: a block row is all tiles or all segments,
// fp64 segments first, the counts in the header agree.
static kind_counts check_kinds(const msp_matrix B, const char *label) {
  const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)B->fmt;
  kind_counts k;
  memset(&k, 0, sizeof k);
  int64_t mixed = 0, order = 0, nnz = 0, tiles = 0;
  for (int64_t br = 0; br < T->nbrows; br++) {
    int64_t t0 = T->tile_ptr[br], t1 = T->tile_ptr[br + 1], nseg = 0;
    for (int64_t t = t0; t < t1; t++) {
      if (T->tile_fmt[t] & MSP__TILE_ROWS) {
        nseg++;
        nnz += msp__bdmp_seg_ends(T, t)[MSP_BDMP_TILE - 1];
        if (T->tile_fmt[t] & MSP__TILE_F64) {
          k.seg64++;
          order += t > t0 && !(T->tile_fmt[t - 1] & MSP__TILE_F64);
        } else {
          k.seg32++;
        }
      } else {
        tiles++;
      }
    }
    mixed += nseg > 0 && nseg < t1 - t0;
    if (nseg > 0) {
      k.csr_brows++;
      k.split += nseg > 2;
    } else if (t1 > t0) {
      k.tile_brows++;
    }
  }
  CHECK(mixed == 0, "%s: %lld block rows hold both tiles and segments", label, (long long)mixed);
  CHECK(order == 0, "%s: %lld fp64 segments after fp32 ones", label, (long long)order);
  CHECK(k.csr_brows == T->csr_brows && nnz == T->csr_nnz && k.seg64 + k.seg32 == T->nsegs,
        "%s: header says %lld CSR-like block rows, %lld nonzeros, %lld segments; stored %lld, "
        "%lld, %lld",
        label, (long long)T->csr_brows, (long long)T->csr_nnz, (long long)T->nsegs,
        (long long)k.csr_brows, (long long)nnz, (long long)(k.seg64 + k.seg32));
  int64_t fc = T->fmt_count[0] + T->fmt_count[1] + T->fmt_count[2] + T->fmt_count[3];
  CHECK(fc == tiles && tiles + T->nsegs == T->ntiles, "%s: %lld tiles by format, %lld stored",
        label, (long long)fc, (long long)tiles);
  return k;
}

static void test_brow_kinds(void) {
  struct {
    const char *name;
    int64_t rows, cols, band_rows, per, long_row, long_len;
    int want; // 0: no CSR-like block row, 1: some of each kind, 2: every nonempty one CSR-like
  } cases[] = {
      {"mixed", 645, 20000, 320, 6, 400, 1500, 1},
      {"band only", 500, 500, 500, 0, -1, 0, 0},
      {"random only", 1000, 30000, 0, 5, 17, 3000, 2},
      {"empty 40x40", 40, 40, 0, 0, -1, 0, 0},
      {"empty 0x0", 0, 0, 0, 0, -1, 0, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    test_csr m;
    if (mixed_csr(&m, cases[c].rows, cases[c].cols, cases[c].band_rows, cases[c].per,
                  cases[c].long_row, cases[c].long_len, 40 + c) != 0) {
      CHECK(0, "out of memory");
      test_csr_free(&m);
      continue;
    }
    for (int mode = 0; mode < 2; mode++) {
      msp_convert_options o = msp_convert_options_default();
      if (mode == 1) o.bdmp_digits = 8;
      char label[160];
      snprintf(label, sizeof label, "block-row kinds, %s, mode %d", cases[c].name, mode);
      msp_matrix B = NULL;
      CHECK_OK(make_bdmp(&m, MSP_FORMAT_BDMP_TCKI, o, &B));
      if (!B) continue;
      const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)B->fmt;
      kind_counts k = check_kinds(B, label);
      // The band's block rows keep their tiles, the random ones are CSR-like. The band's edge
      // block rows may go either way by the byte model: the first (rows of 13 to 25 entries: its
      // row slab is a quarter padding) and a last one of fewer than 16 rows (the slab pads the
      // missing rows), so only the band's inner block rows are checked.
      int64_t wrong = 0;
      for (int64_t br = 1; br < T->nbrows; br++) {
        const int64_t r0 = br * MSP_BDMP_TILE, r1 = r0 + MSP_BDMP_TILE;
        if (r1 <= cases[c].band_rows && r1 <= cases[c].rows)
          wrong += msp__bdmp_brow_csr(T, br);
        else if (r0 >= cases[c].band_rows)
          wrong += !msp__bdmp_brow_csr(T, br) && cases[c].want > 0;
      }
      if (cases[c].want == 0) {
        CHECK(wrong == 0 && k.csr_brows <= 2,
              "%s: %lld CSR-like block rows, expected the edges at most", label,
              (long long)k.csr_brows);
      } else if (cases[c].want == 1) {
        CHECK(wrong == 0 && k.tile_brows > 0 && k.csr_brows > 0,
              "%s: %lld block rows of the wrong kind (%lld tiles, %lld CSR-like)", label,
              (long long)wrong, (long long)k.tile_brows, (long long)k.csr_brows);
      } else {
        CHECK(k.csr_brows == T->nbrows && k.tile_brows == 0,
              "%s: %lld of %lld block rows CSR-like, expected all", label, (long long)k.csr_brows,
              (long long)T->nbrows);
      }
      if (cases[c].want > 0) {
        // both precisions in the CSR-like part, and the long row's block row split
        CHECK(k.seg64 > 0 && k.seg32 > 0, "%s: %lld fp64 and %lld fp32 segments", label,
              (long long)k.seg64, (long long)k.seg32);
        CHECK(k.split > 0, "%s: no CSR-like block row over several segments", label);
      }
      check_placement(&m, B, label);
      check_device_layout(B, label);
      check_same_as_pbp(&m, B, o, label);
      check_spmv(B, label, 500 + c);
      check_against_f64(&m, B, label);
      check_threads(B, label);
      msp_matrix_destroy(&B);
    }
    test_csr_free(&m);
  }
}

// ---- error-bounded mode on the shared collection
// ---------------------------------------------------
typedef struct {
  int visited, failed_read;
  double share32[3]; // summed fp32 share of nonzeros for D = 7, 8, 10
  int count;
} eb_state;

static void eb_matrix(const char *path, const char *name, void *user) {
  eb_state *s = (eb_state *)user;
  msp_matrix A = NULL;
  test_csr m;
  memset(&m, 0, sizeof m);
  double *x = NULL, *got = NULL, *ref = NULL, *rowsum = NULL;
  msp_vector vx = NULL, vy = NULL;
  if (msp_matrix_read_mtx(ctx, path, 0, &A) != MSP_SUCCESS) {
    s->failed_read++; // test_mtx_collection reports reading problems; here they are skipped
    return;
  }
  s->visited++;
  if (test_csr_from_matrix(&m, A) != 0) {
    CHECK(0, "%s: copy failed", name);
    goto done;
  }
  int64_t rows = m.rows, cols = m.cols;
  x = malloc((size_t)(cols ? cols : 1) * sizeof *x);
  got = malloc((size_t)(rows ? rows : 1) * sizeof *got);
  ref = malloc((size_t)(rows ? rows : 1) * sizeof *ref);
  rowsum = malloc((size_t)(rows ? rows : 1) * sizeof *rowsum);
  if (!x || !got || !ref || !rowsum) {
    CHECK(0, "out of memory");
    goto done;
  }
  CHECK_OK(msp_vector_create(ctx, cols, &vx));
  CHECK_OK(msp_vector_create(ctx, rows, &vy));
  if (!vx || !vy) goto done;
  for (int64_t i = 0; i < rows; i++) {
    double t = 0;
    for (int64_t k = m.rowptr[i]; k < m.rowptr[i + 1]; k++)
      t += fabs(m.val[k]);
    rowsum[i] = t;
  }
  int digits[3] = {7, 8, 10};
  for (int d = 0; d < 3; d++) {
    msp_convert_options o = msp_convert_options_default();
    o.format = d == 1 ? MSP_FORMAT_BDMP_TCKI : MSP_FORMAT_BDMP_PBP;
    o.bdmp_digits = digits[d];
    msp_matrix B = NULL;
    CHECK_OK(msp_matrix_convert(ctx, A, &o, &B));
    if (!B) continue;
    msp_bdmp_report r;
    CHECK_OK(msp_matrix_bdmp_info(B, &r));
    double limit = 5.0 * pow(10.0, -digits[d]);
    CHECK(r.bound <= limit, "%s D=%d: guaranteed bound %.3g above 5e-%d", name, digits[d], r.bound,
          digits[d]);
    if (m.nnz) s->share32[d] += (double)r.nnz_f32 / (double)m.nnz;
    for (int trial = 0; trial < 3; trial++) {
      msp_rng rng = {(uint64_t)(1000 * d + trial + 17)};
      double xmax = 0;
      // x over several magnitudes and signs; the bound holds for every x
      for (int64_t j = 0; j < cols; j++) {
        x[j] = (2 * msp_rng_uniform(&rng) - 1) *
               (trial == 2 ? pow(10.0, (double)msp_rng_range(&rng, 7) - 3) : 1.0);
        xmax = fmax(xmax, fabs(x[j]));
      }
      CHECK_OK(msp_vector_set(vx, x));
      CHECK_OK(msp_spmv(ctx, 1.0, B, vx, 0.0, vy));
      CHECK_OK(msp_vector_get(vy, got));
      test_oracle_spmv(&m, 1.0, x, 0.0, NULL, ref);
      int64_t bad = 0;
      for (int64_t i = 0; i < rows; i++) {
        double mag = 0;
        int64_t len = m.rowptr[i + 1] - m.rowptr[i];
        for (int64_t k = m.rowptr[i]; k < m.rowptr[i + 1]; k++)
          mag += fabs(m.val[k] * x[m.colind[k]]);
        // storage: bound * S_i * max|x| (<= 5 10^-D S_i max|x|); arithmetic: fp64 as in
        // test_compare_rows
        double b =
            r.bound * rowsum[i] * xmax + 4.0 * 0x1.0p-52 * (double)(len + 2) * mag * (1 + 1e-6);
        if (!(fabs(got[i] - ref[i]) <= b)) {
          if (bad < 3)
            fprintf(stderr, "%s D=%d row %lld: |%.17g - %.17g| > %.3g\n", name, digits[d],
                    (long long)i, got[i], ref[i], b);
          bad++;
        }
      }
      CHECK(bad == 0, "%s D=%d trial %d: %lld rows beyond the guaranteed bound", name, digits[d],
            trial, (long long)bad);
    }
    msp_matrix_destroy(&B);
  }
  s->count++;
done:
  msp_vector_destroy(&vx);
  msp_vector_destroy(&vy);
  free(x);
  free(got);
  free(ref);
  free(rowsum);
  test_csr_free(&m);
  msp_matrix_destroy(&A);
}

static void test_error_bounded(void) {
  if (!test_matrices_dir()) {
    printf("test_bdmp: MSP_MATRICES_DIR not set or absent: error-bounded mode checked on the "
           "random matrices only\n");
    return;
  }
  eb_state s;
  memset(&s, 0, sizeof s);
  test_for_each_matrix(0, eb_matrix, &s);
  CHECK(s.visited > 0, "no matrix of the collection could be read");
  if (s.count) {
    printf("test_bdmp: error-bounded mode on %d matrices (%d unreadable): mean fp32 share of "
           "nonzeros D=7 %.1f%%, D=8 %.1f%%, D=10 %.1f%%\n",
           s.count, s.failed_read, 100 * s.share32[0] / s.count, 100 * s.share32[1] / s.count,
           100 * s.share32[2] / s.count);
  }
}

// ---- the selection against an independent reference --------------------------------------------
// The reference follows the documented rules literally: lambda from the chunked warp-order sums
// of bdmp.h, a tile's precision by scanning all its values (threshold mode), and the
// error-bounded mode's greedy pass as ONE pass over all tiles in (cost, tile) order (the library
// takes it block row by block row, which bdmp.c argues takes the same tiles). Tiles are numbered
// by block row, then block column. The library's report and the precision of every stored entry
// (the PBP record's bits) must match bit for bit, with 1, 2 and 3 threads.
typedef struct {
  int64_t br, bc, n;
  int64_t *k; // the tile's entries (CSR positions), by row then column
  double cost;
  int64_t t;
} ref_tile;

static int ref_tile_cmp(const void *a, const void *b) {
  const ref_tile *x = *(const ref_tile *const *)a, *y = *(const ref_tile *const *)b;
  if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
  return (x->t > y->t) - (x->t < y->t);
}

static double ref_chunk_sum(const double *v, int64_t n, int mode, double mean) {
  double l[32];
  for (int q = 0; q < 32; q++) {
    l[q] = 0;
    for (int64_t k = q; k < n; k += 32) {
      double a = mode == 2 ? v[k] : fabs(v[k]);
      if (mode == 1) a = (fabs(v[k]) - mean) * (fabs(v[k]) - mean);
      l[q] += a;
    }
  }
  for (int off = 16; off; off /= 2) {
    double t[32];
    for (int q = 0; q < 32; q++)
      t[q] = l[q] + l[q ^ off];
    memcpy(l, t, sizeof l);
  }
  return l[0];
}

static double ref_sum(const double *v, int64_t n, int mode, double mean) {
  if (n == 0) return 0;
  double *p = malloc((size_t)((n + 1023) / 1024) * sizeof *p);
  if (!p) return NAN;
  int64_t m = 0;
  for (int64_t k = 0; k < n; k += 1024)
    p[m++] = ref_chunk_sum(v + k, n - k < 1024 ? n - k : 1024, mode, mean);
  while (m > 1) {
    int64_t m2 = 0;
    for (int64_t k = 0; k < m; k += 1024)
      p[m2++] = ref_chunk_sum(p + k, m - k < 1024 ? m - k : 1024, 2, 0);
    m = m2;
  }
  const double r = p[0];
  free(p);
  return r;
}

static int ref_exact32(double a) {
  return (double)(float)a == a;
}
static int ref_fits32(double a) {
  return fabs(a) == 0 || (fabs(a) >= FLT_MIN && fabs(a) <= FLT_MAX);
}

static int mixed_threshold, mixed_digits; // cases whose reference mixes fp32 and fp64 entries

static void check_selection(const test_csr *m, const char *name, double f, int digits, int paper) {
  const int64_t nbr = (m->rows + 15) / 16;
  ref_tile *tiles = NULL, **order = NULL;
  int64_t nt = 0, cap = 0;
  uint8_t *e64 = calloc((size_t)(m->nnz ? m->nnz : 1), 1);
  double *rowsum = calloc((size_t)(m->rows ? m->rows : 1), sizeof *rowsum);
  double *used = calloc((size_t)(m->rows ? m->rows : 1), sizeof *used);
  CHECK(e64 && rowsum && used, "allocation");
  if (!e64 || !rowsum || !used) goto done;
  // tiles: each block row's entries grouped by block column (a scan per block column present)
  for (int64_t br = 0; br < nbr; br++) {
    const int64_t r0 = 16 * br, r1 = r0 + 16 < m->rows ? r0 + 16 : m->rows;
    int64_t next = 0;
    for (;;) { // the smallest block column >= next present in the block row
      int64_t bc = INT64_MAX;
      for (int64_t i = r0; i < r1; i++)
        for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
          if (m->colind[k] / 16 >= next && m->colind[k] / 16 < bc) bc = m->colind[k] / 16;
      if (bc == INT64_MAX) break;
      if (nt == cap) {
        cap = cap ? 2 * cap : 64;
        ref_tile *t2 = realloc(tiles, (size_t)cap * sizeof *t2);
        CHECK(t2 != NULL, "allocation");
        if (!t2) goto done;
        tiles = t2;
      }
      ref_tile *t = &tiles[nt];
      t->br = br;
      t->bc = bc;
      t->n = 0;
      t->t = nt;
      t->k = malloc(256 * sizeof *t->k);
      CHECK(t->k != NULL, "allocation");
      if (!t->k) goto done;
      nt++;
      for (int64_t i = r0; i < r1; i++)
        for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
          if (m->colind[k] / 16 == bc) t->k[t->n++] = k;
      next = bc + 1;
    }
  }
  for (int64_t i = 0; i < m->rows; i++)
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
      rowsum[i] += fabs(m->val[k]);
  double lambda = 0;
  if (!digits && m->nnz) {
    const double mean = ref_sum(m->val, m->nnz, 0, 0) / (double)m->nnz;
    const double sd = sqrt(ref_sum(m->val, m->nnz, 1, mean) / (double)m->nnz);
    lambda = f * (mean + 3.0 * sd);
  }
  const double rel = 5.0 * pow(10.0, -(double)digits) / MSP_U_F32;
  for (int64_t q = 0; q < nt; q++) {
    ref_tile *t = &tiles[q];
    int f32 = 1;
    double cost = 0, ti[16] = {0};
    for (int64_t e = 0; e < t->n; e++) {
      const double a = m->val[t->k[e]];
      const double c = !paper && ref_exact32(a) ? 0 : fabs(a);
      if (!digits) f32 &= (!paper && ref_exact32(a)) || (fabs(a) < lambda && ref_fits32(a));
      if (digits) {
        f32 &= c == 0 || ref_fits32(a);
        int64_t i = 0;
        while (m->rowptr[i + 1] <= t->k[e])
          i++;
        ti[i - 16 * t->br] += c;
      }
    }
    for (int r = 0; digits && r < 16; r++) {
      const int64_t i = 16 * t->br + r;
      if (ti[r] > 0) cost = fmax(cost, rel * rowsum[i] > 0 ? ti[r] / (rel * rowsum[i]) : HUGE_VAL);
    }
    t->cost = digits ? (f32 ? cost : HUGE_VAL) : 0;
    for (int64_t e = 0; e < t->n; e++)
      e64[t->k[e]] = 1; // fp64 until chosen
    if (!digits && f32)
      for (int64_t e = 0; e < t->n; e++)
        e64[t->k[e]] = 0;
  }
  if (digits) {
    order = malloc((size_t)(nt ? nt : 1) * sizeof *order);
    CHECK(order != NULL, "allocation");
    if (!order) goto done;
    for (int64_t q = 0; q < nt; q++)
      order[q] = &tiles[q];
    qsort(order, (size_t)nt, sizeof *order, ref_tile_cmp);
    for (int64_t q = 0; q < nt && order[q]->cost <= 1.0; q++) {
      const ref_tile *t = order[q];
      double ti[16] = {0};
      for (int64_t e = 0; e < t->n; e++) {
        int64_t i = 16 * t->br;
        while (m->rowptr[i + 1] <= t->k[e])
          i++;
        ti[i - 16 * t->br] += !paper && ref_exact32(m->val[t->k[e]]) ? 0 : fabs(m->val[t->k[e]]);
      }
      int ok = 1;
      for (int r = 0; r < 16; r++)
        if (ti[r] > 0) ok &= used[16 * t->br + r] + ti[r] <= rel * rowsum[16 * t->br + r];
      if (!ok) continue;
      for (int r = 0; r < 16; r++)
        if (ti[r] > 0) used[16 * t->br + r] += ti[r];
      for (int64_t e = 0; e < t->n; e++)
        e64[t->k[e]] = 0;
    }
  }
  // the bound and the counts reached
  int64_t tiles32 = 0, nnz32 = 0;
  double bound = 0;
  for (int64_t q = 0; q < nt; q++)
    if (!e64[tiles[q].k[0]]) tiles32++;
  for (int64_t i = 0; i < m->rows; i++) {
    double u = 0;
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++) {
      if (e64[k]) continue;
      nnz32++;
      u += ref_exact32(m->val[k]) ? 0 : fabs(m->val[k]);
    }
    if (rowsum[i] > 0) bound = fmax(bound, MSP_U_F32 * u / rowsum[i]);
  }
  if (nnz32 > 0 && nnz32 < m->nnz) {
    if (digits)
      mixed_digits++;
    else
      mixed_threshold++;
  }
  const int saved = omp_get_max_threads();
  for (int threads = 1; threads <= 3; threads++) {
    omp_set_num_threads(threads);
    msp_convert_options o = msp_convert_options_default();
    o.bdmp_f = f;
    o.bdmp_digits = digits;
    o.bdmp_paper_rule = paper;
    msp_matrix B = NULL;
    CHECK_OK(make_bdmp(m, MSP_FORMAT_BDMP_PBP, o, &B));
    if (!B) continue;
    const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)B->fmt;
    char what[160];
    snprintf(what, sizeof what, "%s f=%g D=%d paper=%d, %d threads", name, f, digits, paper,
             threads);
    CHECK(memcmp(&P->info.lambda, &lambda, sizeof lambda) == 0, "%s: lambda %.17g, reference %.17g",
          what, P->info.lambda, lambda);
    CHECK(memcmp(&P->info.bound, &bound, sizeof bound) == 0, "%s: bound %.17g, reference %.17g",
          what, P->info.bound, bound);
    CHECK(P->info.tiles == nt && P->info.tiles32 == tiles32 && P->info.nnz32 == nnz32,
          "%s: tiles %lld (reference %lld), fp32 tiles %lld (%lld), fp32 entries %lld (%lld)", what,
          (long long)P->info.tiles, (long long)nt, (long long)P->info.tiles32, (long long)tiles32,
          (long long)P->info.nnz32, (long long)nnz32);
    int64_t differ = 0;
    for (int64_t k = 0; k < m->nnz; k++) {
      int64_t at;
      differ += msp__pbp_split(P->meta, k, &at) != e64[k];
    }
    CHECK(differ == 0, "%s: %lld entries stored in another precision than the reference's", what,
          (long long)differ);
    msp_matrix_destroy(&B);
  }
  omp_set_num_threads(saved);
done:
  for (int64_t q = 0; q < nt; q++)
    free(tiles[q].k);
  free(tiles);
  free(order);
  free(e64);
  free(rowsum);
  free(used);
}

static void test_selection_reference(void) {
  // values: mostly moderate with a tail of large ones (a mixed selection), integers (exact in
  // fp32), and values fp32 cannot hold
  static const int64_t shapes[][3] = {{40, 40, 9}, {333, 500, 17}, {200, 3000, 120}, {64, 64, 40}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    test_csr m;
    if (test_csr_random(&m, shapes[sh][0], shapes[sh][1], (double)shapes[sh][2], 900 + sh) != 0) {
      CHECK(0, "random matrix");
      continue;
    }
    msp_rng r = {4242 + sh};
    for (int64_t k = 0; k < m.nnz; k++) {
      const double u = msp_rng_uniform(&r);
      m.val[k] = u < 0.1    ? (double)(1 + msp_rng_range(&r, 9))
                 : u < 0.15 ? 1e3 * msp_rng_uniform(&r)
                 : u < 0.17 ? (sh == 1 ? 1e-40 : 1e39)
                            : msp_rng_uniform(&r) - 0.5;
    }
    char name[64];
    snprintf(name, sizeof name, "random %lld x %lld", (long long)m.rows, (long long)m.cols);
    check_selection(&m, name, 0.5, 0, 0);
    check_selection(&m, name, 0.05, 0, 0);
    check_selection(&m, name, 0.5, 0, 1);
    check_selection(&m, name, 0.5, 3, 0);
    check_selection(&m, name, 0.5, 7, 0);
    check_selection(&m, name, 0.5, 10, 0);
    check_selection(&m, name, 0.5, 7, 1);
    test_csr_free(&m);
  }
  printf("test_bdmp: selection against the reference: %d threshold and %d error-bounded cases "
         "with both precisions\n",
         mixed_threshold, mixed_digits);
  CHECK(mixed_threshold > 0 && mixed_digits > 0, "the reference cases never mix precisions");
}

// ---- accuracy helpers
// ------------------------------------------------------------------------------
static void test_accuracy(void) {
  CHECK(msp_significant_digits(1.0, 1.0) == 17, "exact -> 17");
  CHECK(msp_significant_digits(0.0, 0.0) == 17, "0 vs 0 -> 17");
  CHECK(msp_significant_digits(1e-300, 0.0) == 0, "nonzero vs 0 -> 0");
  CHECK(msp_significant_digits(1.0000004, 1.0) == 7, "4e-7 < 5e-7 -> 7");
  CHECK(msp_significant_digits(1.000001, 1.0) == 6, "1e-6 -> 6");
  CHECK(msp_significant_digits(1.00004, 1.0) == 5, "4e-5 -> 5");
  CHECK(msp_significant_digits(-2.0, 2.0) == 0, "opposite sign -> 0");
  CHECK(msp_significant_digits(NAN, 1.0) == 0, "NaN -> 0");
  CHECK(msp_significant_digits(1.0 + 0x1.0p-52, 1.0) == 16, "one ulp of 1 (2.2e-16) -> 16 digits");
  CHECK(msp_significant_digits((double)(float)0.1, 0.1) == 8, "fp32 0.1 (1.5e-8) -> 8 digits");
  double ref[10], y[10];
  for (int i = 0; i < 10; i++)
    ref[i] = i + 1.0;
  memcpy(y, ref, sizeof y);
  y[0] *= 1 + 1e-3; // 3 digits
  y[1] *= 1 + 1e-7; // 7
  y[2] *= 1 + 3e-8; // 8
  y[3] *= 1 + 6e-7; // 6
  msp_accuracy acc;
  CHECK_OK(msp_accuracy_compare(10, y, ref, &acc));
  CHECK(acc.hist[3] == 1 && acc.hist[6] == 1 && acc.hist[7] == 1 &&
            acc.hist[MSP_ACCURACY_BINS - 1] == 7,
        "histogram %lld %lld %lld %lld", (long long)acc.hist[3], (long long)acc.hist[6],
        (long long)acc.hist[7], (long long)acc.hist[8]);
  CHECK(acc.ratio == 0.8, "accuracy ratio %g, expected 0.8", acc.ratio);
  CHECK(acc.min_digits == 3, "min digits %g", acc.min_digits);
  CHECK(fabs(acc.max_rel_error - 1e-3) < 1e-12, "max relative error %g", acc.max_rel_error);
  CHECK_STATUS(msp_accuracy_compare(3, NULL, ref, &acc), MSP_ERR_INVALID_ARGUMENT);
}

// The report's footprint parts add up to msp_matrix_bytes, with the values counted from the
// selection (PBP: every nonzero once; TCKI: with ELL padding, so at least that), on random
// matrices (random values: both precisions) with and without CSR-like block rows.
static void test_report_bytes(void) {
  const int64_t sizes[][3] = {{0, 0, 0}, {200, 200, 4}, {512, 512, 40}, {1000, 3000, 12}};
  for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
    test_csr m;
    if (test_csr_random(&m, sizes[c][0], sizes[c][1], (double)sizes[c][2], 900 + c) != 0) {
      CHECK(0, "generator failed");
      continue;
    }
    for (int f = 0; f < 2; f++) {
      const msp_format format = f ? MSP_FORMAT_BDMP_TCKI : MSP_FORMAT_BDMP_PBP;
      msp_matrix B = NULL;
      msp_bdmp_report r;
      CHECK_OK(make_bdmp(&m, format, msp_convert_options_default(), &B));
      if (!B) continue;
      CHECK_OK(msp_matrix_bdmp_info(B, &r));
      const int64_t vals = r.nnz_f32 * 4 + r.nnz_f64 * 8;
      CHECK(r.bytes_values + r.bytes_indices + r.bytes_meta == (int64_t)msp_matrix_bytes(B),
            "%s %lld x %lld: parts %lld + %lld + %lld, footprint %lld", msp_format_name(format),
            (long long)m.rows, (long long)m.cols, (long long)r.bytes_values,
            (long long)r.bytes_indices, (long long)r.bytes_meta, (long long)msp_matrix_bytes(B));
      CHECK(f ? r.bytes_values >= vals : r.bytes_values == vals,
            "%s %lld x %lld: values %lld bytes, the selection stores %lld", msp_format_name(format),
            (long long)m.rows, (long long)m.cols, (long long)r.bytes_values, (long long)vals);
      CHECK(r.bytes_indices >= 0 && r.bytes_meta >= 0 && r.csr_nnz <= m.nnz &&
                (f || (r.csr_brows == 0 && r.csr_nnz == 0)),
            "%s: indices %lld, metadata %lld, CSR-like %lld rows %lld nonzeros",
            msp_format_name(format), (long long)r.bytes_indices, (long long)r.bytes_meta,
            (long long)r.csr_brows, (long long)r.csr_nnz);
      msp_matrix_destroy(&B);
    }
    test_csr_free(&m);
  }
}

int main(void) {
  if (msp_context_create(MSP_BACKEND_CPU, 0, &ctx) != MSP_SUCCESS) {
    fprintf(stderr, "test_bdmp: no CPU context: %s\n", msp_last_error());
    return 1;
  }
  // The hand-built tiles hold a few entries each: kept as tiles (msp__bdmp_keep_tiles), whatever
  // the byte model says, so that their precisions and formats can be checked.
  msp__bdmp_keep_tiles = 1;
  test_precision_rule();
  test_format_rule();
  msp__bdmp_keep_tiles = 0;
  test_random();
  test_brow_kinds();
  test_report_bytes();
  test_selection_reference();
  test_accuracy();
  test_error_bounded();
  msp_context_destroy(&ctx);
  return msp_test_finish("test_bdmp");
}

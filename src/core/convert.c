// convert.c: msp_matrix_convert: options, fill limit, format dispatch, the AUTO rule and TUNE.
#define _POSIX_C_SOURCE 199309L // clock_gettime under -std=c11

#include "bdmp.h"
#include "convert.h"
#include "formats.h"

#include "precision.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// ---- MSP_FORMAT_AUTO ------------------------------------------------------------------------
// The rule (msp__choose_format), first match wins; the fills are padded slots / nnz:
//   1. no nonzeros                                                        -> CSR
//   2. rows >= MIN_ROWS, dia_fill <= DIA_FILL and diagonals <= DIA_DIAGS  -> DIA (stencils, bands)
//   3. rows >= MIN_ROWS, hdia_fill (hack 64) <= HDIA_FILL                 -> HDIA
//   4. skewness >= COO_SKEW                                               -> COO (skewed rows)
//   5. rows >= MIN_ROWS, ell_fill <= ELL_FILL and row_cv <= ELL_CV        -> ELL (uniform rows)
//   6. rows >= MIN_ROWS, hll_fill (hack 32) <= HLL_FILL                   -> HLL (a few long rows)
//   7. otherwise                                          -> CSR with the kernel rule (matrix.c)
// If the backend has no kernel for the chosen format (in the requested precision), or max_fill
// refuses it, AUTO falls back to CSR and says so. DIA moves fewer bytes than CSR while its
// padding is below half the nonzeros (8 (1 + f) < 12 bytes per entry).
// The thresholds were tuned with mixsparse-bench (fp64) on large generated matrices and smaller
// real ones (bench/README.md has the table; docs/design.md, "Kernel choices and what was
// measured", the figures):
// - DIA/HDIA won on every stencil and banded matrix, near the read bandwidth: they read no column
//   indices.
// - The one-thread-per-row formats (ELL, HLL, DIA, HDIA) lost on matrices of fewer than about
//   MIN_ROWS rows: too few threads to fill the GPU's multiprocessors.
// - On skewed matrices (skewness >= 10) our COO beat our merge-path CSR on all but one, a tie.
// - HYB never beat CSR vector or ELL: AUTO does not pick it; TUNE still tries it.
#define MSP__AUTO_MIN_ROWS 50000 // ELL, HLL, DIA, HDIA only with at least this many rows
#define MSP__AUTO_DIA_FILL 0.5   // DIA when dia_fill <= this ...
#define MSP__AUTO_DIA_DIAGS 64   // ... and there are at most this many occupied diagonals
#define MSP__AUTO_HDIA_FILL 0.5  // HDIA when the per-hack padding (hdia_fill) <= this
#define MSP__AUTO_COO_SKEW 10.0  // COO when skewness (max / mean row length) >= this
#define MSP__AUTO_ELL_FILL 0.25  // ELL when ell_fill <= this ...
#define MSP__AUTO_ELL_CV 0.25    // ... and the row lengths are near-uniform (row_cv <= this)
#define MSP__AUTO_HLL_FILL 0.3   // HLL when the hacked padding (hll_fill) <= this
// A refinement of rule 7 (msp__choose_format_prec), fitted on every kernel of ours over the
// collection (docs/performance.md, "The AUTO rule on the collection"): a matrix of at most
// COO_MAX_NNZ nonzeros is bound by latency more than by bytes, and there COO (one launch, the
// same work per warp) beats CSR once rows are long enough (mean >= COO_MEAN) for its row index
// to weigh little, unless the rows are regular enough for a CSR kernel:
// - irregular rows (row_cv > COO_CV) -> COO in fp64 and fp32: a CSR group idles on the short
//   rows beside the long ones, COO's tiles do not;
// - near-uniform rows (row_cv <= COO_CV) -> CSR in fp32, and in fp64 within VECTOR_MEAN_MIN to
//   VECTOR_MEAN_MAX entries a row, where a vector group is filled by a row without a tail and no
//   row index is read; outside that band fp64 keeps COO (shorter rows idle the group, longer
//   ones on few rows leave the GPU underfilled by groups).
// Other storage precisions keep rule 7 (their COO was not measured against CSR).
#define MSP__AUTO_COO_MEAN 6.0
#define MSP__AUTO_COO_MAX_NNZ 1000000
#define MSP__AUTO_COO_CV 0.4
#define MSP__AUTO_VECTOR_MEAN_MIN 8.0
#define MSP__AUTO_VECTOR_MEAN_MAX 25.0

// TUNE: untimed warm-up runs and timed runs (the median is kept) per candidate.
#define MSP__TUNE_WARMUP 2
#define MSP__TUNE_RUNS 5
#define MSP__TUNE_BATCH_S 2e-4   // a timed sample lasts about this long (seconds) ...
#define MSP__TUNE_BATCH_MAX 1000 // ... but holds at most this many products

msp_convert_options msp_convert_options_default(void) {
  msp_convert_options o;
  memset(&o, 0, sizeof o);
  o.format = MSP_FORMAT_CSR;
  o.kernel = MSP_KERNEL_AUTO;
  o.precision = MSP_PRECISION_F64;
  o.hack_size = 0;
  o.ell_width = 0;
  o.hyb_k = -1;
  o.max_fill = 3.0;
  o.cpms_segments = 0;
  o.bdmp_f = 0.5;
  o.bdmp_lambda = 0.0;
  o.bdmp_digits = 0;
  o.allow_atomics = 0;
  o.range = MSP_RANGE_ERROR;
  return o;
}

// ---- the records of the formats (src/core/<fmt>.c), indexed by msp_format ---------------------
const msp__format_ops *const msp__format_table[MSP_FORMAT_COUNT] = {
#define MSP__FORMAT_OPS_REF_(name, tag, ident) &msp__fmt_##ident,
    MSP_FORMAT_LIST(MSP__FORMAT_OPS_REF_)
#undef MSP__FORMAT_OPS_REF_
};

// ---- per-format host data: free, footprint, back to CSR -----------------------------------
void msp__format_free(msp_format format, void *fmt) {
  if (!fmt) return;
  if ((unsigned)format < MSP_FORMAT_COUNT)
    msp__format_table[format]->free(fmt);
  else
    msp__free(fmt);
}

size_t msp__format_bytes(const msp_matrix A) {
  // A matrix without host data of its own is its CSR arrays.
  const msp__format_ops *ops = A->fmt && (unsigned)A->format < MSP_FORMAT_COUNT
                                   ? msp__format_table[A->format]
                                   : &msp__fmt_csr;
  return ops->bytes(A);
}

msp_status msp__format_to_csr(const msp_matrix A, int64_t **rowptr, int32_t **colind,
                              double **val) {
  msp_status st = MSP_SUCCESS;
  int64_t *rp = NULL;
  int32_t *ci = NULL;
  double *v = NULL;
  const msp__format_ops *ops =
      (unsigned)A->format < MSP_FORMAT_COUNT ? msp__format_table[A->format] : NULL;
  *rowptr = NULL;
  *colind = NULL;
  *val = NULL;
  if (!ops || (ops->has_fmt && !A->fmt))
    return msp__error(MSP_ERR_NOT_SUPPORTED, "msp__format_to_csr: no host data for format %s",
                      msp_format_name(A->format));
  MSP_TRY(MSP_ALLOC(rp, A->rows + 1, "CSR row pointers"));
  MSP_TRY(ops->to_csr(A, rp, NULL, NULL));
  MSP_TRY(MSP_ALLOC(ci, rp[A->rows], "CSR column indices"));
  MSP_TRY(MSP_ALLOC(v, rp[A->rows], "CSR values"));
  MSP_TRY(ops->to_csr(A, rp, ci, v));
  *rowptr = rp;
  *colind = ci;
  *val = v;
  rp = NULL;
  ci = NULL;
  v = NULL;
exit:
  msp__free(rp);
  msp__free(ci);
  msp__free(v);
  return st;
}

// ---- format statistics and the AUTO rule ---------------------------------------------------
msp_status msp__analyze_formats(const msp_matrix A, msp_matrix_stats *s) {
  msp_status st = MSP_SUCCESS;
  int64_t hll_slots = 0, hdia_diags = 0, hdia_slots = 0;
  s->hll_fill = s->hdia_fill = s->hyb_fill = s->hyb_coo_share = 0.0;
  s->hyb_k = msp__hyb_rule_k(A);
  if (A->nnz == 0) return MSP_SUCCESS;
  double nnz = (double)A->nnz;
  MSP_TRY(msp__hll_count(A, MSP__HLL_HACK, &hll_slots));
  MSP_TRY(msp__hdia_count(A, MSP__HDIA_HACK, &hdia_diags, &hdia_slots));
  int64_t coo = msp__hyb_coo_nnz(A, s->hyb_k);
  s->hll_fill = ((double)hll_slots - nnz) / nnz;
  s->hdia_fill = ((double)hdia_slots - nnz) / nnz;
  s->hyb_fill = ((double)A->rows * (double)s->hyb_k - (nnz - (double)coo)) / nnz;
  s->hyb_coo_share = (double)coo / nnz;
exit:
  return st;
}

msp_format msp__choose_format(const msp_matrix_stats *s, char *reason, size_t n) {
  msp_format f;
  char buf[256];
  int many_rows = s->rows >= MSP__AUTO_MIN_ROWS;
  if (s->nnz == 0 || s->rows == 0) {
    f = MSP_FORMAT_CSR;
    snprintf(buf, sizeof buf, "no nonzeros: csr");
  } else if (many_rows && s->dia_fill <= MSP__AUTO_DIA_FILL &&
             s->diagonals <= MSP__AUTO_DIA_DIAGS) {
    f = MSP_FORMAT_DIA;
    snprintf(buf, sizeof buf, "dia_fill %.3g <= %.2g and %lld diagonals <= %d: dia", s->dia_fill,
             MSP__AUTO_DIA_FILL, (long long)s->diagonals, MSP__AUTO_DIA_DIAGS);
  } else if (many_rows && s->hdia_fill <= MSP__AUTO_HDIA_FILL) {
    f = MSP_FORMAT_HDIA;
    snprintf(buf, sizeof buf,
             "dia_fill %.3g with %lld diagonals, but hdia_fill %.3g <= %.2g (few diagonals per "
             "hack of %d rows): hdia",
             s->dia_fill, (long long)s->diagonals, s->hdia_fill, MSP__AUTO_HDIA_FILL,
             MSP__HDIA_HACK);
  } else if (s->skewness >= MSP__AUTO_COO_SKEW) {
    f = MSP_FORMAT_COO;
    snprintf(buf, sizeof buf,
             "skewed rows: skewness (max/mean row length) %.3g >= %.0f: coo (equal work per "
             "thread, no row pointers)",
             s->skewness, MSP__AUTO_COO_SKEW);
  } else if (many_rows && s->ell_fill <= MSP__AUTO_ELL_FILL && s->row_cv <= MSP__AUTO_ELL_CV) {
    f = MSP_FORMAT_ELL;
    snprintf(buf, sizeof buf,
             "near-uniform rows: ell_fill %.3g <= %.2g and row_cv %.3g <= %.2g: ell", s->ell_fill,
             MSP__AUTO_ELL_FILL, s->row_cv, MSP__AUTO_ELL_CV);
  } else if (many_rows && s->hll_fill <= MSP__AUTO_HLL_FILL) {
    f = MSP_FORMAT_HLL;
    snprintf(buf, sizeof buf,
             "ell_fill %.3g (row_cv %.3g) too high for ell, but hll_fill %.3g <= %.2g (long "
             "rows confined to a few hacks of %d): hll",
             s->ell_fill, s->row_cv, s->hll_fill, MSP__AUTO_HLL_FILL, MSP__HLL_HACK);
  } else if (!many_rows) {
    f = MSP_FORMAT_CSR;
    snprintf(buf, sizeof buf, "%lld rows < %d, too few for a thread per row: csr",
             (long long)s->rows, MSP__AUTO_MIN_ROWS);
  } else {
    f = MSP_FORMAT_CSR;
    snprintf(buf, sizeof buf,
             "irregular: dia_fill %.3g, hdia_fill %.3g, ell_fill %.3g, hll_fill %.3g: csr",
             s->dia_fill, s->hdia_fill, s->ell_fill, s->hll_fill);
  }
  if (reason && n) snprintf(reason, n, "%s", buf);
  return f;
}

// Rule 7's refinement for values stored in precision p (the COO_* constants above).
msp_format msp__choose_format_prec(const msp_matrix_stats *s, msp_precision p, char *reason,
                                   size_t n) {
  char buf[256];
  msp_format f = msp__choose_format(s, buf, sizeof buf);
  if (f != MSP_FORMAT_CSR || s->nnz == 0 || s->nnz > MSP__AUTO_COO_MAX_NNZ ||
      s->row_mean < MSP__AUTO_COO_MEAN || (p != MSP_PRECISION_F64 && p != MSP_PRECISION_F32)) {
    if (reason && n) snprintf(reason, n, "%s", buf);
    return f;
  }
  const int irregular = s->row_cv > MSP__AUTO_COO_CV;
  const int vector_band =
      s->row_mean >= MSP__AUTO_VECTOR_MEAN_MIN && s->row_mean < MSP__AUTO_VECTOR_MEAN_MAX;
  char w2[MSP__RULE_REASON];
  if (irregular || (p == MSP_PRECISION_F64 && !vector_band)) {
    f = MSP_FORMAT_COO;
    if (irregular)
      snprintf(w2, sizeof w2,
               "%s; but %lld nonzeros <= %d, mean row length %.3g >= %.0f and irregular rows "
               "(row_cv %.3g > %.2g): coo (one launch, equal work per warp)",
               buf, (long long)s->nnz, MSP__AUTO_COO_MAX_NNZ, s->row_mean, MSP__AUTO_COO_MEAN,
               s->row_cv, MSP__AUTO_COO_CV);
    else
      snprintf(w2, sizeof w2,
               "%s; but %lld nonzeros <= %d in fp64 and mean row length %.3g >= %.0f outside "
               "%.0f-%.0f: coo (one launch, equal work per warp)",
               buf, (long long)s->nnz, MSP__AUTO_COO_MAX_NNZ, s->row_mean, MSP__AUTO_COO_MEAN,
               MSP__AUTO_VECTOR_MEAN_MIN, MSP__AUTO_VECTOR_MEAN_MAX);
  } else {
    snprintf(w2, sizeof w2, "%s; near-uniform rows (row_cv %.3g <= %.2g%s): csr kept", buf,
             s->row_cv, MSP__AUTO_COO_CV,
             p == MSP_PRECISION_F64 ? ", mean row length in the vector band" : "");
  }
  if (reason && n) snprintf(reason, n, "%s", w2);
  return f;
}

// ---- the AUTO rule of the CPU backend -------------------------------------------------------
// On the CPU backend AUTO uses its own rule (the rule above stays the CUDA backend's), first
// match wins:
//   1. no nonzeros                            -> CSR
//   2. hdia_fill (hack 64) <= CPU_HDIA_FILL   -> HDIA (stencils, bands, diagonal structure)
//   3. otherwise                              -> CSR
// Chosen from make bench-cpu (fp64, 1 and 2 threads) on the development machine (docs/design.md,
// "Kernel choices and what was measured", has the figures):
// - HDIA was our fastest format on the stencil, with DIA: it reads no column indices (8 (1 + f)
//   bytes per entry against CSR's 12 while its padding f is below one half) and each hack's
//   values are one contiguous run, where DIA's diagonals lie rows * 8 bytes apart. DIA reads the
//   same bytes at best, so the CPU rule does not pick it.
// - With the nonzero-balanced split and the paired partial sums of src/cpu (dispatch.h), CSR
//   was the fastest of our formats, or within the run's spread, on the other matrices. The skew
//   that made COO the GPU's choice is handled by CSR's balanced split on the CPU, and COO's CPU
//   kernel is CSR's loop over the triples' columns and values (src/cpu/coo.c: the same speed
//   within the spread, the same bits), so the rule never needs COO; ELL reads padding.
// - HLL was ahead on a few matrices of short rows, but no padding threshold separates them from
//   those where it loses; since msp__cpu_row_sum adds a row's odd last entry without a branch on
//   the row's parity (which CSR mispredicted on rows of varying length) HLL leads only narrowly
//   on two of them, and a rule that picked HLL for short rows of a cache-resident matrix (padding
//   <= 0.5, mean row < 24, HLL <= 16 MB) would now lose on others, so CSR stays.
#define MSP__AUTO_CPU_HDIA_FILL 0.5 // HDIA when hdia_fill <= this (fewer bytes than CSR)

static msp_format choose_format_cpu(const msp_matrix_stats *s, char *reason, size_t n) {
  msp_format f;
  char buf[256];
  if (s->nnz == 0 || s->rows == 0) {
    f = MSP_FORMAT_CSR;
    snprintf(buf, sizeof buf, "cpu rule: no nonzeros: csr");
  } else if (s->hdia_fill <= MSP__AUTO_CPU_HDIA_FILL) {
    f = MSP_FORMAT_HDIA;
    snprintf(buf, sizeof buf,
             "cpu rule: hdia_fill %.3g <= %.2g (diagonal structure per hack of %d rows): hdia "
             "(no column indices, one contiguous run per hack)",
             s->hdia_fill, MSP__AUTO_CPU_HDIA_FILL, MSP__HDIA_HACK);
  } else {
    f = MSP_FORMAT_CSR;
    snprintf(buf, sizeof buf,
             "cpu rule: hdia_fill %.3g > %.2g: csr (rows split by nonzeros, skewness %.3g; "
             "no padding)",
             s->hdia_fill, MSP__AUTO_CPU_HDIA_FILL, s->skewness);
  }
  if (reason && n) snprintf(reason, n, "%s", buf);
  return f;
}

// ---- conversion ----------------------------------------------------------------------------
// The single switch point for storage precisions: does format f have a kernel for values
// stored in precision p on ctx's backend? (The values themselves are encoded by
// msp__matrix_encode_values, src/core/precision.c, which refuses the formats it cannot encode.)
int msp__convert_has_kernel(msp_context ctx, msp_format f, msp_precision p) {
  (void)p; // every kernel reads every storage precision
  return ctx->backend->spmv[f] != NULL;
}

static msp_status validate(const msp_convert_options *o) {
  int f = (int)o->format;
  MSP_CHECK_ARG((f >= 0 && f < MSP_FORMAT_COUNT) || f == MSP_FORMAT_AUTO || f == MSP_FORMAT_TUNE,
                "msp_matrix_convert: unknown format %d", f);
  MSP_CHECK_ARG((unsigned)o->kernel < MSP_KERNEL_COUNT, "msp_matrix_convert: unknown kernel %d",
                (int)o->kernel);
  MSP_CHECK_ARG((unsigned)o->precision < MSP_PRECISION_COUNT,
                "msp_matrix_convert: unknown precision %d", (int)o->precision);
  MSP_CHECK_ARG(o->hack_size >= 0 && o->hack_size % 32 == 0,
                "msp_matrix_convert: hack_size %d must be a positive multiple of 32 (or 0 for "
                "the default: 32 for HLL, 64 for HDIA)",
                o->hack_size);
  MSP_CHECK_ARG(o->ell_width >= 0, "msp_matrix_convert: ell_width %lld is negative",
                (long long)o->ell_width);
  MSP_CHECK_ARG(o->hyb_k >= -1, "msp_matrix_convert: hyb_k %lld must be >= 0 (or -1: chosen)",
                (long long)o->hyb_k);
  MSP_CHECK_ARG(o->max_fill > 0, "msp_matrix_convert: max_fill %g must be > 0", o->max_fill);
  MSP_CHECK_ARG(o->cpms_segments >= 0, "msp_matrix_convert: cpms_segments %d is negative",
                o->cpms_segments);
  MSP_CHECK_ARG(o->range == MSP_RANGE_ERROR || o->range == MSP_RANGE_SATURATE ||
                    o->range == MSP_RANGE_ALLOW,
                "msp_matrix_convert: range policy %d (0 error, 1 saturate, 2 allow)", o->range);
  return MSP_SUCCESS;
}

// Human-readable size in decimal units.
void msp__convert_fmt_bytes(char *out, size_t n, double b) {
  if (b >= 1e9)
    snprintf(out, n, "%.1f GB", b / 1e9);
  else if (b >= 1e6)
    snprintf(out, n, "%.1f MB", b / 1e6);
  else if (b >= 1e3)
    snprintf(out, n, "%.1f kB", b / 1e3);
  else
    snprintf(out, n, "%.0f bytes", b);
}

// Refuse a format whose footprint exceeds max_fill x the CSR footprint, before allocating it.
// The message names the format in capitals ("ELL would take ...").
msp_status msp__convert_fill_check(const char *tag, double bytes, const msp_matrix A,
                                   const msp_convert_options *o) {
  double csr = msp__csr_bytes(A->rows, A->nnz, o->precision);
  if (bytes <= o->max_fill * csr) return MSP_SUCCESS;
  char fb[32], cb[32], name[32];
  size_t k = 0;
  for (; tag[k] && k + 1 < sizeof name; k++)
    name[k] = (char)toupper((unsigned char)tag[k]);
  name[k] = '\0';
  msp__convert_fmt_bytes(fb, sizeof fb, bytes);
  msp__convert_fmt_bytes(cb, sizeof cb, csr);
  return msp__error(MSP_ERR_FILL_LIMIT,
                    "%s would take %s (%.1f x the CSR footprint of %s); limit %.1f x (max_fill)",
                    name, fb, bytes / csr, cb, o->max_fill);
}

// Build the host data of format f into *fmt through its record: plan (o gets the resolved
// parameters: hack size, ELL width, HYB K; `what` the description), the fill check, build.
msp_status msp__convert_build_format(const msp_matrix A, msp_format f, msp_convert_options *o,
                                     void **fmt, char *what, size_t what_n) {
  msp_status st = MSP_SUCCESS;
  const msp__format_ops *ops = msp__format_table[f];
  double bytes = 0;
  *fmt = NULL;
  MSP_TRY(ops->plan(A, o, &bytes, what, what_n));
  if (ops->max_fill_checked) MSP_TRY(msp__convert_fill_check(ops->tag, bytes, A, o));
  {
    // The plan's footprint and the CSR copy the converted matrix keeps, before building.
    size_t need = bytes >= (double)SIZE_MAX ? SIZE_MAX : (size_t)bytes;
    need = msp__bytes_mul_add((size_t)A->rows + 1, sizeof(int64_t), need);
    need = msp__bytes_mul_add((size_t)A->nnz, sizeof(int32_t) + sizeof(double), need);
    char desc[96];
    snprintf(desc, sizeof desc, "converting a %lld x %lld matrix to %s", (long long)A->rows,
             (long long)A->cols, ops->tag);
    MSP_TRY(msp__memory_check(need, desc));
  }
  MSP_TRY(ops->build(A, o, fmt));
exit:
  return st;
}

// Make B on ctx in format f (a concrete format) from A's host CSR; `why` (may be NULL) is the
// reason for an automatic choice, else the format is "named by the caller". `prebuilt` (may be
// NULL): f's host data built already from A with *opts (AUTO's BDMP candidates); B takes it
// over, and it is freed on failure.
msp_status msp__convert_built(msp_context ctx, const msp_matrix A, msp_format f,
                              const msp_convert_options *opts, const char *why, void *prebuilt,
                              msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  msp_matrix B = NULL;
  void *fmt = prebuilt;
  msp_convert_options o = *opts;
  char what[160] = "";
  *out = NULL;
  // BDMP on a backend that builds it on the device: the plan here, the build there (below).
  // (Another storage precision than f64 goes the host way, which refuses it: BDMP chooses its own.)
  const int on_device = !prebuilt && !msp__bdmp_host_build &&
                        (f == MSP_FORMAT_BDMP_PBP || f == MSP_FORMAT_BDMP_TCKI) &&
                        ctx->backend->bdmp_convert && opts->precision == MSP_PRECISION_F64;
  if (prebuilt || on_device) {
    double bytes = 0; // the plan only resolves the options and the description here
    MSP_TRY(msp__format_table[f]->plan(A, &o, &bytes, what, sizeof what));
  }
  if (on_device) {
    // the host memory the device build leaves: the CSR copy the converted matrix keeps and the
    // record read back (PBP: its structure, at most 8 bytes a value, a word per 32 entries;
    // TCKI about as much again for its index bytes and the padding of its ELL tiles)
    size_t need = msp__bytes_mul_add(2 * ((size_t)A->rows + 1), sizeof(int64_t), 0);
    need = msp__bytes_mul_add((size_t)A->nnz, 2 * (sizeof(int32_t) + sizeof(double)), need);
    need = msp__bytes_mul_add(((size_t)A->nnz + 31) / 32, 2 * sizeof(uint32_t), need);
    if (f == MSP_FORMAT_BDMP_TCKI)
      need = msp__bytes_mul_add((size_t)A->nnz, 2 * (1 + sizeof(double)), need);
    char desc[128];
    snprintf(desc, sizeof desc, "converting a %lld x %lld matrix to %s on the device",
             (long long)A->rows, (long long)A->cols, msp_format_name(f));
    MSP_TRY(msp__memory_check(need, desc));
  } else if (!prebuilt) {
    MSP_TRY(msp__convert_build_format(A, f, &o, &fmt, what, sizeof what));
  }
  MSP_TRY(msp__matrix_alloc(ctx, A->rows, A->cols, A->nnz, &B));
  memcpy(B->rowptr, A->rowptr, (size_t)(A->rows + 1) * sizeof *B->rowptr);
  if (A->nnz) {
    memcpy(B->colind, A->colind, (size_t)A->nnz * sizeof *B->colind);
    memcpy(B->val, A->val, (size_t)A->nnz * sizeof *B->val);
  }
  B->stats = A->stats;
  B->precision = o.precision;
  B->format = f;
  B->fmt = fmt;
  fmt = NULL;
  o.format = f;
  // msp_kernel names CSR's kernels: no other format has one to choose but BDMP-PBP, which runs
  // on them (src/cuda/bdmp.cu).
  if (f == MSP_FORMAT_CSR || f == MSP_FORMAT_BDMP_PBP) {
    char kwhy[200];
    msp_kernel k = msp__choose_kernel_prec(&B->stats, B->precision, kwhy, sizeof kwhy);
    if (o.kernel == MSP_KERNEL_AUTO) {
      B->kernel = k;
      if (why)
        snprintf(B->reason, sizeof B->reason, "auto: %s; %s", why, kwhy);
      else
        snprintf(B->reason, sizeof B->reason, "%s: %s", msp_format_name(f), kwhy);
    } else {
      B->kernel = o.kernel;
      if (why)
        snprintf(B->reason, sizeof B->reason, "auto: %s; %s kernel named by the caller", why,
                 msp_kernel_name(o.kernel));
      else
        snprintf(B->reason, sizeof B->reason, "%s with the %s kernel: named by the caller",
                 msp_format_name(f), msp_kernel_name(o.kernel));
    }
    o.kernel = B->kernel;
  } else {
    B->kernel = o.kernel;
    if (why)
      snprintf(B->reason, sizeof B->reason, "auto: %s; %s", why, what);
    else
      snprintf(B->reason, sizeof B->reason, "%s: named by the caller", what);
  }
  B->opts = o;
  // Values in another precision than f64: encoded once here, before the upload.
  if (B->precision != MSP_PRECISION_F64) MSP_TRY(msp__matrix_encode_values(B));
  if (on_device)
    MSP_TRY(ctx->backend->bdmp_convert(ctx, A, B));
  else if (ctx->backend->matrix_upload)
    MSP_TRY(ctx->backend->matrix_upload(ctx, B));
  *out = B;
  B = NULL;
exit:
  if (fmt) msp__format_free(f, fmt);
  msp_matrix_destroy(&B);
  return st;
}

static msp_status convert_one(msp_context ctx, const msp_matrix A, msp_format f,
                              const msp_convert_options *opts, const char *why, msp_matrix *out) {
  return msp__convert_built(ctx, A, f, opts, why, NULL, out);
}

// The format of the backend's AUTO rule (s gets the format statistics, why[256] the reason).
msp_status msp__convert_auto_rule(msp_context ctx, const msp_matrix A,
                                  const msp_convert_options *opts, msp_matrix_stats *s,
                                  char why[MSP__RULE_REASON], msp_format *out) {
  msp_status st = MSP_SUCCESS;
  *s = A->stats;
  MSP_TRY(msp__analyze_formats(A, s));
  msp_format f = ctx->backend->kind == MSP_BACKEND_CPU
                     ? choose_format_cpu(s, why, MSP__RULE_REASON)
                     : msp__choose_format_prec(s, opts->precision, why, MSP__RULE_REASON);
  if (f != MSP_FORMAT_CSR && !msp__convert_has_kernel(ctx, f, opts->precision)) {
    char w2[MSP__RULE_REASON];
    snprintf(w2, sizeof w2, "%s, which has no %s kernel on the %s backend: csr", why,
             msp_precision_name(opts->precision), ctx->backend->name);
    memcpy(why, w2, sizeof w2);
    f = MSP_FORMAT_CSR;
  }
  *out = f;
exit:
  return st;
}

static msp_status convert_auto(msp_context ctx, const msp_matrix A, const msp_convert_options *opts,
                               msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  msp_matrix_stats s;
  char why[MSP__RULE_REASON];
  msp_format f;
  if (opts->bdmp_digits != 0) return msp__convert_auto_digits(ctx, A, opts, NULL, out);
  MSP_TRY(msp__convert_auto_rule(ctx, A, opts, &s, why, &f));
  st = convert_one(ctx, A, f, opts, why, out);
  if (st == MSP_ERR_FILL_LIMIT) {
    // A max_fill below the rule's own bound: fall back to CSR and say so.
    char w2[MSP__RULE_REASON + 64];
    snprintf(w2, sizeof w2, "%s, refused by max_fill %.2g: csr", why, opts->max_fill);
    msp__clear_error();
    st = convert_one(ctx, A, MSP_FORMAT_CSR, opts, w2, out);
  }
  if (st == MSP_SUCCESS) (*out)->stats = s;
exit:
  return st;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Median time of one SpMV of C: each of MSP__TUNE_RUNS samples times a batch of products
// enqueued back to back between two synchronisations, the batch sized from the warm-up to last
// about MSP__TUNE_BATCH_S, so that the synchronisation latency (several microseconds) does not
// swamp products of a few microseconds. (Single-product samples misranked the candidates of many
// small real matrices.)
static msp_status time_spmv(msp_context ctx, msp_matrix C, msp_vector x, msp_vector y,
                            double *median) {
  msp_status st = MSP_SUCCESS;
  double t[MSP__TUNE_RUNS];
  double one = 0.0;
  for (int r = 0; r < MSP__TUNE_WARMUP; r++) {
    double t0 = now_s();
    MSP_TRY(msp_spmv(ctx, 1.0, C, x, 0.0, y));
    MSP_TRY(msp_context_synchronize(ctx));
    one = now_s() - t0;
  }
  int batch = one > 0 ? (int)(MSP__TUNE_BATCH_S / one) : 1;
  if (batch < 1) batch = 1;
  if (batch > MSP__TUNE_BATCH_MAX) batch = MSP__TUNE_BATCH_MAX;
  for (int r = 0; r < MSP__TUNE_RUNS; r++) {
    double t0 = now_s();
    for (int b = 0; b < batch; b++)
      MSP_TRY(msp_spmv(ctx, 1.0, C, x, 0.0, y));
    MSP_TRY(msp_context_synchronize(ctx));
    t[r] = (now_s() - t0) / batch;
  }
  qsort(t, MSP__TUNE_RUNS, sizeof t[0], cmp_double);
  *median = t[MSP__TUNE_RUNS / 2];
exit:
  return st;
}

// TUNE: build every viable candidate in turn, time it, keep the fastest.
static msp_status convert_tune(msp_context ctx, const msp_matrix A, const msp_convert_options *opts,
                               msp_matrix *out) {
  static const struct {
    msp_format f;
    msp_kernel k;
    const char *tag;
  } cand[] = {
      {MSP_FORMAT_CSR, MSP_KERNEL_SCALAR, "csr/scalar"},
      {MSP_FORMAT_CSR, MSP_KERNEL_VECTOR, "csr/vector"},
      {MSP_FORMAT_CSR, MSP_KERNEL_MERGE, "csr/merge"},
      {MSP_FORMAT_COO, MSP_KERNEL_AUTO, "coo"},
      {MSP_FORMAT_ELL, MSP_KERNEL_AUTO, "ell"},
      {MSP_FORMAT_HLL, MSP_KERNEL_AUTO, "hll"},
      {MSP_FORMAT_DIA, MSP_KERNEL_AUTO, "dia"},
      {MSP_FORMAT_HDIA, MSP_KERNEL_AUTO, "hdia"},
      {MSP_FORMAT_HYB, MSP_KERNEL_AUTO, "hyb"},
  };
  enum { NC = sizeof cand / sizeof cand[0] };
  msp_status st = MSP_SUCCESS, last = MSP_SUCCESS;
  msp_matrix best = NULL, C = NULL;
  msp_vector x = NULL, y = NULL;
  double best_t = 0, t0 = now_s();
  int best_i = -1;
  char list[200] = "", lasterr[256] = "";
  size_t used = 0;
  MSP_TRY(msp_vector_create(ctx, A->cols, &x));
  MSP_TRY(msp_vector_create(ctx, A->rows, &y));
  MSP_TRY(msp_vector_fill(x, 1.0));
  for (int i = 0; i < NC; i++) {
    const char *note = NULL;
    double t = 0;
    msp_convert_options o = *opts;
    o.kernel = cand[i].k;
    if (!msp__convert_has_kernel(ctx, cand[i].f, opts->precision)) continue;
    st = convert_one(ctx, A, cand[i].f, &o, NULL, &C);
    if (st == MSP_ERR_FILL_LIMIT) {
      note = "refused";
    } else if (st != MSP_SUCCESS) {
      // One candidate failing (out of device memory, a bad ELL width) does not end tuning.
      last = st;
      snprintf(lasterr, sizeof lasterr, "%s", msp_last_error());
      note = "failed";
    } else {
      MSP_TRY(time_spmv(ctx, C, x, y, &t));
    }
    st = MSP_SUCCESS;
    int w = note ? snprintf(list + used, sizeof list - used, "%s%s %s", used ? ", " : "",
                            cand[i].tag, note)
                 : snprintf(list + used, sizeof list - used, "%s%s %.3gus", used ? ", " : "",
                            cand[i].tag, t * 1e6);
    if (w > 0) used = used + (size_t)w < sizeof list ? used + (size_t)w : sizeof list - 1;
    if (!C) continue;
    if (!best || t < best_t) {
      msp_matrix_destroy(&best);
      best = C;
      best_t = t;
      best_i = i;
    } else {
      msp_matrix_destroy(&C);
    }
    C = NULL;
  }
  if (!best) {
    st = last != MSP_SUCCESS ? msp__error(last,
                                          "msp_matrix_convert: tune: no candidate could be "
                                          "built (last error: %s)",
                                          lasterr)
                             : msp__error(MSP_ERR_NOT_SUPPORTED,
                                          "msp_matrix_convert: tune: no candidate has a kernel "
                                          "on the %s backend",
                                          ctx->backend->name);
    goto exit;
  }
  double cost = (now_s() - t0) / (best_t > 0 ? best_t : 1e-9);
  snprintf(best->reason, sizeof best->reason, "tune: %s fastest (%s); cost %.0f SpMV",
           cand[best_i].tag, list, cost);
  msp__clear_error();
  *out = best;
  best = NULL;
exit:
  msp_matrix_destroy(&C);
  msp_matrix_destroy(&best);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  return st;
}

msp_status msp_matrix_convert(msp_context ctx, const msp_matrix A, const msp_convert_options *opts,
                              msp_matrix *B) {
  msp_status st = MSP_SUCCESS;
  msp_convert_options o = opts ? *opts : msp_convert_options_default();
  MSP_CHECK_ARG(B, "msp_matrix_convert: B is NULL");
  *B = NULL;
  MSP_TRY(msp__check_context(ctx, "msp_matrix_convert", "ctx"));
  MSP_TRY(msp__check_matrix(A, "msp_matrix_convert", "A"));
  MSP_TRY(validate(&o));
  const int threads_prev = msp__threads_enter(ctx);
  if (o.format == MSP_FORMAT_AUTO)
    st = convert_auto(ctx, A, &o, B);
  else if (o.format == MSP_FORMAT_TUNE)
    st = convert_tune(ctx, A, &o, B);
  else
    st = convert_one(ctx, A, o.format, &o, NULL, B);
  msp__threads_leave(threads_prev);
exit:
  return st;
}

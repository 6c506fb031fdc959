// convert_digits.c: AUTO with a requested accuracy (bdmp_digits = D > 0): the fp64 choice,
// uniform fp32 storage, BDMP-PBP and BDMP-TCKI priced by bytes and measured time per byte.
#include "convert.h"
#include "formats.h"

#include "precision.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- AUTO with a requested accuracy: bdmp_digits = D > 0 ---------------------------------------
// AUTO's fp64 choice keeps every digit of the stored values. With D digits asked for, AUTO may
// store values in fp32 where the storage error stays within D digits by the bound of BDMP's
// error-bounded mode (src/core/bdmp.c): storing a_ij in fp32 changes y_i by at most
// u32 |a_ij| max|x| (0 when fp32 holds a_ij exactly), so row i keeps D digits relative to
// S_i max|x| (S_i = sum_j |a_ij|) when u32 F_i <= 5 10^-D S_i, F_i the sum of |a_ij| over the
// row's entries that fp32 does not hold exactly. The candidates:
//   1. the fp64 choice of the backend's rule (bound 0);
//   2. that format with every value in fp32, when every row meets the bound and every inexact
//      value lies in fp32's normal range (bound max_i u32 F_i / S_i, as bdmp.c's fits_f32);
//   3. BDMP-PBP and 4. BDMP-TCKI in the error-bounded mode D (bound: their selection's,
//      msp_bdmp_report.bound, <= 5 10^-D by construction).
// Each is priced by the byte model of one product -- the format's footprint from its record
// (plan, or bytes once built) plus x and y in f64, 8 (cols + rows) -- times its time per byte
// relative to CSR fp64 (the factors below). The least modelled time wins; ties keep the earlier
// candidate (fp64 first). A BDMP candidate is built (host data only, and once: the one kept is
// the result, with no second conversion) only when a lower bound of its modelled time could
// beat the best so far: its values at 4 bytes each (or, once one BDMP candidate is built, at
// the fp32 / fp64 counts of its selection: both variants select the same tiles), plus its
// indices at least (PBP: CSR row pointers and columns; TCKI: a byte per entry), plus x and y.
// So PBP is not built where the fp64 choice is CSR and f32 holds the bound (it would be CSR
// f32's bytes and more, at CSR f32's factor).
//
// Time per byte relative to CSR fp64 on the CUDA backend: a format's time over its byte model's
// bytes (x and y in f64) in the SpMV benchmark, divided by CSR fp64's on the same matrix (the
// derivation, matrix by matrix, with card and date: docs/design.md, "Kernel choices and what was
// measured"). CSR f32, DIA and ELL from a 27-point stencil; HLL takes ELL's factors and HDIA
// DIA's (the same loops per hack); COO from an R-MAT graph, against merge-path CSR; HYB, not
// measured in f32, takes CSR's.
// - PBP takes CSR f32's factor: it runs on the tuned CSR kernels.
// - TCKI: from the row-slab kernel (src/cuda/bdmp.cu) in the error-bounded mode, on Laplacian,
//   stencil and banded matrices whose block rows are all tiles. A TCKI matrix whose block rows
//   all go CSR-like runs PBP's kernels, so the factor overprices it.
#define MSP__EFF_CSR_F32 1.21
#define MSP__EFF_DIA_F64 0.79
#define MSP__EFF_DIA_F32 0.87
#define MSP__EFF_ELL_F64 0.79
#define MSP__EFF_ELL_F32 0.84
#define MSP__EFF_COO_F64 0.73
#define MSP__EFF_COO_F32 0.87
#define MSP__EFF_PBP MSP__EFF_CSR_F32
#define MSP__EFF_TCKI 1.6
// CPU backend: factors measured the same way with the mixsparse program, one thread, on the
// shared cores of the development machine, each the geometric mean over a Laplacian, a stencil
// and a random matrix (the table: docs/design.md). On the CPU fp32 values gain little time for
// the bytes they save, so an f32 candidate wins only where it moves clearly fewer bytes. Formats
// not measured take CSR's factors.
#define MSP__EFF_CPU_CSR_F32 1.09
#define MSP__EFF_CPU_HDIA_F64 0.85
#define MSP__EFF_CPU_HDIA_F32 1.4
#define MSP__EFF_CPU_PBP 2.1
#define MSP__EFF_CPU_TCKI 1.3

static double cpu_efficiency(msp_format f, int f32) {
  switch (f) {
  case MSP_FORMAT_HDIA:
    return f32 ? MSP__EFF_CPU_HDIA_F32 : MSP__EFF_CPU_HDIA_F64;
  case MSP_FORMAT_BDMP_PBP:
    return MSP__EFF_CPU_PBP;
  case MSP_FORMAT_BDMP_TCKI:
    return MSP__EFF_CPU_TCKI;
  default:
    return f32 ? MSP__EFF_CPU_CSR_F32 : 1.0;
  }
}

static double efficiency(const msp_context ctx, msp_format f, int f32) {
  if (ctx->backend->kind == MSP_BACKEND_CPU) return cpu_efficiency(f, f32);
  switch (f) {
  case MSP_FORMAT_DIA:
  case MSP_FORMAT_HDIA:
    return f32 ? MSP__EFF_DIA_F32 : MSP__EFF_DIA_F64;
  case MSP_FORMAT_ELL:
  case MSP_FORMAT_HLL:
    return f32 ? MSP__EFF_ELL_F32 : MSP__EFF_ELL_F64;
  case MSP_FORMAT_COO:
    return f32 ? MSP__EFF_COO_F32 : MSP__EFF_COO_F64;
  case MSP_FORMAT_BDMP_PBP:
    return MSP__EFF_PBP;
  case MSP_FORMAT_BDMP_TCKI:
    return MSP__EFF_TCKI;
  default:
    return f32 ? MSP__EFF_CSR_F32 : 1.0;
  }
}

// Uniform fp32 storage of A against D digits: *bound = max_i u32 F_i / S_i (rows with S_i > 0);
// returns 1 when every row meets u32 F_i <= 5 10^-D S_i (compared as bdmp.c does) and every
// value fp32 does not hold exactly lies in fp32's normal range (else *range = 1), else 0. One
// thread per row, in the row's order: the same result for any thread count.
static int f32_storage_bound(const msp_matrix A, int digits, double *bound, int *range) {
  const double rel = 5.0 * pow(10.0, -(double)digits) / MSP_U_F32;
  const int64_t rows = A->rows;
  double b = 0;
  int bad = 0, out = 0;
#pragma omp parallel for reduction(max : b) reduction(| : bad, out) schedule(static)
  for (int64_t i = 0; i < rows; i++) {
    double srow = 0, frow = 0;
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      const double a = A->val[k], m = fabs(a);
      srow += m;
      if ((double)msp_f32_from_double(a) != a) {
        frow += m;
        if (!(m >= FLT_MIN && m <= FLT_MAX)) out = 1;
      }
    }
    if (!(frow <= rel * srow)) bad = 1;
    if (srow > 0) b = fmax(b, MSP_U_F32 * frow / srow);
  }
  *bound = b;
  *range = out;
  return !bad && !out;
}

enum { AUTO_C64, AUTO_C32, AUTO_PBP, AUTO_TCKI, AUTO_NC };
enum { AUTO_OUT = 0, AUTO_EXACT = 1, AUTO_LOWER = 2 }; // not a candidate / priced / lower bound

typedef struct {
  msp_format f;
  int state;
  double bytes;    // matrix bytes (AUTO_LOWER: a lower bound; the candidate was not built)
  double eff;      // time per byte relative to CSR fp64
  double bound;    // the guaranteed storage bound (AUTO_EXACT)
  void *fmt;       // BDMP host data while it is the best candidate (owned)
  const char *why; // AUTO_OUT: why not
} auto_cand;

static double cand_time(const auto_cand *c, double xy) {
  return c->eff * (c->bytes + xy);
}

// bdmp_eff (NULL: the measured factors) replaces the factors of PBP and TCKI: tests/
// test_auto_digits.c declares this function and passes small ones, so that the CPU tests reach
// the BDMP candidates' build and hand-over, which the measured CPU factors never choose.
msp_status msp__convert_auto_digits(msp_context ctx, const msp_matrix A,
                                    const msp_convert_options *opts, const double bdmp_eff[2],
                                    msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  const int D = opts->bdmp_digits;
  MSP_CHECK_ARG(D >= 1 && D <= 15, "msp_matrix_convert: bdmp_digits %d (1..15; 0: AUTO in fp64)",
                D);
  MSP_CHECK_ARG(opts->precision == MSP_PRECISION_F64,
                "msp_matrix_convert: AUTO with bdmp_digits %d chooses the storage precision "
                "itself: precision must be f64 (it is %s)",
                D, msp_precision_name(opts->precision));
  msp_matrix_stats s;
  char rule[MSP__RULE_REASON], why[640], what[160], list[400] = "", b1[32];
  msp_format f;
  auto_cand c[AUTO_NC];
  memset(c, 0, sizeof c);
  const double xy = 8.0 * ((double)A->rows + (double)A->cols);
  const double budget = 5.0 * pow(10.0, -(double)D);
  int best = AUTO_C64;
  double bound32 = 0;
  MSP_TRY(msp__convert_auto_rule(ctx, A, opts, &s, rule, &f));
  for (int k = AUTO_C64; k <= AUTO_C32; k++) {
    msp_convert_options o = *opts;
    o.format = f;
    o.precision = k == AUTO_C32 ? MSP_PRECISION_F32 : MSP_PRECISION_F64;
    c[k].f = f;
    c[k].eff = efficiency(ctx, f, k == AUTO_C32);
    if (k == AUTO_C32) {
      int range = 0;
      if (!f32_storage_bound(A, D, &bound32, &range)) {
        c[k].why = range ? "a value outside fp32's normal range" : "bound";
        continue;
      }
      if (!msp__convert_has_kernel(ctx, f, o.precision)) {
        c[k].why = "no kernel";
        continue;
      }
      c[k].bound = bound32;
    }
    MSP_TRY(msp__format_table[f]->plan(A, &o, &c[k].bytes, what, sizeof what));
    st = msp__format_table[f]->max_fill_checked
             ? msp__convert_fill_check(msp__format_table[f]->tag, c[k].bytes, A, &o)
             : MSP_SUCCESS;
    if (st == MSP_ERR_FILL_LIMIT) {
      msp__clear_error();
      st = MSP_SUCCESS;
      if (k == AUTO_C32) {
        c[k].why = "max_fill";
        continue;
      }
      // fp64 refused by a max_fill below the rule's own bound: CSR, as AUTO without digits
      f = c[k].f = MSP_FORMAT_CSR;
      c[k].eff = efficiency(ctx, f, 0);
      c[k].bytes = msp__csr_bytes(A->rows, A->nnz, MSP_PRECISION_F64);
    }
    MSP_TRY(st);
    c[k].state = AUTO_EXACT;
    if (cand_time(&c[k], xy) < cand_time(&c[best], xy)) best = k;
  }
  // BDMP in the error-bounded mode D; lower bound of its values first
  double n32 = (double)A->nnz, n64 = 0;
  for (int k = AUTO_PBP; k <= AUTO_TCKI; k++) {
    const msp_format bf = k == AUTO_PBP ? MSP_FORMAT_BDMP_PBP : MSP_FORMAT_BDMP_TCKI;
    c[k].f = bf;
    c[k].eff = bdmp_eff ? bdmp_eff[k - AUTO_PBP] : efficiency(ctx, bf, 0);
    if (!msp__convert_has_kernel(ctx, bf, MSP_PRECISION_F64)) {
      c[k].why = "no kernel";
      continue;
    }
    // PBP is CSR (the paper's two CSR parts, or one CSR with the values apart by precision): its
    // row pointers and a 4-byte column per entry at least; TCKI an index byte per entry at least
    // (its row slabs; its CSR-like part reads 4-byte columns)
    c[k].bytes = 4.0 * n32 + 8.0 * n64 +
                 (k == AUTO_PBP ? 8.0 * ((double)A->rows + 1.0) + 4.0 * (double)A->nnz
                                : 1.0 * (double)A->nnz);
    c[k].state = AUTO_LOWER;
    if (!(cand_time(&c[k], xy) < cand_time(&c[best], xy))) continue;
    msp_convert_options o = *opts;
    o.format = bf;
    st = msp__convert_build_format(A, bf, &o, &c[k].fmt, what, sizeof what);
    if (st != MSP_SUCCESS) {
      // one candidate that cannot be built (too large for the memory left, or beyond a limit of
      // its layout) does not end AUTO: it is left out, and the reason says so
      c[k].why = msp_status_name(st);
      msp__clear_error();
      st = MSP_SUCCESS;
      c[k].state = AUTO_OUT;
      continue;
    }
    struct msp_matrix_s t = *A; // A with the candidate's host data, for its record and report
    t.format = bf;
    t.fmt = c[k].fmt;
    t.precision = MSP_PRECISION_F64;
    msp_bdmp_report rep;
    MSP_TRY(msp_matrix_bdmp_info(&t, &rep));
    c[k].bytes = (double)msp__format_table[bf]->bytes(&t);
    c[k].bound = rep.bound;
    c[k].state = AUTO_EXACT;
    n32 = (double)rep.nnz_f32;
    n64 = (double)rep.nnz_f64;
    if (!(rep.bound <= budget)) {
      // the selection guarantees it; a candidate that did not is never chosen
      c[k].state = AUTO_OUT;
      c[k].why = "bound";
    } else if (cand_time(&c[k], xy) < cand_time(&c[best], xy)) {
      if (c[best].fmt) {
        msp__format_free(c[best].f, c[best].fmt);
        c[best].fmt = NULL;
      }
      best = k;
      continue;
    }
    msp__format_free(bf, c[k].fmt);
    c[k].fmt = NULL;
  }
  // The reason: the choice and its bound, then every candidate's bytes x time per byte.
  // (short names: the matrix's reason is one line of 255 characters)
  static const char *const cname[AUTO_NC] = {"f64", "f32", "", ""};
  static const char *const bname[AUTO_NC] = {"", "", "pbp", "tcki"};
  size_t used = 0;
  for (int k = 0; k < AUTO_NC; k++) {
    int w;
    const char *sep = used ? ", " : "";
    msp__convert_fmt_bytes(b1, sizeof b1, c[k].bytes);
    if (c[k].state == AUTO_OUT && k == AUTO_C32 && c[k].why && !strcmp(c[k].why, "bound"))
      w = snprintf(list + used, sizeof list - used, "%sf32 %s out (bound %.2g > %.2g)", sep,
                   msp_format_name(c[k].f), bound32, budget);
    else if (c[k].state == AUTO_OUT)
      w = snprintf(list + used, sizeof list - used, "%s%s%s%s out (%s)", sep, cname[k],
                   *cname[k] ? " " : "", *bname[k] ? bname[k] : msp_format_name(c[k].f),
                   c[k].why ? c[k].why : "-");
    else
      w = snprintf(list + used, sizeof list - used, "%s%s%s%s %s%s x%.3g", sep, cname[k],
                   *cname[k] ? " " : "", *bname[k] ? bname[k] : msp_format_name(c[k].f),
                   c[k].state == AUTO_LOWER ? ">= " : "", b1, c[k].eff);
    if (w > 0) used = used + (size_t)w < sizeof list ? used + (size_t)w : sizeof list - 1;
  }
  // (the fp64 rule's own reason is left out: AUTO without digits gives it)
  snprintf(why, sizeof why, "digits %d -> %s%s%s (bound %.3g <= %.2g); bytes x time/byte: %s", D,
           cname[best], *cname[best] ? " " : "", msp_format_name(c[best].f), c[best].bound, budget,
           list);
  {
    msp_convert_options o = *opts;
    o.format = c[best].f;
    o.precision = best == AUTO_C32 ? MSP_PRECISION_F32 : MSP_PRECISION_F64;
    void *fmt = c[best].fmt;
    c[best].fmt = NULL; // msp__convert_built owns it now
    MSP_TRY(msp__convert_built(ctx, A, c[best].f, &o, why, fmt, out));
  }
  (*out)->stats = s;
exit:
  for (int k = 0; k < AUTO_NC; k++)
    if (c[k].fmt) msp__format_free(c[k].f, c[k].fmt);
  return st;
}

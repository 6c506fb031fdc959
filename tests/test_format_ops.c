// test_format_ops.c: the table of format records (src/core/formats.h) against MSP_FORMAT_LIST.
#include "formats.h"
#include "testlib.h"

#include <string.h>

// Every row of MSP_FORMAT_LIST has its record in its slot, complete.
static void table(void) {
  for (int f = 0; f < MSP_FORMAT_COUNT; f++) {
    const msp__format_ops *ops = msp__format_table[f];
    CHECK(ops != NULL, "format %d has no record", f);
    if (!ops) continue;
    const char *tag = msp_format_name((msp_format)f);
    CHECK(ops->format == (msp_format)f, "%s: record of format %d", tag, (int)ops->format);
    CHECK(ops->tag && strcmp(ops->tag, tag) == 0, "%s: record tag %s", tag,
          ops->tag ? ops->tag : "(null)");
    CHECK(ops->plan && ops->build && ops->bytes && ops->to_csr && ops->free,
          "%s: an operation is missing", tag);
    CHECK(ops->values || ops->f64_only, "%s: neither values nor the reason it stores f64 only",
          tag);
  }
  CHECK(msp__format_table[MSP_FORMAT_CSR] == &msp__fmt_csr, "CSR's slot");
  CHECK(!msp__fmt_csr.has_fmt, "CSR keeps no host data of its own");
}

// A's footprint (its record's bytes) as if its values were stored in p.
static size_t bytes_as(const msp__format_ops *ops, const msp_matrix A, msp_precision p) {
  struct msp_matrix_s t = *A;
  t.precision = p;
  return ops->bytes(&t);
}

// For each format: plan's footprint (in every precision) is the built format's, and the value
// slots of `values` are those the footprint prices (f64 minus f32: 4 bytes per slot).
static void plan_matches_build(const char *label, const test_csr *m, msp_context ctx) {
  msp_matrix A = NULL;
  CHECK_OK(test_csr_to_matrix(m, ctx, &A));
  if (!A) return;
  for (int f = 0; f < MSP_FORMAT_COUNT; f++) {
    const msp__format_ops *ops = msp__format_table[f];
    msp_convert_options o = msp_convert_options_default();
    o.format = (msp_format)f;
    o.max_fill = 1e9;
    msp_matrix B = NULL;
    CHECK_OK(msp_matrix_convert(ctx, A, &o, &B));
    if (!B) continue;
    CHECK(msp_matrix_bytes(B) == ops->bytes(B), "%s %s: msp_matrix_bytes %zu, record %zu", label,
          ops->tag, msp_matrix_bytes(B), ops->bytes(B));
    for (int p = 0; p < MSP_PRECISION_COUNT; p++) {
      msp_convert_options q = msp_convert_options_default();
      double planned = -1;
      char what[160] = "";
      q.precision = (msp_precision)p;
      CHECK_OK(ops->plan(A, &q, &planned, what, sizeof what));
      CHECK(what[0] != '\0', "%s %s: plan gave no description", label, ops->tag);
      // BDMP's footprint is only known once its tiles' precisions are chosen: plan says 0.
      if (planned == 0 && !ops->max_fill_checked) continue;
      size_t built = bytes_as(ops, B, (msp_precision)p);
      CHECK(planned == (double)built, "%s %s in %s: planned %.0f bytes, built %zu", label, ops->tag,
            msp_precision_name((msp_precision)p), planned, built);
    }
    if (ops->values) {
      const double *val[MSP__FORMAT_VALUE_PARTS];
      int64_t n[MSP__FORMAT_VALUE_PARTS], slots = 0;
      int parts = ops->values(B, val, n);
      CHECK(parts >= 1 && parts <= MSP__FORMAT_VALUE_PARTS, "%s %s: %d value parts", label,
            ops->tag, parts);
      for (int k = 0; k < parts && k < MSP__FORMAT_VALUE_PARTS; k++) {
        CHECK(n[k] == 0 || val[k] != NULL, "%s %s: part %d", label, ops->tag, k);
        slots += n[k];
      }
      size_t d = bytes_as(ops, B, MSP_PRECISION_F64) - bytes_as(ops, B, MSP_PRECISION_F32);
      CHECK(d == 4 * (size_t)slots, "%s %s: %lld value slots, footprint priced %zu / 4", label,
            ops->tag, (long long)slots, d);
    }
    msp_matrix_destroy(&B);
  }
  msp_matrix_destroy(&A);
}

int main(void) {
  msp_context ctx = NULL;
  test_csr m;
  table();
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  if (ctx) {
    // Rows beyond one hack of each kind (32, 64) and not a multiple of either; empty rows.
    if (test_csr_random(&m, 203, 150, 5.0, 11) == 0) {
      plan_matches_build("random 203 x 150", &m, ctx);
      test_csr_free(&m);
    }
    if (test_csr_powerlaw(&m, 300, 300, 120, 12) == 0) {
      plan_matches_build("power-law 300 x 300", &m, ctx);
      test_csr_free(&m);
    }
  }
  msp_context_destroy(&ctx);
  return msp_test_finish("test_format_ops");
}

// bytes.c: the byte model of one SpMV (msp_spmv_bytes, msp_spmv_bytes_vectors): what a product
// must move at least, with every array counted in its storage precision.
#include "internal.h"
#include "precision.h"

// The format's footprint (msp_matrix_bytes) if A's values were stored in p instead: the
// footprint of every format is index bytes + stored value slots x bytes per value, so two
// precisions give both terms without a per-format switch here (a new format is counted as soon
// as its footprint is). BDMP chooses fp32/fp64 per tile itself: its footprint does not depend
// on the precision, so it has no slots to re-price and is counted as its footprint says.
static double footprint_as(const msp_matrix A, msp_precision p) {
  struct msp_matrix_s t = *A;
  t.precision = p;
  return (double)msp_matrix_bytes(&t);
}

// Bytes of n values of precision p read with `segments` segments (CPMS; 0 or >= S: all), plus
// fixed-point scales, one double per `block` values (at least one scale).
static double values_bytes(int64_t n, msp_precision p, int segments, int64_t block) {
  const int all = msp__prec_segments(p);
  const int k = segments > 0 && segments < all ? segments : all;
  double b = (double)n * (double)msp__prec_bytes(p) * (double)k / (double)all;
  if (msp_prec_is_fixed(p)) {
    int64_t nscales = n > 0 ? (n + block - 1) / block : 1;
    b += 8.0 * (double)nscales;
  }
  return b;
}

// Bytes of the matrix arrays a product reads: indices and padding once, values in their
// precision with only the CPMS segments read (A->opts.cpms_segments), and the fixed-point
// scales of the value array (one double per 2^MSP_FX_BLOCK_SHIFT stored values).
static double matrix_read_bytes(const msp_matrix A) {
  const msp_precision p = A->precision;
  const double f64 = footprint_as(A, MSP_PRECISION_F64);
  const double slots = (f64 - footprint_as(A, MSP_PRECISION_F32)) / 4.0;
  if (!(slots > 0)) return (double)msp_matrix_bytes(A);
  const double index_bytes = f64 - 8.0 * slots;
  return index_bytes +
         values_bytes((int64_t)slots, p, A->opts.cpms_segments, (int64_t)1 << MSP_FX_BLOCK_SHIFT);
}

// A vector's bytes for `n` entries: read with its CPMS segments, or written (every segment
// stored); fixed point adds one scale per MSP_VEC_FX_BLOCK values. NULL counts as f64.
static double vector_bytes(const msp_vector v, int64_t n, int written) {
  const msp_precision p = msp_vector_precision(v);
  const int segments = v && !written ? v->segments : 0;
  return values_bytes(n, p, segments, MSP_VEC_FX_BLOCK);
}

double msp_spmv_bytes_vectors(const msp_matrix A, const msp_vector x, const msp_vector y,
                              int beta_nonzero) {
  if (!A) return 0;
  // x is counted whole (cols entries) even where the format reads fewer distinct columns: the
  // model is the compulsory traffic of a cold cache, the same for every format of the matrix.
  double b = matrix_read_bytes(A) + vector_bytes(x, A->cols, 0) + vector_bytes(y, A->rows, 1);
  if (beta_nonzero) b += vector_bytes(y, A->rows, 0);
  return b;
}

double msp_spmv_bytes(const msp_matrix A, int beta_nonzero) {
  return msp_spmv_bytes_vectors(A, NULL, NULL, beta_nonzero);
}

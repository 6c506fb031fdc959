// precision.c: host side of the storage precisions: whole-array encode/decode, scales, CPMS
// layouts.
#include "precision.h"

#include "formats.h"
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t msp__prec_bytes(msp_precision p) {
  switch (p) {
#define MSP_PREC_BYTES_(name, tag, bytes)                                                          \
  case MSP_PRECISION_##name:                                                                       \
    return (size_t)(bytes);
    MSP_PRECISION_LIST(MSP_PREC_BYTES_)
#undef MSP_PREC_BYTES_
  default:
    return 0;
  }
}

int msp__prec_segments(msp_precision p) {
  return p == MSP_PRECISION_CPMS2 ? 2 : p == MSP_PRECISION_CPMS4 ? 4 : 1;
}

double msp__prec_unit_roundoff(msp_precision p) {
  switch (p) {
  case MSP_PRECISION_F64:
    return MSP_U_F64;
  case MSP_PRECISION_F32:
    return MSP_U_F32;
  case MSP_PRECISION_F16:
    return MSP_U_F16;
  case MSP_PRECISION_BF16:
    return MSP_U_BF16;
  case MSP_PRECISION_CPMS2:
  case MSP_PRECISION_CPMS4:
    return 0.0;
  default:
    return -1.0;
  }
}

int msp__cpms_bank_shift(int segments, int bank_bytes) {
  int seg_bytes = 8 / segments;
  if (bank_bytes < seg_bytes || bank_bytes > 4096 || (bank_bytes & (bank_bytes - 1)) != 0) {
    return -1;
  }
  int values = bank_bytes / seg_bytes, shift = 0;
  while ((1 << shift) < values)
    shift++;
  return shift;
}

void msp__fx_scales(const double *src, int64_t n, int shift, double qmax, double *scales) {
  int64_t nb = n == 0 ? 1 : ((n - 1) >> shift) + 1;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nb; b++) {
    int64_t lo = b << shift, hi = lo + ((int64_t)1 << shift);
    if (hi > n || shift >= MSP_CPMS_SEPARATE) hi = n;
    double mx = 0.0;
    for (int64_t j = lo; j < hi; j++) {
      double a = fabs(src[j]);
      if (a > mx) mx = a;
    }
    scales[b] = msp_fx_scale(mx, qmax);
  }
}

// Split value v into its segments at index i of a CPMS group layout (all segments).
static void cpms_put(void *dst, int64_t n, int segments, int bank_shift, int64_t i, double v) {
  msp_cpms_write(dst, n, segments, bank_shift, i, v, segments);
}

void msp__cpms_s_encode(const double *src, int64_t n, int segments, void *dst) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    cpms_put(dst, n, segments, MSP_CPMS_SEPARATE, i, src[i]);
}

// Reorder one group of m doubles at `p` into its S banks (or back), through a stack buffer: the
// group occupies the same 8 m bytes in both layouts, which is what makes CPMS-i in place.
static void cpms_group(unsigned char *p, int64_t m, int segments, int to_cpms) {
  uint64_t buf[2048]; // 4096-byte banks of 16-bit segments: at most 2048 values per group
  if (to_cpms) {
    memcpy(buf, p, (size_t)m * 8);
    for (int64_t i = 0; i < m; i++) {
      // within the group the layout is that of a single group of m values
      msp_cpms_write(p, m, segments, MSP_CPMS_SEPARATE, i, msp_bits_f64(buf[i]), segments);
    }
  } else {
    for (int64_t i = 0; i < m; i++) {
      buf[i] = msp_f64_bits(msp_cpms_read(p, m, segments, MSP_CPMS_SEPARATE, i, segments));
    }
    memcpy(p, buf, (size_t)m * 8);
  }
}

static msp_status cpms_inplace(void *data, int64_t n, int segments, int bank_bytes, int to_cpms,
                               const char *fn) {
  if (segments != 2 && segments != 4) {
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "%s: segments %d (must be 2 or 4)", fn, segments);
  }
  int shift = msp__cpms_bank_shift(segments, bank_bytes);
  if (shift < 0) {
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "%s: bank size %d bytes (must be a power of two from %d to 4096)", fn,
                      bank_bytes, 8 / segments);
  }
  if (n > 0 && data == NULL) return msp__error(MSP_ERR_INVALID_ARGUMENT, "%s: data is NULL", fn);
  int64_t bank = (int64_t)1 << shift;
  int64_t groups = (n + bank - 1) / bank;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; g++) {
    int64_t m = n - g * bank < bank ? n - g * bank : bank;
    cpms_group((unsigned char *)data + g * bank * 8, m, segments, to_cpms);
  }
  return MSP_SUCCESS;
}

msp_status msp__basis_header(msp__basis *V, int64_t n, int cols, msp_precision prec) {
  V->prec = prec;
  V->n = n;
  V->cols = cols;
  V->bank_shift = MSP_CPMS_SEPARATE;
  if (msp__prec_segments(prec) > 1) {
    V->bank_shift = msp__cpms_bank_shift(msp__prec_segments(prec), MSP_CPMS_DEFAULT_BANK_BYTES);
    if (V->bank_shift < 0)
      return msp__error(MSP_ERR_INTERNAL, "msp_gmres: no CPMS bank layout for the %s basis",
                        msp_precision_name(prec));
  }
  return MSP_SUCCESS;
}

msp_status msp__cpms_from_f64_inplace(double *data, int64_t n, int segments, int bank_bytes) {
  return cpms_inplace(data, n, segments, bank_bytes, 1, "msp__cpms_from_f64_inplace");
}

msp_status msp__cpms_to_f64_inplace(void *data, int64_t n, int segments, int bank_bytes) {
  return cpms_inplace(data, n, segments, bank_bytes, 0, "msp__cpms_to_f64_inplace");
}

void msp__prec_array_free(msp__prec_array *a) {
  if (a == NULL) return;
  MSP_FREE(a->data);
  MSP_FREE(a->scales);
  a->n = 0;
  a->nscales = 0;
}

msp_status msp__prec_encode(msp_precision prec, const double *src, int64_t n, int scale_shift,
                            int bank_bytes, msp__prec_array *out) {
  msp_status st = MSP_SUCCESS;
  msp__prec_array a;
  memset(&a, 0, sizeof a);
  a.prec = prec;
  a.n = n;
  a.scale_shift = scale_shift;
  a.bank_shift = MSP_CPMS_SEPARATE;
  size_t bytes = msp__prec_bytes(prec);
  if (bytes == 0 || n < 0 || (n > 0 && src == NULL) || scale_shift < 0 ||
      scale_shift > MSP_CPMS_SEPARATE) {
    st = msp__error(MSP_ERR_INVALID_ARGUMENT, "msp__prec_encode: precision %d, n %lld", (int)prec,
                    (long long)n);
    goto exit;
  }
  int segments = msp__prec_segments(prec);
  if (segments > 1 && bank_bytes != 0) {
    a.bank_shift = msp__cpms_bank_shift(segments, bank_bytes);
    if (a.bank_shift < 0) {
      st = msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp__prec_encode: CPMS bank size %d bytes (must be a power of two from %d "
                      "to 4096, or 0 for separate segment arrays)",
                      bank_bytes, 8 / segments);
      goto exit;
    }
  }
  int fixed = prec == MSP_PRECISION_FX32 || prec == MSP_PRECISION_FX16;
  if (fixed) {
    for (int64_t i = 0; i < n; i++) {
      if (!isfinite(src[i])) {
        st = msp__error(MSP_ERR_NONFINITE,
                        "msp__prec_encode: value %lld is %g, which fixed point (%s) cannot hold",
                        (long long)i, src[i], msp_precision_name(prec));
        goto exit;
      }
    }
    a.nscales = n == 0 ? 1 : ((n - 1) >> scale_shift) + 1;
    MSP_TRY(MSP_ALLOC(a.scales, a.nscales, "fixed-point scales"));
    msp__fx_scales(src, n, scale_shift, prec == MSP_PRECISION_FX32 ? MSP_FX32_MAX : MSP_FX16_MAX,
                   a.scales);
  }
  MSP_TRY(msp__alloc(&a.data, n > 0 ? (size_t)n : 1, bytes, "encoded values"));
  msp_acc acc = msp__prec_view(&a, 0);
  if (segments > 1) {
    if (a.bank_shift == MSP_CPMS_SEPARATE) {
      msp__cpms_s_encode(src, n, segments, a.data);
    } else {
      memcpy(a.data, src, (size_t)n * 8);
      MSP_TRY(msp__cpms_from_f64_inplace((double *)a.data, n, segments, bank_bytes));
    }
  } else {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
      msp_acc_store(&acc, i, src[i]);
  }
  *out = a;
  memset(&a, 0, sizeof a);
exit:
  msp__prec_array_free(&a);
  return st;
}

msp_acc msp__prec_view(const msp__prec_array *a, int segments) {
  msp_acc v;
  memset(&v, 0, sizeof v);
  v.data = a->data;
  v.n = a->n;
  v.prec = a->prec;
  v.scale_shift = a->scale_shift;
  v.scales = a->scales;
  v.bank_shift = a->bank_shift;
  int all = msp__prec_segments(a->prec);
  v.read_segments = (segments <= 0 || segments > all) ? all : segments;
  return v;
}

void msp__prec_decode(const msp__prec_array *a, int segments, double *dst) {
  msp_acc v = msp__prec_view(a, segments);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < a->n; i++)
    dst[i] = msp_acc_load(&v, i);
}

// ---- range honesty ------------------------------------------------------------------------------
void msp__prec_limits(msp_precision p, double *largest, double *smallest) {
  double hi = DBL_MAX, lo = 4.9406564584124654e-324; // f64 and CPMS: every double
  switch (p) {
  case MSP_PRECISION_F32:
    hi = MSP_F32_MAX;
    lo = 1.4012984643248171e-45; // 2^-149
    break;
  case MSP_PRECISION_F16:
    hi = MSP_F16_MAX;
    lo = MSP_F16_MIN_SUBNORMAL;
    break;
  case MSP_PRECISION_BF16:
    hi = MSP_BF16_MAX;
    lo = MSP_BF16_MIN_SUBNORMAL;
    break;
  case MSP_PRECISION_FX32:
  case MSP_PRECISION_FX16:
    hi = msp_prec_qmax(p); // in units of the block's scale
    lo = 1.0;
    break;
  default:
    break;
  }
  if (largest) *largest = hi;
  if (smallest) *smallest = lo;
}

// What storing v does, through the precision's own store and load (so a precision added to
// MSP_PRECISION_LIST is checked by the rounding its accessor really does): 0 it is held (or is
// zero, Inf or NaN, which are not a question of range), 1 a finite value comes back infinite, 2 a
// nonzero comes back zero. `scale` is the fixed-point scale of v's block (unused otherwise).
enum { RANGE_OK = 0, RANGE_OVER = 1, RANGE_FLUSH = 2 };
double msp__prec_stored(msp_precision p, double v, double scale) {
  uint64_t cell = 0; // room for one stored value of any precision (at most 8 bytes)
  msp_acc a;
  memset(&a, 0, sizeof a);
  a.data = &cell;
  a.n = 1;
  a.prec = p;
  a.scale_shift = MSP_CPMS_SEPARATE;
  a.scales = &scale;
  a.bank_shift = MSP_CPMS_SEPARATE;
  a.read_segments = msp__prec_segments(p);
  msp_acc_store(&a, 0, v);
  return msp_acc_load(&a, 0);
}

static int range_class(msp_precision p, double v, double scale) {
  if (v == 0.0 || !isfinite(v)) return RANGE_OK;
  const double r = msp__prec_stored(p, v, scale);
  return isinf(r) ? RANGE_OVER : r == 0.0 ? RANGE_FLUSH : RANGE_OK;
}

// f64 and CPMS (all segments stored) hold every double.
static int prec_exact(msp_precision p) {
  return p == MSP_PRECISION_F64 || msp__prec_segments(p) > 1;
}

// Blocks of (1 << shift) values over n (one block for shift >= MSP_CPMS_SEPARATE).
static int64_t range_blocks(int64_t n, int shift) {
  if (n == 0) return 0;
  return shift >= MSP_CPMS_SEPARATE ? 1 : ((n - 1) >> shift) + 1;
}

// The fixed-point scale of block b, as msp__fx_scales computes it (max |v| / qmax).
static double range_block_scale(msp_precision p, const double *v, int64_t n, int shift, int64_t b,
                                int64_t *lo, int64_t *hi) {
  *lo = shift >= MSP_CPMS_SEPARATE ? 0 : b << shift;
  *hi = shift >= MSP_CPMS_SEPARATE ? n : *lo + ((int64_t)1 << shift);
  if (*hi > n) *hi = n;
  double mx = 0.0;
  for (int64_t j = *lo; j < *hi; j++) {
    double a = fabs(v[j]);
    if (a > mx) mx = a;
  }
  return msp_fx_scale(mx, msp_prec_qmax(p));
}

// The shortest %g text that reads back as v ("1e+308", not "1.0000000000000001e+308"): messages
// name the value as the caller wrote it, and stay exact.
typedef struct {
  char s[32];
} value_text;
static value_text shortest(double v) {
  value_text t;
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(t.s, sizeof t.s, "%.*g", digits, v);
    if (strtod(t.s, NULL) == v) break;
  }
  return t;
}

// "largest finite 65504, smallest nonzero 5.96046448e-08" or, for fixed point, the block's scale
// and what it implies.
static void range_text(msp_precision p, double scale, int shift, char *buf, size_t size) {
  double hi, lo;
  msp__prec_limits(p, &hi, &lo);
  if (msp_prec_is_fixed(p)) {
    char block[64];
    if (shift >= MSP_CPMS_SEPARATE)
      snprintf(block, sizeof block, "one scale s for all values");
    else
      snprintf(block, sizeof block, "one scale s per block of %lld values",
               (long long)((int64_t)1 << shift));
    snprintf(buf, size,
             "%s stores integers q, |q| <= %.0f, times %s; in this value's block s = %.9g, so "
             "the largest magnitude is %.9g and a nonzero of magnitude <= s/2 is stored as 0",
             msp_precision_name(p), hi, block, scale, hi * scale);
  } else {
    snprintf(buf, size, "largest finite %.9g, smallest nonzero %.9g", hi, lo);
  }
}

msp_status msp__range_scan(msp_precision p, const double *v, int64_t n, int scale_shift, int policy,
                           int64_t *first_bad, int64_t *overflow, int64_t *underflow) {
  if (first_bad) *first_bad = -1;
  if (overflow) *overflow = 0;
  if (underflow) *underflow = 0;
  if ((unsigned)p >= MSP_PRECISION_COUNT || n < 0 || (n > 0 && v == NULL) || scale_shift < 0 ||
      scale_shift > MSP_CPMS_SEPARATE ||
      (policy != MSP_RANGE_ERROR && policy != MSP_RANGE_SATURATE && policy != MSP_RANGE_ALLOW)) {
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp__range_scan: precision %d, n %lld, scale shift %d, policy %d", (int)p,
                      (long long)n, scale_shift, policy);
  }
  if (prec_exact(p)) return MSP_SUCCESS;
  const int fixed = msp_prec_is_fixed(p);
  int64_t first = INT64_MAX, over = 0, flush = 0;
  if (fixed) {
    const int64_t nb = range_blocks(n, scale_shift);
#pragma omp parallel for schedule(static) reduction(min : first) reduction(+ : over, flush)
    for (int64_t b = 0; b < nb; b++) {
      int64_t lo, hi;
      double s = range_block_scale(p, v, n, scale_shift, b, &lo, &hi);
      for (int64_t i = lo; i < hi; i++) {
        int c = range_class(p, v[i], s);
        if (c == RANGE_OK) continue;
        if (i < first) first = i;
        over += c == RANGE_OVER;
        flush += c == RANGE_FLUSH;
      }
    }
  } else {
#pragma omp parallel for schedule(static) reduction(min : first) reduction(+ : over, flush)
    for (int64_t i = 0; i < n; i++) {
      int c = range_class(p, v[i], 0.0);
      if (c == RANGE_OK) continue;
      if (i < first) first = i;
      over += c == RANGE_OVER;
      flush += c == RANGE_FLUSH;
    }
  }
  if (over + flush == 0) return MSP_SUCCESS;
  if (first_bad) *first_bad = first;
  if (overflow) *overflow = over;
  if (underflow) *underflow = flush;
  if (policy != MSP_RANGE_ERROR) return MSP_SUCCESS;
  double s = 0.0;
  if (fixed) {
    int64_t lo, hi;
    s = range_block_scale(p, v, n, scale_shift,
                          scale_shift >= MSP_CPMS_SEPARATE ? 0 : first >> scale_shift, &lo, &hi);
  }
  char range[320];
  range_text(p, s, scale_shift, range, sizeof range);
  return msp__error(
      MSP_ERR_RANGE,
      "value %lld (0-based) = %s %s %s (%s); %lld value(s) in all are outside "
      "its range (%lld overflow, %lld nonzero(s) would be stored as 0)",
      (long long)first, shortest(v[first]).s,
      range_class(p, v[first], s) == RANGE_OVER ? "overflows" : "would be stored as 0 in",
      msp_precision_name(p), range, (long long)(over + flush), (long long)over, (long long)flush);
}

void msp__range_saturate(msp_precision p, const double *src, int64_t n, int scale_shift,
                         double *dst) {
  if (dst != src && n > 0) memcpy(dst, src, (size_t)n * sizeof *dst);
  if (prec_exact(p)) return;
  double hi, lo;
  msp__prec_limits(p, &hi, &lo);
  const int fixed = msp_prec_is_fixed(p);
  const int shift = fixed ? scale_shift : MSP_CPMS_SEPARATE;
  const int64_t nb = range_blocks(n, shift);
  // Per block, the scale is taken before any value of the block changes. It stays the scale of
  // the saturated block: a flushed value becomes +-s, far below the block's largest magnitude
  // (qmax s), so max |v| and the scale are unchanged and +-s quantises to +-1.
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nb; b++) {
    int64_t l, h;
    double s = 0.0;
    if (fixed) {
      s = range_block_scale(p, dst, n, shift, b, &l, &h);
    } else {
      l = 0;
      h = n;
    }
    for (int64_t i = l; i < h; i++) {
      int c = range_class(p, dst[i], s);
      if (c == RANGE_OVER) dst[i] = copysign(hi, dst[i]);
      if (c == RANGE_FLUSH) dst[i] = copysign(fixed ? s : lo, dst[i]);
    }
  }
}

// CSR index k -> its row (rowptr[row] <= k < rowptr[row + 1]; empty rows skipped).
static int64_t csr_row_of(const msp_matrix A, int64_t k) {
  int64_t lo = 0, hi = A->rows; // invariant: rowptr[lo] <= k < rowptr[hi]
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (A->rowptr[mid] <= k)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// The range check of a conversion, over B's CSR values (f32, f16, bf16: rounding does not
// depend on position, and every stored value of every format is a CSR value or a padding zero, so
// the CSR values say exactly what the format's array holds, and in row order) or over the
// format's value array `val` itself (fixed point: the scale of a value depends on its block of
// MSP_FX_BLOCK_SHIFT stored values, i.e. on the format's order). Records the counts in B; under
// MSP_RANGE_ERROR an offending value is MSP_ERR_RANGE naming the first one.
static msp_status matrix_range_check(msp_matrix B, const double *val, int64_t n) {
  msp_status st = MSP_SUCCESS;
  const msp_precision p = B->precision;
  const int fixed = msp_prec_is_fixed(p);
  const double *scan = fixed ? val : B->val;
  const int64_t scan_n = fixed ? n : B->nnz;
  int64_t first = -1, over = 0, flush = 0;
  B->range_saturated = 0;
  B->range_flushed = 0;
  MSP_TRY(
      msp__range_scan(p, scan, scan_n, MSP_FX_BLOCK_SHIFT, MSP_RANGE_ALLOW, &first, &over, &flush));
  B->range_saturated = over;
  B->range_flushed = flush;
  if (first < 0 || B->opts.range != MSP_RANGE_ERROR) goto exit;
  const double x = scan[first];
  double s = 0.0;
  if (fixed) {
    int64_t lo, hi;
    s = range_block_scale(p, scan, scan_n, MSP_FX_BLOCK_SHIFT, first >> MSP_FX_BLOCK_SHIFT, &lo,
                          &hi);
  }
  // Where the entry is: a CSR index gives row and column. A fixed-point position in another
  // format's array is found among the CSR values by its value (exact when one entry holds it).
  char where[320];
  if (scan == B->val) {
    snprintf(where, sizeof where,
             "entry at row %lld, column %lld (1-based, as in Matrix Market) = %s",
             (long long)csr_row_of(B, first) + 1, (long long)B->colind[first] + 1, shortest(x).s);
  } else {
    int64_t k0 = -1, same = 0;
    for (int64_t k = 0; k < B->nnz; k++) {
      if (B->val[k] == x) {
        if (k0 < 0) k0 = k;
        same++;
      }
    }
    if (same == 1)
      snprintf(where, sizeof where,
               "entry at row %lld, column %lld (1-based, as in Matrix Market) = %s",
               (long long)csr_row_of(B, k0) + 1, (long long)B->colind[k0] + 1, shortest(x).s);
    else if (same > 1)
      snprintf(where, sizeof where,
               "an entry = %s (%lld entries hold this value, the first at row %lld, column "
               "%lld (1-based); this one is at position %lld of the %s value array)",
               shortest(x).s, (long long)same, (long long)csr_row_of(B, k0) + 1,
               (long long)B->colind[k0] + 1, (long long)first, msp_format_name(B->format));
    else
      snprintf(where, sizeof where, "the value %s at position %lld of the %s value array",
               shortest(x).s, (long long)first, msp_format_name(B->format));
  }
  char range[320];
  range_text(p, s, MSP_FX_BLOCK_SHIFT, range, sizeof range);
  st = msp__error(
      MSP_ERR_RANGE,
      "msp_matrix_convert: %s %s %s (%s); %lld stored value(s) are outside the range "
      "(%lld overflow, %lld nonzero(s) would be stored as 0); range policy saturate or allow "
      "stores them anyway",
      where, range_class(p, x, s) == RANGE_OVER ? "overflows" : "would be stored as 0 in",
      msp_precision_name(p), range, (long long)(over + flush), (long long)over, (long long)flush);
exit:
  return st;
}

msp_status msp_matrix_range_info(const msp_matrix A, int64_t *saturated, int64_t *flushed) {
  MSP_CHECK_HANDLE(msp__check_matrix(A, "msp_matrix_range_info", "A"));
  if (saturated) *saturated = A->range_saturated;
  if (flushed) *flushed = A->range_flushed;
  return MSP_SUCCESS;
}

// ---- matrices --------------------------------------------------------------------------------
void msp__matrix_prec_free(msp_matrix A) {
  if (A == NULL || A->pval == NULL) return;
  msp__prec_array_free(A->pval);
  MSP_FREE(A->pval);
}

msp_status msp__matrix_encode_values(msp_matrix B) {
  msp_status st = MSP_SUCCESS;
  msp__prec_array *pa = NULL;
  if (B->precision == MSP_PRECISION_F64) return MSP_SUCCESS;
  if ((unsigned)B->precision >= MSP_PRECISION_COUNT) {
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "msp_matrix_convert: unknown precision %d",
                      (int)B->precision);
  }
  if (B->opts.cpms_segments < 0 || B->opts.cpms_segments > msp__prec_segments(B->precision)) {
    return msp__error(
        MSP_ERR_INVALID_ARGUMENT, "msp_matrix_convert: cpms_segments %d for %s (0 or 1..%d)",
        B->opts.cpms_segments, msp_precision_name(B->precision), msp__prec_segments(B->precision));
  }
  if (B->format != MSP_FORMAT_CSR && B->fmt == NULL) {
    return msp__error(MSP_ERR_INTERNAL, "msp__matrix_encode_values: %s matrix without host data",
                      msp_format_name(B->format));
  }
  // The format's value arrays (its record's `values`, src/core/formats.h), in the order its
  // kernels index them (padding included: zeros are exact in every precision). Several are
  // encoded as one, one after the other (HYB: the ELL part, rows * K, then the COO part).
  // Whether a backend has a kernel for it is msp_matrix_convert's check.
  const double *val = NULL;
  double *joined = NULL, *saturated = NULL;
  int64_t n = 0;
  const msp__format_ops *ops = msp__format_table[B->format];
  if (!ops->values) {
    if (ops->f64_only)
      return msp__error(MSP_ERR_NOT_SUPPORTED,
                        "msp_matrix_convert: %s %s; ask for precision f64 (not %s)", ops->tag,
                        ops->f64_only, msp_precision_name(B->precision));
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_matrix_convert: format %s cannot store %s values yet (f64 only; "
                      "csr takes every precision)",
                      ops->tag, msp_precision_name(B->precision));
  }
  const double *part[MSP__FORMAT_VALUE_PARTS];
  int64_t len[MSP__FORMAT_VALUE_PARTS];
  int parts = ops->values(B, part, len);
  if (parts == 1) {
    val = part[0];
    n = len[0];
  } else {
    for (int k = 0; k < parts; k++)
      n += len[k];
    MSP_TRY(MSP_ALLOC(joined, n > 0 ? n : 1, "joined value arrays to encode"));
    for (int64_t k = 0, at = 0; k < parts; at += len[k], k++)
      if (len[k]) memcpy(joined + at, part[k], (size_t)len[k] * sizeof *joined);
    val = joined;
  }
  // Range honesty (msp_range_policy): refuse, or count and (saturate) store the nearest value the
  // precision holds instead of Inf or 0.
  MSP_TRY(matrix_range_check(B, val, n));
  if (B->opts.range == MSP_RANGE_SATURATE && B->range_saturated + B->range_flushed > 0) {
    MSP_TRY(MSP_ALLOC(saturated, n > 0 ? n : 1, "saturated values to encode"));
    msp__range_saturate(B->precision, val, n, MSP_FX_BLOCK_SHIFT, saturated);
    val = saturated;
  }
  msp__matrix_prec_free(B);
  MSP_TRY(MSP_ALLOC_ZERO(pa, 1, "encoded matrix values"));
  MSP_TRY(
      msp__prec_encode(B->precision, val, n, MSP_FX_BLOCK_SHIFT, MSP_CPMS_DEFAULT_BANK_BYTES, pa));
  B->pval = pa;
  pa = NULL;
exit:
  if (pa) MSP_FREE(pa);
  MSP_FREE(joined);
  MSP_FREE(saturated);
  return st;
}

msp_status msp_matrix_set_cpms_segments(msp_matrix A, int segments) {
  MSP_CHECK_HANDLE(msp__check_matrix(A, "msp_matrix_set_cpms_segments", "A"));
  int all = msp__prec_segments(A->precision);
  if (all == 1) {
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_matrix_set_cpms_segments: the matrix stores %s values, not CPMS",
                      msp_precision_name(A->precision));
  }
  MSP_CHECK_ARG(segments >= 0 && segments <= all,
                "msp_matrix_set_cpms_segments: %d segments (0 = all, or 1..%d)", segments, all);
  A->opts.cpms_segments = segments;
  return MSP_SUCCESS;
}

// precision.c: host side of the storage precisions: whole-array encode/decode, scales, CPMS
// layouts.
#include "precision.h"

#include "internal.h"

#include <math.h>
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
  // The format's value array, in the order its kernels index it (padding included: zeros are
  // exact in every precision). HYB's two arrays are encoded as one: the ELL part (rows * K),
  // then the COO part. Whether a backend has a kernel for it is msp_matrix_convert's check.
  const double *val = NULL;
  double *joined = NULL;
  int64_t n = 0;
  switch (B->format) {
  case MSP_FORMAT_CSR:
    val = B->val;
    n = B->nnz;
    break;
  case MSP_FORMAT_COO:
    val = ((const msp__coo *)B->fmt)->val;
    n = B->nnz;
    break;
  case MSP_FORMAT_ELL:
    val = ((const msp__ell *)B->fmt)->val;
    n = B->rows * ((const msp__ell *)B->fmt)->width;
    break;
  case MSP_FORMAT_HLL:
    val = ((const msp__hll *)B->fmt)->val;
    n = ((const msp__hll *)B->fmt)->off[((const msp__hll *)B->fmt)->nhacks];
    break;
  case MSP_FORMAT_DIA:
    val = ((const msp__dia *)B->fmt)->val;
    n = B->rows * ((const msp__dia *)B->fmt)->ndiag;
    break;
  case MSP_FORMAT_HDIA:
    val = ((const msp__hdia *)B->fmt)->val;
    n = ((const msp__hdia *)B->fmt)->voff[((const msp__hdia *)B->fmt)->nhacks];
    break;
  case MSP_FORMAT_HYB: {
    const msp__hyb *h = (const msp__hyb *)B->fmt;
    int64_t ne = B->rows * h->ell.width;
    n = ne + h->coo_nnz;
    MSP_TRY(MSP_ALLOC(joined, n > 0 ? n : 1, "HYB values to encode"));
    if (ne) memcpy(joined, h->ell.val, (size_t)ne * sizeof *joined);
    if (h->coo_nnz) memcpy(joined + ne, h->coo.val, (size_t)h->coo_nnz * sizeof *joined);
    val = joined;
    break;
  }
  case MSP_FORMAT_BDMP_PBP:
  case MSP_FORMAT_BDMP_TCKI:
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_matrix_convert: %s chooses fp32 or fp64 per 16x16 tile itself; ask "
                      "for precision f64 (not %s)",
                      msp_format_name(B->format), msp_precision_name(B->precision));
  default:
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_matrix_convert: format %s cannot store %s values yet (f64 only; "
                      "csr takes every precision)",
                      msp_format_name(B->format), msp_precision_name(B->precision));
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
  return st;
}

msp_status msp_matrix_set_cpms_segments(msp_matrix A, int segments) {
  MSP_CHECK_ARG(A, "msp_matrix_set_cpms_segments: A is NULL");
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

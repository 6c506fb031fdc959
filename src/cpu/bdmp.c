// bdmp.c: CPU SpMV for BDMP-PBP (fp32 + fp64 CSR parts) and BDMP-TCKI (16x16 tiles, 4-bit indices).
#include "bdmp.h"

// Both compute in fp64: fp32-stored values are widened on load (storage precision decoupled
// from arithmetic), so the only error beyond fp64 is the rounding of the stored values, which
// is what msp__bdmp_info.bound bounds. Each y_i is summed by one thread in a fixed order, so the
// result does not depend on the thread count.

msp_status msp__cpu_bdmp_pbp_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                                  double beta, msp_vector y) {
  const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)A->fmt;
  const double *xv = x->h_data;
  double *yv = y->h_data;
  int64_t rows = A->rows;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; i++) {
    double t32 = 0.0, t64 = 0.0;
    for (int64_t k = P->rp32[i]; k < P->rp32[i + 1]; k++)
      t32 += (double)P->v32[k] * xv[P->ci32[k]];
    for (int64_t k = P->rp64[i]; k < P->rp64[i + 1]; k++)
      t64 += P->v64[k] * xv[P->ci64[k]];
    double t = t64 + t32; // the two sub-matrix products, summed (paper 3.2.1)
    yv[i] = beta == 0.0 ? alpha * t : alpha * t + beta * yv[i];
  }
  return MSP_SUCCESS;
}

// One tile's contribution to the 16 row sums `acc`, x segment staged in xs (zeros past the
// last column). Padding slots are skipped, so a non-finite x never meets a padded zero.
static inline void tile_spmv(const msp__bdmp_tcki *T, int64_t t, const double *xs, double *acc) {
  const uint8_t *ix = T->idx + T->eoff[t];
  int fmt = T->tile_fmt[t] & 3;
  int f64 = (T->tile_fmt[t] & MSP__TILE_F64) != 0;
  const float *v32 = T->val32 + T->voff[t];
  const double *v64 = T->val64 + T->voff[t];
#define VAL(pos) (f64 ? v64[pos] : (double)v32[pos])
  if (fmt == MSP__TILE_COO) {
    int64_t nb = T->eoff[t + 1] - T->eoff[t];
    for (int64_t e = 0; e < nb; e++)
      acc[ix[e] >> 4] += VAL(e) * xs[ix[e] & 15];
    return;
  }
  int w = fmt == MSP__TILE_CSR ? 0 : T->tile_width[t];
  for (int k = 0; k < w; k++) {
    for (int r = 0; r < MSP_BDMP_TILE; r++) {
      int s = k * MSP_BDMP_TILE + r;
      if (!(ix[s] & MSP__TILE_PAD)) acc[r] += VAL(s) * xs[ix[s] & 15];
    }
  }
  if (fmt == MSP__TILE_ELL) return;
  const uint8_t *rp = ix + MSP_BDMP_TILE * w;
  const uint8_t *cx = rp + MSP_BDMP_TILE + 1;
  int base = MSP_BDMP_TILE * w;
  for (int r = 0; r < MSP_BDMP_TILE; r++) {
    for (int q = rp[r]; q < rp[r + 1]; q++)
      acc[r] += VAL(base + q) * xs[cx[q] & 15];
  }
#undef VAL
}

msp_status msp__cpu_bdmp_tcki_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                                   double beta, msp_vector y) {
  const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)A->fmt;
  const double *xv = x->h_data;
  double *yv = y->h_data;
  int64_t rows = A->rows, cols = A->cols;
#pragma omp parallel for schedule(dynamic, 8)
  for (int64_t br = 0; br < T->nbrows; br++) {
    double acc[MSP_BDMP_TILE] = {0};
    for (int64_t t = T->tile_ptr[br]; t < T->tile_ptr[br + 1]; t++) {
      double xs[MSP_BDMP_TILE];
      int64_t c0 = (int64_t)T->tile_col[t] * MSP_BDMP_TILE;
      for (int c = 0; c < MSP_BDMP_TILE; c++)
        xs[c] = c0 + c < cols ? xv[c0 + c] : 0.0;
      tile_spmv(T, t, xs, acc);
    }
    for (int r = 0; r < MSP_BDMP_TILE; r++) {
      int64_t i = br * MSP_BDMP_TILE + r;
      if (i >= rows) break;
      yv[i] = beta == 0.0 ? alpha * acc[r] : alpha * acc[r] + beta * yv[i];
    }
  }
  return MSP_SUCCESS;
}

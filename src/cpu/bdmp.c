// bdmp.c: CPU SpMV for BDMP-PBP (one CSR, fp32 and fp64 value streams) and BDMP-TCKI (16x16 tiles,
// 4-bit indices).
#include "bdmp.h"
#include "dispatch.h"

// Both compute in fp64: fp32-stored values are widened on load (storage precision decoupled
// from arithmetic), so the only error beyond fp64 is the rounding of the stored values, which
// is what msp__bdmp_info.bound bounds. Each y_i is summed by one thread in a fixed order, so the
// result does not depend on the thread count. The values keep BDMP's own layout; x is read in
// its storage precision (one body per precision of x, dispatch.h) and y is written through the
// rounding store, in blocks of 32 rows (a fixed-point y gets whole blocks).
#define PBP_BLOCK 32

typedef struct {
  const struct msp_matrix_s *A;
  msp_acc xa, ya;
  double alpha, beta;
  int64_t over;
} bdmp_args;

static void bdmp_setup(bdmp_args *s, double alpha, const msp_matrix A, msp_vector x, double beta,
                       msp_vector y) {
  memset(s, 0, sizeof *s);
  s->A = A;
  s->xa = msp__vector_acc(x, 0);
  s->ya = msp__vector_acc(y, 0);
  s->alpha = alpha;
  s->beta = beta;
}

MSP__CPU_INLINE void pbp_kernel(msp_precision PX, bdmp_args *s) {
  const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)s->A->fmt;
  const msp_acc xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, nblocks = (rows + PBP_BLOCK - 1) / PBP_BLOCK;
  int64_t over = 0;
#pragma omp for schedule(static) nowait
  for (int64_t b = 0; b < nblocks; b++) {
    const int64_t r0 = b * PBP_BLOCK, n = rows - r0 < PBP_BLOCK ? rows - r0 : PBP_BLOCK;
    double t[PBP_BLOCK];
    for (int64_t r = 0; r < n; r++) {
      const int64_t i = r0 + r;
      // The row in column order, as CSR: the entry's precision bit picks its value stream.
      // c64 counts the fp64 entries before k (the fp32 ones: k - c64).
      const int64_t end = P->rowptr[i + 1];
      int64_t k = P->rowptr[i], c64 = k < end ? msp__pbp_f64_before(P->meta, k) : 0;
      double sum = 0.0;
      for (; k < end; k++) {
        const uint32_t mask = P->meta[2 * (k / MSP__PBP_WORD)];
        const double a =
            (mask >> (k % MSP__PBP_WORD)) & 1u ? P->v64[c64++] : (double)P->v32[k - c64];
        sum += a * msp_acc_load_p(PX, &xa, P->colind[k]);
      }
      t[r] = sum;
    }
    over += msp__cpu_store_rows(&ya, r0, t, n, alpha, beta);
  }
  msp__cpu_add_over(&s->over, over);
}

#define MSP__CPU_KERNEL pbp_kernel
MSP__CPU_INSTANTIATE1(bdmp_args *)
#undef MSP__CPU_KERNEL

msp_status msp__cpu_bdmp_pbp_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                                  double beta, msp_vector y) {
  bdmp_args s;
  bdmp_setup(&s, alpha, A, x, beta, y);
#pragma omp parallel
  pbp_kernel_dispatch(x->prec, &s);
  msp__vector_count_range(y, s.over);
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

// One row's share of a CSR-like segment (bdmp.h), as msp__cpu_row_sum does a CSR row: two
// partial sums, the odd last entry masked in without a branch (a block row's rows have short,
// varying shares: a branch on their parity would be mispredicted half the time).
#define SEG_ROW_SUM(V)                                                                             \
  int q = q0;                                                                                      \
  double s0 = 0.0, s1 = 0.0;                                                                       \
  for (; q + 2 <= q1; q += 2) {                                                                    \
    s0 += (double)V[q] * msp_acc_load_p(PX, xa, col[q]);                                           \
    s1 += (double)V[q + 1] * msp_acc_load_p(PX, xa, col[q + 1]);                                   \
  }                                                                                                \
  double sum = s0 + s1;                                                                            \
  if (q1 > q0) {                                                                                   \
    const double p = (double)V[q1 - 1] * msp_acc_load_p(PX, xa, col[q1 - 1]);                      \
    uint64_t b;                                                                                    \
    memcpy(&b, &p, sizeof b);                                                                      \
    b &= (uint64_t)0 - (uint64_t)((q1 - q0) & 1);                                                  \
    double m;                                                                                      \
    memcpy(&m, &b, sizeof m);                                                                      \
    sum += m;                                                                                      \
  }                                                                                                \
  return sum
MSP__CPU_INLINE double seg_row_sum64(msp_precision PX, const double *v, const int32_t *col, int q0,
                                     int q1, const msp_acc *xa) {
  SEG_ROW_SUM(v);
}
MSP__CPU_INLINE double seg_row_sum32(msp_precision PX, const float *v, const int32_t *col, int q0,
                                     int q1, const msp_acc *xa) {
  SEG_ROW_SUM(v);
}
#undef SEG_ROW_SUM

// Block rows handled together: two 16-row block rows make one block of MSP_VEC_FX_BLOCK rows.
#define TCKI_PAIR (MSP_VEC_FX_BLOCK / MSP_BDMP_TILE)

MSP__CPU_INLINE void tcki_kernel(msp_precision PX, bdmp_args *s) {
  const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)s->A->fmt;
  const msp_acc xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, cols = s->A->cols;
  const int64_t ngroups = (T->nbrows + TCKI_PAIR - 1) / TCKI_PAIR;
  int64_t over = 0;
#pragma omp for schedule(dynamic, 4) nowait
  for (int64_t g = 0; g < ngroups; g++) {
    double acc[TCKI_PAIR * MSP_BDMP_TILE] = {0};
    for (int64_t br = g * TCKI_PAIR; br < (g + 1) * TCKI_PAIR && br < T->nbrows; br++) {
      double *a = acc + (br - g * TCKI_PAIR) * MSP_BDMP_TILE;
      for (int64_t t = T->tile_ptr[br]; t < T->tile_ptr[br + 1]; t++) {
        if (T->tile_fmt[t] & MSP__TILE_ROWS) {
          // a CSR-like segment (bdmp.h): each row's share of the block row, x read directly
          const uint16_t *ends = msp__bdmp_seg_ends(T, t);
          const int32_t *sc = msp__bdmp_seg_cols(T, t);
          const int64_t nr = rows - br * MSP_BDMP_TILE;
          const int f64 = (T->tile_fmt[t] & MSP__TILE_F64) != 0;
          const double *v64 = T->val64 + T->voff[t];
          const float *v32 = T->val32 + T->voff[t];
          for (int r = 0; r < MSP_BDMP_TILE && r < nr; r++) {
            const int q0 = r > 0 ? ends[r - 1] : 0;
            a[r] += f64 ? seg_row_sum64(PX, v64, sc, q0, ends[r], &xa)
                        : seg_row_sum32(PX, v32, sc, q0, ends[r], &xa);
          }
          continue;
        }
        double xs[MSP_BDMP_TILE];
        const int64_t c0 = (int64_t)T->tile_col[t] * MSP_BDMP_TILE;
        for (int c = 0; c < MSP_BDMP_TILE; c++)
          xs[c] = c0 + c < cols ? msp_acc_load_p(PX, &xa, c0 + c) : 0.0;
        tile_spmv(T, t, xs, a);
      }
    }
    const int64_t r0 = g * TCKI_PAIR * MSP_BDMP_TILE;
    const int64_t n = rows - r0 < TCKI_PAIR * MSP_BDMP_TILE ? rows - r0 : TCKI_PAIR * MSP_BDMP_TILE;
    over += msp__cpu_store_rows(&ya, r0, acc, n, alpha, beta);
  }
  msp__cpu_add_over(&s->over, over);
}

#define MSP__CPU_KERNEL tcki_kernel
MSP__CPU_INSTANTIATE1(bdmp_args *)
#undef MSP__CPU_KERNEL

msp_status msp__cpu_bdmp_tcki_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                                   double beta, msp_vector y) {
  bdmp_args s;
  bdmp_setup(&s, alpha, A, x, beta, y);
#pragma omp parallel
  tcki_kernel_dispatch(x->prec, &s);
  msp__vector_count_range(y, s.over);
  return MSP_SUCCESS;
}

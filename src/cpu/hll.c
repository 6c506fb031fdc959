// hll.c: CPU hacked-ELL SpMV (hacks shared out by slots over OpenMP threads, column-major slots
// inside a hack), one body for every storage precision of the values and of x.
#include "ell_block.h"

// Rows summed together inside a hack (hack sizes are multiples of 32, so every block starts at
// a multiple of MSP_VEC_FX_BLOCK and a fixed-point y gets whole blocks).
#define HLL_BLOCK 32

// Weight of the first h hacks: their stored slots plus their rows (dispatch.h).
typedef struct {
  const int64_t *off;
  int64_t hack;
} hll_weight_args;
static int64_t hll_weight(const void *w, int64_t h) {
  const hll_weight_args *a = (const hll_weight_args *)w;
  return a->off[h] + h * a->hack;
}

// Each row is summed by one thread over its hack's slots in ascending order, so the bits do
// not depend on the thread count; the hacks are shared out by stored slots
// (msp__cpu_part_blocks), so wide hacks do not load one thread. Padding slots add
// 0 * x[a valid column].
MSP__CPU_INLINE void hll_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  const msp__hll *H = (const msp__hll *)s->A->fmt;
  const msp_acc va = s->va, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, hack = H->hack, nhacks = H->nhacks;
  const hll_weight_args w = {H->off, hack};
  const int64_t total = H->off[nhacks] + nhacks * hack, np = msp__cpu_nparts(total);
  msp__cpu_taker tk = msp__cpu_taker_init(np);
  int64_t over = 0;
  for (int64_t p; (p = msp__cpu_next_part(&tk, &s->take)) >= 0;) {
    int64_t h0, h1;
    msp__cpu_taken_blocks(&tk, p, nhacks, total, hll_weight, &w, &h0, &h1);
    for (int64_t h = h0; h < h1; h++) {
      const int64_t width = (H->off[h + 1] - H->off[h]) / hack;
      for (int64_t r0 = 0; r0 < hack && h * hack + r0 < rows; r0 += HLL_BLOCK) {
        const int64_t i0 = h * hack + r0;
        const int64_t n = rows - i0 < HLL_BLOCK ? rows - i0 : HLL_BLOCK;
        double t[HLL_BLOCK];
        msp__cpu_ell_rows(PA, PX, &va, H->off[h] + r0, H->col + H->off[h] + r0, hack, width, n, &xa,
                          t);
        over += msp__cpu_store_rows(&ya, i0, t, n, alpha, beta);
      }
    }
  }
  msp__cpu_add_over(&s->over, over);
}

#define MSP__CPU_KERNEL hll_kernel
MSP__CPU_INSTANTIATE2(msp__cpu_spmv_args *)
#undef MSP__CPU_KERNEL

msp_status msp__cpu_hll_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                             double beta, msp_vector y) {
  const msp__hll *H = (const msp__hll *)A->fmt;
  msp__cpu_spmv_args s;
  msp_status st = msp__cpu_spmv_setup(&s, alpha, A, H->val, H->off[H->nhacks], x, beta, y);
  if (st != MSP_SUCCESS) return st;
#pragma omp parallel
  hll_kernel_dispatch(A->precision, x->prec, &s);
  msp__vector_count_range(y, s.over);
  return MSP_SUCCESS;
}

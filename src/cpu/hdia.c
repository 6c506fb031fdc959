// hdia.c: CPU hacked-DIA SpMV (hacks shared out by stored values over OpenMP threads, each hack's
// diagonals ascending), one body for every storage precision of the values and of x.
#include "dispatch.h"

// Rows summed together inside a hack (hack sizes are multiples of 32, so every block starts at
// a multiple of MSP_VEC_FX_BLOCK and a fixed-point y gets whole blocks).
#define HDIA_BLOCK 64

// Weight of the first h hacks: their stored values plus their rows (dispatch.h).
typedef struct {
  const int64_t *voff;
  int64_t hack;
} hdia_weight_args;
static int64_t hdia_weight(const void *w, int64_t h) {
  const hdia_weight_args *a = (const hdia_weight_args *)w;
  return a->voff[h] + h * a->hack;
}

// Each row is summed by one thread over its hack's diagonals in ascending order, so the bits
// do not depend on the thread count; the hacks are shared out by stored values
// (msp__cpu_part_blocks). No column indices are read.
MSP__CPU_INLINE void hdia_kernel(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s) {
  const msp__hdia *H = (const msp__hdia *)s->A->fmt;
  const msp_acc va = s->va, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows, cols = s->A->cols, hack = H->hack, nhacks = H->nhacks;
  const hdia_weight_args w = {H->voff, hack};
  const int64_t total = H->voff[nhacks] + nhacks * hack, np = msp__cpu_nparts(total);
  msp__cpu_taker tk = msp__cpu_taker_init(np);
  int64_t over = 0;
  for (int64_t p; (p = msp__cpu_next_part(&tk, &s->take)) >= 0;) {
    int64_t h0, h1;
    msp__cpu_taken_blocks(&tk, p, nhacks, total, hdia_weight, &w, &h0, &h1);
    for (int64_t h = h0; h < h1; h++) {
      const int64_t *off = H->offsets + H->doff[h];
      const int64_t nd = H->doff[h + 1] - H->doff[h];
      for (int64_t r0 = 0; r0 < hack && h * hack + r0 < rows; r0 += HDIA_BLOCK) {
        const int64_t i0 = h * hack + r0;
        int64_t i1 = i0 + HDIA_BLOCK < rows ? i0 + HDIA_BLOCK : rows;
        if (i1 > h * hack + hack) i1 = h * hack + hack;
        double t[HDIA_BLOCK];
        for (int64_t i = i0; i < i1; i++)
          t[i - i0] = 0.0;
        for (int64_t d = 0; d < nd; d++) {
          const int64_t o = off[d];
          const int64_t lo = -o > i0 ? -o : i0, hi = cols - o < i1 ? cols - o : i1;
          // Row i's value on the hack's diagonal d: value voff[h] + d * hack + (i - h * hack).
          const int64_t v0 = H->voff[h] + d * hack - h * hack;
          for (int64_t i = lo; i < hi; i++)
            t[i - i0] += msp_acc_load_p(PA, &va, v0 + i) * msp_acc_load_p(PX, &xa, i + o);
        }
        over += msp__cpu_store_rows(&ya, i0, t, i1 - i0, alpha, beta);
      }
    }
  }
  msp__cpu_add_over(&s->over, over);
}

#define MSP__CPU_KERNEL hdia_kernel
MSP__CPU_INSTANTIATE2(msp__cpu_spmv_args *)
#undef MSP__CPU_KERNEL

msp_status msp__cpu_hdia_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                              double beta, msp_vector y) {
  const msp__hdia *H = (const msp__hdia *)A->fmt;
  msp__cpu_spmv_args s;
  msp_status st = msp__cpu_spmv_setup(&s, alpha, A, H->val, H->voff[H->nhacks], x, beta, y);
  if (st != MSP_SUCCESS) return st;
#pragma omp parallel
  hdia_kernel_dispatch(A->precision, x->prec, &s);
  msp__vector_count_range(y, s.over);
  return MSP_SUCCESS;
}

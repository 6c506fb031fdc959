// partials.h: the chunk partials of the CPU backend's reductions (chunks of MSP__RED_CHUNK
// entries, each summed in index order, fp64), one piece of code for the CPU backend itself
// (blas1.c, basis.c, pagerank.c), which adds them in its fixed trees, and for the distributed
// layer (src/dist), which gathers every rank's partials and adds them in the same trees.
#ifndef MSP_CPU_PARTIALS_H
#define MSP_CPU_PARTIALS_H

#include "dispatch.h"

#include <math.h>

// The vector reductions: x.y, sum |x|, sum (s x)^2, max |x| (NaN when a value is NaN).
enum { MSP__RED_DOT, MSP__RED_ABS, MSP__RED_SQ, MSP__RED_MAX };

// part[c - c0] = the partial result of op over chunk c of x (and y for MSP__RED_DOT), for
// c0 <= c < c1; s: MSP__RED_SQ's scale. Opens its own OpenMP parallel region.
void msp__cpu_red_partials(int op, msp_vector x, msp_vector y, double s, int64_t c0, int64_t c1,
                           double *part);

// GMRES's projection partials over every chunk c of the basis V (V->nchunks of them):
// part[k * kstride + c * cstride] = V_{j0+k} . w over chunk c for k < cnt, and with ww,
// part[cnt * kstride + c * cstride] = w . w over chunk c. w: V->n fp64 values. Opens its own
// OpenMP parallel region.
void msp__cpu_basis_partials(const msp__basis *V, int j0, int cnt, const double *w, int ww,
                             double *part, int64_t kstride, int64_t cstride);

// DCGS2's projection partials (basis_dcgs2_project) over every chunk c of V:
// part[k * kstride + c * cstride] = V_k . V_j over chunk c for k <= j and, with w (not NULL),
// part[(j + 1 + k) * kstride + c * cstride] = V_k . w. Opens its own OpenMP parallel region.
void msp__cpu_basis_dcgs2_partials(const msp__basis *V, int j, const double *w, double *part,
                                   int64_t kstride, int64_t cstride);

// Stores w into column j of V and reads it back into w, with the column's scale V->scales[j]
// already set (fixed point; the other precisions have none). Opens its own parallel region.
void msp__cpu_basis_store_scaled(msp__basis *V, int j, msp_vector w);

// PageRank's update of the nodes [b, e) (one chunk), PV the constant precision of p, pn, qn:
// pn_i = y_i + c v_i (v_i = vconst without v), qn_i = pn_i / outdeg_i (0 for a dangling node;
// when a->qn), and out = { sum |pn_i - p_i|, sum of the dangling nodes' pn_i, sum pn_i }, each
// added in node order.
MSP__CPU_INLINE void msp__cpu_pr_update_chunk(msp_precision PV, const msp__prgraph *g,
                                              const msp__pr_step *a, const double *y,
                                              const double *v, msp_acc p, msp_acc pn, msp_acc qn,
                                              int64_t b, int64_t e, double out[3]) {
  const int32_t *deg = g->outdeg;
  const double c = a->c, vconst = a->vconst;
  const int want_q = a->qn != NULL;
  double gam = 0.0, dang = 0.0, tot = 0.0;
  for (int64_t i = b; i < e; i++) {
    const double x = y[i] + c * (v ? v[i] : vconst);
    const double old = msp_acc_load_p(PV, &p, i);
    msp_acc_store_p(PV, &pn, i, x);
    if (want_q) msp_acc_store_p(PV, &qn, i, deg[i] ? x / (double)deg[i] : 0.0);
    gam += fabs(x - old);
    if (!deg[i]) dang += x;
    tot += x;
  }
  out[0] = gam;
  out[1] = dang;
  out[2] = tot;
}

#endif

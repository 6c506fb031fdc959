// pagerank.c: the CPU power iteration of PageRank (msp__backend.pr_step), one body over the
// storage precision of the rank vectors (f64, cpms2, cpms4).
//
// Rows of G^T are cut into chunks of MSP__RED_CHUNK nodes; each chunk is summed in node order
// and the chunk sums are added pairwise in a fixed tree, so the bits do not depend on the thread
// count.
#include "dispatch.h"

#include <math.h>

// The backend's part of the graph: the reductions' partial sums (3 per chunk).
typedef struct {
  int64_t nchunks;
  double *part;
} cpu_pr;

msp_status msp__cpu_pr_upload(msp_context ctx, msp__prgraph *g) {
  (void)ctx;
  msp_status st = MSP_SUCCESS;
  cpu_pr *w = NULL;
  MSP_TRY(MSP_ALLOC_ZERO(w, 1, "PageRank workspace"));
  w->nchunks = (g->n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  MSP_TRY(MSP_ALLOC_ZERO(w->part, 3 * (w->nchunks > 0 ? w->nchunks : 1), "PageRank partial sums"));
  g->dev = w;
  w = NULL;
exit:
  if (w) msp__free(w->part);
  msp__free(w);
  return st;
}

void msp__cpu_pr_free(msp_context ctx, msp__prgraph *g) {
  (void)ctx;
  if (!g || !g->dev) return;
  cpu_pr *w = (cpu_pr *)g->dev;
  msp__free(w->part);
  msp__free(w);
  g->dev = NULL;
}

typedef struct {
  const msp__prgraph *g;
  const msp__pr_step *a;
  msp_acc q, p, pn, qn; // pn and qn: store views (every segment)
  const double *y, *v;
  double *part;
  int64_t nchunks;
} pr_args;

// PV: the precision of p, pn, q and qn (one of f64, cpms2, cpms4), a constant at every call.
MSP__CPU_INLINE void pr_kernel(msp_precision PV, pr_args *A) {
  const msp__prgraph *g = A->g;
  const int64_t *rp = g->rowptr;
  const int32_t *ci = g->colind, *deg = g->outdeg;
  const double alpha = A->a->alpha, c = A->a->c, vconst = A->a->vconst;
  const msp_acc q = A->q, p = A->p, pn = A->pn, qn = A->qn;
  const int pull = A->y == NULL, want_q = A->a->qn != NULL;
#pragma omp for schedule(dynamic, 4)
  for (int64_t ch = 0; ch < A->nchunks; ch++) {
    const int64_t b = ch * MSP__RED_CHUNK;
    const int64_t e = b + MSP__RED_CHUNK < g->n ? b + MSP__RED_CHUNK : g->n;
    double gam = 0.0, dang = 0.0, tot = 0.0;
    for (int64_t i = b; i < e; i++) {
      double s;
      if (pull) {
        s = 0.0;
        for (int64_t k = rp[i]; k < rp[i + 1]; k++)
          s += msp_acc_load_p(PV, &q, ci[k]);
        s *= alpha;
      } else {
        s = A->y[i];
      }
      const double x = s + c * (A->v ? A->v[i] : vconst);
      const double old = msp_acc_load_p(PV, &p, i);
      msp_acc_store_p(PV, &pn, i, x);
      if (want_q) msp_acc_store_p(PV, &qn, i, deg[i] ? x / (double)deg[i] : 0.0);
      gam += fabs(x - old);
      if (!deg[i]) dang += x;
      tot += x;
    }
    A->part[ch] = gam;
    A->part[A->nchunks + ch] = dang;
    A->part[2 * A->nchunks + ch] = tot;
  }
}

#define MSP__CPU_KERNEL pr_kernel
MSP__CPU_INSTANTIATE1(pr_args *)
#undef MSP__CPU_KERNEL

static msp_acc store_view(const msp_vector v) {
  return msp__vector_store_acc(v, 0);
}

msp_status msp__cpu_pr_step(msp_context ctx, const msp__prgraph *g, const msp__pr_step *a,
                            double sums[3]) {
  (void)ctx;
  cpu_pr *w = (cpu_pr *)g->dev;
  pr_args A;
  memset(&A, 0, sizeof A);
  A.g = g;
  A.a = a;
  A.p = msp__vector_acc(a->p, 0);
  A.pn = store_view(a->pn);
  if (a->y) {
    A.y = (const double *)a->y->h_data;
  } else {
    A.q = msp__vector_acc(a->q, 0);
    A.qn = store_view(a->qn);
  }
  if (a->v) A.v = (const double *)a->v->h_data;
  A.part = w->part;
  A.nchunks = w->nchunks;
#pragma omp parallel
  pr_kernel_dispatch(a->p->prec, &A);
  for (int r = 0; r < 3; r++)
    sums[r] = msp__cpu_pairwise(w->part + r * w->nchunks, w->nchunks);
  return MSP_SUCCESS;
}

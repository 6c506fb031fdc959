// pagerank.c: the CPU power iteration of PageRank (msp__backend.pr_step), one body over the
// storage precision of the rank vectors (f64, cpms2, cpms4).
//
// The pull form first sums the rows of G^T into y (alpha G^T q), in parts of about equal work
// (PR_PART_WEIGHT of nodes plus in-edges, fixed by the graph; a row is summed whole, its even and
// odd entries apart, as msp__cpu_row_sum); then both forms update the nodes in chunks of
// MSP__RED_CHUNK nodes, each summed in node order, the chunk sums added pairwise in a fixed tree.
// No result depends on the thread count.
#include "partials.h"

#include <math.h>

// Prefetching q in the pull (fp64 q past PR_FAR_BYTES): PR_AHEAD entries ahead, the distance of
// the CSR loop's prefetch of x (MSP__CPU_PF_AHEAD, measured there).
#define PR_AHEAD 64
#define PR_FAR_BYTES ((int64_t)4 << 20)

// The pull's parts: consecutive nodes up to PR_PART_WEIGHT of nodes plus in-edges (a node with
// more in-edges is a part of its own). The pull summed inside the update's chunks of equal node
// counts left the hubs together in the first chunks in degree order, which made the degree order
// much slower than the file's on a power-law graph.
#define PR_PART_WEIGHT 65536

// The backend's part of the graph: the pull's parts and sums, the reductions' partial sums (3 per
// chunk of MSP__RED_CHUNK nodes).
typedef struct {
  int64_t nparts, nchunks;
  int64_t *bound; // part c: nodes [bound[c], bound[c + 1])
  double *y;      // the pull's alpha G^T q
  double *part;
} cpu_pr;

msp_status msp__cpu_pr_upload(msp_context ctx, msp__prgraph *g) {
  (void)ctx;
  msp_status st = MSP_SUCCESS;
  cpu_pr *w = NULL;
  const int64_t n = g->n, *rp = g->rowptr;
  MSP_TRY(MSP_ALLOC_ZERO(w, 1, "PageRank workspace"));
  for (int64_t i = 0, acc = 0; i < n; i++) { // count the parts, then place them
    acc += 1 + rp[i + 1] - rp[i];
    if (acc >= PR_PART_WEIGHT || i + 1 == n) {
      w->nparts++;
      acc = 0;
    }
  }
  MSP_TRY(MSP_ALLOC(w->bound, w->nparts + 1, "PageRank parts"));
  w->bound[0] = 0;
  for (int64_t i = 0, acc = 0, c = 0; i < n; i++) {
    acc += 1 + rp[i + 1] - rp[i];
    if (acc >= PR_PART_WEIGHT || i + 1 == n) {
      w->bound[++c] = i + 1;
      acc = 0;
    }
  }
  MSP_TRY(MSP_ALLOC(w->y, n > 0 ? n : 1, "PageRank row sums"));
  w->nchunks = (n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  MSP_TRY(MSP_ALLOC_ZERO(w->part, 3 * (w->nchunks > 0 ? w->nchunks : 1), "PageRank partial sums"));
  g->dev = w;
  w = NULL;
exit:
  if (w) {
    msp__free(w->bound);
    msp__free(w->y);
    msp__free(w->part);
  }
  msp__free(w);
  return st;
}

void msp__cpu_pr_free(msp_context ctx, msp__prgraph *g) {
  (void)ctx;
  if (!g || !g->dev) return;
  cpu_pr *w = (cpu_pr *)g->dev;
  msp__free(w->bound);
  msp__free(w->y);
  msp__free(w->part);
  msp__free(w);
  g->dev = NULL;
}

typedef struct {
  const msp__prgraph *g;
  const msp__pr_step *a;
  msp_acc q, p, pn, qn; // pn and qn: store views (every segment)
  const double *y, *v;
  double *part, *ysum; // ysum: the pull's row sums (cpu_pr.y)
  const int64_t *bound;
  int64_t nparts, nchunks;
} pr_args;

// PV: the precision of p, pn, q and qn (one of f64, cpms2, cpms4), a constant at every call.
MSP__CPU_INLINE void pr_kernel(msp_precision PV, pr_args *A) {
  const msp__prgraph *g = A->g;
  const int64_t *rp = g->rowptr;
  const int32_t *ci = g->colind;
  const double alpha = A->a->alpha;
  const msp_acc q = A->q, p = A->p, pn = A->pn, qn = A->qn;
  const int far = (double)g->n * 8.0 > (double)PR_FAR_BYTES; // q beyond a core's caches
  const double *y = A->y;
  if (!y) { // the pull: y = alpha G^T q
#pragma omp for schedule(dynamic, 1)
    for (int64_t part = 0; part < A->nparts; part++) {
      for (int64_t i = A->bound[part]; i < A->bound[part + 1]; i++) {
        // two independent sums (even and odd entries, then added, then an odd last entry), so
        // that a row's gathers are not one chain of dependent adds; with an fp64 q larger than
        // the caches' share, q's entries are also asked for PR_AHEAD entries ahead (as the CSR
        // loop does with x: src/cpu/dispatch.h)
        const int64_t k1 = rp[i + 1];
        int64_t k = rp[i];
        double s0 = 0.0, s1 = 0.0;
        if (PV == MSP_PRECISION_F64 && far && k1 + PR_AHEAD <= g->nnz) {
          const double *qd = (const double *)q.data;
          for (; k + 2 <= k1; k += 2) {
            __builtin_prefetch(qd + ci[k + PR_AHEAD]);
            s0 += qd[ci[k]];
            s1 += qd[ci[k + 1]];
          }
        } else {
          for (; k + 2 <= k1; k += 2) {
            s0 += msp_acc_load_p(PV, &q, ci[k]);
            s1 += msp_acc_load_p(PV, &q, ci[k + 1]);
          }
        }
        double s = s0 + s1;
        if (k < k1) s += msp_acc_load_p(PV, &q, ci[k]);
        A->ysum[i] = alpha * s;
      }
    }
    y = A->ysum; // the loop's barrier: every row is summed before the update reads it
  }
#pragma omp for schedule(dynamic, 4)
  for (int64_t ch = 0; ch < A->nchunks; ch++) {
    const int64_t b = ch * MSP__RED_CHUNK;
    const int64_t e = b + MSP__RED_CHUNK < g->n ? b + MSP__RED_CHUNK : g->n;
    double sum[3];
    msp__cpu_pr_update_chunk(PV, g, A->a, y, A->v, p, pn, qn, b, e, sum);
    A->part[ch] = sum[0];
    A->part[A->nchunks + ch] = sum[1];
    A->part[2 * A->nchunks + ch] = sum[2];
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
  A.ysum = w->y;
  A.bound = w->bound;
  A.nparts = w->nparts;
  A.nchunks = w->nchunks;
#pragma omp parallel
  pr_kernel_dispatch(a->p->prec, &A);
  for (int r = 0; r < 3; r++)
    sums[r] = msp__cpu_pairwise(w->part + r * w->nchunks, w->nchunks);
  return MSP_SUCCESS;
}

// pagerank.c: PageRank by the power iteration, for every backend, with adaptive CPMS reads.
//
// Grutzmacher, Cojean, Flegar, Anzt, Quintana-Orti, "Acceleration of PageRank with customized
// precision": Algorithm 1 (the iteration), 4.1 (the CPMS layouts), 4.2 (switching the read
// precision as the iteration converges). Two forms:
// - the pull form (default): p_k = alpha G^T (p_{k-1} ./ outdeg) + c v over the structure of
//   G^T alone; no matrix value is read (what cuGraph does). q = p ./ outdeg is written by the
//   iteration that writes p, so each iteration is one pass (backend pr_step).
// - the values form (the paper's): G^T holds 1/O_i (weighted: w_ij / W_i) as stored values and
//   each iteration is an SpMV y = alpha G^T p followed by pr_step's per-node update.
// Dangling nodes spread alpha times their mass along v (cuGraph, NetworkX); Algorithm 1, line 6
// of the paper adds s/n without the factor alpha, which is not a stochastic iteration when
// alpha < 1.
// Nothing here sees a device pointer or a format: the graph's arrays are built on the host once
// and handed to the backend (pr_upload); every vector operation is a backend operation.
// Node order (msp_pagerank_order): the iteration may run on the nodes renumbered by decreasing
// out-degree, so that the entries of q gathered most share cache lines; the graph, the
// personalisation and the start are renumbered once at setup and the result is put back in the
// file's order. Both backends run the same numbering: the same iteration, the same bits.
#include "internal.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>

msp_pagerank_options msp_pagerank_options_default(void) {
  msp_pagerank_options o;
  memset(&o, 0, sizeof o);
  o.alpha = 0.85;
  o.tol = 1e-10;
  o.max_iters = 1000;
  o.precision = MSP_PAGERANK_F64;
  o.separate = 0;
  o.bank_bytes = 0;
  o.switch_factor = 10.0;
  return o;
}

typedef struct {
  msp_context ctx;
  const msp__backend *be;
  msp_pagerank_options o;
  int64_t n;
  msp__prgraph g;
  double *wsum; // weighted: total out-weight of each node
  msp_matrix GT;
  msp_vector p, pn, q, qn, y, v;
  msp_vector f[4];    // CPMS modes: the fp64 vectors of the last level, made at setup so that the
                      // switch costs two copies on the backend, not allocations
  msp_vector c2[4];   // cpms4: the cpms2 vectors of the 32-bit level (see relayout)
  msp_vector old[8];  // the vectors of the levels left, freed at the end (a free in the loop
                      // would wait for the device)
  msp_precision prec; // f64, cpms2, cpms4: what p, pn, q, qn hold now
  int segs;           // segments of prec (1 for f64)
  int K;              // segments read now
  int bank_shift;
  int bank_bytes; // CPMS-i bank
  double *h;      // host work: n values
  int32_t *inv;   // DEGREE order: inv[i] = the internal number of the file's node i (NULL: the
                  // file's numbering)
} pr_state;

static int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// Unit roundoff of a read of K of S segments (truncation: one unit in the last bit read).
static double read_roundoff(int S, int K) {
  const int mant = 64 * K / S - 12; // sign and exponent are in the head segment
  return ldexp(1.0, -mant);
}
static int read_bits(int S, int K) {
  return 64 * K / S;
}

// A sequential fold over host values continued across the ranks of a distributed context
// (backend host_fold; nothing on one process): fold_begin gives the state the previous rank left,
// fold_end passes it on and gives every rank the final state.
static msp_status fold_begin(msp_context ctx, double *state, int n) {
  return ctx->backend->host_fold ? ctx->backend->host_fold(ctx, state, n, 0) : MSP_SUCCESS;
}
static msp_status fold_end(msp_context ctx, double *state, int n) {
  return ctx->backend->host_fold ? ctx->backend->host_fold(ctx, state, n, 1) : MSP_SUCCESS;
}

// Kahan-compensated sum of h[0..n) in index order (over every rank's values, in rank order).
static msp_status ksum(msp_context ctx, const double *h, int64_t n, double *sum) {
  msp_status st = MSP_SUCCESS;
  double f[2] = {0.0, 0.0}; // the sum and its compensation
  MSP_TRY(fold_begin(ctx, f, 2));
  double s = f[0], c = f[1];
  for (int64_t i = 0; i < n; i++) {
    const double y = h[i] - c, t = s + y;
    c = (t - s) - y;
    s = t;
  }
  f[0] = s;
  f[1] = c;
  MSP_TRY(fold_end(ctx, f, 2));
  *sum = f[0];
exit:
  return st;
}

// The plain sum of one value per rank, in rank order (the value itself on one process).
static msp_status rank_sum(msp_context ctx, double v, double *sum) {
  msp_status st = MSP_SUCCESS;
  double f = 0.0;
  MSP_TRY(fold_begin(ctx, &f, 1));
  f += v;
  MSP_TRY(fold_end(ctx, &f, 1));
  *sum = f;
exit:
  return st;
}

// ---- the graph: out-degrees, the node order and the structure of G^T --------------------------
// The internal number of the file's node i.
static inline int64_t node_of(const pr_state *S, int64_t i) {
  return S->inv ? S->inv[i] : i;
}

// DEGREE order: nodes by decreasing out-degree, ties in the file's order (a counting sort, so the
// same numbering on every run). g->outdeg holds the file's order on entry and the internal one
// on return; S->inv is set. The pull reads q_j once per out-edge of j, so the entries read most
// come first, side by side.
static msp_status order_by_degree(pr_state *S) {
  msp_status st = MSP_SUCCESS;
  const int64_t n = S->n;
  msp__prgraph *g = &S->g;
  int64_t *start = NULL;
  int32_t *deg = NULL;
  int32_t dmax = 0;
  for (int64_t i = 0; i < n; i++)
    dmax = g->outdeg[i] > dmax ? g->outdeg[i] : dmax;
  MSP_TRY(MSP_ALLOC_ZERO(start, (int64_t)dmax + 2, "PageRank: degree buckets"));
  MSP_TRY(MSP_ALLOC(S->inv, n, "PageRank: node order"));
  MSP_TRY(MSP_ALLOC(deg, n, "PageRank: out-degrees in order"));
  for (int64_t i = 0; i < n; i++) // bucket dmax - d holds degree d
    start[dmax - g->outdeg[i] + 1]++;
  for (int64_t d = 0; d <= dmax; d++)
    start[d + 1] += start[d];
  for (int64_t i = 0; i < n; i++) {
    const int64_t u = start[dmax - g->outdeg[i]]++;
    S->inv[i] = (int32_t)u;
    deg[u] = g->outdeg[i];
  }
  msp__free(g->outdeg);
  g->outdeg = deg;
  deg = NULL;
exit:
  msp__free(deg);
  msp__free(start);
  return st;
}

// The internal order's permutation: perm[u] = the file's node numbered u.
static msp_status order_perm(const pr_state *S, int32_t **perm) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(MSP_ALLOC(*perm, max64(S->n, 1), "PageRank: node order"));
  for (int64_t i = 0; i < S->n; i++)
    (*perm)[node_of(S, i)] = (int32_t)i;
exit:
  return st;
}

// Fill the rows of G^T (S->g.rowptr made) with the sources of their in-edges in increasing
// internal order (val NULL), or the values form's weighted entries w_ij / W_i in their places
// (val not NULL: the same walk).
static msp_status fill_transpose(pr_state *S, const msp_matrix G, double *val) {
  msp_status st = MSP_SUCCESS;
  msp__prgraph *g = &S->g;
  int64_t *fill = NULL;
  int32_t *perm = NULL;
  MSP_TRY(MSP_ALLOC(fill, max64(S->n, 1), "PageRank: transpose cursors"));
  memcpy(fill, g->rowptr, (size_t)S->n * sizeof *fill);
  if (S->inv) MSP_TRY(order_perm(S, &perm));
  for (int64_t u = 0; u < S->n; u++) {
    const int64_t i = perm ? perm[u] : u;
    for (int64_t k = G->rowptr[i]; k < G->rowptr[i + 1]; k++) {
      const int64_t at = fill[node_of(S, G->colind[k])]++;
      if (val)
        val[at] = S->wsum[i] > 0.0 ? G->val[k] / S->wsum[i] : 0.0;
      else
        g->colind[at] = (int32_t)u;
    }
  }
exit:
  msp__free(perm);
  msp__free(fill);
  return st;
}

// The out-degrees (weighted: 0 for a zero total weight) and, asked, the degree order.
static msp_status build_degrees(pr_state *S, const msp_matrix G, int degree_order) {
  msp_status st = MSP_SUCCESS;
  const int64_t n = S->n;
  msp__prgraph *g = &S->g;
  g->n = n;
  g->nnz = G->nnz;
  MSP_TRY(MSP_ALLOC_ZERO(g->outdeg, max64(n, 1), "PageRank: out-degrees"));
  if (S->o.weighted) MSP_TRY(MSP_ALLOC_ZERO(S->wsum, max64(n, 1), "PageRank: out-weights"));
  for (int64_t i = 0; i < n; i++) {
    const int64_t len = G->rowptr[i + 1] - G->rowptr[i];
    if (len > INT32_MAX) {
      st = msp__error(MSP_ERR_INVALID_MATRIX,
                      "msp_pagerank: node %lld has %lld out-edges "
                      "(at most %d)",
                      (long long)i + 1, (long long)len, INT32_MAX);
      goto exit;
    }
    g->outdeg[i] = (int32_t)len;
    if (S->o.weighted) {
      double w = 0.0;
      for (int64_t k = G->rowptr[i]; k < G->rowptr[i + 1]; k++) {
        const double a = G->val[k];
        if (!isfinite(a) || a < 0.0) {
          st = msp__error(MSP_ERR_INVALID_MATRIX,
                          "msp_pagerank: weight %g of the edge (%lld, %d) is %s (weights must "
                          "be finite and >= 0)",
                          a, (long long)i + 1, G->colind[k] + 1,
                          isfinite(a) ? "negative" : "not finite");
          goto exit;
        }
        w += a;
      }
      if (!isfinite(w)) {
        st = msp__error(MSP_ERR_INVALID_MATRIX,
                        "msp_pagerank: the out-weights of node %lld overflow", (long long)i + 1);
        goto exit;
      }
      S->wsum[i] = w;
      if (w == 0.0) g->outdeg[i] = 0; // zero total weight: dangling
    }
  }
  if (degree_order) MSP_TRY(order_by_degree(S));
exit:
  return st;
}

// G^T's structure on the host (rows by destination, sources increasing in the internal order).
static msp_status build_transpose(pr_state *S, const msp_matrix G) {
  msp_status st = MSP_SUCCESS;
  const int64_t n = S->n, nnz = G->nnz;
  msp__prgraph *g = &S->g;
  MSP_TRY(MSP_ALLOC_ZERO(g->rowptr, n + 1, "PageRank: rows of the transpose"));
  MSP_TRY(MSP_ALLOC(g->colind, max64(nnz, 1), "PageRank: columns of the transpose"));
  for (int64_t k = 0; k < nnz; k++)
    g->rowptr[node_of(S, G->colind[k]) + 1]++;
  for (int64_t i = 0; i < n; i++)
    g->rowptr[i + 1] += g->rowptr[i];
  MSP_TRY(fill_transpose(S, G, NULL));
exit:
  return st;
}

// The values form's matrix: G^T with entry (j, i) = 1 / O_i (w_ij / W_i), in the working
// precision (CPMS: read with S->K segments). The structure is the graph's (build_transpose); only
// weighted values need G's entries in transposed order, one more pass of fill_transpose.
static msp_status build_values(pr_state *S, const msp_matrix G) {
  msp_status st = MSP_SUCCESS;
  const msp__prgraph *g = &S->g;
  double *val = NULL;
  msp_matrix T = NULL;
  MSP_TRY(MSP_ALLOC(val, max64(g->nnz, 1), "PageRank: values of the transpose"));
  if (S->o.weighted) {
    MSP_TRY(fill_transpose(S, G, val));
  } else {
    for (int64_t k = 0; k < g->nnz; k++) // the source of every in-edge has out-degree >= 1
      val[k] = 1.0 / (double)g->outdeg[g->colind[k]];
  }
  MSP_TRY(msp_matrix_from_csr(S->ctx, S->n, S->n, g->rowptr, g->colind, val, 0, &T));
  if (S->prec == MSP_PRECISION_F64) { // already CSR f64: no second copy
    S->GT = T;
    T = NULL;
    goto exit;
  }
  msp_convert_options co = msp_convert_options_default();
  co.format = MSP_FORMAT_CSR;
  co.precision = S->prec;
  co.cpms_segments = S->segs > 1 ? S->K : 0;
  MSP_TRY(msp_matrix_convert(S->ctx, T, &co, &S->GT));
exit:
  msp_matrix_destroy(&T);
  msp__free(val);
  return st;
}

// ---- the working vectors ------------------------------------------------------------------------
static msp_status make_vector(pr_state *S, msp_precision prec, msp_vector *v) {
  msp_status st = msp_vector_create_precision(S->ctx, S->n, prec, v);
  const int segs = msp__prec_segments(prec);
  if (st == MSP_SUCCESS && segs > 1) {
    int shift = 0; // banks of bank_bytes: (8 / segs) << shift bytes of one segment
    while ((8 / segs) << shift < S->bank_bytes)
      shift++;
    (*v)->bank_shift = S->o.separate ? MSP_CPMS_SEPARATE : shift;
  }
  return st;
}

// Read K segments of every working vector, and the same width of the values form's matrix
// (whose layout stays that of the first level: it is streamed, not gathered).
static msp_status set_reads(pr_state *S) {
  msp_status st = MSP_SUCCESS;
  if (S->segs == 1) return MSP_SUCCESS;
  msp_vector vs[4] = {S->p, S->pn, S->q, S->qn};
  for (int i = 0; i < 4; i++)
    if (vs[i]) MSP_TRY(msp_vector_set_cpms_segments(vs[i], S->K));
  if (S->GT) {
    const int gs = msp__prec_segments(msp_matrix_precision(S->GT));
    MSP_TRY(msp_matrix_set_cpms_segments(S->GT, read_bits(S->segs, S->K) * gs / 64));
  }
exit:
  return st;
}

// p (and q) from the host values h (sum 1): q_i = h_i / outdeg_i.
static msp_status load_start(pr_state *S, const double *h) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(msp_vector_set(S->p, h));
  if (S->q) {
    for (int64_t i = 0; i < S->n; i++)
      S->h[i] = S->g.outdeg[i] ? h[i] / (double)S->g.outdeg[i] : 0.0;
    MSP_TRY(msp_vector_set(S->q, S->h));
  }
exit:
  return st;
}

// A new level in another layout: the working vectors are copied on the backend into dst (made
// at setup; msp_copy reads every segment, exactly: CPMS holds every double) and read with K = 1
// segment of prec (f64: plain). Two levels use it:
// - 64 bits (4.2): plain fp64, so the last iterations run the fp64 kernels; the values form's
//   matrix stays CPMS, read with every segment;
// - 32 bits of cpms4: the cpms2 layout, read with its head, instead of 2 of 4 segments: the pull
//   gathers q_j at random, and each segment read is a sector of its own (a bank apart), so K
//   segments cost K sectors per gathered entry where a head costs one. For the same reason
//   cpms4 reads 16, 32, then 64 bits and leaves out the 48-bit level (3 sectors per gather),
//   which is slower than plain fp64.
static msp_status relayout(pr_state *S, msp_vector dst[4], msp_precision prec) {
  msp_status st = MSP_SUCCESS;
  msp_vector cur[4] = {S->p, S->pn, S->q, S->qn};
  for (int i = 0; i < 4; i += 2)
    if (cur[i]) {
      MSP_TRY(msp_vector_set_cpms_segments(cur[i], 0));
      MSP_TRY(msp_copy(S->ctx, cur[i], dst[i]));
    }
  for (int i = 0, o = 0; i < 4; i++) {
    while (o < 8 && S->old[o])
      o++;
    if (cur[i] && o < 8) {
      S->old[o] = cur[i];
    } else {
      msp_vector_destroy(&cur[i]);
    }
  }
  S->p = dst[0];
  S->pn = dst[1];
  S->q = dst[2];
  S->qn = dst[3];
  memset(dst, 0, 4 * sizeof *dst);
  S->prec = prec;
  S->segs = msp__prec_segments(prec);
  S->K = 1;
  if (prec == MSP_PRECISION_F64) {
    if (S->GT) MSP_TRY(msp_matrix_set_cpms_segments(S->GT, 0));
  } else {
    MSP_TRY(set_reads(S));
  }
exit:
  return st;
}

// ---- checks -------------------------------------------------------------------------------------
static msp_status check_args(msp_context ctx, const msp_matrix G, const msp_pagerank_options *o,
                             msp_vector p) {
  msp_status st = MSP_SUCCESS;
  {
    // the personalisation too: every vector the run reads belongs to ctx
    const msp_vector vs[2] = {p, o->personalization};
    const char *const names[2] = {"p", "personalization"};
    MSP_TRY(
        msp__check_operands("msp_pagerank", ctx, G, "G", o->personalization ? 2 : 1, vs, names));
  }
  MSP_CHECK_ARG(G->rows == G->cols, "msp_pagerank: G is %lld x %lld (a graph is square)",
                (long long)G->rows, (long long)G->cols);
  if (p->n != G->rows)
    return msp__error(MSP_ERR_DIMENSION_MISMATCH, "msp_pagerank: p has %lld entries, G %lld nodes",
                      (long long)p->n, (long long)G->rows);
  MSP_CHECK_ARG(o->alpha > 0.0 && o->alpha < 1.0, "msp_pagerank: alpha %g outside (0, 1)",
                o->alpha);
  MSP_CHECK_ARG(o->tol >= 0.0 && !isnan(o->tol), "msp_pagerank: tol %g < 0", o->tol);
  MSP_CHECK_ARG(o->max_iters >= 0, "msp_pagerank: max_iters %lld < 0", (long long)o->max_iters);
  MSP_CHECK_ARG((unsigned)o->precision <= MSP_PAGERANK_AUTO, "msp_pagerank: unknown precision %d",
                (int)o->precision);
  MSP_CHECK_ARG(o->bank_bytes == 0 || (o->bank_bytes >= 64 && o->bank_bytes <= 65536 &&
                                       (o->bank_bytes & (o->bank_bytes - 1)) == 0),
                "msp_pagerank: bank %d bytes (a power of two from 64 to 65536, or 0)",
                o->bank_bytes);
  MSP_CHECK_ARG((unsigned)o->order <= MSP_PAGERANK_ORDER_DEGREE, "msp_pagerank: unknown order %d",
                (int)o->order);
  MSP_CHECK_ARG(o->switch_factor > 0.0 && isfinite(o->switch_factor),
                "msp_pagerank: switch_factor %g (must be > 0)", o->switch_factor);
  if (o->personalization) {
    if (o->personalization->n != G->rows)
      return msp__error(MSP_ERR_DIMENSION_MISMATCH,
                        "msp_pagerank: the personalisation has %lld entries, G %lld nodes",
                        (long long)o->personalization->n, (long long)G->rows);
  }
  if (!ctx->backend->pr_step)
    return msp__error(MSP_ERR_NOT_SUPPORTED, "msp_pagerank: the %s backend has no PageRank",
                      ctx->backend->name);
exit:
  return st;
}

// Read a caller's vector (start or personalisation) into h, check it and normalise it to sum 1.
static msp_status read_distribution(msp_vector x, double *h, const char *what) {
  msp_status st = msp_vector_get(x, h);
  double s = 0.0;
  if (st != MSP_SUCCESS) return st;
  for (int64_t i = 0; i < x->n; i++)
    if (!isfinite(h[i]) || h[i] < 0.0)
      return msp__error(MSP_ERR_INVALID_ARGUMENT,
                        "msp_pagerank: %s entry %lld is %g (entries must be finite and >= 0)", what,
                        (long long)i + 1, h[i]);
  st = ksum(x->ctx, h, x->n, &s);
  if (st != MSP_SUCCESS) return st;
  if (!(s > 0.0) || !isfinite(s))
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "msp_pagerank: the %s sums to %g (must be > 0)",
                      what, s);
  for (int64_t i = 0; i < x->n; i++)
    h[i] /= s;
  return MSP_SUCCESS;
}

// h (in the file's order) into the internal order: to[node_of(i)] = h[i].
static void to_internal(const pr_state *S, const double *h, double *to) {
  for (int64_t i = 0; i < S->n; i++)
    to[node_of(S, i)] = h[i];
}

static void state_free(pr_state *S) {
  if (S->g.dev && S->be->pr_free) S->be->pr_free(S->ctx, &S->g);
  msp__free(S->g.rowptr);
  msp__free(S->g.colind);
  msp__free(S->g.outdeg);
  msp__free(S->wsum);
  msp__free(S->h);
  msp__free(S->inv);
  msp_matrix_destroy(&S->GT);
  msp_vector_destroy(&S->p);
  msp_vector_destroy(&S->pn);
  msp_vector_destroy(&S->q);
  msp_vector_destroy(&S->qn);
  msp_vector_destroy(&S->y);
  msp_vector_destroy(&S->v);
  for (int i = 0; i < 4; i++) {
    msp_vector_destroy(&S->f[i]);
    msp_vector_destroy(&S->c2[i]);
  }
  for (int i = 0; i < 8; i++)
    msp_vector_destroy(&S->old[i]);
}

static msp_status pagerank_run(msp_context ctx, const msp_matrix G,
                               const msp_pagerank_options *opts, msp_vector p,
                               msp_pagerank_report *rep) {
  msp_status st = MSP_SUCCESS;
  pr_state S;
  msp_pagerank_report R;
  double *hp = NULL;
  memset(&S, 0, sizeof S);
  memset(&R, 0, sizeof R);
  S.o = opts ? *opts : msp_pagerank_options_default();
  MSP_CHECK_ARG(!rep || rep->history_capacity >= 0, "msp_pagerank: history_capacity %lld < 0",
                rep ? (long long)rep->history_capacity : 0LL);
  MSP_CHECK_ARG(!rep || rep->history_capacity == 0 || rep->history || rep->history_time,
                "msp_pagerank: history and history_time are NULL with history_capacity %lld",
                rep ? (long long)rep->history_capacity : 0LL);
  if (rep) {
    R.history = rep->history;
    R.history_time = rep->history_time;
    R.history_capacity = rep->history_capacity;
  }
  MSP_TRY(check_args(ctx, G, &S.o, p));
  S.ctx = ctx;
  S.be = ctx->backend;
  S.n = G->rows;   // this rank's nodes (all of them on one process)
  double gn = 0.0; // every rank's
  MSP_TRY(rank_sum(ctx, (double)S.n, &gn));
  R.storage = MSP_PRECISION_F64;
  R.order = MSP_PAGERANK_ORDER_NATURAL;
  if (gn == 0.0) {
    R.converged = 1;
    goto exit;
  }
  const double t0 = omp_get_wtime();
  // the working precision and its layout
  msp_pagerank_precision mode = S.o.precision;
  if (mode == MSP_PAGERANK_AUTO)
    mode = gn * 8.0 > (double)MSP_PAGERANK_AUTO_BYTES ? MSP_PAGERANK_CPMS2 : MSP_PAGERANK_F64;
  S.prec = mode == MSP_PAGERANK_CPMS2   ? MSP_PRECISION_CPMS2
           : mode == MSP_PAGERANK_CPMS4 ? MSP_PRECISION_CPMS4
                                        : MSP_PRECISION_F64;
  S.segs = msp__prec_segments(S.prec);
  S.K = 1;
  R.storage = S.prec;
  S.bank_bytes = S.o.bank_bytes ? S.o.bank_bytes : ctx->kind == MSP_BACKEND_CUDA ? 128 : 8192;
  const int values = S.o.values || S.o.weighted;
  R.values = values;
  MSP_TRY(MSP_ALLOC(S.h, S.n, "PageRank: host work vector"));
  MSP_TRY(MSP_ALLOC(hp, S.n, "PageRank: host rank vector"));
  {
    msp_pagerank_order order = S.o.order;
    if (order == MSP_PAGERANK_ORDER_AUTO)
      order = gn * 8.0 > (double)MSP_PAGERANK_AUTO_BYTES ? MSP_PAGERANK_ORDER_DEGREE
                                                         : MSP_PAGERANK_ORDER_NATURAL;
    R.order = order;
    MSP_TRY(build_degrees(&S, G, order == MSP_PAGERANK_ORDER_DEGREE));
  }
  if (!values && S.be->pr_transpose) {
    // G^T made on the backend (CUDA: a radix sort on the device), since the host's counting
    // sort dominates the set-up of a large graph
    MSP_TRY(S.be->pr_transpose(ctx, G, S.inv, &S.g));
  } else {
    MSP_TRY(build_transpose(&S, G));
    if (values) {
      MSP_TRY(build_values(&S, G));
      MSP_TRY(msp_vector_create(ctx, S.n, &S.y));
    }
    MSP_TRY(S.be->pr_upload(ctx, &S.g));
  }
  { // after the graph is made: a distributed backend's pr_transpose sets the out-degrees
    int64_t nd = 0;
    for (int64_t i = 0; i < S.n; i++)
      nd += S.g.outdeg[i] == 0;
    double all = 0.0;
    MSP_TRY(rank_sum(ctx, (double)nd, &all));
    R.dangling = (int64_t)all;
  }
  MSP_TRY(make_vector(&S, S.prec, &S.p));
  MSP_TRY(make_vector(&S, S.prec, &S.pn));
  if (!values) {
    MSP_TRY(make_vector(&S, S.prec, &S.q));
    MSP_TRY(make_vector(&S, S.prec, &S.qn));
  }
  if (S.segs > 1)
    for (int i = 0; i < 4; i++)
      if (i < 2 || !values) {
        MSP_TRY(msp_vector_create(ctx, S.n, &S.f[i]));
        if (S.segs == 4) MSP_TRY(make_vector(&S, MSP_PRECISION_CPMS2, &S.c2[i]));
      }
  if (S.o.personalization) {
    MSP_TRY(read_distribution(S.o.personalization, S.h, "personalisation"));
    to_internal(&S, S.h, hp);
    MSP_TRY(msp_vector_create(ctx, S.n, &S.v));
    MSP_TRY(msp_vector_set(S.v, hp));
  }
  if (S.o.use_guess) {
    MSP_TRY(read_distribution(p, S.h, "starting vector"));
    to_internal(&S, S.h, hp);
  } else {
    for (int64_t i = 0; i < S.n; i++)
      hp[i] = 1.0 / gn;
  }
  double dangling = 0.0; // mass of p on dangling nodes, in node order
  MSP_TRY(fold_begin(ctx, &dangling, 1));
  for (int64_t i = 0; i < S.n; i++)
    if (!S.g.outdeg[i]) dangling += hp[i];
  MSP_TRY(fold_end(ctx, &dangling, 1));
  MSP_TRY(load_start(&S, hp));
  MSP_TRY(set_reads(&S));
  {
    // every working vector on the backend now (the start, the personalisation), so that the
    // uploads count in the set-up rather than inflating the first iteration's time
    msp_vector vs[] = {S.p,    S.pn,   S.q,    S.qn,    S.y,     S.v,     S.f[0],
                       S.f[1], S.f[2], S.f[3], S.c2[0], S.c2[1], S.c2[2], S.c2[3]};
    for (size_t i = 0; i < sizeof vs / sizeof *vs; i++)
      if (vs[i]) MSP_TRY(msp__vector_current(vs[i]));
  }
  MSP_TRY(msp_context_synchronize(ctx));
  const double t1 = omp_get_wtime();
  R.setup_s = t1 - t0;

  msp__pr_step a;
  memset(&a, 0, sizeof a);
  a.alpha = S.o.alpha;
  a.vconst = 1.0 / gn;
  a.v = S.v;
  R.change = INFINITY;
  while (R.iterations < S.o.max_iters) {
    double sums[3];
    if (values) MSP_TRY(msp_spmv(ctx, S.o.alpha, S.GT, S.p, 0.0, S.y));
    a.c = S.o.alpha * dangling + (1.0 - S.o.alpha);
    a.y = S.y;
    a.p = S.p;
    a.pn = S.pn;
    a.q = S.q;
    a.qn = S.qn;
    msp_vector vs[6] = {a.y, a.p, a.pn, a.q, a.qn, a.v};
    for (int i = 0; i < 6; i++)
      if (vs[i]) MSP_TRY(msp__vector_current(vs[i]));
    MSP_TRY(S.be->pr_step(ctx, &S.g, &a, sums));
    msp__vector_written(S.pn);
    if (S.qn) msp__vector_written(S.qn);
    R.iterations++;
    R.iterations_by_bits[read_bits(S.segs, S.K) / 16]++;
    R.change = sums[0];
    dangling = sums[1];
    if (R.history_length < R.history_capacity) {
      if (R.history) R.history[R.history_length] = sums[0];
      if (R.history_time) R.history_time[R.history_length] = omp_get_wtime() - t1;
      R.history_length++;
    }
    if (!isfinite(sums[0]) || !isfinite(sums[2])) {
      st = msp__error(MSP_ERR_NONFINITE, "msp_pagerank: the iteration produced %g at step %lld",
                      sums[0], (long long)R.iterations);
      goto exit;
    }
    msp_vector t = S.p;
    S.p = S.pn;
    S.pn = t;
    t = S.q;
    S.q = S.qn;
    S.qn = t;
    if (S.o.monitor &&
        S.o.monitor(S.o.monitor_data, R.iterations, R.change, read_bits(S.segs, S.K)) != 0)
      R.stopped = 1;
    if (R.change < S.o.tol) {
      R.converged = 1;
      break;
    }
    if (R.stopped) break;
    // 4.2: the change has come within switch_factor of what K segments can resolve. The
    // iteration just run read K and wrote every segment (the transition iteration); now read
    // K + 1, renormalised (reads truncate, so the sum drifts below 1), and at 64 bits leave
    // CPMS for plain fp64.
    if (S.segs > 1 && R.change < S.o.switch_factor * read_roundoff(S.segs, S.K)) {
      S.K++;
      if (S.K == S.segs) {
        MSP_TRY(relayout(&S, S.f, MSP_PRECISION_F64));
      } else if (S.segs == 4 && S.K == 2) {
        MSP_TRY(relayout(&S, S.c2, MSP_PRECISION_CPMS2));
      } else {
        MSP_TRY(set_reads(&S));
      }
      double sum;
      MSP_TRY(msp_nrm1(ctx, S.p, &sum));
      MSP_TRY(msp_scale(ctx, 1.0 / sum, S.p));
      if (S.q) MSP_TRY(msp_scale(ctx, 1.0 / sum, S.q));
      dangling /= sum;
    }
  }
  MSP_TRY(msp_context_synchronize(ctx));
  R.time_s = omp_get_wtime() - t1;
  // the result in fp64 and in the file's order, renormalised to sum 1 (each entry's rounding is
  // relative, so the sum of the stored entries is 1 to a few units of fp64), then stored in p's
  // precision
  MSP_TRY(msp_vector_get(S.p, S.h));
  for (int64_t i = 0; i < S.n; i++)
    hp[i] = S.h[node_of(&S, i)];
  {
    double s = 0.0;
    MSP_TRY(ksum(ctx, hp, S.n, &s));
    for (int64_t i = 0; i < S.n; i++)
      hp[i] /= s;
  }
  MSP_TRY(msp_vector_set(p, hp));
exit:
  if (rep) *rep = R;
  state_free(&S);
  msp__free(hp);
  return st;
}

// The context's thread count (msp_context_set_threads) for the whole solve.
msp_status msp_pagerank(msp_context ctx, const msp_matrix G, const msp_pagerank_options *opts,
                        msp_vector p, msp_pagerank_report *rep) {
  const int threads_prev =
      msp__check_context(ctx, "msp_pagerank", "ctx") == MSP_SUCCESS ? msp__threads_enter(ctx) : 0;
  const msp_status st = pagerank_run(ctx, G, opts, p, rep);
  msp__threads_leave(threads_prev);
  return st;
}

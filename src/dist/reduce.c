// reduce.c: deterministic reductions over the ranks. Each rank computes the partial result of
// each of its chunks of MSP__RED_CHUNK entries exactly as the CPU backend does (src/cpu/blas1.c,
// src/cpu/basis.c: a chunk summed in index order, fp64), every rank gathers all the partials
// (MPI_Allgatherv, in rank order = chunk order, since a rank owns whole chunks) and combines them
// in the CPU backend's fixed order. The result is the one-process result, bit for bit, on every
// rank, for any number of ranks.
#include "dispatch.h"
#include "dist.h"

#include <math.h>

enum { OP_DOT, OP_ABS, OP_SQ, OP_MAX };

static msp_status grow(double **p, size_t *cap, size_t need, const char *what) {
  if (need <= *cap) return MSP_SUCCESS;
  double *q = (double *)msp__realloc(*p, need * sizeof(double));
  if (!q) return msp__error(MSP_ERR_OUT_OF_MEMORY, "%s: %zu values", what, need);
  *p = q;
  *cap = need;
  return MSP_SUCCESS;
}

void msp__dist_reduce_free(msp_dist d) {
  msp__free(d->part);
  msp__free(d->all);
  msp__free(d->col);
  msp__free(d->vals);
  msp__free(d->blk);
  d->part = d->all = d->col = d->vals = NULL;
  d->blk = NULL;
  d->part_cap = d->all_cap = d->col_cap = d->vals_cap = d->blk_cap = 0;
}

// The local partials buffer for nchunks chunks of m values each ([chunk][value]).
msp_status msp__dist_partials(msp_dist d, int64_t nchunks, int m, double **out) {
  msp_status st = grow(&d->part, &d->part_cap, (size_t)(nchunks > 0 ? nchunks : 1) * (size_t)m,
                       "distributed reduction partials");
  *out = d->part;
  return st;
}

// Every rank's chunk count (d->chunks) and the total.
static msp_status chunk_counts(msp_dist d, int64_t nchunks, int64_t *total) {
  int64_t mine = nchunks;
  if (MPI_Allgather(&mine, 1, MPI_INT64_T, d->chunks, 1, MPI_INT64_T, d->comm) != MPI_SUCCESS)
    return msp__error(MSP_ERR_INTERNAL, "distributed reduction: MPI_Allgather failed");
  *total = 0;
  for (int r = 0; r < d->size; r++)
    *total += d->chunks[r];
  return MSP_SUCCESS;
}

// Gather into d->all what every rank put in d->vals: count[r] * m values from rank r.
static msp_status gather_vals(msp_dist d, const int64_t *count, int m) {
  msp_status st = MSP_SUCCESS;
  int64_t t = 0;
  for (int r = 0; r < d->size; r++) {
    const int64_t c = count[r] * m, o = t * m;
    if (c > INT32_MAX || o > INT32_MAX)
      return msp__error(MSP_ERR_NOT_SUPPORTED,
                        "distributed reduction: %lld partials exceed MPI's int counts",
                        (long long)(o + c));
    d->counts[r] = (int)c;
    d->displs[r] = (int)o;
    t += count[r];
  }
  MSP_TRY(grow(&d->all, &d->all_cap, (size_t)(t > 0 ? t : 1) * (size_t)m,
               "distributed reduction partials"));
  if (MPI_Allgatherv(d->vals, d->counts[d->rank], MPI_DOUBLE, d->all, d->counts, d->displs,
                     MPI_DOUBLE, d->comm) != MPI_SUCCESS)
    return msp__error(MSP_ERR_INTERNAL, "distributed reduction: MPI_Allgatherv failed");
exit:
  return st;
}

// The sums of the m values per chunk over every rank's chunks (local partials in d->part, nchunks
// of them), in the CPU backend's trees (`group`, `grouped`: see msp__dist_tree_sum): each rank
// sends the values of the tree nodes its chunks hold, every rank adds the nodes up. The m sums in
// (*out)[0..m) (d->vals, valid until the next reduction).
msp_status msp__dist_tree_reduce(msp_dist d, int64_t nchunks, int m, int64_t group, int grouped,
                                 double **out) {
  msp_status st = MSP_SUCCESS;
  int64_t total = 0;
  MSP_TRY(chunk_counts(d, nchunks, &total));
  if (group <= 0 || group > total) group = total > 0 ? total : 1;
  // every rank's nodes (a few per level), in chunk order; this rank's values
  int64_t nblk = 0, mine0 = 0, a = 0;
  int64_t *per = d->chunks; // reused below for the node counts, after the ranges are read
  for (int r = 0; r < d->size; r++)
    nblk += msp__dist_tree_blocks(a, a + per[r], total, group, NULL), a += per[r];
  {
    size_t need = (size_t)(nblk > 0 ? nblk : 1);
    if (need > d->blk_cap) {
      msp__dist_block *q = (msp__dist_block *)msp__realloc(d->blk, need * sizeof *q);
      if (!q)
        return msp__error(MSP_ERR_OUT_OF_MEMORY, "distributed reduction: %zu tree nodes", need);
      d->blk = q;
      d->blk_cap = need;
    }
  }
  a = 0;
  int64_t a0 = 0; // this rank's first chunk
  for (int r = 0, at = 0; r < d->size; r++) {
    const int64_t c = per[r], k = msp__dist_tree_blocks(a, a + c, total, group, d->blk + at);
    if (r == d->rank) {
      mine0 = at;
      a0 = a;
    }
    per[r] = k; // from here on: node counts
    at += (int)k;
    a += c;
  }
  MSP_TRY(grow(&d->vals, &d->vals_cap, (size_t)(per[d->rank] > 0 ? per[d->rank] : 1) * (size_t)m,
               "distributed reduction partials"));
  MSP_TRY(grow(&d->col, &d->col_cap, (size_t)(nchunks > 0 ? nchunks : 1),
               "distributed reduction partials"));
  msp__dist_tree_local(d->blk + mine0, per[d->rank], a0, total, group, d->part, m, d->col, d->vals);
  MSP_TRY(gather_vals(d, per, m));
  *out = d->vals; // sent: free to hold the results (at least m values)
  for (int k = 0; k < m; k++)
    if (!msp__dist_tree_sum(d->blk, nblk, total, group, grouped, d->all, m, k, &d->vals[k]))
      return msp__error(MSP_ERR_INTERNAL, "distributed reduction: the ranks' tree nodes do not "
                                          "tile the chunks");
exit:
  return st;
}

// The largest magnitude over every rank's local one (exact in any order, NaN when any is NaN).
static msp_status max_reduce(msp_dist d, double local, double *r) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(grow(&d->vals, &d->vals_cap, 1, "distributed reduction partials"));
  d->vals[0] = local;
  for (int q = 0; q < d->size; q++)
    d->chunks[q] = 1;
  MSP_TRY(gather_vals(d, d->chunks, 1));
  double m = 0.0;
  for (int q = 0; q < d->size; q++)
    m = msp_absmax_step(m, d->all[q]);
  *r = m;
exit:
  return st;
}

// ---- vector reductions (src/cpu/blas1.c's red_kernel, partials per chunk)
typedef struct {
  int op;
  msp_acc xa, ya;
  int64_t n, nchunks;
  double s;
  double *part;
} red_args;

MSP__CPU_INLINE void red_kernel(msp_precision PX, msp_precision PY, red_args *a) {
  const msp_acc xa = a->xa, ya = a->ya;
  const double s = a->s;
#pragma omp for schedule(static)
  for (int64_t c = 0; c < a->nchunks; c++) {
    const int64_t b = c * MSP__RED_CHUNK;
    const int64_t e = b + MSP__RED_CHUNK < a->n ? b + MSP__RED_CHUNK : a->n;
    double t = 0.0;
    switch (a->op) {
    case OP_DOT:
      for (int64_t i = b; i < e; i++)
        t += msp_acc_load_p(PX, &xa, i) * msp_acc_load_p(PY, &ya, i);
      break;
    case OP_ABS:
      for (int64_t i = b; i < e; i++)
        t += fabs(msp_acc_load_p(PX, &xa, i));
      break;
    case OP_SQ:
      for (int64_t i = b; i < e; i++) {
        const double v = msp_acc_load_p(PX, &xa, i) * s;
        t += v * v;
      }
      break;
    default:
      for (int64_t i = b; i < e; i++)
        t = msp_absmax_step(t, msp_acc_load_p(PX, &xa, i));
      break;
    }
    a->part[c] = t;
  }
}

#define MSP__CPU_KERNEL red_kernel
MSP__CPU_INSTANTIATE2(red_args *)
#undef MSP__CPU_KERNEL

static msp_status reduce(msp_context ctx, int op, msp_vector x, msp_vector y, double s, double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  red_args a;
  memset(&a, 0, sizeof a);
  a.op = op;
  a.xa = msp__vector_acc(x, 0);
  a.ya = msp__vector_acc(y, 0);
  a.n = x->n;
  a.s = s;
  a.nchunks = (x->n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  MSP_TRY(msp__dist_partials(d, a.nchunks, 1, &a.part));
#pragma omp parallel
  red_kernel_dispatch(x->prec, y->prec, &a);
  double t = 0.0;
  if (op == OP_MAX) {
    for (int64_t c = 0; c < a.nchunks; c++)
      t = msp_absmax_step(t, a.part[c]);
    MSP_TRY(max_reduce(d, t, &t));
  } else {
    double *res = NULL;
    MSP_TRY(msp__dist_tree_reduce(d, a.nchunks, 1, MSP__RED_GROUP, 1, &res));
    t = res[0];
  }
  *r = t;
exit:
  return st;
}

msp_status msp__dist_dot(msp_context ctx, msp_vector x, msp_vector y, double *r) {
  return reduce(ctx, OP_DOT, x, y, 0.0, r);
}

msp_status msp__dist_nrm1(msp_context ctx, msp_vector x, double *r) {
  return reduce(ctx, OP_ABS, x, x, 0.0, r);
}

// As msp__cpu_nrm2: the largest magnitude, then the sum of the scaled squares.
msp_status msp__dist_nrm2(msp_context ctx, msp_vector x, double *r) {
  msp_status st = MSP_SUCCESS;
  double m = 0.0, q = 0.0;
  MSP_TRY(reduce(ctx, OP_MAX, x, x, 0.0, &m));
  if (m == 0.0 || !isfinite(m)) {
    *r = m;
    goto exit;
  }
  MSP_TRY(reduce(ctx, OP_SQ, x, x, 1.0 / m, &q));
  *r = m * sqrt(q);
exit:
  return st;
}

// ---- GMRES's projections (src/cpu/basis.c's project_kernel, partials [chunk][column])
static msp_acc col_acc(const msp__basis *V, int j) {
  msp_acc a;
  memset(&a, 0, sizeof a);
  a.data = (char *)V->data + (size_t)j * (size_t)V->n * msp__prec_bytes(V->prec);
  a.n = V->n;
  a.prec = V->prec;
  a.scale_shift = MSP_CPMS_SEPARATE;
  a.scales = V->scales ? V->scales + j : NULL;
  a.bank_shift = V->bank_shift;
  a.read_segments = msp__prec_segments(V->prec);
  return a;
}

typedef struct {
  const msp__basis *V;
  int j0, cnt, ww, m;
  const double *w;
  double *part;
  int64_t nchunks;
} proj_args;

MSP__CPU_INLINE void proj_kernel(msp_precision P, proj_args *a) {
  const msp__basis *V = a->V;
  const double *w = a->w;
  const int64_t n = V->n;
#pragma omp for schedule(static)
  for (int64_t c = 0; c < a->nchunks; c++) {
    const int64_t b = c * MSP__RED_CHUNK, e = b + MSP__RED_CHUNK < n ? b + MSP__RED_CHUNK : n;
    for (int k = 0; k < a->cnt; k++) {
      const msp_acc v = col_acc(V, a->j0 + k);
      double t = 0.0;
      for (int64_t i = b; i < e; i++)
        t += msp_acc_load_p(P, &v, i) * w[i];
      a->part[c * a->m + k] = t;
    }
    if (a->ww) {
      double t = 0.0;
      for (int64_t i = b; i < e; i++)
        t += w[i] * w[i];
      a->part[c * a->m + a->cnt] = t;
    }
  }
}
#define MSP__CPU_KERNEL proj_kernel
MSP__CPU_INSTANTIATE1(proj_args *)
#undef MSP__CPU_KERNEL

// h[k] = V_{j0+k} . w for k < cnt and *ww = w . w (when ww), summed as project_sums does: the
// chunk partials of each column pairwise over all chunks.
static msp_status project(msp_context ctx, const msp__basis *V, int j0, int cnt, msp_vector w,
                          double *h, double *ww) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  proj_args a;
  memset(&a, 0, sizeof a);
  a.V = V;
  a.j0 = j0;
  a.cnt = cnt;
  a.ww = ww != NULL;
  a.m = cnt + a.ww;
  if (a.m == 0) return MSP_SUCCESS;
  a.w = (const double *)w->h_data;
  a.nchunks = (V->n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  MSP_TRY(msp__dist_partials(d, a.nchunks, a.m, &a.part));
#pragma omp parallel
  proj_kernel_dispatch(V->prec, &a);
  double *res = NULL;
  MSP_TRY(msp__dist_tree_reduce(d, a.nchunks, a.m, 0, 0, &res));
  for (int k = 0; k < cnt; k++)
    h[k] = res[k];
  if (ww) *ww = res[cnt];
exit:
  return st;
}

msp_status msp__dist_basis_project(msp_context ctx, const msp__basis *V, int j0, int j1,
                                   msp_vector w, double *h, double *ww) {
  return project(ctx, V, j0, j1 > j0 ? j1 - j0 : 0, w, h, ww);
}

// The CPU subtraction (the same w as its fused form, basis.c says so), then the projection of
// the new w: the fused form's partials are project_kernel's, so these are too.
msp_status msp__dist_basis_subtract(msp_context ctx, const msp__basis *V, int j0, int j1,
                                    const double *h, msp_vector w, double *u, double *ww) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  MSP_TRY(d->base->basis_subtract(ctx, V, j0, j1, h, w, NULL, NULL));
  if (u || ww) MSP_TRY(project(ctx, V, j0, u && j1 > j0 ? j1 - j0 : 0, w, u, ww));
exit:
  return st;
}

// ---- the store of a basis column: fixed point takes the column's scale from max |w| over every
// rank (basis.c's store_kernel over the whole vector), the other precisions store value by value
typedef struct {
  const msp__basis *V;
  int j;
  double *w;
  double max;
} store_args;

MSP__CPU_INLINE void store_kernel(msp_precision P, store_args *a) {
  double *w = a->w;
  const int64_t n = a->V->n;
  const msp_acc v = col_acc(a->V, a->j);
#pragma omp for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    msp_acc_store_p(P, &v, i, w[i]);
    w[i] = msp_acc_load_p(P, &v, i);
  }
}
#define MSP__CPU_KERNEL store_kernel
MSP__CPU_INSTANTIATE1(store_args *)
#undef MSP__CPU_KERNEL

msp_status msp__dist_basis_store(msp_context ctx, msp__basis *V, int j, msp_vector w) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  if (!msp_prec_is_fixed(V->prec)) return d->base->basis_store(ctx, V, j, w);
  store_args a;
  memset(&a, 0, sizeof a);
  a.V = V;
  a.j = j;
  a.w = (double *)w->h_data;
  double m = 0.0;
  for (int64_t i = 0; i < V->n; i++)
    m = msp_absmax_step(m, a.w[i]);
  MSP_TRY(max_reduce(d, m, &m));
  V->scales[j] = msp_fx_block_scale(V->prec, m);
#pragma omp parallel
  store_kernel_dispatch(V->prec, &a);
exit:
  return st;
}

// ---- ranks that reduce on their own backend (CUDA ranks): the backend's result for this rank's
// part, the ranks' values gathered (every rank gets all) and added in rank order, so every rank
// holds the same bits, the same for the same number of ranks; within rounding of one process.

// Every rank's m values (v) into d->all ([rank][value]).
static msp_status gather_ranks(msp_dist d, const double *v, int m) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(grow(&d->vals, &d->vals_cap, (size_t)(m > 0 ? m : 1), "distributed reduction partials"));
  memcpy(d->vals, v, (size_t)m * sizeof(double));
  for (int q = 0; q < d->size; q++)
    d->chunks[q] = 1;
  MSP_TRY(gather_vals(d, d->chunks, m));
exit:
  return st;
}

// v[k] = the sum over the ranks, in rank order, of their v[k] (k < m).
static msp_status sum_ranks(msp_dist d, double *v, int m) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(gather_ranks(d, v, m));
  for (int k = 0; k < m; k++) {
    double t = d->all[k];
    for (int q = 1; q < d->size; q++)
      t += d->all[(size_t)q * (size_t)m + (size_t)k];
    v[k] = t;
  }
exit:
  return st;
}

msp_status msp__dist_sum_dot(msp_context ctx, msp_vector x, msp_vector y, double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  MSP_TRY(d->base->dot(ctx, x, y, r));
  MSP_TRY(sum_ranks(d, r, 1));
exit:
  return st;
}

msp_status msp__dist_sum_nrm1(msp_context ctx, msp_vector x, double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  MSP_TRY(d->base->nrm1(ctx, x, r));
  MSP_TRY(sum_ranks(d, r, 1));
exit:
  return st;
}

// The ranks' norms r_q combined as one scaled norm: m sqrt(sum (r_q / m)^2), m the largest.
msp_status msp__dist_sum_nrm2(msp_context ctx, msp_vector x, double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  double local = 0.0;
  MSP_TRY(d->base->nrm2(ctx, x, &local));
  MSP_TRY(gather_ranks(d, &local, 1));
  double m = 0.0;
  for (int q = 0; q < d->size; q++)
    m = msp_absmax_step(m, d->all[q]);
  if (m == 0.0 || !isfinite(m)) {
    *r = m;
    goto exit;
  }
  double s = 0.0;
  for (int q = 0; q < d->size; q++) {
    const double v = d->all[q] / m;
    s += v * v;
  }
  *r = m * sqrt(s);
exit:
  return st;
}

// h (cnt values) and *ww (when asked) summed over the ranks in one gather.
static msp_status sum_projection(msp_dist d, double *h, int cnt, double *ww) {
  msp_status st = MSP_SUCCESS;
  const int m = cnt + (ww != NULL);
  if (m == 0) return MSP_SUCCESS;
  MSP_TRY(grow(&d->col, &d->col_cap, (size_t)m, "distributed reduction partials"));
  if (cnt) memcpy(d->col, h, (size_t)cnt * sizeof(double));
  if (ww) d->col[cnt] = *ww;
  MSP_TRY(sum_ranks(d, d->col, m));
  if (cnt) memcpy(h, d->col, (size_t)cnt * sizeof(double));
  if (ww) *ww = d->col[cnt];
exit:
  return st;
}

msp_status msp__dist_sum_basis_project(msp_context ctx, const msp__basis *V, int j0, int j1,
                                       msp_vector w, double *h, double *ww) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  MSP_TRY(d->base->basis_project(ctx, V, j0, j1, w, h, ww));
  MSP_TRY(sum_projection(d, h, j1 > j0 ? j1 - j0 : 0, ww));
exit:
  return st;
}

msp_status msp__dist_sum_basis_subtract(msp_context ctx, const msp__basis *V, int j0, int j1,
                                        const double *h, msp_vector w, double *u, double *ww) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  MSP_TRY(d->base->basis_subtract(ctx, V, j0, j1, h, w, u, ww));
  if (u || ww) MSP_TRY(sum_projection(d, u, u && j1 > j0 ? j1 - j0 : 0, ww));
exit:
  return st;
}

// A fixed-point column takes its scale from max |w| over the whole vector, which the backend's
// store cannot be given: refused (every rank alike); the other precisions store value by value.
msp_status msp__dist_sum_basis_store(msp_context ctx, msp__basis *V, int j, msp_vector w) {
  msp_dist d = msp__dist_of(ctx);
  if (msp_prec_is_fixed(V->prec))
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_gmres: a %s Krylov basis on %s ranks (its column scale is the whole "
                      "vector's): use an IEEE or CPMS basis precision",
                      msp_precision_name(V->prec), d->base->name);
  return d->base->basis_store(ctx, V, j, w);
}

// reduce.c: deterministic reductions over the ranks. Each rank computes the partial result of
// each of its chunks of MSP__RED_CHUNK entries with the CPU backend's own code (src/cpu/partials.h:
// a chunk summed in index order, fp64), every rank gathers all the partials
// (MPI_Allgatherv, in rank order = chunk order, since a rank owns whole chunks) and combines them
// in the CPU backend's fixed order. The result is the one-process result, bit for bit, on every
// rank, for any number of ranks.
#include "dist.h"
#include "partials.h"

#include <math.h>
#include <stdio.h>

static msp_status grow(double **p, size_t *cap, size_t need, const char *what) {
  if (need <= *cap) return MSP_SUCCESS;
  double *q = (double *)msp__realloc(*p, need * sizeof(double));
  if (!q) return msp__error(MSP_ERR_OUT_OF_MEMORY, "%s: %zu values", what, need);
  *p = q;
  *cap = need;
  return MSP_SUCCESS;
}

// grow for a size that every rank asks for at the same step (so every rank decides alike whether
// to grow): the ranks agree on the outcome before the collective that needs the buffer, which a
// rank that failed alone would skip, and after a failure every rank drops its buffer, so that the
// next step grows on every rank again.
static msp_status grow_agreed(msp_dist d, double **p, size_t *cap, size_t need, const char *what) {
  if (need <= *cap) return MSP_SUCCESS;
  const msp_status st = msp__dist_agree(d, grow(p, cap, need, what));
  if (st != MSP_SUCCESS) {
    msp__free(*p);
    *p = NULL;
    *cap = 0;
  }
  return st;
}

void msp__dist_reduce_free(msp_dist d) {
  msp__free(d->gsend);
  msp__free(d->grecv);
  msp__free(d->gproj);
  d->gsend = d->grecv = d->gproj = NULL;
  d->gsend_cap = d->grecv_cap = d->gproj_cap = 0;
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
  MSP_TRY(grow_agreed(d, &d->all, &d->all_cap, (size_t)(t > 0 ? t : 1) * (size_t)m,
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
  const double t0 = MPI_Wtime();
  MSP_TRY(chunk_counts(d, nchunks, &total));
  for (int r = 0; r < d->size; r++) // a rank whose part failed (msp__dist_tree_failed)
    if (d->chunks[r] < 0) {
      const msp_status code = (msp_status)(-d->chunks[r]);
      if (r == d->rank) return msp__error(code, "%s", msp_last_error());
      return msp__error(code, "rank %d: %s (the step failed there)", r, msp_status_string(code));
    }
  if (group <= 0 || group > total) group = total > 0 ? total : 1;
  // every rank's nodes (a few per level), in chunk order; this rank's values
  int64_t nblk = 0, mine0 = 0, a = 0;
  int64_t *per = d->chunks; // reused below for the node counts, after the ranges are read
  for (int r = 0; r < d->size; r++)
    nblk += msp__dist_tree_blocks(a, a + per[r], total, group, NULL), a += per[r];
  {
    // (every rank needs the same count: the growth is agreed, as grow_agreed's)
    size_t need = (size_t)(nblk > 0 ? nblk : 1);
    if (need > d->blk_cap) {
      msp__dist_block *q = (msp__dist_block *)msp__realloc(d->blk, need * sizeof *q);
      msp_status gst = MSP_SUCCESS;
      if (q) {
        d->blk = q;
        d->blk_cap = need;
      } else {
        gst = msp__error(MSP_ERR_OUT_OF_MEMORY, "distributed reduction: %zu tree nodes", need);
      }
      gst = msp__dist_agree(d, gst);
      if (gst != MSP_SUCCESS) {
        msp__free(d->blk);
        d->blk = NULL;
        d->blk_cap = 0;
        return gst;
      }
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
  // Sized for the largest rank, so that every rank asks for the same and grows alike (agreed).
  int64_t most_nodes = 1;
  for (int r = 0; r < d->size; r++)
    if (per[r] > most_nodes) most_nodes = per[r];
  MSP_TRY(grow_agreed(d, &d->vals, &d->vals_cap, (size_t)most_nodes * (size_t)m,
                      "distributed reduction partials"));
  MSP_TRY(grow_agreed(d, &d->col, &d->col_cap, (size_t)(total > 0 ? total : 1),
                      "distributed reduction partials"));
  msp__dist_tree_local(d->blk + mine0, per[d->rank], a0, total, group, d->part, m, d->col, d->vals);
  MSP_TRY(gather_vals(d, per, m));
  *out = d->vals; // sent: free to hold the results (at least m values)
  for (int k = 0; k < m; k++)
    if (!msp__dist_tree_sum(d->blk, nblk, total, group, grouped, d->all, m, k, &d->vals[k]))
      return msp__error(MSP_ERR_INTERNAL, "distributed reduction: the ranks' tree nodes do not "
                                          "tile the chunks");
  d->reductions++;
  d->reduce_s += MPI_Wtime() - t0;
exit:
  return st;
}

static msp_status exchange(msp_dist d, const double *v, const double *dv, int m, msp_status lst,
                           int mode, double *out);

// The largest magnitude over every rank's local one (exact in any order, NaN when any is NaN);
// lst as msp__dist_sum_ranks's.
static msp_status max_reduce(msp_dist d, double local, double *r, msp_status lst) {
  return exchange(d, &local, NULL, 1, lst, MSP__DIST_MAX, r);
}

// ---- vector reductions (the CPU backend's chunk partials, msp__cpu_red_partials)
static msp_status reduce(msp_context ctx, int op, msp_vector x, msp_vector y, double s, double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  const int64_t nchunks = (x->n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  double *part = NULL;
  // (a rank whose partials cannot be made still joins the reduction, which returns the failure)
  const msp_status lst = msp__dist_partials(d, nchunks, 1, &part);
  if (lst == MSP_SUCCESS) msp__cpu_red_partials(op, x, y, s, 0, nchunks, part);
  double t = 0.0;
  if (op == MSP__RED_MAX) {
    for (int64_t c = 0; lst == MSP_SUCCESS && c < nchunks; c++)
      t = msp_absmax_step(t, part[c]);
    MSP_TRY(max_reduce(d, t, &t, lst));
  } else {
    double *res = NULL;
    MSP_TRY(msp__dist_tree_reduce(d, lst == MSP_SUCCESS ? nchunks : msp__dist_tree_failed(lst), 1,
                                  MSP__RED_GROUP, 1, &res));
    t = res[0];
  }
  *r = t;
exit:
  return st;
}

msp_status msp__dist_dot(msp_context ctx, msp_vector x, msp_vector y, double *r) {
  return reduce(ctx, MSP__RED_DOT, x, y, 0.0, r);
}

msp_status msp__dist_nrm1(msp_context ctx, msp_vector x, double *r) {
  return reduce(ctx, MSP__RED_ABS, x, x, 0.0, r);
}

// As msp__cpu_nrm2: the largest magnitude, then the sum of the scaled squares.
msp_status msp__dist_nrm2(msp_context ctx, msp_vector x, double *r) {
  msp_status st = MSP_SUCCESS;
  double m = 0.0, q = 0.0;
  MSP_TRY(reduce(ctx, MSP__RED_MAX, x, x, 0.0, &m));
  if (m == 0.0 || !isfinite(m)) {
    *r = m;
    goto exit;
  }
  MSP_TRY(reduce(ctx, MSP__RED_SQ, x, x, 1.0 / m, &q));
  *r = m * sqrt(q);
exit:
  return st;
}

// ---- GMRES's projections (the CPU backend's chunk partials, msp__cpu_basis_partials)
// h[k] = V_{j0+k} . w for k < cnt and *ww = w . w (when ww), summed as project_sums does: the
// chunk partials of each column pairwise over all chunks.
static msp_status project(msp_context ctx, const msp__basis *V, int j0, int cnt, msp_vector w,
                          double *h, double *ww) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  const int m = cnt + (ww != NULL);
  if (m == 0) return MSP_SUCCESS;
  const int64_t nchunks = (V->n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  double *part = NULL;
  const msp_status lst = msp__dist_partials(d, nchunks, m, &part);
  if (lst == MSP_SUCCESS)
    msp__cpu_basis_partials(V, j0, cnt, (const double *)w->h_data, ww != NULL, part, 1, m);
  double *res = NULL;
  MSP_TRY(msp__dist_tree_reduce(d, lst == MSP_SUCCESS ? nchunks : msp__dist_tree_failed(lst), m, 0,
                                0, &res));
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

// DCGS2's one reduction of an iteration (the 2 j + 2 dot products, j + 1 without w), summed as
// the CPU backend's msp__cpu_basis_dcgs2_project does: the chunk partials of each value pairwise
// over all chunks. Its second pass (basis_dcgs2_update) is row by row and stays the rank's own.
msp_status msp__dist_basis_dcgs2_project(msp_context ctx, const msp__basis *V, int j, msp_vector w,
                                         double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  const int m = w ? 2 * j + 2 : j + 1;
  const int64_t nchunks = (V->n + MSP__RED_CHUNK - 1) / MSP__RED_CHUNK;
  double *part = NULL, *res = NULL;
  const msp_status lst = msp__dist_partials(d, nchunks, m, &part);
  if (lst == MSP_SUCCESS)
    msp__cpu_basis_dcgs2_partials(V, j, w ? (const double *)w->h_data : NULL, part, 1, m);
  MSP_TRY(msp__dist_tree_reduce(d, lst == MSP_SUCCESS ? nchunks : msp__dist_tree_failed(lst), m, 0,
                                0, &res));
  for (int k = 0; k < m; k++)
    r[k] = res[k];
exit:
  return st;
}

// ---- the store of a basis column: fixed point takes the column's scale from max |w| over every
// rank (basis.c's store_kernel over the whole vector), the other precisions store value by value
msp_status msp__dist_basis_store(msp_context ctx, msp__basis *V, int j, msp_vector w) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  if (!msp_prec_is_fixed(V->prec)) return d->base->basis_store(ctx, V, j, w);
  const double *wv = (const double *)w->h_data;
  double m = 0.0;
  for (int64_t i = 0; i < V->n; i++)
    m = msp_absmax_step(m, wv[i]);
  MSP_TRY(max_reduce(d, m, &m, MSP_SUCCESS));
  V->scales[j] = msp_fx_block_scale(V->prec, m);
  msp__cpu_basis_store_scaled(V, j, w);
exit:
  return st;
}

// ---- ranks that reduce on their own backend (CUDA ranks): the backend's result for this rank's
// part, the ranks' values gathered (every rank gets all) and added in rank order, so every rank
// holds the same bits, the same for the same number of ranks; within rounding of one process.

// Every rank's m values (v) and its status (lst) into d->grecv ([rank][m values, status]) over
// MPI. The buffers have the same size on every rank, so a failed growth is agreed.
static msp_status gather_ranks(msp_dist d, const double *v, int m, msp_status lst) {
  msp_status st = MSP_SUCCESS;
  const size_t ld = (size_t)m + 1;
  if ((size_t)d->size * ld > INT32_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "distributed reduction: %zu partials exceed MPI's int counts",
                      (size_t)d->size * ld);
  MSP_TRY(grow_agreed(d, &d->gsend, &d->gsend_cap, ld, "distributed reduction partials"));
  MSP_TRY(grow_agreed(d, &d->grecv, &d->grecv_cap, (size_t)d->size * ld,
                      "distributed reduction partials"));
  if (lst == MSP_SUCCESS && m > 0)
    memcpy(d->gsend, v, (size_t)m * sizeof(double));
  else if (m > 0)
    memset(d->gsend, 0, (size_t)m * sizeof(double));
  d->gsend[m] = (double)lst;
  if (MPI_Allgather(d->gsend, (int)ld, MPI_DOUBLE, d->grecv, (int)ld, MPI_DOUBLE, d->comm) !=
      MPI_SUCCESS)
    return msp__error(MSP_ERR_INTERNAL, "distributed reduction: MPI_Allgather failed");
exit:
  return st;
}

// The ranks' values in d->grecv combined in rank order (mode, as the device's combine_ranks does)
// into out, and each rank's status into codes.
static void combine_host(const msp_dist d, int m, int mode, double *out, int *codes) {
  const size_t ld = (size_t)m + 1;
  for (int k = 0; k < m; k++) {
    double t = d->grecv[k];
    if (mode == MSP__DIST_SUM) {
      for (int q = 1; q < d->size; q++)
        t += d->grecv[(size_t)q * ld + (size_t)k];
    } else {
      double mx = 0.0;
      for (int q = 0; q < d->size; q++)
        mx = msp_absmax_step(mx, d->grecv[(size_t)q * ld + (size_t)k]);
      t = mx;
      if (mode == MSP__DIST_NRM2 && mx != 0.0 && isfinite(mx)) {
        double sq = 0.0;
        for (int q = 0; q < d->size; q++) {
          const double x = d->grecv[(size_t)q * ld + (size_t)k] / mx;
          sq += x * x;
        }
        t = mx * sqrt(sq);
      }
    }
    out[k] = t;
  }
  for (int q = 0; q < d->size; q++)
    codes[q] = (int)d->grecv[(size_t)q * ld + (size_t)m];
}

// One reduction over the ranks: every rank's m values (v on the host, or dv on the device where
// the reductions go through NCCL) and its status (lst, or a failure kept from an earlier step),
// combined in rank order by mode into out (which may be v): the same bits on every rank, and
// the same over NCCL (on the device) as over MPI (on the host). A failure on any rank is
// returned by every rank: the first failing rank's status, its message there, "rank r: ..." on
// the others.
static msp_status exchange(msp_dist d, const double *v, const double *dv, int m, msp_status lst,
                           int mode, double *out) {
  msp_status st = MSP_SUCCESS;
  const double t0 = MPI_Wtime();
  if (lst == MSP_SUCCESS && d->pending != MSP_SUCCESS)
    lst = msp__error(d->pending, "%s", d->pending_msg);
  d->pending = MSP_SUCCESS;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", lst != MSP_SUCCESS ? msp_last_error() : "");
  int *codes = d->counts; // (size ints, free between reductions)
  double seconds = 0.0;
  if (msp__dist_nccl_reduces(d)) {
    MSP_TRY(d->dops->reduce(d, v, dv, m, lst, mode, out, codes, &seconds));
  } else {
    if (dv && lst == MSP_SUCCESS)
      return msp__error(MSP_ERR_INTERNAL, "distributed reduction: device values without NCCL");
    MSP_TRY(gather_ranks(d, v, m, lst));
    combine_host(d, m, mode, out, codes);
    seconds = MPI_Wtime() - t0;
  }
  d->reductions++;
  d->reduce_s += seconds;
  for (int q = 0; q < d->size; q++) {
    const int code = codes[q];
    if (code == 0) continue;
    if (q == d->rank) return msp__error((msp_status)code, "%s", msg);
    return msp__error((msp_status)code, "rank %d: %s (the step failed there)", q,
                      msp_status_string((msp_status)code));
  }
exit:
  return st;
}

msp_status msp__dist_sum_ranks(msp_dist d, double *v, int m, msp_status lst) {
  return exchange(d, v, NULL, m, lst, MSP__DIST_SUM, v);
}

msp_status msp__dist_sum_ranks_dev(msp_dist d, const double *dv, double *out, int m,
                                   msp_status lst) {
  return exchange(d, NULL, lst == MSP_SUCCESS ? dv : NULL, m, lst, MSP__DIST_SUM, out);
}

// Over NCCL the backend's value for this rank's part goes from its reduction kernels to the
// gather on the device (no wait, no copy to the host and back): the same value as the backend's
// host result, so the same bits as over MPI.
msp_status msp__dist_sum_dot(msp_context ctx, msp_vector x, msp_vector y, double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  if (msp__dist_nccl_reduces(d) && d->dops->dot_dev) {
    const double *dv = NULL;
    const msp_status lst = d->dops->dot_dev(ctx, x, y, &dv);
    return exchange(d, NULL, lst == MSP_SUCCESS ? dv : NULL, 1, lst, MSP__DIST_SUM, r);
  }
  MSP_TRY(msp__dist_sum_ranks(d, r, 1, d->base->dot(ctx, x, y, r)));
exit:
  return st;
}

msp_status msp__dist_sum_nrm1(msp_context ctx, msp_vector x, double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  if (msp__dist_nccl_reduces(d) && d->dops->nrm1_dev) {
    const double *dv = NULL;
    const msp_status lst = d->dops->nrm1_dev(ctx, x, &dv);
    return exchange(d, NULL, lst == MSP_SUCCESS ? dv : NULL, 1, lst, MSP__DIST_SUM, r);
  }
  MSP_TRY(msp__dist_sum_ranks(d, r, 1, d->base->nrm1(ctx, x, r)));
exit:
  return st;
}

// The ranks' norms r_q combined as one scaled norm: m sqrt(sum (r_q / m)^2), m the largest. Over
// NCCL each rank's norm comes from the first pass of the backend's on the device with a flag for
// a norm that pass cannot give (a sum of squares that overflowed or may have lost small squares);
// the flags are combined with the norms (nonzero when any rank's is), and then every rank takes
// the backend's norm (its second pass) through the host: the same bits either way.
msp_status msp__dist_sum_nrm2(msp_context ctx, msp_vector x, double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  if (msp__dist_nccl_reduces(d) && d->dops->nrm2_dev) {
    const double *dv = NULL;
    double out[2] = {0.0, 0.0};
    const msp_status lst = d->dops->nrm2_dev(ctx, x, &dv);
    MSP_TRY(exchange(d, NULL, lst == MSP_SUCCESS ? dv : NULL, 2, lst, MSP__DIST_NRM2, out));
    if (out[1] == 0.0) {
      *r = out[0];
      goto exit;
    }
  }
  double local = 0.0;
  const msp_status lst = d->base->nrm2(ctx, x, &local);
  MSP_TRY(exchange(d, &local, NULL, 1, lst, MSP__DIST_NRM2, r));
exit:
  return st;
}

// h (cnt values) and *ww (when asked) summed over the ranks in one gather; lst as
// msp__dist_sum_ranks's.
static msp_status sum_projection_st(msp_dist d, double *h, int cnt, double *ww, msp_status lst) {
  msp_status st = MSP_SUCCESS;
  const int m = cnt + (ww != NULL);
  if (m == 0) return MSP_SUCCESS;
  MSP_TRY(grow_agreed(d, &d->gproj, &d->gproj_cap, (size_t)m, "distributed reduction partials"));
  if (cnt) memcpy(d->gproj, h, (size_t)cnt * sizeof(double));
  if (ww) d->gproj[cnt] = *ww;
  MSP_TRY(msp__dist_sum_ranks(d, d->gproj, m, lst));
  if (cnt) memcpy(h, d->gproj, (size_t)cnt * sizeof(double));
  if (ww) *ww = d->gproj[cnt];
exit:
  return st;
}

msp_status msp__dist_sum_basis_project(msp_context ctx, const msp__basis *V, int j0, int j1,
                                       msp_vector w, double *h, double *ww) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  MSP_TRY(sum_projection_st(d, h, j1 > j0 ? j1 - j0 : 0, ww,
                            d->base->basis_project(ctx, V, j0, j1, w, h, ww)));
exit:
  return st;
}

msp_status msp__dist_sum_basis_subtract(msp_context ctx, const msp__basis *V, int j0, int j1,
                                        const double *h, msp_vector w, double *u, double *ww) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  const msp_status lst = d->base->basis_subtract(ctx, V, j0, j1, h, w, u, ww);
  if (u || ww)
    MSP_TRY(sum_projection_st(d, u, u && j1 > j0 ? j1 - j0 : 0, ww, lst));
  else
    MSP_TRY(msp__dist_defer(d, lst));
exit:
  return st;
}

// DCGS2's one reduction of an iteration: over NCCL its sums go from the backend's projection to
// the gather without a wait, and come back to the host once, combined (the solver's Hessenberg
// work needs them there).
msp_status msp__dist_sum_basis_dcgs2_project(msp_context ctx, const msp__basis *V, int j,
                                             msp_vector w, double *r) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  if (msp__dist_nccl_reduces(d) && d->dops->dcgs2_sums) {
    const double *dv = NULL;
    const msp_status lst = d->dops->dcgs2_sums(ctx, V, j, w, &dv);
    return exchange(d, NULL, lst == MSP_SUCCESS ? dv : NULL, w ? 2 * j + 2 : j + 1, lst,
                    MSP__DIST_SUM, r);
  }
  MSP_TRY(sum_projection_st(d, r, w ? 2 * j + 2 : j + 1, NULL,
                            d->base->basis_dcgs2_project(ctx, V, j, w, r)));
exit:
  return st;
}

// A fixed-point column takes its scale from max |w| over the whole vector: each rank's largest
// |w_i|, their maximum (exact in any order), the column stored with that scale (the device
// transport's store on CUDA ranks, the CPU's scaled store on CPU ranks); the other precisions store
// value by value.
msp_status msp__dist_sum_basis_store(msp_context ctx, msp__basis *V, int j, msp_vector w) {
  msp_status st = MSP_SUCCESS;
  msp_dist d = msp__dist_of(ctx);
  if (!msp_prec_is_fixed(V->prec)) return msp__dist_defer(d, d->base->basis_store(ctx, V, j, w));
  double m = 0.0;
  msp_status lst = MSP_SUCCESS;
  if (msp__dist_nccl_reduces(d)) {
    const double *dv = NULL;
    lst = d->dops->absmax_dev(ctx, V, w, &dv);
    MSP_TRY(exchange(d, NULL, lst == MSP_SUCCESS ? dv : NULL, 1, lst, MSP__DIST_MAX, &m));
    lst = MSP_SUCCESS;
  } else if (d->dops) {
    lst = d->dops->absmax(ctx, V, w, &m);
  } else {
    const double *wv = (const double *)w->h_data;
    for (int64_t i = 0; i < V->n; i++)
      m = msp_absmax_step(m, wv[i]);
  }
  if (!msp__dist_nccl_reduces(d)) MSP_TRY(max_reduce(d, m, &m, lst));
  const double scale = msp_fx_block_scale(V->prec, m);
  if (d->dops) {
    MSP_TRY(msp__dist_defer(d, d->dops->basis_store_scaled(ctx, V, j, w, scale)));
  } else {
    V->scales[j] = scale;
    msp__cpu_basis_store_scaled(V, j, w);
  }
exit:
  return st;
}

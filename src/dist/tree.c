// tree.c: the CPU backend's fixed summation trees of chunk partials, cut along the ranks' chunk
// ranges, so that a distributed reduction sends O(log chunks) values per rank instead of every
// chunk partial and still adds exactly what one process adds, in the same order.
//
// msp__cpu_pairwise(p, n) sums p[0..n) in the tree: S(i, 1) = p[i]; S(i, s) = S(i, s/2) +
// S(i + s/2, s/2) when i + s/2 < n, else S(i, s/2) (s a power of two, i a multiple of s); the
// result is S(0, s0) with s0 the least power of two >= n. A rank whose chunks hold an aligned
// node [i, min(i + s, n)) computes S(i, s) alone (msp__cpu_pairwise of those partials is that
// node); it cuts its range into the largest such nodes (a node tiling, at most two per level),
// and every rank combines all ranks' nodes from the root down.
#include "dispatch.h"
#include "dist.h"

static int64_t pow2_at_least(int64_t n) {
  int64_t s = 1;
  while (s < n)
    s *= 2;
  return s;
}

static int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

int64_t msp__dist_tree_blocks(int64_t a, int64_t b, int64_t total, int64_t group,
                              msp__dist_block *out) {
  int64_t count = 0;
  for (int64_t pos = a; pos < b;) {
    const int64_t t0 = pos / group * group, n = min64(group, total - t0);
    const int64_t i = pos - t0, y = min64(b, t0 + n) - t0;
    int64_t s = pow2_at_least(n);
    while (s > 1 && (i % s != 0 || min64(i + s, n) > y))
      s /= 2;
    if (out) {
      out[count].pos = pos;
      out[count].s = s;
    }
    count++;
    pos = t0 + min64(i + s, n);
  }
  return count;
}

void msp__dist_tree_local(const msp__dist_block *blk, int64_t nblk, int64_t a, int64_t total,
                          int64_t group, const double *part, int m, double *work, double *out) {
  for (int64_t j = 0; j < nblk; j++) {
    const int64_t t0 = blk[j].pos / group * group, n = min64(group, total - t0);
    const int64_t i = blk[j].pos - t0, len = min64(i + blk[j].s, n) - i;
    for (int k = 0; k < m; k++) {
      for (int64_t c = 0; c < len; c++)
        work[c] = part[(blk[j].pos - a + c) * m + k];
      out[j * m + k] = msp__cpu_pairwise(work, len);
    }
  }
}

typedef struct {
  const msp__dist_block *blk;
  int64_t nblk, cur, t0, n;
  const double *vals;
  int m, k, bad;
} walk;

// S(i, s) of the tree at t0 from the blocks, consumed left to right (a depth-first walk meets
// the nodes of the tiling in order).
static double node(walk *w, int64_t i, int64_t s) {
  if (w->cur < w->nblk && w->blk[w->cur].pos == w->t0 + i && w->blk[w->cur].s == s)
    return w->vals[w->cur++ * w->m + w->k];
  if (s <= 1 || w->cur >= w->nblk) { // not a tiling of the tree: a bug, reported by the caller
    w->bad = 1;
    return 0.0;
  }
  double v = node(w, i, s / 2);
  if (i + s / 2 < w->n) v += node(w, i + s / 2, s / 2);
  return v;
}

int msp__dist_tree_sum(const msp__dist_block *blk, int64_t nblk, int64_t total, int64_t group,
                       int grouped, const double *vals, int m, int k, double *result) {
  walk w = {blk, nblk, 0, 0, 0, vals, m, k, 0};
  double t = 0.0;
  if (total == 0) {
    *result = 0.0;
    return nblk == 0;
  }
  for (w.t0 = 0; w.t0 < total; w.t0 += group) {
    w.n = min64(group, total - w.t0);
    const double v = node(&w, 0, pow2_at_least(w.n));
    if (grouped)
      t += v;
    else
      t = v;
  }
  *result = t;
  return !w.bad && w.cur == nblk;
}

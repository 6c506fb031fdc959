// dispatch.h: how the CPU kernels are specialised per storage precision, and the rounding store
// of results into a vector.
//
// C has no templates, so each kernel is one `static inline` body whose precision parameters are
// compile-time constants at every call: MSP__CPU_INSTANTIATE2 / 1 generate the switch over
// MSP_PRECISION_LIST (matrix values, nested with x; or x alone) that calls the body with literal
// enumerators, and forced inlining makes the compiler fold the accessors' switches away in each
// case (C's version of Ginkgo's GKO_INSTANTIATE_FOR_EACH_*). The results are written through
// msp__cpu_store_rows, which picks y's rounding store at run time, once per block of rows.
//
// OpenMP: GCC outlines a `parallel` region before it inlines, so a parallel region inside the
// body would see the precisions as variables. The caller therefore opens the region around the
// generated switch (`#pragma omp parallel` then the dispatch call), and the bodies share out
// their loops with orphaned `#pragma omp for` constructs.
#ifndef MSP_CPU_DISPATCH_H
#define MSP_CPU_DISPATCH_H

#include "internal.h"
#include "precision.h"

#include <omp.h>

#if defined(__GNUC__)
#define MSP__CPU_INLINE static inline __attribute__((always_inline))
#define MSP__CPU_NOINLINE static __attribute__((noinline, unused))
#else
#define MSP__CPU_INLINE static inline
#define MSP__CPU_NOINLINE static
#endif

#define MSP__CPU_CAT_(a, b) a##b
#define MSP__CPU_CAT(a, b) MSP__CPU_CAT_(a, b)

// Instantiate the body named by the macro MSP__CPU_KERNEL (define it before, #undef it after)
// for every pair of precisions. The body is called as MSP__CPU_KERNEL(PA, PX, args) with PA and
// PX literal msp_precision enumerators; this defines
//   static void <kernel>_dispatch(msp_precision pa, msp_precision px, ARGT args)
// which calls it with PA == pa and PX == px (nothing for an unknown precision, which src/core
// has refused). The list is expanded twice side by side, not nested (a macro cannot expand inside
// its own expansion): the inner switch is a forced-inline function of the constant PA.
#define MSP__CPU_XCASE_(name, tag, bytes)                                                          \
  case MSP_PRECISION_##name:                                                                       \
    MSP__CPU_KERNEL(PA, MSP_PRECISION_##name, args);                                               \
    break;
#define MSP__CPU_ACASE_(name, tag, bytes)                                                          \
  case MSP_PRECISION_##name:                                                                       \
    MSP__CPU_CAT(MSP__CPU_KERNEL, _px_)(MSP_PRECISION_##name, px, args);                           \
    break;
#define MSP__CPU_INSTANTIATE2(ARGT)                                                                \
  MSP__CPU_INLINE void MSP__CPU_CAT(MSP__CPU_KERNEL, _px_)(msp_precision PA, msp_precision px,     \
                                                           ARGT args) {                            \
    switch (px) {                                                                                  \
      MSP_PRECISION_LIST(MSP__CPU_XCASE_)                                                          \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  }                                                                                                \
  static void MSP__CPU_CAT(MSP__CPU_KERNEL, _dispatch)(msp_precision pa, msp_precision px,         \
                                                       ARGT args) {                                \
    switch (pa) {                                                                                  \
      MSP_PRECISION_LIST(MSP__CPU_ACASE_)                                                          \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  }

// The same for a body of one precision, called as MSP__CPU_KERNEL(PX, args); defines
//   static void <kernel>_dispatch(msp_precision px, ARGT args)
#define MSP__CPU_CASE1_(name, tag, bytes)                                                          \
  case MSP_PRECISION_##name:                                                                       \
    MSP__CPU_KERNEL(MSP_PRECISION_##name, args);                                                   \
    break;
#define MSP__CPU_INSTANTIATE1(ARGT)                                                                \
  static void MSP__CPU_CAT(MSP__CPU_KERNEL, _dispatch)(msp_precision px, ARGT args) {              \
    switch (px) {                                                                                  \
      MSP_PRECISION_LIST(MSP__CPU_CASE1_)                                                          \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  }

// ---- rounding store of results
// -------------------------------------------------------------------- Every CPU kernel that writes
// a vector hands over blocks of consecutive results t[0..n) for entries r0 .. r0+n-1 with r0 a
// multiple of MSP_VEC_FX_BLOCK and n a multiple of it unless the block ends the vector: then a
// fixed-point vector's block scales can be set from the block's own new values in the same pass
// (each block of MSP_VEC_FX_BLOCK values is written by one thread, so the scales do not depend on
// the thread count).

// Any precision: y_i = alpha t_i + beta y_i (y read as operations read it, CPMS with the
// vector's segments), rounded by the store; returns the results it could not hold (see
// msp_acc_store_sat_p and msp_fx_store_flushed) as one count, MSP__RANGE_FLUSH_UNIT per nonzero
// result stored as 0 plus 1 per finite result that overflowed and was saturated. A template over
// y's precision selected by the switch.
MSP__CPU_INLINE int64_t msp__cpu_store_p(msp_precision PY, const msp_acc *ya, int64_t r0,
                                         const double *t, int64_t n, double alpha, double beta) {
  msp_acc w = *ya; // the store view: CPMS writes every segment (reads truncate)
  if (PY == MSP_PRECISION_CPMS2) w.read_segments = 2;
  if (PY == MSP_PRECISION_CPMS4) w.read_segments = 4;
  int64_t over = 0;
  if (msp_prec_is_fixed(PY)) {
    double *scales = (double *)ya->scales; // the vector's own scales (v->h_scales), writable
    for (int64_t b0 = 0; b0 < n; b0 += MSP_VEC_FX_BLOCK) {
      const int64_t nb = n - b0 < MSP_VEC_FX_BLOCK ? n - b0 : MSP_VEC_FX_BLOCK;
      double v[MSP_VEC_FX_BLOCK], m = 0.0;
      // beta y reads the old values with the old scale before the block's new scale is set
      for (int64_t j = 0; j < nb; j++) {
        const double a = alpha * t[b0 + j];
        v[j] = beta == 0.0 ? a : a + beta * msp_acc_load_p(PY, ya, r0 + b0 + j);
        m = msp_absmax_step(m, v[j]);
      }
      const double scale = msp_fx_block_scale(PY, m);
      scales[(r0 + b0) >> MSP_VEC_FX_SHIFT] = scale;
      for (int64_t j = 0; j < nb; j++) {
        msp_acc_store_p(PY, &w, r0 + b0 + j, v[j]);
        const double q = msp__fx_quantize(v[j], scale, msp_prec_qmax(PY));
        over += msp__range_unit(msp_fx_store_flushed(v[j], q, scale));
      }
    }
    return over;
  }
  for (int64_t r = 0; r < n; r++) {
    const double a = alpha * t[r];
    const double v = beta == 0.0 ? a : a + beta * msp_acc_load_p(PY, ya, r0 + r);
    over += msp__range_unit(msp_acc_store_sat_p(PY, &w, r0 + r, v));
  }
  return over;
}

// The reduced precisions, out of line: one copy per file instead of one per kernel instance.
#define MSP__CPU_STORE_CASE_(name, tag, bytes)                                                     \
  case MSP_PRECISION_##name:                                                                       \
    return msp__cpu_store_p(MSP_PRECISION_##name, ya, r0, t, n, alpha, beta);
MSP__CPU_NOINLINE int64_t msp__cpu_store_rows_any(const msp_acc *ya, int64_t r0, const double *t,
                                                  int64_t n, double alpha, double beta) {
  switch (ya->prec) {
    MSP_PRECISION_LIST(MSP__CPU_STORE_CASE_)
  default:
    return 0;
  }
}
#undef MSP__CPU_STORE_CASE_

// y[r0 + r] = alpha t[r] + beta y[r0 + r] for r < n (y not read when beta == 0), rounded by y's
// precision, chosen at run time. fp64 y is the inline fast path of every kernel; the others go
// through msp__cpu_store_rows_any. Returns the count of results out of range (0 for fp64), as
// msp__cpu_store_p.
MSP__CPU_INLINE int64_t msp__cpu_store_rows(const msp_acc *ya, int64_t r0, const double *t,
                                            int64_t n, double alpha, double beta) {
  if (ya->prec == MSP_PRECISION_F64) {
    double *y = (double *)ya->data + r0;
    if (beta == 0.0) {
      for (int64_t r = 0; r < n; r++)
        y[r] = alpha * t[r];
    } else {
      for (int64_t r = 0; r < n; r++)
        y[r] = alpha * t[r] + beta * y[r];
    }
    return 0;
  }
  return msp__cpu_store_rows_any(ya, r0, t, n, alpha, beta);
}

// ---- taking the parts ---------------------------------------------------------------------------
// The np parts of a product (see "work split" below) go to the threads by ownership first, then by
// stealing: part range o of nown (nown = min(threads, MSP__CPU_OWNERS, np)) belongs to thread o,
// which takes its own parts in order, one at a time, from a counter of its own; a thread whose
// range is done takes the next untaken parts of the other ranges (o + 1, o + 2, ... modulo nown)
// from their counters. Each thread thus reads the same share of the matrix on every product (kept
// in its caches from one product to the next, where a first-come dynamic share moved the parts
// between the cores and was slower), and a thread slowed by other work on the machine still hands
// its untaken parts over. Which thread sums a part changes no bits (each row is summed whole, in an
// order fixed by the matrix).
#define MSP__CPU_OWNERS 64
typedef struct {
  struct {
    _Alignas(64) int64_t next; // parts of range o taken so far (one cache line per counter)
  } c[MSP__CPU_OWNERS];
} msp__cpu_take;

// A thread's walk over the ranges (inside the parallel region; np >= 1).
typedef struct {
  int64_t np;
  int nown, home, v;      // ranges, this thread's own range, ranges finished so far
  int64_t last_p, last_b; // the part this thread took last (-1: none) and its end block
} msp__cpu_taker;

static inline msp__cpu_taker msp__cpu_taker_init(int64_t np) {
  msp__cpu_taker t;
  const int T = omp_get_num_threads();
  t.np = np;
  t.nown = T < MSP__CPU_OWNERS ? T : MSP__CPU_OWNERS;
  if (t.nown > np) t.nown = (int)np;
  if (t.nown < 1) t.nown = 1;
  t.home = omp_get_thread_num() % t.nown;
  t.v = 0;
  t.last_p = -1;
  t.last_b = 0;
  return t;
}

// The next part for this thread (its own range first, then the others'), or -1 when all the
// parts are taken.
static inline int64_t msp__cpu_next_part(msp__cpu_taker *t, msp__cpu_take *k) {
  for (; t->v < t->nown; t->v++) {
    const int o = (t->home + t->v) % t->nown;
    const int64_t a = (int64_t)o * t->np / t->nown, b = (int64_t)(o + 1) * t->np / t->nown;
    int64_t q;
#pragma omp atomic capture
    q = k->c[o].next++;
    if (q < b - a) return a + q;
  }
  return -1;
}

// ---- SpMV ---------------------------------------------------------------------------------------
// What every SpMV body reads and writes. va views the format's value array in the format's own
// order: the fp64 array for an f64 matrix, otherwise A->pval (msp__matrix_encode_values).
typedef struct {
  const struct msp_matrix_s *A;
  msp_acc va;     // matrix values
  msp_acc vb;     // HYB: the COO part's values, at vb_off + p for COO entry p
  int64_t vb_off; // (f64: a view of coo.val and 0; encoded: A->pval and rows * K)
  msp_acc xa;     // x in its storage precision (CPMS: x's segments)
  msp_acc ya;     // y as it is read (see msp__cpu_store_rows)
  double alpha, beta;
  int64_t over; // saturated results, added by each thread (atomically) at the end of its share
  msp__cpu_take take; // the parts' counters (msp__cpu_next_part), zeroed by the setup
} msp__cpu_spmv_args;

// A load view of an fp64 array of n values.
static inline msp_acc msp__cpu_f64_view(const double *v, int64_t n) {
  msp_acc a;
  memset(&a, 0, sizeof a);
  a.data = (void *)v;
  a.n = n;
  a.prec = MSP_PRECISION_F64;
  a.read_segments = 1;
  return a;
}

// Fill s for y = alpha A x + beta y. f64val / nval: the format's fp64 value array (read when A
// is f64); otherwise A->pval, which must exist. vb = va.
static inline msp_status msp__cpu_spmv_setup(msp__cpu_spmv_args *s, double alpha,
                                             const msp_matrix A, const double *f64val, int64_t nval,
                                             msp_vector x, double beta, msp_vector y) {
  memset(s, 0, sizeof *s);
  s->A = A;
  if (A->precision == MSP_PRECISION_F64) {
    s->va = msp__cpu_f64_view(f64val, nval);
  } else {
    if (A->pval == NULL)
      return msp__error(MSP_ERR_INTERNAL,
                        "msp_spmv: %s matrix with %s values has no encoded values",
                        msp_format_name(A->format), msp_precision_name(A->precision));
    s->va = msp__prec_view(A->pval, A->opts.cpms_segments);
  }
  s->vb = s->va;
  s->xa = msp__vector_acc(x, 0);
  s->ya = msp__vector_acc(y, 0);
  s->alpha = alpha;
  s->beta = beta;
  return MSP_SUCCESS;
}

// ---- work split ---------------------------------------------------------------------------------
// The row kernels share their rows out by work, not by row count: the blocks of rows are cut
// into parts of about equal weight (W(b), a nondecreasing weight of the first b blocks: nonzeros
// or stored slots plus rows, so that skewed rows and empty rows both count), part p of np
// starting at the first block whose prefix weight reaches p / np of the total. np depends on the
// total weight alone (about MSP__CPU_PART_MIN each, at most MSP__CPU_PARTS), never on the thread
// count, and the parts go to the threads by ownership, then by stealing (msp__cpu_next_part: a
// thread slowed by other work takes fewer); a part finds its boundaries by binary search, or
// from the part before (msp__cpu_taken_blocks); no array is kept per matrix. No row is split:
// each row is summed whole, in the kernel's fixed order, by one thread, and each block of
// MSP_VEC_FX_BLOCK results is stored by one thread, so the bits do not depend on the thread count
// nor on which thread takes which part. A part is at worst one block heavier than its share: a
// block whose rows hold more than 1/MSP__CPU_PARTS of the nonzeros is the limit of this balance.
#define MSP__CPU_PARTS 256
#define MSP__CPU_PART_MIN 16384 // weight per part: the dynamic share's grain, far above its cost

// The number of parts for a total weight.
static inline int64_t msp__cpu_nparts(int64_t total) {
  const int64_t np = total / MSP__CPU_PART_MIN;
  return np < 1 ? 1 : np > MSP__CPU_PARTS ? MSP__CPU_PARTS : np;
}

// The first block b in [0, nb] with W(b) >= target, for W nondecreasing with W(nb) >= target.
MSP__CPU_INLINE int64_t msp__cpu_first_block(int64_t nb, int64_t target,
                                             int64_t (*W)(const void *, int64_t), const void *w) {
  int64_t lo = 0, hi = nb;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (W(w, mid) < target)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The blocks [*b0, *b1) of part p of np, for nb blocks of total weight W(nb) = total.
MSP__CPU_INLINE void msp__cpu_part_blocks(int64_t p, int64_t np, int64_t nb, int64_t total,
                                          int64_t (*W)(const void *, int64_t), const void *w,
                                          int64_t *b0, int64_t *b1) {
  *b0 = p == 0 ? 0 : msp__cpu_first_block(nb, p * total / np, W, w);
  *b1 = p + 1 >= np ? nb : msp__cpu_first_block(nb, (p + 1) * total / np, W, w);
  if (*b1 < *b0) *b1 = *b0;
}

// The blocks [*b0, *b1) of part p (taken by tk), as msp__cpu_part_blocks gives them, found
// from the part this thread took before when that was p - 1 (its own parts come in order):
// then *b0 is that part's end and *b1 is found by an exponential search forward from it,
// reading the weights of the blocks that the part is about to read, where two binary searches
// over the whole matrix per part, whose steps each wait on a cache miss, cost a noticeable share
// of a CSR product on a matrix of many parts.
MSP__CPU_INLINE void msp__cpu_taken_blocks(msp__cpu_taker *tk, int64_t p, int64_t nb, int64_t total,
                                           int64_t (*W)(const void *, int64_t), const void *w,
                                           int64_t *b0, int64_t *b1) {
  const int64_t np = tk->np;
  if (p == 0 || tk->last_p != p - 1) {
    msp__cpu_part_blocks(p, np, nb, total, W, w, b0, b1);
  } else {
    *b0 = tk->last_b;
    if (p + 1 >= np) {
      *b1 = nb;
    } else {
      // the first block b >= *b0 with W(b) >= target (W(nb) = total >= target): gallop to a
      // bracket (lo, hi] with W(lo) < target <= W(hi), then halve it
      const int64_t target = (p + 1) * total / np;
      int64_t lo = *b0, hi = *b0;
      if (W(w, lo) < target) {
        for (int64_t step = 1;; step *= 2) {
          hi = lo + step < nb ? lo + step : nb;
          if (hi == nb || W(w, hi) >= target) break;
          lo = hi;
        }
        while (hi - lo > 1) {
          const int64_t mid = lo + (hi - lo) / 2;
          if (W(w, mid) < target)
            lo = mid;
          else
            hi = mid;
        }
      }
      *b1 = hi;
    }
  }
  tk->last_p = p;
  tk->last_b = *b1;
}

// ---- prefetching x on scattered matrices ------------------------------------------------------
// Where x is larger than a core's L2 cache and the columns of a row spread over all of it (the
// matrix's bandwidth as large), the hardware prefetchers cannot foresee x's lines and each read
// of x waits for the L3 cache or the memory; asking for the x entry MSP__CPU_PF_AHEAD entries
// ahead overlaps those waits (16 and 32 entries ahead gained less, 128 lost on a power-law
// graph). Where x fits the L2 the extra instructions cost more than they save, so it is done
// only past MSP__CPU_PF_XBYTES of x and of bandwidth.
#define MSP__CPU_PF_AHEAD 64
#define MSP__CPU_PF_XBYTES ((int64_t)4 << 20)

// 1 when the row products of A should prefetch x (x stored in fp64 or fp32; a constant PX).
MSP__CPU_INLINE int msp__cpu_prefetch_x(msp_precision PX, const struct msp_matrix_s *A) {
  if (PX != MSP_PRECISION_F64 && PX != MSP_PRECISION_F32) return 0;
  const int64_t b = PX == MSP_PRECISION_F64 ? 8 : 4;
  return A->cols * b > MSP__CPU_PF_XBYTES && A->stats.bandwidth * b > MSP__CPU_PF_XBYTES;
}

// ---- rows of irregular lengths ----------------------------------------------------------------
// The U4 loop (msp__cpu_row_sum_far) is faster than the plain one where the lengths change from
// row to row and stay near their mean (meshes), and slower where they repeat or spread over
// orders of magnitude. The rule takes it where the coefficient of variation of the lengths is
// under MSP__CPU_U4_CV and at least half of MSP__CPU_U4_SAMPLES rows spread evenly over the
// matrix differ in length from the row before, which separates the matrices it gained on from
// those it lost on: a sample of a few hundred reads of the row pointers on each product, the same
// for every thread. Either loop gives the same bits.
#define MSP__CPU_U4_CV 0.5
#define MSP__CPU_U4_SAMPLES 512

static inline int msp__cpu_rows_irregular(const struct msp_matrix_s *A) {
  const int64_t rows = A->rows, *rp = A->rowptr;
  if (rows < 3 || !(A->stats.row_cv < MSP__CPU_U4_CV)) return 0;
  const int64_t ns = rows - 2 < MSP__CPU_U4_SAMPLES ? rows - 2 : MSP__CPU_U4_SAMPLES;
  const int64_t step = (rows - 2) / ns; // >= 1; row pairs (r, r + 1) with r + 2 <= rows
  int64_t changed = 0;
  for (int64_t r = 0; r < ns * step; r += step)
    changed += rp[r + 2] - rp[r + 1] != rp[r + 1] - rp[r];
  return 2 * changed >= ns;
}

// ---- one row's sum
// ------------------------------------------------------------------------------- sum over k in
// [k0, k1) of va[k] * x[col[k]] (CSR and COO rows): two independent sums over the even and the odd
// offsets k - k0 while pairs remain, added, then the last entry of an odd length (a row of one
// entry: that product alone). The latency of one dependent add per entry no longer limits a row
// (two were faster than one and than four on the short rows of wave, soc-Epinions1 and copter2, and
// as fast as four on bcsstk29's rows of 44); the order is fixed by the row's length alone, so the
// bits do not depend on the thread count, and COO (coo.c) sums its rows in the same order.
// The last entry is read for every non-empty row and its product kept (bits and-ed with an all-ones
// mask) for an odd length, +0.0 otherwise: a branch on the parity mispredicted on rows of varying
// length, and dropping it made CSR clearly faster on such matrices. Adding +0.0 changes no sum here
// (s0 and s1 start at +0.0 and never become -0.0 in round-to-nearest, nor does their sum), and a
// dropped product is masked, not multiplied by 0 (an infinite one would give NaN), so the bits are
// those of the branch.
MSP__CPU_INLINE double msp__cpu_keep(double p, int64_t keep) { // p for keep 1, +0.0 for keep 0
  uint64_t b;
  memcpy(&b, &p, sizeof b);
  b &= (uint64_t)0 - (uint64_t)keep;
  double q;
  memcpy(&q, &b, sizeof q);
  return q;
}

// msp__cpu_row_sum_far with U4 = PF = 0 is that loop (msp__cpu_row_sum). Two variants, chosen
// per matrix by the caller, give the same bits (the same adds in the same order), and read up to
// MSP__CPU_PF_AHEAD entries past the row's end, which the caller must make readable (col and the
// values: the last rows of the arrays use the plain loop):
// - U4 (a constant 0 or 1) takes the pairs two at a time (entries k0, k0 + 2, ... to s0, k0 + 1,
//   k0 + 3, ... to s1, as above) and adds a last pair that remains masked (both products kept,
//   or both +0.0, read past the row when no pair remains), so that a row ends on one loop exit
//   taken about half as often and no branch on what is left. It pays where the row lengths change
//   from row to row (the loop's exit is mispredicted) and are about equal (rows of 0 or 1 entry
//   pay for a masked pair): see msp__cpu_rows_irregular.
// - PF (a constant; 1 only with an fp64 or fp32 x, see msp__cpu_prefetch_x) also asks for x's
//   entries MSP__CPU_PF_AHEAD entries further on.
MSP__CPU_INLINE double msp__cpu_row_sum_far(msp_precision PA, msp_precision PX, const msp_acc *va,
                                            const int32_t *col, int64_t k0, int64_t k1,
                                            const msp_acc *xa, int U4, int PF) {
#define MSP__CPU_P(k) (msp_acc_load_p(PA, va, (k)) * msp_acc_load_p(PX, xa, col[(k)]))
#define MSP__CPU_PREFETCH(k)                                                                       \
  __builtin_prefetch((const char *)xa->data +                                                      \
                     (int64_t)col[(k) + MSP__CPU_PF_AHEAD] * (PX == MSP_PRECISION_F64 ? 8 : 4))
  int64_t k = k0;
  double s0 = 0.0, s1 = 0.0;
  if (U4) {
    for (; k + 4 <= k1; k += 4) {
      if (PF) {
        MSP__CPU_PREFETCH(k);
        MSP__CPU_PREFETCH(k + 2);
      }
      s0 += MSP__CPU_P(k);
      s1 += MSP__CPU_P(k + 1);
      s0 += MSP__CPU_P(k + 2);
      s1 += MSP__CPU_P(k + 3);
    }
    const int64_t pair = k1 - k >= 2; // a pair remains (else entries past the row, masked)
    s0 += msp__cpu_keep(MSP__CPU_P(k), pair);
    s1 += msp__cpu_keep(MSP__CPU_P(k + 1), pair);
  } else {
    for (; k + 2 <= k1; k += 2) {
      if (PF) MSP__CPU_PREFETCH(k);
      s0 += MSP__CPU_P(k);
      s1 += MSP__CPU_P(k + 1);
    }
  }
  double sum = s0 + s1;
  if (k1 > k0) // the last entry, kept for an odd length (no branch on the parity)
    sum += msp__cpu_keep(MSP__CPU_P(k1 - 1), (k1 - k0) & 1);
  return sum;
#undef MSP__CPU_PREFETCH
#undef MSP__CPU_P
}

MSP__CPU_INLINE double msp__cpu_row_sum(msp_precision PA, msp_precision PX, const msp_acc *va,
                                        const int32_t *col, int64_t k0, int64_t k1,
                                        const msp_acc *xa) {
  return msp__cpu_row_sum_far(PA, PX, va, col, k0, k1, xa, 0, 0);
}

// The sum of the n partials p[0..n) in a fixed pairwise tree, whatever the thread count that
// made them (p is overwritten).
static inline double msp__cpu_pairwise(double *p, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2)
    for (int64_t i = 0; i + w < n; i += 2 * w)
      p[i] += p[i + w];
  return n ? p[0] : 0.0;
}

// Add a thread's count of results out of range (msp__cpu_store_p's) to the shared total (integer
// adds: the total does not depend on the order).
static inline void msp__cpu_add_over(int64_t *total, int64_t over) {
  if (over) {
#pragma omp atomic
    *total += over;
  }
}

// ---- the row-pointer product shared by CSR and COO ------------------------------------------
// Rows per block: a multiple of MSP_VEC_FX_BLOCK, so a fixed-point y gets whole blocks.
#define MSP__CPU_ROW_BLOCK 32

// Weight of the first b blocks of rows: their nonzeros plus their rows (msp__cpu_part_blocks).
typedef struct {
  const int64_t *rp;
  int64_t rows;
} msp__cpu_row_weight_args;
static inline int64_t msp__cpu_row_weight(const void *w, int64_t b) {
  const msp__cpu_row_weight_args *a = (const msp__cpu_row_weight_args *)w;
  const int64_t r = b * MSP__CPU_ROW_BLOCK < a->rows ? b * MSP__CPU_ROW_BLOCK : a->rows;
  return a->rp[r] + r;
}

// y = alpha A x + beta y over the host row pointers A->rowptr and the column array col (CSR's,
// or COO's triples, which are sorted by row: row r's triples are [rowptr[r], rowptr[r + 1])),
// values through s->va. Each y_i is summed whole by one thread (msp__cpu_row_sum: an order fixed
// by the row's length), so the bits do not depend on the thread count; the blocks of rows are
// shared out by nonzeros (msp__cpu_part_blocks), so a few long rows do not load one thread; each
// block of y is stored once, whole, by one thread.
MSP__CPU_INLINE void msp__cpu_rowptr_spmv(msp_precision PA, msp_precision PX, msp__cpu_spmv_args *s,
                                          const int32_t *col) {
  const int64_t *rp = s->A->rowptr;
  const msp_acc va = s->va, xa = s->xa, ya = s->ya;
  const double alpha = s->alpha, beta = s->beta;
  const int64_t rows = s->A->rows;
  const int64_t nblocks = (rows + MSP__CPU_ROW_BLOCK - 1) / MSP__CPU_ROW_BLOCK;
  const msp__cpu_row_weight_args w = {rp, rows};
  const int64_t total = rp[rows] + rows, np = msp__cpu_nparts(total);
  const int pf = msp__cpu_prefetch_x(PX, s->A), u4 = msp__cpu_rows_irregular(s->A);
  const int64_t far_end = rp[rows] - MSP__CPU_PF_AHEAD; // a block ending here may read past it
  msp__cpu_taker tk = msp__cpu_taker_init(np);
  int64_t over = 0;
  for (int64_t p; (p = msp__cpu_next_part(&tk, &s->take)) >= 0;) {
    int64_t b0, b1;
    msp__cpu_taken_blocks(&tk, p, nblocks, total, msp__cpu_row_weight, &w, &b0, &b1);
    const int64_t R1 = b1 * MSP__CPU_ROW_BLOCK < rows ? b1 * MSP__CPU_ROW_BLOCK : rows;
    const int far = rp[R1] <= far_end; // the variants may read past the part's last row
    for (int64_t b = b0; b < b1; b++) {
      const int64_t r0 = b * MSP__CPU_ROW_BLOCK;
      const int64_t n = rows - r0 < MSP__CPU_ROW_BLOCK ? rows - r0 : MSP__CPU_ROW_BLOCK;
      double t[MSP__CPU_ROW_BLOCK];
#define MSP__CPU_ROWS(U4, PF)                                                                      \
  for (int64_t r = 0; r < n; r++)                                                                  \
    t[r] = msp__cpu_row_sum_far(PA, PX, &va, col, rp[r0 + r], rp[r0 + r + 1], &xa, U4, PF);
      if (far && u4 && pf) {
        MSP__CPU_ROWS(1, 1)
      } else if (far && u4) {
        MSP__CPU_ROWS(1, 0)
      } else if (far && pf) {
        MSP__CPU_ROWS(0, 1)
      } else { // the plain loop (msp__cpu_row_sum): the arrays' last rows, or neither variant
        MSP__CPU_ROWS(0, 0)
      }
#undef MSP__CPU_ROWS
      over += msp__cpu_store_rows(&ya, r0, t, n, alpha, beta);
    }
  }
  msp__cpu_add_over(&s->over, over);
}

#endif

// gmres_dcgs2.c: GMRES's DCGS2 cycle (one reduction and two reads of the basis per iteration),
// the floor that an f32 basis's rounding sets on a cycle's explicit residual, and the GCRO
// continuation that takes a cycle past that floor in its free columns (docs/gmres.md).
#include "gmres_internal.h"

#include <math.h>
#include <string.h>

// A DCGS2 cycle with an f32 basis stops at its floor (floor_estimate below) once the recurrence's
// residual falls below FLOOR_SHARE of the estimate (the estimate is pessimistic by a small
// factor), where the estimate lies FLOOR_GUARD below the cycle's first residual (above, it is too
// pessimistic to act on: stopping early on such systems sent `auto` to f64 on a longer path),
// and continues in its columns left over (cycle_gcro). The continuation has a floor too, the
// estimate scaled by how far the residual fell before it, so in the solve's first cycle (the
// largest coefficients) the cycle stops already where that lies below FLOOR_SHARE tol: the
// earlier the continuation takes over, the less of the cycle's rounding it carries (later cycles
// stop at the floor). docs/gmres.md has the iteration counts behind these choices.
#define FLOOR_SHARE 0.25
#define FLOOR_GUARD 1e-2

// ---- a reduced basis's floor --------------------------------------------------------------------
// A basis stored with unit roundoff u holds V + E, and its Arnoldi relation A V_k = V_k+1 H_k holds
// only up to F, whose column j is of the size u ||H e_j|| (the rounding of the stored columns, as
// the product and the orthogonalisation see them). The explicit residual of x0 + V_k y is then the
// recurrence's plus F y: a cycle whose iterate has large coefficients (the first cycle, where
// ||y|| is about ||x||) cannot bring the explicit residual below about u ||A|| ||x||, while the
// recurrence goes on falling (docs/gmres.md shows it on poisson3d:48). The cycle stops there:
// floor_estimate is sqrt(sum over j of (u ||H e_j|| y_j)^2), y the cycle's coefficients, from
// the rotated H and g on the host (O(k^2) per iteration once the residual fell by FLOOR_GUARD,
// no pass over the basis). Only the f32
// basis uses it: the 16-bit and fixed-point bases keep the cycles they had, and f64 is untouched.
double msp__gmres_basis_unit(msp_precision p) {
  return p == MSP_PRECISION_F32 ? 0x1p-24 : 0.0;
}

// y (into s->y) from the k x k triangle of the rotated H and g, as update_solution solves it.
static void cycle_coefficients(gmres_state *s, int k) {
  const int ld = s->m + 1;
  double *y = s->y;
  for (int i = k - 1; i >= 0; i--) {
    double t = s->g[i];
    for (int c = i + 1; c < k; c++)
      t -= s->H[i + (size_t)c * ld] * y[c];
    const double d = s->H[i + (size_t)i * ld];
    y[i] = d != 0.0 ? t / d : 0.0;
  }
}

static double floor_estimate(gmres_state *s, int k, double u) {
  double e2 = 0.0;
  cycle_coefficients(s, k);
  for (int j = 0; j < k; j++)
    e2 += s->hn[j] * s->y[j] * s->y[j];
  return u * sqrt(e2);
}

// ---- DCGS2 --------------------------------------------------------------------------------------
// Classical Gram-Schmidt with delayed re-orthogonalisation (Swirydowicz, Langou, Ananthan, Yang
// and Thomas, "Low synchronization Gram-Schmidt and generalized minimal residual algorithms",
// DCGS2, in its Arnoldi form): iteration j takes column j as the previous iteration left it,
// orthogonalised once and not normalised, and w = A M^-1 v_j. One pass over columns 0 .. j gives
// every dot product the iteration needs in one reduction: s = V_<j^T v_j (the second,
// delayed, pass of column j), alpha = v_j . v_j, t = V_<j^T w and tau = v_j . w. On the host:
// r_jj = sqrt(alpha - s . s) (the correction is small against v_j, so the difference keeps its
// digits; where it removed more than 3/4 of alpha the norm is recomputed), q_j = (v_j - V s) /
// r_jj, the projections of w on the corrected basis c = (t, (tau - s . t) / r_jj), and column
// j - 1 of H takes the correction (+s, and r_jj below the diagonal), which completes it: its
// rotation and the residual after iteration j - 1 come here. The second pass rewrites column j as
// q_j and leaves (w - V c) / r_jj, orthogonalised once, as column j + 1. A M^-1 q_j = (w - A M^-1
// V_<j s) / r_jj, and A M^-1 V_<j s = V H s with the completed columns, so column j of H is
// (c - H s) / r_jj. The basis is read twice per iteration; the residual of iteration j is known
// one product later (the last product of a converged cycle is not used).
// v_0 (column 0) is r / beta: r's norm is beta times column 0's.
msp_status msp__gmres_cycle_dcgs2(gmres_state *s, msp_solver_report *R, double beta, double bnorm,
                                  double tol, msp_precision prec, int *kout) {
  msp_status st = MSP_SUCCESS;
  const int m = s->m, ld = m + 1;
  const int64_t it0 = R->iterations;
  const int fixed = msp_prec_is_fixed(s->V->prec);
  *kout = 0;
  for (int i = 0; i <= m; i++)
    s->g[i] = 0.0;
  for (int j = 0;; j++) {
    const int product = j < m && it0 + j < s->o.max_iters; // iteration j runs
    if (product) MSP_TRY(msp__gmres_apply_operator(s));
    double *rr = s->rr, *sv = rr, *t = rr + j + 1;
    MSP_TRY(msp__vector_current(s->w));
    MSP_TRY(s->be->basis_dcgs2_project(s->ctx, s->V, j, product ? s->w : NULL, rr));
    s->bytes += msp__gmres_col_bytes(s, j + 1);
    const double alpha = rr[j];
    double ss = 0.0;
    for (int k = 0; k < j; k++)
      ss += sv[k] * sv[k];
    double d = alpha - ss;
    if (!(d > 0.25 * alpha) && j > 0) {
      // the correction took most of v_j: its norm from the corrected vector itself
      double ww = 0.0;
      MSP_TRY(msp_copy(s->ctx, s->v, s->z));
      MSP_TRY(msp__gmres_basis_subtract(s, 0, j, sv, s->z, NULL, &ww));
      d = ww;
    }
    const double rjj = d > 0.0 ? sqrt(d) : 0.0;
    if (!isfinite(rjj) || !isfinite(alpha)) return msp__gmres_nonfinite(R->iterations + 1);
    if (j == 0) {
      s->g[0] = beta * rjj; // r = beta v_0 = beta r_00 q_0
      s->res0 = s->g[0];
    } else {
      // column j - 1 of H complete: its rotation, the residual after iteration j
      double *hu = s->Hu + (size_t)(j - 1) * ld;
      for (int i = 0; i < j; i++)
        hu[i] += sv[i];
      hu[j] = rjj;
      memcpy(s->h, hu, (size_t)j * sizeof(double));
      const double res = msp__gmres_rotate(s, j - 1, rjj);
      if (s->hn) { // the rotated column's norm, which later rotations leave alone
        const double *col = s->H + (size_t)(j - 1) * ld;
        double hn = 0.0;
        for (int i = 0; i <= j; i++)
          hn += col[i] * col[i];
        s->hn[j - 1] = hn;
      }
      s->last_res = res;
      R->iterations++;
      R->iterations_by_precision[prec]++;
      *kout = j;
      if (!isfinite(res)) return msp__gmres_nonfinite(R->iterations);
      msp__gmres_history_add(R, res / bnorm);
      if (msp__gmres_monitor(s, R->iterations, res, bnorm, prec)) R->stopped = 1;
      if (res <= tol || rjj == 0.0 || R->stopped) break;
      const double u = msp__gmres_basis_unit(s->V->prec);
      // both rules below need res <= FLOOR_GUARD res0: the O(j^2) estimate only from there
      const double est = u > 0.0 && product && s->Bc && res <= FLOOR_GUARD * s->res0
                             ? floor_estimate(s, j, u)
                             : 0.0;
      // the solve's first cycle: stop where the continuation's floor, est scaled by the
      // residual's fall, is below tol too (see FLOOR_SHARE), once the residual fell by
      // FLOOR_GUARD (before, the coefficients and so est are still growing)
      const double early =
          R->restarts == 0 && est > FLOOR_SHARE * tol && res <= FLOOR_GUARD * s->res0
              ? tol * s->res0 / est
              : 0.0;
      if (est > 0.0 && est <= FLOOR_GUARD * s->res0 && res <= FLOOR_SHARE * fmax(est, early)) {
        s->floor_stop = 1;
        break;
      }
    }
    if (!product || rjj == 0.0) break;
    // c: w's projections on the corrected basis; column j of H = (c - H s) / r_jj
    double st_ = 0.0;
    for (int k = 0; k < j; k++) {
      s->c[k] = t[k];
      st_ += sv[k] * t[k];
    }
    s->c[j] = (t[j] - st_) / rjj;
    // H s column by column (contiguous, so it vectorises; each y_i still adds l = 0, 1, ...)
    double *hj = s->Hu + (size_t)j * ld;
    for (int i = 0; i <= j; i++)
      hj[i] = 0.0;
    for (int l = 0; l < j; l++) {
      const double *hl = s->Hu + (size_t)l * ld;
      for (int i = 0; i <= l + 1; i++) // H is upper Hessenberg
        hj[i] += hl[i] * sv[l];
    }
    for (int i = 0; i <= j; i++)
      hj[i] = (s->c[i] - hj[i]) / rjj;
    MSP_TRY(msp__vector_current(s->w));
    MSP_TRY(s->be->basis_dcgs2_update(s->ctx, s->V, j, sv, rjj, s->c, s->w, !fixed));
    msp__vector_written(s->w);
    s->bytes += msp__gmres_col_bytes(s, j + 1) + msp__gmres_col_bytes(s, fixed ? 1 : 2);
    if (fixed) MSP_TRY(msp__gmres_basis_store(s, j + 1, s->w));
    // w (column j + 1 as stored) is the next product's input
    msp_vector tmp = s->v;
    s->v = s->w;
    s->w = tmp;
  }
  return st;
exit:
  return st;
}

// ---- continuing a cycle past its floor (f32 basis, DCGS2) ---------------------------------------
// The cycle stopped at its floor after k iterations: x has its iterate, r = b - A x is mostly the
// basis's rounding (outside the cycle's space), and columns k + 1 .. m are free. Restarting would
// throw the space away (the next cycle from r needs far more iterations than f64 takes to go on
// from the same residual); instead the cycle goes on as GCRO (de Sturler,
// "Nested Krylov methods based on GCR"; Parks, de Sturler, Mackey, Johnson and Maiti, "Recycling
// Krylov subspaces for sequences of linear systems") with the cycle's space as the recycled one:
// U = V_k R_h^-1 and C = A U = V_k+1 Q_h (Hu_k = Q_h R_h, the cycle's rotations; C orthonormal in
// the coordinates of columns 0 .. k), and new columns k + 1, ... from (I - C C^T) r by Arnoldi on
// (I - C C^T) A: A V_new = C B + V_new+ H. The correction U y_u + V_new y_v has
// y_v = argmin || ||(I - C C^T) r|| e_1 - H y ||, y_u = C^T r - B y_v, so its residual is the new
// block's recurrence and its coefficients are of the size of r: the rounding floor of the cycle
// no longer holds it. Column k is finished as DCGS2 would (its q_k is part of the old block) with
// r in place of the product A q_k, which is never formed. The new columns are orthogonal to C and
// to each other, not to z = V_k+1 (the last column of the rotations' Q), so their corrections
// and coefficients in columns 0 .. k are taken through (I - z z^T) (pc_coords): the two basis
// passes of an iteration are DCGS2's, over columns 0 .. J. A of the correction's C part is left
// out of A q_J (it is of the size of the basis's rounding, like the term DCGS2 itself drops).
// With the f64 arithmetic of a forced floor on an f64 basis the continuation repeats unrestarted
// GMRES iteration for iteration.
// Q_h^T x in out[0 .. k-1] (z^T x in out[k]), x of k + 1 coordinates in columns 0 .. k.
static void qh_t(const gmres_state *s, int k, const double *x, double *out) {
  memcpy(out, x, (size_t)(k + 1) * sizeof(double));
  for (int i = 0; i < k; i++) {
    const double a = out[i], b = out[i + 1];
    out[i] = s->cs[i] * a + s->sn[i] * b;
    out[i + 1] = -s->sn[i] * a + s->cs[i] * b;
  }
}
// (I - z z^T) x = Q_h Q_h^T x.
static void pc_coords(const gmres_state *s, int k, const double *x, double *out) {
  qh_t(s, k, x, out);
  out[k] = 0.0;
  for (int i = k - 1; i >= 0; i--) {
    const double a = out[i], b = out[i + 1];
    out[i] = s->cs[i] * a - s->sn[i] * b;
    out[i + 1] = s->sn[i] * a + s->cs[i] * b;
  }
}

msp_status msp__gmres_cycle_gcro(gmres_state *s, msp_solver_report *R, int k, double bnorm,
                                 double tol, msp_precision prec) {
  msp_status st = MSP_SUCCESS;
  const int m = s->m, ld = m + 1;
  const int fixed = msp_prec_is_fixed(s->V->prec);
  // The new block's Hessenberg matrix in Hu's columns k + 1 .. (before the rotations) and H's
  // (after), which the cycle left free; B (k + 1 per column) and the vectors from the state.
  double *const B = s->Bc, *const Hn = s->Hu + (size_t)(k + 1) * ld,
                *const Hr = s->H + (size_t)(k + 1) * ld;
  double *const cs2 = s->aux, *const sn2 = cs2 + ld + 1, *const g2 = sn2 + ld + 1,
                *const ctr = g2 + ld + 1, *const tmp = ctr + ld + 1, *const sp = tmp + ld + 1,
                *const cc = sp + ld + 1, *const coef = cc + ld + 1;
  g2[0] = 0.0;
  double rscale = 0.0, res = 0.0;
  int P = 0; // new columns whose Hessenberg column is complete
  MSP_TRY(msp_copy(s->ctx, s->r, s->w));
  for (int J = k;; J++) {
    // the product of J - 1 (J > k + 1) is an iteration not counted yet: it counts against
    // max_iters already
    const int product = J > k && J < m && R->iterations + (J > k + 1) < s->o.max_iters;
    if (product) MSP_TRY(msp__gmres_apply_operator(s));
    const int withw = J == k || product;
    double *rr = s->rr, *sv = rr, *t = rr + J + 1;
    MSP_TRY(msp__vector_current(s->w));
    MSP_TRY(s->be->basis_dcgs2_project(s->ctx, s->V, J, withw ? s->w : NULL, rr));
    s->bytes += msp__gmres_col_bytes(s, J + 1);
    const double alpha = rr[J];
    // the correction of column J: against columns < k as DCGS2's (J == k), else against C
    // (coordinates (I - z z^T) s in columns 0 .. k) and the new columns
    double ss = 0.0;
    if (J == k) {
      for (int l = 0; l < k; l++) {
        sp[l] = sv[l];
        ss += sv[l] * sv[l];
      }
    } else {
      pc_coords(s, k, sv, sp);
      for (int l = 0; l <= k; l++)
        ss += sp[l] * sv[l];
      for (int l = k + 1; l < J; l++) {
        sp[l] = sv[l];
        ss += sv[l] * sv[l];
      }
    }
    double d = alpha - ss;
    if (!(d > 0.25 * alpha)) {
      double ww = 0.0;
      MSP_TRY(msp_copy(s->ctx, s->v, s->z));
      MSP_TRY(msp__gmres_basis_subtract(s, 0, J, sp, s->z, NULL, &ww));
      d = ww;
    }
    const double rjj = d > 0.0 ? sqrt(d) : 0.0;
    if (!isfinite(rjj) || !isfinite(alpha)) {
      st = msp__gmres_nonfinite(R->iterations + 1);
      goto exit;
    }
    if (J == k + 1) {
      // (I - C C^T) r complete: its norm, and C^T r gets the C part of column k + 1
      qh_t(s, k, sv, tmp);
      for (int i = 0; i < k; i++)
        ctr[i] += rscale * tmp[i];
      g2[0] = rscale * rjj;
      res = g2[0];
    } else if (J > k + 1) {
      // new column P = J - k - 2 complete: B gets C^T of column J's correction, H its rest
      const int c = J - k - 2;
      double *b = B + (size_t)c * (k + 1), *h = Hn + (size_t)c * ld;
      qh_t(s, k, sv, tmp);
      for (int i = 0; i < k; i++)
        b[i] += tmp[i];
      for (int i = 0; i <= c; i++)
        h[i] += sv[k + 1 + i];
      h[c + 1] = rjj;
      h = Hr + (size_t)c * ld;
      memcpy(h, Hn + (size_t)c * ld, (size_t)(c + 2) * sizeof(double));
      for (int i = 0; i < c; i++) {
        const double a = h[i], e = h[i + 1];
        h[i] = cs2[i] * a + sn2[i] * e;
        h[i + 1] = -sn2[i] * a + cs2[i] * e;
      }
      const double a = h[c], e = h[c + 1], hh = hypot(a, e);
      cs2[c] = hh == 0.0 ? 1.0 : a / hh;
      sn2[c] = hh == 0.0 ? 0.0 : e / hh;
      h[c] = hh;
      h[c + 1] = 0.0;
      g2[c + 1] = -sn2[c] * g2[c];
      g2[c] = cs2[c] * g2[c];
      res = fabs(g2[c + 1]);
      P = c + 1;
      s->last_res = res;
      R->iterations++;
      R->iterations_by_precision[prec]++;
      if (!isfinite(res)) {
        st = msp__gmres_nonfinite(R->iterations);
        goto exit;
      }
      msp__gmres_history_add(R, res / bnorm);
      if (msp__gmres_monitor(s, R->iterations, res, bnorm, prec)) R->stopped = 1;
    }
    if (rjj == 0.0 || (J > k && (res <= tol || R->stopped || !product))) break;
    // w's coefficients: C^T w and the new columns' projections; column J's from the correction
    double st_ = 0.0;
    if (J == k) {
      for (int l = 0; l < k; l++) {
        cc[l] = t[l];
        st_ += sv[l] * t[l];
      }
      cc[k] = (t[k] - st_) / rjj; // cc = V_0..k^T r
      qh_t(s, k, cc, tmp);
      for (int i = 0; i < k; i++)
        ctr[i] = tmp[i];
      pc_coords(s, k, cc, tmp);
      memcpy(cc, tmp, (size_t)(k + 1) * sizeof(double));
      rscale = rjj; // column k + 1 = (I - C C^T) r / rjj
    } else {
      const int c = J - k - 1; // this column's index among the new ones
      for (int l = 0; l <= k; l++)
        st_ += sp[l] * t[l];
      for (int l = k + 1; l < J; l++)
        st_ += sv[l] * t[l];
      const double cj = (t[J] - st_) / rjj;
      double *b = B + (size_t)c * (k + 1), *h = Hn + (size_t)c * ld;
      qh_t(s, k, t, tmp);
      for (int i = 0; i < k; i++)
        b[i] = tmp[i];
      for (int i = 0; i < c; i++)
        h[i] = t[k + 1 + i];
      h[c] = cj;
      h[c + 1] = 0.0;
      // A q_J = (w - A V_new s_new) / rjj (A of the C part of the correction is not formed: it
      // is of the size of the basis's rounding)
      for (int l = 0; l < c; l++) {
        const double sl = sv[k + 1 + l];
        const double *bl = B + (size_t)l * (k + 1), *hl = Hn + (size_t)l * ld;
        for (int i = 0; i < k; i++)
          b[i] -= sl * bl[i];
        for (int i = 0; i <= l + 1; i++)
          h[i] -= sl * hl[i];
      }
      for (int i = 0; i < k; i++)
        b[i] /= rjj;
      for (int i = 0; i <= c; i++)
        h[i] /= rjj;
      pc_coords(s, k, t, cc);
      for (int l = k + 1; l < J; l++)
        cc[l] = t[l];
      cc[J] = cj;
    }
    MSP_TRY(msp__vector_current(s->w));
    MSP_TRY(s->be->basis_dcgs2_update(s->ctx, s->V, J, sp, rjj, cc, s->w, !fixed));
    msp__vector_written(s->w);
    s->bytes += msp__gmres_col_bytes(s, J + 1) + msp__gmres_col_bytes(s, fixed ? 1 : 2);
    if (fixed) MSP_TRY(msp__gmres_basis_store(s, J + 1, s->w));
    msp_vector tmpv = s->v;
    s->v = s->w;
    s->w = tmpv;
  }
  if (P > 0) {
    double *yv = tmp;
    for (int i = P - 1; i >= 0; i--) {
      double v = g2[i];
      for (int c = i + 1; c < P; c++)
        v -= Hr[i + (size_t)c * ld] * yv[c];
      const double dd = Hr[i + (size_t)i * ld];
      yv[i] = dd != 0.0 ? v / dd : 0.0;
    }
    // y_u = C^T r - B y_v, then U y_u = V_k R_h^-1 y_u
    double *yu = sp;
    for (int i = 0; i < k; i++) {
      double v = ctr[i];
      for (int c = 0; c < P; c++)
        v -= B[(size_t)c * (k + 1) + i] * yv[c];
      yu[i] = v;
    }
    for (int i = k - 1; i >= 0; i--) {
      double v = yu[i];
      for (int c = i + 1; c < k; c++)
        v -= s->H[i + (size_t)c * ld] * coef[c];
      const double dd = s->H[i + (size_t)i * ld];
      coef[i] = dd != 0.0 ? v / dd : 0.0;
    }
    coef[k] = 0.0;
    for (int c = 0; c < P; c++)
      coef[k + 1 + c] = yv[c];
    MSP_TRY(msp__gmres_add_correction(s, k + 1 + P, coef));
  }
exit:
  return st;
}

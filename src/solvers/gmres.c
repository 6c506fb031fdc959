// gmres.c: restarted GMRES with a compressed Krylov basis (CB-GMRES), for every backend.
//
// Aliaga, Anzt, Grutzmacher, Quintana-Orti, Tomas, "Compressed basis GMRES", Fig. 1: right
// preconditioning, classical Gram-Schmidt with conditional re-orthogonalisation (or modified
// Gram-Schmidt), the least-squares problem kept triangular by Givens rotations. The basis is one
// block of n x (m+1) values in its storage precision, made and used only through the backend's
// basis operations (store, project, subtract, combine), which read the stored values through the
// accessors and compute in fp64. Nothing here sees a device pointer or a format: every vector
// operation is a backend operation.
#include "gmres_internal.h"

#include <math.h>
#include <omp.h>

// Re-orthogonalise while a pass leaves less than eta of the norm it found (Fig. 1, line 7).
#define ETA 0.70710678118654752 // 1 / sqrt(2)
#define MAX_REORTH 2
// Auto basis: a cycle that does not bring the explicit residual below this share of its value
// before the cycle moves the basis to f64. Restarted GMRES from the iterate the f32 cycles left
// can itself stall where GMRES from the initial guess converges (cz308 at a small restart), so an
// f64 cycle after the move that stagnates the same way starts over from the initial guess,
// once: from there the iteration is that of the f64 basis alone, and `auto` converges wherever
// f64 does (within max_iters, which counts the iterations before the restart too).
#define STAGNATION 0.9
#define GAP 10.0

msp_solver_options msp_solver_options_default(void) {
  msp_solver_options o;
  memset(&o, 0, sizeof o);
  o.restart = 100;
  o.rtol = 1e-8;
  o.atol = 0.0;
  o.max_iters = 10000;
  o.basis_precision = MSP_PRECISION_F64;
  o.basis_auto = 0;
  o.precond = MSP_PRECOND_NONE;
  o.ortho = MSP_ORTHO_DCGS2;
  return o;
}

// ---- backend basis operations (vectors made current on the backend's side first) -------------
// Bytes of `cols` columns of the basis: values and, for fixed point, each column's scale.
double msp__gmres_col_bytes(const gmres_state *s, int cols) {
  const double per = (double)s->n * (double)msp__prec_bytes(s->V->prec) +
                     (msp_prec_is_fixed(s->V->prec) ? 8.0 : 0.0);
  return per * cols;
}

msp_status msp__gmres_basis_store(gmres_state *s, int j, msp_vector w) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(msp__vector_current(w));
  MSP_TRY(s->be->basis_store(s->ctx, s->V, j, w));
  msp__vector_written(w);
  s->bytes += msp__gmres_col_bytes(s, 1);
exit:
  return st;
}
// h = V_j0..j1-1^T w, and (ww not NULL) w.w from the same pass.
static msp_status basis_project(gmres_state *s, int j0, int j1, msp_vector w, double *h,
                                double *ww) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(msp__vector_current(w));
  MSP_TRY(s->be->basis_project(s->ctx, s->V, j0, j1, w, h, ww));
  s->bytes += msp__gmres_col_bytes(s, j1 - j0);
exit:
  return st;
}
// w -= V_j0..j1-1 h; then (u, ww not NULL) u = V^T w and w.w of the new w, from the same pass
// over the rows: the columns are counted once (the second read comes from the cache).
msp_status msp__gmres_basis_subtract(gmres_state *s, int j0, int j1, const double *h, msp_vector w,
                                     double *u, double *ww) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(msp__vector_current(w));
  MSP_TRY(s->be->basis_subtract(s->ctx, s->V, j0, j1, h, w, u, ww));
  msp__vector_written(w);
  s->bytes += msp__gmres_col_bytes(s, j1 - j0);
exit:
  return st;
}
static msp_status basis_combine(gmres_state *s, int k, const double *y, msp_vector z) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(msp__vector_current(z));
  MSP_TRY(s->be->basis_combine(s->ctx, s->V, k, y, z));
  msp__vector_written(z);
  s->bytes += msp__gmres_col_bytes(s, k);
exit:
  return st;
}

// (Re)make the basis in precision p: at the start, and when the auto basis widens.
static msp_status basis_make(gmres_state *s, msp_precision p) {
  if (s->V && s->V->prec == p) return MSP_SUCCESS;
  s->be->basis_free(s->ctx, s->V);
  s->V = NULL;
  return s->be->basis_alloc(s->ctx, s->n, s->m + 1, p, &s->V);
}

// The backend must have every operation the solve calls (the basis operations, and pmul for
// Jacobi): an empty slot of a backend's table names the first one missing, before any work.
static msp_status check_slots(msp_context ctx, msp_precond precond, msp_ortho ortho) {
  const msp__backend *be = ctx->backend;
  const char *missing = !be->basis_alloc                             ? "basis_alloc"
                        : !be->basis_free                            ? "basis_free"
                        : !be->basis_store                           ? "basis_store"
                        : !be->basis_project                         ? "basis_project"
                        : !be->basis_subtract                        ? "basis_subtract"
                        : !be->basis_combine                         ? "basis_combine"
                        : precond == MSP_PRECOND_JACOBI && !be->pmul ? "pmul"
                        : ortho == MSP_ORTHO_DCGS2 && !be->basis_dcgs2_project
                            ? "basis_dcgs2_project"
                        : ortho == MSP_ORTHO_DCGS2 && !be->basis_dcgs2_update ? "basis_dcgs2_update"
                                                                              : NULL;
  if (missing)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "msp_gmres: operation %s is not implemented on the %s backend", missing,
                      be->name);
  return MSP_SUCCESS;
}

// r = b - A x and its norm.
static msp_status residual(gmres_state *s, double *beta) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(msp_spmv(s->ctx, 1.0, s->A, s->x, 0.0, s->r));
  MSP_TRY(msp_axpby(s->ctx, 1.0, s->b, -1.0, s->r));
  MSP_TRY(msp_nrm2(s->ctx, s->r, beta));
exit:
  return st;
}

// Orthogonalise w (= A M^-1 v_j) against columns 0..j; h[0..j] gets the projections and
// *hnext the norm of what is left. Classical Gram-Schmidt reads the basis in passes that each do
// two things: the projection h = V^T w with ||w||; the subtraction w -= V h with ||w|| of the new
// w and, where the backend says it pays (V->fuse_cols: the basis's rows in cache between the two
// reads), the next projection u = V^T w. So the test for another pass (||w|| fell below eta times
// its value before the pass) costs no extra pass over w, and with u fused a second pass starts
// from u at once: 2 passes over the basis without re-orthogonalisation, 3 with one (else 4), and
// one host synchronisation per pass.
// ||w|| from w.w of a basis pass: its square root, unless the squares may have overflowed or
// underflowed (then msp_nrm2, which scales by the largest entry).
static msp_status norm_of(gmres_state *s, double ww, double *nrm) {
  if (isfinite(ww) && ww >= 1e-250) {
    *nrm = sqrt(ww);
    return MSP_SUCCESS;
  }
  return msp_nrm2(s->ctx, s->w, nrm);
}

static msp_status orthogonalize(gmres_state *s, int j, double *hnext) {
  msp_status st = MSP_SUCCESS;
  double before = 0.0, ww = 0.0, after = 0.0;
  if (s->o.ortho == MSP_ORTHO_MGS) {
    for (int k = 0; k <= j; k++) {
      MSP_TRY(basis_project(s, k, k + 1, s->w, &s->h[k], NULL));
      MSP_TRY(msp__gmres_basis_subtract(s, k, k + 1, &s->h[k], s->w, NULL, k == j ? &ww : NULL));
    }
    MSP_TRY(norm_of(s, ww, hnext));
    goto exit;
  }
  MSP_TRY(basis_project(s, 0, j + 1, s->w, s->h, &ww));
  MSP_TRY(norm_of(s, ww, &before));
  // u: the projection of what is left, used only if another pass is taken; fused into the
  // subtraction where the backend says it pays (fuse_cols), else computed when needed
  const int fuse = j + 1 <= s->V->fuse_cols;
  MSP_TRY(msp__gmres_basis_subtract(s, 0, j + 1, s->h, s->w, fuse ? s->u : NULL, &ww));
  MSP_TRY(norm_of(s, ww, &after));
  // Cancellation lost more than the factor eta: another pass recovers orthogonality. Its
  // subtraction does not ask for the projection after it: a second re-orthogonalisation is rare,
  // and asking costs (the fused kernel reads the columns more slowly than a plain subtraction),
  // so that pass, if any, projects on its own.
  for (int pass = 0; pass < MAX_REORTH && after < ETA * before; pass++) {
    before = after;
    if (!fuse || pass > 0) MSP_TRY(basis_project(s, 0, j + 1, s->w, s->u, NULL));
    for (int k = 0; k <= j; k++)
      s->h[k] += s->u[k];
    MSP_TRY(msp__gmres_basis_subtract(s, 0, j + 1, s->u, s->w, NULL, &ww));
    MSP_TRY(norm_of(s, ww, &after));
  }
  *hnext = after;
exit:
  return st;
}

// Column j of H from h[0..j] and hnext; the earlier rotations, then a new one that zeroes
// H(j+1, j), applied to g as well. Returns |g[j+1]|, the recurrence's residual norm.
double msp__gmres_rotate(gmres_state *s, int j, double hnext) {
  const int ld = s->m + 1;
  double *col = s->H + (size_t)j * ld;
  for (int i = 0; i <= j; i++)
    col[i] = s->h[i];
  col[j + 1] = hnext;
  for (int i = 0; i < j; i++) {
    const double a = col[i], c = col[i + 1];
    col[i] = s->cs[i] * a + s->sn[i] * c;
    col[i + 1] = -s->sn[i] * a + s->cs[i] * c;
  }
  const double a = col[j], c = col[j + 1], rr = hypot(a, c);
  s->cs[j] = rr == 0.0 ? 1.0 : a / rr;
  s->sn[j] = rr == 0.0 ? 0.0 : c / rr;
  col[j] = rr;
  col[j + 1] = 0.0;
  s->g[j + 1] = -s->sn[j] * s->g[j];
  s->g[j] = s->cs[j] * s->g[j];
  return fabs(s->g[j + 1]);
}

// w = A M^-1 v: the product of an iteration (right preconditioning).
msp_status msp__gmres_apply_operator(gmres_state *s) {
  msp_status st = MSP_SUCCESS;
  if (s->o.precond != MSP_PRECOND_NONE) {
    MSP_TRY(msp__precond_apply(s->ctx, &s->P, s->v, s->z));
    MSP_TRY(msp_spmv(s->ctx, 1.0, s->A, s->z, 0.0, s->w));
  } else {
    MSP_TRY(msp_spmv(s->ctx, 1.0, s->A, s->v, 0.0, s->w));
  }
exit:
  return st;
}

// x += M^-1 V_k y (the columns' combination, then the preconditioner when there is one).
msp_status msp__gmres_add_correction(gmres_state *s, int k, const double *y) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(basis_combine(s, k, y, s->z));
  if (s->o.precond != MSP_PRECOND_NONE) {
    MSP_TRY(msp__precond_apply(s->ctx, &s->P, s->z, s->t));
    MSP_TRY(msp_axpby(s->ctx, 1.0, s->t, 1.0, s->x));
  } else {
    MSP_TRY(msp_axpby(s->ctx, 1.0, s->z, 1.0, s->x));
  }
exit:
  return st;
}

// Solve the k x k triangle H y = g (into h) and update x += M^-1 V_k y. A zero on the diagonal
// (the new direction added nothing) drops that column and the ones after it.
static msp_status update_solution(gmres_state *s, int k) {
  msp_status st = MSP_SUCCESS;
  const int ld = s->m + 1;
  for (int i = 0; i < k; i++)
    if (s->H[i + (size_t)i * ld] == 0.0) {
      k = i;
      break;
    }
  if (k == 0) return MSP_SUCCESS;
  double *y = s->h;
  for (int i = k - 1; i >= 0; i--) {
    double t = s->g[i];
    for (int c = i + 1; c < k; c++)
      t -= s->H[i + (size_t)c * ld] * y[c];
    y[i] = t / s->H[i + (size_t)i * ld];
  }
  MSP_TRY(msp__gmres_add_correction(s, k, y));
exit:
  return st;
}

static msp_status check_options(const msp_solver_options *o, const msp_solver_report *rep) {
  MSP_CHECK_ARG(o->restart >= 1, "msp_gmres: restart %d must be at least 1", o->restart);
  MSP_CHECK_ARG(o->rtol >= 0.0 && isfinite(o->rtol), "msp_gmres: rtol %g must be finite, >= 0",
                o->rtol);
  MSP_CHECK_ARG(o->atol >= 0.0 && isfinite(o->atol), "msp_gmres: atol %g must be finite, >= 0",
                o->atol);
  MSP_CHECK_ARG(o->max_iters >= 0, "msp_gmres: max_iters %lld is negative",
                (long long)o->max_iters);
  MSP_CHECK_ARG(o->basis_auto ||
                    ((int)o->basis_precision >= 0 && (int)o->basis_precision < MSP_PRECISION_COUNT),
                "msp_gmres: unknown basis precision %d", (int)o->basis_precision);
  MSP_CHECK_ARG(o->precond == MSP_PRECOND_NONE || o->precond == MSP_PRECOND_JACOBI ||
                    o->precond == MSP_PRECOND_ILU0,
                "msp_gmres: unknown preconditioner %d", (int)o->precond);
  MSP_CHECK_ARG(o->ortho == MSP_ORTHO_CGS || o->ortho == MSP_ORTHO_MGS ||
                    o->ortho == MSP_ORTHO_DCGS2,
                "msp_gmres: unknown orthogonalisation %d", (int)o->ortho);
  MSP_CHECK_ARG(!rep || rep->history_capacity >= 0, "msp_gmres: history_capacity %lld < 0",
                rep ? (long long)rep->history_capacity : 0LL);
  MSP_CHECK_ARG(!rep || rep->history || rep->history_capacity == 0,
                "msp_gmres: history is NULL with history_capacity %lld",
                rep ? (long long)rep->history_capacity : 0LL);
  return MSP_SUCCESS;
}

void msp__gmres_history_add(msp_solver_report *R, double value) {
  if (R->history_length < R->history_capacity) R->history[R->history_length++] = value;
}

// The caller's monitor, if any: non-zero when it asks to stop.
int msp__gmres_monitor(const gmres_state *s, int64_t iter, double res, double bnorm,
                       msp_precision prec) {
  return s->o.monitor && s->o.monitor(s->o.monitor_data, iter, res, res / bnorm, prec) != 0;
}

msp_status msp__gmres_nonfinite(int64_t iter) {
  return msp__error(MSP_ERR_NONFINITE,
                    "msp_gmres: the iteration produced NaN or Inf at inner iteration %lld",
                    (long long)iter);
}

static msp_status gmres_run(msp_context ctx, const msp_matrix A, msp_vector b, msp_vector x,
                            const msp_solver_options *opts, msp_solver_report *rep) {
  msp_status st = MSP_SUCCESS;
  const double t_start = omp_get_wtime();
  gmres_state S;
  msp_solver_report R;
  memset(&S, 0, sizeof S);
  memset(&R, 0, sizeof R);
  {
    const msp_vector vs[2] = {b, x};
    const char *const names[2] = {"b", "x"};
    MSP_TRY(msp__check_operands("msp_gmres", ctx, A, "A", 2, vs, names));
  }
  MSP_CHECK_ARG(A->rows == A->cols, "msp_gmres: A is %lld x %lld, not square", (long long)A->rows,
                (long long)A->cols);
  MSP_CHECK_ARG(b != x, "msp_gmres: b and x must be different vectors");
  if (b->n != A->rows || x->n != A->rows)
    return msp__error(MSP_ERR_DIMENSION_MISMATCH,
                      "msp_gmres: A has %lld rows but b has %lld entries and x %lld",
                      (long long)A->rows, (long long)b->n, (long long)x->n);
  S.o = opts ? *opts : msp_solver_options_default();
  MSP_TRY(check_options(&S.o, rep));
  // the default on a backend that has not got DCGS2's two passes: the re-orthogonalising CGS
  if (S.o.ortho == MSP_ORTHO_DCGS2 &&
      (!ctx->backend->basis_dcgs2_project || !ctx->backend->basis_dcgs2_update))
    S.o.ortho = MSP_ORTHO_CGS;
  MSP_TRY(check_slots(ctx, S.o.precond, S.o.ortho));
  if (rep) {
    R.history = rep->history;
    R.history_capacity = rep->history_capacity;
  }
  S.ctx = ctx;
  S.be = ctx->backend;
  S.A = A;
  S.b = b;
  S.x = x;
  S.n = A->rows;
  // The Krylov space of an n x n matrix has at most n dimensions.
  S.m = (int64_t)S.o.restart > S.n ? (int)(S.n > 0 ? S.n : 1) : S.o.restart;
  const int m = S.m;

  double bnorm = 0.0;
  MSP_TRY(msp_nrm2(ctx, b, &bnorm));
  if (!isfinite(bnorm)) {
    st = msp__error(MSP_ERR_NONFINITE, "msp_gmres: b holds NaN or Inf");
    goto exit;
  }
  if (bnorm == 0.0) {
    // The solution of A x = 0 that GMRES would approach from any guess it can reach is 0.
    MSP_TRY(msp_vector_fill(x, 0.0));
    R.converged = 1;
    msp__gmres_history_add(&R, 0.0);
    goto exit;
  }
  const double tol = fmax(S.o.rtol * bnorm, S.o.atol);

  msp_precision prec = S.o.basis_auto ? MSP_PRECISION_F32 : S.o.basis_precision;
  // The setup allocates on each rank of a distributed context with no collective step between:
  // the ranks agree on its status before the first product, which a failed rank would not join.
#define SETUP_TRY(call)                                                                            \
  do {                                                                                             \
    if (st == MSP_SUCCESS) st = (call);                                                            \
  } while (0)
  SETUP_TRY(msp_vector_create(ctx, S.n, &S.r));
  SETUP_TRY(msp_vector_create(ctx, S.n, &S.v));
  SETUP_TRY(msp_vector_create(ctx, S.n, &S.w));
  SETUP_TRY(msp_vector_create(ctx, S.n, &S.z));
  if (S.o.precond != MSP_PRECOND_NONE) SETUP_TRY(msp_vector_create(ctx, S.n, &S.t));
  SETUP_TRY(MSP_ALLOC_ZERO(S.H, (size_t)(m + 1) * (size_t)m, "GMRES Hessenberg matrix"));
  SETUP_TRY(MSP_ALLOC_ZERO(S.cs, m, "GMRES rotations"));
  SETUP_TRY(MSP_ALLOC_ZERO(S.sn, m, "GMRES rotations"));
  SETUP_TRY(MSP_ALLOC_ZERO(S.g, m + 1, "GMRES right-hand side"));
  SETUP_TRY(MSP_ALLOC_ZERO(S.h, m + 1, "GMRES projections"));
  SETUP_TRY(MSP_ALLOC_ZERO(S.u, m + 1, "GMRES projections"));
  if (S.o.ortho == MSP_ORTHO_DCGS2 &&
      (S.o.basis_auto || msp__gmres_basis_unit(S.o.basis_precision) > 0.0)) {
    SETUP_TRY(MSP_ALLOC_ZERO(S.y, m + 1, "GMRES coefficients"));
    SETUP_TRY(MSP_ALLOC_ZERO(S.hn, m + 1, "GMRES column norms"));
    SETUP_TRY(MSP_ALLOC_ZERO(S.Bc, (size_t)(m + 1) * (size_t)m, "GMRES coupling"));
    SETUP_TRY(MSP_ALLOC_ZERO(S.aux, 8 * ((size_t)m + 2), "GMRES projections"));
  }
  if (S.o.ortho == MSP_ORTHO_DCGS2) {
    SETUP_TRY(MSP_ALLOC_ZERO(S.Hu, (size_t)(m + 1) * (size_t)m, "GMRES Hessenberg matrix"));
    SETUP_TRY(MSP_ALLOC_ZERO(S.rr, 2 * (size_t)m + 2, "GMRES projections"));
    SETUP_TRY(MSP_ALLOC_ZERO(S.c, m + 1, "GMRES projections"));
  }
  SETUP_TRY(msp__precond_setup(A, S.o.precond, &S.P));
  int from_guess = 0; // basis auto: 1 once the f64 cycles started over from the initial guess
  if (S.o.basis_auto) {
    SETUP_TRY(msp_vector_create(ctx, S.n, &S.x0));
    SETUP_TRY(msp_copy(ctx, x, S.x0));
  }
  SETUP_TRY(basis_make(&S, prec));
#undef SETUP_TRY
  if (S.be->agree) st = S.be->agree(ctx, st);
  if (st != MSP_SUCCESS) goto exit;
  R.setup_s = omp_get_wtime() - t_start;

  double beta = 0.0;
  MSP_TRY(residual(&S, &beta));
  if (!isfinite(beta)) {
    st = msp__error(MSP_ERR_NONFINITE, "msp_gmres: the initial residual holds NaN or Inf");
    goto exit;
  }
  msp__gmres_history_add(&R, beta / bnorm);
  if (msp__gmres_monitor(&S, 0, beta, bnorm, prec)) R.stopped = 1;
  int64_t cycles = 0;
  for (;;) {
    if (beta <= tol) {
      R.converged = 1;
      break;
    }
    if (R.stopped || R.iterations >= S.o.max_iters) break;
    if (cycles > 0) R.restarts++;
    if (cycles < MSP_SOLVER_MAX_CYCLES) R.cycle_precision[R.cycles_recorded++] = prec;
    cycles++;
    int k = 0; // columns of H built in this cycle
    if (S.o.ortho == MSP_ORTHO_DCGS2) {
      // v_0 = r scaled by the power of two 2^-e next to 1 / beta (exact), stored and rounded
      // like every basis vector; DCGS2's first step normalises it with its own reduction, so r's
      // norm from msp_nrm2 (whose last bits differ between backends) does not enter the basis.
      int e = 0;
      (void)frexp(beta, &e);
      MSP_TRY(msp_axpby(ctx, ldexp(1.0, -e), S.r, 0.0, S.v));
      MSP_TRY(msp__gmres_basis_store(&S, 0, S.v));
      S.floor_stop = 0;
      MSP_TRY(msp__gmres_cycle_dcgs2(&S, &R, ldexp(1.0, e), bnorm, tol, prec, &k));
      goto update;
    }
    // v_0 = r / beta, stored and rounded like every basis vector.
    MSP_TRY(msp_axpby(ctx, 1.0 / beta, S.r, 0.0, S.v));
    MSP_TRY(msp__gmres_basis_store(&S, 0, S.v));
    for (int i = 0; i <= m; i++)
      S.g[i] = 0.0;
    S.g[0] = beta;
    for (int j = 0; j < m && R.iterations < S.o.max_iters; j++) {
      MSP_TRY(msp__gmres_apply_operator(&S));
      double hnext = 0.0;
      MSP_TRY(orthogonalize(&S, j, &hnext));
      const double res = msp__gmres_rotate(&S, j, hnext);
      S.last_res = res;
      R.iterations++;
      R.iterations_by_precision[prec]++;
      k = j + 1;
      if (!isfinite(hnext) || !isfinite(res)) {
        st = msp__gmres_nonfinite(R.iterations);
        goto exit;
      }
      msp__gmres_history_add(&R, res / bnorm);
      if (msp__gmres_monitor(&S, R.iterations, res, bnorm, prec)) R.stopped = 1;
      // Converged by the recurrence, or w = 0: A M^-1 V_k lies in the span of V_k (exact
      // solution in this space); or the monitor asked to stop.
      if (res <= tol || hnext == 0.0 || R.stopped) break;
      if (j + 1 < m && R.iterations < S.o.max_iters) {
        MSP_TRY(msp_axpby(ctx, 1.0 / hnext, S.w, 0.0, S.v));
        MSP_TRY(msp__gmres_basis_store(&S, j + 1, S.v));
      }
    }
  update:
    MSP_TRY(update_solution(&S, k));
    // The explicit residual decides: rounding (and a compressed basis) can make the recurrence
    // claim more than the iterate achieves, and then the iteration goes on.
    const double before = beta;
    MSP_TRY(residual(&S, &beta));
    if (!isfinite(beta)) {
      st = msp__gmres_nonfinite(R.iterations);
      goto exit;
    }
    if (S.floor_stop && beta > tol && !R.stopped && k + 2 < m) {
      MSP_TRY(msp__gmres_cycle_gcro(&S, &R, k, bnorm, tol, prec));
      MSP_TRY(residual(&S, &beta));
      if (!isfinite(beta)) {
        st = msp__gmres_nonfinite(R.iterations);
        goto exit;
      }
    }
    // (or a reduced basis left the explicit residual GAP times above what its recurrence
    // reached: the basis's rounding, not the Krylov space, limits the cycles from here)
    if (S.o.basis_auto && !R.stopped && beta > tol &&
        (beta > STAGNATION * before || (prec != MSP_PRECISION_F64 && beta > GAP * S.last_res))) {
      if (prec != MSP_PRECISION_F64) {
        prec = MSP_PRECISION_F64;
        st = basis_make(&S, prec);
        if (S.be->agree) st = S.be->agree(ctx, st);
        if (st != MSP_SUCCESS) goto exit;
      } else if (!from_guess) {
        from_guess = 1;
        MSP_TRY(msp_copy(ctx, S.x0, x));
        MSP_TRY(residual(&S, &beta));
        if (!isfinite(beta)) {
          st = msp__gmres_nonfinite(R.iterations);
          goto exit;
        }
      }
    }
  }
  R.rel_residual = beta / bnorm;

exit:
  if (st == MSP_SUCCESS && rep) {
    R.time_s = omp_get_wtime() - t_start;
    R.basis_bytes = S.bytes;
    *rep = R;
  }
  if (S.be) S.be->basis_free(ctx, S.V);
  msp__precond_free(&S.P);
  msp_vector_destroy(&S.r);
  msp_vector_destroy(&S.v);
  msp_vector_destroy(&S.w);
  msp_vector_destroy(&S.z);
  msp_vector_destroy(&S.t);
  msp_vector_destroy(&S.x0);
  msp__free(S.H);
  msp__free(S.cs);
  msp__free(S.sn);
  msp__free(S.g);
  msp__free(S.h);
  msp__free(S.u);
  msp__free(S.Hu);
  msp__free(S.rr);
  msp__free(S.c);
  msp__free(S.y);
  msp__free(S.hn);
  msp__free(S.Bc);
  msp__free(S.aux);
  return st;
}

// The context's thread count (msp_context_set_threads) for the whole solve.
msp_status msp_gmres(msp_context ctx, const msp_matrix A, msp_vector b, msp_vector x,
                     const msp_solver_options *opts, msp_solver_report *rep) {
  const int threads_prev =
      msp__check_context(ctx, "msp_gmres", "ctx") == MSP_SUCCESS ? msp__threads_enter(ctx) : 0;
  const msp_status st = gmres_run(ctx, A, b, x, opts, rep);
  msp__threads_leave(threads_prev);
  return st;
}

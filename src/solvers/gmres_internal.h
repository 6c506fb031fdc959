// gmres_internal.h: the state of a GMRES solve and the steps that gmres.c (the restarted solve,
// CGS and MGS) and gmres_dcgs2.c (the DCGS2 cycle and its continuation past an f32 basis's floor)
// share. Internal to src/solvers.
#ifndef MSP_GMRES_INTERNAL_H
#define MSP_GMRES_INTERNAL_H

#include "precond.h"

// The solve's state: options, work vectors (f64, on ctx's backend), the Hessenberg matrix and
// rotations on the host, the basis.
typedef struct {
  msp_context ctx;
  const msp__backend *be;
  msp_matrix A;
  msp_vector b, x;
  msp_solver_options o;
  int m; // restart, at most n
  int64_t n;
  msp_vector r, v, w, z, t;
  msp_vector x0;   // basis auto: the initial guess (see STAGNATION)
  double *H;       // (m+1) x m, column-major: H[i + j (m+1)]
  double *cs, *sn; // rotations
  double *g;       // rotated right-hand side (m+1)
  double *h, *u;   // one column of projections and its correction (m+1)
  double *Hu;      // DCGS2: H before the rotations, (m+1) x m like H
  double *rr, *c;  // DCGS2: the fused projection (2 m + 2) and the coefficients (m + 1)
  msp__basis *V;
  msp__precond P;
  double bytes;    // basis bytes moved
  double last_res; // the recurrence's residual norm at the last iteration of the cycle
  double *y;       // f32 basis: the cycle's coefficients (m + 1)
  double *hn;      // f32 basis: ||H e_j||^2 of the cycle's columns (m + 1)
  double *Bc;      // f32 basis: cycle_gcro's coupling C^T A V_new, (m + 1) x m
  double *aux;     // f32 basis: cycle_gcro's vectors, 8 (m + 2)
  double res0;     // the residual norm at the start of the cycle
  int floor_stop;  // f32 basis: the cycle stopped where its rounding limits the residual
} gmres_state;

// ---- gmres.c: the basis through the backend, the product, the solution, reporting
double msp__gmres_col_bytes(const gmres_state *s, int cols);
msp_status msp__gmres_basis_store(gmres_state *s, int j, msp_vector w);
msp_status msp__gmres_basis_subtract(gmres_state *s, int j0, int j1, const double *h, msp_vector w,
                                     double *u, double *ww);
double msp__gmres_rotate(gmres_state *s, int j, double hnext);
msp_status msp__gmres_apply_operator(gmres_state *s);
msp_status msp__gmres_add_correction(gmres_state *s, int k, const double *y);
void msp__gmres_history_add(msp_solver_report *R, double value);
int msp__gmres_monitor(const gmres_state *s, int64_t iter, double res, double bnorm,
                       msp_precision prec);
msp_status msp__gmres_nonfinite(int64_t iter);

// ---- gmres_dcgs2.c: the DCGS2 cycle, the floor of an f32 basis and the GCRO continuation
double msp__gmres_basis_unit(msp_precision p);
msp_status msp__gmres_cycle_dcgs2(gmres_state *s, msp_solver_report *R, double beta, double bnorm,
                                  double tol, msp_precision prec, int *kout);
msp_status msp__gmres_cycle_gcro(gmres_state *s, msp_solver_report *R, int k, double bnorm,
                                 double tol, msp_precision prec);

#endif

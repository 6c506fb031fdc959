// internal.h: object layouts, the backend dispatch table and helpers shared inside src/.
#ifndef MSP_INTERNAL_H
#define MSP_INTERNAL_H

#include "mixsparse.h"
#include "precision.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---- errors ---------------------------------------------------------------------------------
// Record a message for msp_last_error() and return the status (printf-style).
msp_status msp__error(msp_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void msp__clear_error(void);

// Jump to `exit` (the one exit label of the function) when a call fails; `st` holds the status.
#define MSP_TRY(call)                                                                              \
  do {                                                                                             \
    st = (call);                                                                                   \
    if (st != MSP_SUCCESS) goto exit;                                                              \
  } while (0)

// MSP_TRY with the context's thread count (msp_context_set_threads) in force during the call.
#define MSP_TRY_THREADS(ctx, call)                                                                 \
  do {                                                                                             \
    const int threads_prev_ = msp__threads_enter(ctx);                                             \
    st = (call);                                                                                   \
    msp__threads_leave(threads_prev_);                                                             \
    if (st != MSP_SUCCESS) goto exit;                                                              \
  } while (0)

// The same with the default team capped by the operation's size (msp__threads_enter_work).
#define MSP_TRY_THREADS_WORK(ctx, work, call)                                                      \
  do {                                                                                             \
    const int threads_prev_ = msp__threads_enter_work(ctx, work);                                  \
    st = (call);                                                                                   \
    msp__threads_leave(threads_prev_);                                                             \
    if (st != MSP_SUCCESS) goto exit;                                                              \
  } while (0)

// Return an argument error (with the function name) when cond is false.
#define MSP_CHECK_ARG(cond, ...)                                                                   \
  do {                                                                                             \
    if (!(cond)) return msp__error(MSP_ERR_INVALID_ARGUMENT, __VA_ARGS__);                         \
  } while (0)

// ---- host memory (through the installed allocator) -----------------------------------------
void *msp__malloc(size_t bytes);              // NULL on failure (also for bytes == 0: never)
void *msp__calloc(size_t count, size_t size); // zeroed; overflow-checked
void *msp__realloc(void *p, size_t bytes);
void msp__free(void *p);
// Allocate count*size bytes or return MSP_ERR_OUT_OF_MEMORY with a message naming `what`.
msp_status msp__alloc(void **out, size_t count, size_t size, const char *what);
msp_status msp__alloc_zero(void **out, size_t count, size_t size, const char *what);
#define MSP_ALLOC(ptr, count, what)                                                                \
  msp__alloc((void **)&(ptr), (size_t)(count), sizeof(*(ptr)), what)
#define MSP_ALLOC_ZERO(ptr, count, what)                                                           \
  msp__alloc_zero((void **)&(ptr), (size_t)(count), sizeof(*(ptr)), what)
#define MSP_FREE(ptr)                                                                              \
  do {                                                                                             \
    msp__free(ptr);                                                                                \
    (ptr) = NULL;                                                                                  \
  } while (0)

// ---- host-side format data ------------------------------------------------------------------
// All host arrays are owned by the matrix and freed by msp__format_free. Value arrays hold
// fp64 here; storage precisions other than f64 are encoded by the backend at upload time.

// COO: triples sorted by row, then column.
typedef struct {
  int32_t *row, *col;
  double *val;
} msp__coo;

// The column length (stride) of the column-major formats, ELL and DIA: `rows` rounded up to a
// multiple of MSP__STRIDE_ALIGN (256) values from MSP__STRIDE_MIN_ROWS rows on (at most 25% more
// memory; the padded rows are never read by a product). A stride that is a multiple of 256 makes
// the encodings of the value array line up with the columns: a fixed-point scale block (256
// values) and a CPMS-i group (32 or 64 values) never straddle two slots, so the GPU kernels walk
// the scales and the segments with one pointer step per slot (src/cuda/formats.cuh,
// msp__cursor). Smaller matrices keep stride = rows.
#define MSP__STRIDE_ALIGN 256
#define MSP__STRIDE_MIN_ROWS 1024
static inline int64_t msp__col_stride(int64_t rows) {
  return rows < MSP__STRIDE_MIN_ROWS
             ? rows
             : (rows + MSP__STRIDE_ALIGN - 1) / MSP__STRIDE_ALIGN * MSP__STRIDE_ALIGN;
}

// ELL: `width` slots per row, column-major (slot k of row i at k * stride + i, stride =
// msp__col_stride(rows)) so consecutive threads read consecutive memory. Padding: value 0,
// column = the row's last valid column (or 0 for an empty row), as PSBLAS does, so padded reads
// of x stay in cache; rows past `rows` (up to stride) hold value 0 and column 0.
typedef struct {
  int64_t width;
  int64_t stride; // msp__col_stride(rows)
  int32_t *col;
  double *val;
  // Host only (never uploaded, not in the footprint): real entries of each row (rows values),
  // so the round trip to CSR keeps explicit zeros exactly (a padded slot cannot be told from a
  // stored zero at column 0 of an otherwise empty row).
  int32_t *rowlen;
} msp__ell;

// HLL: ELL per hack of `hack` rows (a multiple of 32). Hack h holds width_h = (off[h+1] -
// off[h]) / hack slots per row, column-major inside the hack: slot k of row r at off[h] + k *
// hack + r. The last hack is padded to `hack` rows (padded rows have width_h zeros).
typedef struct {
  int hack;
  int64_t nhacks;
  int64_t *off; // nhacks + 1
  int32_t *col;
  double *val;
  int32_t *rowlen; // host only, as in msp__ell: real entries of each row (rows values)
} msp__hll;

// DIA: ndiag occupied diagonals, offsets[d] = j - i ascending; val[d * stride + i] = A(i, i +
// offsets[d]) or 0 where outside the matrix, not stored, or i >= rows (stride =
// msp__col_stride(rows)).
typedef struct {
  int64_t ndiag;
  int64_t stride; // msp__col_stride(rows)
  int64_t *offsets;
  double *val;
} msp__dia;

// HDIA: DIA per hack of `hack` rows (multiple of 32, default 64). Hack h uses diagonals
// offsets[doff[h] .. doff[h+1]) and values at voff[h] + d * hack + r (r < hack, padded).
typedef struct {
  int hack;
  int64_t nhacks;
  int64_t *doff;    // nhacks + 1
  int64_t *offsets; // doff[nhacks]
  int64_t *voff;    // nhacks + 1
  double *val;
} msp__hdia;

// HYB: the first k entries of each row in ELL (width k), the rest in COO (sorted by row).
typedef struct {
  msp__ell ell;
  int64_t coo_nnz;
  msp__coo coo;
} msp__hyb;

// ---- objects ------------------------------------------------------------------------------------
typedef struct msp__backend msp__backend;
typedef struct msp__basis_s msp__basis; // a GMRES Krylov basis (defined below)

// PageRank's graph (src/solvers/pagerank.c): the structure of G^T (row i lists the sources of the
// edges into node i, in increasing order) and the out-degrees, built once on the host by the
// core; the backend's copy and workspace in `dev`.
typedef struct {
  int64_t n, nnz;
  int64_t *rowptr; // n + 1
  int32_t *colind; // nnz
  int32_t *outdeg; // n: edges leaving node i (0: dangling, also a zero total weight)
  void *dev;       // backend-owned (pr_upload / pr_free)
} msp__prgraph;

// The operands of one power iteration (msp__backend.pr_step).
typedef struct {
  double alpha;  // damping
  double c;      // coefficient of v: alpha * (dangling mass of p) + 1 - alpha
  double vconst; // v_i when v is NULL (1 / n)
  msp_vector y;  // values form: y = alpha G^T D^-1 p from an SpMV (f64); NULL: the pull form
  msp_vector q;  // pull form: q = p ./ outdeg, read with its segments
  msp_vector p;  // p_{k-1}, read with its segments
  msp_vector pn; // p_k, written with every segment
  msp_vector qn; // pull form: p_k ./ outdeg, written; NULL in the values form
  msp_vector v;  // the personalisation (f64, sum 1) or NULL
} msp__pr_step;

// Handle magic numbers (GraphBLAS GB_MAGIC / GB_FREED): set at create, replaced by
// MSP__MAGIC_FREED at destroy. The field sits after the first 32 bytes of each object, which a
// C library's allocator overwrites with its free-list links, so a destroyed handle still reads
// as destroyed until its memory is reused (best effort: a reused block reads as "not a mixsparse
// object").
#define MSP__MAGIC_CONTEXT 0x6d737063u // "mspc"
#define MSP__MAGIC_MATRIX 0x6d73706du  // "mspm"
#define MSP__MAGIC_VECTOR 0x6d737076u  // "mspv"
#define MSP__MAGIC_FREED 0x66726565u   // "free"

// The live-object count of a context is updated by threads that share it (C11 atomics, in
// context.c); CUDA's C++ sees the same layout through a plain integer and never touches it.
#ifdef __cplusplus
#define MSP__ATOMIC_I64 int64_t
#else
#define MSP__ATOMIC_I64 _Atomic int64_t
#endif

struct msp_context_s {
  void *guard_[4]; // room for the allocator's free-list links (see MSP__MAGIC_CONTEXT)
  uint32_t magic;
  MSP__ATOMIC_I64 live; // matrices and vectors made with this context and not yet destroyed
  msp_backend kind;
  const msp__backend *backend;
  int device;
  void *impl;  // backend-owned (CUDA: stream, handles)
  int threads; // OpenMP threads of its operations (msp_context_set_threads); 0: the default
};

struct msp_matrix_s {
  void *guard_[4];
  uint32_t magic; // MSP__MAGIC_MATRIX
  msp_context ctx;
  int64_t rows, cols, nnz;
  msp_format format;
  msp_kernel kernel;
  msp_precision precision;
  msp_matrix_stats stats;
  char reason[1024]; // why format / kernel were chosen (AUTO with digits lists every candidate)
  // host CSR, always present (rowptr has rows + 1 entries even when rows == 0)
  int64_t *rowptr;
  int32_t *colind;
  double *val;
  void *fmt;                // host data of a non-CSR format (msp__coo, msp__ell, ...), NULL for CSR
  void *dev;                // backend-owned device data (NULL on CPU)
  msp_convert_options opts; // the options the matrix was converted with
  // The format's value array encoded in `precision` (NULL for f64), made by
  // msp__matrix_encode_values; the kernels read it through the accessors
  // of src/common/precision.h. Owned; freed by msp__matrix_prec_free.
  struct msp__prec_array_s *pval;
  // Stored values that were outside the precision's range at conversion (msp_range_policy):
  // finite values that overflow it, nonzeros that it would store as zero. Set by
  // msp__matrix_encode_values; reported by msp_matrix_range_info.
  int64_t range_saturated, range_flushed;
};

// Where a vector's current data lives (PSBLAS dual memorisation).
enum { MSP__SYNC_BOTH = 0, MSP__SYNC_HOST = 1, MSP__SYNC_DEVICE = 2 };

// A vector holds its values only in its storage precision, on the host and (CUDA) on the
// device: no fp64 work copy, so an operation on an f32 vector moves half the bytes of an f64 one
// (STYLE.md 5). Kernels read and write the encoded data through msp__vector_acc.
struct msp_vector_s {
  void *guard_[4];
  uint32_t magic; // MSP__MAGIC_VECTOR
  msp_context ctx;
  int64_t n;
  msp_precision prec;
  int segments;     // CPMS: segments read by operations and msp_vector_get (0: all)
  int bank_shift;   // CPMS-i bank shift (128-byte banks); MSP_CPMS_SEPARATE for the others
  int64_t nscales;  // fixed point: ceil(n / MSP_VEC_FX_BLOCK), at least 1; 0 otherwise
  void *h_data;     // encoded values on the host: n * msp__prec_bytes(prec) bytes (at least 1)
  double *h_scales; // fixed point: nscales scales, value i is q_i * h_scales[i >> MSP_VEC_FX_SHIFT]
  void *d_data;     // CUDA: the same bytes on the device
  double *d_scales; // CUDA: the same scales on the device
  unsigned long long *d_range; // CUDA: two counters, results that overflowed the precision
                               // (saturated) and nonzero results stored as 0 (flushed), since
                               // the last read on the host
  int64_t range_count;         // overflowed (saturated) results not yet reported by msp_vector_get
  int64_t range_flushed;       // nonzero results stored as 0, not yet reported by msp_vector_get
  int64_t reported_saturated, reported_flushed; // what the last msp_vector_get reported
  int sync; // MSP__SYNC_*: which copy is current (BOTH: both are)
  int64_t transfers;
};

// The accessor view (src/common/precision.h) of v's host (device = 0) or device (1) values: CPMS
// reads v->segments, fixed point one scale per MSP_VEC_FX_BLOCK values.
static inline msp_acc msp__vector_acc(const msp_vector v, int device) {
  msp_acc a;
  const int all = v->prec == MSP_PRECISION_CPMS2 ? 2 : v->prec == MSP_PRECISION_CPMS4 ? 4 : 1;
  memset(&a, 0, sizeof a);
  a.data = device ? v->d_data : v->h_data;
  a.n = v->n;
  a.prec = v->prec;
  a.scale_shift = MSP_VEC_FX_SHIFT;
  a.scales = device ? v->d_scales : v->h_scales;
  a.bank_shift = v->bank_shift;
  a.read_segments = v->segments > 0 && v->segments < all ? v->segments : all;
  return a;
}
// The same view for writing: CPMS stores every segment.
static inline msp_acc msp__vector_store_acc(const msp_vector v, int device) {
  msp_acc a = msp__vector_acc(v, device);
  a.read_segments = a.prec == MSP_PRECISION_CPMS2 ? 2 : a.prec == MSP_PRECISION_CPMS4 ? 4 : 1;
  return a;
}
// The CPU kernels add up what their stores could not hold (msp_acc_store_sat_p) in one count
// per call: 1 per overflow, MSP__RANGE_FLUSH_UNIT per flushed nonzero. A call stores each entry of
// y once, and y has fewer than 2^31 entries in a product, so the halves never mix there;
// msp__vector_count_range splits the count into v's two counters.
#define MSP__RANGE_FLUSH_UNIT ((int64_t)1 << 32)
static inline int64_t msp__range_unit(int store_outcome) {
  return store_outcome == MSP_STORE_OVERFLOW  ? 1
         : store_outcome == MSP_STORE_FLUSHED ? MSP__RANGE_FLUSH_UNIT
                                              : 0;
}
static inline void msp__vector_count_range(msp_vector v, int64_t count) {
  v->range_count += count & (MSP__RANGE_FLUSH_UNIT - 1);
  v->range_flushed += count >> 32;
}
// ---- backend dispatch table -------------------------------------------------------------------
// Arguments are validated in src/core before these are called; backends may assume valid input.
typedef msp_status (*msp__spmv_fn)(msp_context ctx, double alpha, const msp_matrix A, msp_vector x,
                                   double beta, msp_vector y);

struct msp__backend {
  const char *name;
  msp_backend kind;
  // context
  msp_status (*context_init)(msp_context ctx);
  void (*context_fini)(msp_context ctx);
  msp_status (*synchronize)(msp_context ctx);
  // matrices: make backend data from the host data (A->fmt / CSR arrays); free it
  msp_status (*matrix_upload)(msp_context ctx, msp_matrix A);
  void (*matrix_free)(msp_matrix A);
  // BDMP-PBP and BDMP-TCKI built on the device (NULL: built on the host, then uploaded): B is A's
  // copy with its format (B->format), options and kernel set and no format data; fills B->fmt
  // (the host record, read back) and B->dev from A (A's device CSR when A is an fp64 CSR matrix
  // of ctx, else its host CSR).
  msp_status (*bdmp_convert)(msp_context ctx, const msp_matrix A, msp_matrix B);
  // vectors: allocate / free the device copy; copy host->device / device->host
  msp_status (*vector_alloc)(msp_vector v);
  void (*vector_free)(msp_vector v);
  msp_status (*vector_to_device)(msp_vector v);
  msp_status (*vector_to_host)(msp_vector v);
  // Copy n values in v's storage precision from device memory d_src into v->d_data, device to
  // device on the context's stream, and wait for it; clears the device overflow counter. NULL
  // on backends without device data.
  msp_status (*vector_copy_device_in)(msp_vector v, const void *d_src);
  // operations (vectors are made current on the backend's side by the core before calling).
  // One slot per format, for every storage precision of the matrix and of x and y: each
  // kernel is one template over its loaders (STYLE.md 5). Results that overflow y's precision
  // are saturated, nonzero results it stores as 0 are flushed, both counted on y (CPU:
  // msp__vector_count_range; CUDA: y->d_range[0] and [1]).
  msp__spmv_fn spmv[MSP_FORMAT_COUNT];
  msp_status (*dot)(msp_context ctx, msp_vector x, msp_vector y, double *r);
  msp_status (*nrm2)(msp_context ctx, msp_vector x, double *r);
  msp_status (*nrm1)(msp_context ctx, msp_vector x, double *r);
  msp_status (*axpby)(msp_context ctx, double a, msp_vector x, double b, msp_vector y);
  msp_status (*scale)(msp_context ctx, double a, msp_vector x);
  msp_status (*copy)(msp_context ctx, msp_vector x, msp_vector y);
  msp_status (*fill)(msp_context ctx, msp_vector x, double value);
  // Krylov basis of GMRES (struct msp__basis below). The vectors w and z are f64 vectors whose
  // data the core has made current on the backend's side; h and y are host arrays. Reductions
  // are deterministic (fixed partition and order, independent of the thread count).
  // Allocate V: `cols` columns of n values in prec (the workspace of the reductions included,
  // so that the other operations never allocate). MSP_ERR_OUT_OF_MEMORY.
  msp_status (*basis_alloc)(msp_context ctx, int64_t n, int cols, msp_precision prec,
                            msp__basis **V);
  void (*basis_free)(msp_context ctx, msp__basis *V); // NULL accepted
  // Column j = w rounded by V's store (fixed point: the column's scale from max |w|); w is
  // overwritten with the values as stored (what later reads of column j return).
  msp_status (*basis_store)(msp_context ctx, msp__basis *V, int j, msp_vector w);
  // h[k - j0] = V_k . w for k in j0 .. j1-1, in one pass over the columns and w; ww (NULL: not
  // asked) gets w . w from the same pass.
  msp_status (*basis_project)(msp_context ctx, const msp__basis *V, int j0, int j1, msp_vector w,
                              double *h, double *ww);
  // w -= sum over k in j0 .. j1-1 of h[k - j0] V_k, in one pass. u (NULL: not asked) gets the
  // projection of the new w, u[k - j0] = V_k . w, and ww (NULL: not asked) its w . w, from the
  // same pass over the rows (the projection as basis_project's, the same kind of reduction);
  // asking for u pays when j1 - j0 <= V->fuse_cols.
  msp_status (*basis_subtract)(msp_context ctx, const msp__basis *V, int j0, int j1,
                               const double *h, msp_vector w, double *u, double *ww);
  // z = sum over k < k1 of y[k] V_k, in one pass.
  msp_status (*basis_combine)(msp_context ctx, const msp__basis *V, int k1, const double *y,
                              msp_vector z);
  // DCGS2 (msp_gmres's default orthogonalisation): iteration j's two passes over columns 0 .. j,
  // each one read of them, the first the iteration's only reduction.
  // basis_dcgs2_project: r[k] = V_k . V_j for k <= j and, when w is not NULL, r[j + 1 + k] =
  // V_k . w for k <= j: 2 j + 2 values (j + 1 without w), reduced as basis_project's are (a
  // distributed layer adds all of them over the ranks at once).
  msp_status (*basis_dcgs2_project)(msp_context ctx, const msp__basis *V, int j, msp_vector w,
                                    double *r);
  // basis_dcgs2_update, one pass over the rows without a reduction: column j = (V_j - sum over
  // k < j of s[k] V_k) / rjj, stored (fixed point: with the scale (scale_j + sum |s_k| scale_k) /
  // rjj, which bounds the new values); then w = (w - sum over k < j of c[k] V_k - c[j] V_j) / rjj
  // with column j as newly stored; with store (j + 1 < cols, never fixed point), column j + 1 = w
  // rounded by the store and w = the values as stored.
  msp_status (*basis_dcgs2_update)(msp_context ctx, msp__basis *V, int j, const double *s,
                                   double rjj, const double *c, msp_vector w, int store);
  // z_i = d_i * x_i for f64 vectors d, x, z of one length (made current on the backend's side
  // by the caller; x and z distinct): Jacobi's application with d = the inverse diagonal.
  msp_status (*pmul)(msp_context ctx, msp_vector d, msp_vector x, msp_vector z);
  // Optional (NULL: src/solvers/precond.c solves on the host): ILU(0)'s triangular solves on the
  // backend. ilu_upload copies the factors of n rows (A's rowptr and colind, lu in place of its
  // values, diag[i] the position of a_ii) into *dev; ilu_apply sets z = U^-1 L^-1 v for f64
  // vectors v, z (distinct, current on the backend's side) with the host's bits.
  msp_status (*ilu_upload)(msp_context ctx, int64_t n, const int64_t *rowptr, const int32_t *colind,
                           const double *lu, const int64_t *diag, void **dev);
  msp_status (*ilu_apply)(msp_context ctx, void *dev, msp_vector v, msp_vector z);
  void (*ilu_free)(msp_context ctx, void *dev); // NULL accepted
  // PageRank (src/solvers/pagerank.c; struct msp__prgraph below). Make the backend's copy of the
  // graph's arrays and the reductions' workspace in g->dev (CPU: the workspace only).
  msp_status (*pr_upload)(msp_context ctx, msp__prgraph *g);
  void (*pr_free)(msp_context ctx, msp__prgraph *g); // g->dev only; NULL accepted
  // Optional (NULL: the core builds G^T's structure on the host and calls pr_upload): the pull
  // form's graph made on the backend from G itself, g->n, g->nnz and g->outdeg (in the internal
  // numbering) set by the core, inv[i] the internal number of G's node i (NULL: the same);
  // G^T's structure stays in g->dev (g->rowptr and g->colind are not made).
  // A distributed backend (src/dist) sets g->outdeg and g->nnz itself: there G's handle holds a
  // rank's rows, and its host CSR only their own columns.
  msp_status (*pr_transpose)(msp_context ctx, const msp_matrix G, const int32_t *inv,
                             msp__prgraph *g);
  // One power iteration over the vectors of a (made current on the backend's side by the core),
  // for node i in order of G^T's rows:
  //   pn_i = (a->y ? y_i : alpha * sum over j in row i of G^T of q_j) + c v_i,
  //   qn_i = pn_i / outdeg_i (0 when dangling; only when a->qn),
  // q and p read with their segments, pn and qn written in full. sums[0] = ||pn - p||_1,
  // sums[1] = the mass of pn on dangling nodes, sums[2] = sum pn, each from the fp64 values in a
  // fixed order (the same bits for any thread count). Synchronises to hand back the sums.
  msp_status (*pr_step)(msp_context ctx, const msp__prgraph *g, const msp__pr_step *a,
                        double sums[3]);
  // Optional (NULL on one process; src/dist): a sequential fold of host values (PageRank's Kahan
  // sums and counts) continued across the ranks of a distributed context, in rank order. Phase
  // 0: state (n values) becomes what the previous rank left (kept on the first rank); the caller
  // folds its own values in; phase 1: the state goes to the next rank and every rank gets the
  // last rank's.
  msp_status (*host_fold)(msp_context ctx, double *state, int n, int phase);
  // Optional (NULL on one process; src/dist): every rank's status of a step that has no
  // collective operation of its own (a solver's allocations), combined so that every rank returns
  // the first rank's failure instead of going on to a collective step that the failed rank skips.
  msp_status (*agree)(msp_context ctx, msp_status st);
  // device queries
  msp_status (*device_count)(int *count);
  msp_status (*device_info)(int ordinal, msp_device_props *props);
};

// A Krylov basis: `cols` vectors of n values in `prec`, column j at value offset j * n (CUDA:
// j * ld, ld = n rounded up to a multiple of 256, src/cuda/basis.cuh), each
// column its own accessor view: fixed point with scales[j], CPMS-i with 128-byte banks. The
// memory (host or device) and the workspace belong to the backend that made it.
struct msp__basis_s {
  msp_precision prec;
  int64_t n;
  int cols;
  int bank_shift;  // CPMS
  void *data;      // cols columns of n values (CUDA: with padding), msp__prec_bytes(prec) each
  double *scales;  // fixed point: one per column; NULL otherwise
  double *work;    // reduction partials (backend-defined size)
  int64_t nchunks; // row chunks of a reduction (CPU: of MSP__RED_CHUNK; CUDA: projection blocks)
  double *host_h;  // CUDA: pinned host slot for the projections (cols values); NULL on the CPU
  int fuse_cols;   // basis_subtract with u pays (one pass instead of two) up to this many columns
  double stage_bytes; // CUDA: basis_subtract with u stages the columns in shared memory when
                      // they hold more bytes than this (the L2 size; tests set 0 to force it)
};

// The backend-independent fields of a new basis (prec, n, cols, the CPMS bank layout); the
// backends' basis_alloc call it first. MSP_ERR_INTERNAL when a CPMS layout has no bank shift.
msp_status msp__basis_header(msp__basis *V, int64_t n, int cols, msp_precision prec);

// The registry: CPU always; CUDA when built (NULL otherwise).
const msp__backend *msp__backend_cpu(void);
const msp__backend *msp__backend_cuda(void);
// For tests: 0 when the device records of CUDA matrices A and B hold the same arrays, byte for
// byte, and the same scalars; else 1 with the first difference in why; -1 without CUDA.
int msp__device_records_same(const msp_matrix A, const msp_matrix B, char *why, size_t n);

// CPU kernels, one file per format in src/cpu (also used as references by the core):
// msp__cpu_<ident>_spmv for every row of MSP_FORMAT_LIST. Each reads the matrix values and x in
// their storage precisions and writes y through its rounding store (src/cpu/dispatch.h).
#define MSP__CPU_SPMV_DECL_(name, tag, ident)                                                      \
  msp_status msp__cpu_##ident##_spmv(msp_context, double, const msp_matrix, msp_vector, double,    \
                                     msp_vector);
MSP_FORMAT_LIST(MSP__CPU_SPMV_DECL_)
#undef MSP__CPU_SPMV_DECL_

// ---- storage precision of matrix values (src/core/precision.c) --------------------------------
// Hook for msp_matrix_convert: when B->precision != f64, call after the format's host data is
// built and before the backend upload. Encodes the format's value array (CSR: B->val) in
// B->precision into B->pval: fixed point with one scale per MSP_FX_BLOCK_SHIFT-sized block of
// stored values, CPMS as CPMS-i with 128-byte banks. The host fp64 arrays stay as they are.
// MSP_ERR_NOT_SUPPORTED for formats without precision kernels, MSP_ERR_NONFINITE (fixed point
// with Inf/NaN), MSP_ERR_OUT_OF_MEMORY.
msp_status msp__matrix_encode_values(msp_matrix B);
void msp__matrix_prec_free(msp_matrix A);

// ---- BDMP (src/core/bdmp.c, src/cpu/bdmp.c) --------------------------------------------------
// The two formats' records: msp__fmt_bdmp_pbp in src/core/bdmp.c, msp__fmt_bdmp_tcki in
// src/core/bdmp_tcki.c.
// CSR back from A->fmt of a BDMP_PBP or BDMP_TCKI matrix (as msp__format_to_csr's to_csr).
msp_status msp__bdmp_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *val);

// ---- threads (src/core/threads.c) -------------------------------------------------------------
// Set the calling thread's OpenMP thread count to ctx's (when it has one) and return the count
// to put back with msp__threads_leave (0: nothing to put back).
int msp__threads_enter(const msp_context ctx);
// The same for an operation of `work` units (nonzeros of a product; 0: unknown): the default team
// is capped at one thread per MSP__THREAD_GRAIN units. A count the context set is kept as it is.
#define MSP__THREAD_GRAIN 32768
int msp__threads_enter_work(const msp_context ctx, int64_t work);
void msp__threads_leave(int prev);
// The default team: up to max threads, no more than the online CPUs that the machine's running
// tasks leave free (running counts the caller and `own` threads of its last team, which may
// still be spinning). At least 1.
int msp__threads_free(int max, int online, int running, int own);

// ---- handle checks (src/core/context.c) --------------------------------------------------------
// MSP_SUCCESS when h is a live object of its kind whose context is live; otherwise
// MSP_ERR_INVALID_ARGUMENT naming `fn` and `what` ("handle already destroyed", "not a mixsparse
// matrix"). NULL is an argument error too.
msp_status msp__check_context(const msp_context c, const char *fn, const char *what);
msp_status msp__check_matrix(const msp_matrix A, const char *fn, const char *what);
msp_status msp__check_vector(const msp_vector v, const char *fn, const char *what);
// The checks of an operation's arguments, handles first and then the context (never a field of
// an unchecked handle): ctx is a live context, and A (NULL: none) and each of the nv vectors
// v[k] (named names[k]) are live objects made with ctx. MSP_ERR_INVALID_ARGUMENT naming `fn`
// and the argument otherwise.
msp_status msp__check_operands(const char *fn, const msp_context ctx, const msp_matrix A,
                               const char *aname, int nv, const msp_vector *v,
                               const char *const *names);
// 1 when the handle is a live object of its kind (for accessors that return no status).
int msp__matrix_ok(const msp_matrix A);
// Return the status of a failed handle check (for functions without an exit label).
#define MSP_CHECK_HANDLE(check)                                                                    \
  do {                                                                                             \
    msp_status chk_ = (check);                                                                     \
    if (chk_ != MSP_SUCCESS) return chk_;                                                          \
  } while (0)
int msp__vector_ok(const msp_vector v);
// Count an object made with / destroyed from ctx (a context refuses destroy while any is live).
void msp__context_attach(msp_context ctx);
void msp__context_detach(msp_context ctx);

// ---- memory budget (src/core/context.c) --------------------------------------------------------
// Fail before allocating: MSP_ERR_OUT_OF_MEMORY naming `what`, the bytes needed and the bytes
// available when `need` exceeds what is left of the limit of msp_set_memory_limit (or of the
// physical memory when none is set) after the library's live host bytes. SIZE_MAX stands for a
// size that overflows size_t.
msp_status msp__memory_check(size_t need, const char *what);
// The limit in bytes (msp_set_memory_limit's, else the physical memory), and the library's host
// bytes live now (every block of msp__malloc counted; alloc.c). msp__malloc refuses a block that
// would take the live bytes past the limit; msp__memory_check's estimates count against the room
// that is left.
size_t msp__memory_limit_bytes(void);
size_t msp__memory_in_use(void);
// a * b + c in size_t, SIZE_MAX on overflow (for msp__memory_check's estimates).
size_t msp__bytes_mul_add(size_t a, size_t b, size_t c);

// ---- files (safe_write.c: writing and comparing paths; mtx_input.c: the zlib callbacks) -------
// A file being replaced (safe_write.c): the bytes go to a temporary file created exclusively
// next to the target (".NAME.tmp-HOST-PID-N"; stale ones of dead processes on this host are
// removed first), which msp__safe_commit flushes to the disk and renames over the target,
// symbolic links followed (the link stays). A device or pipe is written in place. On any failure
// the target is unchanged and the temporary file removed; messages name the path and the
// system's reason. The program (tools/) writes every file through these too.
typedef struct msp__safe_file_s msp__safe_file;
msp_status msp__safe_open(const char *path, msp__safe_file **out);
msp_status msp__safe_write(msp__safe_file *f, const void *data, size_t n);
// Finish: flush, fsync, rename; *f is freed and set to NULL, whatever the outcome.
msp_status msp__safe_commit(msp__safe_file **f);
// Give up: remove the temporary file; *f freed and set to NULL (NULL accepted).
void msp__safe_abort(msp__safe_file **f);
// *same = 1 when writing paths a and b would replace the same file: the same existing file, or
// the same name in the same directory once symbolic links are followed (for outputs that do not
// exist yet). MSP_ERR_IO when a path cannot be examined.
msp_status msp__same_target(const char *a, const char *b, int *same);
// *same = 1 when paths a and b name the same file (same device and inode, symbolic links
// followed), 0 when not or when either does not exist. MSP_ERR_IO when a path cannot be
// examined for another reason (permissions); MSP_ERR_INVALID_ARGUMENT for NULL arguments.
msp_status msp__same_file(const char *a, const char *b, int *same);
// zlib's allocation callbacks (zalloc / zfree of a z_stream), through the library allocator, so
// that the reader's inflate and the writer's deflate are counted and can fail like the rest.
void *msp__zalloc(void *opaque, unsigned items, unsigned size);
void msp__zfree(void *opaque, void *p);

// ---- core helpers -----------------------------------------------------------------------------
// Free A->fmt according to A->format (host data of every format).
void msp__format_free(msp_format format, void *fmt);
// Footprint in bytes of the host representation of a format (used by msp_matrix_bytes).
size_t msp__format_bytes(const msp_matrix A);
// Rebuild CSR from the format's host data alone (A->fmt; A's CSR arrays for CSR), padding
// dropped. The arrays are allocated with msp__malloc (free with msp__free): rows + 1, nnz, nnz.
// Exact for every format, explicit zeros included, except DIA and HDIA, whose padding is value
// 0: there stored zeros are dropped too (exact for matrices without stored zeros). Each
// format's own to_csr(A, rowptr, colind, val) (msp__bdmp_to_csr included) is called twice:
// first with colind == val == NULL to fill rowptr (rows + 1 entries), then with colind and val
// of rowptr[rows] entries to fill them.
msp_status msp__format_to_csr(const msp_matrix A, int64_t **rowptr, int32_t **colind, double **val);
// MSP_FORMAT_AUTO's rule (src/core/convert.c): the format for these statistics, with a one-line
// reason naming the statistic that decided. Reads the format statistics hll_fill, hdia_fill,
// hyb_k, hyb_fill and hyb_coo_share: fill them first with msp__analyze_formats.
msp_format msp__choose_format(const msp_matrix_stats *s, char *reason, size_t n);
// Fill the format statistics of s (hll_fill, hdia_fill, hyb_k, hyb_fill, hyb_coo_share) from
// A's CSR. O(nnz) plus a rows + cols bitmap; MSP_ERR_OUT_OF_MEMORY when that cannot be had.
msp_status msp__analyze_formats(const msp_matrix A, msp_matrix_stats *s);
// Fill A->stats from A's CSR arrays.
msp_status msp__analyze(msp_matrix A);
// Allocate an empty matrix shell with CSR arrays for rows/nnz (rowptr zeroed).
msp_status msp__matrix_alloc(msp_context ctx, int64_t rows, int64_t cols, int64_t nnz,
                             msp_matrix *out);
// Build a matrix from unsorted 0-based triples (row < rows, col < cols checked by the caller):
// sorts by (row, col), sums duplicates, builds the CSR, analyses it, uploads it to ctx's
// backend and chooses the CSR kernel. Takes ownership of nothing (the triples are not freed).
// Without MSP_READ_ALLOW_NONFINITE in flags, finite duplicates whose sum is not finite are
// MSP_ERR_NONFINITE, bad[0] and bad[1] the 0-based row and column of the sum (-1 otherwise), so
// that the caller can name its entries.
msp_status msp__matrix_from_triples(msp_context ctx, int64_t rows, int64_t cols, int64_t nnz,
                                    const int32_t *row, const int32_t *col, const double *val,
                                    unsigned flags, int64_t bad[2], msp_matrix *A);
// Read a Matrix Market coordinate matrix from memory (plain text, or gzip by content), with the
// same parser, statuses and messages as msp_matrix_read_mtx; `name` labels the messages. Used by
// the fuzz target (fuzz/fuzz_mtx.c).
msp_status msp__matrix_read_mtx_mem(msp_context ctx, const char *name, const void *data,
                                    size_t size, unsigned flags, msp_matrix *A);
// Finish a matrix whose CSR arrays are filled (sorted, no duplicates): analyse, choose the
// kernel, upload. On failure *A is destroyed.
msp_status msp__matrix_finish(msp_matrix *A);
// Make the vector's data current on the host / on ctx's device.
msp_status msp__vector_on_host(msp_vector v);
msp_status msp__vector_on_device(msp_vector v);
// Mark a vector as written on the host / on the device (the other copy becomes stale).
void msp__vector_host_written(msp_vector v);
void msp__vector_device_written(msp_vector v);
// The same on the side where v's context computes (the device for CUDA, the host for the CPU):
// make current before a backend operation reads v, mark written after one wrote it.
msp_status msp__vector_current(msp_vector v);
void msp__vector_written(msp_vector v);

// Deterministic fixed-order reductions: the vector is cut into MSP__RED_CHUNK-sized chunks
// summed in index order, then the chunk sums are added pairwise in a fixed tree. Results do
// not depend on the thread count.
#define MSP__RED_CHUNK 4096
// The CPU vector reductions (src/cpu/blas1.c, and src/dist/reduce.c, which must match them bit for
// bit) add the chunk sums pairwise in groups of MSP__RED_GROUP chunks, the groups in order.
#define MSP__RED_GROUP 1024

#ifdef __cplusplus
}
#endif
#endif

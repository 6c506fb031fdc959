// mixsparse.h: the public C11 API of mixsparse (sparse linear algebra on NVIDIA GPUs and CPUs).
#ifndef MIXSPARSE_H
#define MIXSPARSE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Every declaration below is exported from the shared library, which is built with
// -fvisibility=hidden so that only msp_* functions are visible.
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

#define MSP_VERSION_MAJOR 0
#define MSP_VERSION_MINOR 1
#define MSP_VERSION_PATCH 0

// ---------------------------------------------------------------------------------------------
// Status codes. One list generates the enum, msp_status_name() and msp_status_string().
// ---------------------------------------------------------------------------------------------
#define MSP_STATUS_MAP(X)                                                                          \
  X(SUCCESS, 0, "success")                                                                         \
  X(ERR_INVALID_ARGUMENT, 1, "invalid argument")                                                   \
  X(ERR_DIMENSION_MISMATCH, 2, "dimension mismatch")                                               \
  X(ERR_OUT_OF_MEMORY, 3, "out of memory")                                                         \
  X(ERR_NOT_SUPPORTED, 4, "operation not supported for this format or backend")                    \
  X(ERR_NOT_BUILT, 5, "backend not compiled into this build")                                      \
  X(ERR_NO_DEVICE, 6, "no usable GPU device")                                                      \
  X(ERR_DEVICE, 7, "GPU device error")                                                             \
  X(ERR_IO, 8, "file could not be opened, read or written")                                        \
  X(ERR_INVALID_MATRIX, 9, "invalid matrix data")                                                  \
  X(ERR_NONFINITE, 10, "NaN or Inf value where not allowed")                                       \
  X(ERR_FILL_LIMIT, 11, "format padding would exceed the fill limit")                              \
  X(ERR_MM_EMPTY, 12, "Matrix Market: empty file")                                                 \
  X(ERR_MM_BANNER, 13, "Matrix Market: missing or malformed banner")                               \
  X(ERR_MM_UNSUPPORTED, 14, "Matrix Market: unsupported object, format, field or symmetry")        \
  X(ERR_MM_SIZE, 15, "Matrix Market: missing, malformed or overflowing size line")                 \
  X(ERR_MM_TOO_FEW, 16, "Matrix Market: fewer entries than declared")                              \
  X(ERR_MM_TOO_MANY, 17, "Matrix Market: more entries than declared")                              \
  X(ERR_MM_INDEX, 18, "Matrix Market: index out of range")                                         \
  X(ERR_MM_VALUE, 19, "Matrix Market: non-numeric or truncated value")                             \
  X(ERR_MM_GZIP, 20, "Matrix Market: corrupt gzip stream")                                         \
  X(ERR_INTERNAL, 21, "internal error")                                                            \
  X(ERR_RANGE, 22, "value outside the range of the storage precision")

typedef enum {
#define MSP_STATUS_ENUM_(name, code, text) MSP_##name = code,
  MSP_STATUS_MAP(MSP_STATUS_ENUM_)
#undef MSP_STATUS_ENUM_
      MSP_STATUS_COUNT
} msp_status;

// The enum name without its prefix ("ERR_MM_INDEX"); "UNKNOWN" for a value outside the list.
const char *msp_status_name(msp_status s);
// A one-line human-readable description of the status.
const char *msp_status_string(msp_status s);
// The message of the last failing call on this thread: what was wrong and where
// ("a.mtx line 17: column index 0 outside 1..5"). Empty string when none. Never NULL.
const char *msp_last_error(void);

// ---------------------------------------------------------------------------------------------
// Memory: the library allocates all host memory through these (default: C malloc/realloc/free).
// Set before creating any object; objects must be freed with the allocator that made them.
// ---------------------------------------------------------------------------------------------
typedef struct {
  void *(*malloc_fn)(size_t size);
  void *(*realloc_fn)(void *ptr, size_t size);
  void (*free_fn)(void *ptr);
} msp_allocator;
// Install an allocator (NULL restores the C library's). Returns MSP_ERR_INVALID_ARGUMENT when a
// function pointer is NULL.
msp_status msp_set_allocator(const msp_allocator *alloc);
// Memory budget: the host memory the library holds never exceeds `bytes` (in). Reading,
// generating, converting a matrix and creating a vector first compute the host memory the whole
// operation needs (the object and the temporaries of its reader, analysis or conversion) and
// fail at once with MSP_ERR_OUT_OF_MEMORY, naming the bytes needed and the bytes available
// (the limit less what the library already holds), when it does not fit; every other allocation
// (an operation's work arrays: PageRank's graph, a product's partition) is checked where it is
// made and fails the same way. 0 (the default) means the machine's physical memory. One limit
// for the process, counted over every thread; always MSP_SUCCESS.
msp_status msp_set_memory_limit(size_t bytes);

// Threads. Separate contexts are independent: threads that each use their own context (and the
// objects made with it) may call any function at the same time, with the same bits as one
// thread. One context shared by several threads: creating and destroying matrices and vectors
// with it from several threads at once is safe (the count of its live objects is atomic), as are
// the read-only queries of handles (sizes, formats, msp_matrix_analyze, msp_matrix_bytes).
// Operations (products, BLAS-1, conversions, solvers, msp_vector_get/set) may run at the same
// time on one CPU context when no object is written by one thread while another uses it; on a
// CUDA context they share the context's stream and work buffers and must not overlap: serialise
// them (or give each thread its own context). msp_last_error() is per thread.
// msp_set_allocator and msp_set_memory_limit are process-wide: set them before any thread
// creates objects.
//
// Handles (contexts, matrices, vectors) carry a magic number that destroy clears: a destroyed
// handle passed to any function is refused with MSP_ERR_INVALID_ARGUMENT ("handle already
// destroyed") instead of a crash. This is best effort: once the freed memory is reused by
// another allocation the handle reads as "not a mixsparse <object>", and a handle whose memory
// was returned to the system cannot be examined at all.

// ---------------------------------------------------------------------------------------------
// Enumerations spelled once: backends, formats, kernels, storage precisions.
// ---------------------------------------------------------------------------------------------
typedef enum { MSP_BACKEND_AUTO = 0, MSP_BACKEND_CPU = 1, MSP_BACKEND_CUDA = 2 } msp_backend;

// Storage formats that a matrix can be held in: X(ENUM, tag, ident). `ident` is the lower-case
// identifier pasted into the names of the format's record (msp__fmt_<ident>, src/core/<fmt>.c)
// and kernels; a new format is one row here plus its files (README, "Adding a format").
#define MSP_FORMAT_LIST(X)                                                                         \
  X(CSR, "csr", csr)                                                                               \
  X(COO, "coo", coo)                                                                               \
  X(ELL, "ell", ell)                                                                               \
  X(HLL, "hll", hll)                                                                               \
  X(DIA, "dia", dia)                                                                               \
  X(HDIA, "hdia", hdia)                                                                            \
  X(HYB, "hyb", hyb)                                                                               \
  X(BDMP_PBP, "bdmp-pbp", bdmp_pbp)                                                                \
  X(BDMP_TCKI, "bdmp-tcki", bdmp_tcki)

typedef enum {
#define MSP_FORMAT_ENUM_(name, tag, ident) MSP_FORMAT_##name,
  MSP_FORMAT_LIST(MSP_FORMAT_ENUM_)
#undef MSP_FORMAT_ENUM_
      MSP_FORMAT_COUNT,
  MSP_FORMAT_AUTO = 100, // choose from the matrix statistics
  MSP_FORMAT_TUNE = 101  // time the viable candidates on the device and keep the fastest
} msp_format;

// CSR kernels (the other formats have one kernel each).
typedef enum {
  MSP_KERNEL_AUTO = 0,   // the CSR kernel rule (see msp_choose_kernel)
  MSP_KERNEL_SCALAR = 1, // one thread (CPU: one iteration) per row
  MSP_KERNEL_VECTOR = 2, // a group of 2..32 threads per row
  MSP_KERNEL_MERGE = 3,  // merge-path: equal share of rows + nonzeros per thread
  MSP_KERNEL_COUNT
} msp_kernel;

// Storage precisions: X(ENUM, tag, bytes per stored value).
#define MSP_PRECISION_LIST(X)                                                                      \
  X(F64, "f64", 8)                                                                                 \
  X(F32, "f32", 4)                                                                                 \
  X(F16, "f16", 2)                                                                                 \
  X(BF16, "bf16", 2)                                                                               \
  X(FX32, "fx32", 4)                                                                               \
  X(FX16, "fx16", 2)                                                                               \
  X(CPMS2, "cpms2", 8)                                                                             \
  X(CPMS4, "cpms4", 8)

typedef enum {
#define MSP_PRECISION_ENUM_(name, tag, bytes) MSP_PRECISION_##name,
  MSP_PRECISION_LIST(MSP_PRECISION_ENUM_)
#undef MSP_PRECISION_ENUM_
      MSP_PRECISION_COUNT
} msp_precision;

// Tags ("csr", "merge", "f32", "cuda"); NULL for an unknown value.
const char *msp_format_name(msp_format f);
const char *msp_kernel_name(msp_kernel k);
const char *msp_precision_name(msp_precision p);
const char *msp_backend_name(msp_backend b);
// Parse a tag (case-sensitive, as printed above; formats also accept "auto" and "tune").
// MSP_ERR_INVALID_ARGUMENT with a message listing the valid tags when unknown.
msp_status msp_format_parse(const char *tag, msp_format *out);
msp_status msp_kernel_parse(const char *tag, msp_kernel *out);
msp_status msp_precision_parse(const char *tag, msp_precision *out);
msp_status msp_backend_parse(const char *tag, msp_backend *out);

// ---------------------------------------------------------------------------------------------
// Context: a backend, a device and (CUDA) a stream.
// ---------------------------------------------------------------------------------------------
typedef struct msp_context_s *msp_context;

// Create a context. backend AUTO picks CUDA when it is compiled in and a device is usable, else
// CPU. device: the GPU ordinal (ignored for CPU). Returns MSP_ERR_NOT_BUILT when CUDA is asked
// for in a build without it, MSP_ERR_NO_DEVICE when no usable device exists, MSP_ERR_DEVICE on a
// driver error, MSP_ERR_OUT_OF_MEMORY.
msp_status msp_context_create(msp_backend backend, int device, msp_context *ctx);
// Destroy a context (NULL accepted); *ctx is set to NULL. Matrices and vectors made with it must
// be destroyed first: while any is alive the call frees nothing and returns
// MSP_ERR_INVALID_ARGUMENT with their number. MSP_ERR_INVALID_ARGUMENT for a destroyed or
// foreign handle.
msp_status msp_context_destroy(msp_context *ctx);
// The backend actually in use (never AUTO).
msp_backend msp_context_backend(const msp_context ctx);
// Block until all work queued on the context's device has finished (no-op on CPU).
msp_status msp_context_synchronize(msp_context ctx);
// Host threads (OpenMP) of the operations on ctx: products, vector operations, conversion,
// reading and generating matrices, GMRES and PageRank. threads > 0 uses that many for every
// call on ctx. 0 (the default) uses the count the program gave OpenMP (OMP_NUM_THREADS or
// omp_set_num_threads) when it is not one thread per CPU; otherwise, at each call, as many
// threads as the machine has CPUs free of other running programs (at least 1, at most one per
// CPU the process may run on), since threads that wait for a descheduled one lose far more than
// they gain; a small product takes no more than one thread per 32768 nonzeros. The calling thread's
// OpenMP setting is put back when a call returns. Results are the same bits for any count.
// MSP_ERR_INVALID_ARGUMENT for a negative count or a destroyed or foreign handle.
msp_status msp_context_set_threads(msp_context ctx, int threads);
// The number of host threads the next operation on ctx will use (0 for an invalid handle).
int msp_context_threads(const msp_context ctx);

// Device facts (Filippone, PSBLAS-Extensions reference guide section 3).
typedef struct {
  int ordinal;
  char name[256];
  int multiprocessors;
  int warp_size;
  int max_threads_per_mp;
  int registers_per_block;
  int memory_clock_khz;
  int memory_bus_width_bits;
  double peak_bandwidth_gbs; // 2 * clock * bus width / 8 (double data rate), in GB/s
  int has_uva;
  int compute_major, compute_minor;
  size_t total_memory_bytes;
  size_t l2_cache_bytes;
} msp_device_props;

// Number of usable CUDA devices; 0 (and MSP_SUCCESS) when CUDA is not built or none is present.
msp_status msp_device_count(int *count);
// Facts of device `ordinal`. MSP_ERR_NOT_BUILT / MSP_ERR_NO_DEVICE / MSP_ERR_INVALID_ARGUMENT.
msp_status msp_device_info(int ordinal, msp_device_props *props);

// ---------------------------------------------------------------------------------------------
// Matrices. Always kept on the host as CSR (int64 row pointers, int32 columns, fp64 values);
// a converted matrix also holds its format's arrays, on the context's backend.
// ---------------------------------------------------------------------------------------------
typedef struct msp_matrix_s *msp_matrix;

// Flags for reading and creating matrices.
enum {
  MSP_READ_ALLOW_NONFINITE = 1 // accept NaN and Inf values (rejected by default)
};

// Read a Matrix Market file (.mtx or .mtx.gz, detected from content). Coordinate real, integer
// or pattern (pattern entries become 1.0); general, symmetric or skew-symmetric (expanded);
// duplicates summed. On failure no matrix is returned and msp_last_error() names file and line.
msp_status msp_matrix_read_mtx(msp_context ctx, const char *path, unsigned flags, msp_matrix *A);
// Create from the caller's CSR arrays, which are copied. rowptr has rows+1 entries starting at
// 0 and non-decreasing; colind in 0..cols-1 (any order within a row; duplicates are summed);
// values finite unless MSP_READ_ALLOW_NONFINITE. MSP_ERR_INVALID_MATRIX with the offending
// index in the message.
msp_status msp_matrix_from_csr(msp_context ctx, int64_t rows, int64_t cols, const int64_t *rowptr,
                               const int32_t *colind, const double *values, unsigned flags,
                               msp_matrix *A);
// Generate a built-in matrix from a spec string (deterministic for a given spec):
//   "laplace2d:N"            2D 5-point Laplacian on an N x N grid (N*N rows)
//   "stencil27:N"            3D 27-point stencil on N^3 grid, coefficients varying smoothly in
//   space "random:ROWS:PER_ROW[:SEED]"   uniform random columns, PER_ROW entries per row
//   "rmat:SCALE:EDGE_FACTOR[:SEED]" R-MAT power-law graph (a=.57 b=.19 c=.19), 2^SCALE rows
//   "banded:ROWS:WIDTH"      banded, WIDTH entries per row centred on the diagonal
//   "powerlaw:ROWS:MEAN[:SEED]"  row lengths drawn from a power law, random columns
//   "poisson3d:N"            3D 7-point Laplacian on an N^3 grid (symmetric, M-matrix)
//   "convdiff3d:N[:PECLET]"  3D 7-point upwind convection-diffusion (nonsymmetric M-matrix;
//                            wind (1, 1/2, 1/4), PECLET default 10, 0 gives poisson3d)
// MSP_ERR_INVALID_ARGUMENT with the valid forms in the message for a bad spec.
msp_status msp_matrix_generate(msp_context ctx, const char *spec, msp_matrix *A);
// Destroy a matrix (NULL accepted); *A is set to NULL. MSP_ERR_INVALID_ARGUMENT ("handle
// already destroyed") for a copy of a handle destroyed before (best effort, see above).
msp_status msp_matrix_destroy(msp_matrix *A);
int64_t msp_matrix_rows(const msp_matrix A);
int64_t msp_matrix_cols(const msp_matrix A);
int64_t msp_matrix_nnz(const msp_matrix A);
msp_format msp_matrix_format(const msp_matrix A);
msp_kernel msp_matrix_kernel(const msp_matrix A);
msp_precision msp_matrix_precision(const msp_matrix A);
// Memory footprint of the format's arrays (values, indices, offsets, padding included), bytes.
size_t msp_matrix_bytes(const msp_matrix A);
// Why the format/kernel was chosen (one line; "named by the caller" when not automatic).
const char *msp_matrix_choice_reason(const msp_matrix A);
// Copy the host CSR out. Any pointer may be NULL to skip that array; sizes rows+1 / nnz / nnz.
msp_status msp_matrix_get_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind, double *values);
// Select the CSR kernel (CSR matrices only; AUTO re-applies the rule).
msp_status msp_matrix_set_kernel(msp_matrix A, msp_kernel kernel);

// Statistics of the sparsity pattern and values (computed once, at creation).
typedef struct {
  int64_t rows, cols, nnz;
  int64_t row_min, row_max; // row lengths
  double row_mean, row_std;
  double row_cv;   // coefficient of variation: row_std / row_mean (0 when row_mean is 0)
  double skewness; // row_max / row_mean (0 when nnz is 0): how much longer the longest row is
                   // than the average; the kernel rule switches to merge-path above 10
  int64_t empty_rows;
  int64_t diagonals;                        // number of occupied diagonals (distinct j - i)
  int64_t bandwidth;                        // max |j - i| over the nonzeros
  int64_t lower_bandwidth, upper_bandwidth; // max (i - j), max (j - i), 0 when none
  double ell_fill; // ELL padded slots / nnz: (rows * row_max - nnz) / nnz (0 when nnz is 0)
  double dia_fill; // DIA padded slots / nnz: (rows * diagonals - nnz) / nnz
  double abs_mean, abs_std; // mean and standard deviation of |a_ij| over the stored entries
  // Format statistics (filled by the conversion's analysis; 0 when not computed):
  double hll_fill;      // HLL (hack 32) padded slots / nnz, the last hack's padded rows included
  double hdia_fill;     // HDIA (hack 64) padded slots / nnz, each hack with its own diagonals
  int64_t hyb_k;        // HYB ELL width by the one-third rule
  double hyb_fill;      // HYB ELL-part padded slots / nnz
  double hyb_coo_share; // share of the nonzeros in HYB's COO part
} msp_matrix_stats;

msp_status msp_matrix_analyze(const msp_matrix A, msp_matrix_stats *stats);
// The CSR kernel rule applied to statistics: skewness (max / mean row length) at or above its
// threshold, or few rows of long mean length: merge-path; mean row length below 4 (and
// refinements for short near-uniform rows): scalar; otherwise vector. `reason` (may be NULL)
// gets a one-line why.
// A NULL stats chooses nothing: MSP_KERNEL_AUTO, with the reason in msp_last_error().
msp_kernel msp_choose_kernel(const msp_matrix_stats *stats, char *reason, size_t reason_size);

// What msp_matrix_convert does with a finite value that the storage precision cannot hold: one
// that overflows it (rounds beyond 65504 in f16, beyond FLT_MAX in f32), or a nonzero that it
// would store as zero (at most half the smallest subnormal of f16 / bf16 / f32 in magnitude; in
// fixed point, at most half a unit of the scale of its block of 256 stored values). f64 and CPMS
// hold every double: never out of range. Every policy counts the offending entries
// (msp_matrix_range_info).
typedef enum {
  MSP_RANGE_ERROR = 0,    // default: the conversion fails with MSP_ERR_RANGE, naming the first
                          // offending entry (row and column, value, precision and its range)
                          // and how many there are
  MSP_RANGE_SATURATE = 1, // overflow stores the largest finite value with the value's sign; a
                          // nonzero that would be stored as zero stores the smallest nonzero
                          // (fixed point: one unit of its block's scale) with its sign
  MSP_RANGE_ALLOW = 2     // store what rounding gives (+-Inf, or 0), as IEEE conversion does
} msp_range_policy;

// Options for msp_matrix_convert. Initialise with msp_convert_options_default().
typedef struct {
  msp_format format;       // target format, or AUTO / TUNE
  msp_kernel kernel;       // CSR kernel (AUTO: the rule)
  msp_precision precision; // storage precision of the values
  int hack_size;           // HLL / HDIA rows per hack, a multiple of 32 (0: 32 for HLL, 64 HDIA)
  int64_t ell_width;       // ELL width (0: the longest row)
  int64_t hyb_k;           // HYB ELL part width (-1: chosen; see the HYB rule)
  double max_fill;         // refuse ELL/DIA/HLL/HDIA larger than max_fill x CSR bytes (default 3)
  int cpms_segments;       // CPMS segments read by products (0: all)
  // BDMP
  double bdmp_f;       // threshold factor f (default 0.5)
  double bdmp_lambda;  // fixed threshold when > 0
  int bdmp_digits;     // > 0: error-bounded mode with D digits (1..15). With format AUTO:
                       // the digits asked of AUTO, which then chooses, by the bytes a product
                       // moves (times a measured cost per byte), among its fp64 format, that
                       // format with f32 values (only when every row i keeps u32 * sum of the
                       // |a_ij| that fp32 rounds <= 5 10^-D sum_j |a_ij|, values in fp32's
                       // normal range), BDMP-PBP and BDMP-TCKI in this mode; the reason gives
                       // each candidate's bytes and the bound of the choice. precision must
                       // stay f64 (AUTO chooses it). 0 (default): AUTO in fp64, as without it.
  int allow_atomics;   // permit floating-point atomics (non-deterministic order) for speed
  int bdmp_paper_rule; // 1: the paper's precision rule alone; 0 (default): tiles whose values
                       // fp32 holds exactly go to fp32 too (no error, fewer bytes)
  int range;           // msp_range_policy for values outside the precision's range (default
                       // MSP_RANGE_ERROR)
} msp_convert_options;

msp_convert_options msp_convert_options_default(void);
// CPMS matrices: the number of segments (1..S, 0 = all) that products read from now on. The
// stored values are not touched: one stored matrix serves every read precision (Grutzmacher et al.,
// "Acceleration of PageRank with customized precision", 4.1). MSP_ERR_NOT_SUPPORTED when A is not
// CPMS, MSP_ERR_INVALID_ARGUMENT for a count outside 0..S.
msp_status msp_matrix_set_cpms_segments(msp_matrix A, int segments);
// Make B, a copy of A in the requested format/precision on ctx's backend (A is unchanged).
// MSP_ERR_FILL_LIMIT when padding would exceed max_fill, with the size in the message.
// MSP_ERR_RANGE (policy MSP_RANGE_ERROR) when a value is outside the range of the precision:
// the message names the first offending entry (row and column 1-based, as in Matrix Market; for
// fixed point the first in the format's value order), its value, the precision's range and the
// number of offending entries.
msp_status msp_matrix_convert(msp_context ctx, const msp_matrix A, const msp_convert_options *opts,
                              msp_matrix *B);
// How many stored values of A (in) were outside its precision's range when it was converted
// (see msp_range_policy): *saturated (out) finite values that overflow (stored as +-largest
// finite under MSP_RANGE_SATURATE, +-Inf under MSP_RANGE_ALLOW), *flushed (out) nonzeros that
// would be stored as zero (stored as +-smallest nonzero under SATURATE, 0 under ALLOW). Both 0 for
// f64, CPMS and unconverted matrices. Either pointer may be NULL. MSP_ERR_INVALID_ARGUMENT for a
// NULL A.
msp_status msp_matrix_range_info(const msp_matrix A, int64_t *saturated, int64_t *flushed);

// BDMP matrices (formats bdmp-pbp, bdmp-tcki): what the per-tile precision selection did.
typedef struct {
  double lambda; // threshold used (threshold mode; 0 in the error-bounded mode)
  int digits;    // error-bounded mode D (0: threshold mode)
  double bound;  // guaranteed: for every x and row i, the fp32 storage changes y_i by at most
                 // bound * (sum_j |a_ij|) * max|x| (storage rounding only; fp64 arithmetic)
  int64_t tiles, tiles_f32; // nonempty 16x16 tiles, of which stored in fp32
  int64_t nnz_f32, nnz_f64; // nonzeros stored in fp32 / fp64
  int64_t tile_formats[4];  // TCKI: tiles stored as COO, ELL, CSR, HYB (0 for PBP)
  // The footprint (msp_matrix_bytes) in three parts: the stored values (fp32 and fp64, TCKI's
  // slab padding included); the indices (PBP: row pointers and columns; TCKI: the slabs' index
  // bytes and, for its CSR-like part, row pointers over every row and columns); the metadata
  // (PBP: its precision words; TCKI: the GPU layout's chunk records and tile columns, the
  // partial sums of block rows split over several chunks, the CSR-like part's precision words).
  int64_t bytes_values, bytes_indices, bytes_meta;
  int64_t csr_brows, csr_nnz; // TCKI: block rows stored CSR-like and their nonzeros (0 for PBP)
  double convert_device_ms;   // BDMP on a CUDA context, converted on the device: the device
                              // time of the conversion (selection, tiles, packing, the host record
                              // read back excluded), event-timed; 0 for a matrix built on the host
} msp_bdmp_report;
// Fill r for a BDMP matrix. MSP_ERR_NOT_SUPPORTED for other formats.
msp_status msp_matrix_bdmp_info(const msp_matrix A, msp_bdmp_report *r);

// Accuracy of a result against an fp64 reference (Zhao et al., "Block-wise
// dynamic mixed-precision SpMV", 2.2 and 4.2): the significant digits of y_i are the largest n with
// |y_i - ref_i| / |ref_i| < 5 * 10^-n (Eq. 2-3), clamped to 0..17 (17 for an exact match, also
// when ref_i = 0; 0 when ref_i = 0 and y_i != 0, or either is not finite and they differ).
#define MSP_ACCURACY_BINS 9 // digits 0..7, then >= 8 (the paper's "ge8" column, Tables 3-4)
typedef struct {
  int64_t n;
  int64_t hist[MSP_ACCURACY_BINS]; // entries by significant digits
  double ratio;                    // share of entries with >= 7 digits (Eq. 9)
  double min_digits, mean_digits;
  double max_rel_error; // max |y_i - ref_i| / |ref_i| over ref_i != 0
} msp_accuracy;
int msp_significant_digits(double y, double ref);
// Compare n host values; MSP_ERR_INVALID_ARGUMENT for NULL arrays (n > 0) or n < 0.
msp_status msp_accuracy_compare(int64_t n, const double *y, const double *ref, msp_accuracy *acc);

// ---------------------------------------------------------------------------------------------
// Vectors: a host copy and (CUDA) a device copy, synchronised on demand (PSBLAS dual
// memorisation): operations on the device leave data there; msp_vector_get copies back once.
// ---------------------------------------------------------------------------------------------
typedef struct msp_vector_s *msp_vector;

// A zero vector of length n on ctx's backend, values stored in f64.
msp_status msp_vector_create(msp_context ctx, int64_t n, msp_vector *v);
// A zero vector of length n on ctx's backend whose values are stored in `prec` (in), and only
// there: the host and device copies hold the encoded values (n * bytes per value; fixed point
// with one scale per block of 32 values; CPMS in 128-byte banks), and transfers move those
// bytes. There is no fp64 copy: kernels read the vector through its loader and write it through
// a rounding store (nearest for f32/f16/bf16; fixed point to nearest with each block's scale
// max|v| / (2^(bits-1) - 1) taken from the block's new values, a block holding Inf/NaN reading
// NaN; CPMS keeps all segments), with fp64 arithmetic. A finite result beyond the precision's
// range is stored as the largest finite value with its sign and counted (saturated); a nonzero
// result that the precision rounds to 0 (below half its smallest subnormal; fixed point: below
// half a unit of its block's scale) is stored as 0, the nearest value it holds, and counted
// (flushed). This holds for every operation that writes the vector (products, msp_axpby,
// msp_scale, msp_copy, msp_vector_fill); the next msp_vector_get reports both counts as
// MSP_ERR_RANGE, and msp_vector_range_info gives them. Reads decode, CPMS with the segments of
// msp_vector_set_cpms_segments. *v (out) is NULL on failure. MSP_ERR_INVALID_ARGUMENT (NULL ctx
// or v, n < 0, unknown precision), MSP_ERR_OUT_OF_MEMORY (host or device, or over the memory
// limit).
msp_status msp_vector_create_precision(msp_context ctx, int64_t n, msp_precision prec,
                                       msp_vector *v);
// Destroy a vector (NULL accepted); *v is set to NULL. MSP_ERR_INVALID_ARGUMENT for a handle
// destroyed before (best effort).
msp_status msp_vector_destroy(msp_vector *v);
int64_t msp_vector_length(const msp_vector v);
// The storage precision of v (f64 for NULL).
msp_precision msp_vector_precision(const msp_vector v);
// Bytes of v's stored values: n * bytes per value, plus 8 per fixed-point scale (one per 32
// values). 0 for NULL.
size_t msp_vector_bytes(const msp_vector v);
// CPMS vectors: the number of segments (1..S, 0 = all) that operations and msp_vector_get read
// from now on; the stored bytes are not touched (writes keep every segment). MSP_ERR_NOT_SUPPORTED
// when v is not CPMS, MSP_ERR_INVALID_ARGUMENT for NULL v or a count outside 0..S.
msp_status msp_vector_set_cpms_segments(msp_vector v, int segments);
// Copy n = length host values in (host becomes current; the device copy is refreshed lazily).
// Reduced precision: encoded on the host; MSP_ERR_NONFINITE for Inf/NaN in fixed point;
// MSP_ERR_RANGE, naming the first value and the count, for finite values the precision cannot
// hold (overflow, or a nonzero that would be stored as 0), leaving v unchanged.
msp_status msp_vector_set(msp_vector v, const double *host);
// Fill every entry with `value`.
msp_status msp_vector_fill(msp_vector v, double value);
// Copy the values out to the caller's host array (copies device to host once if stale).
// MSP_ERR_RANGE (after copying the values) when results written into v since the last read
// were outside its precision's range: overflowed and saturated, or nonzero and stored as 0
// (flushed); the message gives both counts, reported once.
msp_status msp_vector_get(msp_vector v, double *host);
// The counts that the last msp_vector_get of v (in) reported: *saturated (out) results that
// overflowed v's precision and were stored as its largest finite value, *flushed (out) nonzero
// results stored as 0. Both 0 when that read reported nothing or v was never read. Either
// pointer may be NULL. MSP_ERR_INVALID_ARGUMENT for a NULL or destroyed v.
msp_status msp_vector_range_info(const msp_vector v, int64_t *saturated, int64_t *flushed);
// Read a dense vector (Matrix Market array format, one column) / write one (%.17g).
msp_status msp_vector_read_mtx(msp_context ctx, const char *path, unsigned flags, msp_vector *v);
// Writing never loses a file: the text (gzip when path ends in .gz) goes to a temporary file
// ".NAME.tmp-HOST-PID-N" created exclusively in the target's directory, is flushed to the disk
// and only then renamed over the target; a symbolic link at path is followed (the file it names
// is replaced, the link stays); a device or pipe is written in place. On failure the previous
// file is unchanged and MSP_ERR_IO names the path and the system's reason. A process killed
// while writing leaves its temporary file behind: the next write into that directory on the same
// host removes those of processes that no longer run.
msp_status msp_vector_write_mtx(msp_vector v, const char *path);
// Count of host<->device transfers so far (for tests of the on-demand rule).
int64_t msp_vector_transfers(const msp_vector v);
// Zero-copy exchange with other GPU code (DLPack, CuPy, a caller's kernels). CUDA contexts only.
// msp_vector_device_data makes v current on the device (one host-to-device copy if the host
// copy is newer) and sets *d_ptr (out) to its device values: n entries in v's storage precision
// (msp_vector_precision; f64: n doubles; CPMS: its bank layout; fixed point: the quantised
// integers, the per-block scales are not exposed). Owned by v: the caller must not free it; it is
// valid until v is destroyed. As the caller may write through it, v is marked written on the
// device (its host copy is stale; the next msp_vector_get copies back). Work queued on the
// context (that upload included) is not waited for: call msp_context_synchronize before using
// the values on another stream, and finish writes made there before the next mixsparse call
// that uses v. MSP_ERR_INVALID_ARGUMENT
// (NULL, destroyed or foreign v, NULL d_ptr), MSP_ERR_NOT_SUPPORTED (a CPU context: no device
// data; *d_ptr is set to NULL), MSP_ERR_DEVICE.
msp_status msp_vector_device_data(msp_vector v, void **d_ptr);
// Copy n values in v's storage precision from the caller's device memory d_src (in; on v's
// device, at least n * value size bytes) into v's device copy, device to device on the
// context's stream, and wait for the copy: no host copy is made. The copy starts after the work
// queued so far on the context's stream and on CUDA's legacy default stream (where a DLPack
// producer asked for stream 1 orders its writes); work the caller queued on other streams must
// be finished (or ordered before the legacy stream) by the caller. v is then current on the
// device only, with no overflow count pending. MSP_ERR_INVALID_ARGUMENT (NULL or destroyed v,
// NULL d_src with n > 0), MSP_ERR_NOT_SUPPORTED (a CPU context; fixed-point v, whose scales are
// separate), MSP_ERR_DEVICE (d_src not device memory the runtime can copy from).
msp_status msp_vector_set_device(msp_vector v, const void *d_src);

// ---------------------------------------------------------------------------------------------
// Operations. All run on the context's backend; x, y and A must have been made with this context
// (MSP_ERR_INVALID_ARGUMENT otherwise).
// ---------------------------------------------------------------------------------------------
// y = alpha * A * x + beta * y. When beta == 0, y is not read (NaN in y does not propagate).
msp_status msp_spmv(msp_context ctx, double alpha, const msp_matrix A, msp_vector x, double beta,
                    msp_vector y);
// The same product on the caller's f64 arrays: x of A's columns, y of its rows (y not read when
// beta == 0; x and y must not overlap). On the CPU backend the arrays are used in place, with no
// copy and no allocation (the cheapest call for small matrices); on CUDA they are host arrays
// copied through vectors made for the call. Errors as msp_spmv, and MSP_ERR_INVALID_ARGUMENT for
// a NULL array of nonzero length or overlapping x and y.
msp_status msp_spmv_host(msp_context ctx, double alpha, const msp_matrix A, const double *x,
                         double beta, double *y);
// Vector operations (deterministic: fixed partition and summation order).
msp_status msp_dot(msp_context ctx, msp_vector x, msp_vector y, double *result);
msp_status msp_nrm2(msp_context ctx, msp_vector x, double *result);
msp_status msp_nrm1(msp_context ctx, msp_vector x, double *result);
msp_status msp_axpby(msp_context ctx, double alpha, msp_vector x, double beta, msp_vector y);
msp_status msp_scale(msp_context ctx, double alpha, msp_vector x);
msp_status msp_copy(msp_context ctx, msp_vector x, msp_vector y);

// Bytes one SpMV moves under the library's byte model, with x and y stored in f64: the format's
// arrays once (indices, offsets and padding counted), values in A's storage precision with only
// the CPMS segments that products read (msp_matrix_set_cpms_segments / cpms_segments, 0 = all)
// and, for fixed point, one 8-byte scale per block of stored values; x once (cols * 8), y once
// (rows * 8; twice when beta != 0). 0 for NULL A.
double msp_spmv_bytes(const msp_matrix A, int beta_nonzero);
// The same model with x and y counted in their own storage precision (msp_vector_precision;
// NULL counts as f64). x: cols values of its precision, CPMS with the segments it is read with
// (msp_vector_set_cpms_segments), fixed point plus one 8-byte scale per 32 values. y: rows
// values written (CPMS: every segment) plus its scales; when beta_nonzero, y is also read
// (CPMS: its read segments). The vectors' lengths are not checked here (msp_spmv does): the
// counts come from A's dimensions. 0 for NULL A.
double msp_spmv_bytes_vectors(const msp_matrix A, const msp_vector x, const msp_vector y,
                              int beta_nonzero);

// ---------------------------------------------------------------------------------------------
// Solvers: restarted GMRES with a compressed Krylov basis (CB-GMRES,
// Aliaga, Anzt, Grutzmacher, Quintana-Orti, Tomas, "Compressed basis GMRES", Fig. 1). The basis is
// stored in a storage precision and read through the accessors; all arithmetic is fp64.
// ---------------------------------------------------------------------------------------------
typedef enum {
  MSP_PRECOND_NONE = 0,
  MSP_PRECOND_JACOBI = 1, // M = diag(A) (fp64)
  MSP_PRECOND_ILU0 = 2    // M = L U with the sparsity pattern of A (fp64, no fill)
} msp_precond;

typedef enum {
  MSP_ORTHO_CGS = 0,  // classical Gram-Schmidt, re-orthogonalised while ||w after|| < ||w before||
                      // / sqrt(2), at most 2 extra passes (one read of the basis per pass)
  MSP_ORTHO_MGS = 1,  // modified Gram-Schmidt (one read of the basis per basis vector)
  MSP_ORTHO_DCGS2 = 2 // classical Gram-Schmidt with delayed re-orthogonalisation (DCGS2 of
                      // Swirydowicz, Langou, Ananthan, Yang and Thomas, "Low synchronization
                      // Gram-Schmidt and generalized minimal residual algorithms"): two reads of
                      // the basis and one reduction per iteration; the residual of an iteration
                      // is known after the next product (msp_gmres)
} msp_ortho;

// A monitor of msp_gmres (msp_solver_options.monitor), called on the caller's thread: once with
// iteration 0 and the initial explicit residual before the first iteration, then after every
// inner iteration k = 1, 2, ... with the recurrence's residual norm (residual; rel_residual =
// residual / ||b||, the value the report's history[k] holds) and the storage precision of the
// basis that iteration used. data is msp_solver_options.monitor_data. Return 0 to go on;
// non-zero stops the solve: x gets the current cycle's update, and the report says stopped = 1
// (converged only if the explicit residual then meets the tolerance).
typedef int (*msp_solver_monitor)(void *data, int64_t iteration, double residual,
                                  double rel_residual, msp_precision basis);

// Options for msp_gmres. Initialise with msp_solver_options_default().
typedef struct {
  int restart;                   // Krylov dimension m per cycle (default 100)
  double rtol;                   // stop when ||b - A x|| <= max(rtol ||b||, atol) (1e-8)
  double atol;                   // (0)
  int64_t max_iters;             // total inner iterations (10000)
  msp_precision basis_precision; // storage of the Krylov basis (f64; any of MSP_PRECISION_LIST;
                                 // CPMS stores and reads all segments)
  int basis_auto;                // 1: ignore basis_precision; start with an f32 basis and move to
                                 // f64 at a restart where the explicit residual stagnates
                                 // or stays far above the recurrence's (msp_gmres); an
                                 // f64 cycle that then stagnates starts over from the initial
                                 // guess, once, so auto converges wherever f64 does (msp_gmres)
  msp_precond precond;           // right preconditioner (NONE)
  msp_ortho ortho;               // (CGS)
  msp_solver_monitor monitor;    // NULL: none (see msp_solver_monitor)
  void *monitor_data;            // passed to monitor as is
} msp_solver_options;

msp_solver_options msp_solver_options_default(void);

// Cycles whose basis precision the report records (the rest are counted, not listed).
#define MSP_SOLVER_MAX_CYCLES 256

// What msp_gmres did. `history` and `history_capacity` are set by the caller (NULL / 0 for none)
// and kept by msp_gmres; every other field is overwritten.
typedef struct {
  int converged;            // 1 when the explicit residual met the tolerance
  int64_t iterations;       // inner iterations (products with A) over all cycles
  int64_t restarts;         // cycles started after the first
  double rel_residual;      // final explicit ||b - A x|| / ||b|| (||b - A x|| when b = 0)
  double *history;          // caller-owned, may be NULL: history[k] = the recurrence's relative
                            // residual after k iterations (history[0] the initial explicit one)
  int64_t history_capacity; // entries history can hold
  int64_t history_length;   // entries written (at most history_capacity)
  int cycles_recorded;      // entries of cycle_precision: min(cycles run, MSP_SOLVER_MAX_CYCLES)
  msp_precision cycle_precision[MSP_SOLVER_MAX_CYCLES]; // basis precision of each cycle
  int64_t iterations_by_precision[MSP_PRECISION_COUNT]; // inner iterations run with each basis
  double time_s;                                        // wall time of the solve
  double basis_bytes; // bytes of basis values (and fixed-point scales) read and written by the
                      // basis operations: store, projection, subtraction, combination
  double setup_s;     // of time_s, the set-up before the first iteration: work vectors, the
                      // basis, the preconditioner (Jacobi's inverse diagonal, ILU(0)'s factors)
  int stopped;        // 1 when the monitor asked to stop
} msp_solver_report;

// Solve A x = b by restarted GMRES with right preconditioning (A M^-1 u = b, x = M^-1 u), Givens
// rotations and the options in opts (NULL: defaults). A square; b and x (in: the initial guess,
// out: the solution) of length rows, in any storage precision, on ctx's backend. When the
// recurrence says converged, the explicit residual b - A x is computed and the iteration goes on
// (a new cycle) while it does not meet the tolerance. b = 0 gives x = 0; an initial guess that
// already meets the tolerance returns at once. Not converging within max_iters is reported by
// rep->converged = 0 with MSP_SUCCESS. Auto basis: the first cycle stores the basis in f32 (the
// paper's 32-bit formats cost no extra iterations on its 49 problems, 16-bit ones 1.5-5x, so a
// 16-bit start is never worth it); a cycle that leaves the explicit residual above 0.9 times its
// value before it, or 10 times above the residual its recurrence reached (the basis's rounding
// limits it), moves the next cycles to f64. rep (out) may be NULL.
// MSP_ERR_INVALID_ARGUMENT (NULL or foreign arguments, bad options, A not square),
// MSP_ERR_DIMENSION_MISMATCH, MSP_ERR_NOT_SUPPORTED (a backend without the basis operations),
// MSP_ERR_INVALID_MATRIX (ILU(0) or Jacobi: a missing, zero or non-finite pivot, naming the
// row), MSP_ERR_NONFINITE (the iteration produced NaN or Inf), MSP_ERR_OUT_OF_MEMORY.
msp_status msp_gmres(msp_context ctx, const msp_matrix A, msp_vector b, msp_vector x,
                     const msp_solver_options *opts, msp_solver_report *rep);

// ---------------------------------------------------------------------------------------------
// PageRank (Grutzmacher, Cojean, Flegar, Anzt, Quintana-Orti, "Acceleration of PageRank with
// customized precision"): the power iteration
//   p_k = alpha G^T D^-1 p_{k-1} + (alpha s + 1 - alpha) v,   s = the mass on dangling nodes,
// with D the out-degrees (out-weights when weighted) and v the personalisation (uniform: 1/n).
// ---------------------------------------------------------------------------------------------
typedef enum {
  MSP_PAGERANK_F64 = 0,   // p read and written in fp64
  MSP_PAGERANK_CPMS2 = 1, // p in 2-segment CPMS, read with 1 then 2 segments (32, 64 bits)
  MSP_PAGERANK_CPMS4 = 2, // p in 4-segment CPMS, read with 1 segment (16 bits), then as cpms2
                          // (32 bits), then fp64 (no 48-bit level: see msp_pagerank)
  MSP_PAGERANK_AUTO = 3   // CPMS2 when 8 n bytes exceed the cache (MSP_PAGERANK_AUTO_BYTES),
                          // F64 otherwise
} msp_pagerank_precision;

// Graphs whose fp64 rank vector is larger than this use CPMS2 under MSP_PAGERANK_AUTO.
#define MSP_PAGERANK_AUTO_BYTES (32u << 20)

// The order in which msp_pagerank numbers the nodes internally (the result is always in the
// file's order). The pull gathers q_j = p_j / outdeg_j once per out-edge of j; numbering the
// nodes by decreasing out-degree puts the most gathered entries of q side by side, so that they
// share cache lines and stay in the L2 cache where the graph's vectors do not fit.
typedef enum {
  MSP_PAGERANK_ORDER_AUTO = 0,    // DEGREE when 8 n bytes exceed MSP_PAGERANK_AUTO_BYTES, else
                                  // NATURAL
  MSP_PAGERANK_ORDER_NATURAL = 1, // the file's numbering
  MSP_PAGERANK_ORDER_DEGREE = 2   // decreasing out-degree, ties in the file's order
} msp_pagerank_order;

// A monitor of msp_pagerank (msp_pagerank_options.monitor), called on the caller's thread after
// every power iteration k = 1, 2, ... with change = ||p_k - p_{k-1}||_1 (the report's
// history[k - 1]) and the bits of each value that iteration read (16, 32, 48 or 64; fp64 is 64).
// data is msp_pagerank_options.monitor_data. Return 0 to go on; non-zero stops after this
// iteration: p gets the current iterate (normalised) and the report says stopped = 1.
typedef int (*msp_pagerank_monitor)(void *data, int64_t iteration, double change, int read_bits);

// Options for msp_pagerank. Initialise with msp_pagerank_options_default().
typedef struct {
  double alpha;                     // damping factor in (0, 1) (0.85)
  double tol;                       // stop when ||p_k - p_{k-1}||_1 < tol (1e-10)
  int64_t max_iters;                // (1000); reaching it is rep->converged = 0, not an error
  msp_pagerank_precision precision; // (MSP_PAGERANK_F64)
  int separate;                     // CPMS layout: 0 interleaved (CPMS-i), 1 separate (CPMS-s)
  int bank_bytes; // CPMS-i bank in bytes, a power of two from 64 to 65536 (0: 128 on CUDA, the
                  // paper's GPU choice; 8192 on the CPU, where the paper found 8 KiB banks as
                  // good as CPMS-s)
  double switch_factor; // read one more segment once the change falls below switch_factor times
                        // the unit roundoff of the current read width (10: reproduces the
                        // paper's Table 2 closely; the paper gives no number)
  int weighted;         // 1: G's values are edge weights (finite, >= 0); 0: the structure counts
  int values;    // 1: the paper's form, an SpMV with G^T holding 1/O_i (w_ij / W_i weighted) as
                 // stored values; 0: the value-free pull over G^T's structure (weighted
                 // graphs always use the values form)
  int use_guess; // 1: p holds the starting vector on entry (normalised here); 0: uniform start
  msp_vector personalization;   // NULL: uniform; otherwise n values >= 0 with a positive sum
                                // (normalised here): teleport and dangling mass follow it
  msp_pagerank_order order;     // internal node numbering (MSP_PAGERANK_ORDER_AUTO)
  msp_pagerank_monitor monitor; // NULL: none (see msp_pagerank_monitor)
  void *monitor_data;           // passed to monitor as is
} msp_pagerank_options;

msp_pagerank_options msp_pagerank_options_default(void);

// What msp_pagerank did.
typedef struct {
  int converged;                 // 1 when ||p_k - p_{k-1}||_1 < tol
  int64_t iterations;            // power iterations over all read widths
  int64_t iterations_by_bits[5]; // [w]: iterations that read w * 16 bits of each value (w 1..4;
                                 // fp64 counts as 64); [0] unused
  int values;                    // 1 when the values form ran
  msp_precision storage;         // f64, cpms2 or cpms4 (what MSP_PAGERANK_AUTO chose)
  double change;                 // the final ||p_k - p_{k-1}||_1
  double time_s;                 // wall time of the iteration (setup excluded)
  double setup_s;                // transpose, degrees and uploads
  int64_t dangling;              // nodes without out-edges (or with zero out-weight)
  msp_pagerank_order order;      // the numbering used: NATURAL or DEGREE
  // Set by the caller (NULL / 0 for none) and kept by msp_pagerank; the rest is overwritten.
  double *history;          // caller-owned, may be NULL: history[k] = the change after k + 1
                            // iterations
  double *history_time;     // caller-owned, may be NULL: seconds from the first iteration's
                            // start to the end of iteration k + 1
  int64_t history_capacity; // entries each of history and history_time can hold
  int64_t history_length;   // entries written (at most history_capacity)
  int stopped;              // 1 when the monitor asked to stop
} msp_pagerank_report;

// PageRank of the graph G (square; entry (i, j) is an edge from node i to node j, as in SNAP and
// scipy adjacency matrices; symmetric files are undirected graphs) into p (length n, any storage
// precision; the result is renormalised to sum 1 in fp64 and then stored). Dangling nodes spread
// alpha times their mass along v, as cuGraph and NetworkX do (Algorithm 1 of the paper leaves alpha
// off that term). With CPMS the iteration starts with the fewest segments and reads one more when
// the change comes within switch_factor of the read width's unit roundoff; the iteration that
// decides writes all segments, p is renormalised, and at 64 bits the data moves to plain fp64.
// cpms4 reads 16 bits, then 32 in the cpms2 layout (its head), then 64: each segment read of a
// gathered entry is a memory sector of its own, so 2 or 3 of 4 segments would cost 2 or 3
// sectors where a head or a plain double costs one.
// The same bits for any thread count. n = 0 returns at once (converged, 0 iterations).
// MSP_ERR_INVALID_ARGUMENT (NULL or foreign handles, bad options, G not square, a personalisation
// with a negative, non-finite or all-zero entry), MSP_ERR_DIMENSION_MISMATCH (p or v not of
// length n), MSP_ERR_INVALID_MATRIX (weighted: a negative or non-finite weight, naming the entry),
// MSP_ERR_NOT_SUPPORTED (a backend without PageRank), MSP_ERR_OUT_OF_MEMORY.
msp_status msp_pagerank(msp_context ctx, const msp_matrix G, const msp_pagerank_options *opts,
                        msp_vector p, msp_pagerank_report *rep);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif

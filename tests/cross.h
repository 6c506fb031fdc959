// cross.h: the cross-test engine shared by tests/cuda_cross.c and tests/test_cross_cpu.c.
//
// One engine loops over MSP_FORMAT_LIST x the (matrix, vector) storage-precision combinations of
// MSP_PRECISION_LIST (cross_combos) x CSR kernels x (alpha, beta), on every context of the run:
// each result is checked against a long-double oracle computed from the values as stored, and
// every context after the first (the CPU reference) also against the reference's result. A new
// format or precision in its list is tested without an edit here.
#ifndef MSP_CROSS_H
#define MSP_CROSS_H

#include "testlib.h"

#define CROSS_MAX_CTX 4
#define CROSS_MAX_UNSUPPORTED 256

typedef struct {
  char what[200];
  int64_t count;
} cross_unsupported;

typedef struct {
  const char *name;               // the test's name, for the summary line
  msp_context ctx[CROSS_MAX_CTX]; // ctx[0]: the CPU reference
  int nctx;
  int determinism;         // run every product of ctx[1..] twice and compare the bits
  int64_t max_nnz;         // matrices with more stored entries are left out (0: no cap)
  int64_t variant_max_nnz; // the conversion-option variants only below this many entries
  // counts for the summary
  int64_t passed, failed, unsupported;
  int64_t fill_refused; // conversions refused by the fill limit (on every backend alike)
  int64_t capped;       // matrices left out by max_nnz
  int64_t matrices;     // matrices crossed
  int64_t unreadable;   // collection matrices the reader refuses (counted, named)
  cross_unsupported ns[CROSS_MAX_UNSUPPORTED];
  int nns;
} cross_env;

// Every case of one matrix (given as the caller's CSR, duplicates allowed: the library sums them)
// on every context of e. `options` != 0 also runs the conversion-option variants (hack sizes,
// HYB widths, ELL padding, BDMP modes) when nnz <= e->variant_max_nnz.
void cross_matrix(cross_env *e, const test_csr *m, const char *label, int options);
// The same for a built-in matrix spec (msp_matrix_generate).
void cross_spec(cross_env *e, const char *spec, int options);
// The edge cases of STYLE.md section 7 (0x0, 5x0, 0x7, nnz = 0, 1x1, sizes beyond the warp and
// the hack sizes, n not a multiple of 32 / 64, empty rows, one row of 20000 entries, duplicates)
// and the seeded generated matrices. `large` adds the cases above 10^5 entries.
void cross_edge_cases(cross_env *e, int large);
// One matrix of the collection (test_for_each_matrix callback; user is the cross_env).
void cross_collection_matrix(const char *path, const char *name, void *user);
// Print the not-supported lines and the summary line "cross: N passed, N failed, N not
// supported"; returns the exit code (1 on any failure or failed check, else 0).
int cross_finish(cross_env *e);
// The cap of env MSP_CROSS_MAX_NNZ (0 when unset).
int64_t cross_env_max_nnz(void);

#endif

// test_cross_cpu.c: the CPU backend over MSP_FORMAT_LIST x MSP_PRECISION_LIST x vector
// precisions, against a long-double oracle of the stored values (the engine and its bound:
// cross.c), on the edge cases, the generated matrices and a sample of ../shared/matrices.
//
// The sample keeps the run short (about a minute on 2 cores in a Release build): collection
// matrices of at most SAMPLE_MAX_NNZ entries, SAMPLE_COUNT of them spread over the collection
// (MSP_TEST_MAX_MATRICES overrides the count); the whole collection is crossed by cuda_cross.
#include "cross.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *NAME = "test_cross_cpu";
#define SAMPLE_MAX_NNZ 200000
#define SAMPLE_COUNT 16

int main(void) {
  static cross_env e;
  memset(&e, 0, sizeof e);
  e.name = NAME;
  e.max_nnz = cross_env_max_nnz();
  e.variant_max_nnz = 5000;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &e.ctx[0]));
  if (!e.ctx[0]) return msp_test_finish(NAME);
  e.nctx = 1;
  cross_edge_cases(&e, 0);
  if (test_matrices_dir()) {
    int64_t cap = e.max_nnz > 0 && e.max_nnz < SAMPLE_MAX_NNZ ? e.max_nnz : SAMPLE_MAX_NNZ;
    int n = test_for_each_matrix_sample(cap, SAMPLE_COUNT, cross_collection_matrix, &e);
    printf("%s: %d matrices of the collection sampled (at most %lld entries each)\n", NAME, n,
           (long long)cap);
    CHECK(n > 0, "the collection has no eligible matrix");
  } else {
    printf("%s: the collection (MSP_MATRICES_DIR, ../shared/matrices) is absent: not sampled; "
           "the edge cases and generated matrices ran\n",
           NAME);
  }
  int rc = cross_finish(&e);
  msp_context_destroy(&e.ctx[0]);
  return rc;
}

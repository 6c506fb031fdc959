// cuda_cross.c: the one cross test: every backend that is built and has a device, against the
// CPU reference and a long-double oracle, over MSP_FORMAT_LIST x MSP_PRECISION_LIST (cross.c).
//
// The backend table is walked from MSP_BACKEND_CPU + 1 on: each backend whose context can be made
// joins the run; one that is not built or has no device is named and left out. With none, the
// test reports itself skipped (77), never passed. The engine and its bound are in cross.c.
// Environment: MSP_CROSS_MAX_NNZ caps the matrices (edge cases, generated and collection alike;
// the compute-sanitizer runs of scripts/gpu-check.sh use it), MSP_TEST_MAX_MATRICES spreads a
// capped number over the collection, MSP_TEST_QUICK leaves out the large edge cases,
// MSP_TEST_SANITIZER leaves out the determinism repeat.
#include "cross.h"

#include <stdlib.h>
#include <string.h>

static const char *NAME = "cuda_cross";

int main(void) {
  static cross_env e; // large: the not-supported table
  memset(&e, 0, sizeof e);
  e.name = NAME;
  // The repeated product that checks the bits is left out under compute-sanitizer (it doubles
  // the launches there and proves nothing about memory); the plain run checks it.
  const char *san = getenv("MSP_TEST_SANITIZER");
  e.determinism = !(san && *san);
  e.max_nnz = cross_env_max_nnz();
  e.variant_max_nnz = 20000;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &e.ctx[0]));
  if (!e.ctx[0]) return msp_test_finish(NAME);
  e.nctx = 1;
  for (int b = MSP_BACKEND_CPU + 1; b <= MSP_BACKEND_CUDA && e.nctx < CROSS_MAX_CTX; b++) {
    msp_context ctx = NULL;
    msp_status st = msp_context_create((msp_backend)b, 0, &ctx);
    if (st == MSP_ERR_NOT_BUILT || st == MSP_ERR_NO_DEVICE) {
      printf("%s: backend %s left out: %s (%s)\n", NAME, msp_backend_name((msp_backend)b),
             msp_status_name(st), msp_last_error());
      continue;
    }
    CHECK(st == MSP_SUCCESS, "msp_context_create(%s): %s (%s)", msp_backend_name((msp_backend)b),
          msp_status_name(st), msp_last_error());
    if (st == MSP_SUCCESS) e.ctx[e.nctx++] = ctx;
  }
  if (e.nctx == 1) {
    msp_context_destroy(&e.ctx[0]);
    if (msp_test_failures) return msp_test_finish(NAME);
    return msp_test_skip(NAME, "no backend besides the CPU is built and has a device");
  }
  const char *quick = getenv("MSP_TEST_QUICK");
  cross_edge_cases(&e, !(quick && *quick));
  if (test_matrices_dir()) {
    int n = test_for_each_matrix(e.max_nnz, cross_collection_matrix, &e);
    printf("%s: %d matrices of the collection visited\n", NAME, n);
    CHECK(n > 0, "the collection has no eligible matrix");
  } else {
    printf("%s: the collection (MSP_MATRICES_DIR, ../shared/matrices) is absent: not crossed; "
           "the edge cases and generated matrices ran\n",
           NAME);
  }
  int rc = cross_finish(&e);
  for (int c = e.nctx - 1; c >= 0; c--)
    msp_context_destroy(&e.ctx[c]);
  return rc;
}

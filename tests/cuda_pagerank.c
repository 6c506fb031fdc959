// cuda_pagerank.c: PageRank on the CUDA backend against the long-double oracle and against the
// CPU backend (within 1e-14, the same iteration counts per read width), prtest.c's cases.
// Skipped (77) without CUDA or a device. MSP_TEST_QUICK leaves out the collection graphs (the
// compute-sanitizer runs).
#include "prtest.h"

#include <stdlib.h>

static const char *NAME = "cuda_pagerank";

int main(void) {
  msp_context gpu = NULL, cpu = NULL;
  const int rc = test_cuda_context(NAME, &gpu);
  if (rc >= 0) return rc;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  const char *quick = getenv("MSP_TEST_QUICK");
  if (cpu) prtest_run(gpu, cpu, quick && *quick);
  CHECK_OK(msp_context_destroy(&cpu));
  CHECK_OK(msp_context_destroy(&gpu));
  return msp_test_finish(NAME);
}

// test_pagerank.c: PageRank on the CPU against the long-double oracle: hand-made graphs, edge
// cases, errors, the same bits for any thread count, and the iteration counts of the CPMS modes
// on graphs of the collection (prtest.c).
#include "prtest.h"

static const char *NAME = "test_pagerank";

int main(void) {
  msp_context ctx = NULL, ref = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ref));
  if (ctx) prtest_run(ctx, NULL, 0);
  // the comparison path of cuda_pagerank, CPU against CPU (the same bits)
  if (ctx && ref) prtest_run(ctx, ref, 1);
  CHECK_OK(msp_context_destroy(&ref));
  CHECK_OK(msp_context_destroy(&ctx));
  return msp_test_finish(NAME);
}

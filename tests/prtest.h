// prtest.h: the PageRank test engine shared by test_pagerank (CPU) and cuda_pagerank (CUDA
// against the CPU): an independent long-double oracle, the edge cases, the collection graphs.
#ifndef MSP_PRTEST_H
#define MSP_PRTEST_H

#include "testlib.h"

// Run every PageRank check on ctx. With ref (a CPU context) every case also runs there and the
// two results must agree within 1e-14 (entrywise) with the same iteration counts per read width.
// `quick` leaves out the collection graphs (compute-sanitizer runs).
void prtest_run(msp_context ctx, msp_context ref, int quick);

#endif

// test_pagerank.c: PageRank on the CPU against the long-double oracle: hand-made graphs, edge
// cases, errors, the same bits for any thread count, and the iteration counts of the CPMS modes
// on graphs of the collection (prtest.c).
#include "prtest.h"

#include <string.h>

static const char *NAME = "test_pagerank";

// The monitor: called after every iteration with the history's change and the bits read, and a
// monitor that asks to stop ends the iteration there, with a report that says so.
typedef struct {
  int64_t calls, stop_at, bad;
  int64_t by_bits[5];
  const double *history;
} pr_log;
static int pr_monitor(void *data, int64_t iteration, double change, int read_bits) {
  pr_log *L = data;
  L->calls++;
  if (iteration != L->calls || (L->history && change != L->history[iteration - 1]) ||
      read_bits % 16 || read_bits < 16 || read_bits > 64)
    L->bad++;
  else
    L->by_bits[read_bits / 16]++;
  return L->stop_at > 0 && iteration >= L->stop_at;
}
static void monitor_case(msp_context ctx) {
  msp_matrix G = NULL;
  msp_vector p = NULL;
  double hist[1000];
  CHECK_OK(msp_matrix_generate(ctx, "rmat:10:8:3", &G));
  if (!G) return;
  CHECK_OK(msp_vector_create(ctx, msp_matrix_rows(G), &p));
  for (int q = 0; q < 2 && p; q++) {
    pr_log L;
    memset(&L, 0, sizeof L);
    L.history = hist;
    msp_pagerank_options o = msp_pagerank_options_default();
    o.precision = q ? MSP_PAGERANK_CPMS4 : MSP_PAGERANK_F64;
    o.monitor = pr_monitor;
    o.monitor_data = &L;
    msp_pagerank_report r;
    memset(&r, 0, sizeof r);
    r.history = hist;
    r.history_capacity = 1000;
    CHECK_OK(msp_pagerank(ctx, G, &o, p, &r));
    CHECK(r.converged && !r.stopped && L.calls == r.iterations && L.bad == 0,
          "monitor %d: converged %d stopped %d, %lld calls for %lld iterations, %lld wrong", q,
          r.converged, r.stopped, (long long)L.calls, (long long)r.iterations, (long long)L.bad);
    for (int w = 1; w <= 4; w++)
      CHECK(L.by_bits[w] == r.iterations_by_bits[w], "monitor %d: %lld calls at %d bits of %lld", q,
            (long long)L.by_bits[w], 16 * w, (long long)r.iterations_by_bits[w]);
    CHECK(!q || L.by_bits[1] > 0, "monitor cpms4: no 16-bit iteration");
    memset(&L, 0, sizeof L);
    L.stop_at = 5;
    memset(&r, 0, sizeof r);
    CHECK_OK(msp_pagerank(ctx, G, &o, p, &r));
    CHECK(r.stopped && !r.converged && r.iterations == 5 && L.calls == 5,
          "monitor %d stop at 5: stopped %d converged %d iterations %lld calls %lld", q, r.stopped,
          r.converged, (long long)r.iterations, (long long)L.calls);
  }
  msp_vector_destroy(&p);
  msp_matrix_destroy(&G);
}

int main(void) {
  msp_context ctx = NULL, ref = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ref));
  if (ctx) prtest_run(ctx, NULL, 0);
  // the comparison path of cuda_pagerank, CPU against CPU (the same bits)
  if (ctx && ref) prtest_run(ctx, ref, 1);
  if (ctx) monitor_case(ctx);
  CHECK_OK(msp_context_destroy(&ref));
  CHECK_OK(msp_context_destroy(&ctx));
  return msp_test_finish(NAME);
}

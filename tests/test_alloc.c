// test_alloc.c: a counting allocator makes each allocation fail in turn; every public call
// returns MSP_ERR_OUT_OF_MEMORY and nothing leaks.
#include "testlib.h"

#include <stdlib.h>
#include <string.h>

typedef msp_status (*scenario_fn)(void);

static const test_csr *g_m;

// Each scenario creates what it needs and destroys everything before returning.
static msp_status s_context(void) {
  msp_context c = NULL;
  msp_status st = msp_context_create(MSP_BACKEND_CPU, 0, &c);
  msp_context_destroy(&c);
  return st;
}

static msp_status s_matrix_spmv(void) {
  msp_context c = NULL;
  msp_matrix A = NULL, B = NULL;
  msp_vector x = NULL, y = NULL;
  msp_status st;
  double r;
  if ((st = msp_context_create(MSP_BACKEND_CPU, 0, &c))) goto exit;
  if ((st = test_csr_to_matrix(g_m, c, &A))) goto exit;
  if ((st = msp_vector_create(c, g_m->cols, &x))) goto exit;
  if ((st = msp_vector_create(c, g_m->rows, &y))) goto exit;
  if ((st = msp_vector_fill(x, 1.0))) goto exit;
  if ((st = msp_spmv(c, 1.0, A, x, 0.0, y))) goto exit;
  if ((st = msp_nrm2(c, y, &r))) goto exit;
  msp_convert_options o = msp_convert_options_default();
  o.format = MSP_FORMAT_COO;
  if ((st = msp_matrix_convert(c, A, &o, &B))) goto exit;
  if ((st = msp_spmv(c, 1.0, B, x, 0.0, y))) goto exit;
exit:
  msp_matrix_destroy(&A);
  msp_matrix_destroy(&B);
  msp_vector_destroy(&x);
  msp_vector_destroy(&y);
  msp_context_destroy(&c);
  return st;
}

static msp_status s_convert_all(void) {
  msp_context c = NULL;
  msp_matrix A = NULL, B = NULL;
  msp_status st;
  if ((st = msp_context_create(MSP_BACKEND_CPU, 0, &c))) goto exit;
  if ((st = test_csr_to_matrix(g_m, c, &A))) goto exit;
  for (int f = 0; f < MSP_FORMAT_COUNT; f++) {
    msp_convert_options o = msp_convert_options_default();
    o.format = (msp_format)f;
    o.max_fill = 1e9;
    st = msp_matrix_convert(c, A, &o, &B);
    msp_matrix_destroy(&B);
    if (st == MSP_ERR_NOT_SUPPORTED) continue; // formats without a CPU kernel yet
    if (st) goto exit;
  }
  st = MSP_SUCCESS;
exit:
  msp_matrix_destroy(&A);
  msp_context_destroy(&c);
  return st;
}

static msp_status s_generate(void) {
  msp_context c = NULL;
  msp_matrix A = NULL;
  msp_status st;
  if ((st = msp_context_create(MSP_BACKEND_CPU, 0, &c))) goto exit;
  if ((st = msp_matrix_generate(c, "stencil27:6", &A))) goto exit;
  msp_matrix_destroy(&A);
  st = msp_matrix_generate(c, "rmat:8:4:1", &A);
exit:
  msp_matrix_destroy(&A);
  msp_context_destroy(&c);
  return st;
}

static void run_scenario(const char *name, scenario_fn fn) {
  msp_allocator al = test_counting_allocator();
  CHECK_OK(msp_set_allocator(&al));
  test_alloc.fail_at = -1;
  test_alloc.live = 0;
  msp_status st = fn();
  CHECK(st == MSP_SUCCESS, "%s without failures: %s (%s)", name, msp_status_name(st),
        msp_last_error());
  CHECK(test_alloc.live == 0, "%s leaks %ld allocations without failures", name, test_alloc.live);
  int k;
  for (k = 0; k < 100000; k++) {
    test_alloc.fail_at = k;
    test_alloc.calls = 0;
    test_alloc.live = 0;
    st = fn();
    CHECK(test_alloc.live == 0, "%s: failing allocation %d leaks %ld allocations", name, k,
          test_alloc.live);
    if (st == MSP_SUCCESS && test_alloc.calls <= k) break; // every allocation has been failed once
    CHECK(st == MSP_ERR_OUT_OF_MEMORY, "%s: failing allocation %d gave %s (%s)", name, k,
          msp_status_name(st), msp_last_error());
  }
  printf("test_alloc: %s: %d allocation points each failed once\n", name, k);
  CHECK_OK(msp_set_allocator(NULL));
}

int main(void) {
  test_csr m;
  CHECK(test_csr_random(&m, 300, 250, 6, 3) == 0, "generator");
  g_m = &m;
  run_scenario("context", s_context);
  run_scenario("matrix + vectors + spmv + coo", s_matrix_spmv);
  run_scenario("convert to every format", s_convert_all);
  run_scenario("generate", s_generate);
  test_csr_free(&m);
  return msp_test_finish("test_alloc");
}

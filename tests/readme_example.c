// readme_example.c: the C example of the README, compiled and run as a test.
#include <mixsparse.h>
#include <stdio.h>

int main(void) {
  msp_context ctx;
  msp_matrix A;
  msp_vector x, y;
  // 3x3 tridiagonal [2 -1 0; -1 2 -1; 0 -1 2] in CSR (int64 row pointers, int32 columns).
  int64_t rowptr[] = {0, 2, 5, 7};
  int32_t colind[] = {0, 1, 0, 1, 2, 1, 2};
  double values[] = {2, -1, -1, 2, -1, -1, 2}, hx[] = {1, 2, 3}, hy[3];
  if (msp_context_create(MSP_BACKEND_AUTO, 0, &ctx) || // CUDA when a GPU is usable, else CPU
      msp_matrix_from_csr(ctx, 3, 3, rowptr, colind, values, 0, &A) ||
      msp_vector_create(ctx, 3, &x) || msp_vector_create(ctx, 3, &y) || msp_vector_set(x, hx) ||
      msp_spmv(ctx, 1.0, A, x, 0.0, y) || // y = A x, on the device when there is one
      msp_vector_get(y, hy)) {            // copies y back once
    fprintf(stderr, "mixsparse: %s\n", msp_last_error());
    return 1;
  }
  printf("y = %g %g %g on %s\n", hy[0], hy[1], hy[2], msp_backend_name(msp_context_backend(ctx)));
  msp_vector_destroy(&x), msp_vector_destroy(&y), msp_matrix_destroy(&A);
  msp_context_destroy(&ctx);
  return !(hy[0] == 0 && hy[1] == 0 && hy[2] == 4);
}

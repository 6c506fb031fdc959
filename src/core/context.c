// context.c: contexts, the backend registry and device queries.
#include "internal.h"

// The only place that knows whether CUDA was compiled in (STYLE.md section 6).
const msp__backend *msp__backend_cuda_registered(void);
const msp__backend *msp__backend_cuda_registered(void) {
#ifdef MSP_HAVE_CUDA
  return msp__backend_cuda();
#else
  return NULL;
#endif
}

msp_status msp_context_create(msp_backend backend, int device, msp_context *ctx) {
  msp_status st = MSP_SUCCESS;
  msp_context c = NULL;
  MSP_CHECK_ARG(ctx, "msp_context_create: ctx is NULL");
  *ctx = NULL;
  MSP_CHECK_ARG(backend == MSP_BACKEND_AUTO || backend == MSP_BACKEND_CPU ||
                    backend == MSP_BACKEND_CUDA,
                "msp_context_create: unknown backend %d", (int)backend);
  MSP_CHECK_ARG(device >= 0, "msp_context_create: device ordinal %d is negative", device);
  const msp__backend *cuda = msp__backend_cuda_registered();
  const msp__backend *chosen = NULL;
  if (backend == MSP_BACKEND_CUDA) {
    if (!cuda)
      return msp__error(MSP_ERR_NOT_BUILT,
                        "CUDA backend requested, but this build of mixsparse has no CUDA "
                        "backend (nvcc was not found at configure time)");
    chosen = cuda;
  } else if (backend == MSP_BACKEND_AUTO) {
    int n = 0;
    chosen = msp__backend_cpu();
    if (cuda && cuda->device_count(&n) == MSP_SUCCESS && n > device) chosen = cuda;
  } else {
    chosen = msp__backend_cpu();
  }
  MSP_TRY(MSP_ALLOC_ZERO(c, 1, "context"));
  c->backend = chosen;
  c->kind = chosen->kind;
  c->device = device;
  if (chosen->context_init) {
    st = chosen->context_init(c);
    if (st != MSP_SUCCESS && backend == MSP_BACKEND_AUTO && chosen != msp__backend_cpu()) {
      // AUTO falls back to the CPU when the device cannot be initialised.
      c->backend = msp__backend_cpu();
      c->kind = MSP_BACKEND_CPU;
      st = c->backend->context_init ? c->backend->context_init(c) : MSP_SUCCESS;
    }
    if (st != MSP_SUCCESS) goto exit;
  }
  *ctx = c;
  c = NULL;
exit:
  msp__free(c);
  return st;
}

void msp_context_destroy(msp_context *ctx) {
  if (!ctx || !*ctx) return;
  if ((*ctx)->backend->context_fini) (*ctx)->backend->context_fini(*ctx);
  msp__free(*ctx);
  *ctx = NULL;
}

msp_backend msp_context_backend(const msp_context ctx) {
  return ctx ? ctx->kind : MSP_BACKEND_CPU;
}

msp_status msp_context_synchronize(msp_context ctx) {
  MSP_CHECK_ARG(ctx, "msp_context_synchronize: ctx is NULL");
  return ctx->backend->synchronize ? ctx->backend->synchronize(ctx) : MSP_SUCCESS;
}

msp_status msp_device_count(int *count) {
  MSP_CHECK_ARG(count, "msp_device_count: count is NULL");
  *count = 0;
  const msp__backend *cuda = msp__backend_cuda_registered();
  if (!cuda) return MSP_SUCCESS;
  return cuda->device_count(count);
}

msp_status msp_device_info(int ordinal, msp_device_props *props) {
  MSP_CHECK_ARG(props, "msp_device_info: props is NULL");
  const msp__backend *cuda = msp__backend_cuda_registered();
  if (!cuda)
    return msp__error(MSP_ERR_NOT_BUILT, "msp_device_info: this build has no CUDA backend");
  int n = 0;
  msp_status st = cuda->device_count(&n);
  if (st != MSP_SUCCESS) return st;
  if (n == 0) return msp__error(MSP_ERR_NO_DEVICE, "msp_device_info: no CUDA device present");
  MSP_CHECK_ARG(ordinal >= 0 && ordinal < n, "msp_device_info: device %d outside 0..%d", ordinal,
                n - 1);
  return cuda->device_info(ordinal, props);
}

// context.c: contexts, the backend registry, device queries, handle checks and the memory
// budget.
// sysconf(_SC_PHYS_PAGES) under -std=c11.
#define _DEFAULT_SOURCE
#include "internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

// C++ (the CUDA sources) sees the live count as a plain int64_t: the layouts must agree.
_Static_assert(sizeof(_Atomic int64_t) == sizeof(int64_t) &&
                   _Alignof(_Atomic int64_t) == _Alignof(int64_t),
               "an atomic int64_t must have the layout of an int64_t");

// The only place that knows whether CUDA was compiled in (STYLE.md section 6).
const msp__backend *msp__backend_cuda_registered(void);
const msp__backend *msp__backend_cuda_registered(void) {
#ifdef MSP_HAVE_CUDA
  return msp__backend_cuda();
#else
  return NULL;
#endif
}

// For tests (tests/cuda_bdmp.c): 0 when the device records of A and B (CUDA matrices) hold the
// same arrays, byte for byte, and the same scalars; else 1 with the first difference in why; -1
// without CUDA.
int msp__cuda_matrix_same(const msp_matrix A, const msp_matrix B, char *why, size_t n);
int msp__device_records_same(const msp_matrix A, const msp_matrix B, char *why, size_t n) {
#ifdef MSP_HAVE_CUDA
  return msp__cuda_matrix_same(A, B, why, n);
#else
  (void)A;
  (void)B;
  snprintf(why, n, "no CUDA backend compiled in");
  return -1;
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
  c->magic = MSP__MAGIC_CONTEXT;
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

msp_status msp_context_destroy(msp_context *ctx) {
  if (!ctx || !*ctx) return MSP_SUCCESS;
  msp_status st = msp__check_context(*ctx, "msp_context_destroy", "ctx");
  if (st != MSP_SUCCESS) return st;
  msp_context c = *ctx;
  // Freeing the context under live objects would leave them pointing at freed memory: refuse,
  // and free nothing, so the caller can still destroy them and then the context.
  const int64_t live = atomic_load(&c->live);
  if (live > 0)
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "msp_context_destroy: %lld matrices and vectors made with this context are "
                      "still alive; destroy them first (nothing was freed)",
                      (long long)live);
  if (c->backend->context_fini) c->backend->context_fini(c);
  c->magic = MSP__MAGIC_FREED;
  msp__free(c);
  *ctx = NULL;
  return MSP_SUCCESS;
}

// ---- handle checks --------------------------------------------------------------------------
// The magic number is read through a volatile pointer so the compiler cannot assume the object
// is intact: the whole point is to look at memory that may have been destroyed.
static uint32_t read_magic(const volatile uint32_t *m) {
  return *m;
}

static msp_status bad_handle(uint32_t magic, const char *fn, const char *what, const char *kind) {
  if (magic == MSP__MAGIC_FREED)
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "%s: %s: handle already destroyed", fn, what);
  return msp__error(MSP_ERR_INVALID_ARGUMENT, "%s: %s is not a mixsparse %s", fn, what, kind);
}

msp_status msp__check_context(const msp_context c, const char *fn, const char *what) {
  MSP_CHECK_ARG(c, "%s: %s is NULL", fn, what);
  uint32_t m = read_magic(&c->magic);
  if (m != MSP__MAGIC_CONTEXT) return bad_handle(m, fn, what, "context");
  return MSP_SUCCESS;
}

msp_status msp__check_matrix(const msp_matrix A, const char *fn, const char *what) {
  MSP_CHECK_ARG(A, "%s: %s is NULL", fn, what);
  uint32_t m = read_magic(&A->magic);
  if (m != MSP__MAGIC_MATRIX) return bad_handle(m, fn, what, "matrix");
  if (A->ctx && read_magic(&A->ctx->magic) != MSP__MAGIC_CONTEXT)
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "%s: the context of %s was destroyed", fn, what);
  return MSP_SUCCESS;
}

msp_status msp__check_vector(const msp_vector v, const char *fn, const char *what) {
  MSP_CHECK_ARG(v, "%s: %s is NULL", fn, what);
  uint32_t m = read_magic(&v->magic);
  if (m != MSP__MAGIC_VECTOR) return bad_handle(m, fn, what, "vector");
  if (read_magic(&v->ctx->magic) != MSP__MAGIC_CONTEXT)
    return msp__error(MSP_ERR_INVALID_ARGUMENT, "%s: the context of %s was destroyed", fn, what);
  return MSP_SUCCESS;
}

msp_status msp__check_operands(const char *fn, const msp_context ctx, const msp_matrix A,
                               const char *aname, int nv, const msp_vector *v,
                               const char *const *names) {
  msp_status st = MSP_SUCCESS;
  // Every handle before any of its fields is read: a reused block must not be followed.
  MSP_TRY(msp__check_context(ctx, fn, "ctx"));
  if (aname) MSP_TRY(msp__check_matrix(A, fn, aname));
  for (int k = 0; k < nv; k++)
    MSP_TRY(msp__check_vector(v[k], fn, names[k]));
  if (aname && A->ctx != ctx)
    return msp__error(MSP_ERR_INVALID_ARGUMENT,
                      "%s: %s belongs to another context (an object is used only with the "
                      "context that made it)",
                      fn, aname);
  for (int k = 0; k < nv; k++)
    if (v[k]->ctx != ctx)
      return msp__error(MSP_ERR_INVALID_ARGUMENT,
                        "%s: vector %s belongs to another context (an object is used only with "
                        "the context that made it)",
                        fn, names[k]);
exit:
  return st;
}

int msp__matrix_ok(const msp_matrix A) {
  return A && read_magic(&A->magic) == MSP__MAGIC_MATRIX;
}
int msp__vector_ok(const msp_vector v) {
  return v && read_magic(&v->magic) == MSP__MAGIC_VECTOR;
}

// Atomic: threads sharing one context create and destroy objects at the same time.
void msp__context_attach(msp_context ctx) {
  if (ctx) atomic_fetch_add(&ctx->live, 1);
}
void msp__context_detach(msp_context ctx) {
  if (!ctx) return;
  int64_t n = atomic_load(&ctx->live);
  while (n > 0 && !atomic_compare_exchange_weak(&ctx->live, &n, n - 1)) {
  }
}

// ---- memory budget ----------------------------------------------------------------------------
// The caller's limit in bytes (0: the physical memory). One value for the process.
static _Atomic size_t memory_limit = 0;

msp_status msp_set_memory_limit(size_t bytes) {
  memory_limit = bytes;
  return MSP_SUCCESS;
}

size_t msp__bytes_mul_add(size_t a, size_t b, size_t c) {
  if (b && a > SIZE_MAX / b) return SIZE_MAX;
  size_t p = a * b;
  return p > SIZE_MAX - c ? SIZE_MAX : p + c;
}

// The machine's physical memory, asked once (sysconf is a system call; the allocator asks for
// the limit at every allocation).
static size_t physical_memory(void) {
  static _Atomic size_t known = 0;
  size_t m = atomic_load(&known);
  if (m) return m;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  // unknown: let the allocator decide
  m = pages <= 0 || page <= 0 ? SIZE_MAX : msp__bytes_mul_add((size_t)pages, (size_t)page, 0);
  atomic_store(&known, m);
  return m;
}

size_t msp__memory_limit_bytes(void) {
  return memory_limit ? memory_limit : physical_memory();
}

msp_status msp__memory_check(size_t need, const char *what) {
  const size_t limit = msp__memory_limit_bytes(), used = msp__memory_in_use();
  const size_t room = used < limit ? limit - used : 0;
  if (need <= room) return MSP_SUCCESS;
  const char *whose = memory_limit ? "the limit set by msp_set_memory_limit" : "physical memory";
  if (need == SIZE_MAX)
    return msp__error(MSP_ERR_OUT_OF_MEMORY,
                      "%s needs more bytes than a size_t can count; %zu bytes available (%zu in "
                      "use of the %zu bytes of %s)",
                      what, room, used, limit, whose);
  return msp__error(MSP_ERR_OUT_OF_MEMORY,
                    "%s needs %zu bytes (%.3g GB); %zu bytes available (%zu in use by mixsparse "
                    "of the %zu bytes (%.3g GB) of %s)",
                    what, need, (double)need / 1e9, room, used, limit, (double)limit / 1e9, whose);
}

msp_backend msp_context_backend(const msp_context ctx) {
  return msp__check_context(ctx, "msp_context_backend", "ctx") == MSP_SUCCESS ? ctx->kind
                                                                              : MSP_BACKEND_CPU;
}

msp_status msp_context_synchronize(msp_context ctx) {
  msp_status st = msp__check_context(ctx, "msp_context_synchronize", "ctx");
  if (st != MSP_SUCCESS) return st;
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

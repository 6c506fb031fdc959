// backend.cu: the CUDA backend's dispatch table: contexts, device arrays, vectors, device queries.
#include "cuda_internal.cuh"
#include "precision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

// ---- errors -------------------------------------------------------------------------------------
static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

// C++ linkage, as declared in cuda_internal.cuh (only the .cu files call it).
msp_status msp__cuda_status(cudaError_t e, const char *call, const char *file, int line) {
  msp_status s = MSP_ERR_DEVICE;
  if (e == cudaErrorMemoryAllocation) s = MSP_ERR_OUT_OF_MEMORY;
  // A missing driver or device is "no usable device", not a fault of the device.
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
      e == cudaErrorDevicesUnavailable)
    s = MSP_ERR_NO_DEVICE;
  // Clear a non-sticky error so that the next check does not report it again.
  (void)cudaGetLastError();
  return msp__error(s, "%s:%d: %s failed: %s (%s)", base_name(file), line, call,
                    cudaGetErrorString(e), cudaGetErrorName(e));
}

// ---- context ------------------------------------------------------------------------------------
static void cuda_context_fini(msp_context ctx) {
  msp__cuda_ctx *c = msp__cuda(ctx);
  if (!c) return;
  // Errors are ignored: this releases what exists, and nothing can be reported from here.
  (void)cudaSetDevice(ctx->device);
  if (c->stream) (void)cudaStreamSynchronize(c->stream);
  if (c->aux_stream) (void)cudaStreamSynchronize(c->aux_stream);
  if (c->fork) (void)cudaEventDestroy(c->fork);
  if (c->join) (void)cudaEventDestroy(c->join);
  if (c->aux_stream) (void)cudaStreamDestroy(c->aux_stream);
  if (c->stream) (void)cudaStreamDestroy(c->stream);
  if (c->d_scratch) (void)cudaFree(c->d_scratch);
  if (c->h_result) (void)cudaFreeHost(c->h_result);
  if (c->d_ywork) (void)cudaFree(c->d_ywork);
  if (c->d_xwork) (void)cudaFree(c->d_xwork);
  (void)cudaGetLastError();
  msp__free(c);
  ctx->impl = NULL;
}

static msp_status cuda_context_init(msp_context ctx) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = NULL;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    // The runtime says "driver version is insufficient" also when there is no driver at all:
    // tell the two apart by whether the driver library loads.
    const char *why = cudaGetErrorString(e);
    if (e == cudaErrorInsufficientDriver) {
      void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
      why = lib ? "the installed NVIDIA driver is older than this CUDA runtime needs"
                : "no NVIDIA driver is installed (libcuda.so.1 cannot be loaded)";
      if (lib) dlclose(lib);
    } else if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
      why = "the driver reports no CUDA device";
    }
    return msp__error(MSP_ERR_NO_DEVICE, "CUDA backend: no usable CUDA device: %s (CUDA error: %s)",
                      why, e != cudaSuccess ? cudaGetErrorString(e) : "none, 0 devices");
  }
  if (ctx->device < 0 || ctx->device >= count)
    return msp__error(MSP_ERR_NO_DEVICE,
                      "CUDA backend: device %d requested, but only devices 0..%d are present",
                      ctx->device, count - 1);
  MSP_TRY(MSP_ALLOC_ZERO(c, 1, "CUDA context"));
  ctx->impl = c; // from here on cuda_context_fini releases whatever was made
  MSP_CUDA_TRY(cudaSetDevice(ctx->device));
  MSP_CUDA_TRY(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, ctx->device));
  MSP_CUDA_TRY(cudaDeviceGetAttribute(&c->l2_bytes, cudaDevAttrL2CacheSize, ctx->device));
  // Non-blocking streams: no implicit synchronisation with the legacy default stream.
  MSP_CUDA_TRY(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  MSP_CUDA_TRY(cudaStreamCreateWithFlags(&c->aux_stream, cudaStreamNonBlocking));
  MSP_CUDA_TRY(cudaEventCreateWithFlags(&c->fork, cudaEventDisableTiming));
  MSP_CUDA_TRY(cudaEventCreateWithFlags(&c->join, cudaEventDisableTiming));
  MSP_CUDA_TRY(cudaMalloc((void **)&c->d_scratch, MSP__CUDA_SCRATCH * sizeof(double)));
  MSP_CUDA_TRY(cudaMallocHost((void **)&c->h_result, MSP__CUDA_RESULTS * sizeof(double)));
  memset(c->h_result, 0, MSP__CUDA_RESULTS * sizeof(double));
exit:
  if (st != MSP_SUCCESS) cuda_context_fini(ctx);
  return st;
}

static msp_status cuda_synchronize(msp_context ctx) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_ctx *c = msp__cuda(ctx);
  MSP_CUDA_TRY(cudaStreamSynchronize(c->aux_stream));
  MSP_CUDA_TRY(cudaStreamSynchronize(c->stream));
exit:
  return st;
}

// ---- matrices -----------------------------------------------------------------------------------
static void cuda_matrix_free(msp_matrix A) {
  msp__cuda_matrix *m = (msp__cuda_matrix *)A->dev;
  if (!m) return;
  if (A->ctx) (void)cudaSetDevice(A->ctx->device);
  // cudaFree waits for kernels still using the arrays.
  for (int i = 0; i < MSP__CUDA_MAX_ARRAYS; i++)
    if (m->d[i]) (void)cudaFree(m->d[i]);
  (void)cudaGetLastError();
  msp__free(m->extra);
  msp__free(m);
  A->dev = NULL;
}

extern "C" msp_status msp__cuda_matrix_new(msp_matrix A, msp__cuda_matrix **out) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  *out = NULL;
  if (A->dev)
    return msp__error(MSP_ERR_INTERNAL, "msp__cuda_matrix_new: the matrix already has device data");
  MSP_TRY(MSP_ALLOC_ZERO(m, 1, "CUDA matrix record"));
  A->dev = m;
  *out = m;
exit:
  return st;
}

// Allocate device array slot `slot` of `bytes`, left unfilled (bytes == 0 leaves it NULL); the
// slot is recorded at once, so that matrix_free releases it if anything after fails.
extern "C" msp_status msp__cuda_matrix_reserve(msp__cuda_matrix *m, int slot, size_t bytes) {
  void *p = NULL;
  if (slot < 0 || slot >= MSP__CUDA_MAX_ARRAYS)
    return msp__error(MSP_ERR_INTERNAL, "msp__cuda_matrix_put: slot %d outside 0..%d", slot,
                      MSP__CUDA_MAX_ARRAYS - 1);
  if (m->d[slot])
    return msp__error(MSP_ERR_INTERNAL, "msp__cuda_matrix_put: slot %d is already filled", slot);
  if (bytes == 0) return MSP_SUCCESS;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    const msp_status st = msp__cuda_status(e, "cudaMalloc", __FILE__, __LINE__);
    return msp__error(st,
                      "CUDA backend: cannot allocate %zu bytes of device memory for matrix "
                      "array %d (%s)",
                      bytes, slot, cudaGetErrorString(e));
  }
  m->d[slot] = p;
  m->bytes[slot] = bytes;
  if (slot + 1 > m->count) m->count = slot + 1;
  return MSP_SUCCESS;
}

extern "C" msp_status msp__cuda_matrix_put(msp_context ctx, msp__cuda_matrix *m, int slot,
                                           const void *host, size_t bytes) {
  msp_status st = MSP_SUCCESS;
  MSP_TRY(msp__cuda_matrix_reserve(m, slot, bytes));
  if (bytes == 0) return MSP_SUCCESS;
  if (host)
    MSP_CUDA_TRY(
        cudaMemcpyAsync(m->d[slot], host, bytes, cudaMemcpyHostToDevice, msp__cuda(ctx)->stream));
  else
    MSP_CUDA_TRY(cudaMemsetAsync(m->d[slot], 0, bytes, msp__cuda(ctx)->stream));
exit:
  return st;
}

// One entry per format: the function that builds its device arrays (filled in make_tables).
typedef struct {
  msp__backend backend;
  msp__cuda_upload_fn upload[MSP_FORMAT_COUNT];
} cuda_tables;
static const cuda_tables &tables(void);

static msp_status cuda_matrix_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  // one upload per format, whatever the storage precision (one device layout per format)
  msp__cuda_upload_fn f =
      (unsigned)A->format >= MSP_FORMAT_COUNT ? NULL : tables().upload[A->format];
  if (!f)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "matrix upload: format %s is not supported by the cuda backend",
                      msp_format_name(A->format) ? msp_format_name(A->format) : "(unknown)");
  MSP_CUDA_TRY(cudaSetDevice(ctx->device));
  MSP_TRY(f(ctx, A));
  // Uploads run once per matrix: wait here so that a failed copy is reported by its creator,
  // not by the first product.
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  if (st != MSP_SUCCESS) cuda_matrix_free(A);
  return st;
}

// ---- vectors ------------------------------------------------------------------------------------
// Device allocation of `bytes` for a vector of v->n entries into *p, with a message saying the
// size.
static msp_status vector_malloc(msp_vector v, size_t bytes, const char *what, void **p) {
  cudaError_t e = cudaMalloc(p, bytes);
  if (e != cudaSuccess) {
    *p = NULL;
    msp_status st = msp__cuda_status(e, "cudaMalloc", __FILE__, __LINE__);
    return msp__error(st,
                      "CUDA backend: cannot allocate %zu bytes of device memory for %s of %lld "
                      "entries (%s)",
                      bytes, what, (long long)v->n, cudaGetErrorString(e));
  }
  return MSP_SUCCESS;
}

// The device copy holds the encoded values (n * bytes per value), the fixed-point scales (one
// per MSP_VEC_FX_BLOCK values) and the overflow counter of results written into the vector.
// What is allocated before a failure is released by cuda_vector_free.
static msp_status cuda_vector_alloc(msp_vector v) {
  msp_status st = MSP_SUCCESS;
  // At least one element so that a length-0 vector still has a valid device pointer.
  const int64_t n = v->n > 0 ? v->n : 1;
  const size_t vb = msp__prec_bytes(v->prec);
  const cudaStream_t s = msp__cuda(v->ctx)->stream;
  if ((uint64_t)n > SIZE_MAX / 8)
    return msp__error(MSP_ERR_OUT_OF_MEMORY, "CUDA backend: a vector of %lld values is too large",
                      (long long)v->n);
  MSP_CUDA_TRY(cudaSetDevice(v->ctx->device));
  {
    void *p = NULL;
    MSP_TRY(vector_malloc(v, (size_t)n * vb, "a vector", &p));
    v->d_data = p;
    // An empty vector's one element is 0: kernels may read it (ELL's padding reads x at column
    // 0 of a matrix without columns) and multiply it by a 0 that must stay 0.
    if (v->n == 0) MSP_CUDA_TRY(cudaMemsetAsync(v->d_data, 0, vb, s));
    MSP_TRY(vector_malloc(v, 2 * sizeof(unsigned long long), "a vector's range counters", &p));
    v->d_range = (unsigned long long *)p;
    // On the context's stream: it does not wait for the legacy default stream (it is
    // non-blocking), so a plain cudaMemset there could land after the upload or the product that
    // follows and zero its scales or counters.
    MSP_CUDA_TRY(cudaMemsetAsync(v->d_range, 0, 2 * sizeof(unsigned long long), s));
    if (v->nscales > 0) {
      MSP_TRY(vector_malloc(v, (size_t)v->nscales * sizeof(double), "a vector's scales", &p));
      v->d_scales = (double *)p;
      MSP_CUDA_TRY(cudaMemsetAsync(v->d_scales, 0, (size_t)v->nscales * sizeof(double), s));
    }
  }
exit:
  return st;
}

static void cuda_vector_free(msp_vector v) {
  (void)cudaSetDevice(v->ctx->device);
  if (v->d_data) (void)cudaFree(v->d_data);
  if (v->d_scales) (void)cudaFree(v->d_scales);
  if (v->d_range) (void)cudaFree(v->d_range);
  (void)cudaGetLastError();
  v->d_data = NULL;
  v->d_scales = NULL;
  v->d_range = NULL;
}

// The encoded bytes and scales travel, nothing else.
static msp_status cuda_vector_to_device(msp_vector v) {
  msp_status st = MSP_SUCCESS;
  cudaStream_t s = msp__cuda(v->ctx)->stream;
  // Pageable source: the call returns once the data is staged, so the host copy may change
  // right after; kernels queued later on the same stream see the new device data.
  if (v->n > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(v->d_data, v->h_data, (size_t)v->n * msp__prec_bytes(v->prec),
                                 cudaMemcpyHostToDevice, s));
  if (v->nscales > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(v->d_scales, v->h_scales, (size_t)v->nscales * sizeof(double),
                                 cudaMemcpyHostToDevice, s));
  // The host values replace the device ones, and with them any overflow counted there.
  MSP_CUDA_TRY(cudaMemsetAsync(v->d_range, 0, 2 * sizeof(unsigned long long), s));
exit:
  return st;
}

// Back to the host, with the counts of results that overflowed or were flushed to 0 on the device
// since the last time (added to v->range_count and v->range_flushed for msp_vector_get to
// report; the device counters restart).
static msp_status cuda_vector_to_host(msp_vector v) {
  msp_status st = MSP_SUCCESS;
  cudaStream_t s = msp__cuda(v->ctx)->stream;
  unsigned long long *h_count = (unsigned long long *)msp__cuda(v->ctx)->h_result;
  if (v->n > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(v->h_data, v->d_data, (size_t)v->n * msp__prec_bytes(v->prec),
                                 cudaMemcpyDeviceToHost, s));
  if (v->nscales > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(v->h_scales, v->d_scales, (size_t)v->nscales * sizeof(double),
                                 cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(
      cudaMemcpyAsync(h_count, v->d_range, 2 * sizeof *h_count, cudaMemcpyDeviceToHost, s));
  MSP_CUDA_TRY(cudaMemsetAsync(v->d_range, 0, 2 * sizeof *h_count, s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
  v->range_count += (int64_t)h_count[0];
  v->range_flushed += (int64_t)h_count[1];
exit:
  return st;
}

// The caller's device values (msp_vector_set_device) replace v's: device to device on the
// context's stream, then a wait, so that the caller may reuse d_src and the values are in place
// for work on any stream. The context's stream does not wait for the legacy default stream by
// itself (it is non-blocking), so that stream is waited for first: a DLPack producer orders its
// pending writes of d_src before it. Values written by the caller carry no overflow count.
static msp_status cuda_vector_copy_device_in(msp_vector v, const void *d_src) {
  msp_status st = MSP_SUCCESS;
  cudaStream_t s = msp__cuda(v->ctx)->stream;
  MSP_CUDA_TRY(cudaSetDevice(v->ctx->device));
  MSP_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
  if (v->n > 0)
    MSP_CUDA_TRY(cudaMemcpyAsync(v->d_data, d_src, (size_t)v->n * msp__prec_bytes(v->prec),
                                 cudaMemcpyDeviceToDevice, s));
  MSP_CUDA_TRY(cudaMemsetAsync(v->d_range, 0, 2 * sizeof(unsigned long long), s));
  MSP_CUDA_TRY(cudaStreamSynchronize(s));
exit:
  return st;
}

// ---- device queries (Filippone, PSBLAS-Extensions reference guide section 3) ------------------
static msp_status cuda_device_count(int *count) {
  int n = 0;
  // No driver or no device: none usable, which is not an error of this call.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  *count = n;
  return MSP_SUCCESS;
}

static msp_status cuda_device_info(int ordinal, msp_device_props *props) {
  msp_status st = MSP_SUCCESS;
  cudaDeviceProp p;
  int v = 0;
  memset(props, 0, sizeof *props);
  props->ordinal = ordinal;
  MSP_CUDA_TRY(cudaGetDeviceProperties(&p, ordinal));
  snprintf(props->name, sizeof props->name, "%s", p.name);
  props->total_memory_bytes = p.totalGlobalMem;
  // CUDA 13 dropped the clock and bus fields from cudaDeviceProp: ask for the attributes.
#define ATTR(field, attr)                                                                          \
  do {                                                                                             \
    MSP_CUDA_TRY(cudaDeviceGetAttribute(&v, attr, ordinal));                                       \
    props->field = v;                                                                              \
  } while (0)
  ATTR(multiprocessors, cudaDevAttrMultiProcessorCount);
  ATTR(warp_size, cudaDevAttrWarpSize);
  ATTR(max_threads_per_mp, cudaDevAttrMaxThreadsPerMultiProcessor);
  ATTR(registers_per_block, cudaDevAttrMaxRegistersPerBlock);
  ATTR(memory_clock_khz, cudaDevAttrMemoryClockRate);
  ATTR(memory_bus_width_bits, cudaDevAttrGlobalMemoryBusWidth);
  ATTR(has_uva, cudaDevAttrUnifiedAddressing);
  ATTR(compute_major, cudaDevAttrComputeCapabilityMajor);
  ATTR(compute_minor, cudaDevAttrComputeCapabilityMinor);
  MSP_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, ordinal));
  props->l2_cache_bytes = (size_t)(v > 0 ? v : 0);
#undef ATTR
  // Double data rate: two transfers per clock, bus width in bits.
  props->peak_bandwidth_gbs = 2.0 * (double)props->memory_clock_khz * 1e3 *
                              (double)props->memory_bus_width_bits / 8.0 / 1e9;
exit:
  return st;
}

// ---- the table ----------------------------------------------------------------------------------
// GMRES's Krylov basis and Jacobi's pointwise product (basis.cu).
extern "C" {
msp_status msp__cuda_basis_alloc(msp_context, int64_t, int, msp_precision, msp__basis **);
void msp__cuda_basis_free(msp_context, msp__basis *);
msp_status msp__cuda_basis_store(msp_context, msp__basis *, int, msp_vector);
msp_status msp__cuda_basis_project(msp_context, const msp__basis *, int, int, msp_vector, double *,
                                   double *);
msp_status msp__cuda_basis_subtract(msp_context, const msp__basis *, int, int, const double *,
                                    msp_vector, double *, double *);
msp_status msp__cuda_basis_combine(msp_context, const msp__basis *, int, const double *,
                                   msp_vector);
msp_status msp__cuda_basis_dcgs2_project(msp_context, const msp__basis *, int, msp_vector,
                                         double *);
msp_status msp__cuda_basis_dcgs2_update(msp_context, msp__basis *, int, const double *, double,
                                        const double *, msp_vector, int);
msp_status msp__cuda_pmul(msp_context, msp_vector, msp_vector, msp_vector);
msp_status msp__cuda_ilu_upload(msp_context, int64_t, const int64_t *, const int32_t *,
                                const double *, const int64_t *, void **);
msp_status msp__cuda_ilu_apply(msp_context, void *, msp_vector, msp_vector);
void msp__cuda_ilu_free(msp_context, void *);
}

extern "C" int msp__cuda_matrix_same(const msp_matrix A, const msp_matrix B, char *why, size_t n) {
  const msp__cuda_matrix *a = (const msp__cuda_matrix *)A->dev,
                         *b = (const msp__cuda_matrix *)B->dev;
  int same = 1;
  if (!a || !b) {
    snprintf(why, n, "a matrix has no device record");
    return 1;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) {
    snprintf(why, n, "cudaDeviceSynchronize failed");
    return 1;
  }
  for (int k = 0; k < MSP__CUDA_MAX_ARRAYS && same; k++) {
    if (a->bytes[k] != b->bytes[k] || !a->d[k] != !b->d[k]) {
      snprintf(why, n, "array %d: %zu bytes against %zu", k, a->bytes[k], b->bytes[k]);
      return 1;
    }
    if (a->bytes[k] == 0) continue;
    unsigned char *ha = (unsigned char *)malloc(a->bytes[k]),
                  *hb = (unsigned char *)malloc(a->bytes[k]);
    if (!ha || !hb || cudaMemcpy(ha, a->d[k], a->bytes[k], cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(hb, b->d[k], a->bytes[k], cudaMemcpyDeviceToHost) != cudaSuccess) {
      snprintf(why, n, "array %d: cannot read it back", k);
      same = 0;
    } else if (memcmp(ha, hb, a->bytes[k]) != 0) {
      size_t at = 0;
      while (ha[at] == hb[at])
        at++;
      snprintf(why, n, "array %d (%zu bytes): byte %zu is %u against %u", k, a->bytes[k], at,
               ha[at], hb[at]);
      same = 0;
    }
    free(ha);
    free(hb);
  }
  for (int k = 0; k < 12 && same; k++) {
    if (a->i64[k] != b->i64[k]) {
      snprintf(why, n, "scalar %d: %lld against %lld", k, (long long)a->i64[k],
               (long long)b->i64[k]);
      same = 0;
    }
  }
  return same ? 0 : 1;
}

// BDMP built on the device, by its variant.
static msp_status cuda_bdmp_convert(msp_context ctx, const msp_matrix A, msp_matrix B) {
  return B->format == MSP_FORMAT_BDMP_TCKI ? msp__cuda_bdmp_tcki_convert(ctx, A, B)
                                           : msp__cuda_bdmp_pbp_convert(ctx, A, B);
}

// nvcc's host compiler (g++) has no array designators, so the table is filled by assignments,
// one line per slot; a format adds its two lines (spmv and upload) below.

static cuda_tables make_tables(void) {
  cuda_tables t;
  memset(&t, 0, sizeof t);
  msp__backend &b = t.backend;
  b.name = "cuda";
  b.kind = MSP_BACKEND_CUDA;
  b.context_init = cuda_context_init;
  b.context_fini = cuda_context_fini;
  b.synchronize = cuda_synchronize;
  b.matrix_upload = cuda_matrix_upload;
  b.matrix_free = cuda_matrix_free;
  b.vector_alloc = cuda_vector_alloc;
  b.vector_free = cuda_vector_free;
  b.vector_to_device = cuda_vector_to_device;
  b.vector_to_host = cuda_vector_to_host;
  b.vector_copy_device_in = cuda_vector_copy_device_in;
  b.dot = msp__cuda_dot;
  b.nrm2 = msp__cuda_nrm2;
  b.nrm1 = msp__cuda_nrm1;
  b.axpby = msp__cuda_axpby;
  b.scale = msp__cuda_scale;
  b.copy = msp__cuda_copy;
  b.fill = msp__cuda_fill;
  b.basis_alloc = msp__cuda_basis_alloc;
  b.basis_free = msp__cuda_basis_free;
  b.basis_store = msp__cuda_basis_store;
  b.basis_project = msp__cuda_basis_project;
  b.basis_subtract = msp__cuda_basis_subtract;
  b.basis_combine = msp__cuda_basis_combine;
  b.basis_dcgs2_project = msp__cuda_basis_dcgs2_project;
  b.basis_dcgs2_update = msp__cuda_basis_dcgs2_update;
  b.pmul = msp__cuda_pmul;
  b.ilu_upload = msp__cuda_ilu_upload;
  b.ilu_apply = msp__cuda_ilu_apply;
  b.ilu_free = msp__cuda_ilu_free;
  b.bdmp_convert = cuda_bdmp_convert;
  b.pr_upload = msp__cuda_pr_upload;
  b.pr_transpose = msp__cuda_pr_transpose;
  b.pr_free = msp__cuda_pr_free;
  b.pr_step = msp__cuda_pr_step;
  b.device_count = cuda_device_count;
  b.device_info = cuda_device_info;

  // ---- per-format slots (src/cuda/<fmt>.cu); a slot left NULL answers MSP_ERR_NOT_SUPPORTED --
  // A product goes through msp__cuda_spmv_x (spmv_x.cu): an x whose pair with the values has no
  // compiled kernel is read through an f64 copy.
  b.spmv[MSP_FORMAT_CSR] = msp__cuda_spmv_any_x<msp__cuda_csr_spmv>;
  t.upload[MSP_FORMAT_CSR] = msp__cuda_csr_upload;
  b.spmv[MSP_FORMAT_COO] = msp__cuda_spmv_any_x<msp__cuda_coo_spmv>;
  t.upload[MSP_FORMAT_COO] = msp__cuda_coo_upload;
  b.spmv[MSP_FORMAT_ELL] = msp__cuda_spmv_any_x<msp__cuda_ell_spmv>;
  t.upload[MSP_FORMAT_ELL] = msp__cuda_ell_upload;
  b.spmv[MSP_FORMAT_HLL] = msp__cuda_spmv_any_x<msp__cuda_hll_spmv>;
  t.upload[MSP_FORMAT_HLL] = msp__cuda_hll_upload;
  b.spmv[MSP_FORMAT_DIA] = msp__cuda_spmv_any_x<msp__cuda_dia_spmv>;
  t.upload[MSP_FORMAT_DIA] = msp__cuda_dia_upload;
  b.spmv[MSP_FORMAT_HDIA] = msp__cuda_spmv_any_x<msp__cuda_hdia_spmv>;
  t.upload[MSP_FORMAT_HDIA] = msp__cuda_hdia_upload;
  b.spmv[MSP_FORMAT_HYB] = msp__cuda_spmv_any_x<msp__cuda_hyb_spmv>;
  t.upload[MSP_FORMAT_HYB] = msp__cuda_hyb_upload;
  b.spmv[MSP_FORMAT_BDMP_PBP] = msp__cuda_spmv_any_x<msp__cuda_bdmp_pbp_spmv>;
  t.upload[MSP_FORMAT_BDMP_PBP] = msp__cuda_bdmp_pbp_upload;
  b.spmv[MSP_FORMAT_BDMP_TCKI] = msp__cuda_spmv_any_x<msp__cuda_bdmp_tcki_spmv>;
  t.upload[MSP_FORMAT_BDMP_TCKI] = msp__cuda_bdmp_tcki_upload;
  return t;
}

// Built once when the program is loaded (dynamic initialisation of a file-scope constant).
static const cuda_tables g_tables = make_tables();
static const cuda_tables &tables(void) {
  return g_tables;
}

extern "C" const msp__backend *msp__backend_cuda(void) {
  return &tables().backend;
}

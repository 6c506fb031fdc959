// bench_device.cu: bandwidth ceilings, L2 flush, event timing and error measure of mixsparse-bench.
#include "bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace {

const int kThreads = 256;
int g_blocks = 0;            // grid of the streaming kernels: 8 blocks of 256 per SM
double2 *g_flush = nullptr;  // L2 flush buffer
size_t g_flush_n = 0;        // its length in double2
double *g_partial = nullptr; // one partial sum per block
bool g_broken = false;

// Sum a stream of 16-byte loads; grid-stride, four loads in flight per thread; one partial sum
// per block written once. Used for the read ceiling and (on a buffer larger than L2) to flush
// L2 with reads only, so that no dirty lines are written back inside a timed region.
__global__ void __launch_bounds__(kThreads)
    read_kernel(const double2 *__restrict__ a, size_t n, double *__restrict__ out) {
  double s0 = 0.0, s1 = 0.0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    double2 v0 = a[i], v1 = a[i + stride], v2 = a[i + 2 * stride], v3 = a[i + 3 * stride];
    s0 += (v0.x + v1.x) + (v2.x + v3.x);
    s1 += (v0.y + v1.y) + (v2.y + v3.y);
  }
  for (; i < n; i += stride) {
    double2 v = a[i];
    s0 += v.x;
    s1 += v.y;
  }
  double s = s0 + s1;
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_down_sync(0xffffffffu, s, o);
  __shared__ double warp_sum[kThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0.0;
    for (int w = 0; w < kThreads / 32; w++)
      t += warp_sum[w];
    out[blockIdx.x] = t;
  }
}

// Non-zero contents (never time on zeros: METHOD.md).
__global__ void fill_kernel(double *a, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    a[i] = 1.0 + (double)(i % 1021) * 1e-3;
}

// Keep the stream busy for ~us microseconds so that the host has queued the start event, the
// product and the stop event before the device reaches them (no launch gap inside the timing).
__global__ void spin_kernel(long long ns) {
  long long t0 = clock64();
  // clock64 counts SM cycles; SM clocks reach about 2 GHz at most, so 2 cycles per ns spins at
  // least ns.
  while (clock64() - t0 < 2 * ns) {
  }
}

bool is_sticky(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorAssert:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
    return true;
  default:
    return false;
  }
}

} // namespace

bool bench_cuda_ok(cudaError_t e, const char *what, std::string *why) {
  if (e == cudaSuccess) return true;
  if (is_sticky(e)) g_broken = true;
  if (why)
    *why = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  return false;
}

bool bench_device_broken() {
  return g_broken;
}

bool bench_device_init(int device, std::string *why) {
  int sms = 0, l2 = 0;
  if (!bench_cuda_ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                     "cudaDeviceGetAttribute(SMs)", why))
    return false;
  if (!bench_cuda_ok(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device),
                     "cudaDeviceGetAttribute(L2)", why))
    return false;
  g_blocks = sms * (2048 / kThreads);
  size_t flush_bytes = std::max((size_t)4 * (size_t)l2, (size_t)128 << 20);
  g_flush_n = flush_bytes / sizeof(double2);
  if (!bench_cuda_ok(cudaMalloc(&g_flush, g_flush_n * sizeof(double2)),
                     "cudaMalloc(L2 flush buffer)", why))
    return false;
  if (!bench_cuda_ok(cudaMalloc(&g_partial, (size_t)g_blocks * sizeof(double)),
                     "cudaMalloc(partial sums)", why))
    return false;
  fill_kernel<<<g_blocks, kThreads>>>((double *)g_flush, 2 * g_flush_n);
  if (!bench_cuda_ok(cudaGetLastError(), "fill_kernel launch", why)) return false;
  return bench_cuda_ok(cudaDeviceSynchronize(), "fill_kernel", why);
}

void bench_device_fini() {
  cudaFree(g_flush);
  cudaFree(g_partial);
  g_flush = nullptr;
  g_partial = nullptr;
}

static bool median_of(cudaStream_t s, int warm, int reps,
                      const std::function<bool(std::string *)> &fn, double *med, std::string *why) {
  cudaEvent_t a = nullptr, b = nullptr;
  std::vector<float> t;
  bool ok = bench_cuda_ok(cudaEventCreate(&a), "cudaEventCreate", why) &&
            bench_cuda_ok(cudaEventCreate(&b), "cudaEventCreate", why);
  for (int w = 0; ok && w < warm; w++)
    ok = fn(why);
  if (ok) ok = bench_cuda_ok(cudaStreamSynchronize(s), "warm-up", why);
  for (int r = 0; ok && r < reps; r++) {
    float ms = 0;
    spin_kernel<<<1, 1, 0, s>>>(20000); // no launch gap inside the timed region
    ok = bench_cuda_ok(cudaGetLastError(), "spin launch", why) &&
         bench_cuda_ok(cudaEventRecord(a, s), "cudaEventRecord", why) && fn(why) &&
         bench_cuda_ok(cudaEventRecord(b, s), "cudaEventRecord", why) &&
         bench_cuda_ok(cudaEventSynchronize(b), "cudaEventSynchronize", why) &&
         bench_cuda_ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime", why);
    if (ok) t.push_back(ms);
  }
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  if (!ok) return false;
  std::sort(t.begin(), t.end());
  *med = t[t.size() / 2];
  return true;
}

bool bench_measure_bandwidth(cudaStream_t s, size_t bytes, double *read_gbs, double *copy_gbs,
                             std::string *why) {
  double2 *buf = nullptr;
  const size_t n = bytes / sizeof(double2);
  bool ok =
      bench_cuda_ok(cudaMalloc(&buf, n * sizeof(double2)), "cudaMalloc(bandwidth buffer)", why);
  double ms = 0;
  if (ok) {
    fill_kernel<<<g_blocks, kThreads, 0, s>>>((double *)buf, 2 * n);
    ok = bench_cuda_ok(cudaGetLastError(), "fill_kernel launch", why);
  }
  if (ok) {
    ok = median_of(
        s, 3, 20,
        [&](std::string *w) {
          read_kernel<<<g_blocks, kThreads, 0, s>>>(buf, n, g_partial);
          return bench_cuda_ok(cudaGetLastError(), "read_kernel launch", w);
        },
        &ms, why);
    if (ok) *read_gbs = (double)(n * sizeof(double2)) / (ms * 1e6);
  }
  if (ok) {
    // Copy the first half onto the second: bytes read + bytes written = the whole buffer.
    const size_t half = (n / 2) * sizeof(double2);
    ok = median_of(
        s, 3, 20,
        [&](std::string *w) {
          return bench_cuda_ok(
              cudaMemcpyAsync((char *)buf + half, buf, half, cudaMemcpyDeviceToDevice, s),
              "cudaMemcpyAsync", w);
        },
        &ms, why);
    if (ok) *copy_gbs = (double)(2 * half) / (ms * 1e6);
  }
  if (buf) cudaFree(buf);
  return ok;
}

bool bench_time(const bench_timing &ts, const std::function<bool(std::string *)> &fn,
                double *median_ms, double *min_ms, double *max_ms, std::string *why) {
  cudaEvent_t a = nullptr, b = nullptr;
  std::vector<float> t;
  t.reserve((size_t)ts.reps);
  bool ok = bench_cuda_ok(cudaEventCreate(&a), "cudaEventCreate", why) &&
            bench_cuda_ok(cudaEventCreate(&b), "cudaEventCreate", why);
  for (int w = 0; ok && w < ts.warmup; w++)
    ok = fn(why);
  if (ok) ok = bench_cuda_ok(cudaStreamSynchronize(ts.stream), "warm-up runs", why);
  for (int r = 0; ok && r < ts.reps; r++) {
    if (ts.flush_l2)
      read_kernel<<<g_blocks, kThreads, 0, ts.stream>>>(g_flush, g_flush_n, g_partial);
    else
      spin_kernel<<<1, 1, 0, ts.stream>>>(20000);
    float ms = 0;
    ok = bench_cuda_ok(cudaGetLastError(), "flush launch", why) &&
         bench_cuda_ok(cudaEventRecord(a, ts.stream), "cudaEventRecord", why) && fn(why) &&
         bench_cuda_ok(cudaEventRecord(b, ts.stream), "cudaEventRecord", why) &&
         bench_cuda_ok(cudaEventSynchronize(b), "timed run", why) &&
         bench_cuda_ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime", why);
    if (ok) t.push_back(ms);
  }
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  if (!ok || t.empty()) {
    if (ok && why) *why = "no timed runs";
    return false;
  }
  std::sort(t.begin(), t.end());
  *median_ms = t[t.size() / 2];
  *min_ms = t.front();
  *max_ms = t.back();
  return true;
}

static __global__ void empty_kernel() {}

bool bench_launch_floor(const bench_timing &ts, double *median_ms, std::string *why) {
  double lo = 0, hi = 0;
  return bench_time(
      ts,
      [&](std::string *w) {
        empty_kernel<<<1, 32, 0, ts.stream>>>();
        return bench_cuda_ok(cudaGetLastError(), "empty_kernel launch", w);
      },
      median_ms, &lo, &hi, why);
}

double bench_max_error(const double *y, const double *ref, const double *absref, int64_t n) {
  double worst = 0.0;
  for (int64_t i = 0; i < n; i++) {
    if (!std::isfinite(y[i])) return INFINITY;
    double d = std::fabs(y[i] - ref[i]);
    if (d == 0.0) continue;
    double e = d / std::max(absref[i], 1e-300);
    if (e > worst) worst = e;
  }
  return worst;
}

void bench_row_derive(bench_row *r, double read_gbs) {
  if (r->ms <= 0) return;
  r->gbs = r->bytes / (r->ms * 1e6);
  r->pct_read = read_gbs > 0 ? 100.0 * r->gbs / read_gbs : 0.0;
  r->gflops = 2.0 * (double)r->nnz / (r->ms * 1e6);
  // A fast wrong answer must not count as a win. Rounding stays far below these limits (fp64
  // near 1e-16 per unit of (|A||x|)_i; fp32 values, x and sums at most ~1e-7 x the row length);
  // a wrong kernel lands near 1 or at inf.
  // (f32 and mixed, the BDMP rows, store values in fp32: their limit is fp32's.)
  const double limit = r->err_limit > 0 ? r->err_limit : r->precision == "f64" ? 1e-8 : 1e-2;
  if (r->status == "ok" && !(r->err <= limit)) {
    char b[120];
    snprintf(b, sizeof b, "max error %.2e above %.1e: excluded from the summaries", r->err, limit);
    r->status = "wrong";
    r->note = r->note.empty() ? std::string(b) : std::string(b) + "; " + r->note;
  }
}

// bdmp_convert.cuh: what the two BDMP conversions on the device share (bdmp_convert.cu: the
// source, the precision selection, PBP's packing and device layout; bdmp_tcki_convert.cu: TCKI,
// whose CSR-like part is packed as PBP is).
#ifndef MSP_BDMP_CONVERT_CUH
#define MSP_BDMP_CONVERT_CUH

#include "csr.cuh"

#include "bdmp.h"

#include <cub/device/device_scan.cuh>

#define CV_WARPS 8
#define CV_THREADS (CV_WARPS * 32)
#define CV_FULL 0xffffffffu

// Stream-ordered scratch, freed at the end whatever happens.
struct msp__cv_scratch {
  cudaStream_t s;
  void *p[64];
  int n = 0;
  template <typename T> msp_status get(T **out, int64_t count, const char *what) {
    void *q = NULL;
    if (n == (int)(sizeof p / sizeof p[0]))
      return msp__error(MSP_ERR_INTERNAL, "bdmp conversion (cuda): too many scratch arrays");
    const size_t bytes = (size_t)(count > 0 ? count : 1) * sizeof(T);
    const cudaError_t e = cudaMallocAsync(&q, bytes, s);
    if (e != cudaSuccess) {
      msp_status st = msp__cuda_status(e, "cudaMallocAsync", __FILE__, __LINE__);
      return msp__error(st,
                        "bdmp conversion (cuda): cannot allocate %zu bytes of device memory for "
                        "%s (%s)",
                        bytes, what, cudaGetErrorString(e));
    }
    p[n++] = q;
    *out = (T *)q;
    return MSP_SUCCESS;
  }
  ~msp__cv_scratch() {
    for (int k = 0; k < n; k++)
      cudaFreeAsync(p[k], s);
  }
};

// An exclusive sum of n values on the scratch's stream (a CUDA error returned, a status in *st).
template <typename T>
static cudaError_t msp__cv_exclusive_sum(msp__cv_scratch &sc, const T *in, T *out, int64_t n,
                                         msp_status *st) {
  size_t bytes = 0;
  void *tmp = NULL;
  cudaError_t e = cub::DeviceScan::ExclusiveSum(NULL, bytes, in, out, n, sc.s);
  if (e != cudaSuccess) return e;
  if ((*st = sc.get((char **)&tmp, (int64_t)bytes, "a scan")) != MSP_SUCCESS) return cudaSuccess;
  return cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, n, sc.s);
}

// A device slot of the matrix record, allocated and left unfilled (the conversion writes it):
// backend.cu's allocation of msp__cuda_matrix_put without its copy or zero fill.
extern "C" msp_status msp__cuda_matrix_reserve(msp__cuda_matrix *m, int slot, size_t bytes);

// The device time of a conversion: events on the stream, destroyed with it.
struct msp__cv_timer {
  cudaEvent_t ev[2] = {NULL, NULL};
  msp_status start(cudaStream_t s);
  msp_status stop(cudaStream_t s, double *ms);
  ~msp__cv_timer() {
    for (int k = 0; k < 2; k++)
      if (ev[k]) cudaEventDestroy(ev[k]);
  }
};
// The start of both conversions: the timer started; the source's fp64 CSR on the device (A's
// device arrays when A is an fp64 CSR matrix of ctx's CUDA backend, else B's host CSR copied into
// scratch); the precision selection of bdmp.c for B's options: e64[k] = 1 when entry k is stored
// in fp64, n64[i] the fp64 entries of row i (both in scratch), and the record's report fields
// (lambda, digits, bound, tiles, fp32 tiles) in *info.
msp_status msp__cv_begin(msp_context ctx, msp__cv_scratch &tmp, msp__cv_timer &timer,
                         const msp_matrix A, const msp_matrix B, const int64_t **rowptr,
                         const int32_t **colind, const double **val, uint8_t **e64, int64_t **n64,
                         msp__bdmp_info *info);
// A PBP record (bdmp.h) over a device CSR of rows rows and nnz entries with precisions e64 and
// fp64 counts n64 per row, into m's CSR slots in the device layout of kernel k (bdmp.cu:
// SLOT_VAL the fp64 stream, SLOT_VAL2 the fp32 one, SLOT_META, the CSR structure and merge-path
// plan, i64[6] the layout). h_rowptr: the same row pointers on the host, or NULL (then only those
// the plan reads are read back from the device). *meta: the precision
// words in scratch (2 * ceil(nnz / 32) uint32); *nnz64: the fp64 entries.
msp_status msp__cv_pbp_pack(msp_context ctx, msp__cv_scratch &tmp, msp__cuda_matrix *m,
                            msp_kernel k, int64_t rows, int64_t nnz, const int64_t *rowptr,
                            const int64_t *h_rowptr, const int32_t *colind, const double *val,
                            const uint8_t *e64, const int64_t *n64, uint2 **meta, int64_t *nnz64);
// Tiles: a warp per block row, lane r (< 16) on row 16 br + r, walking the rows' columns in
// merge order (the host's tiling).
#define CV_NONE 0xffffffffu // no block column left in a lane's row
struct brow_cursor {
  int64_t cur, end;
  __device__ brow_cursor(int64_t rows, const int64_t *rowptr, int64_t br, int lane) {
    const int64_t i = br * MSP_BDMP_TILE + (lane & 15);
    cur = end = 0;
    if (lane < MSP_BDMP_TILE && i < rows) {
      cur = __ldg((const long long *)rowptr + i);
      end = __ldg((const long long *)rowptr + i + 1);
    }
  }
  // The next tile's block column (the smallest among the rows' cursors), CV_NONE when done.
  __device__ unsigned next(const int32_t *colind) const {
    const unsigned mine = cur < end ? (unsigned)__ldg(colind + cur) >> 4 : CV_NONE;
    return __reduce_min_sync(CV_FULL, mine);
  }
  __device__ bool in(const int32_t *colind, unsigned bc) const {
    return cur < end && ((unsigned)__ldg(colind + cur) >> 4) == bc;
  }
};

#endif

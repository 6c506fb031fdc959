// bdmp.cu: CUDA BDMP-PBP (fp32 and fp64 CSR parts on two streams) and BDMP-TCKI (warp per tile
// run).
//
// PBP device arrays (msp__cuda_matrix slots):
//   d[0] rp32 int64[rows+1]  d[1] ci32 int32[nnz32]  d[2] v32 float[nnz32]
//   d[3] rp64 int64[rows+1]  d[4] ci64 int32[nnz64]  d[5] v64 double[nnz64]
//   d[6] t32  double[rows]: the fp32 part's row sums (scratch made at upload, not per product)
//   i64[0], i64[1]: vector group sizes of the fp32 and fp64 parts
// TCKI device arrays (OFF: uint32 when every offset and count fits, else int64; i64[2] says which):
//   d[0] chunk_part int32[nchunks]: the chunk's slot in `part`, -1 when its block row is one chunk
//   d[1] tile_col int32[ntiles]
//   d[2] tinfo uint16[ntiles]: format | fp64 flag (low byte), ELL width (high byte)
//   d[3] chunk_br int32[nchunks]   d[4] eoff OFF[ntiles+1]   d[5] voff OFF[ntiles]
//   d[6] idx uint8[]   d[7] val32 float[]   d[8] val64 double[]
//   d[9] chunk_t0 OFF[nchunks+1]: chunk k covers tiles chunk_t0[k] .. chunk_t0[k+1]
//   d[10] runs int64[3 * nsplit]: per split block row: block row, first part slot, slot count
//   d[11] part double[nparts * 16]: partial sums of block rows split over several chunks
//   i64[0] nchunks, i64[1] nsplit, i64[2] sizeof(OFF)
// A chunk is the run of tiles one warp takes: at most TCKI_CHUNK_TILES tiles and about
// TCKI_CHUNK_ENTRIES entries of one block row, so a long block row is shared by several warps
// (balanced work per warp, paper 3.2.2). Their partial sums go to `part` and a second kernel adds
// them in chunk order: no atomics, the same bits on every run. Every block row has at least one
// chunk (an empty one for an empty block row) so that every y_i is written. The tile pointers of
// the host layout are not needed on the device (chunks carry their tile ranges).
#include "cuda_internal.cuh"

#include "bdmp.h"

#include <string.h>

#define PBP_THREADS 256
#define TCKI_WARPS 8
#define TCKI_THREADS (TCKI_WARPS * 32)
#define TCKI_CHUNK_TILES 32 // at most a warp: lane j holds tile j's metadata
#define TCKI_CHUNK_ENTRIES 2048
#define FIX_THREADS 256

// ---- PBP ---------------------------------------------------------------------------------------
// CSR-vector (paper Algorithm 1): G lanes per row, shuffle reduction in a fixed tree. TO_TMP: the
// fp32 part writes its raw row sums to tmp (y is added after the join); otherwise y = alpha s +
// beta y.
template <typename V, int G, bool TO_TMP>
__global__ void __launch_bounds__(PBP_THREADS)
    pbp_kernel(int64_t rows, const int64_t *__restrict__ rp, const int32_t *__restrict__ ci,
               const V *__restrict__ v, const double *__restrict__ x, double alpha, double beta,
               double *__restrict__ out) {
  const int64_t tid = (int64_t)blockIdx.x * PBP_THREADS + threadIdx.x;
  const int64_t row = tid / G;
  const int lane = (int)(tid % G);
  double s = 0.0;
  if (row < rows) {
    const int64_t end = __ldg(rp + row + 1);
    for (int64_t j = __ldg(rp + row) + lane; j < end; j += G)
      s += (double)__ldg(v + j) * __ldg(x + __ldg(ci + j));
  }
#pragma unroll
  for (int off = G / 2; off > 0; off /= 2)
    s += __shfl_down_sync(0xffffffffu, s, off, G);
  if (row < rows && lane == 0) {
    if (TO_TMP)
      out[row] = s;
    else
      out[row] = beta == 0.0 ? alpha * s : alpha * s + beta * out[row];
  }
}

__global__ void pbp_add(int64_t rows, double alpha, const double *__restrict__ t32,
                        double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * PBP_THREADS + threadIdx.x;
  if (i < rows) y[i] += alpha * t32[i];
}

static int group_size(int64_t rows, int64_t nnz) {
  const double mean = rows > 0 ? (double)nnz / (double)rows : 0.0;
  int g = 1;
  while (g < 32 && (double)g < mean)
    g *= 2;
  return g;
}

template <typename V, bool TO_TMP>
static msp_status launch_pbp(cudaStream_t s, int g, int64_t rows, const int64_t *rp,
                             const int32_t *ci, const V *v, const double *x, double alpha,
                             double beta, double *out) {
  msp_status st = MSP_SUCCESS;
  const unsigned blocks = msp__cuda_blocks(rows * g, PBP_THREADS);
#define PBP_LAUNCH_(G)                                                                             \
  pbp_kernel<V, G, TO_TMP><<<blocks, PBP_THREADS, 0, s>>>(rows, rp, ci, v, x, alpha, beta, out)
  switch (g) {
  case 1:
    PBP_LAUNCH_(1);
    break;
  case 2:
    PBP_LAUNCH_(2);
    break;
  case 4:
    PBP_LAUNCH_(4);
    break;
  case 8:
    PBP_LAUNCH_(8);
    break;
  case 16:
    PBP_LAUNCH_(16);
    break;
  default:
    PBP_LAUNCH_(32);
    break;
  }
#undef PBP_LAUNCH_
  MSP_CUDA_CHECK_LAUNCH("pbp_kernel");
exit:
  return st;
}

extern "C" msp_status msp__cuda_bdmp_pbp_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)A->fmt;
  if (!P) return msp__error(MSP_ERR_INTERNAL, "bdmp-pbp upload (cuda): no host data");
  const int64_t rows = A->rows, n32 = P->info.nnz32, n64 = P->info.nnz64;
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 0, P->rp32, (size_t)(rows + 1) * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 1, P->ci32, (size_t)n32 * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 2, P->v32, (size_t)n32 * sizeof(float)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 3, P->rp64, (size_t)(rows + 1) * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 4, P->ci64, (size_t)n64 * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 5, P->v64, (size_t)n64 * sizeof(double)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 6, NULL, (size_t)rows * sizeof(double)));
  m->i64[0] = group_size(rows, n32);
  m->i64[1] = group_size(rows, n64);
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  return st;
}

// The BDMP kernels read x and write y as fp64 arrays: other vector precisions are refused until
// they are templates over the vector loaders like the other formats' kernels.
static msp_status f64_vectors(const char *fn, const msp_vector x, const msp_vector y) {
  if (x->prec == MSP_PRECISION_F64 && y->prec == MSP_PRECISION_F64) return MSP_SUCCESS;
  return msp__error(MSP_ERR_NOT_SUPPORTED,
                    "%s (cuda): x (%s) and y (%s) must be f64 vectors; BDMP reads and writes "
                    "only fp64 vectors on the GPU for now",
                    fn, msp_precision_name(x->prec), msp_precision_name(y->prec));
}

// The fp32 part runs on aux_stream while the fp64 part runs on the context's stream (fork / join
// events of msp__cuda_ctx), then y += alpha t32 on the stream: the two precisions' units and
// memory streams overlap (paper 3.2.1).
extern "C" msp_status msp__cuda_bdmp_pbp_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                              msp_vector x, double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  if ((st = f64_vectors("bdmp-pbp spmv", x, y)) != MSP_SUCCESS) return st;
  if (A->rows == 0) return MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  const msp__bdmp_pbp *P = (const msp__bdmp_pbp *)A->fmt;
  if (!m || !P) return msp__error(MSP_ERR_INTERNAL, "bdmp-pbp spmv (cuda): no device data");
  msp__cuda_ctx *c = msp__cuda(ctx);
  const int64_t rows = A->rows;
  double *t32 = (double *)m->d[6];
  const bool has32 = P->info.nnz32 > 0;
  if (has32) {
    MSP_CUDA_TRY(cudaEventRecord(c->fork, c->stream));
    MSP_CUDA_TRY(cudaStreamWaitEvent(c->aux_stream, c->fork, 0));
    MSP_TRY((launch_pbp<float, true>(c->aux_stream, (int)m->i64[0], rows, (const int64_t *)m->d[0],
                                     (const int32_t *)m->d[1], (const float *)m->d[2],
                                     (const double *)x->d_data, alpha, beta, t32)));
    MSP_CUDA_TRY(cudaEventRecord(c->join, c->aux_stream));
  }
  MSP_TRY((launch_pbp<double, false>(c->stream, (int)m->i64[1], rows, (const int64_t *)m->d[3],
                                     (const int32_t *)m->d[4], (const double *)m->d[5],
                                     (const double *)x->d_data, alpha, beta, (double *)y->d_data)));
  if (has32) {
    MSP_CUDA_TRY(cudaStreamWaitEvent(c->stream, c->join, 0));
    pbp_add<<<msp__cuda_blocks(rows, PBP_THREADS), PBP_THREADS, 0, c->stream>>>(
        rows, alpha, t32, (double *)y->d_data);
    MSP_CUDA_CHECK_LAUNCH("pbp_add");
  }
exit:
  return st;
}

// ---- TCKI --------------------------------------------------------------------------------------
__device__ __forceinline__ int64_t ld_off(const uint32_t *p) {
  return (int64_t)__ldg(p);
}
__device__ __forceinline__ int64_t ld_off(const int64_t *p) {
  return (int64_t)__ldg((const long long *)p);
}

// One warp per chunk (at most 32 tiles). Lane j first loads the metadata of the chunk's tile j,
// so the per-tile loop reads it with shuffles instead of a chain of dependent global loads, and
// the x segment of the next tile is loaded while the current one is computed. For a tile, lane l
// works on in-tile row r = l & 15 with half h = l >> 4: ELL slots k = h, h + 2, ... (the 32 lanes
// read 32 consecutive slots: coalesced, paper Algorithm 4), CSR entries rp[r] + h, + 2, ... (two
// lanes per row, Algorithm 3), COO entries (at most 5: density below 0.02) by the lanes of half
// 0, each picking its row's entries in order. The 16-entry x segment is staged in shared memory
// (zeros past the last column). Padding slots are skipped. Each lane sums its tiles in order and
// the halves are added at the end (lane r gets lane r + 16's sum): a fixed order, so repeated
// runs give the same bits.
template <typename OFF>
__global__ void __launch_bounds__(TCKI_THREADS)
    tcki_kernel(int64_t nchunks, int64_t rows, int64_t cols, const int32_t *__restrict__ chunk_br,
                const OFF *__restrict__ chunk_t0, const int32_t *__restrict__ chunk_part,
                const int32_t *__restrict__ tile_col, const uint16_t *__restrict__ tinfo,
                const OFF *__restrict__ eoff, const OFF *__restrict__ voff,
                const uint8_t *__restrict__ idx, const float *__restrict__ val32,
                const double *__restrict__ val64, const double *__restrict__ x, double alpha,
                double beta, double *__restrict__ y, double *__restrict__ part) {
  __shared__ double xs_all[TCKI_WARPS][MSP_BDMP_TILE];
  const unsigned full = 0xffffffffu;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t chunk = (int64_t)blockIdx.x * TCKI_WARPS + warp;
  if (chunk >= nchunks) return; // the whole warp leaves together
  double *xs = xs_all[warp];
  const int r = lane & 15, h = lane >> 4;
  const int64_t t0 = ld_off(chunk_t0 + chunk);
  const int nt = (int)(ld_off(chunk_t0 + chunk + 1) - t0); // <= TCKI_CHUNK_TILES = 32
  int my_col = 0, my_n = 0;
  unsigned my_info = 0;
  long long my_e = 0, my_v = 0;
  if (lane < nt) {
    const int64_t t = t0 + lane;
    my_col = __ldg(tile_col + t);
    my_info = __ldg(tinfo + t);
    my_e = ld_off(eoff + t);
    my_n = (int)(ld_off(eoff + t + 1) - my_e);
    my_v = ld_off(voff + t);
  }
  double xn = 0.0; // x segment of the next tile, one entry per lane < 16
  if (nt > 0) {
    const int64_t c = (int64_t)__shfl_sync(full, my_col, 0) * MSP_BDMP_TILE + r;
    if (h == 0 && c < cols) xn = __ldg(x + c);
  }
  double acc = 0.0;
  for (int j = 0; j < nt; j++) {
    const unsigned info = __shfl_sync(full, my_info, j);
    const int64_t eo = __shfl_sync(full, my_e, j);
    const int64_t vo = __shfl_sync(full, my_v, j);
    const int n = __shfl_sync(full, my_n, j);
    __syncwarp();
    if (h == 0) xs[r] = xn;
    __syncwarp();
    xn = 0.0;
    if (j + 1 < nt) { // uniform over the warp
      const int64_t c = (int64_t)__shfl_sync(full, my_col, j + 1) * MSP_BDMP_TILE + r;
      if (h == 0 && c < cols) xn = __ldg(x + c);
    }
    const int fmt = (int)(info & 3u), w = (int)(info >> 8);
    const bool f64 = (info & MSP__TILE_F64) != 0;
    const uint8_t *ix = idx + eo;
    const float *v32 = val32 + vo;
    const double *v64 = val64 + vo;
    if (fmt == MSP__TILE_COO) {
      if (h == 0) {
        for (int e = 0; e < n; e++) {
          const unsigned b = __ldg(ix + e);
          if ((int)(b >> 4) == r)
            acc += (f64 ? __ldg(v64 + e) : (double)__ldg(v32 + e)) * xs[b & 15u];
        }
      }
      continue;
    }
    const int ew = fmt == MSP__TILE_CSR ? 0 : w;
#pragma unroll 4
    for (int k = h; k < ew; k += 2) {
      const int s = k * MSP_BDMP_TILE + r;
      const unsigned b = __ldg(ix + s);
      const double v = f64 ? __ldg(v64 + s) : (double)__ldg(v32 + s);
      if (!(b & MSP__TILE_PAD)) acc += v * xs[b & 15u];
    }
    if (fmt == MSP__TILE_ELL) continue;
    const uint8_t *rp = ix + MSP_BDMP_TILE * ew;
    const uint8_t *cx = rp + MSP_BDMP_TILE + 1;
    const int base = MSP_BDMP_TILE * ew;
    const int q1 = __ldg(rp + r + 1);
    for (int q = __ldg(rp + r) + h; q < q1; q += 2) {
      acc +=
          (f64 ? __ldg(v64 + base + q) : (double)__ldg(v32 + base + q)) * xs[__ldg(cx + q) & 15u];
    }
  }
  acc += __shfl_down_sync(full, acc, 16);
  if (lane >= MSP_BDMP_TILE) return;
  const int cp = __ldg(chunk_part + chunk);
  if (cp >= 0) {
    part[(int64_t)cp * MSP_BDMP_TILE + r] = acc;
  } else {
    const int64_t i = (int64_t)__ldg(chunk_br + chunk) * MSP_BDMP_TILE + r;
    if (i < rows) y[i] = beta == 0.0 ? alpha * acc : alpha * acc + beta * y[i];
  }
}

// Rows of block rows split over several chunks: their partial sums in chunk order.
__global__ void tcki_fixup(int64_t nsplit, int64_t rows, const int64_t *__restrict__ runs,
                           const double *__restrict__ part, double alpha, double beta,
                           double *__restrict__ y) {
  const int64_t tid = (int64_t)blockIdx.x * FIX_THREADS + threadIdx.x;
  const int64_t q = tid / MSP_BDMP_TILE;
  const int r = (int)(tid % MSP_BDMP_TILE);
  if (q >= nsplit) return;
  const int64_t br = runs[3 * q], p0 = runs[3 * q + 1], np = runs[3 * q + 2];
  const int64_t i = br * MSP_BDMP_TILE + r;
  if (i >= rows) return;
  double s = 0.0;
  for (int64_t k = 0; k < np; k++)
    s += part[(p0 + k) * MSP_BDMP_TILE + r];
  y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
}

// Chunks of T's tiles (see the top of the file): chunk_br, chunk_t0 (nchunks + 1 entries),
// chunk_part and the runs of split block rows. With NULL arrays only counts.
static void tcki_chunks(const msp__bdmp_tcki *T, int32_t *chunk_br, int64_t *chunk_t0,
                        int32_t *chunk_part, int64_t *runs, int64_t *nchunks, int64_t *nsplit,
                        int64_t *nparts) {
  int64_t k = 0, ns = 0, np = 0;
  for (int64_t br = 0; br < T->nbrows; br++) {
    const int64_t first = k, tend = T->tile_ptr[br + 1];
    int64_t t = T->tile_ptr[br];
    do {
      int64_t t1 = t, entries = 0;
      while (t1 < tend && t1 - t < TCKI_CHUNK_TILES &&
             (t1 == t || entries + (T->eoff[t1 + 1] - T->eoff[t1]) <= TCKI_CHUNK_ENTRIES)) {
        entries += T->eoff[t1 + 1] - T->eoff[t1];
        t1++;
      }
      if (chunk_br) {
        chunk_br[k] = (int32_t)br;
        chunk_t0[k] = t;
        chunk_part[k] = -1;
      }
      k++;
      t = t1;
    } while (t < tend);
    if (k - first > 1) { // split: every chunk of the block row gets a part slot
      if (chunk_br) {
        for (int64_t c = first; c < k; c++)
          chunk_part[c] = (int32_t)(np + (c - first));
        runs[3 * ns] = br;
        runs[3 * ns + 1] = np;
        runs[3 * ns + 2] = k - first;
      }
      ns++;
      np += k - first;
    }
  }
  if (chunk_t0) chunk_t0[k] = T->ntiles;
  *nchunks = k;
  *nsplit = ns;
  *nparts = np;
}

// Device copy of an int64 host array as OFF (uint32 when it fits, checked by the caller).
static msp_status put_off(msp_context ctx, msp__cuda_matrix *m, int slot, const int64_t *h,
                          int64_t n, int narrow) {
  msp_status st = MSP_SUCCESS;
  uint32_t *tmp = NULL;
  if (!narrow) return msp__cuda_matrix_put(ctx, m, slot, h, (size_t)n * sizeof(int64_t));
  MSP_TRY(MSP_ALLOC(tmp, n > 0 ? n : 1, "TCKI 32-bit offsets"));
  for (int64_t i = 0; i < n; i++)
    tmp[i] = (uint32_t)h[i];
  MSP_TRY(msp__cuda_matrix_put(ctx, m, slot, tmp, (size_t)n * sizeof(uint32_t)));
  // put copies asynchronously from pageable memory: staged before it returns, but wait anyway
  // before freeing (uploads are not on the hot path)
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  msp__free(tmp);
  return st;
}

extern "C" msp_status msp__cuda_bdmp_tcki_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  uint16_t *tinfo = NULL;
  int32_t *chunk_br = NULL, *chunk_part = NULL;
  int64_t *chunk_t0 = NULL, *runs = NULL;
  const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)A->fmt;
  if (!T) return msp__error(MSP_ERR_INTERNAL, "bdmp-tcki upload (cuda): no host data");
  const int64_t nt = T->ntiles;
  int64_t nchunks = 0, nsplit = 0, nparts = 0;
  tcki_chunks(T, NULL, NULL, NULL, NULL, &nchunks, &nsplit, &nparts);
  if (nchunks > INT32_MAX || T->nbrows > INT32_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED, "bdmp-tcki upload (cuda): %lld chunks exceed int32",
                      (long long)nchunks);
  const int narrow = T->eoff[nt] <= (int64_t)UINT32_MAX && T->n32 <= (int64_t)UINT32_MAX &&
                     T->n64 <= (int64_t)UINT32_MAX && nt <= (int64_t)UINT32_MAX;
  MSP_TRY(MSP_ALLOC(chunk_br, nchunks > 0 ? nchunks : 1, "TCKI chunk block rows"));
  MSP_TRY(MSP_ALLOC(chunk_part, nchunks > 0 ? nchunks : 1, "TCKI chunk part slots"));
  MSP_TRY(MSP_ALLOC(chunk_t0, nchunks + 1, "TCKI chunk tiles"));
  MSP_TRY(MSP_ALLOC(runs, 3 * nsplit > 0 ? 3 * nsplit : 1, "TCKI split runs"));
  tcki_chunks(T, chunk_br, chunk_t0, chunk_part, runs, &nchunks, &nsplit, &nparts);
  MSP_TRY(MSP_ALLOC(tinfo, nt > 0 ? nt : 1, "TCKI tile info"));
  for (int64_t t = 0; t < nt; t++)
    tinfo[t] = (uint16_t)(T->tile_fmt[t] | (T->tile_width[t] << 8));
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 0, chunk_part, (size_t)nchunks * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 1, T->tile_col, (size_t)nt * sizeof(int32_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 2, tinfo, (size_t)nt * sizeof(uint16_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 3, chunk_br, (size_t)nchunks * sizeof(int32_t)));
  MSP_TRY(put_off(ctx, m, 4, T->eoff, nt + 1, narrow));
  MSP_TRY(put_off(ctx, m, 5, T->voff, nt, narrow));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 6, T->idx, (size_t)T->eoff[nt]));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 7, T->val32, (size_t)T->n32 * sizeof(float)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 8, T->val64, (size_t)T->n64 * sizeof(double)));
  MSP_TRY(put_off(ctx, m, 9, chunk_t0, nchunks + 1, narrow));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 10, runs, (size_t)(3 * nsplit) * sizeof(int64_t)));
  MSP_TRY(msp__cuda_matrix_put(ctx, m, 11, NULL, (size_t)nparts * MSP_BDMP_TILE * sizeof(double)));
  m->i64[0] = nchunks;
  m->i64[1] = nsplit;
  m->i64[2] = narrow ? 4 : 8;
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  msp__free(tinfo);
  msp__free(chunk_br);
  msp__free(chunk_part);
  msp__free(chunk_t0);
  msp__free(runs);
  return st;
}

template <typename OFF>
static msp_status launch_tcki(const msp__cuda_matrix *m, const msp_matrix A, const double *x,
                              double alpha, double beta, double *y, cudaStream_t s) {
  msp_status st = MSP_SUCCESS;
  const int64_t nchunks = m->i64[0];
  tcki_kernel<OFF><<<msp__cuda_blocks(nchunks, TCKI_WARPS), TCKI_THREADS, 0, s>>>(
      nchunks, A->rows, A->cols, (const int32_t *)m->d[3], (const OFF *)m->d[9],
      (const int32_t *)m->d[0], (const int32_t *)m->d[1], (const uint16_t *)m->d[2],
      (const OFF *)m->d[4], (const OFF *)m->d[5], (const uint8_t *)m->d[6], (const float *)m->d[7],
      (const double *)m->d[8], x, alpha, beta, y, (double *)m->d[11]);
  MSP_CUDA_CHECK_LAUNCH("tcki_kernel");
exit:
  return st;
}

extern "C" msp_status msp__cuda_bdmp_tcki_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                               msp_vector x, double beta, msp_vector y) {
  msp_status st = MSP_SUCCESS;
  if ((st = f64_vectors("bdmp-tcki spmv", x, y)) != MSP_SUCCESS) return st;
  if (A->rows == 0) return MSP_SUCCESS;
  const msp__cuda_matrix *m = (const msp__cuda_matrix *)A->dev;
  if (!m || !A->fmt) return msp__error(MSP_ERR_INTERNAL, "bdmp-tcki spmv (cuda): no device data");
  const cudaStream_t s = msp__cuda(ctx)->stream;
  const int64_t nchunks = m->i64[0], nsplit = m->i64[1];
  if (nchunks > 0) {
    if (m->i64[2] == 4)
      MSP_TRY(launch_tcki<uint32_t>(m, A, (const double *)x->d_data, alpha, beta,
                                    (double *)y->d_data, s));
    else
      MSP_TRY(launch_tcki<int64_t>(m, A, (const double *)x->d_data, alpha, beta,
                                   (double *)y->d_data, s));
  }
  if (nsplit > 0) {
    tcki_fixup<<<msp__cuda_blocks(nsplit * MSP_BDMP_TILE, FIX_THREADS), FIX_THREADS, 0, s>>>(
        nsplit, A->rows, (const int64_t *)m->d[10], (const double *)m->d[11], alpha, beta,
        (double *)y->d_data);
    MSP_CUDA_CHECK_LAUNCH("tcki_fixup");
  }
exit:
  return st;
}

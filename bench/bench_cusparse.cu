// bench_cusparse.cu: the cuSPARSE peers of mixsparse-bench (CSR default/ALG2, COO ALG1/ALG2, sliced
// ELL in f64 and f32; CSR with f16 / bf16 values).
#include "bench.h"

#include "precision.h"

#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace {

// Device memory owned by one scope (freed on every path).
struct dev_mem {
  void *p = nullptr;
  dev_mem() = default;
  dev_mem(const dev_mem &) = delete;
  dev_mem &operator=(const dev_mem &) = delete;
  ~dev_mem() { release(); }
  void release() {
    if (p) cudaFree(p);
    p = nullptr;
  }
};

cusparseStatus_t g_last_status = CUSPARSE_STATUS_SUCCESS; // of the last failing call

bool cusp_ok(cusparseStatus_t s, const char *what, std::string *why) {
  if (s == CUSPARSE_STATUS_SUCCESS) return true;
  g_last_status = s;
  if (why)
    *why =
        std::string(what) + ": " + cusparseGetErrorName(s) + " (" + cusparseGetErrorString(s) + ")";
  // A failing cuSPARSE call may hide a sticky device error: look once.
  cudaError_t e = cudaPeekAtLastError();
  if (e != cudaSuccess) bench_cuda_ok(e, what, nullptr);
  return false;
}

bool upload(dev_mem *d, const void *h, size_t bytes, const char *what, std::string *why) {
  d->release();
  if (!bench_cuda_ok(cudaMalloc(&d->p, bytes > 0 ? bytes : 1), what, why)) return false;
  if (bytes == 0 || !h) return true;
  return bench_cuda_ok(cudaMemcpy(d->p, h, bytes, cudaMemcpyHostToDevice), what, why);
}

template <typename T> __global__ void poison_kernel(T *y, int64_t n, T v) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = v;
}

// The matrix in one cuSPARSE format: its descriptor arguments and byte model.
enum class fam { csr, coo, sell };

struct variant {
  const char *name;
  fam family;
  cusparseSpMVAlg_t alg;
};

const variant kVariants[] = {
    {"cusparse:csr-default", fam::csr, CUSPARSE_SPMV_ALG_DEFAULT},
    {"cusparse:csr-alg2", fam::csr, CUSPARSE_SPMV_CSR_ALG2},
    {"cusparse:coo-alg1", fam::coo, CUSPARSE_SPMV_COO_ALG1},
    {"cusparse:coo-alg2", fam::coo, CUSPARSE_SPMV_COO_ALG2},
    {"cusparse:sell-alg1", fam::sell, CUSPARSE_SPMV_SELL_ALG1},
};

const int64_t kSlice = 32;

// The data types of one peer precision: values, x, y, compute (alpha and beta are of the compute
// type), and the bytes per value of each array.
struct peer_types {
  const char *tag;
  cudaDataType a, x, y, compute;
  bool every_family; // f64 / f32: every variant; the half types: CSR only
};

// f16 and bf16: the issue asks for CSR with half values, fp32 vectors and fp32 compute (the
// peer of our f16 values with x and y in higher precision). cuSPARSE 12's SpMV table lists that
// mixed combination (A in CUDA_R_16F/16BF; X, Y and compute in CUDA_R_32F); the newer tables
// list A and X in the same half type with Y and compute in CUDA_R_32F instead. So the fp32 x
// is asked for first and, where cuSPARSE refuses it (CUSPARSE_STATUS_NOT_SUPPORTED), x in the
// values' half type is the closest combination: the row's vector precision then reads
// "f16/f32" (x/y) and its note says why.
const peer_types kPeers[] = {
    {"f64", CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, true},
    {"f32", CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, true},
    {"f16", CUDA_R_16F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, false},
    {"bf16", CUDA_R_16BF, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, false},
};

double type_bytes(cudaDataType t) {
  return t == CUDA_R_64F ? 8.0 : t == CUDA_R_32F ? 4.0 : 2.0;
}
const char *type_tag(cudaDataType t) {
  return t == CUDA_R_64F ? "f64" : t == CUDA_R_32F ? "f32" : t == CUDA_R_16F ? "f16" : "bf16";
}

// Device copies of every array the variants need (CSR with 32-bit offsets: cuSPARSE's usual
// configuration, and nnz < 2^31 is checked; COO shares CSR's columns and values).
struct dev_arrays {
  dev_mem rp, ci, v64, v32, v16, vbf16, crow, x64, x32, x16, xbf16, y64, y32;
  dev_mem soff, scol, sv64, sv32;
  int64_t sell_slots = 0, nslices = 0;
  bool sell_ok = false;
  std::string sell_why;
};

bool build_sell(const bench_matrix &M, dev_arrays *D, std::string *why) {
  const int64_t rows = M.rows;
  D->nslices = (rows + kSlice - 1) / kSlice;
  std::vector<int32_t> off((size_t)D->nslices + 1);
  int64_t slots = 0;
  for (int64_t s = 0; s < D->nslices; s++) {
    int64_t w = 0;
    for (int64_t i = s * kSlice; i < std::min(rows, (s + 1) * kSlice); i++)
      w = std::max(w, M.rowptr[i + 1] - M.rowptr[i]);
    if (slots > INT32_MAX) break;
    off[(size_t)s] = (int32_t)slots;
    slots += w * kSlice;
  }
  // cuSPARSE's slice offsets are 32-bit here; and a padding blow-up is not worth building.
  if (slots > INT32_MAX) {
    *why = "sliced ELL would need " + std::to_string(slots) + " slots (over 2^31)";
    return false;
  }
  if (slots > 8 * M.nnz + rows) {
    char b[160];
    snprintf(b, sizeof b, "sliced ELL padding %.1fx nnz (over 8x): not built",
             (double)slots / (double)std::max<int64_t>(M.nnz, 1));
    *why = b;
    return false;
  }
  off[(size_t)D->nslices] = (int32_t)slots;
  D->sell_slots = slots;
  std::vector<int32_t> col((size_t)slots, -1); // -1 marks padding for cuSPARSE
  std::vector<double> v64((size_t)slots, 0.0);
  std::vector<float> v32((size_t)slots, 0.0f);
  for (int64_t i = 0; i < rows; i++) {
    int64_t s = i / kSlice, r = i % kSlice;
    for (int64_t k = 0, len = M.rowptr[i + 1] - M.rowptr[i]; k < len; k++) {
      size_t p = (size_t)(off[(size_t)s] + k * kSlice + r); // column-major inside the slice
      col[p] = M.colind[M.rowptr[i] + k];
      v64[p] = M.val[M.rowptr[i] + k];
      v32[p] = (float)M.val[M.rowptr[i] + k];
    }
  }
  return upload(&D->soff, off.data(), off.size() * sizeof(int32_t), "cudaMalloc/copy(SELL offsets)",
                why) &&
         upload(&D->scol, col.data(), col.size() * sizeof(int32_t), "cudaMalloc/copy(SELL columns)",
                why) &&
         upload(&D->sv64, v64.data(), v64.size() * sizeof(double),
                "cudaMalloc/copy(SELL f64 values)", why) &&
         upload(&D->sv32, v32.data(), v32.size() * sizeof(float),
                "cudaMalloc/copy(SELL f32 values)", why);
}

// The device array of type t among D's copies of the values (CSR/COO), x or y.
void *values_of(dev_arrays &D, cudaDataType t) {
  return t == CUDA_R_64F   ? D.v64.p
         : t == CUDA_R_32F ? D.v32.p
         : t == CUDA_R_16F ? D.v16.p
                           : D.vbf16.p;
}
void *x_of(dev_arrays &D, cudaDataType t) {
  return t == CUDA_R_64F   ? D.x64.p
         : t == CUDA_R_32F ? D.x32.p
         : t == CUDA_R_16F ? D.x16.p
                           : D.xbf16.p;
}

// One variant in one precision: descriptors, buffer, preprocess, a checked run, the timed runs.
bool run_variant(cusparseHandle_t h, const bench_timing &ts, const bench_matrix &M, dev_arrays &D,
                 const variant &v, const peer_types &T, bench_row *row, std::string *why) {
  const double ab = type_bytes(T.a), xb = type_bytes(T.x), yb = type_bytes(T.y);
  const bool y32 = T.y == CUDA_R_32F;
  cusparseSpMatDescr_t A = nullptr;
  cusparseDnVecDescr_t X = nullptr, Y = nullptr;
  dev_mem buffer;
  bool ok = true;
  void *vals = values_of(D, T.a);
  void *x = x_of(D, T.x);
  void *y = y32 ? D.y32.p : D.y64.p;
  const double one64 = 1.0, zero64 = 0.0;
  const float one32 = 1.0f, zero32 = 0.0f;
  const bool c32 = T.compute == CUDA_R_32F;
  const void *alpha = c32 ? (const void *)&one32 : (const void *)&one64;
  const void *beta = c32 ? (const void *)&zero32 : (const void *)&zero64;
  size_t bsize = 0;
  auto t0 = std::chrono::steady_clock::now();

  const double xy = (double)M.x_entries * xb + (double)M.rows * yb; // x read once, y written once
  switch (v.family) {
  case fam::csr:
    ok = cusp_ok(cusparseCreateCsr(&A, M.rows, M.cols, M.nnz, D.rp.p, D.ci.p, vals,
                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                   T.a),
                 "cusparseCreateCsr", why);
    row->bytes = (double)(M.rows + 1) * 4 + (double)M.nnz * (4 + ab) + xy;
    break;
  case fam::coo:
    ok = cusp_ok(cusparseCreateCoo(&A, M.rows, M.cols, M.nnz, D.crow.p, D.ci.p, vals,
                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, T.a),
                 "cusparseCreateCoo", why);
    row->bytes = (double)M.nnz * (4 + 4 + ab) + xy;
    break;
  case fam::sell:
    if (!D.sell_ok) {
      *why = D.sell_why;
      return false;
    }
    ok = cusp_ok(cusparseCreateSlicedEll(&A, M.rows, M.cols, M.nnz, D.sell_slots, kSlice, D.soff.p,
                                         D.scol.p, T.a == CUDA_R_32F ? D.sv32.p : D.sv64.p,
                                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                         CUSPARSE_INDEX_BASE_ZERO, T.a),
                 "cusparseCreateSlicedEll", why);
    row->bytes = (double)(D.nslices + 1) * 4 + (double)D.sell_slots * (4 + ab) + xy;
    break;
  }
  ok = ok && cusp_ok(cusparseCreateDnVec(&X, M.cols, x, T.x), "cusparseCreateDnVec(x)", why) &&
       cusp_ok(cusparseCreateDnVec(&Y, M.rows, y, T.y), "cusparseCreateDnVec(y)", why) &&
       cusp_ok(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, A, X, beta, Y,
                                       T.compute, v.alg, &bsize),
               "cusparseSpMV_bufferSize", why) &&
       bench_cuda_ok(cudaMalloc(&buffer.p, bsize > 0 ? bsize : 1), "cudaMalloc(cuSPARSE buffer)",
                     why);
  if (ok) {
    // A variant whose preprocess step is refused still runs (plain cusparseSpMV); the note says so.
    std::string pwhy;
    if (!cusp_ok(cusparseSpMV_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, A, X, beta, Y,
                                         T.compute, v.alg, buffer.p),
                 "cusparseSpMV_preprocess", &pwhy)) {
      if (bench_device_broken()) {
        *why = pwhy;
        ok = false;
      } else {
        row->note = "without preprocess (" + pwhy + ")";
      }
    }
  }
  ok = ok && bench_cuda_ok(cudaStreamSynchronize(ts.stream), "cuSPARSE preprocess", why);
  row->setup_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  auto spmv = [&](std::string *w) {
    return cusp_ok(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, A, X, beta, Y,
                                T.compute, v.alg, buffer.p),
                   "cusparseSpMV", w);
  };
  // Checked run: y poisoned with a large finite value first (beta = 0 may or may not read y; a
  // row left unwritten shows as a huge error either way).
  if (ok && M.rows > 0) {
    const int threads = 256;
    const unsigned blocks = (unsigned)((M.rows + threads - 1) / threads);
    if (y32)
      poison_kernel<float><<<blocks, threads, 0, ts.stream>>>((float *)y, M.rows, 1e30f);
    else
      poison_kernel<double><<<blocks, threads, 0, ts.stream>>>((double *)y, M.rows, 1e300);
    ok = bench_cuda_ok(cudaGetLastError(), "poison launch", why);
  }
  if (ok)
    ok = spmv(why) &&
         bench_cuda_ok(cudaStreamSynchronize(ts.stream), "cusparseSpMV (checked run)", why);
  if (ok) {
    std::vector<double> yh((size_t)M.rows);
    if (y32) {
      std::vector<float> yf((size_t)M.rows);
      ok =
          bench_cuda_ok(cudaMemcpy(yf.data(), y, yf.size() * sizeof(float), cudaMemcpyDeviceToHost),
                        "copy y", why);
      for (size_t i = 0; ok && i < yf.size(); i++)
        yh[i] = yf[i];
    } else {
      ok = bench_cuda_ok(
          cudaMemcpy(yh.data(), y, yh.size() * sizeof(double), cudaMemcpyDeviceToHost), "copy y",
          why);
    }
    if (ok) row->err = bench_max_error(yh.data(), M.ref, M.absref, M.rows);
  }
  if (ok) ok = bench_time(ts, spmv, &row->ms, &row->ms_min, &row->ms_max, why);
  if (A) cusparseDestroySpMat(A);
  if (X) cusparseDestroyDnVec(X);
  if (Y) cusparseDestroyDnVec(Y);
  return ok;
}

// The peer types of a precision tag, or nullptr.
const peer_types *peer_of(const std::string &prec) {
  for (const peer_types &t : kPeers)
    if (prec == t.tag) return &t;
  return nullptr;
}

bool wants(const std::vector<std::string> &precisions, const char *tag) {
  return std::find(precisions.begin(), precisions.end(), tag) != precisions.end();
}

// "csr-default" from "cusparse:csr-default": the algorithm part of a variant name.
std::string alg_of(const char *name) {
  std::string n = name;
  size_t c = n.find('-');
  return c == std::string::npos ? "" : n.substr(c + 1);
}

} // namespace

bool bench_cusparse_has_peer(const std::string &precision) {
  return peer_of(precision) != nullptr;
}

void bench_cusparse_run(const bench_timing &ts, const bench_matrix &M,
                        const std::vector<std::string> &precisions, double read_gbs,
                        std::vector<bench_row> *out) {
  cusparseHandle_t h = nullptr;
  dev_arrays D;
  std::string setup_why;
  bool setup = true;
  auto base_row = [&](const variant &v, const std::string &prec) {
    bench_row r;
    r.matrix = M.name;
    r.kind = M.kind;
    r.rows = M.rows;
    r.cols = M.cols;
    r.nnz = M.nnz;
    r.variant = v.name;
    r.format = v.family == fam::csr ? "csr" : v.family == fam::coo ? "coo" : "sell";
    r.kernel = alg_of(v.name);
    r.precision = prec;
    return r;
  };
  const bool half = wants(precisions, "f16"), bhalf = wants(precisions, "bf16");

  if (M.nnz > INT32_MAX || M.rows >= INT32_MAX || M.cols >= INT32_MAX) {
    setup = false;
    setup_why = "over 2^31 nonzeros: this benchmark gives cuSPARSE 32-bit indices";
  }
  if (setup) {
    // Host staging: 32-bit row offsets, COO row indices, fp32 values and x; half values and x
    // (rounded to nearest by the library's own conversions) when a half peer is asked for.
    std::vector<int32_t> rp32((size_t)M.rows + 1), crow((size_t)M.nnz);
    std::vector<float> v32((size_t)M.nnz), x32((size_t)M.cols);
    std::vector<uint16_t> v16(half ? (size_t)M.nnz : 0), vb16(bhalf ? (size_t)M.nnz : 0);
    std::vector<uint16_t> x16(half ? (size_t)M.cols : 0), xb16(bhalf ? (size_t)M.cols : 0);
    for (int64_t i = 0; i <= M.rows; i++)
      rp32[(size_t)i] = (int32_t)M.rowptr[i];
    for (int64_t i = 0; i < M.rows; i++)
      for (int64_t k = M.rowptr[i]; k < M.rowptr[i + 1]; k++)
        crow[(size_t)k] = (int32_t)i;
    for (int64_t k = 0; k < M.nnz; k++) {
      v32[(size_t)k] = (float)M.val[k];
      if (half) v16[(size_t)k] = msp_f16_from_double(M.val[k]);
      if (bhalf) vb16[(size_t)k] = msp_bf16_from_double(M.val[k]);
    }
    for (int64_t j = 0; j < M.cols; j++) {
      x32[(size_t)j] = (float)M.x[j];
      if (half) x16[(size_t)j] = msp_f16_from_double(M.x[j]);
      if (bhalf) xb16[(size_t)j] = msp_bf16_from_double(M.x[j]);
    }
    setup =
        cusp_ok(cusparseCreate(&h), "cusparseCreate", &setup_why) &&
        cusp_ok(cusparseSetStream(h, ts.stream), "cusparseSetStream", &setup_why) &&
        upload(&D.rp, rp32.data(), rp32.size() * 4, "cudaMalloc/copy(CSR offsets)", &setup_why) &&
        upload(&D.ci, M.colind, (size_t)M.nnz * 4, "cudaMalloc/copy(columns)", &setup_why) &&
        upload(&D.v64, M.val, (size_t)M.nnz * 8, "cudaMalloc/copy(f64 values)", &setup_why) &&
        upload(&D.v32, v32.data(), v32.size() * 4, "cudaMalloc/copy(f32 values)", &setup_why) &&
        upload(&D.crow, crow.data(), crow.size() * 4, "cudaMalloc/copy(COO rows)", &setup_why) &&
        upload(&D.x64, M.x, (size_t)M.cols * 8, "cudaMalloc/copy(x f64)", &setup_why) &&
        upload(&D.x32, x32.data(), x32.size() * 4, "cudaMalloc/copy(x f32)", &setup_why) &&
        upload(&D.y64, nullptr, (size_t)M.rows * 8, "cudaMalloc(y f64)", &setup_why) &&
        upload(&D.y32, nullptr, (size_t)M.rows * 4, "cudaMalloc(y f32)", &setup_why) &&
        (!half ||
         (upload(&D.v16, v16.data(), v16.size() * 2, "cudaMalloc/copy(f16 values)", &setup_why) &&
          upload(&D.x16, x16.data(), x16.size() * 2, "cudaMalloc/copy(x f16)", &setup_why))) &&
        (!bhalf ||
         (upload(&D.vbf16, vb16.data(), vb16.size() * 2, "cudaMalloc/copy(bf16 values)",
                 &setup_why) &&
          upload(&D.xbf16, xb16.data(), xb16.size() * 2, "cudaMalloc/copy(x bf16)", &setup_why)));
  }
  if (setup) {
    std::string w;
    D.sell_ok = build_sell(M, &D, &w);
    if (!D.sell_ok) D.sell_why = w;
    // cudaMemcpy from pageable memory may return before its DMA ends, and the context's stream
    // does not synchronise with the legacy stream: wait for the uploads here.
    setup = bench_cuda_ok(cudaDeviceSynchronize(), "uploads for cuSPARSE", &setup_why);
  }

  for (const std::string &prec : precisions) {
    const peer_types *pt = peer_of(prec);
    if (!pt) continue;
    for (const variant &v : kVariants) {
      if (!pt->every_family && v.family != fam::csr) continue;
      bench_row r = base_row(v, prec);
      peer_types T = *pt;
      r.vprec = type_tag(T.x);
      std::string why;
      bool ran = false;
      if (bench_device_broken()) {
        r.status = "n/a";
        r.note = "skipped: an earlier sticky device error";
      } else if (!setup) {
        r.status = "n/a";
        r.note = setup_why;
      } else {
        // A refusal of x in fp32 is remembered per precision (and variant), so that later
        // matrices go straight to the closest combination.
        static std::vector<std::string> refused;
        const std::string key = prec + " " + v.name;
        const bool known = std::find(refused.begin(), refused.end(), key) != refused.end();
        std::string first = "CUSPARSE_STATUS_NOT_SUPPORTED";
        g_last_status = CUSPARSE_STATUS_SUCCESS;
        if (!known) ran = run_variant(h, ts, M, D, v, T, &r, &why);
        if (!ran && (known || g_last_status == CUSPARSE_STATUS_NOT_SUPPORTED) && T.x != T.a &&
            !bench_device_broken()) {
          // The closest combination (see kPeers): x in the values' type.
          if (!known) {
            first = why;
            refused.push_back(key);
          }
          T.x = T.a;
          r.note.clear();
          why.clear();
          ran = run_variant(h, ts, M, D, v, T, &r, &why);
          r.vprec = std::string(type_tag(T.x)) + "/" + type_tag(T.y);
          const std::string n = std::string("x in ") + type_tag(T.x) + ": cuSPARSE refused x in " +
                                type_tag(pt->x) + " (" + first + ")";
          r.note = r.note.empty() ? n : n + "; " + r.note;
        }
        if (ran) {
          r.status = "ok";
          bench_row_derive(&r, read_gbs);
        }
      }
      if (!ran && r.status.empty()) {
        r.status = "n/a";
        r.note = r.note.empty() ? why : r.note + "; " + why;
        r.ms = -1;
      }
      out->push_back(r);
    }
  }
  if (h) cusparseDestroy(h);
}

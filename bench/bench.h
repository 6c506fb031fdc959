// bench.h: what the files of mixsparse-bench share: result rows, timing, device helpers, cuSPARSE
// runner.
#ifndef MSP_BENCH_H
#define MSP_BENCH_H

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mixsparse.h"

// One measured (or refused) variant on one matrix.
struct bench_row {
  std::string matrix; // spec or file name
  std::string kind;   // "generated" or "real"
  int64_t rows = 0, cols = 0, nnz = 0;
  std::string variant;   // ours:csr-scalar, ours:ell, cusparse:csr-default, ...
  std::string format;    // csr, ell, auto, tune, ... (cuSPARSE: csr, coo, sell)
  std::string kernel;    // CSR kernel (scalar, vector, merge, auto), cuSPARSE algorithm; else ""
  std::string precision; // storage precision of the values, CPMS with the segments read
                         // (f64, f32, f16, cpms4:2, ...; "mixed" for BDMP)
  std::string vprec = "f64"; // storage precision of x and y (CPMS: segments x is read with);
                             // cuSPARSE f16 values with x in f16 and y in f32: "f16/f32"
  std::string status;        // ok, wrong (error above the limit), n/a, error
  std::string note;          // why n/a or error; what AUTO/TUNE chose
  std::string choice;        // kernel or format chosen (csr-auto, auto, tune), else empty
  double ms = -1;            // median time of the timed runs
  double ms_min = -1, ms_max = -1;
  double bytes = 0; // byte model of the variant
  double gbs = 0, pct_read = 0, gflops = 0;
  double err = -1;      // max_i |y_i - ref_i| / (|A| |x|)_i
  double setup_ms = -1; // host wall time of the conversion / descriptor setup
  // BDMP rows (variants bdmp:*): accuracy of y against the CPU fp64 reference (Zhao et al.,
  // "Block-wise dynamic mixed-precision SpMV" Eq. 2-3, 9), footprint, fp32 share, speedups.
  bool has_acc = false;
  double acc_ratio = -1, acc_min = -1, acc_mean = -1; // share with >= 7 digits; min, mean digits
  int64_t acc_hist[MSP_ACCURACY_BINS] = {};           // entries with 0..7, >= 8 digits
  double footprint = -1, footprint_ratio = -1;        // msp_matrix_bytes, / CSR fp64's
  double fp32_share = -1;                             // nonzeros stored in fp32 (BDMP)
  int digits = 0;                                     // error-bounded mode D (0: none)
  double bound = -1;                                  // msp_bdmp_report.bound (digits mode)
  double prep_spmv = -1; // setup_ms / our CSR f64 SpMV time (SpMV-equivalents)
  double prep_dev_ms = -1, prep_dev_spmv = -1;     // BDMP-PBP built on the device: its device
                                                   // time (ms, msp_bdmp_report) and / CSR f64
  double speedup_cusp64 = -1, speedup_cusp32 = -1; // t(cuSPARSE CSR f64 / f32) / t(this)
  // Storage and vector precisions: error limit of the row (<= 0: by precision tag),
  // speedup over the same variant with f64 values and f64 vectors in the same run, the speedup
  // the byte ratio asks for (0.9 x bytes(f64 row) / bytes(this row)), and the cuSPARSE peer of
  // the storage precision (the fastest cuSPARSE variant in it) with t(peer) / t(this).
  double err_limit = -1;
  double speedup_f64 = -1, target_speedup = -1;
  std::string peer;
  double peer_ms = -1, peer_speedup = -1;
};

// Timing options shared by every variant.
struct bench_timing {
  cudaStream_t stream = nullptr;
  int warmup = 5;
  int reps = 50;
  bool flush_l2 = true; // read a buffer larger than L2 before each timed run (cold cache)
};

// ---- device helpers (bench_device.cu) ---------------------------------------------------------
// Allocate the L2 flush buffer (4x the L2 size, at least 128 MiB). false + message on failure.
bool bench_device_init(int device, std::string *why);
void bench_device_fini();
// Streaming read bandwidth (16-byte loads, grid-stride) and device-to-device copy bandwidth
// (bytes read + bytes written), GB/s, measured over `bytes`-sized buffers (median of 20).
bool bench_measure_bandwidth(cudaStream_t s, size_t bytes, double *read_gbs, double *copy_gbs,
                             std::string *why);
// Run fn (which enqueues one product on ts.stream) warmup times, then reps times each between
// two events (after an L2 flush when asked). fn returns false + message on failure. Median,
// min and max in milliseconds.
bool bench_time(const bench_timing &ts, const std::function<bool(std::string *)> &fn,
                double *median_ms, double *min_ms, double *max_ms, std::string *why);
// The floor of a product's time: one launch of an empty kernel (one block of 32 threads) on
// ts.stream, timed as bench_time times a product. Median in milliseconds.
bool bench_launch_floor(const bench_timing &ts, double *median_ms, std::string *why);
// True once a sticky device error (illegal address, launch failure) was seen: nothing more can
// run in this process.
bool bench_device_broken();
// Check a CUDA status; record stickiness; message "what: error string".
bool bench_cuda_ok(cudaError_t e, const char *what, std::string *why);

// ---- errors --------------------------------------------------------------------------------
// max_i |y_i - ref_i| / max(absref_i, tiny): the error in units of (|A| |x|)_i, the scale of the
// rounding error of row i. +inf when any y_i is not finite (an unwritten, NaN-poisoned entry).
double bench_max_error(const double *y, const double *ref, const double *absref, int64_t n);

// ---- cuSPARSE (bench_cusparse.cu) ---------------------------------------------------------------
// The host CSR (int64 row pointers, int32 columns, fp64 values) and the reference of one matrix.
struct bench_matrix {
  std::string name, kind;
  int64_t rows = 0, cols = 0, nnz = 0;
  const int64_t *rowptr = nullptr;
  const int32_t *colind = nullptr;
  const double *val = nullptr;
  const double *x = nullptr;      // cols entries
  const double *ref = nullptr;    // CPU backend's y = A x (fp64)
  const double *absref = nullptr; // (|A| |x|)_i
  int64_t x_entries = 0;          // entries of x the byte model counts (as msp_spmv_bytes does)
};

// The storage precisions cuSPARSE is run in as a peer (the others have none): f64 and f32
// (values, x, y and compute alike; every variant), f16 and bf16 (CSR only: values in
// CUDA_R_16F / CUDA_R_16BF, x and y in fp32, compute fp32, or the nearest combination the
// installed cuSPARSE accepts; the row's vector precision and note say which ran).
bool bench_cusparse_has_peer(const std::string &precision);
// Run every cuSPARSE variant in each of `precisions` that has a peer (tags as above; the others
// are ignored) on M, appending one row each. A failing variant is reported as n/a with the
// cuSPARSE status; never aborts.
void bench_cusparse_run(const bench_timing &ts, const bench_matrix &M,
                        const std::vector<std::string> &precisions, double read_gbs,
                        std::vector<bench_row> *out);

// Fill the derived columns of a row (GB/s, % of read bandwidth, GFLOP/s) from ms and bytes, and
// mark an "ok" row "wrong" when its error is above its limit (err_limit when set; else 1e-8
// for f64, 1e-2 otherwise): timed, but left out of every fastest-variant and speedup figure.
void bench_row_derive(bench_row *r, double read_gbs);

#endif

// bench_run.h: what bench_main.cu (the runs) and bench_output.cu (totals, JSON, CSV, the
// printed summary) of mixsparse-bench share: options, per-matrix summaries, the run's state.
#ifndef MSP_BENCH_RUN_H
#define MSP_BENCH_RUN_H

#include "bench.h"

#include <string>
#include <vector>

// A storage precision as the benchmark reads it: the precision and, for CPMS, the segments read
// (0: all). Tags as printed in every row: f64, f16, cpms4 (all segments), cpms4:2.
struct prec_spec {
  msp_precision p = MSP_PRECISION_F64;
  int segments = 0;
  std::string tag = "f64";
};

// Every --formats token: the list's formats, then auto, tune, cusparse, bdmp (bench_main.cu).
std::vector<std::string> format_tokens();

struct options {
  bool quick = false, generated = true, flush_l2 = true;
  int reps = 50, warmup = 5, device = 0;
  double budget_s = 0;  // 0: no budget
  double bw_gib = 2.0;  // bandwidth-test buffer
  int64_t min_nnz = 0;  // --dir files below this are skipped
  int64_t max_nnz = -1; // --dir files above this are skipped (-1: none)
  std::string dir, json, csv, png, plot_script;
  std::vector<std::string> files, gen_specs;
  std::vector<std::string> formats = format_tokens();
  double bdmp_budget_s = -1; // BDMP rows stop after this much of their own time (-1: budget/2)
  std::string bdmp_variants; // --bdmp-variants: the bdmp:* rows to run, comma-separated (all)
  std::vector<prec_spec> precisions;  // storage precisions of the values (default f64, f32)
  std::vector<prec_spec> vprecisions; // of x and y (default f64)
  std::string command_line;
};

struct matrix_summary {
  std::string name, kind;
  int64_t rows = 0, cols = 0, nnz = 0;
  double load_s = 0;
  std::string best_cusp, best_cusp32;
  double best_cusp_ms = -1, best_cusp32_ms = -1;
  double csr_auto_ms = -1, csr_auto_pct = 0;
  std::string csr_auto_kernel, fastest_kernel;
  double fastest_kernel_ms = -1;
  int auto_within_10 = -1; // -1: not all three kernels measured
  double auto_ms = -1, auto_pct = 0, auto32_ms = -1;
  std::string auto_choice, tune_choice, best_ours;
  double tune_ms = -1, best_ours_ms = -1;
  int tune_within_5 = -1;
  double speedup_csr = -1, speedup_auto = -1, speedup_tune = -1, speedup_best = -1,
         speedup_auto32 = -1;
  // BDMP (bdmp:* rows): speedup over cuSPARSE CSR fp64, accuracy ratio, footprint / CSR
  // fp64, preprocessing in SpMV-equivalents, fp32 share; -1 when not measured.
  double pbp_x = -1, tcki_x = -1, pbp_ratio = -1, tcki_ratio = -1, pbp_foot = -1, tcki_foot = -1,
         tcki_prep = -1, share_d[3] = {-1, -1, -1};
};

struct bench_state {
  options opt;
  msp_context gpu = nullptr, cpu = nullptr;
  bench_timing ts;
  double read_gbs = 0, copy_gbs = 0;
  msp_device_props props{};
  std::vector<bench_row> rows;
  std::vector<matrix_summary> sums;
  double bdmp_spent = 0; // seconds spent on the BDMP rows (kept out of --budget)
};

// ---- shared by the runs (bench_main.cu) ---------------------------------------------------------
// The formats the precision loop runs: every entry of MSP_FORMAT_LIST.
extern const msp_format kListFormats[MSP_FORMAT_COUNT];
// BDMP formats choose fp32 or fp64 per tile themselves and have rows of their own.
bool has_own_rows(msp_format f);
double now_s(); // seconds since the first call
bool has(const std::vector<std::string> &v, const std::string &s);
std::string status_text(msp_status st);
bench_row make_row(const bench_matrix &M, const std::string &variant, const std::string &prec);
// Check and time msp_spmv(1, B, x, 0, y) on the GPU context into r (bench_main.cu).
void run_ours(bench_state &S, const bench_matrix &M, msp_matrix B, msp_vector xv, msp_vector yv,
              bench_row *r, std::vector<double> *y_out = nullptr,
              const bench_timing *timing = nullptr);
int budget_level(const bench_state &S);

// ---- rows per precision and BDMP rows (bench_precision.cu) -------------------------------------
void run_ours_all(bench_state &S, const bench_matrix &M);
void precision_speedups(std::vector<bench_row> &rows, size_t from);
void bdmp_speedups(std::vector<bench_row> &rows, size_t from);
matrix_summary summarize(const std::vector<bench_row> &rows, size_t from, const bench_matrix &M,
                         double load_s);
void print_rows(const std::vector<bench_row> &rows, size_t from);
void print_summary_line(const matrix_summary &s);

// ---- totals over the matrices (bench_output.cu) -------------------------------------------------
struct group_stats {
  int n = 0;
  double log_sum = 0, min = 0;
  std::string min_name;
  void add(double v, const std::string &name) {
    if (!(v > 0)) return;
    if (n == 0 || v < min) {
      min = v;
      min_name = name;
    }
    n++;
    log_sum += std::log(v);
  }
  double geomean() const { return n ? std::exp(log_sum / n) : -1; }
};

struct mean_stats {
  int n = 0;
  double sum = 0;
  void add(double v) {
    n++;
    sum += v;
  }
  double mean() const { return n ? sum / n : -1; }
};

struct totals {
  group_stats csr_gen, csr_real, auto_gen, auto_real, tune_gen, tune_real, best_gen, best_real,
      auto32_all;
  int within10 = 0, within10_n = 0, tune5 = 0, tune5_n = 0;
  // Precisions: our rows in a precision other than f64 (values or vectors) with an f64 twin, and
  // how many of them meet t(P) <= t(f64) bytes(P) / bytes(f64) / 0.9.
  int prec_met = 0, prec_n = 0;
  // BDMP, over matrices above 1e6 nonzeros: speedups over cuSPARSE CSR fp64, how many reach
  // an accuracy ratio of 0.95; over every matrix with the row: mean footprint reduction against
  // CSR fp64, mean TCKI preprocessing in SpMV-equivalents, mean fp32 share for D = 7, 8, 10.
  group_stats pbp_big, tcki_big;
  int pbp_acc95 = 0, pbp_acc_n = 0, tcki_acc95 = 0, tcki_acc_n = 0;
  mean_stats pbp_red, tcki_red, tcki_prep, share_d[3];
};

totals compute_totals(const std::vector<matrix_summary> &sums, const std::vector<bench_row> &rows);
bool write_json(const bench_state &S, const totals &t, const std::string &path);
bool write_csv(const bench_state &S, const std::string &path);
// The plotting script to run (--plot-script, MSP_BENCH_PLOT or the source tree's plot.py).
std::string plot_script(const options &o);
std::string shell_quote(const std::string &s);
void print_totals(const bench_state &S, const totals &t);

#endif

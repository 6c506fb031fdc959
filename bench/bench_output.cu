// bench_output.cu: mixsparse-bench's results: totals over the matrices, the JSON and CSV files,
// the printed summary (bench_run.h).
#include "bench_run.h"
#include "json.h" // tools/json.c: JSON through cJSON when the build has it

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#ifndef MSP_BENCH_SOURCE_DIR
#define MSP_BENCH_SOURCE_DIR "bench"
#endif

// ---- output files
// --------------------------------------------------------------------------------
static std::string csv_field(const std::string &s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += (c == '\n') ? ' ' : c;
  }
  return o + "\"";
}

totals compute_totals(const std::vector<matrix_summary> &sums, const std::vector<bench_row> &rows) {
  totals t;
  for (const bench_row &r : rows)
    if (r.speedup_f64 > 0 && r.target_speedup > 0 && (r.precision != "f64" || r.vprec != "f64")) {
      t.prec_n++;
      t.prec_met += r.speedup_f64 >= r.target_speedup;
    }
  for (const matrix_summary &s : sums) {
    bool gen = s.kind == "generated";
    bool big_real = !gen && s.nnz > 100000;
    if (gen || big_real) {
      (gen ? t.csr_gen : t.csr_real).add(s.speedup_csr, s.name);
      (gen ? t.auto_gen : t.auto_real).add(s.speedup_auto, s.name);
      (gen ? t.tune_gen : t.tune_real).add(s.speedup_tune, s.name);
      (gen ? t.best_gen : t.best_real).add(s.speedup_best, s.name);
      t.auto32_all.add(s.speedup_auto32, s.name);
    }
    if (s.nnz > 1000000) {
      t.pbp_big.add(s.pbp_x, s.name);
      t.tcki_big.add(s.tcki_x, s.name);
      if (s.pbp_ratio >= 0) {
        t.pbp_acc_n++;
        t.pbp_acc95 += s.pbp_ratio >= 0.95;
      }
      if (s.tcki_ratio >= 0) {
        t.tcki_acc_n++;
        t.tcki_acc95 += s.tcki_ratio >= 0.95;
      }
    }
    if (s.pbp_foot >= 0) t.pbp_red.add(1 - s.pbp_foot);
    if (s.tcki_foot >= 0) t.tcki_red.add(1 - s.tcki_foot);
    if (s.tcki_prep >= 0) t.tcki_prep.add(s.tcki_prep);
    for (int d = 0; d < 3; d++)
      if (s.share_d[d] >= 0) t.share_d[d].add(s.share_d[d]);
    if (s.auto_within_10 >= 0) {
      t.within10_n++;
      t.within10 += s.auto_within_10;
    }
    if (s.tune_within_5 >= 0) {
      t.tune5_n++;
      t.tune5 += s.tune_within_5;
    }
  }
  return t;
}

// ---- JSON, through the program's writer (tools/json.c: cJSON when the build has it) ----------
// Numbers that are not finite become null there (JSON has no Inf or NaN).
static void group_json(json *j, const char *key, const group_stats &g) {
  json_object(j, key);
  json_int(j, "count", g.n);
  json_number(j, "geomean", g.geomean());
  json_number(j, "min", g.n ? g.min : -1);
  json_string(j, "min_matrix", g.min_name.c_str());
  json_end(j);
}

static void count_of(json *j, const char *key, int count, int of) {
  json_object(j, key);
  json_int(j, "count", count);
  json_int(j, "of", of);
  json_end(j);
}

static void mean_json(json *j, const char *key, const mean_stats &m) {
  json_object(j, key);
  json_int(j, "count", m.n);
  json_number(j, "mean", m.mean());
  json_end(j);
}

static void tristate(json *j, const char *key, int v) {
  if (v < 0)
    json_null(j, key);
  else
    json_bool(j, key, v);
}

// One row: the common fields, the precision fields of our rows, the BDMP fields of bdmp:* rows.
static void row_json(json *j, const bench_row &r) {
  json_object(j, NULL);
  json_string(j, "matrix", r.matrix.c_str());
  json_string(j, "kind", r.kind.c_str());
  json_int(j, "rows", (long long)r.rows);
  json_int(j, "cols", (long long)r.cols);
  json_int(j, "nnz", (long long)r.nnz);
  json_string(j, "variant", r.variant.c_str());
  json_string(j, "format", r.format.c_str());
  json_string(j, "kernel", r.kernel.c_str());
  json_string(j, "precision", r.precision.c_str());
  json_string(j, "vector_precision", r.vprec.c_str());
  json_string(j, "status", r.status.c_str());
  json_number(j, "ms", r.ms);
  json_number(j, "ms_min", r.ms_min);
  json_number(j, "ms_max", r.ms_max);
  json_number(j, "bytes", r.bytes);
  json_number(j, "gbs", r.gbs);
  json_number(j, "pct_read_bw", r.pct_read);
  json_number(j, "gflops", r.gflops);
  json_number(j, "max_err", r.err);
  json_number(j, "setup_ms", r.setup_ms);
  json_string(j, "choice", r.choice.c_str());
  json_string(j, "note", r.note.c_str());
  if (r.variant.rfind("ours:", 0) == 0) {
    json_number(j, "err_limit", r.err_limit);
    json_number(j, "speedup_vs_f64", r.speedup_f64);
    json_number(j, "target_speedup", r.target_speedup);
    json_string(j, "peer", r.peer.c_str());
    json_number(j, "peer_ms", r.peer_ms);
    json_number(j, "speedup_vs_peer", r.peer_speedup);
  }
  if (r.variant.rfind("bdmp:", 0) == 0) {
    if (r.has_acc) {
      json_object(j, "accuracy");
      json_number(j, "ratio", r.acc_ratio);
      json_number(j, "min_digits", r.acc_min);
      json_number(j, "mean_digits", r.acc_mean);
      json_array(j, "hist");
      for (int d = 0; d < MSP_ACCURACY_BINS; d++)
        json_int(j, NULL, (long long)r.acc_hist[d]);
      json_end(j);
      json_end(j);
    } else {
      json_null(j, "accuracy");
    }
    json_number(j, "footprint_bytes", r.footprint);
    json_number(j, "footprint_vs_csr_f64", r.footprint_ratio);
    json_number(j, "fp32_share", r.fp32_share);
    json_int(j, "digits", r.digits);
    if (r.digits > 0)
      json_number(j, "bound", r.bound);
    else
      json_null(j, "bound");
    json_number(j, "prep_spmv_equiv", r.prep_spmv);
    json_number(j, "prep_device_ms", r.prep_dev_ms);
    json_number(j, "prep_device_spmv_equiv", r.prep_dev_spmv);
    json_number(j, "speedup_cusparse_csr_f64", r.speedup_cusp64);
    json_number(j, "speedup_cusparse_csr_f32", r.speedup_cusp32);
  }
  json_end(j);
}

static void summary_json(json *j, const matrix_summary &s) {
  json_object(j, NULL);
  json_string(j, "matrix", s.name.c_str());
  json_string(j, "kind", s.kind.c_str());
  json_int(j, "rows", (long long)s.rows);
  json_int(j, "nnz", (long long)s.nnz);
  json_number(j, "load_s", s.load_s);
  json_string(j, "best_cusparse", s.best_cusp.c_str());
  json_number(j, "best_cusparse_ms", s.best_cusp_ms);
  json_string(j, "best_cusparse_f32", s.best_cusp32.c_str());
  json_number(j, "best_cusparse_f32_ms", s.best_cusp32_ms);
  json_number(j, "csr_auto_ms", s.csr_auto_ms);
  json_string(j, "csr_auto_kernel", s.csr_auto_kernel.c_str());
  json_number(j, "csr_auto_pct_read_bw", s.csr_auto_pct);
  json_string(j, "fastest_kernel", s.fastest_kernel.c_str());
  json_number(j, "fastest_kernel_ms", s.fastest_kernel_ms);
  tristate(j, "auto_within_10pct", s.auto_within_10);
  json_number(j, "auto_ms", s.auto_ms);
  json_string(j, "auto_choice", s.auto_choice.c_str());
  json_number(j, "auto_pct_read_bw", s.auto_pct);
  json_number(j, "tune_ms", s.tune_ms);
  json_string(j, "tune_choice", s.tune_choice.c_str());
  tristate(j, "tune_within_5pct", s.tune_within_5);
  json_string(j, "best_ours", s.best_ours.c_str());
  json_number(j, "best_ours_ms", s.best_ours_ms);
  json_number(j, "speedup_csr_auto", s.speedup_csr);
  json_number(j, "speedup_auto", s.speedup_auto);
  json_number(j, "speedup_tune", s.speedup_tune);
  json_number(j, "speedup_best_ours", s.speedup_best);
  json_number(j, "speedup_auto_f32", s.speedup_auto32);
  json_object(j, "bdmp");
  json_number(j, "pbp_speedup_cusparse_csr_f64", s.pbp_x);
  json_number(j, "tcki_speedup_cusparse_csr_f64", s.tcki_x);
  json_number(j, "pbp_accuracy_ratio", s.pbp_ratio);
  json_number(j, "tcki_accuracy_ratio", s.tcki_ratio);
  json_number(j, "pbp_footprint_vs_csr_f64", s.pbp_foot);
  json_number(j, "tcki_footprint_vs_csr_f64", s.tcki_foot);
  json_number(j, "tcki_prep_spmv_equiv", s.tcki_prep);
  json_number(j, "fp32_share_d7", s.share_d[0]);
  json_number(j, "fp32_share_d8", s.share_d[1]);
  json_number(j, "fp32_share_d10", s.share_d[2]);
  json_end(j);
  json_end(j);
}

static void pair_json(json *j, const char *key, const group_stats &gen, const group_stats &real) {
  json_object(j, key);
  group_json(j, "generated", gen);
  group_json(j, "real_over_1e5", real);
  json_end(j);
}

bool write_json(const bench_state &S, const totals &t, const std::string &path) {
  json *j = json_new();
  if (!j) {
    fprintf(stderr, "mixsparse-bench: out of memory writing %s\n", path.c_str());
    return false;
  }
  json_string(j, "command", S.opt.command_line.c_str());
  json_object(j, "device");
  json_string(j, "name", S.props.name);
  json_int(j, "sms", S.props.multiprocessors);
  json_int(j, "l2_bytes", (long long)S.props.l2_cache_bytes);
  json_number(j, "peak_gbs", S.props.peak_bandwidth_gbs);
  json_number(j, "read_gbs", S.read_gbs);
  json_number(j, "copy_gbs", S.copy_gbs);
  json_end(j);
  json_object(j, "timing");
  json_int(j, "reps", S.opt.reps);
  json_int(j, "warmup", S.opt.warmup);
  json_string(j, "statistic", "median");
  json_bool(j, "l2_flushed", S.opt.flush_l2);
  json_string(j, "error", "max_i |y_i - ref_i| / (|A||x|)_i against the CPU backend's fp64 result");
  json_end(j);
  json_array(j, "rows");
  for (const bench_row &r : S.rows)
    row_json(j, r);
  json_end(j);
  json_array(j, "matrices");
  for (const matrix_summary &s : S.sums)
    summary_json(j, s);
  json_end(j);
  json_object(j, "summary");
  pair_json(j, "speedup_csr_auto", t.csr_gen, t.csr_real);
  pair_json(j, "speedup_auto", t.auto_gen, t.auto_real);
  pair_json(j, "speedup_tune", t.tune_gen, t.tune_real);
  pair_json(j, "speedup_best_ours", t.best_gen, t.best_real);
  group_json(j, "speedup_auto_f32", t.auto32_all);
  json_object(j, "precision_target_met");
  json_int(j, "count", t.prec_met);
  json_int(j, "of", t.prec_n);
  json_string(j, "rule", "t(P) <= t(f64) bytes(P) / bytes(f64) / 0.9, same variant, same run");
  json_end(j);
  count_of(j, "auto_kernel_within_10pct", t.within10, t.within10_n);
  count_of(j, "tune_within_5pct_of_best", t.tune5, t.tune5_n);
  json_object(j, "bdmp");
  group_json(j, "speedup_tcki_vs_cusparse_csr_f64_over_1e6", t.tcki_big);
  group_json(j, "speedup_pbp_vs_cusparse_csr_f64_over_1e6", t.pbp_big);
  count_of(j, "tcki_accuracy_ratio_ge_95pct_over_1e6", t.tcki_acc95, t.tcki_acc_n);
  count_of(j, "pbp_accuracy_ratio_ge_95pct_over_1e6", t.pbp_acc95, t.pbp_acc_n);
  mean_json(j, "tcki_footprint_reduction_vs_csr_f64", t.tcki_red);
  mean_json(j, "pbp_footprint_reduction_vs_csr_f64", t.pbp_red);
  mean_json(j, "tcki_prep_spmv_equiv", t.tcki_prep);
  mean_json(j, "fp32_share_d7", t.share_d[0]);
  mean_json(j, "fp32_share_d8", t.share_d[1]);
  mean_json(j, "fp32_share_d10", t.share_d[2]);
  json_end(j);
  json_end(j); // summary
  json_status(j, NULL);
  FILE *f = fopen(path.c_str(), "w");
  if (!f) {
    fprintf(stderr, "mixsparse-bench: cannot write %s: %s\n", path.c_str(), strerror(errno));
    json_free(j);
    return false;
  }
  bool ok = json_print(j, f) == MSP_SUCCESS; // frees j
  ok = fclose(f) == 0 && ok;
  if (!ok) fprintf(stderr, "mixsparse-bench: error writing %s\n", path.c_str());
  return ok;
}

bool write_csv(const bench_state &S, const std::string &path) {
  FILE *f = fopen(path.c_str(), "w");
  if (!f) {
    fprintf(stderr, "mixsparse-bench: cannot write %s: %s\n", path.c_str(), strerror(errno));
    return false;
  }
  fprintf(f, "matrix,kind,rows,cols,nnz,variant,precision,status,ms,ms_min,ms_max,bytes,gbs,pct_"
             "read_bw,gflops,"
             "max_err,setup_ms,choice,note,acc_ratio,min_digits,mean_digits,digit_hist,"
             "footprint_bytes,footprint_vs_csr_f64,fp32_share,digits,bound,prep_spmv,"
             "speedup_cusparse_csr_f64,speedup_cusparse_csr_f32,format,kernel,vector_precision,"
             "err_limit,speedup_vs_f64,target_speedup,peer,peer_ms,speedup_vs_peer,prep_device_ms,"
             "prep_device_spmv\n");
  for (const bench_row &r : S.rows) {
    std::string hist; // digits 0..7 and >= 8, ';'-separated (one CSV field)
    if (r.has_acc)
      for (int d = 0; d < MSP_ACCURACY_BINS; d++)
        hist += (d ? ";" : "") + std::to_string((long long)r.acc_hist[d]);
    fprintf(f,
            "%s,%s,%lld,%lld,%lld,%s,%s,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.4g,%.6g,%.3e,%.6g,%s,%s,"
            "%.6g,%.6g,%.6g,%s,%.6g,%.6g,%.6g,%d,%.6g,%.6g,%.6g,%.6g,%s,%s,%s,%.3g,%.6g,%.6g,%s,"
            "%.6g,%.6g,%.6g,%.6g\n",
            csv_field(r.matrix).c_str(), r.kind.c_str(), (long long)r.rows, (long long)r.cols,
            (long long)r.nnz, r.variant.c_str(), r.precision.c_str(), r.status.c_str(), r.ms,
            r.ms_min, r.ms_max, r.bytes, r.gbs, r.pct_read, r.gflops, r.err, r.setup_ms,
            csv_field(r.choice).c_str(), csv_field(r.note).c_str(), r.acc_ratio, r.acc_min,
            r.acc_mean, hist.c_str(), r.footprint, r.footprint_ratio, r.fp32_share, r.digits,
            r.bound, r.prep_spmv, r.speedup_cusp64, r.speedup_cusp32, r.format.c_str(),
            r.kernel.c_str(), csv_field(r.vprec).c_str(), r.err_limit, r.speedup_f64,
            r.target_speedup, csv_field(r.peer).c_str(), r.peer_ms, r.peer_speedup, r.prep_dev_ms,
            r.prep_dev_spmv);
  }
  bool ok = fclose(f) == 0;
  if (!ok) fprintf(stderr, "mixsparse-bench: error writing %s\n", path.c_str());
  return ok;
}

std::string plot_script(const options &o) {
  if (!o.plot_script.empty()) return o.plot_script;
  if (const char *e = getenv("MSP_BENCH_PLOT")) return e;
  struct stat sb;
  std::string p = std::string(MSP_BENCH_SOURCE_DIR) + "/plot.py";
  if (stat(p.c_str(), &sb) == 0) return p;
  return "bench/plot.py";
}

std::string shell_quote(const std::string &s) {
  std::string o = "'";
  for (char c : s) {
    if (c == '\'')
      o += "'\\''";
    else
      o += c;
  }
  return o + "'";
}

void print_totals(const bench_state &S, const totals &t) {
  printf("\n==== summary (fp64, speedup = t(fastest cuSPARSE variant) / t(ours)) ====\n");
  printf("%-22s %11s %-20s %9s %-12s %7s %-14s %7s %7s %7s %-7s\n", "matrix", "nnz",
         "fastest cuSPARSE", "ms", "csr-auto", "x", "auto", "x", "tune x", "best x", "%read");
  for (const matrix_summary &s : S.sums) {
    std::string name = s.name.size() > 22 ? s.name.substr(0, 21) + "~" : s.name;
    std::string cusp =
        s.best_cusp.size() > 9 ? s.best_cusp.substr(9) : s.best_cusp; // drop "cusparse:"
    std::string ka = s.csr_auto_kernel + (s.auto_within_10 == 0 ? "(!)" : "");
    printf("%-22s %11lld %-20s %9.4f %-12s %7.2f %-14s %7.2f %7.2f %7.2f %6.1f\n", name.c_str(),
           (long long)s.nnz, cusp.c_str(), s.best_cusp_ms, ka.c_str(), s.speedup_csr,
           s.auto_choice.c_str(), s.speedup_auto, s.speedup_tune, s.speedup_best, s.auto_pct);
  }
  auto line = [](const char *what, const group_stats &g) {
    if (g.n)
      printf("  %-44s geomean %.3f over %d, min %.3f (%s)\n", what, g.geomean(), g.n, g.min,
             g.min_name.c_str());
    else
      printf("  %-44s no matrices\n", what);
  };
  printf("\n");
  line("csr-auto vs cuSPARSE, generated suite:", t.csr_gen);
  line("csr-auto vs cuSPARSE, real matrices > 1e5 nnz:", t.csr_real);
  line("format AUTO vs cuSPARSE, generated suite:", t.auto_gen);
  line("format AUTO vs cuSPARSE, real matrices > 1e5 nnz:", t.auto_real);
  line("TUNE vs cuSPARSE, generated suite:", t.tune_gen);
  line("TUNE vs cuSPARSE, real matrices > 1e5 nnz:", t.tune_real);
  line("best of ours vs cuSPARSE, generated suite:", t.best_gen);
  line("best of ours vs cuSPARSE, real > 1e5 nnz:", t.best_real);
  line("fp32: AUTO f32 vs fastest cuSPARSE f32:", t.auto32_all);
  printf("  auto CSR kernel within 10%% of the fastest of scalar/vector/merge: %d of %d matrices\n",
         t.within10, t.within10_n);
  printf("  TUNE within 5%% of our fastest fixed variant: %d of %d matrices\n", t.tune5, t.tune5_n);
  printf("  precision rows (values or x,y not f64) meeting t(P) <= t(f64) bytes(P)/bytes(f64)/0.9: "
         "%d of %d (per matrix and format: scripts/bench-table-precision.py)\n",
         t.prec_met, t.prec_n);
  int wrong = 0, errors = 0;
  for (const bench_row &r : S.rows) {
    wrong += r.status == "wrong";
    errors += r.status == "error";
  }
  printf("  rows marked WRONG (error above the limit, left out of the figures above): %d; failed "
         "products: %d\n",
         wrong, errors);
  printf(
      "  (%% read = format AUTO's GB/s by its byte model over the measured read bandwidth %.0f "
      "GB/s;\n"
      "   (!) marks a matrix where the auto kernel was more than 10%% slower than the fastest)\n",
      S.read_gbs);
  printf("\n==== BDMP mixed precision (bdmp:* rows; accuracy ratio = share of rows with >= 7 "
         "significant digits against the CPU fp64 result) ====\n");
  line("BDMP-TCKI vs cuSPARSE CSR f64, nnz > 1e6:", t.tcki_big);
  line("BDMP-PBP vs cuSPARSE CSR f64, nnz > 1e6:", t.pbp_big);
  printf("  accuracy ratio >= 95%% (nnz > 1e6): TCKI %d of %d, PBP %d of %d matrices\n",
         t.tcki_acc95, t.tcki_acc_n, t.pbp_acc95, t.pbp_acc_n);
  auto mean_line = [](const char *what, const mean_stats &m, double scale, const char *unit) {
    if (m.n)
      printf("  %-44s mean %.3g%s over %d\n", what, scale * m.mean(), unit, m.n);
    else
      printf("  %-44s no matrices\n", what);
  };
  mean_line("footprint reduction vs CSR f64, TCKI:", t.tcki_red, 100, "%");
  mean_line("footprint reduction vs CSR f64, PBP:", t.pbp_red, 100, "%");
  mean_line("TCKI preprocessing, in our CSR f64 SpMVs:", t.tcki_prep, 1, "");
  mean_line("fp32 share of nonzeros, TCKI D = 7:", t.share_d[0], 100, "%");
  mean_line("fp32 share of nonzeros, TCKI D = 8:", t.share_d[1], 100, "%");
  mean_line("fp32 share of nonzeros, TCKI D = 10:", t.share_d[2], 100, "%");
}

// bench_precision.cu: mixsparse-bench's rows per storage precision and the BDMP rows (
// accuracy, footprint, preprocessing), their speedups, the per-matrix summary and the printed
// rows (bench_run.h).
#include "bench_run.h"
#include "precision.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

// ---- storage precision and BDMP mixed precision ---------------------------------------
// Which matrices get the bdmp:* rows: every one with >= 1e6 nonzeros, and real ones with >= 1e5
// (the BDMP conversions are host work, seconds on the largest matrices).
bool bdmp_eligible(const bench_matrix &M) {
  return M.nnz >= 1000000 || (M.kind == "real" && M.nnz >= 100000);
}

// The allowance of the BDMP rows: --bdmp-budget, else half of --budget, else none.
bool bdmp_past_budget(const bench_state &S) {
  double b = S.opt.bdmp_budget_s >= 0 ? S.opt.bdmp_budget_s
                                      : (S.opt.budget_s > 0 ? 0.5 * S.opt.budget_s : -1);
  return b >= 0 && S.bdmp_spent > b;
}

// Fill the accuracy columns of r from y (msp_accuracy_compare against the CPU fp64 reference).
void bdmp_accuracy(const bench_matrix &M, const std::vector<double> &y, bench_row *r) {
  msp_accuracy acc;
  if (y.size() < (size_t)M.rows ||
      msp_accuracy_compare(M.rows, y.data(), M.ref, &acc) != MSP_SUCCESS)
    return;
  r->has_acc = true;
  r->acc_ratio = acc.ratio;
  r->acc_min = acc.min_digits;
  r->acc_mean = acc.mean_digits;
  for (int d = 0; d < MSP_ACCURACY_BINS; d++)
    r->acc_hist[d] = acc.hist[d];
}

// The BDMP rows, each timed (median of at most 20) and compared digit by digit with the
// reference: our CSR fp64 (the matrix as uploaded, kernel rule), CSR with fp32 storage, BDMP-PBP
// (threshold mode, default f, and the error-bounded mode with D = 7) and BDMP-TCKI (threshold
// mode, and the error-bounded mode with D = 7, 8, 10).
// Speedups over cuSPARSE are filled in by bdmp_speedups once cuSPARSE has run.
void run_bdmp(bench_state &S, const bench_matrix &M, msp_matrix A, msp_vector xv, msp_vector yv) {
  if (!bdmp_eligible(M)) return;
  bench_timing ts = S.ts;
  ts.reps = std::min(S.opt.reps, 20);
  ts.warmup = std::min(S.opt.warmup, 3);
  const size_t csr_bytes = msp_matrix_bytes(A);
  double csr_ms = -1;
  struct variant {
    const char *name, *prec;
    msp_format format;
    msp_precision precision;
    int digits;
  };
  const variant vs[] = {
      {"bdmp:csr", "f64", MSP_FORMAT_CSR, MSP_PRECISION_F64, 0},
      {"bdmp:csr", "f32", MSP_FORMAT_CSR, MSP_PRECISION_F32, 0},
      {"bdmp:pbp", "mixed", MSP_FORMAT_BDMP_PBP, MSP_PRECISION_F64, 0},
      {"bdmp:pbp-d7", "mixed", MSP_FORMAT_BDMP_PBP, MSP_PRECISION_F64, 7},
      {"bdmp:tcki", "mixed", MSP_FORMAT_BDMP_TCKI, MSP_PRECISION_F64, 0},
      {"bdmp:tcki-d7", "mixed", MSP_FORMAT_BDMP_TCKI, MSP_PRECISION_F64, 7},
      {"bdmp:tcki-d8", "mixed", MSP_FORMAT_BDMP_TCKI, MSP_PRECISION_F64, 8},
      {"bdmp:tcki-d10", "mixed", MSP_FORMAT_BDMP_TCKI, MSP_PRECISION_F64, 10},
      // accuracy-aware AUTO: the format and storage AUTO picks for 7 digits (its choice in the
      // row's `choice`), against AUTO in fp64 (the ours:auto row)
      {"bdmp:auto-d7", "chosen", MSP_FORMAT_AUTO, MSP_PRECISION_F64, 7},
  };
  for (const variant &v : vs) {
    if (!S.opt.bdmp_variants.empty() &&
        (',' + S.opt.bdmp_variants + ',').find(',' + std::string(v.name + 5) + ',') ==
            std::string::npos)
      continue;
    bench_row r = make_row(M, v.name, v.prec);
    r.digits = v.digits;
    if (bench_device_broken()) {
      r.status = "n/a";
      r.note = "skipped: an earlier sticky device error";
      S.rows.push_back(r);
      continue;
    }
    if (bdmp_past_budget(S)) {
      r.status = "n/a";
      r.note = "skipped: past the --bdmp-budget time";
      S.rows.push_back(r);
      continue;
    }
    std::vector<double> y;
    msp_matrix B = nullptr;
    const bool as_uploaded = v.format == MSP_FORMAT_CSR && v.precision == MSP_PRECISION_F64;
    msp_status cst = MSP_SUCCESS;
    if (as_uploaded) {
      cst = msp_matrix_set_kernel(A, MSP_KERNEL_AUTO);
      r.setup_ms = 0;
    } else {
      msp_convert_options co = msp_convert_options_default();
      co.format = v.format;
      co.kernel = MSP_KERNEL_AUTO;
      co.precision = v.precision;
      co.bdmp_digits = v.digits;
      double c0 = now_s();
      cst = msp_matrix_convert(S.gpu, A, &co, &B);
      r.setup_ms = 1e3 * (now_s() - c0);
    }
    if (cst != MSP_SUCCESS) {
      r.status = "n/a";
      r.note = status_text(cst);
      if (cst == MSP_ERR_DEVICE)
        bench_cuda_ok(cudaDeviceSynchronize(), "after msp_matrix_convert", nullptr);
      S.rows.push_back(r);
      continue;
    }
    msp_matrix C = as_uploaded ? A : B;
    if (msp_matrix_format(C) == MSP_FORMAT_CSR)
      r.choice = std::string("csr/") + msp_kernel_name(msp_matrix_kernel(C));
    if (v.format == MSP_FORMAT_AUTO)
      r.choice = std::string(msp_format_name(msp_matrix_format(C))) + " " +
                 msp_precision_name(msp_matrix_precision(C));
    r.footprint = (double)msp_matrix_bytes(C);
    r.footprint_ratio = csr_bytes ? r.footprint / (double)csr_bytes : -1;
    msp_bdmp_report rep;
    if (msp_matrix_bdmp_info(C, &rep) == MSP_SUCCESS) {
      int64_t nz = rep.nnz_f32 + rep.nnz_f64;
      r.fp32_share = nz ? (double)rep.nnz_f32 / (double)nz : 0;
      if (rep.digits > 0) r.bound = rep.bound;
      if (rep.convert_device_ms > 0) r.prep_dev_ms = rep.convert_device_ms;
      char b[96];
      if (rep.digits > 0)
        snprintf(b, sizeof b, "D=%d bound %.3g", rep.digits, rep.bound);
      else
        snprintf(b, sizeof b, "lambda %.4g", rep.lambda);
      r.choice = v.format == MSP_FORMAT_AUTO ? r.choice + " " + b : std::string(b);
    } else if (msp_matrix_precision(C) == MSP_PRECISION_F32) {
      r.fp32_share = 1;
    } else {
      r.fp32_share = 0;
    }
    run_ours(S, M, C, xv, yv, &r, &y, &ts);
    bdmp_accuracy(M, y, &r);
    if (as_uploaded && r.status == "ok") csr_ms = r.ms;
    if (!as_uploaded && csr_ms > 0) r.prep_spmv = r.setup_ms / csr_ms;
    if (r.prep_dev_ms > 0 && csr_ms > 0) r.prep_dev_spmv = r.prep_dev_ms / csr_ms;
    msp_matrix_destroy(&B);
    S.rows.push_back(r);
  }
}

// Unit roundoff of values stored as `s` and read as it says: relative for the IEEE types, 2^-m
// for CPMS read with m mantissa bits (truncation), relative to the block's largest value for
// fixed point. 2^-53 for f64 and CPMS read whole.
double unit_of(const prec_spec &s) {
  switch (s.p) {
  case MSP_PRECISION_F32:
    return std::ldexp(1.0, -24);
  case MSP_PRECISION_F16:
    return std::ldexp(1.0, -11);
  case MSP_PRECISION_BF16:
    return std::ldexp(1.0, -8);
  case MSP_PRECISION_FX32:
    return std::ldexp(1.0, -31);
  case MSP_PRECISION_FX16:
    return std::ldexp(1.0, -15);
  case MSP_PRECISION_CPMS2:
  case MSP_PRECISION_CPMS4: {
    const int all = msp__prec_segments(s.p);
    const int k = s.segments > 0 && s.segments < all ? s.segments : all;
    const int bits = k * (64 / all) - 12; // sign and exponent come first
    return bits >= 52 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -bits);
  }
  default:
    return std::ldexp(1.0, -53);
  }
}

// The error limit of a row (bench_row_derive): 1e-8 when everything is f64-exact; otherwise
// 8 x (the values' roundoff + x's + y's), at least 1e-2. Rounding stays below it; a wrong
// kernel lands near 1 or at inf.
double error_limit(const prec_spec &a, const prec_spec &v) {
  const double u = unit_of(a) + 2.0 * unit_of(v);
  return u <= std::ldexp(1.0, -50) ? 1e-8 : std::max(1e-2, 8.0 * u);
}

// Rows kept past the budget: csr-auto and AUTO in every precision, TUNE in f64.
bool essential(msp_format f, msp_kernel k, bool all_f64) {
  return f == MSP_FORMAT_AUTO || (f == MSP_FORMAT_CSR && k == MSP_KERNEL_AUTO) ||
         (f == MSP_FORMAT_TUNE && all_f64);
}

std::string format_tag(msp_format f) {
  return f == MSP_FORMAT_AUTO ? "auto" : f == MSP_FORMAT_TUNE ? "tune" : msp_format_name(f);
}

const bench_row *find_row(const std::vector<bench_row> &rows, size_t from, const char *variant,
                          const char *prec) {
  for (size_t i = from; i < rows.size(); i++)
    if (rows[i].variant == variant && rows[i].precision == prec && rows[i].vprec == "f64" &&
        rows[i].status == "ok")
      return &rows[i];
  return nullptr;
}

} // namespace

// The precision columns of our rows, once cuSPARSE has run: speedup over the same variant with
// f64 values and f64 vectors, the speedup the byte ratio asks for, and the peer (the fastest
// cuSPARSE variant in the row's storage precision).
void precision_speedups(std::vector<bench_row> &rows, size_t from) {
  for (size_t i = from; i < rows.size(); i++) {
    bench_row &r = rows[i];
    if (r.variant.rfind("ours:", 0) != 0 || r.status != "ok" || !(r.ms > 0)) continue;
    for (size_t j = from; j < rows.size(); j++) {
      const bench_row &b = rows[j];
      if (b.variant == r.variant && b.precision == "f64" && b.vprec == "f64" && b.status == "ok" &&
          b.ms > 0) {
        r.speedup_f64 = b.ms / r.ms;
        if (r.bytes > 0) r.target_speedup = 0.9 * b.bytes / r.bytes;
        break;
      }
    }
    if (!bench_cusparse_has_peer(r.precision)) continue;
    for (size_t j = from; j < rows.size(); j++) {
      const bench_row &c = rows[j];
      if (c.variant.rfind("cusparse:", 0) != 0 || c.precision != r.precision || c.status != "ok" ||
          !(c.ms > 0))
        continue;
      if (r.peer_ms < 0 || c.ms < r.peer_ms) {
        r.peer_ms = c.ms;
        r.peer = c.variant + " " + c.precision + " x,y " + c.vprec;
      }
    }
    if (r.peer_ms > 0) r.peer_speedup = r.peer_ms / r.ms;
  }
}

void print_summary_line(const matrix_summary &s) {
  printf("  fastest cuSPARSE f64: %s %.4f ms | ours csr-auto (%s) %.4f ms: %.2fx | fastest kernel "
         "%s%s | "
         "ours auto (%s) %.4f ms: %.2fx | tune (%s) %.2fx | best ours %s %.2fx\n",
         s.best_cusp.empty() ? "none" : s.best_cusp.c_str(), s.best_cusp_ms,
         s.csr_auto_kernel.c_str(), s.csr_auto_ms, s.speedup_csr, s.fastest_kernel.c_str(),
         s.auto_within_10 < 0
             ? ""
             : (s.auto_within_10 ? " (auto within 10%)" : " (auto NOT within 10%)"),
         s.auto_choice.c_str(), s.auto_ms, s.speedup_auto, s.tune_choice.c_str(), s.speedup_tune,
         s.best_ours.c_str(), s.speedup_best);
}

// Every format x storage precision x (CSR: kernel) x vector precision asked for. One conversion
// per format and precision serves its CPMS segment counts (msp_matrix_set_cpms_segments), its
// kernels (msp_matrix_set_kernel) and every vector precision; CSR in f64 is the uploaded matrix.
void run_ours_all(bench_state &S, const bench_matrix &M) {
  const options &o = S.opt;
  const size_t nv = o.vprecisions.size();
  msp_matrix A = nullptr;
  std::vector<msp_vector> xs(nv, nullptr), ys(nv, nullptr);
  double t0 = now_s();
  msp_status st = msp_matrix_from_csr(S.gpu, M.rows, M.cols, M.rowptr, M.colind, M.val, 0, &A);
  double upload_ms = 1e3 * (now_s() - t0);
  for (size_t v = 0; v < nv && st == MSP_SUCCESS; v++) {
    const prec_spec &vp = o.vprecisions[v];
    st = msp_vector_create_precision(S.gpu, M.cols, vp.p, &xs[v]);
    if (st == MSP_SUCCESS) st = msp_vector_create_precision(S.gpu, M.rows, vp.p, &ys[v]);
    if (st == MSP_SUCCESS) st = msp_vector_set(xs[v], M.x);
    // x is read with the segments asked for; y is read back whole, so that the row's error is
    // the product's and not the truncation of the read-back.
    if (st == MSP_SUCCESS && vp.segments) st = msp_vector_set_cpms_segments(xs[v], vp.segments);
  }
  std::string setup_why = st == MSP_SUCCESS ? "" : status_text(st);

  // Formats in list order (those named by --formats), then AUTO and TUNE.
  std::vector<msp_format> fl;
  for (msp_format f : kListFormats)
    if (!has_own_rows(f) && has(o.formats, msp_format_name(f))) fl.push_back(f);
  if (has(o.formats, "auto")) fl.push_back(MSP_FORMAT_AUTO);
  if (has(o.formats, "tune")) fl.push_back(MSP_FORMAT_TUNE);
  // Storage precisions grouped by precision, in the order first named.
  std::vector<msp_precision> bases;
  for (const prec_spec &p : o.precisions)
    if (std::find(bases.begin(), bases.end(), p.p) == bases.end()) bases.push_back(p.p);
  // CSR: every kernel of the enum, the rule's choice (AUTO) last.
  std::vector<msp_kernel> csr_kernels;
  for (int k = 0; k < MSP_KERNEL_COUNT; k++)
    if (k != MSP_KERNEL_AUTO) csr_kernels.push_back((msp_kernel)k);
  csr_kernels.push_back(MSP_KERNEL_AUTO);
  const std::vector<msp_kernel> no_kernel = {MSP_KERNEL_AUTO};

  for (msp_format f : fl) {
    const std::string ftag = format_tag(f);
    const std::vector<msp_kernel> &kernels = f == MSP_FORMAT_CSR ? csr_kernels : no_kernel;
    for (msp_precision base : bases) {
      // The rows of this conversion, and whether any of them runs under the budget now.
      struct job {
        const prec_spec *p;
        msp_kernel k;
        size_t v;
        bench_row r;
        bool skip;
      };
      std::vector<job> jobs;
      const int level = budget_level(S);
      bool any = false;
      for (const prec_spec &p : o.precisions) {
        if (p.p != base) continue;
        for (msp_kernel k : kernels)
          for (size_t v = 0; v < nv; v++) {
            const prec_spec &vp = o.vprecisions[v];
            const bool all_f64 = p.p == MSP_PRECISION_F64 && vp.p == MSP_PRECISION_F64;
            std::string variant =
                "ours:" + ftag + (f == MSP_FORMAT_CSR ? "-" + std::string(msp_kernel_name(k)) : "");
            job j{&p, k, v, make_row(M, variant, p.tag), false};
            j.r.format = ftag;
            if (f == MSP_FORMAT_CSR) j.r.kernel = msp_kernel_name(k);
            j.r.vprec = vp.tag;
            j.r.err_limit = error_limit(p, vp);
            j.skip = !essential(f, k, all_f64) && ((level >= 1 && !all_f64) || level >= 2);
            any = any || !j.skip;
            jobs.push_back(j);
          }
      }
      auto refuse_all = [&](const std::string &why) {
        for (job &j : jobs) {
          j.r.status = "n/a";
          j.r.note = why;
          S.rows.push_back(j.r);
        }
      };
      if (!setup_why.empty()) {
        refuse_all(setup_why);
        continue;
      }
      if (bench_device_broken()) {
        refuse_all("skipped: an earlier sticky device error");
        continue;
      }
      if (!any) {
        refuse_all("skipped: past the --budget time");
        continue;
      }
      fprintf(stderr, "[%7.1f s]   %s: format %s, precision %s\n", now_s(), M.name.c_str(),
              ftag.c_str(), msp_precision_name(base));
      msp_matrix B = nullptr;
      double setup_ms = upload_ms;
      const bool uploaded = f == MSP_FORMAT_CSR && base == MSP_PRECISION_F64;
      if (!uploaded) {
        msp_convert_options co = msp_convert_options_default();
        co.format = f;
        co.kernel = MSP_KERNEL_AUTO;
        co.precision = base;
        double c0 = now_s();
        msp_status cst = msp_matrix_convert(S.gpu, A, &co, &B);
        setup_ms = 1e3 * (now_s() - c0);
        if (cst != MSP_SUCCESS) {
          if (cst == MSP_ERR_DEVICE)
            bench_cuda_ok(cudaDeviceSynchronize(), "after msp_matrix_convert", nullptr);
          refuse_all(status_text(cst));
          continue;
        }
      }
      msp_matrix C = uploaded ? A : B;
      for (job &j : jobs) {
        bench_row &r = j.r;
        r.setup_ms = setup_ms;
        msp_status cst = MSP_SUCCESS;
        if (j.skip) {
          cst = MSP_ERR_NOT_SUPPORTED;
          r.note = "skipped: past the --budget time";
        } else if (bench_device_broken()) {
          cst = MSP_ERR_DEVICE;
          r.note = "skipped: an earlier sticky device error";
        } else {
          if (msp__prec_segments(base) > 1) cst = msp_matrix_set_cpms_segments(C, j.p->segments);
          if (cst == MSP_SUCCESS && f == MSP_FORMAT_CSR) cst = msp_matrix_set_kernel(C, j.k);
          if (cst != MSP_SUCCESS) r.note = status_text(cst);
        }
        if (cst != MSP_SUCCESS) {
          r.status = "n/a";
          S.rows.push_back(r);
          continue;
        }
        msp_format bf = msp_matrix_format(C);
        if (f == MSP_FORMAT_CSR) {
          if (j.k == MSP_KERNEL_AUTO) {
            r.choice = msp_kernel_name(msp_matrix_kernel(C));
            r.note = msp_matrix_choice_reason(C);
          }
        } else if (f == MSP_FORMAT_AUTO || f == MSP_FORMAT_TUNE) {
          r.choice = msp_format_name(bf) ? msp_format_name(bf) : "?";
          if (bf == MSP_FORMAT_CSR)
            r.choice += std::string("/") + msp_kernel_name(msp_matrix_kernel(C));
          r.note = msp_matrix_choice_reason(C);
        }
        run_ours(S, M, C, xs[j.v], ys[j.v], &r);
        S.rows.push_back(r);
      }
      msp_matrix_destroy(&B);
    }
  }
  if (has(o.formats, "bdmp") && setup_why.empty() && !bench_device_broken()) {
    // The BDMP rows take x and y in f64: the f64 pair if one was made, else a pair of their own.
    msp_vector xd = nullptr, yd = nullptr;
    bool own = true;
    for (size_t v = 0; v < nv; v++)
      if (o.vprecisions[v].p == MSP_PRECISION_F64) {
        xd = xs[v];
        yd = ys[v];
        own = false;
        break;
      }
    msp_status vst = MSP_SUCCESS;
    if (own) {
      vst = msp_vector_create(S.gpu, M.cols, &xd);
      if (vst == MSP_SUCCESS) vst = msp_vector_create(S.gpu, M.rows, &yd);
      if (vst == MSP_SUCCESS) vst = msp_vector_set(xd, M.x);
    }
    double b0 = now_s();
    fprintf(stderr, "[%7.1f s]   %s: the BDMP rows\n", now_s(), M.name.c_str());
    if (vst == MSP_SUCCESS) run_bdmp(S, M, A, xd, yd);
    S.bdmp_spent += now_s() - b0;
    if (own) {
      msp_vector_destroy(&xd);
      msp_vector_destroy(&yd);
    }
  }
  for (size_t v = 0; v < nv; v++) {
    msp_vector_destroy(&xs[v]);
    msp_vector_destroy(&ys[v]);
  }
  msp_matrix_destroy(&A);
}

void print_rows(const std::vector<bench_row> &rows, size_t from) {
  printf("  %-22s %-8s %-7s %9s %9s %6s %8s %6s %6s %7s %9s %9s  %s\n", "variant", "prec", "x,y",
         "ms", "GB/s", "%read", "GFLOP/s", "x f64", "target", "x peer", "max err", "setup ms",
         "choice / note");
  auto num = [](double v, const char *fmt) {
    char b[32];
    if (v > 0)
      snprintf(b, sizeof b, fmt, v);
    else
      snprintf(b, sizeof b, "-");
    return std::string(b);
  };
  for (size_t i = from; i < rows.size(); i++) {
    const bench_row &r = rows[i];
    std::string note =
        r.choice.empty() ? r.note : (r.note.empty() ? r.choice : r.choice + ": " + r.note);
    if (r.status == "ok" || r.status == "wrong") {
      printf("  %-22s %-8s %-7s %9.4f %9.1f %6.1f %8.1f %6s %6s %7s %9.2e %9.1f  %s%s\n",
             r.variant.c_str(), r.precision.c_str(), r.vprec.c_str(), r.ms, r.gbs, r.pct_read,
             r.gflops, num(r.speedup_f64, "%.2f").c_str(), num(r.target_speedup, "%.2f").c_str(),
             num(r.peer_speedup, "%.2f").c_str(), r.err, r.setup_ms,
             r.status == "wrong" ? "WRONG: " : "", note.c_str());
      if (r.has_acc) {
        // The BDMP facts of the row, on a line of their own under it.
        printf("  %-27s acc %.4f (digits min %.0f mean %.1f; ", "", r.acc_ratio, r.acc_min,
               r.acc_mean);
        for (int d = 0; d < MSP_ACCURACY_BINS; d++)
          printf("%s%s%d:%lld", d ? " " : "", d == MSP_ACCURACY_BINS - 1 ? ">=" : "", d,
                 (long long)r.acc_hist[d]);
        printf(") bytes %.3fx csr-f64, fp32 %.1f%%", r.footprint_ratio, 100 * r.fp32_share);
        if (r.prep_spmv >= 0) printf(", prep %.1f SpMV", r.prep_spmv);
        if (r.prep_dev_spmv >= 0) printf(" (device %.1f)", r.prep_dev_spmv);
        printf(", vs cuSPARSE csr f64 %.2fx f32 %.2fx\n", r.speedup_cusp64, r.speedup_cusp32);
      }
    } else {
      printf("  %-22s %-8s %-7s %9s %9s %6s %8s %6s %6s %7s %9s %9s  %s\n", r.variant.c_str(),
             r.precision.c_str(), r.vprec.c_str(), r.status.c_str(), "", "", "", "", "", "", "", "",
             note.c_str());
    }
  }
}

// Speedups of the bdmp:* rows over cuSPARSE CSR (the faster of default and ALG2) in fp64 and fp32.
void bdmp_speedups(std::vector<bench_row> &rows, size_t from) {
  double c64 = -1, c32 = -1;
  for (size_t i = from; i < rows.size(); i++) {
    const bench_row &r = rows[i];
    if (r.status != "ok" ||
        (r.variant != "cusparse:csr-default" && r.variant != "cusparse:csr-alg2"))
      continue;
    double &c = r.precision == "f64" ? c64 : c32;
    if (c < 0 || r.ms < c) c = r.ms;
  }
  for (size_t i = from; i < rows.size(); i++) {
    bench_row &r = rows[i];
    if (r.variant.rfind("bdmp:", 0) != 0 || r.status != "ok" || !(r.ms > 0)) continue;
    if (c64 > 0) r.speedup_cusp64 = c64 / r.ms;
    if (c32 > 0) r.speedup_cusp32 = c32 / r.ms;
  }
}

matrix_summary summarize(const std::vector<bench_row> &rows, size_t from, const bench_matrix &M,
                         double load_s) {
  matrix_summary s;
  s.name = M.name;
  s.kind = M.kind;
  s.rows = M.rows;
  s.cols = M.cols;
  s.nnz = M.nnz;
  s.load_s = load_s;
  for (size_t i = from; i < rows.size(); i++) {
    const bench_row &r = rows[i];
    // The cuSPARSE comparisons are about f64 (and f32) values with x and y in f64 (cuSPARSE: in
    // the values' precision).
    if (r.status != "ok") continue;
    if (r.variant.rfind("ours:", 0) == 0 && r.vprec != "f64") continue;
    if (r.variant.rfind("cusparse:", 0) == 0) {
      if (r.precision == "f64" && (s.best_cusp_ms < 0 || r.ms < s.best_cusp_ms)) {
        s.best_cusp_ms = r.ms;
        s.best_cusp = r.variant;
      }
      if (r.precision == "f32" && (s.best_cusp32_ms < 0 || r.ms < s.best_cusp32_ms)) {
        s.best_cusp32_ms = r.ms;
        s.best_cusp32 = r.variant;
      }
    } else if (r.precision == "f64" && r.variant != "ours:tune" &&
               r.variant.rfind("ours:", 0) == 0) {
      // The best of our fixed choices (TUNE is judged against it).
      if (s.best_ours_ms < 0 || r.ms < s.best_ours_ms) {
        s.best_ours_ms = r.ms;
        s.best_ours = r.variant;
      }
    }
  }
  const char *kn[] = {"ours:csr-scalar", "ours:csr-vector", "ours:csr-merge"};
  int measured = 0;
  for (const char *k : kn) {
    const bench_row *r = find_row(rows, from, k, "f64");
    if (!r) continue;
    measured++;
    if (s.fastest_kernel_ms < 0 || r->ms < s.fastest_kernel_ms) {
      s.fastest_kernel_ms = r->ms;
      s.fastest_kernel = std::string(k).substr(9); // after "ours:csr-"
    }
  }
  if (const bench_row *r = find_row(rows, from, "ours:csr-auto", "f64")) {
    s.csr_auto_ms = r->ms;
    s.csr_auto_pct = r->pct_read;
    s.csr_auto_kernel = r->choice;
    if (measured == 3) s.auto_within_10 = r->ms <= 1.10 * s.fastest_kernel_ms;
  }
  if (const bench_row *r = find_row(rows, from, "ours:auto", "f64")) {
    s.auto_ms = r->ms;
    s.auto_pct = r->pct_read;
    s.auto_choice = r->choice;
  }
  if (const bench_row *r = find_row(rows, from, "ours:auto", "f32")) s.auto32_ms = r->ms;
  if (const bench_row *r = find_row(rows, from, "ours:tune", "f64")) {
    s.tune_ms = r->ms;
    s.tune_choice = r->choice;
    if (s.best_ours_ms > 0) s.tune_within_5 = r->ms <= 1.05 * s.best_ours_ms;
  }
  if (s.best_cusp_ms > 0) {
    if (s.csr_auto_ms > 0) s.speedup_csr = s.best_cusp_ms / s.csr_auto_ms;
    if (s.auto_ms > 0) s.speedup_auto = s.best_cusp_ms / s.auto_ms;
    if (s.tune_ms > 0) s.speedup_tune = s.best_cusp_ms / s.tune_ms;
    if (s.best_ours_ms > 0) s.speedup_best = s.best_cusp_ms / s.best_ours_ms;
  }
  if (s.best_cusp32_ms > 0 && s.auto32_ms > 0) s.speedup_auto32 = s.best_cusp32_ms / s.auto32_ms;
  if (const bench_row *r = find_row(rows, from, "bdmp:pbp", "mixed")) {
    s.pbp_x = r->speedup_cusp64;
    s.pbp_ratio = r->acc_ratio;
    s.pbp_foot = r->footprint_ratio;
  }
  if (const bench_row *r = find_row(rows, from, "bdmp:tcki", "mixed")) {
    s.tcki_x = r->speedup_cusp64;
    s.tcki_ratio = r->acc_ratio;
    s.tcki_foot = r->footprint_ratio;
    s.tcki_prep = r->prep_spmv;
  }
  const char *dn[] = {"bdmp:tcki-d7", "bdmp:tcki-d8", "bdmp:tcki-d10"};
  for (int d = 0; d < 3; d++)
    if (const bench_row *r = find_row(rows, from, dn[d], "mixed")) s.share_d[d] = r->fp32_share;
  return s;
}

// bench_main.cu: mixsparse-bench: our SpMV kernels and formats against cuSPARSE on one GPU, in one
// process.
#include "bench_run.h"
#include "json.h" // tools/json.c: JSON through cJSON when the build has it

#include "cuda_internal.cuh"
#include "precision.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

const char *const kSuite[] = {"laplace2d:3000", "stencil27:160",     "random:4000000:16",
                              "rmat:22:16",     "banded:1000000:64", "random:16000000:2"};
const char *const kQuickSuite[] = {"laplace2d:1000", "stencil27:64",     "random:500000:16",
                                   "rmat:18:16",     "banded:200000:64", "random:2000000:2"};

// The formats the precision loop runs: every entry of MSP_FORMAT_LIST (so a new format is
// benchmarked with no edit here; the list's third column, when present, is not needed) except
// the BDMP formats, which choose fp32 or fp64 per tile themselves and have rows of their own
// (--formats bdmp); then AUTO and TUNE.
const char *const kExtraFormats[] = {"auto", "tune", "cusparse", "bdmp"};

// Parse "TAG" or "cpmsS:K" (K = 1..S segments read). false with a message.
bool parse_prec(const std::string &s, prec_spec *out, std::string *why) {
  size_t c = s.find(':');
  std::string base = s.substr(0, c);
  prec_spec r;
  if (msp_precision_parse(base.c_str(), &r.p) != MSP_SUCCESS) {
    *why = msp_last_error();
    return false;
  }
  r.tag = base;
  if (c != std::string::npos) {
    const int all = msp__prec_segments(r.p);
    char *end = nullptr;
    long k = strtol(s.c_str() + c + 1, &end, 10);
    if (all == 1 || !*(s.c_str() + c + 1) || *end || k < 1 || k > all) {
      *why = "'" + s + "': segments are for CPMS only, 1.." + std::to_string(all);
      return false;
    }
    r.segments = (int)k;
    r.tag = s;
  }
  *out = r;
  return true;
}

// "all": every entry of MSP_PRECISION_LIST, CPMS with each count of segments read.
std::vector<prec_spec> every_precision() {
  std::vector<prec_spec> v;
#define BENCH_PREC_(name, tag, ...) MSP_PRECISION_##name,
  const msp_precision list[] = {MSP_PRECISION_LIST(BENCH_PREC_)};
#undef BENCH_PREC_
  for (msp_precision p : list) {
    const int all = msp__prec_segments(p);
    for (int k = all > 1 ? 1 : 0; k <= (all > 1 ? all : 0); k++) {
      prec_spec r;
      r.p = p;
      r.segments = k;
      r.tag = std::string(msp_precision_name(p)) + (k ? ":" + std::to_string(k) : "");
      v.push_back(r);
    }
  }
  return v;
}

bool parse_prec_list(const char *opt, const std::vector<std::string> &items,
                     std::vector<prec_spec> *out) {
  out->clear();
  for (const std::string &it : items) {
    if (it == "all") {
      for (const prec_spec &p : every_precision())
        out->push_back(p);
      continue;
    }
    prec_spec p;
    std::string why;
    if (!parse_prec(it, &p, &why)) {
      fprintf(stderr, "mixsparse-bench: %s: %s\n", opt, why.c_str());
      return false;
    }
    out->push_back(p);
  }
  if (out->empty()) {
    fprintf(stderr, "mixsparse-bench: %s: empty list\n", opt);
    return false;
  }
  return true;
}

std::vector<std::string> split_list(const char *s) {
  std::vector<std::string> out;
  std::string cur;
  for (const char *p = s;; p++) {
    if (*p == ',' || *p == '\0') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (!*p) break;
    } else {
      cur += *p;
    }
  }
  return out;
}

void usage(FILE *f) {
  fprintf(
      f,
      "usage: mixsparse-bench [options] [FILE.mtx[.gz] ...]\n"
      "  Times our SpMV (CSR scalar/vector/merge/auto kernels; COO, ELL, HLL, DIA, HDIA, HYB,\n"
      "  AUTO, TUNE formats) in every storage precision asked for, with x and y in every\n"
      "  vector precision asked for, against cuSPARSE (CSR default and ALG2, COO ALG1 and\n"
      "  ALG2, sliced ELL in f64 and f32; CSR with f16 / bf16 values) on one GPU, after\n"
      "  measuring its read bandwidth.\n"
      "options:\n"
      "  --quick            smaller generated suite\n"
      "  --no-generated     skip the generated suite\n"
      "  --gen SPEC         add a generated matrix (msp_matrix_generate spec); repeatable\n"
      "  --dir DIR          every .mtx / .mtx.gz in DIR (real, integer, pattern)\n"
      "  --min-nnz N        skip --dir matrices with fewer than N nonzeros\n"
      "  --max-nnz N        skip --dir matrices with more than N nonzeros\n"
      "  --reps N           timed runs per variant (median reported; default 50)\n"
      "  --warmup N         untimed runs first (default 5)\n"
      "  --formats LIST     of the format tags (csr,coo,ell,...), auto,tune,cusparse,bdmp\n"
      "                     (default all); bdmp: the BDMP rows (CSR f64/f32, BDMP-PBP,\n"
      "                     BDMP-TCKI, TCKI with >= 7, 8, 10 digits: accuracy, footprint,\n"
      "                     fp32 share) on\n"
      "                     matrices with >= 1e6 nonzeros and real ones with >= 1e5\n"
      "  --bdmp-budget S    the bdmp rows stop after S seconds of their own (default half\n"
      "                     of --budget; their time does not count against --budget)\n"
      "  --bdmp-variants L  only these bdmp rows (names after bdmp:, e.g. csr,pbp,tcki-d7,\n"
      "                     auto-d7; csr names both CSR rows; default all)\n"
      "  --precisions LIST  storage precisions of the values: tags of f64,f32,f16,bf16,fx32,\n"
      "                     fx16,cpms2,cpms4; CPMS as cpmsS:K to read K of the S segments;\n"
      "                     'all' for every precision and segment count (default f64,f32)\n"
      "  --vector-precisions LIST  storage precisions of x and y, same tags (CPMS: the\n"
      "                     segments x is read with); default f64\n"
      "  --warm-l2          do not flush L2 before each timed run\n"
      "  --budget SECONDS   past this, precisions other than f64 (values or vectors) only\n"
      "                     for csr-auto and AUTO; past 1.4x, only csr-auto, AUTO and TUNE\n"
      "                     in f64 (cuSPARSE always runs)\n"
      "  --bw-gib G         bandwidth test buffer in GiB (default 2)\n"
      "  --device N         GPU ordinal (default 0)\n"
      "  --json FILE, --csv FILE   write all rows and summaries\n"
      "  --png FILE         speedup chart (runs python3 plot.py on the CSV)\n"
      "  --plot-script P    path of plot.py (default: env MSP_BENCH_PLOT, then the source tree)\n");
}

bool parse_args(int argc, char **argv, options *o) {
  if (!parse_prec_list("--precisions", {"f64", "f32"}, &o->precisions) ||
      !parse_prec_list("--vector-precisions", {"f64"}, &o->vprecisions))
    return false;
  for (int i = 0; i < argc; i++) {
    if (i) o->command_line += ' ';
    o->command_line += argv[i];
  }
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto need = [&](const char *what) -> const char * {
      if (i + 1 >= argc) {
        fprintf(stderr, "mixsparse-bench: %s needs %s\n", a.c_str(), what);
        return nullptr;
      }
      return argv[++i];
    };
    auto num = [&](const char *s, double lo, double *v) {
      char *end = nullptr;
      double d = s ? strtod(s, &end) : 0;
      if (!s || !*s || *end || !(d >= lo)) {
        fprintf(stderr, "mixsparse-bench: %s: bad number '%s'\n", a.c_str(), s ? s : "");
        return false;
      }
      *v = d;
      return true;
    };
    double d = 0;
    const char *s = nullptr;
    if (a == "--help" || a == "-h") {
      usage(stdout);
      exit(0);
    } else if (a == "--quick") {
      o->quick = true;
    } else if (a == "--no-generated") {
      o->generated = false;
    } else if (a == "--warm-l2") {
      o->flush_l2 = false;
    } else if (a == "--gen") {
      if (!(s = need("a spec"))) return false;
      o->gen_specs.push_back(s);
    } else if (a == "--dir") {
      if (!(s = need("a directory"))) return false;
      o->dir = s;
    } else if (a == "--json") {
      if (!(s = need("a file"))) return false;
      o->json = s;
    } else if (a == "--csv") {
      if (!(s = need("a file"))) return false;
      o->csv = s;
    } else if (a == "--png") {
      if (!(s = need("a file"))) return false;
      o->png = s;
    } else if (a == "--plot-script") {
      if (!(s = need("a path"))) return false;
      o->plot_script = s;
    } else if (a == "--reps") {
      if (!num(need("a count"), 1, &d)) return false;
      o->reps = (int)d;
    } else if (a == "--warmup") {
      if (!num(need("a count"), 0, &d)) return false;
      o->warmup = (int)d;
    } else if (a == "--device") {
      if (!num(need("an ordinal"), 0, &d)) return false;
      o->device = (int)d;
    } else if (a == "--budget") {
      if (!num(need("seconds"), 0, &d)) return false;
      o->budget_s = d;
    } else if (a == "--bw-gib") {
      if (!num(need("GiB"), 0.0625, &d)) return false;
      o->bw_gib = d;
    } else if (a == "--bdmp-budget") {
      if (!num(need("seconds"), 0, &d)) return false;
      o->bdmp_budget_s = d;
    } else if (a == "--bdmp-variants") {
      if (!(s = need("a list"))) return false;
      o->bdmp_variants = s;
    } else if (a == "--min-nnz") {
      if (!num(need("a count"), 0, &d)) return false;
      o->min_nnz = (int64_t)d;
    } else if (a == "--max-nnz") {
      if (!num(need("a count"), 0, &d)) return false;
      o->max_nnz = (int64_t)d;
    } else if (a == "--formats") {
      if (!(s = need("a list"))) return false;
      o->formats = split_list(s);
      const std::vector<std::string> ok = format_tokens();
      for (const std::string &f : o->formats)
        if (!has(ok, f)) {
          std::string all;
          for (const std::string &t : ok)
            all += (all.empty() ? "" : ",") + t;
          fprintf(stderr, "mixsparse-bench: --formats: unknown '%s' (%s)\n", f.c_str(),
                  all.c_str());
          return false;
        }
    } else if (a == "--precisions") {
      if (!(s = need("a list"))) return false;
      if (!parse_prec_list("--precisions", split_list(s), &o->precisions)) return false;
    } else if (a == "--vector-precisions") {
      if (!(s = need("a list"))) return false;
      if (!parse_prec_list("--vector-precisions", split_list(s), &o->vprecisions)) return false;
    } else if (!a.empty() && a[0] == '-') {
      fprintf(stderr, "mixsparse-bench: unknown option %s\n", a.c_str());
      usage(stderr);
      return false;
    } else {
      o->files.push_back(a);
    }
  }
  return true;
}

bool ends_with(const std::string &s, const char *suf) {
  size_t n = strlen(suf);
  return s.size() >= n && s.compare(s.size() - n, n, suf) == 0;
}

std::string base_name(const std::string &path) {
  size_t p = path.find_last_of('/');
  std::string b = p == std::string::npos ? path : path.substr(p + 1);
  if (ends_with(b, ".mtx.gz")) return b.substr(0, b.size() - 7);
  if (ends_with(b, ".mtx")) return b.substr(0, b.size() - 4);
  return b;
}

std::vector<std::string> list_dir(const std::string &dir) {
  std::vector<std::string> out;
  DIR *d = opendir(dir.c_str());
  if (!d) {
    fprintf(stderr, "mixsparse-bench: cannot open --dir %s\n", dir.c_str());
    return out;
  }
  while (struct dirent *e = readdir(d)) {
    std::string n = e->d_name;
    if (ends_with(n, ".mtx") || ends_with(n, ".mtx.gz")) out.push_back(dir + "/" + n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Deterministic x in +-[0.25, 1): no zeros, mixed signs.
double x_value(int64_t j) {
  uint64_t z = (uint64_t)j * 0x9e3779b97f4a7c15ull + 0x1234567ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  double u = (double)(z >> 11) * 0x1.0p-53;
  return (z & 1) ? -(0.25 + 0.75 * u) : (0.25 + 0.75 * u);
}

// ---- one matrix ---------------------------------------------------------------------------------

// Load one matrix on the CPU context, make x, the CPU reference and |A||x|, run everything.
void bench_one(bench_state &S, const std::string &name, const std::string &kind,
               const std::string &path) {
  msp_matrix H = nullptr;
  msp_vector xc = nullptr, yc = nullptr;
  double t0 = now_s();
  msp_status st = kind == "generated" ? msp_matrix_generate(S.cpu, name.c_str(), &H)
                                      : msp_matrix_read_mtx(S.cpu, path.c_str(), 0, &H);
  double load_s = now_s() - t0;
  if (st != MSP_SUCCESS) {
    printf("\n== %s: skipped (%s)\n", name.c_str(), status_text(st).c_str());
    fflush(stdout);
    return;
  }
  if (kind == "real" && (msp_matrix_nnz(H) < S.opt.min_nnz ||
                         (S.opt.max_nnz >= 0 && msp_matrix_nnz(H) > S.opt.max_nnz))) {
    msp_matrix_destroy(&H);
    return;
  }
  bench_matrix M;
  M.name = name;
  M.kind = kind;
  M.rows = H->rows;
  M.cols = H->cols;
  M.nnz = H->nnz;
  M.rowptr = H->rowptr;
  M.colind = H->colind;
  M.val = H->val;
  std::vector<double> x((size_t)std::max<int64_t>(M.cols, 1)),
      ref((size_t)std::max<int64_t>(M.rows, 1)), absref((size_t)std::max<int64_t>(M.rows, 1));
  for (int64_t j = 0; j < M.cols; j++)
    x[(size_t)j] = x_value(j);
  st = msp_vector_create(S.cpu, M.cols, &xc);
  if (st == MSP_SUCCESS) st = msp_vector_create(S.cpu, M.rows, &yc);
  if (st == MSP_SUCCESS) st = msp_vector_set(xc, x.data());
  if (st == MSP_SUCCESS) st = msp_spmv(S.cpu, 1.0, H, xc, 0.0, yc);
  if (st == MSP_SUCCESS) st = msp_vector_get(yc, ref.data());
  msp_vector_destroy(&xc);
  msp_vector_destroy(&yc);
  if (st != MSP_SUCCESS) {
    printf("\n== %s: skipped (CPU reference failed: %s)\n", name.c_str(), status_text(st).c_str());
    msp_matrix_destroy(&H);
    return;
  }
  for (int64_t i = 0; i < M.rows; i++) {
    double s = 0.0;
    for (int64_t k = M.rowptr[i]; k < M.rowptr[i + 1]; k++)
      s += std::fabs(M.val[k]) * std::fabs(x[(size_t)M.colind[k]]);
    absref[(size_t)i] = s;
  }
  // cuSPARSE's byte models count x as the library's model does for the same matrix (CSR, fp64):
  // whatever msp_spmv_bytes charges beyond the matrix arrays and y, in 8-byte entries.
  M.x_entries = (int64_t)std::llround(
      (msp_spmv_bytes(H, 0) - (double)msp_matrix_bytes(H) - 8.0 * (double)M.rows) / 8.0);
  if (M.x_entries < 0 || M.x_entries > M.cols) M.x_entries = M.cols;
  M.x = x.data();
  M.ref = ref.data();
  M.absref = absref.data();

  msp_matrix_stats stats;
  bool have_stats = msp_matrix_analyze(H, &stats) == MSP_SUCCESS;
  printf("\n== %s (%s): %lld x %lld, %lld nnz", name.c_str(), kind.c_str(), (long long)M.rows,
         (long long)M.cols, (long long)M.nnz);
  if (have_stats)
    printf(", rows %lld..%lld mean %.2f, skew %.1f, %lld diagonals", (long long)stats.row_min,
           (long long)stats.row_max, stats.row_mean, stats.skewness, (long long)stats.diagonals);
  printf(", loaded in %.2f s\n", load_s);
  fflush(stdout);

  if (int level = budget_level(S))
    fprintf(stderr, "[%7.1f s] past the budget (level %d): %s runs fewer variants\n", now_s(),
            level, name.c_str());
  const size_t from = S.rows.size();
  run_ours_all(S, M);
  if (has(S.opt.formats, "cusparse")) {
    std::vector<std::string> tags;
    for (const prec_spec &p : S.opt.precisions)
      if (!has(tags, p.tag)) tags.push_back(p.tag);
    fprintf(stderr, "[%7.1f s]   %s: cuSPARSE\n", now_s(), name.c_str());
    bench_cusparse_run(S.ts, M, tags, S.read_gbs, &S.rows);
  }
  bdmp_speedups(S.rows, from);
  precision_speedups(S.rows, from);
  matrix_summary sum = summarize(S.rows, from, M, load_s);
  S.sums.push_back(sum);
  print_rows(S.rows, from);
  print_summary_line(sum);
  fprintf(stderr, "[%7.1f s] %s done\n", now_s(), name.c_str());
  fflush(stdout);
  msp_matrix_destroy(&H);
}

} // namespace

#define BENCH_FORMAT_(name, tag, ...) MSP_FORMAT_##name,
const msp_format kListFormats[MSP_FORMAT_COUNT] = {MSP_FORMAT_LIST(BENCH_FORMAT_)};
#undef BENCH_FORMAT_

bool has_own_rows(msp_format f) {
  return f == MSP_FORMAT_BDMP_PBP || f == MSP_FORMAT_BDMP_TCKI;
}

double now_s() {
  static const auto t0 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool has(const std::vector<std::string> &v, const std::string &s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string status_text(msp_status st) {
  return std::string(msp_status_name(st)) + ": " + msp_last_error();
}

bench_row make_row(const bench_matrix &M, const std::string &variant, const std::string &prec) {
  bench_row r;
  r.matrix = M.name;
  r.kind = M.kind;
  r.rows = M.rows;
  r.cols = M.cols;
  r.nnz = M.nnz;
  r.variant = variant;
  r.precision = prec;
  return r;
}

// Check and time msp_spmv(1, B, x, 0, y) on the GPU context; fills r (bytes by the byte model
// with x and y in their own precision). With y_out, the checked y is handed back (empty when
// the product failed).
void run_ours(bench_state &S, const bench_matrix &M, msp_matrix B, msp_vector xv, msp_vector yv,
              bench_row *r, std::vector<double> *y_out, const bench_timing *timing) {
  std::string why;
  std::vector<double> y((size_t)std::max<int64_t>(M.rows, 1));
  r->bytes = msp_spmv_bytes_vectors(B, xv, yv, 0);
  // Poison y (beta = 0: every entry must be written): NaN, which every precision stores (fixed
  // point as a NaN scale); a huge value if fill refuses NaN.
  msp_status st = msp_vector_fill(yv, NAN);
  if (st != MSP_SUCCESS) st = msp_vector_fill(yv, 1e300);
  if (st == MSP_SUCCESS) st = msp_spmv(S.gpu, 1.0, B, xv, 0.0, yv);
  if (st == MSP_SUCCESS) st = msp_vector_get(yv, y.data());
  if (st == MSP_ERR_RANGE) {
    // Results beyond y's precision were saturated and counted; y was still copied out, so the
    // row is timed and its error shows what the saturation cost.
    r->note = status_text(st);
    st = MSP_SUCCESS;
  }
  if (st != MSP_SUCCESS) {
    r->status = (st == MSP_ERR_NOT_SUPPORTED) ? "n/a" : "error";
    r->note = status_text(st);
    if (st == MSP_ERR_DEVICE) bench_cuda_ok(cudaDeviceSynchronize(), "after msp_spmv", nullptr);
    return;
  }
  r->err = bench_max_error(y.data(), M.ref, M.absref, M.rows);
  if (y_out) y_out->swap(y);
  auto fn = [&](std::string *w) {
    msp_status s = msp_spmv(S.gpu, 1.0, B, xv, 0.0, yv);
    if (s == MSP_SUCCESS) return true;
    *w = status_text(s);
    return false;
  };
  if (bench_time(timing ? *timing : S.ts, fn, &r->ms, &r->ms_min, &r->ms_max, &why)) {
    r->status = "ok";
    bench_row_derive(r, S.read_gbs);
  } else {
    r->status = "error";
    r->note = why;
    r->ms = -1;
  }
}

// Budget level now: 0 run everything; 1 (past --budget) precisions other than f64 only for
// csr-auto and AUTO; 2 (past 1.4x the budget) only csr-auto, AUTO and TUNE (f64). Checked before
// every variant.
// The BDMP rows have their own allowance (--bdmp-budget), so their time is left out here.
int budget_level(const bench_state &S) {
  const options &o = S.opt;
  if (o.budget_s <= 0) return 0;
  double t = now_s() - S.bdmp_spent;
  return t > 1.4 * o.budget_s ? 2 : t > o.budget_s ? 1 : 0;
}

// Every --formats token: the list's formats, then auto, tune, cusparse, bdmp.
std::vector<std::string> format_tokens() {
  std::vector<std::string> t;
  for (msp_format f : kListFormats)
    if (!has_own_rows(f)) t.push_back(msp_format_name(f));
  t.insert(t.end(), std::begin(kExtraFormats), std::end(kExtraFormats));
  return t;
}

int main(int argc, char **argv) {
  bench_state S;
  if (!parse_args(argc, argv, &S.opt)) return 2;
  const options &o = S.opt;
  now_s();
  std::string why;
  msp_status st = msp_context_create(MSP_BACKEND_CUDA, o.device, &S.gpu);
  if (st != MSP_SUCCESS) {
    fprintf(stderr, "mixsparse-bench: no CUDA context on device %d: %s\n", o.device,
            status_text(st).c_str());
    return 1;
  }
  st = msp_context_create(MSP_BACKEND_CPU, 0, &S.cpu);
  if (st != MSP_SUCCESS) {
    fprintf(stderr, "mixsparse-bench: CPU context: %s\n", status_text(st).c_str());
    msp_context_destroy(&S.gpu);
    return 1;
  }
  if (msp_device_info(o.device, &S.props) != MSP_SUCCESS) memset(&S.props, 0, sizeof S.props);
  S.ts.stream = msp__cuda(S.gpu)->stream;
  S.ts.reps = o.reps;
  S.ts.warmup = o.warmup;
  S.ts.flush_l2 = o.flush_l2;
  if (!bench_device_init(o.device, &why)) {
    fprintf(stderr, "mixsparse-bench: device setup: %s\n", why.c_str());
    msp_context_destroy(&S.cpu);
    msp_context_destroy(&S.gpu);
    return 1;
  }

  // Bandwidth ceilings first, on a buffer far larger than L2 (and at most a quarter of free
  // memory).
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  size_t bw_bytes = (size_t)(o.bw_gib * (double)(1ull << 30));
  if (free_b > 0) bw_bytes = std::min(bw_bytes, free_b / 4);
  bw_bytes &= ~(size_t)0xffff;
  if (!bench_measure_bandwidth(S.ts.stream, bw_bytes, &S.read_gbs, &S.copy_gbs, &why)) {
    fprintf(stderr, "mixsparse-bench: bandwidth test: %s\n", why.c_str());
    bench_device_fini();
    msp_context_destroy(&S.cpu);
    msp_context_destroy(&S.gpu);
    return 1;
  }
  printf("mixsparse-bench: %s\n", o.command_line.c_str());
  printf("device %d: %s, %d SMs, L2 %.0f MiB, peak %.0f GB/s (from clocks)\n", o.device,
         S.props.name, S.props.multiprocessors, (double)S.props.l2_cache_bytes / (1 << 20),
         S.props.peak_bandwidth_gbs);
  printf("measured: read %.0f GB/s (streaming 16-byte loads over %.2f GiB), copy %.0f GB/s (read + "
         "write)\n",
         S.read_gbs, (double)bw_bytes / (1ull << 30), S.copy_gbs);
  printf("timing: median of %d runs after %d warm-up runs, CUDA events on one stream, %s\n", o.reps,
         o.warmup, o.flush_l2 ? "L2 flushed by a read before each run" : "L2 warm");
  printf("error: max_i |y_i - ref_i| / (|A||x|)_i against the CPU backend's fp64 result\n");
  {
    double floor_ms = 0;
    if (bench_launch_floor(S.ts, &floor_ms, &why))
      printf("launch floor: an empty kernel on the products' stream, %.2f us (median, same "
             "timing)\n",
             floor_ms * 1e3);
    else
      printf("launch floor: not measured (%s)\n", why.c_str());
  }
  std::string pl, vl;
  for (const prec_spec &p : o.precisions)
    pl += (pl.empty() ? "" : ",") + p.tag;
  for (const prec_spec &p : o.vprecisions)
    vl += (vl.empty() ? "" : ",") + p.tag;
  printf("storage precisions %s; x and y in %s; bytes by msp_spmv_bytes_vectors\n", pl.c_str(),
         vl.c_str());
  fflush(stdout);

  std::vector<std::string> gens;
  if (o.generated) {
    if (o.quick)
      gens.assign(std::begin(kQuickSuite), std::end(kQuickSuite));
    else
      gens.assign(std::begin(kSuite), std::end(kSuite));
  }
  gens.insert(gens.end(), o.gen_specs.begin(), o.gen_specs.end());
  // JSON and CSV are rewritten after every matrix, so that a run cut short leaves its results.
  std::string csv = o.csv;
  if (csv.empty() && !o.png.empty()) csv = o.png + ".csv";
  auto save = [&]() {
    totals tt = compute_totals(S.sums, S.rows);
    bool ok = true;
    if (!o.json.empty()) ok = write_json(S, tt, o.json) && ok;
    if (!csv.empty()) ok = write_csv(S, csv) && ok;
    return ok;
  };
  std::vector<std::string> files;
  if (!o.dir.empty()) files = list_dir(o.dir);
  files.insert(files.end(), o.files.begin(), o.files.end());
  // Progress on stderr as the run goes: which matrix of how many (the conversions follow, one
  // line each, from run_ours_all).
  const size_t total = gens.size() + files.size();
  size_t k = 0;
  for (const std::string &g : gens) {
    if (bench_device_broken()) break;
    fprintf(stderr, "[%7.1f s] matrix %zu of %zu: %s (generated)\n", now_s(), ++k, total,
            g.c_str());
    bench_one(S, g, "generated", "");
    save();
  }
  for (const std::string &f : files) {
    if (bench_device_broken()) break;
    fprintf(stderr, "[%7.1f s] matrix %zu of %zu: %s\n", now_s(), ++k, total, f.c_str());
    bench_one(S, base_name(f), "real", f);
    save();
  }
  if (bench_device_broken())
    printf("\n!! a sticky device error stopped the run; the results above are partial\n");

  totals t = compute_totals(S.sums, S.rows);
  print_totals(S, t);
  int rc = save() ? 0 : 1;
  if (!o.png.empty() && rc == 0) {
    std::string cmd = "python3 " + shell_quote(plot_script(o)) + " " + shell_quote(csv) + " " +
                      shell_quote(o.png);
    fflush(stdout);
    int pr = system(cmd.c_str());
    if (pr != 0) {
      fprintf(stderr, "mixsparse-bench: '%s' failed (exit %d); the CSV is complete\n", cmd.c_str(),
              pr);
      rc = 1;
    }
  }
  bench_device_fini();
  msp_context_destroy(&S.cpu);
  msp_context_destroy(&S.gpu);
  fprintf(stderr, "[%7.1f s] finished\n", now_s());
  return bench_device_broken() ? 3 : rc;
}

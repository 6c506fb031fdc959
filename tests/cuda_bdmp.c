// cuda_bdmp.c: BDMP-PBP and BDMP-TCKI converted on the device (src/cuda/bdmp_convert.cu,
// bdmp_tcki_convert.cu) against the host build (src/core/bdmp.c, bdmp_tcki.c), on the same
// matrix with the same options: the same host record bit for bit (PBP: lambda, the bound, the
// tile and entry counts, the precision words, both value streams; TCKI: every array of the
// record, tiles in their formats and CSR-like segments) and the same device arrays as the host
// build's upload, byte for byte (PBP's layouts, TCKI's chunks, slabs and CSR-like part), from a
// source on the device (an fp64 CSR matrix of the context) and from a host-only one, with each
// CSR kernel (the device layouts: precision words, rows in two parts, one precision) and, for
// TCKI, with every block row kept as tiles too; products of the device-built matrix against the
// CPU's within the fp64 rounding of a row; the report's device time set. Generated matrices, edge
// cases (empty, one entry, values fp32 cannot hold, block rows cut short, long rows) and a sample
// of the collection.
#include "bdmp.h"
#include "internal.h"
#include "testlib.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static msp_context cpu, gpu;

typedef struct {
  const char *name;
  double f, lambda;
  int digits, paper;
} bdmp_opts;

static const bdmp_opts OPTS[] = {
    {"threshold", 0.5, 0, 0, 0},    {"f=0.05", 0.05, 0, 0, 0},    {"f=4", 4, 0, 0, 0},
    {"lambda=0.3", 0.5, 0.3, 0, 0}, {"paper", 0.5, 0, 0, 1},      {"digits=3", 0.5, 0, 3, 0},
    {"digits=7", 0.5, 0, 7, 0},     {"digits=12", 0.5, 0, 12, 0}, {"digits=7 paper", 0.5, 0, 7, 1},
};
static const msp_kernel KERNELS[] = {MSP_KERNEL_SCALAR, MSP_KERNEL_VECTOR, MSP_KERNEL_MERGE};

static int same_bits(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

// The two records are the same, field by field and byte by byte.
static void same_pbp(const char *what, const msp_matrix H, const msp_matrix D) {
  const msp__bdmp_pbp *h = (const msp__bdmp_pbp *)H->fmt, *d = (const msp__bdmp_pbp *)D->fmt;
  CHECK(h && d, "%s: a record is missing", what);
  if (!h || !d) return;
  const int64_t nnz = H->nnz, words = (nnz + MSP__PBP_WORD - 1) / MSP__PBP_WORD;
  CHECK(same_bits(h->info.lambda, d->info.lambda), "%s: lambda %.17g (host) against %.17g", what,
        h->info.lambda, d->info.lambda);
  CHECK(same_bits(h->info.bound, d->info.bound), "%s: bound %.17g (host) against %.17g", what,
        h->info.bound, d->info.bound);
  CHECK(h->info.digits == d->info.digits && h->info.tiles == d->info.tiles &&
            h->info.tiles32 == d->info.tiles32 && h->info.nnz32 == d->info.nnz32 &&
            h->info.nnz64 == d->info.nnz64,
        "%s: counts (digits %d/%d, tiles %lld/%lld, fp32 tiles %lld/%lld, fp32 entries %lld/%lld, "
        "fp64 entries %lld/%lld)",
        what, h->info.digits, d->info.digits, (long long)h->info.tiles, (long long)d->info.tiles,
        (long long)h->info.tiles32, (long long)d->info.tiles32, (long long)h->info.nnz32,
        (long long)d->info.nnz32, (long long)h->info.nnz64, (long long)d->info.nnz64);
  if (h->info.nnz32 != d->info.nnz32) return;
  CHECK(memcmp(h->rowptr, d->rowptr, (size_t)(H->rows + 1) * sizeof *h->rowptr) == 0 &&
            (nnz == 0 || memcmp(h->colind, d->colind, (size_t)nnz * sizeof *h->colind) == 0),
        "%s: structure differs", what);
  CHECK(words == 0 || memcmp(h->meta, d->meta, (size_t)(2 * words) * sizeof *h->meta) == 0,
        "%s: precision words differ", what);
  CHECK(h->info.nnz32 == 0 || memcmp(h->v32, d->v32, (size_t)h->info.nnz32 * sizeof *h->v32) == 0,
        "%s: fp32 values differ", what);
  CHECK(h->info.nnz64 == 0 || memcmp(h->v64, d->v64, (size_t)h->info.nnz64 * sizeof *h->v64) == 0,
        "%s: fp64 values differ", what);
}

static int same_bytes(const void *a, const void *b, int64_t n, size_t size) {
  return n <= 0 || memcmp(a, b, (size_t)n * size) == 0;
}

static void same_tcki(const char *what, const msp_matrix H, const msp_matrix D) {
  const msp__bdmp_tcki *h = (const msp__bdmp_tcki *)H->fmt, *d = (const msp__bdmp_tcki *)D->fmt;
  CHECK(h && d, "%s: a record is missing", what);
  if (!h || !d) return;
  CHECK(same_bits(h->info.lambda, d->info.lambda) && same_bits(h->info.bound, d->info.bound) &&
            h->info.digits == d->info.digits && h->info.tiles == d->info.tiles &&
            h->info.tiles32 == d->info.tiles32 && h->info.nnz32 == d->info.nnz32 &&
            h->info.nnz64 == d->info.nnz64,
        "%s: selection (lambda %.17g/%.17g, bound %.17g/%.17g, tiles %lld/%lld, fp32 tiles "
        "%lld/%lld, fp64 entries %lld/%lld)",
        what, h->info.lambda, d->info.lambda, h->info.bound, d->info.bound,
        (long long)h->info.tiles, (long long)d->info.tiles, (long long)h->info.tiles32,
        (long long)d->info.tiles32, (long long)h->info.nnz64, (long long)d->info.nnz64);
  CHECK(h->nbrows == d->nbrows && h->ntiles == d->ntiles && h->n32 == d->n32 && h->n64 == d->n64 &&
            h->csr_brows == d->csr_brows && h->csr_nnz == d->csr_nnz && h->nsegs == d->nsegs &&
            memcmp(h->fmt_count, d->fmt_count, sizeof h->fmt_count) == 0 &&
            memcmp(&h->dev, &d->dev, sizeof h->dev) == 0,
        "%s: counts or GPU layout sizes (stored tiles %lld/%lld, values %lld+%lld/%lld+%lld, "
        "CSR-like block rows "
        "%lld/%lld, segments %lld/%lld, COO %lld/%lld, ELL %lld/%lld, CSR %lld/%lld, HYB "
        "%lld/%lld)",
        what, (long long)h->ntiles, (long long)d->ntiles, (long long)h->n32, (long long)h->n64,
        (long long)d->n32, (long long)d->n64, (long long)h->csr_brows, (long long)d->csr_brows,
        (long long)h->nsegs, (long long)d->nsegs, (long long)h->fmt_count[0],
        (long long)d->fmt_count[0], (long long)h->fmt_count[1], (long long)d->fmt_count[1],
        (long long)h->fmt_count[2], (long long)d->fmt_count[2], (long long)h->fmt_count[3],
        (long long)d->fmt_count[3]);
  if (h->nbrows != d->nbrows || h->ntiles != d->ntiles || h->n32 != d->n32 || h->n64 != d->n64)
    return;
  const int64_t nt = h->ntiles;
  CHECK(same_bytes(h->tile_ptr, d->tile_ptr, h->nbrows + 1, sizeof *h->tile_ptr),
        "%s: tile pointers differ", what);
  CHECK(same_bytes(h->tile_col, d->tile_col, nt, sizeof *h->tile_col) &&
            same_bytes(h->tile_fmt, d->tile_fmt, nt, 1) &&
            same_bytes(h->tile_width, d->tile_width, nt, 1),
        "%s: tile columns, formats or widths differ", what);
  CHECK(same_bytes(h->eoff, d->eoff, nt + 1, sizeof *h->eoff) &&
            same_bytes(h->voff, d->voff, nt, sizeof *h->voff),
        "%s: offsets differ", what);
  if (h->eoff[nt] != d->eoff[nt]) return;
  CHECK(same_bytes(h->idx, d->idx, h->eoff[nt], 1), "%s: index bytes differ", what);
  CHECK(same_bytes(h->val32, d->val32, h->n32, sizeof *h->val32) &&
            same_bytes(h->val64, d->val64, h->n64, sizeof *h->val64),
        "%s: values differ", what);
}

// The two records are the same, field by field and byte by byte; the device build reports its
// device time, the host build none.
static void same_record(const char *what, const msp_matrix H, const msp_matrix D) {
  if (H->format == MSP_FORMAT_BDMP_TCKI)
    same_tcki(what, H, D);
  else
    same_pbp(what, H, D);
  msp_bdmp_report r;
  CHECK_OK(msp_matrix_bdmp_info(D, &r));
  CHECK(r.convert_device_ms > 0, "%s: device time %g ms", what, r.convert_device_ms);
  CHECK_OK(msp_matrix_bdmp_info(H, &r));
  CHECK(r.convert_device_ms == 0, "%s: a host build reports %g ms of device time", what,
        r.convert_device_ms);
}

// The device arrays of D (built on the device) and U (built on the host, then uploaded).
static void same_device(const char *what, const msp_matrix D, const msp_matrix U) {
  char why[256] = "";
  const int r = msp__device_records_same(D, U, why, sizeof why);
  CHECK(r == 0, "%s: the device arrays differ from the host build's upload: %s", what, why);
}

// y = A x on the device-built matrix D against the CPU product of the host-built H: the stored
// values are the same, so rows differ by the order of fp64 sums only (bound: row length times
// u64 times sum |a_ij x_j|, twice for the two orders).
static void same_products(const char *what, const msp_matrix H, const msp_matrix D) {
  const int64_t n = H->cols, m = H->rows;
  double *x = malloc((size_t)(n ? n : 1) * sizeof *x),
         *yh = malloc((size_t)(m ? m : 1) * sizeof *yh);
  double *yd = malloc((size_t)(m ? m : 1) * sizeof *yd);
  CHECK(x && yh && yd, "allocation");
  if (x && yh && yd) {
    msp_rng rng = {0x5eedULL + (uint64_t)m};
    for (int64_t j = 0; j < n; j++)
      x[j] = msp_rng_uniform(&rng) - 0.5;
    CHECK_OK(test_spmv(cpu, H, x, yh));
    CHECK_OK(test_spmv(gpu, D, x, yd));
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      for (int64_t k = H->rowptr[i]; k < H->rowptr[i + 1]; k++)
        s += fabs(H->val[k] * x[H->colind[k]]);
      const double len = (double)(H->rowptr[i + 1] - H->rowptr[i]);
      if (!(fabs(yh[i] - yd[i]) <= 2.0 * (len + 1) * MSP_U_F64 * 2.0 * s)) {
        if (first < 0) first = i;
        bad++;
      }
    }
    CHECK(bad == 0,
          "%s: %lld rows differ beyond the fp64 bound (first row %lld: %.17g against "
          "%.17g)",
          what, (long long)bad, (long long)first, first >= 0 ? yh[first] : 0.0,
          first >= 0 ? yd[first] : 0.0);
  }
  free(x);
  free(yh);
  free(yd);
}

// Every option set on matrix Ah (CPU) / Ad (CUDA, CSR fp64), for both variants: host build,
// device build from Ad, device build from Ah (a host-only source), host build uploaded; each CSR
// kernel for the device layouts; TCKI with the byte model's kinds and with every block row kept
// as tiles (msp__bdmp_keep_tiles: every tile format).
static void check_matrix(const char *name, msp_matrix Ah, msp_matrix Ad) {
  static const msp_format formats[] = {MSP_FORMAT_BDMP_PBP, MSP_FORMAT_BDMP_TCKI};
  for (size_t fi = 0; fi < 2; fi++) {
    for (size_t q = 0; q < sizeof OPTS / sizeof OPTS[0]; q++) {
      for (size_t k = 0; k < sizeof KERNELS / sizeof KERNELS[0]; k++) {
        for (int keep = 0; keep < (formats[fi] == MSP_FORMAT_BDMP_TCKI && k == 0 ? 2 : 1); keep++) {
          // the selection does not depend on the kernel: every option set with the rule's
          // kernel, the default options with each kernel
          if (q > 0 && k > 0) break;
          msp_convert_options o = msp_convert_options_default();
          o.format = formats[fi];
          o.kernel = q == 0 ? KERNELS[k] : MSP_KERNEL_AUTO;
          o.bdmp_f = OPTS[q].f;
          o.bdmp_lambda = OPTS[q].lambda;
          o.bdmp_digits = OPTS[q].digits;
          o.bdmp_paper_rule = OPTS[q].paper;
          char what[256];
          snprintf(what, sizeof what, "%s, %s, %s, %s kernel%s", name, msp_format_name(formats[fi]),
                   OPTS[q].name, q == 0 ? msp_kernel_name(KERNELS[k]) : "rule's",
                   keep ? ", all tiles" : "");
          msp_matrix H = NULL, D = NULL, Dh = NULL, U = NULL;
          msp__bdmp_keep_tiles = keep;
          CHECK_OK(msp_matrix_convert(cpu, Ah, &o, &H));
          CHECK_OK(msp_matrix_convert(gpu, Ad, &o, &D));
          CHECK_OK(msp_matrix_convert(gpu, Ah, &o, &Dh));
          msp__bdmp_host_build = 1;
          CHECK_OK(msp_matrix_convert(gpu, Ad, &o, &U));
          msp__bdmp_host_build = 0;
          msp__bdmp_keep_tiles = 0;
          if (D && U) same_device(what, D, U); // before a product writes D's work arrays
          if (H && D) {
            same_record(what, H, D);
            same_products(what, H, D);
          }
          if (H && Dh) {
            char w2[300];
            snprintf(w2, sizeof w2, "%s, host-only source", what);
            same_record(w2, H, Dh);
          }
          msp_matrix_destroy(&H);
          msp_matrix_destroy(&D);
          msp_matrix_destroy(&Dh);
          msp_matrix_destroy(&U);
        }
      }
    }
  }
}

static void check_csr(const char *name, const test_csr *m) {
  msp_matrix Ah = NULL, Ad = NULL;
  CHECK_OK(test_csr_to_matrix(m, cpu, &Ah));
  CHECK_OK(test_csr_to_matrix(m, gpu, &Ad));
  if (Ah && Ad) check_matrix(name, Ah, Ad);
  msp_matrix_destroy(&Ah);
  msp_matrix_destroy(&Ad);
}

static void check_generated(const char *spec) {
  msp_matrix Ah = NULL, Ad = NULL;
  CHECK_OK(msp_matrix_generate(cpu, spec, &Ah));
  CHECK_OK(msp_matrix_generate(gpu, spec, &Ad));
  if (Ah && Ad) check_matrix(spec, Ah, Ad);
  msp_matrix_destroy(&Ah);
  msp_matrix_destroy(&Ad);
}

// Values across fp32's range and beyond it: exact integers, short binary fractions, fp32
// subnormals (rounded, and one that fp32 holds exactly), values above FLT_MAX, tiny and huge
// magnitudes, signed zeros, with random signs.
static double edge_value(msp_rng *r) {
  static const double v[] = {
      1.0,  3.0,  0.25,    0.1,   1e-3,  7.0 / 3,    1e-40,   1e-310,
      3e38, 1e39, 1e300,   1e-30, 12345, 0.5 + 1e-9, FLT_MAX, FLT_MIN,
      2.0,  1e-5, 123.456, 0.0,   -0.0,  0x1p-140 /* an fp32 subnormal, exact */};
  const double a = v[msp_rng_range(r, sizeof v / sizeof v[0])];
  return msp_rng_uniform(r) < 0.5 ? -a : a;
}

static void check_edges(void) {
  test_csr m;
  // empty: 0 x 0, and 40 x 70 without entries
  memset(&m, 0, sizeof m);
  int64_t rp0[1] = {0};
  m.rowptr = rp0;
  check_csr("0 x 0", &m);
  int64_t rp40[41] = {0};
  m.rows = 40;
  m.cols = 70;
  m.rowptr = rp40;
  check_csr("40 x 70 empty", &m);
  // one entry
  int64_t rp1[2] = {0, 1};
  int32_t ci1[1] = {0};
  double v1[1] = {0.1};
  m.rows = m.cols = m.nnz = 1;
  m.rowptr = rp1;
  m.colind = ci1;
  m.val = v1;
  check_csr("1 x 1", &m);
  // random patterns with edge values: rows not a multiple of 16, long rows
  static const int64_t shapes[][3] = {{17, 33, 5}, {100, 100, 12}, {250, 4000, 300}, {1000, 37, 9}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    test_csr r;
    CHECK(test_csr_random(&r, shapes[s][0], shapes[s][1], (double)shapes[s][2], 77 + s) == 0,
          "random matrix");
    msp_rng rng = {1234 + s};
    for (int64_t k = 0; k < r.nnz; k++)
      r.val[k] = s % 2 ? edge_value(&rng)
                       : (msp_rng_uniform(&rng) < 0.3 ? edge_value(&rng) : msp_rng_uniform(&rng));
    char name[64];
    snprintf(name, sizeof name, "random %lld x %lld, edge values", (long long)shapes[s][0],
             (long long)shapes[s][1]);
    check_csr(name, &r);
    test_csr_free(&r);
  }
}

// Tridiagonal 4096 x 12288 (the diagonal in the first 4096 columns) whose first block row also
// holds 30 entries a row, each alone in its 16 x 16 tile: TCKI's walk of that block row stops
// early (its tiles cost more than CSR-like storage), yet the whole matrix is cheapest as tiles (a
// CSR-like part costs bytes per row of the matrix), so the device build walks it again without
// the early stop. The host build must store every block row as tiles.
static void check_scattered_block_row(void) {
  enum { N = 4096, C = 12288, EXTRA = 30 };
  test_csr m;
  memset(&m, 0, sizeof m);
  m.rows = N;
  m.cols = C;
  m.rowptr = malloc((N + 1) * sizeof *m.rowptr);
  m.colind = malloc((3 * N + MSP_BDMP_TILE * EXTRA) * sizeof *m.colind);
  m.val = malloc((3 * N + MSP_BDMP_TILE * EXTRA) * sizeof *m.val);
  CHECK(m.rowptr && m.colind && m.val, "allocation");
  if (m.rowptr && m.colind && m.val) {
    m.rowptr[0] = 0;
    for (int64_t i = 0; i < N; i++) {
      for (int64_t j = i - 1; j <= i + 1; j++) {
        if (j < 0 || j >= N) continue;
        m.colind[m.nnz] = (int32_t)j;
        m.val[m.nnz++] = j == i ? 4.0 : -1.0 / (double)(1 + (i % 7));
      }
      for (int64_t q = 0; i < MSP_BDMP_TILE && q < EXTRA; q++) { // block column 256 + 16 q + i
        m.colind[m.nnz] = (int32_t)(MSP_BDMP_TILE * (N / MSP_BDMP_TILE + MSP_BDMP_TILE * q + i) +
                                    q % MSP_BDMP_TILE);
        m.val[m.nnz++] = 0.1 * (double)(q + 1);
      }
      m.rowptr[i + 1] = m.nnz;
    }
    msp_matrix Ah = NULL, H = NULL;
    msp_convert_options o = msp_convert_options_default();
    o.format = MSP_FORMAT_BDMP_TCKI;
    CHECK_OK(test_csr_to_matrix(&m, cpu, &Ah));
    if (Ah) CHECK_OK(msp_matrix_convert(cpu, Ah, &o, &H));
    if (H) {
      const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)H->fmt;
      CHECK(T->csr_brows == 0, "scattered block row: %lld block rows CSR-like, expected all tiles",
            (long long)T->csr_brows);
    }
    msp_matrix_destroy(&H);
    msp_matrix_destroy(&Ah);
    check_csr("tridiagonal 4096, a scattered block row", &m);
  }
  test_csr_free(&m);
}

static void check_file(const char *path, const char *name, void *user) {
  (void)user;
  msp_matrix Ah = NULL, Ad = NULL;
  if (msp_matrix_read_mtx(cpu, path, 0, &Ah) != MSP_SUCCESS) {
    printf("  %s: not read (%s), skipped\n", name, msp_last_error());
    return;
  }
  CHECK_OK(msp_matrix_read_mtx(gpu, path, 0, &Ad));
  if (Ad) check_matrix(name, Ah, Ad);
  msp_matrix_destroy(&Ah);
  msp_matrix_destroy(&Ad);
}

int main(void) {
  int rc_ = test_cuda_context("cuda_bdmp", &gpu);
  if (rc_ >= 0) return rc_;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &cpu));
  if (cpu) {
    check_edges();
    check_scattered_block_row();
    // MSP_TEST_QUICK (under compute-sanitizer): small generated matrices only
    const int quick = getenv("MSP_TEST_QUICK") != NULL;
    static const char *gens[] = {"laplace2d:70",   "stencil27:14", "banded:5000:17",
                                 "random:3000:9",  "rmat:12:8",    "powerlaw:4000:6",
                                 "random:70000:16"};
    static const char *small[] = {"laplace2d:20", "rmat:8:8", "random:500:9"};
    const size_t ng = quick ? sizeof small / sizeof small[0] : sizeof gens / sizeof gens[0];
    for (size_t g = 0; g < ng; g++)
      check_generated(quick ? small[g] : gens[g]);
    const int n = test_for_each_matrix_sample(200000, 20, check_file, NULL);
    if (n == 0)
      printf("collection matrices: none (MSP_MATRICES_DIR / ../shared/matrices absent), "
             "skipped\n");
  }
  msp_context_destroy(&cpu);
  msp_context_destroy(&gpu);
  return msp_test_finish("cuda_bdmp");
}

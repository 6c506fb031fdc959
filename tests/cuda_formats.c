// cuda_formats.c: cross test of the CUDA COO, ELL, HLL, DIA, HDIA, HYB kernels against the CPU.
//
// Each matrix is converted from the same CSR on the CPU context and on the CUDA context, and
// msp_spmv runs on both with the same x and y0 for several (alpha, beta), beta = 0 with NaN in y
// included. The CUDA result must lie within the per-row bound of test_compare_rows of the CPU
// result and of the long-double oracle, and a second identical product must give identical bits
// (determinism). Conversions refused by the fill limit are counted as skipped, on both backends
// alike. With MSP_TEST_QUICK set, the shared matrices are limited to 200000 entries so that a
// run under compute-sanitizer stays short. Without a usable GPU the test reports itself skipped.
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *NAME = "cuda_formats";

typedef struct {
  msp_context cpu, gpu;
  int64_t cases;      // (matrix, format variant) pairs run
  int64_t products;   // CUDA products compared
  int64_t fill_skips; // refused by the fill limit on both backends
  int64_t no_cpu_ref; // CPU backend without a kernel for the format: compared with the oracle only
  int64_t read_skips; // shared matrices that could not be read
} env;

typedef struct {
  msp_format format;
  int hack;      // hack_size option (0: the format's default)
  int64_t hyb_k; // hyb_k option (-1: chosen)
  int ell_extra; // ELL width = longest row + ell_extra (0: the default width)
} variant;

static const variant DEFAULT_VARIANTS[] = {
    {MSP_FORMAT_COO, 0, -1, 0}, {MSP_FORMAT_ELL, 0, -1, 0},  {MSP_FORMAT_HLL, 0, -1, 0},
    {MSP_FORMAT_DIA, 0, -1, 0}, {MSP_FORMAT_HDIA, 0, -1, 0}, {MSP_FORMAT_HYB, 0, -1, 0},
};
// Parameters at and around their limits: hack sizes of one warp, two warps and three warps (not
// a power of two), HYB with an empty ELL part (all in COO) and with a narrow one, ELL wider than
// needed (large padding: the kernel's row-length path).
static const variant ALL_VARIANTS[] = {
    {MSP_FORMAT_COO, 0, -1, 0},   {MSP_FORMAT_ELL, 0, -1, 0},  {MSP_FORMAT_ELL, 0, -1, 3},
    {MSP_FORMAT_HLL, 0, -1, 0},   {MSP_FORMAT_HLL, 64, -1, 0}, {MSP_FORMAT_HLL, 96, -1, 0},
    {MSP_FORMAT_DIA, 0, -1, 0},   {MSP_FORMAT_HDIA, 0, -1, 0}, {MSP_FORMAT_HDIA, 32, -1, 0},
    {MSP_FORMAT_HDIA, 96, -1, 0}, {MSP_FORMAT_HYB, 0, -1, 0},  {MSP_FORMAT_HYB, 0, 0, 0},
    {MSP_FORMAT_HYB, 0, 2, 0},
};

typedef struct {
  double alpha, beta;
  int nan_y; // y holds NaN before the product (beta must be 0: y is not read)
} combo;

static const combo ALL_COMBOS[] = {
    {1.0, 0.0, 0}, {1.0, 1.0, 0}, {-0.5, 2.0, 0}, {2.5, 0.0, 1}, {0.0, -1.5, 0},
};
static const combo FEW_COMBOS[] = {{2.5, 0.0, 1}, {-0.5, 2.0, 0}};

// ---- matrices -----------------------------------------------------------------------------------
// A CSR with the given row lengths (each at most cols): the columns of a row of length l are
// spread over cols, one in each of l equal bands, at a random place in the band (strictly
// increasing); values uniform in [-1, 1).
static int make_lengths(test_csr *m, int64_t rows, int64_t cols, const int64_t *len,
                        uint64_t seed) {
  msp_rng r = {seed};
  memset(m, 0, sizeof *m);
  m->rows = rows;
  m->cols = cols;
  m->rowptr = malloc((size_t)(rows + 1) * sizeof *m->rowptr);
  if (!m->rowptr) return -1;
  m->rowptr[0] = 0;
  for (int64_t i = 0; i < rows; i++)
    m->rowptr[i + 1] = m->rowptr[i] + (len[i] < cols ? len[i] : cols);
  m->nnz = m->rowptr[rows];
  m->colind = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->colind);
  m->val = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->val);
  if (!m->colind || !m->val) return -1;
  for (int64_t i = 0; i < rows; i++) {
    int64_t b = m->rowptr[i], l = m->rowptr[i + 1] - b;
    for (int64_t k = 0; k < l; k++) {
      int64_t band = cols / l;
      m->colind[b + k] = (int32_t)(k * cols / l + msp_rng_range(&r, band));
      m->val[b + k] = 2.0 * msp_rng_uniform(&r) - 1.0;
    }
  }
  return 0;
}

// Row lengths: `base` everywhere, 0 on every `empty_every`-th row (0: none), and `long_len` on
// row `long_row` (-1: none).
static int make_pattern(test_csr *m, int64_t rows, int64_t cols, int64_t base, int64_t empty_every,
                        int64_t long_row, int64_t long_len, uint64_t seed) {
  msp_rng r = {seed ^ 0x5eedull};
  int64_t *len = malloc((size_t)(rows ? rows : 1) * sizeof *len);
  if (!len) return -1;
  for (int64_t i = 0; i < rows; i++) {
    len[i] = base < 0 ? msp_rng_range(&r, -base + 1) : base; // base < 0: uniform in 0..-base
    if (empty_every > 0 && i % empty_every == 0) len[i] = 0;
    if (i == long_row) len[i] = long_len;
  }
  int rc = make_lengths(m, rows, cols, len, seed);
  free(len);
  return rc;
}

// ---- the comparison -----------------------------------------------------------------------------
static int64_t longest_row(const test_csr *m) {
  int64_t w = 0;
  for (int64_t i = 0; i < m->rows; i++)
    if (m->rowptr[i + 1] - m->rowptr[i] > w) w = m->rowptr[i + 1] - m->rowptr[i];
  return w;
}

static void variant_label(char *buf, size_t n, const char *mname, const variant *v) {
  snprintf(buf, n, "%s/%s", mname, msp_format_name(v->format));
  size_t l = strlen(buf);
  if (v->hack) snprintf(buf + l, n - l, "/hack%d", v->hack);
  l = strlen(buf);
  if (v->hyb_k >= 0) snprintf(buf + l, n - l, "/k%lld", (long long)v->hyb_k);
  l = strlen(buf);
  if (v->ell_extra) snprintf(buf + l, n - l, "/width+%d", v->ell_extra);
}

// Run one product on ctx: y = yinit, then y = alpha*B*x + beta*y; the result in out.
static msp_status product(msp_context ctx, msp_matrix B, msp_vector x, msp_vector y, const combo *c,
                          const double *yinit, double *out) {
  msp_status st = msp_vector_set(y, yinit);
  if (st == MSP_SUCCESS) st = msp_spmv(ctx, c->alpha, B, x, c->beta, y);
  if (st == MSP_SUCCESS) st = msp_vector_get(y, out);
  return st;
}

// All variants and combos of one matrix. max_fill: the conversion option (large for small
// matrices so that DIA and ELL run on irregular patterns too).
static void cross(env *e, const test_csr *m, const char *mname, const variant *vars, size_t nvars,
                  const combo *combos, size_t ncombos, double max_fill) {
  msp_matrix A = NULL;
  msp_vector xc = NULL, yc = NULL, xg = NULL, yg = NULL;
  size_t nr = (size_t)(m->rows ? m->rows : 1), nc = (size_t)(m->cols ? m->cols : 1);
  double *x = malloc(nc * sizeof *x), *y0 = malloc(nr * sizeof *y0);
  double *ynan = malloc(nr * sizeof *ynan), *zero = calloc(nr, sizeof *zero);
  double *ref = malloc(nr * sizeof *ref), *got = malloc(nr * sizeof *got);
  double *again = malloc(nr * sizeof *again), *orc = malloc(nr * sizeof *orc);
  CHECK(x && y0 && ynan && zero && ref && got && again && orc, "%s: out of host memory", mname);
  if (!(x && y0 && ynan && zero && ref && got && again && orc)) goto done;
  msp_rng r = {0x1234567ull + (uint64_t)m->nnz * 31u + (uint64_t)m->rows};
  for (int64_t j = 0; j < m->cols; j++)
    x[j] = 2.0 * msp_rng_uniform(&r) - 1.0;
  for (int64_t i = 0; i < m->rows; i++) {
    y0[i] = 2.0 * msp_rng_uniform(&r) - 1.0;
    ynan[i] = NAN;
  }
  CHECK_OK(test_csr_to_matrix(m, e->cpu, &A));
  CHECK_OK(msp_vector_create(e->cpu, m->cols, &xc));
  CHECK_OK(msp_vector_create(e->cpu, m->rows, &yc));
  CHECK_OK(msp_vector_create(e->gpu, m->cols, &xg));
  CHECK_OK(msp_vector_create(e->gpu, m->rows, &yg));
  if (!A || !xc || !yc || !xg || !yg) goto done;
  CHECK_OK(msp_vector_set(xc, x));
  CHECK_OK(msp_vector_set(xg, x));
  const int64_t longest = longest_row(m);

  for (size_t vi = 0; vi < nvars; vi++) {
    const variant *v = &vars[vi];
    char label[512];
    variant_label(label, sizeof label, mname, v);
    msp_convert_options o = msp_convert_options_default();
    o.format = v->format;
    o.hack_size = v->hack;
    o.hyb_k = v->hyb_k;
    o.max_fill = max_fill;
    if (v->ell_extra) o.ell_width = longest + v->ell_extra;
    msp_matrix Bc = NULL, Bg = NULL;
    msp_status sc = msp_matrix_convert(e->cpu, A, &o, &Bc);
    char cpu_msg[512];
    snprintf(cpu_msg, sizeof cpu_msg, "%s", msp_last_error());
    msp_status sg = msp_matrix_convert(e->gpu, A, &o, &Bg);
    if (sc == MSP_ERR_FILL_LIMIT || sg == MSP_ERR_FILL_LIMIT) {
      // The fill limit is decided on the host from the CSR alone: both backends must agree.
      CHECK(sc == sg, "%s: fill limit on one backend only (cpu %s, cuda %s: %s)", label,
            msp_status_name(sc), msp_status_name(sg), msp_last_error());
      e->fill_skips++;
      goto next;
    }
    CHECK(sc == MSP_SUCCESS, "%s: CPU conversion: %s (%s)", label, msp_status_name(sc), cpu_msg);
    CHECK(sg == MSP_SUCCESS, "%s: CUDA conversion: %s (%s)", label, msp_status_name(sg),
          msp_last_error());
    if (sc != MSP_SUCCESS || sg != MSP_SUCCESS) goto next;
    CHECK(msp_matrix_format(Bg) == v->format, "%s: CUDA matrix has format %s", label,
          msp_format_name(msp_matrix_format(Bg)));
    e->cases++;
    for (size_t ci = 0; ci < ncombos; ci++) {
      const combo *c = &combos[ci];
      const double *yinit = c->nan_y ? ynan : y0;
      const double *ybound = c->nan_y ? zero : y0; // y is not read: no term for it
      char clabel[600];
      snprintf(clabel, sizeof clabel, "%s alpha %g beta %g%s", label, c->alpha, c->beta,
               c->nan_y ? " (NaN in y)" : "");
      msp_status s = product(e->gpu, Bg, xg, yg, c, yinit, got);
      CHECK(s == MSP_SUCCESS, "%s: CUDA product: %s (%s)", clabel, msp_status_name(s),
            msp_last_error());
      if (s != MSP_SUCCESS) continue;
      e->products++;
      // Against the long-double oracle, always.
      test_oracle_spmv(m, c->alpha, x, c->beta, ybound, orc);
      CHECK(test_compare_rows(m, c->alpha, x, c->beta, ybound, got, orc, clabel) == 0,
            "%s: CUDA result outside the bound of the oracle", clabel);
      // Against the CPU backend's kernel for the same format.
      s = product(e->cpu, Bc, xc, yc, c, yinit, ref);
      if (s == MSP_ERR_NOT_SUPPORTED) {
        if (ci == 0) e->no_cpu_ref++;
      } else {
        CHECK(s == MSP_SUCCESS, "%s: CPU product: %s (%s)", clabel, msp_status_name(s),
              msp_last_error());
        if (s == MSP_SUCCESS)
          CHECK(test_compare_rows(m, c->alpha, x, c->beta, ybound, got, ref, clabel) == 0,
                "%s: CUDA result outside the bound of the CPU result", clabel);
      }
      if (c->nan_y) {
        int64_t bad = 0;
        for (int64_t i = 0; i < m->rows; i++)
          bad += !isfinite(got[i]);
        CHECK(bad == 0, "%s: %lld rows not finite: y was read although beta == 0", clabel,
              (long long)bad);
      }
      // Determinism: the same product again gives the same bits.
      s = product(e->gpu, Bg, xg, yg, c, yinit, again);
      CHECK(s == MSP_SUCCESS, "%s: second CUDA product: %s (%s)", clabel, msp_status_name(s),
            msp_last_error());
      if (s == MSP_SUCCESS)
        CHECK(memcmp(got, again, (size_t)m->rows * sizeof *got) == 0,
              "%s: two identical CUDA products differ in their bits", clabel);
    }
  next:
    msp_matrix_destroy(&Bc);
    msp_matrix_destroy(&Bg);
  }
done:
  msp_vector_destroy(&xc);
  msp_vector_destroy(&yc);
  msp_vector_destroy(&xg);
  msp_vector_destroy(&yg);
  msp_matrix_destroy(&A);
  free(x);
  free(y0);
  free(ynan);
  free(zero);
  free(ref);
  free(got);
  free(again);
  free(orc);
}

#define NV(a) (sizeof(a) / sizeof((a)[0]))

// Generated matrices get every variant and combo; small ones a fill limit that lets DIA and
// ELL run on irregular patterns (DIA of rows x (rows + cols) slots stays below ~32 MB).
static void cross_generated(env *e, test_csr *m, const char *name, int made) {
  CHECK(made == 0, "%s: could not generate the matrix", name);
  if (made == 0) {
    double fill = (double)m->rows * (double)(m->rows + m->cols) <= 4e6 ? 1e9 : 3.0;
    cross(e, m, name, ALL_VARIANTS, NV(ALL_VARIANTS), ALL_COMBOS, NV(ALL_COMBOS), fill);
  }
  test_csr_free(m);
}

static void cross_spec(env *e, const char *spec) {
  msp_matrix A = NULL;
  test_csr m;
  memset(&m, 0, sizeof m);
  msp_status s = msp_matrix_generate(e->cpu, spec, &A);
  CHECK(s == MSP_SUCCESS, "generate %s: %s (%s)", spec, msp_status_name(s), msp_last_error());
  if (s == MSP_SUCCESS) cross_generated(e, &m, spec, test_csr_from_matrix(&m, A));
  msp_matrix_destroy(&A);
}

static void shared_matrix(const char *path, const char *name, void *user) {
  env *e = (env *)user;
  msp_matrix A = NULL;
  test_csr m;
  memset(&m, 0, sizeof m);
  if (msp_matrix_read_mtx(e->cpu, path, 0, &A) != MSP_SUCCESS) {
    // The reader's own tests cover its refusals (e.g. non-finite values); nothing to cross here.
    e->read_skips++;
    return;
  }
  if (test_csr_from_matrix(&m, A) == 0)
    cross(e, &m, name, DEFAULT_VARIANTS, NV(DEFAULT_VARIANTS), FEW_COMBOS, NV(FEW_COMBOS), 3.0);
  else
    CHECK(0, "%s: could not copy the CSR out", name);
  test_csr_free(&m);
  msp_matrix_destroy(&A);
}

int main(void) {
  env e;
  memset(&e, 0, sizeof e);
  int rc_ = test_cuda_context(NAME, &e.gpu);
  if (rc_ >= 0) return rc_;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &e.cpu));
  if (!e.gpu || !e.cpu) {
    msp_context_destroy(&e.gpu);
    msp_context_destroy(&e.cpu);
    return msp_test_finish(NAME);
  }
  const int quick = getenv("MSP_TEST_QUICK") != NULL;
  test_csr m;

  // Random uniform, square and rectangular with n not a multiple of 32 or of any hack size.
  cross_generated(&e, &m, "random-1000x1000", test_csr_random(&m, 1000, 1000, 8.0, 11));
  cross_generated(&e, &m, "random-1037x999", test_csr_random(&m, 1037, 999, 5.0, 12));
  cross_generated(&e, &m, "random-wide-100x5000", test_csr_random(&m, 100, 5000, 20.0, 13));
  cross_generated(&e, &m, "random-tall-5000x100", test_csr_random(&m, 5000, 100, 3.0, 14));
  cross_generated(&e, &m, "random-large",
                  test_csr_random(&m, quick ? 20011 : 60013, quick ? 20011 : 60013, 6.0, 15));
  // Power-law row lengths (a few very long rows among short ones).
  cross_generated(&e, &m, "powerlaw-5000", test_csr_powerlaw(&m, 5000, 5000, 2000, 16));
  cross_generated(&e, &m, "powerlaw-777", test_csr_powerlaw(&m, 777, 900, 700, 17));
  // Empty rows; one dense row; a single row longer than a hack in a partial last hack.
  cross_generated(&e, &m, "empty-rows-777", make_pattern(&m, 777, 800, -10, 3, -1, 0, 18));
  cross_generated(&e, &m, "dense-row-3000", make_pattern(&m, 3000, 3000, 3, 0, 1500, 3000, 19));
  cross_generated(&e, &m, "long-row-last-hack-100", make_pattern(&m, 100, 600, -2, 0, 97, 500, 20));
  cross_generated(&e, &m, "long-row-first-70", make_pattern(&m, 70, 300, -3, 5, 0, 250, 21));
  // Tiny shapes: smaller than a warp and a hack, a single entry, a single row or column.
  cross_generated(&e, &m, "tiny-7x5", make_pattern(&m, 7, 5, -3, 0, -1, 0, 22));
  cross_generated(&e, &m, "one-1x1", make_pattern(&m, 1, 1, 1, 0, -1, 0, 23));
  cross_generated(&e, &m, "row-1x1000", make_pattern(&m, 1, 1000, 1000, 0, -1, 0, 24));
  cross_generated(&e, &m, "column-1000x1", make_pattern(&m, 1000, 1, 1, 7, -1, 0, 25));
  // nnz = 0, and 0 x 0.
  cross_generated(&e, &m, "nnz0-50x40", make_pattern(&m, 50, 40, 0, 0, -1, 0, 26));
  cross_generated(&e, &m, "empty-0x0", make_pattern(&m, 0, 0, 0, 0, -1, 0, 27));
  // COO tiles of 256 triples: rows filling tiles exactly, two rows per tile, rows straddling
  // tile boundaries, one row over hundreds of tiles (long fix-up) and a matrix of one row.
  cross_generated(&e, &m, "coo-rows-256", make_pattern(&m, 100, 300, 256, 0, -1, 0, 28));
  cross_generated(&e, &m, "coo-rows-128", make_pattern(&m, 200, 300, 128, 0, -1, 0, 29));
  cross_generated(&e, &m, "coo-rows-300", make_pattern(&m, 50, 400, 300, 0, -1, 0, 30));
  cross_generated(&e, &m, "coo-long-row-70000",
                  make_pattern(&m, 300, 80000, -4, 9, 150, 70000, 31));
  cross_generated(&e, &m, "coo-one-row-50000", make_pattern(&m, 1, 50000, 50000, 0, -1, 0, 32));
  // Banded and stencil matrices (DIA and HDIA territory): more than 256 diagonals (the DIA
  // kernel stages offsets 256 at a time), a diagonal matrix.
  cross_spec(&e, "laplace2d:40");
  cross_spec(&e, quick ? "stencil27:10" : "stencil27:24");
  cross_spec(&e, "banded:1000:7");
  cross_spec(&e, "banded:2000:301");
  cross_spec(&e, "banded:500:1");
  // A diagonal matrix with one far off-diagonal entry (one more diagonal, nearly all padding).
  {
    const int64_t n = 640;
    int64_t k = 0;
    memset(&m, 0, sizeof m);
    m.rows = m.cols = n;
    m.nnz = n + 1;
    m.rowptr = malloc((size_t)(n + 1) * sizeof *m.rowptr);
    m.colind = malloc((size_t)m.nnz * sizeof *m.colind);
    m.val = malloc((size_t)m.nnz * sizeof *m.val);
    int made = m.rowptr && m.colind && m.val ? 0 : -1;
    for (int64_t i = 0; made == 0 && i < n; i++) {
      m.rowptr[i] = k;
      m.colind[k] = (int32_t)i;
      m.val[k++] = 1.0 + (double)i / (double)n;
      if (i == 5) {
        m.colind[k] = (int32_t)(n - 1);
        m.val[k++] = -3.0;
      }
    }
    if (made == 0) m.rowptr[n] = k;
    cross_generated(&e, &m, "diagonal-far-offdiag-640", made);
  }

  // The shared collection (../shared/matrices).
  if (test_matrices_dir()) {
    int n = test_for_each_matrix(quick ? 200000 : 0, shared_matrix, &e);
    printf("%s: %d shared matrices visited%s\n", NAME, n,
           quick ? " (MSP_TEST_QUICK: nnz <= 200000)" : "");
  } else {
    printf("%s: MSP_MATRICES_DIR is not set or has no INDEX.tsv: shared matrices not crossed\n",
           NAME);
  }

  printf("%s: %lld (matrix, format) cases, %lld CUDA products compared; %lld conversions refused "
         "by the fill limit (skipped); %lld cases without a CPU kernel (oracle only); %lld shared "
         "matrices unreadable (skipped)\n",
         NAME, (long long)e.cases, (long long)e.products, (long long)e.fill_skips,
         (long long)e.no_cpu_ref, (long long)e.read_skips);
  msp_context_destroy(&e.gpu);
  msp_context_destroy(&e.cpu);
  return msp_test_finish(NAME);
}

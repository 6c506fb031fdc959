// test_mtx.c: Matrix Market reader and vector writer: valid variants, malformed files, gzip, OOM.
#define _POSIX_C_SOURCE 200809L

#include "internal.h"
#include "testlib.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];
static msp_context ctx;

// ---- files --------------------------------------------------------------------------------------
static const char *tmp_path(const char *name) {
  static char bufs[4][512];
  static int next;
  char *p = bufs[next++ % 4];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  return p;
}

static const char *write_bytes(const char *name, const void *data, size_t len) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot create %s", path);
  if (!f) return path;
  if (len) CHECK(fwrite(data, 1, len, f) == len, "short write to %s", path);
  fclose(f);
  return path;
}
static const char *write_text(const char *name, const char *text) {
  return write_bytes(name, text, strlen(text));
}
// Write `len` bytes as a gzip file (gzopen "wb", as the brief's users would).
static const char *write_gz(const char *name, const void *data, size_t len) {
  const char *path = tmp_path(name);
  gzFile g = gzopen(path, "wb");
  CHECK(g != NULL, "gzopen %s failed", path);
  if (!g) return path;
  if (len) CHECK(gzwrite(g, data, (unsigned)len) == (int)len, "gzwrite %s failed", path);
  CHECK(gzclose(g) == Z_OK, "gzclose %s failed", path);
  return path;
}
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
  fclose(f);
  *len = (size_t)n;
  return b;
}

// ---- matrix checks ------------------------------------------------------------------------------

// Check A against an expected CSR (sorted rows, exact values; NULL vals skips the values).
static void check_csr(const char *label, msp_matrix A, int64_t rows, int64_t cols, int64_t nnz,
                      const int64_t *rowptr, const int32_t *colind, const double *vals) {
  CHECK(A != NULL, "%s: no matrix", label);
  if (!A) return;
  CHECK(msp_matrix_rows(A) == rows, "%s: rows %lld, expected %lld", label,
        (long long)msp_matrix_rows(A), (long long)rows);
  CHECK(msp_matrix_cols(A) == cols, "%s: cols %lld, expected %lld", label,
        (long long)msp_matrix_cols(A), (long long)cols);
  CHECK(msp_matrix_nnz(A) == nnz, "%s: nnz %lld, expected %lld", label,
        (long long)msp_matrix_nnz(A), (long long)nnz);
  if (msp_matrix_rows(A) != rows || msp_matrix_nnz(A) != nnz) return;
  int64_t rp[64];
  int32_t ci[64];
  double v[64];
  if (rows + 1 > 64 || nnz > 64) return;
  CHECK_OK(msp_matrix_get_csr(A, rp, ci, v));
  for (int64_t i = 0; i <= rows; i++)
    CHECK(rp[i] == rowptr[i], "%s: rowptr[%lld] = %lld, expected %lld", label, (long long)i,
          (long long)rp[i], (long long)rowptr[i]);
  for (int64_t k = 0; k < nnz; k++) {
    CHECK(ci[k] == colind[k], "%s: colind[%lld] = %d, expected %d", label, (long long)k, ci[k],
          colind[k]);
    if (vals)
      CHECK(v[k] == vals[k] && signbit(v[k]) == signbit(vals[k]),
            "%s: val[%lld] = %.17g, expected %.17g", label, (long long)k, v[k], vals[k]);
  }
}

// Read `text` as NAME (plain) and NAME.gz and through the memory path; each must give the CSR.
static void check_valid(const char *name, const char *text, unsigned flags, int64_t rows,
                        int64_t cols, int64_t nnz, const int64_t *rowptr, const int32_t *colind,
                        const double *vals) {
  char gzname[256], label[300];
  msp_matrix A = NULL;
  snprintf(gzname, sizeof gzname, "%s.gz", name);
  CHECK_OK(msp_matrix_read_mtx(ctx, write_text(name, text), flags, &A));
  snprintf(label, sizeof label, "%s (plain)", name);
  check_csr(label, A, rows, cols, nnz, rowptr, colind, vals);
  msp_matrix_destroy(&A);
  CHECK_OK(msp_matrix_read_mtx(ctx, write_gz(gzname, text, strlen(text)), flags, &A));
  snprintf(label, sizeof label, "%s (gzip)", name);
  check_csr(label, A, rows, cols, nnz, rowptr, colind, vals);
  msp_matrix_destroy(&A);
  CHECK_OK(msp__matrix_read_mtx_mem(ctx, name, text, strlen(text), flags, &A));
  snprintf(label, sizeof label, "%s (memory)", name);
  check_csr(label, A, rows, cols, nnz, rowptr, colind, vals);
  msp_matrix_destroy(&A);
}

static void test_valid(void) {
  // general real, entries out of order, mixed number spellings
  {
    const char *t = "%%MatrixMarket matrix coordinate real general\n"
                    "% a comment\n"
                    "3 4 5\n"
                    "3 4 -2.5e1\n"
                    "1 1 1\n"
                    "2 3 .5\n"
                    "1 4 +7.\n"
                    "3 1 0.1\n";
    int64_t rp[] = {0, 2, 3, 5};
    int32_t ci[] = {0, 3, 2, 0, 3};
    double v[] = {1, 7, 0.5, 0.1, -25};
    check_valid("general.mtx", t, 0, 3, 4, 5, rp, ci, v);
  }
  // duplicates summed (also across the symmetric mirror)
  {
    const char *t = "%%MatrixMarket matrix coordinate real general\n"
                    "2 2 4\n"
                    "1 1 1.5\n"
                    "2 1 1\n"
                    "1 1 2.25\n"
                    "2 1 -4\n";
    int64_t rp[] = {0, 1, 2};
    int32_t ci[] = {0, 0};
    double v[] = {3.75, -3};
    check_valid("duplicates.mtx", t, 0, 2, 2, 2, rp, ci, v);
  }
  // symmetric: lower triangle and diagonal stored, upper mirrored
  {
    const char *t = "%%MatrixMarket matrix coordinate real symmetric\n"
                    "3 3 4\n"
                    "1 1 4\n"
                    "2 1 -1\n"
                    "3 2 -2\n"
                    "3 3 5\n";
    int64_t rp[] = {0, 2, 4, 6};
    int32_t ci[] = {0, 1, 0, 2, 1, 2};
    double v[] = {4, -1, -1, -2, -2, 5};
    check_valid("symmetric.mtx", t, 0, 3, 3, 6, rp, ci, v);
  }
  // symmetric with the upper triangle stored (as some published files do): mirrored the same way
  {
    const char *t = "%%MatrixMarket matrix coordinate real symmetric\n"
                    "3 3 2\n"
                    "1 2 3\n"
                    "2 3 4\n";
    int64_t rp[] = {0, 1, 3, 4};
    int32_t ci[] = {1, 0, 2, 1};
    double v[] = {3, 3, 4, 4};
    check_valid("symmetric_upper.mtx", t, 0, 3, 3, 4, rp, ci, v);
  }
  // skew-symmetric: mirrored with the sign flipped
  {
    const char *t = "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                    "3 3 2\n"
                    "2 1 3\n"
                    "3 1 -0.5\n";
    int64_t rp[] = {0, 2, 3, 4};
    int32_t ci[] = {1, 2, 0, 0};
    double v[] = {-3, 0.5, 3, -0.5};
    check_valid("skew.mtx", t, 0, 3, 3, 4, rp, ci, v);
  }
  // pattern general and symmetric: ones
  {
    const char *t = "%%MatrixMarket matrix coordinate pattern general\n"
                    "2 3 3\n"
                    "1 3\n"
                    "2 1\n"
                    "2 2\n";
    int64_t rp[] = {0, 1, 3};
    int32_t ci[] = {2, 0, 1};
    double v[] = {1, 1, 1};
    check_valid("pattern.mtx", t, 0, 2, 3, 3, rp, ci, v);
  }
  {
    const char *t = "%%MatrixMarket matrix coordinate pattern symmetric\n"
                    "3 3 3\n"
                    "1 1\n"
                    "3 1\n"
                    "3 2\n";
    int64_t rp[] = {0, 2, 3, 5};
    int32_t ci[] = {0, 2, 2, 0, 1};
    double v[] = {1, 1, 1, 1, 1};
    check_valid("pattern_sym.mtx", t, 0, 3, 3, 5, rp, ci, v);
  }
  // integer general and symmetric
  {
    const char *t = "%%MatrixMarket matrix coordinate integer general\n"
                    "2 2 3\n"
                    "1 1 -7\n"
                    "2 2 +12\n"
                    "1 2 9007199254740993\n"; // 2^53 + 1 rounds to even: 2^53
    int64_t rp[] = {0, 2, 3};
    int32_t ci[] = {0, 1, 1};
    double v[] = {-7, 9007199254740992.0, 12};
    check_valid("integer.mtx", t, 0, 2, 2, 3, rp, ci, v);
  }
  {
    const char *t = "%%MatrixMarket matrix coordinate integer symmetric\n"
                    "2 2 2\n"
                    "2 1 3\n"
                    "2 2 1\n";
    int64_t rp[] = {0, 1, 3};
    int32_t ci[] = {1, 0, 1};
    double v[] = {3, 3, 1};
    check_valid("integer_sym.mtx", t, 0, 2, 2, 3, rp, ci, v);
  }
  // CRLF line ends, tabs, leading/trailing whitespace, comments and blank lines everywhere legal,
  // case-insensitive banner words, no final newline
  {
    const char *t = "%%MatrixMarket Matrix COORDINATE Real General  \r\n"
                    "%comment\r\n"
                    "\r\n"
                    "   % indented comment\r\n"
                    "\t 2 2 3 \t\r\n"
                    "\r\n"
                    "  1\t1   2.5  \r\n"
                    "% between entries\r\n"
                    "\r\n"
                    "   \t  \r\n"
                    "2 2 1e2\r\n"
                    "%\r\n"
                    "2 1 -1E-1\r\n"
                    "\r\n"
                    "% trailing comment";
    int64_t rp[] = {0, 1, 3};
    int32_t ci[] = {0, 0, 1};
    double v[] = {2.5, -0.1, 100};
    check_valid("crlf.mtx", t, 0, 2, 2, 3, rp, ci, v);
  }
  // a UTF-8 byte order mark before the banner (as some editors write) is skipped
  {
    const char *t = "\xEF\xBB\xBF%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n";
    int64_t rp[] = {0, 1};
    int32_t ci[] = {0};
    double v[] = {2};
    check_valid("bom.mtx", t, 0, 1, 1, 1, rp, ci, v);
  }
  // 0 x 0, and nnz = 0
  {
    int64_t rp[] = {0};
    check_valid("empty0x0.mtx", "%%MatrixMarket matrix coordinate real general\n0 0 0\n", 0, 0, 0,
                0, rp, NULL, NULL);
    int64_t rp2[] = {0, 0, 0, 0};
    check_valid("nnz0.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 0\n", 0, 3, 3, 0,
                rp2, NULL, NULL);
    int64_t rp3[] = {0, 0, 0};
    check_valid("nnz0_rect.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 5 0\n", 0, 2,
                5, 0, rp3, NULL, NULL);
  }
  // numbers that need care: subnormals, signed zero, the largest double, long mantissas,
  // underflow to zero, explicit zeros kept
  {
    const char *t = "%%MatrixMarket matrix coordinate real general\n"
                    "1 8 8\n"
                    "1 1 1e-310\n"
                    "1 2 -0.0\n"
                    "1 3 1.7976931348623157e308\n"
                    "1 4 0.1000000000000000055511151231257827021181583404541015625\n"
                    "1 5 3.14159265358979323846264338327950288419716939937510582097494459\n"
                    "1 6 1e-400\n"
                    "1 7 4.9406564584124654e-324\n"
                    "1 8 000000000000000000000000000000000000000000012.5e-1\n";
    int64_t rp[] = {0, 8};
    int32_t ci[] = {0, 1, 2, 3, 4, 5, 6, 7};
    double v[] = {1e-310,
                  -0.0,
                  DBL_MAX,
                  0.1,
                  3.14159265358979323846264338327950288,
                  0.0,
                  4.9406564584124654e-324,
                  1.25};
    check_valid("numbers.mtx", t, 0, 1, 8, 8, rp, ci, v);
  }
  // a line longer than the reader's first buffer (64 KiB): a long comment
  {
    size_t n = 200000;
    char *t = malloc(n + 200);
    if (t) {
      strcpy(t, "%%MatrixMarket matrix coordinate real general\n%");
      size_t k = strlen(t);
      memset(t + k, 'x', n);
      strcpy(t + k + n, "\n1 1 1\n1 1 42\n");
      int64_t rp[] = {0, 1};
      int32_t ci[] = {0};
      double v[] = {42};
      check_valid("longline.mtx", t, 0, 1, 1, 1, rp, ci, v);
      free(t);
    }
  }
}

// Random values written in several spellings read back as strtod reads them (glibc's strtod
// rounds correctly), through the fast path and the exact path of the number parser.
static void test_numbers_random(void) {
  enum { N = 3000 };
  msp_rng rng = {12345};
  size_t cap = (size_t)N * 64 + 128, len = 0;
  char *t = malloc(cap);
  double *want = malloc(N * sizeof *want);
  if (!t || !want) {
    CHECK(0, "host allocation failed");
    free(t);
    free(want);
    return;
  }
  len += (size_t)snprintf(t + len, cap - len,
                          "%%%%MatrixMarket matrix coordinate real general\n1 %d %d\n", N, N);
  for (int k = 0; k < N; k++) {
    char num[64];
    uint64_t bits = msp_rng_next(&rng);
    double x;
    memcpy(&x, &bits, sizeof x);
    if (!isfinite(x)) x = (double)(bits >> 20);
    switch (k % 6) {
    case 0:
      snprintf(num, sizeof num, "%.17g", x);
      break;
    case 1:
      snprintf(num, sizeof num, "%.15g", x);
      break;
    case 2:
      snprintf(num, sizeof num, "%.6e", msp_rng_uniform(&rng) * 1000 - 500);
      break;
    case 3:
      snprintf(num, sizeof num, "%.3f", msp_rng_uniform(&rng) * 100);
      break;
    case 4:
      snprintf(num, sizeof num, "%lld", (long long)(msp_rng_next(&rng) >> 1));
      break;
    default:
      snprintf(num, sizeof num, "%.20e", x * 1e-10);
      break;
    }
    want[k] = strtod(num, NULL);
    len += (size_t)snprintf(t + len, cap - len, "1 %d %s\n", k + 1, num);
  }
  msp_matrix A = NULL;
  CHECK_OK(msp__matrix_read_mtx_mem(ctx, "random.mtx", t, len, 0, &A));
  if (A) {
    double *got = malloc(N * sizeof *got);
    int32_t *ci = malloc(N * sizeof *ci);
    CHECK(msp_matrix_nnz(A) == N, "nnz %lld", (long long)msp_matrix_nnz(A));
    if (got && ci && msp_matrix_nnz(A) == N) {
      CHECK_OK(msp_matrix_get_csr(A, NULL, ci, got));
      int bad = 0;
      for (int k = 0; k < N; k++) {
        if (memcmp(&got[k], &want[ci[k]], sizeof(double)) != 0 && bad++ < 5)
          CHECK(0, "column %d: read %.17g, strtod %.17g", ci[k] + 1, got[k], want[ci[k]]);
      }
      CHECK(bad == 0, "%d of %d values differ from strtod", bad, N);
    }
    free(got);
    free(ci);
  }
  msp_matrix_destroy(&A);
  free(t);
  free(want);
}

// ---- malformed files ----------------------------------------------------------------------------
#define BANNER "%%MatrixMarket matrix coordinate real general\n"
typedef struct {
  const char *name;
  const char *text;
  size_t len; // 0: strlen(text)
  msp_status status;
  int line;
  const char *what; // what the case checks (printed on failure; listed in the report)
} bad_case;

static const bad_case bad_cases[] = {
    {"empty", "", 0, MSP_ERR_MM_EMPTY, 1, "zero-byte file"},
    {"blank_only", "\n  \n\t\r\n", 0, MSP_ERR_MM_EMPTY, 1, "only blank lines"},
    {"no_banner", "3 3 1\n1 1 1\n", 0, MSP_ERR_MM_BANNER, 1, "size line where the banner belongs"},
    {"banner_typo", "%%MatrixMarkt matrix coordinate real general\n1 1 0\n", 0, MSP_ERR_MM_BANNER,
     1, "misspelled %%MatrixMarket"},
    {"banner_comment", "% just a comment\n" BANNER "1 1 0\n", 0, MSP_ERR_MM_BANNER, 1,
     "comment before the banner"},
    {"banner_blank_first", "\n" BANNER "1 1 0\n", 0, MSP_ERR_MM_BANNER, 1,
     "blank line before the banner"},
    {"banner_short", "%%MatrixMarket matrix coordinate real\n1 1 0\n", 0, MSP_ERR_MM_BANNER, 1,
     "banner without symmetry"},
    {"banner_long", "%%MatrixMarket matrix coordinate real general extra\n1 1 0\n", 0,
     MSP_ERR_MM_BANNER, 1, "extra word on the banner"},
    {"complex", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 0,
     MSP_ERR_MM_UNSUPPORTED, 1, "complex field"},
    {"array", "%%MatrixMarket matrix array real general\n2 1\n1\n2\n", 0, MSP_ERR_MM_UNSUPPORTED, 1,
     "array format read as a sparse matrix"},
    {"hermitian", "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 0,
     MSP_ERR_MM_UNSUPPORTED, 1, "hermitian symmetry"},
    {"object_vector", "%%MatrixMarket vector coordinate real general\n1 1 0\n", 0,
     MSP_ERR_MM_UNSUPPORTED, 1, "object other than matrix"},
    {"field_unknown", "%%MatrixMarket matrix coordinate double general\n1 1 0\n", 0,
     MSP_ERR_MM_UNSUPPORTED, 1, "unknown field word"},
    {"size_missing", BANNER "% only comments\n\n", 0, MSP_ERR_MM_SIZE, 3,
     "end of file before the size line"},
    {"size_malformed", BANNER "% c\n3 x 3\n", 0, MSP_ERR_MM_SIZE, 3, "non-numeric size"},
    {"size_short", BANNER "3 3\n1 1 1\n", 0, MSP_ERR_MM_SIZE, 2, "size line with 2 numbers"},
    {"size_extra", BANNER "3 3 1 7\n1 1 1\n", 0, MSP_ERR_MM_SIZE, 2, "size line with 4 numbers"},
    {"size_negative", BANNER "-3 3 1\n1 1 1\n", 0, MSP_ERR_MM_SIZE, 2, "negative row count"},
    {"size_nnz_negative", BANNER "3 3 -1\n", 0, MSP_ERR_MM_SIZE, 2, "negative entry count"},
    {"size_overflow64", BANNER "99999999999999999999 3 1\n1 1 1\n", 0, MSP_ERR_MM_SIZE, 2,
     "row count overflowing int64"},
    {"size_over_int32", BANNER "3000000000 3 1\n1 1 1\n", 0, MSP_ERR_MM_SIZE, 2,
     "row count beyond the int32 index limit"},
    {"size_cols_over_int32", BANNER "3 2147483648 1\n1 1 1\n", 0, MSP_ERR_MM_SIZE, 2,
     "column count beyond the int32 index limit"},
    {"size_sym_rect", "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n", 0,
     MSP_ERR_MM_SIZE, 2, "non-square symmetric matrix"},
    {"too_few", BANNER "3 3 3\n1 1 1\n% c\n2 2 2\n", 0, MSP_ERR_MM_TOO_FEW, 5,
     "2 of 3 entries (line = last line)"},
    {"too_few_none", BANNER "3 3 1\n", 0, MSP_ERR_MM_TOO_FEW, 2, "no entries at all"},
    {"too_many", BANNER "3 3 1\n1 1 1\n\n2 2 2\n", 0, MSP_ERR_MM_TOO_MANY, 5,
     "an entry beyond the declared count"},
    {"row_zero", BANNER "3 3 2\n1 1 1\n0 1 1\n", 0, MSP_ERR_MM_INDEX, 4, "row index 0"},
    {"col_zero", BANNER "5 5 2\n1 1 1\n% c\n2 0 1\n", 0, MSP_ERR_MM_INDEX, 5, "column index 0"},
    {"row_big", BANNER "3 3 1\n4 1 1\n", 0, MSP_ERR_MM_INDEX, 3, "row index beyond rows"},
    {"col_big", BANNER "3 3 1\n1 4 1\n", 0, MSP_ERR_MM_INDEX, 3, "column index beyond cols"},
    {"index_negative", BANNER "3 3 1\n-1 1 1\n", 0, MSP_ERR_MM_INDEX, 3, "negative index"},
    {"index_text", BANNER "3 3 1\nx 1 1\n", 0, MSP_ERR_MM_INDEX, 3, "non-numeric index"},
    {"index_real", BANNER "3 3 1\n1.0 1 1\n", 0, MSP_ERR_MM_INDEX, 3, "index written as real"},
    {"index_overflow", BANNER "3 3 1\n1 99999999999999999999999 1\n", 0, MSP_ERR_MM_INDEX, 3,
     "index overflowing int64"},
    {"skew_diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 2\n2 1 1\n2 2 1\n",
     0, MSP_ERR_MM_INDEX, 4, "diagonal entry in a skew-symmetric file"},
    {"pattern_skew", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n", 0,
     MSP_ERR_MM_UNSUPPORTED, 1, "pattern skew-symmetric (not in the specification)"},
    {"value_missing", BANNER "3 3 2\n1 1 1\n2 2\n", 0, MSP_ERR_MM_VALUE, 4,
     "real entry without a value"},
    {"col_missing", BANNER "3 3 1\n2\n", 0, MSP_ERR_MM_VALUE, 3, "entry without column index"},
    {"value_text", BANNER "3 3 1\n1 1 abc\n", 0, MSP_ERR_MM_VALUE, 3, "non-numeric value"},
    {"value_trailing", BANNER "3 3 1\n1 1 1.5x\n", 0, MSP_ERR_MM_VALUE, 3,
     "trailing garbage in the value"},
    {"value_extra", BANNER "3 3 1\n1 1 1.5 2.5\n", 0, MSP_ERR_MM_VALUE, 3,
     "a second value on the line"},
    {"value_exp_empty", BANNER "3 3 1\n1 1 1e\n", 0, MSP_ERR_MM_VALUE, 3,
     "exponent without digits"},
    {"value_dot", BANNER "3 3 1\n1 1 .\n", 0, MSP_ERR_MM_VALUE, 3, "a lone decimal point"},
    {"value_hex", BANNER "3 3 1\n1 1 0x1p3\n", 0, MSP_ERR_MM_VALUE, 3,
     "hex float (strtod would take it)"},
    {"value_overflow", BANNER "3 3 1\n1 1 1e999\n", 0, MSP_ERR_MM_VALUE, 3,
     "finite literal overflowing double"},
    {"value_nul", BANNER "3 3 1\n1 1 1.0\0\n", sizeof(BANNER "3 3 1\n1 1 1.0\0\n") - 1,
     MSP_ERR_MM_VALUE, 3, "NUL byte after the value"},
    {"pattern_value", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1.0\n", 0,
     MSP_ERR_MM_VALUE, 3, "value on a pattern entry"},
    {"integer_real", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n", 0,
     MSP_ERR_MM_VALUE, 3, "real value in an integer file"},
    {"nan", BANNER "3 3 2\n1 1 1\n2 2 nan\n", 0, MSP_ERR_NONFINITE, 4, "NaN value"},
    {"inf", BANNER "3 3 2\n1 1 1\n2 2 -Inf\n", 0, MSP_ERR_NONFINITE, 4, "-Inf value"},
    {"crlf_index",
     "%%MatrixMarket matrix coordinate real general\r\n% c\r\n\r\n3 3 2\r\n1 1 "
     "1\r\n3 4 1\r\n",
     0, MSP_ERR_MM_INDEX, 6, "line counting with CRLF line ends"},
};

static void test_malformed(void) {
  int n = (int)(sizeof bad_cases / sizeof bad_cases[0]);
  CHECK(n >= 15, "only %d malformed cases", n);
  for (int c = 0; c < n; c++) {
    const bad_case *b = &bad_cases[c];
    size_t len = b->len ? b->len : strlen(b->text);
    char name[128], gzname[128], want_line[64];
    snprintf(name, sizeof name, "%s.mtx", b->name);
    snprintf(gzname, sizeof gzname, "%s.mtx.gz", b->name);
    snprintf(want_line, sizeof want_line, " line %d: ", b->line);
    const char *paths[2] = {write_bytes(name, b->text, len), write_gz(gzname, b->text, len)};
    for (int mode = 0; mode < 3; mode++) {
      msp_matrix A = (msp_matrix)(uintptr_t)1; // must be reset to NULL on failure
      msp_status st = mode < 2 ? msp_matrix_read_mtx(ctx, paths[mode], 0, &A)
                               : msp__matrix_read_mtx_mem(ctx, name, b->text, len, 0, &A);
      const char *how = mode == 0 ? "plain" : mode == 1 ? "gzip" : "memory";
      const char *msg = msp_last_error();
      CHECK(st == b->status, "%s (%s, %s): status %s, expected %s: %s", b->name, b->what, how,
            msp_status_name(st), msp_status_name(b->status), msg);
      CHECK(strstr(msg, want_line) != NULL, "%s (%s, %s): message lacks '%s': %s", b->name, b->what,
            how, want_line, msg);
      CHECK(strstr(msg, mode == 1 ? gzname : name) != NULL,
            "%s (%s): message lacks the file name: %s", b->name, how, msg);
      CHECK(A == NULL, "%s (%s): *A not NULL after failure", b->name, how);
      if (st == MSP_SUCCESS) msp_matrix_destroy(&A);
    }
  }
}

// NaN / Inf accepted with MSP_READ_ALLOW_NONFINITE.
static void test_nonfinite_allowed(void) {
  const char *t = BANNER "2 2 3\n1 1 nan\n2 2 inf\n2 1 -Infinity\n";
  msp_matrix A = NULL;
  CHECK_STATUS(msp_matrix_read_mtx(ctx, write_text("nonfinite.mtx", t), 0, &A), MSP_ERR_NONFINITE);
  CHECK(A == NULL, "matrix returned on failure");
  CHECK_OK(msp_matrix_read_mtx(ctx, write_text("nonfinite.mtx", t), MSP_READ_ALLOW_NONFINITE, &A));
  if (A) {
    double v[3] = {0, 0, 0};
    int32_t ci[3];
    CHECK(msp_matrix_nnz(A) == 3, "nnz %lld", (long long)msp_matrix_nnz(A));
    if (msp_matrix_nnz(A) == 3) {
      CHECK_OK(msp_matrix_get_csr(A, NULL, ci, v));
      CHECK(isnan(v[0]), "(1,1) = %g, expected nan", v[0]);
      CHECK(isinf(v[1]) && v[1] < 0, "(2,1) = %g, expected -inf", v[1]);
      CHECK(isinf(v[2]) && v[2] > 0, "(2,2) = %g, expected inf", v[2]);
    }
  }
  msp_matrix_destroy(&A);
  CHECK_STATUS(msp_matrix_read_mtx(ctx, "x.mtx", 4, &A), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_matrix_read_mtx(NULL, "x.mtx", 0, &A), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_matrix_read_mtx(ctx, NULL, 0, &A), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_matrix_read_mtx(ctx, "x.mtx", 0, NULL), MSP_ERR_INVALID_ARGUMENT);
}

// ---- gzip ---------------------------------------------------------------------------------------
// A matrix text of n random entries (values in full precision so the stream is not tiny).
static char *random_text(int n, size_t *len) {
  size_t cap = (size_t)n * 48 + 128, k = 0;
  char *t = malloc(cap);
  if (!t) return NULL;
  msp_rng rng = {777};
  k += (size_t)snprintf(t, cap, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n",
                        n / 4, n / 4, n);
  for (int e = 0; e < n; e++)
    k += (size_t)snprintf(t + k, cap - k, "%d %d %.17g\n", (int)msp_rng_range(&rng, n / 4) + 1,
                          (int)msp_rng_range(&rng, n / 4) + 1, msp_rng_uniform(&rng) - 0.5);
  *len = k;
  return t;
}

static void test_gzip(void) {
  size_t len = 0, glen = 0;
  char *t = random_text(4000, &len);
  CHECK(t != NULL, "host allocation failed");
  if (!t) return;
  msp_matrix P = NULL, G = NULL;
  CHECK_OK(msp_matrix_read_mtx(ctx, write_text("big.mtx", t), 0, &P));
  const char *gz = write_gz("big.mtx.gz", t, len);
  CHECK_OK(msp_matrix_read_mtx(ctx, gz, 0, &G));
  if (P && G) {
    int64_t n = msp_matrix_nnz(P);
    CHECK(n == msp_matrix_nnz(G) && n > 3000, "nnz plain %lld gzip %lld", (long long)n,
          (long long)msp_matrix_nnz(G));
    double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    if (a && b && n == msp_matrix_nnz(G)) {
      CHECK_OK(msp_matrix_get_csr(P, NULL, NULL, a));
      CHECK_OK(msp_matrix_get_csr(G, NULL, NULL, b));
      CHECK(memcmp(a, b, (size_t)n * sizeof *a) == 0, "gzip and plain values differ");
    }
    free(a);
    free(b);
  }
  msp_matrix_destroy(&P);
  msp_matrix_destroy(&G);

  unsigned char *z = slurp(gz, &glen);
  CHECK(z != NULL && glen > 1000, "cannot read back %s", gz);
  if (z && glen > 1000) {
    struct {
      const char *name;
      size_t off, n, keep; // flip n bytes at off; keep: truncate to this many bytes (0: all)
    } cases[] = {
        {"flip_middle.mtx.gz", glen / 2, 16, 0}, {"flip_early.mtx.gz", 40, 4, 0},
        {"flip_crc.mtx.gz", glen - 8, 1, 0},  // stored CRC-32 of the data
        {"flip_size.mtx.gz", glen - 2, 1, 0}, // stored length
        {"trunc_half.mtx.gz", 0, 0, glen / 2},   {"trunc_trailer.mtx.gz", 0, 0, glen - 4},
        {"trunc_header.mtx.gz", 0, 0, 12},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      unsigned char *copy = malloc(glen);
      if (!copy) break;
      memcpy(copy, z, glen);
      for (size_t i = 0; i < cases[c].n; i++)
        copy[cases[c].off + i] ^= 0x5a;
      const char *path = write_bytes(cases[c].name, copy, cases[c].keep ? cases[c].keep : glen);
      msp_matrix A = NULL;
      msp_status st = msp_matrix_read_mtx(ctx, path, 0, &A);
      CHECK(st == MSP_ERR_MM_GZIP, "%s: status %s, expected ERR_MM_GZIP: %s", cases[c].name,
            msp_status_name(st), msp_last_error());
      CHECK(strstr(msp_last_error(), cases[c].name) != NULL, "%s: message lacks the name: %s",
            cases[c].name, msp_last_error());
      CHECK(A == NULL, "%s: matrix returned", cases[c].name);
      msp_matrix_destroy(&A);
      free(copy);
    }
    // Two gzip members back to back read as one text (as gzip -d and gzread do); trailing
    // zero padding after the last member is ignored.
    size_t half = len / 2;
    while (t[half - 1] != '\n')
      half++;
    const char *p1 = write_gz("part1.gz", t, half);
    const char *p2 = write_gz("part2.gz", t + half, len - half);
    size_t l1 = 0, l2 = 0;
    unsigned char *b1 = slurp(p1, &l1), *b2 = slurp(p2, &l2);
    unsigned char *cat = malloc(l1 + l2 + 16);
    if (b1 && b2 && cat) {
      memcpy(cat, b1, l1);
      memcpy(cat + l1, b2, l2);
      memset(cat + l1 + l2, 0, 16);
      msp_matrix A = NULL;
      CHECK_OK(msp_matrix_read_mtx(ctx, write_bytes("members.mtx.gz", cat, l1 + l2), 0, &A));
      CHECK(A && msp_matrix_nnz(A) > 3000, "two members: wrong matrix");
      msp_matrix_destroy(&A);
      CHECK_OK(msp_matrix_read_mtx(ctx, write_bytes("padded.mtx.gz", cat, l1 + l2 + 16), 0, &A));
      CHECK(A && msp_matrix_nnz(A) > 3000, "padded members: wrong matrix");
      msp_matrix_destroy(&A);
    }
    free(b1);
    free(b2);
    free(cat);
  }
  free(z);
  free(t);

  msp_matrix A = NULL;
  CHECK_STATUS(msp_matrix_read_mtx(ctx, tmp_path("does-not-exist.mtx"), 0, &A), MSP_ERR_IO);
  CHECK(strstr(msp_last_error(), "does-not-exist.mtx") != NULL, "message: %s", msp_last_error());
  CHECK_STATUS(msp_matrix_read_mtx(ctx, tmpdir, 0, &A), MSP_ERR_IO); // a directory
  CHECK(A == NULL, "matrix returned");
}

// ---- vectors ------------------------------------------------------------------------------------
static void test_vectors(void) {
  const double special[] = {0.1,
                            1e-310,
                            -0.0,
                            0.0,
                            1.7976931348623157e308,
                            -1.7976931348623157e308,
                            2.2250738585072014e-308,
                            4.9406564584124654e-324,
                            1.0 / 3.0,
                            3.141592653589793,
                            -1e300,
                            123456789012345678.0,
                            1.0,
                            -2.5};
  enum { NS = sizeof special / sizeof special[0], NR = 2000 };
  double *x = malloc((NS + NR) * sizeof *x), *y = malloc((NS + NR) * sizeof *y);
  if (!x || !y) {
    CHECK(0, "host allocation failed");
    free(x);
    free(y);
    return;
  }
  memcpy(x, special, sizeof special);
  msp_rng rng = {99};
  for (int i = 0; i < NR; i++) {
    uint64_t bits = msp_rng_next(&rng);
    memcpy(&x[NS + i], &bits, sizeof bits);
    if (!isfinite(x[NS + i])) x[NS + i] = (double)bits;
  }
  msp_vector v = NULL, w = NULL;
  CHECK_OK(msp_vector_create(ctx, NS + NR, &v));
  CHECK_OK(msp_vector_set(v, x));
  const char *path = tmp_path("vec.mtx");
  CHECK_OK(msp_vector_write_mtx(v, path));
  CHECK_OK(msp_vector_read_mtx(ctx, path, 0, &w));
  if (w) {
    CHECK(msp_vector_length(w) == NS + NR, "length %lld", (long long)msp_vector_length(w));
    CHECK_OK(msp_vector_get(w, y));
    int bad = 0;
    for (int i = 0; i < NS + NR; i++)
      if (memcmp(&x[i], &y[i], sizeof(double)) != 0 && bad++ < 5)
        CHECK(0, "entry %d: wrote %.17g, read %.17g", i, x[i], y[i]);
    CHECK(bad == 0, "%d entries differ after the round trip", bad);
  }
  msp_vector_destroy(&w);
  // the written file's first lines
  size_t flen = 0;
  unsigned char *f = slurp(path, &flen);
  const char *head = "%%MatrixMarket matrix array real general\n% written by mixsparse\n2014 1\n"
                     "0.10000000000000001\n";
  CHECK(f && flen > strlen(head) && memcmp(f, head, strlen(head)) == 0, "unexpected header: %.80s",
        f ? (const char *)f : "(none)");
  // the same file gzipped reads back the same
  if (f) {
    CHECK_OK(msp_vector_read_mtx(ctx, write_gz("vec.mtx.gz", f, flen), 0, &w));
    if (w) {
      CHECK_OK(msp_vector_get(w, y));
      CHECK(memcmp(x, y, (NS + NR) * sizeof(double)) == 0, "gzip vector differs");
    }
    msp_vector_destroy(&w);
  }
  free(f);
  msp_vector_destroy(&v);

  // non-finite values written, read back only with the flag
  CHECK_OK(msp_vector_create(ctx, 3, &v));
  double nf[3] = {NAN, INFINITY, -INFINITY};
  CHECK_OK(msp_vector_set(v, nf));
  CHECK_OK(msp_vector_write_mtx(v, tmp_path("vec_nf.mtx")));
  CHECK_STATUS(msp_vector_read_mtx(ctx, tmp_path("vec_nf.mtx"), 0, &w), MSP_ERR_NONFINITE);
  CHECK(w == NULL, "vector returned on failure");
  CHECK_OK(msp_vector_read_mtx(ctx, tmp_path("vec_nf.mtx"), MSP_READ_ALLOW_NONFINITE, &w));
  if (w) {
    CHECK_OK(msp_vector_get(w, y));
    CHECK(isnan(y[0]) && y[1] == INFINITY && y[2] == -INFINITY, "non-finite values %g %g %g", y[0],
          y[1], y[2]);
  }
  msp_vector_destroy(&w);
  CHECK_STATUS(msp_vector_write_mtx(v, tmp_path("no-such-dir/v.mtx")), MSP_ERR_IO);
  msp_vector_destroy(&v);

  // an integer vector with comments, CRLF and an empty (0 x 1) vector
  CHECK_OK(msp_vector_read_mtx(ctx,
                               write_text("ivec.mtx", "%%MatrixMarket matrix array integer "
                                                      "general\r\n% c\r\n3 1\r\n\r\n-4\r\n 7 "
                                                      "\r\n%\r\n0"),
                               0, &w));
  if (w) {
    CHECK(msp_vector_length(w) == 3, "length %lld", (long long)msp_vector_length(w));
    CHECK_OK(msp_vector_get(w, y));
    CHECK(y[0] == -4 && y[1] == 7 && y[2] == 0, "values %g %g %g", y[0], y[1], y[2]);
  }
  msp_vector_destroy(&w);
  CHECK_OK(msp_vector_read_mtx(
      ctx, write_text("vec0.mtx", "%%MatrixMarket matrix array real general\n0 1\n"), 0, &w));
  CHECK(w && msp_vector_length(w) == 0, "empty vector");
  msp_vector_destroy(&w);

  // malformed vectors: status and line
  static const struct {
    const char *text;
    msp_status status;
    int line;
  } vbad[] = {
      {"", MSP_ERR_MM_EMPTY, 1},
      {"%%MatrixMarket matrix coordinate real general\n2 1 1\n1 1 1\n", MSP_ERR_MM_UNSUPPORTED, 1},
      {"%%MatrixMarket matrix array pattern general\n2 1\n", MSP_ERR_MM_UNSUPPORTED, 1},
      {"%%MatrixMarket matrix array real symmetric\n2 1\n1\n2\n", MSP_ERR_MM_UNSUPPORTED, 1},
      {"%%MatrixMarket matrix array complex general\n1 1\n1 0\n", MSP_ERR_MM_UNSUPPORTED, 1},
      {"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", MSP_ERR_MM_UNSUPPORTED, 2},
      {"%%MatrixMarket matrix array real general\n2 1 4\n1\n2\n", MSP_ERR_MM_SIZE, 2},
      {"%%MatrixMarket matrix array real general\n% c\n-2 1\n", MSP_ERR_MM_SIZE, 3},
      {"%%MatrixMarket matrix array real general\n3 1\n1\n2\n", MSP_ERR_MM_TOO_FEW, 4},
      {"%%MatrixMarket matrix array real general\n1 1\n1\n2\n", MSP_ERR_MM_TOO_MANY, 4},
      {"%%MatrixMarket matrix array real general\n2 1\n1\nx\n", MSP_ERR_MM_VALUE, 4},
      {"%%MatrixMarket matrix array real general\n2 1\n1 2\n", MSP_ERR_MM_VALUE, 3},
      {"%%MatrixMarket matrix array integer general\n1 1\n2.5\n", MSP_ERR_MM_VALUE, 3},
      {"%%MatrixMarket matrix array real general\n2 1\n1\n\nnan\n", MSP_ERR_NONFINITE, 5},
  };
  for (size_t c = 0; c < sizeof vbad / sizeof vbad[0]; c++) {
    char want[32];
    snprintf(want, sizeof want, " line %d: ", vbad[c].line);
    w = (msp_vector)(uintptr_t)1;
    msp_status st = msp_vector_read_mtx(ctx, write_text("vbad.mtx", vbad[c].text), 0, &w);
    CHECK(st == vbad[c].status && strstr(msp_last_error(), want) != NULL,
          "vector case %zu: %s, expected %s at%s: %s", c, msp_status_name(st),
          msp_status_name(vbad[c].status), want, msp_last_error());
    CHECK(w == NULL, "vector case %zu: vector returned", c);
    if (st == MSP_SUCCESS) msp_vector_destroy(&w);
  }
  CHECK_STATUS(msp_vector_read_mtx(ctx, tmp_path("nope.mtx"), 0, &w), MSP_ERR_IO);
  free(x);
  free(y);
}

// ---- allocation failure -------------------------------------------------------------------------
// Counting allocator: the fail_at-th call (malloc or realloc) fails; live counts blocks.
static long long alloc_calls, fail_at, live;
static void *cnt_malloc(size_t n) {
  if (++alloc_calls == fail_at) return NULL;
  void *p = malloc(n);
  if (p) live++;
  return p;
}
static void *cnt_realloc(void *p, size_t n) {
  if (++alloc_calls == fail_at) return NULL;
  void *q = realloc(p, n);
  if (q && !p) live++;
  return q;
}
static void cnt_free(void *p) {
  if (p) {
    live--;
    free(p);
  }
}

typedef msp_status (*read_fn)(const char *path, void *out);
static msp_status read_matrix_fn(const char *path, void *out) {
  return msp_matrix_read_mtx(ctx, path, 0, (msp_matrix *)out);
}
static msp_status read_vector_fn(const char *path, void *out) {
  return msp_vector_read_mtx(ctx, path, 0, (msp_vector *)out);
}

// Make each allocation of one read fail in turn: every failure is ERR_OUT_OF_MEMORY, returns no
// object and leaks nothing; the loop ends when the read succeeds (k beyond its allocations).
static void oom_sweep(const char *label, const char *path, read_fn fn, bool vector) {
  int failures = 0;
  for (long long k = 1; k < 10000; k++) {
    void *obj = NULL;
    long long before = live;
    alloc_calls = 0;
    fail_at = k;
    msp_status st = fn(path, &obj);
    fail_at = 0;
    if (st == MSP_SUCCESS) {
      CHECK(obj != NULL, "%s: success without an object", label);
      if (vector)
        msp_vector_destroy((msp_vector *)&obj);
      else
        msp_matrix_destroy((msp_matrix *)&obj);
      CHECK(live == before, "%s: %lld blocks leaked by a successful read", label, live - before);
      CHECK(failures > 3, "%s: only %d allocations failed before success", label, failures);
      printf("%s: %d allocation failures checked\n", label, failures);
      return;
    }
    failures++;
    CHECK(st == MSP_ERR_OUT_OF_MEMORY, "%s: allocation %lld failed: status %s (%s)", label, k,
          msp_status_name(st), msp_last_error());
    CHECK(obj == NULL, "%s: allocation %lld failed: object returned", label, k);
    CHECK(live == before, "%s: allocation %lld failed: %lld blocks leaked", label, k,
          live - before);
  }
  CHECK(0, "%s: read never succeeded", label);
}

static void test_oom(void) {
  // a symmetric file big enough for the triples and the line buffer to grow
  enum { N = 20000 };
  size_t cap = (size_t)N * 40 + 300000, k = 0;
  char *t = malloc(cap);
  if (!t) {
    CHECK(0, "host allocation failed");
    return;
  }
  k += (size_t)snprintf(t, cap, "%%%%MatrixMarket matrix coordinate real symmetric\n%%");
  memset(t + k, 'c', 100000); // a comment longer than the first line buffer
  k += 100000;
  k += (size_t)snprintf(t + k, cap - k, "\n%d %d %d\n", N, N, N);
  for (int i = 0; i < N; i++)
    k += (size_t)snprintf(t + k, cap - k, "%d %d %d.5\n", i + 1, (i * 7) % (i + 1) + 1, i);
  const char *plain = write_bytes("oom.mtx", t, k);
  const char *gz = write_gz("oom.mtx.gz", t, k);
  const char *vec = write_text("oom_vec.mtx", "%%MatrixMarket matrix array real general\n3 1\n1\n"
                                              "2\n3\n");
  msp_allocator a = {cnt_malloc, cnt_realloc, cnt_free};
  msp_context_destroy(&ctx);
  CHECK_OK(msp_set_allocator(&a));
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  if (ctx) {
    oom_sweep("oom plain", plain, read_matrix_fn, false);
    oom_sweep("oom gzip", gz, read_matrix_fn, false);
    oom_sweep("oom vector", vec, read_vector_fn, true);
    // the memory path, and failures in the middle of a malformed read
    int failures = 0;
    for (long long j = 1; j < 1000; j++) {
      msp_matrix A = NULL;
      long long before = live;
      alloc_calls = 0;
      fail_at = j;
      const char *bad = BANNER "3 3 2\n1 1 1\n1 4 1\n";
      msp_status st = msp__matrix_read_mtx_mem(ctx, "bad.mtx", bad, strlen(bad), 0, &A);
      fail_at = 0;
      CHECK(live == before && A == NULL, "memory path, allocation %lld: leak or object", j);
      if (st == MSP_ERR_MM_INDEX) break;
      failures++;
      CHECK(st == MSP_ERR_OUT_OF_MEMORY, "memory path, allocation %lld: %s", j,
            msp_status_name(st));
    }
    CHECK(failures >= 4, "memory path: %d allocation failures", failures);
  }
  msp_context_destroy(&ctx);
  CHECK(live == 0, "%lld blocks live after destroying everything", live);
  CHECK_OK(msp_set_allocator(NULL));
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  free(t);
}

// ---- main ---------------------------------------------------------------------------------------
static void remove_tmpdir(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "%s", "/tmp/msp_test_mtx_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    fprintf(stderr, "mkdtemp failed\n");
    return 1;
  }
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  if (ctx) {
    test_valid();
    test_numbers_random();
    test_malformed();
    test_nonfinite_allowed();
    test_gzip();
    test_vectors();
    test_oom();
  }
  msp_context_destroy(&ctx);
  remove_tmpdir();
  return msp_test_finish("test_mtx");
}

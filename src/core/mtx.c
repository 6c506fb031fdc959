// mtx.c: Matrix Market input: coordinate matrices and array vectors, plain or gzip (the input
// layer, bytes to lines through gzip: mtx_input.c; writing: mtx_write.c).
//
// One reader serves files and memory blocks; a line-by-line parser here is shared by the matrix
// and vector readers.

#include "mtx_input.h"

#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Entries reserved before the first one is read: a bogus declared count in a tiny file must not
// allocate gigabytes, so the arrays start small and double up to the declared count.
#define MTX_INITIAL_ENTRIES ((int64_t)1 << 14)
// Significant decimal digits kept by the exact (slow) number path: 768 digits plus a sticky digit
// decide the correctly rounded double (the same bound fast_float and Go's strconv use).
#define MTX_MAX_DIGITS 768

// A printable copy of a token for messages (at most 32 characters; control bytes become '?').
typedef struct {
  char s[40];
} mtx_shown;
static mtx_shown mtx_show(const char *p, size_t n) {
  mtx_shown out;
  size_t k = n < 32 ? n : 32;
  for (size_t i = 0; i < k; i++) {
    unsigned char c = (unsigned char)p[i];
    out.s[i] = (c >= 32 && c < 127) ? (char)c : '?';
  }
  if (k < n) memcpy(out.s + k, "...", 3), k += 3;
  out.s[k] = '\0';
  return out;
}

// ---- tokens and numbers -------------------------------------------------------------------------
static bool mtx_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
static bool mtx_digit(char c) {
  return c >= '0' && c <= '9';
}

// The next whitespace-separated token of [*p, end); false when none is left.
static bool next_token(const char **p, const char *end, const char **tok, size_t *len) {
  const char *s = *p;
  while (s < end && mtx_space(*s))
    s++;
  if (s == end) {
    *p = s;
    return false;
  }
  const char *t = s;
  while (t < end && !mtx_space(*t))
    t++;
  *tok = s;
  *len = (size_t)(t - s);
  *p = t;
  return true;
}

// A line that holds only whitespace.
static bool blank(const char *line, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (!mtx_space(line[i])) return false;
  return true;
}

// A line that holds only whitespace, or a comment ('%' as its first non-blank character).
static bool skippable(const char *line, size_t len) {
  const char *p = line, *end = line + len;
  while (p < end && mtx_space(*p))
    p++;
  return p == end || *p == '%';
}

static bool ieq(const char *tok, size_t len, const char *word) {
  size_t n = strlen(word);
  if (len != n) return false;
  for (size_t i = 0; i < n; i++) {
    char c = tok[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != word[i]) return false;
  }
  return true;
}

enum { MTX_NUM_OK = 0, MTX_NUM_BAD = 1, MTX_NUM_RANGE = 2 };

// [+-]digits as int64. MTX_NUM_RANGE when it does not fit (the value is then saturated).
static int parse_int(const char *s, size_t n, int64_t *out) {
  const char *e = s + n;
  bool neg = false;
  if (s < e && (*s == '+' || *s == '-')) neg = *s++ == '-';
  if (s == e) return MTX_NUM_BAD;
  uint64_t v = 0;
  bool over = false;
  for (; s < e; s++) {
    if (!mtx_digit(*s)) return MTX_NUM_BAD;
    unsigned d = (unsigned)(*s - '0');
    if (v > ((uint64_t)INT64_MAX - d) / 10)
      over = true;
    else
      v = v * 10 + d;
  }
  if (over) {
    *out = neg ? INT64_MIN : INT64_MAX;
    return MTX_NUM_RANGE;
  }
  *out = neg ? -(int64_t)v : (int64_t)v;
  return MTX_NUM_OK;
}

// A decimal number: [+-](digits[.digits]|.digits)([eE][+-]digits), or inf, infinity, nan (any
// case), correctly rounded to the nearest double. integer_only admits [+-]digits only.
// Short numbers (at most 19 significant digits, mantissa <= 2^53, |exponent| <= 22) are exact
// with one multiplication or division (Clinger's fast path); the rest go to strtod in a form
// with no decimal point, so the C locale's decimal separator never matters.
static int parse_real(const char *s, size_t n, bool integer_only, double *out) {
  static const double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char *e = s + n;
  bool neg = false;
  if (s < e && (*s == '+' || *s == '-')) neg = *s++ == '-';
  if (s == e) return MTX_NUM_BAD;
  if (!mtx_digit(*s) && *s != '.') {
    if (integer_only) return MTX_NUM_BAD;
    size_t k = (size_t)(e - s);
    if (ieq(s, k, "inf") || ieq(s, k, "infinity")) {
      *out = neg ? -HUGE_VAL : HUGE_VAL;
      return MTX_NUM_OK;
    }
    if (ieq(s, k, "nan")) {
      *out = neg ? -NAN : NAN;
      return MTX_NUM_OK;
    }
    return MTX_NUM_BAD;
  }
  // value = D * 10^x, D the significant digits (leading zeros dropped)
  char digits[MTX_MAX_DIGITS + 32];
  int nd = 0;
  bool truncated = false, any = false;
  int64_t x = 0;
  for (; s < e && mtx_digit(*s); s++) {
    any = true;
    if (nd == 0 && *s == '0') continue;
    if (nd < MTX_MAX_DIGITS)
      digits[nd++] = *s;
    else {
      truncated |= *s != '0';
      x++;
    }
  }
  if (s < e && *s == '.') {
    if (integer_only) return MTX_NUM_BAD;
    for (s++; s < e && mtx_digit(*s); s++) {
      any = true;
      if (nd == 0 && *s == '0')
        x--;
      else if (nd < MTX_MAX_DIGITS) {
        digits[nd++] = *s;
        x--;
      } else
        truncated |= *s != '0';
    }
  }
  if (!any) return MTX_NUM_BAD;
  if (s < e && (*s == 'e' || *s == 'E')) {
    if (integer_only) return MTX_NUM_BAD;
    s++;
    bool eneg = false;
    if (s < e && (*s == '+' || *s == '-')) eneg = *s++ == '-';
    if (s == e) return MTX_NUM_BAD;
    int64_t ev = 0;
    for (; s < e && mtx_digit(*s); s++)
      if (ev < 1000000000) ev = ev * 10 + (*s - '0'); // beyond this the result is 0 or Inf
    x += eneg ? -ev : ev;
  }
  if (s != e) return MTX_NUM_BAD;
  if (nd == 0) {
    *out = neg ? -0.0 : 0.0;
    return MTX_NUM_OK;
  }
  if (nd <= 19 && !truncated) {
    uint64_t m = 0;
    for (int i = 0; i < nd; i++)
      m = m * 10 + (uint64_t)(digits[i] - '0');
    if (m <= ((uint64_t)1 << 53) && x >= -22 && x <= 22) {
      double v = (double)m;
      v = x >= 0 ? v * pow10[x] : v / pow10[-x];
      *out = neg ? -v : v;
      return MTX_NUM_OK;
    }
  }
  if (truncated) { // a sticky digit keeps the rounding direction of the dropped tail
    digits[nd++] = '1';
    x--;
  }
  snprintf(digits + nd, sizeof digits - (size_t)nd, "e%lld", (long long)x);
  double v = strtod(digits, NULL);
  if (isinf(v)) return MTX_NUM_RANGE;
  *out = neg ? -v : v;
  return MTX_NUM_OK;
}

// ---- header -------------------------------------------------------------------------------------
enum { MTX_COORDINATE, MTX_ARRAY };
enum { MTX_REAL, MTX_INTEGER, MTX_PATTERN };
enum { MTX_GENERAL, MTX_SYMMETRIC, MTX_SKEW };

typedef struct {
  int format, field, symmetry;
  int64_t rows, cols, nnz; // nnz: entries declared (array format: rows * cols)
  int64_t size_line;
} mtx_header;

// The next line that is neither blank nor a comment; *got false at the end of the input.
static msp_status next_data_line(msp__mtx_reader *r, const char **line, size_t *len, bool *got) {
  msp_status st = MSP_SUCCESS;
  for (;;) {
    MSP_TRY(msp__mtx_line(r, line, len, got));
    if (!*got || !skippable(*line, *len)) break;
  }
exit:
  return st;
}

// Banner: "%%MatrixMarket matrix <format> <field> <symmetry>" (words case-insensitive), then
// comments and blank lines, then the size line. `vector` selects what the vector reader accepts
// (array real/integer general, one column) instead of coordinate matrices.
static msp_status read_header(msp__mtx_reader *r, bool vector, mtx_header *h) {
  msp_status st = MSP_SUCCESS;
  const char *line = NULL, *tok = NULL;
  size_t len = 0, tl = 0;
  bool got = false;
  MSP_TRY(msp__mtx_line(r, &line, &len, &got));
  if (!got) return msp__mtx_fail(r, MSP_ERR_MM_EMPTY, "empty file");
  if (len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) { // a UTF-8 byte order mark (editors)
    line += 3;
    len -= 3;
  }
  if (blank(line, len)) {
    // A blank first line: the file is empty if nothing but blank lines follow.
    bool more = false;
    do {
      MSP_TRY(msp__mtx_line(r, &line, &len, &more));
    } while (more && blank(line, len));
    r->lineno = 1;
    if (!more) return msp__mtx_fail(r, MSP_ERR_MM_EMPTY, "empty file (only blank lines)");
    return msp__mtx_fail(r, MSP_ERR_MM_BANNER,
                         "blank first line; expected the banner '%%%%MatrixMarket matrix <format> "
                         "<field> <symmetry>'");
  }
  const char *p = line, *end = line + len;
  const char *words[5];
  size_t wlen[5];
  int nw = 0;
  while (nw < 5 && next_token(&p, end, &words[nw], &wlen[nw]))
    nw++;
  if (!ieq(words[0], wlen[0], "%%matrixmarket"))
    return msp__mtx_fail(r, MSP_ERR_MM_BANNER,
                         "'%s' is not a Matrix Market banner (expected '%%%%MatrixMarket matrix "
                         "<format> <field> <symmetry>')",
                         mtx_show(words[0], wlen[0]).s);
  if (nw < 5)
    return msp__mtx_fail(r, MSP_ERR_MM_BANNER,
                         "banner has %d of the 4 words 'object format field symmetry'", nw - 1);
  if (next_token(&p, end, &tok, &tl))
    return msp__mtx_fail(r, MSP_ERR_MM_BANNER, "unexpected '%s' after the banner's 4 words",
                         mtx_show(tok, tl).s);
  if (!ieq(words[1], wlen[1], "matrix"))
    return msp__mtx_fail(r, MSP_ERR_MM_UNSUPPORTED, "object '%s' is not supported (only 'matrix')",
                         mtx_show(words[1], wlen[1]).s);
  if (ieq(words[2], wlen[2], "coordinate"))
    h->format = MTX_COORDINATE;
  else if (ieq(words[2], wlen[2], "array"))
    h->format = MTX_ARRAY;
  else
    return msp__mtx_fail(r, MSP_ERR_MM_UNSUPPORTED,
                         "format '%s' is not supported (coordinate or array)",
                         mtx_show(words[2], wlen[2]).s);
  if (ieq(words[3], wlen[3], "real"))
    h->field = MTX_REAL;
  else if (ieq(words[3], wlen[3], "integer"))
    h->field = MTX_INTEGER;
  else if (ieq(words[3], wlen[3], "pattern"))
    h->field = MTX_PATTERN;
  else
    return msp__mtx_fail(r, MSP_ERR_MM_UNSUPPORTED,
                         "field '%s' is not supported (real, integer or pattern)",
                         mtx_show(words[3], wlen[3]).s);
  if (ieq(words[4], wlen[4], "general"))
    h->symmetry = MTX_GENERAL;
  else if (ieq(words[4], wlen[4], "symmetric"))
    h->symmetry = MTX_SYMMETRIC;
  else if (ieq(words[4], wlen[4], "skew-symmetric"))
    h->symmetry = MTX_SKEW;
  else
    return msp__mtx_fail(r, MSP_ERR_MM_UNSUPPORTED,
                         "symmetry '%s' is not supported (general, symmetric or skew-symmetric)",
                         mtx_show(words[4], wlen[4]).s);
  // The Matrix Market specification allows pattern only with general and symmetric: a pattern
  // entry has no value whose sign the mirrored entry could take.
  if (h->field == MTX_PATTERN && h->symmetry == MTX_SKEW)
    return msp__mtx_fail(
        r, MSP_ERR_MM_UNSUPPORTED,
        "'pattern skew-symmetric' is not allowed by the Matrix Market specification "
        "(pattern goes with general or symmetric)");
  if (!vector && h->format != MTX_COORDINATE)
    return msp__mtx_fail(r, MSP_ERR_MM_UNSUPPORTED,
                         "array (dense) format is not supported for a sparse matrix; use "
                         "coordinate");
  if (vector && h->format != MTX_ARRAY)
    return msp__mtx_fail(r, MSP_ERR_MM_UNSUPPORTED,
                         "a vector must be in array format, not coordinate");
  if (vector && h->field == MTX_PATTERN)
    return msp__mtx_fail(r, MSP_ERR_MM_UNSUPPORTED, "a vector cannot have field 'pattern'");
  if (vector && h->symmetry != MTX_GENERAL)
    return msp__mtx_fail(r, MSP_ERR_MM_UNSUPPORTED, "a vector must be 'general'");

  // size line
  MSP_TRY(next_data_line(r, &line, &len, &got));
  if (!got) return msp__mtx_fail(r, MSP_ERR_MM_SIZE, "end of file before the size line");
  h->size_line = r->lineno;
  int want = h->format == MTX_COORDINATE ? 3 : 2;
  const char *form = h->format == MTX_COORDINATE ? "rows cols entries" : "rows cols";
  int64_t v[3] = {0, 0, 0};
  p = line;
  end = line + len;
  for (int k = 0; k < want; k++) {
    if (!next_token(&p, end, &tok, &tl))
      return msp__mtx_fail(r, MSP_ERR_MM_SIZE, "size line has %d of the %d numbers '%s'", k, want,
                           form);
    int rc = parse_int(tok, tl, &v[k]);
    if (rc == MTX_NUM_BAD)
      return msp__mtx_fail(r, MSP_ERR_MM_SIZE, "size '%s' is not an integer", mtx_show(tok, tl).s);
    if (rc == MTX_NUM_RANGE)
      return msp__mtx_fail(r, MSP_ERR_MM_SIZE, "size '%s' overflows a 64-bit integer",
                           mtx_show(tok, tl).s);
    if (v[k] < 0) return msp__mtx_fail(r, MSP_ERR_MM_SIZE, "negative size %lld", (long long)v[k]);
  }
  if (next_token(&p, end, &tok, &tl))
    return msp__mtx_fail(r, MSP_ERR_MM_SIZE, "unexpected '%s' after the size line '%s'",
                         mtx_show(tok, tl).s, form);
  h->rows = v[0];
  h->cols = v[1];
  if (vector) {
    if (h->cols != 1)
      return msp__mtx_fail(r, MSP_ERR_MM_UNSUPPORTED,
                           "array with %lld columns: only one column (a vector) is read",
                           (long long)h->cols);
    h->nnz = h->rows;
  } else {
    // Column indices are int32 (and so are the rows of the triples).
    if (h->rows > INT32_MAX || h->cols > INT32_MAX)
      return msp__mtx_fail(r, MSP_ERR_MM_SIZE, "%lld x %lld exceeds the 32-bit index limit %d",
                           (long long)h->rows, (long long)h->cols, INT32_MAX);
    if (h->symmetry != MTX_GENERAL && h->rows != h->cols)
      return msp__mtx_fail(r, MSP_ERR_MM_SIZE, "a %s matrix must be square, not %lld x %lld",
                           h->symmetry == MTX_SYMMETRIC ? "symmetric" : "skew-symmetric",
                           (long long)h->rows, (long long)h->cols);
    h->nnz = v[2];
  }
exit:
  return st;
}

// Parse a value token (real or integer field) and apply the finiteness rule.
static msp_status parse_value(msp__mtx_reader *r, const char *tok, size_t tl, int field,
                              unsigned flags, double *v) {
  int rc = parse_real(tok, tl, field == MTX_INTEGER, v);
  if (rc == MTX_NUM_BAD)
    return msp__mtx_fail(r, MSP_ERR_MM_VALUE, "'%s' is not %s", mtx_show(tok, tl).s,
                         field == MTX_INTEGER ? "an integer" : "a real number");
  if (rc == MTX_NUM_RANGE)
    return msp__mtx_fail(r, MSP_ERR_MM_VALUE, "value '%s' overflows a double", mtx_show(tok, tl).s);
  if (!isfinite(*v) && !(flags & MSP_READ_ALLOW_NONFINITE))
    return msp__mtx_fail(r, MSP_ERR_NONFINITE,
                         "value '%s' is not finite (MSP_READ_ALLOW_NONFINITE accepts it)",
                         mtx_show(tok, tl).s);
  return MSP_SUCCESS;
}

// Grow an array to hold `want` elements of `size` bytes (the old block stays valid on failure).
static msp_status grow(void **p, int64_t want, size_t size, const char *what) {
  if ((uint64_t)want > SIZE_MAX / size)
    return msp__error(MSP_ERR_OUT_OF_MEMORY, "%s: %lld entries overflow size_t", what,
                      (long long)want);
  void *q = msp__realloc(*p, (size_t)want * size);
  if (!q)
    return msp__error(MSP_ERR_OUT_OF_MEMORY, "%s: cannot allocate %lld entries", what,
                      (long long)want);
  *p = q;
  return MSP_SUCCESS;
}

// Parse one index token against 1..limit.
static msp_status parse_index(msp__mtx_reader *r, const char *tok, size_t tl, const char *what,
                              int64_t limit, int64_t *out) {
  int rc = parse_int(tok, tl, out);
  if (rc == MTX_NUM_BAD)
    return msp__mtx_fail(r, MSP_ERR_MM_INDEX, "%s index '%s' is not an integer", what,
                         mtx_show(tok, tl).s);
  if (rc == MTX_NUM_RANGE || *out < 1 || *out > limit)
    return msp__mtx_fail(r, MSP_ERR_MM_INDEX, "%s index %s outside 1..%lld", what,
                         mtx_show(tok, tl).s, (long long)limit);
  return MSP_SUCCESS;
}

// ---- matrices -----------------------------------------------------------------------------------
// Finite entries of one position whose sum is not finite (bad: its 0-based row and column): name
// the file's entries that make it up (their lines, or their order among the entries when
// comments come between them; a symmetric file's mirrored entries as such) and the sum.
static msp_status name_nonfinite_sum(const msp__mtx_reader *r, const int32_t *row,
                                     const int32_t *col, const double *val, int64_t stored,
                                     int symmetry, int64_t first_line, bool lines_contiguous,
                                     const int64_t bad[2]) {
  char list[384];
  size_t used = 0;
  int shown = 0, more = 0;
  double sum = 0.0;
  const double sign = symmetry == MTX_SKEW ? -1.0 : 1.0;
  list[0] = '\0';
  for (int64_t e = 0; e < stored; e++) {
    const bool direct = row[e] == bad[0] && col[e] == bad[1];
    const bool mirror =
        symmetry != MTX_GENERAL && row[e] != col[e] && col[e] == bad[0] && row[e] == bad[1];
    if (!direct && !mirror) continue;
    const double v = direct ? val[e] : sign * val[e];
    sum += v;
    if (shown == 4 || used >= sizeof list) {
      more = 1;
      continue;
    }
    char where[64];
    if (lines_contiguous)
      snprintf(where, sizeof where, "line %lld", (long long)(first_line + e));
    else
      snprintf(where, sizeof where, "entry %lld", (long long)e + 1);
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%.17g (%s%s)", shown ? ", " : "",
                             v, direct ? "" : "mirror of ", where);
    shown++;
  }
  return msp__error(MSP_ERR_NONFINITE,
                    "%s: the entries at row %lld, column %lld, %s%s, are finite but sum to %g "
                    "(MSP_READ_ALLOW_NONFINITE accepts it)",
                    r->name, (long long)bad[0] + 1, (long long)bad[1] + 1, list,
                    more ? ", ..." : "", sum);
}

static msp_status read_matrix(msp_context ctx, msp__mtx_reader *r, unsigned flags, msp_matrix *A) {
  msp_status st = MSP_SUCCESS;
  mtx_header h;
  int32_t *row = NULL, *col = NULL;
  double *val = NULL;
  int64_t count = 0, cap = 0, offdiag = 0;
  // Data entry e sits on line first_line + e while no comment or blank line comes between data
  // lines (then a message can name the lines of entries without a line number kept per entry).
  int64_t first_line = 0, bad[2] = {-1, -1};
  bool lines_contiguous = true;
  const char *line = NULL, *tok = NULL;
  size_t len = 0, tl = 0;
  bool got = false;
  memset(&h, 0, sizeof h);
  MSP_TRY(msp__mtx_start(r));
  MSP_TRY(read_header(r, false, &h));
  {
    // The whole read, from the declared sizes, before anything is allocated: the triples (a
    // symmetric file expands to twice its entries), the CSR they become, the row fill positions
    // and the row sort buffers, and the analysis bitmaps.
    const size_t rows1 = (size_t)h.rows + 1;
    const size_t e = (size_t)h.nnz > SIZE_MAX / 2 ? SIZE_MAX : (size_t)h.nnz * 2;
    const size_t entries = h.symmetry == MTX_GENERAL ? (size_t)h.nnz : e;
    size_t need = msp__bytes_mul_add(entries, 2 * sizeof(int32_t) + sizeof(double), 0);
    need = msp__bytes_mul_add(entries, 2 * (sizeof(int32_t) + sizeof(double)), need);
    need = msp__bytes_mul_add(rows1, 2 * sizeof(int64_t), need);
    need = msp__bytes_mul_add(((size_t)h.rows + (size_t)h.cols) / 8 + 1, 2, need);
    // the format analysis's marks of diagonals (an int32 per row and column)
    need = msp__bytes_mul_add((size_t)h.rows + (size_t)h.cols + 1, sizeof(int32_t), need);
    char what[160];
    snprintf(what, sizeof what, "reading %s (%lld x %lld, %lld entries declared on line %lld)",
             r->name, (long long)h.rows, (long long)h.cols, (long long)h.nnz,
             (long long)h.size_line);
    MSP_TRY(msp__memory_check(need, what));
  }
  cap = h.nnz < MTX_INITIAL_ENTRIES ? h.nnz : MTX_INITIAL_ENTRIES;
  if (cap < 1) cap = 1;
  MSP_TRY(MSP_ALLOC(row, cap, "Matrix Market row indices"));
  MSP_TRY(MSP_ALLOC(col, cap, "Matrix Market column indices"));
  MSP_TRY(MSP_ALLOC(val, cap, "Matrix Market values"));
  for (;;) {
    MSP_TRY(next_data_line(r, &line, &len, &got));
    if (!got) break;
    if (count == h.nnz) {
      st = msp__mtx_fail(r, MSP_ERR_MM_TOO_MANY, "more entries than the %lld declared on line %lld",
                         (long long)h.nnz, (long long)h.size_line);
      goto exit;
    }
    const char *p = line, *end = line + len;
    int64_t i = 0, j = 0;
    double v = 1.0;                 // pattern entries are ones
    next_token(&p, end, &tok, &tl); // a data line has at least one token
    MSP_TRY(parse_index(r, tok, tl, "row", h.rows, &i));
    if (!next_token(&p, end, &tok, &tl)) {
      st = msp__mtx_fail(r, MSP_ERR_MM_VALUE, "truncated entry: no column index");
      goto exit;
    }
    MSP_TRY(parse_index(r, tok, tl, "column", h.cols, &j));
    if (h.field != MTX_PATTERN) {
      if (!next_token(&p, end, &tok, &tl)) {
        st = msp__mtx_fail(r, MSP_ERR_MM_VALUE, "truncated entry: no value after %lld %lld",
                           (long long)i, (long long)j);
        goto exit;
      }
      MSP_TRY(parse_value(r, tok, tl, h.field, flags, &v));
    }
    if (next_token(&p, end, &tok, &tl)) {
      st = msp__mtx_fail(r, MSP_ERR_MM_VALUE, "unexpected '%s' after the %s", mtx_show(tok, tl).s,
                         h.field == MTX_PATTERN ? "two indices of a pattern entry" : "value");
      goto exit;
    }
    if (h.symmetry == MTX_SKEW && i == j) {
      st = msp__mtx_fail(r, MSP_ERR_MM_INDEX,
                         "diagonal entry (%lld, %lld) in a skew-symmetric matrix (its diagonal is "
                         "zero and not stored)",
                         (long long)i, (long long)j);
      goto exit;
    }
    if (count == cap) {
      int64_t ncap = cap > h.nnz / 2 ? h.nnz : 2 * cap;
      MSP_TRY(grow((void **)&row, ncap, sizeof *row, "Matrix Market row indices"));
      MSP_TRY(grow((void **)&col, ncap, sizeof *col, "Matrix Market column indices"));
      MSP_TRY(grow((void **)&val, ncap, sizeof *val, "Matrix Market values"));
      cap = ncap;
    }
    if (count == 0) first_line = r->lineno;
    if (r->lineno != first_line + count) lines_contiguous = false;
    row[count] = (int32_t)(i - 1);
    col[count] = (int32_t)(j - 1);
    val[count] = v;
    offdiag += i != j;
    count++;
  }
  if (count < h.nnz) {
    st = msp__mtx_fail(r, MSP_ERR_MM_TOO_FEW,
                       "end of file after %lld of the %lld entries declared on line %lld",
                       (long long)count, (long long)h.nnz, (long long)h.size_line);
    goto exit;
  }
  // Expand the stored triangle: a symmetric file stores one of (i,j), (j,i) (either triangle is
  // accepted: some files in the wild store the upper one); skew-symmetric mirrors with -v.
  const int64_t stored = count; // the file's entries; mirrored ones follow them
  if (h.symmetry != MTX_GENERAL && offdiag > 0) {
    int64_t total = count + offdiag; // count <= nnz < 2^63 and offdiag <= count: no overflow
    MSP_TRY(grow((void **)&row, total, sizeof *row, "Matrix Market row indices (expanded)"));
    MSP_TRY(grow((void **)&col, total, sizeof *col, "Matrix Market column indices (expanded)"));
    MSP_TRY(grow((void **)&val, total, sizeof *val, "Matrix Market values (expanded)"));
    double sign = h.symmetry == MTX_SKEW ? -1.0 : 1.0;
    int64_t k = count;
    for (int64_t e = 0; e < count; e++)
      if (row[e] != col[e]) {
        row[k] = col[e];
        col[k] = row[e];
        val[k] = sign * val[e];
        k++;
      }
    count = total;
  }
  st = msp__matrix_from_triples(ctx, h.rows, h.cols, count, row, col, val, flags, bad, A);
  if (st == MSP_ERR_NONFINITE && bad[0] >= 0)
    st =
        name_nonfinite_sum(r, row, col, val, stored, h.symmetry, first_line, lines_contiguous, bad);
exit:
  st = msp__mtx_settle(r, st);
  msp__free(row);
  msp__free(col);
  msp__free(val);
  return st;
}

static msp_status check_read_args(const char *fn, msp_context ctx, const void *path, unsigned flags,
                                  void *out) {
  MSP_CHECK_ARG(out, "%s: output pointer is NULL", fn);
  msp_status st = msp__check_context(ctx, fn, "ctx");
  if (st != MSP_SUCCESS) return st;
  MSP_CHECK_ARG(path, "%s: path is NULL", fn);
  MSP_CHECK_ARG(!(flags & ~(unsigned)MSP_READ_ALLOW_NONFINITE), "%s: unknown flags 0x%x", fn,
                flags);
  return MSP_SUCCESS;
}

msp_status msp_matrix_read_mtx(msp_context ctx, const char *path, unsigned flags, msp_matrix *A) {
  msp_status st = MSP_SUCCESS;
  msp__mtx_reader r;
  memset(&r, 0, sizeof r);
  if (A) *A = NULL;
  MSP_TRY(check_read_args("msp_matrix_read_mtx", ctx, path, flags, A));
  MSP_TRY(msp__mtx_open_file(&r, path));
  MSP_TRY_THREADS(ctx, read_matrix(ctx, &r, flags, A));
exit:
  msp__mtx_close(&r);
  return st;
}

msp_status msp__matrix_read_mtx_mem(msp_context ctx, const char *name, const void *data,
                                    size_t size, unsigned flags, msp_matrix *A) {
  msp_status st = MSP_SUCCESS;
  msp__mtx_reader r;
  memset(&r, 0, sizeof r);
  if (A) *A = NULL;
  MSP_TRY(check_read_args("msp__matrix_read_mtx_mem", ctx, name, flags, A));
  MSP_CHECK_ARG(data || size == 0, "msp__matrix_read_mtx_mem: data is NULL with size %zu", size);
  r.name = name;
  r.mem = data;
  r.mem_size = size;
  r.raw_eof = size == 0;
  MSP_TRY(read_matrix(ctx, &r, flags, A));
exit:
  msp__mtx_close(&r);
  return st;
}

// ---- vectors ------------------------------------------------------------------------------------
msp_status msp_vector_read_mtx(msp_context ctx, const char *path, unsigned flags, msp_vector *v) {
  msp_status st = MSP_SUCCESS;
  msp__mtx_reader r;
  mtx_header h;
  double *val = NULL;
  int64_t count = 0, cap = 0;
  const char *line = NULL, *tok = NULL;
  size_t len = 0, tl = 0;
  bool got = false;
  memset(&r, 0, sizeof r);
  memset(&h, 0, sizeof h);
  if (v) *v = NULL;
  MSP_TRY(check_read_args("msp_vector_read_mtx", ctx, path, flags, v));
  MSP_TRY(msp__mtx_open_file(&r, path));
  MSP_TRY(msp__mtx_start(&r));
  MSP_TRY(read_header(&r, true, &h));
  {
    char what[160];
    snprintf(what, sizeof what, "reading %s (%lld entries declared on line %lld)", r.name,
             (long long)h.nnz, (long long)h.size_line);
    MSP_TRY(msp__memory_check(msp__bytes_mul_add((size_t)h.nnz, 2 * sizeof(double), 0), what));
  }
  cap = h.nnz < MTX_INITIAL_ENTRIES ? h.nnz : MTX_INITIAL_ENTRIES;
  if (cap < 1) cap = 1;
  MSP_TRY(MSP_ALLOC(val, cap, "Matrix Market vector values"));
  for (;;) {
    MSP_TRY(next_data_line(&r, &line, &len, &got));
    if (!got) break;
    if (count == h.nnz) {
      st =
          msp__mtx_fail(&r, MSP_ERR_MM_TOO_MANY, "more entries than the %lld declared on line %lld",
                        (long long)h.nnz, (long long)h.size_line);
      goto exit;
    }
    const char *p = line, *end = line + len;
    double x = 0;
    next_token(&p, end, &tok, &tl);
    MSP_TRY(parse_value(&r, tok, tl, h.field, flags, &x));
    if (next_token(&p, end, &tok, &tl)) {
      st = msp__mtx_fail(&r, MSP_ERR_MM_VALUE, "unexpected '%s' after the value (one per line)",
                         mtx_show(tok, tl).s);
      goto exit;
    }
    if (count == cap) {
      int64_t ncap = cap > h.nnz / 2 ? h.nnz : 2 * cap;
      MSP_TRY(grow((void **)&val, ncap, sizeof *val, "Matrix Market vector values"));
      cap = ncap;
    }
    val[count++] = x;
  }
  if (count < h.nnz) {
    st = msp__mtx_fail(&r, MSP_ERR_MM_TOO_FEW,
                       "end of file after %lld of the %lld entries declared on line %lld",
                       (long long)count, (long long)h.nnz, (long long)h.size_line);
    goto exit;
  }
  MSP_TRY(msp_vector_create(ctx, h.nnz, v));
  st = msp_vector_set(*v, val);
  if (st != MSP_SUCCESS) msp_vector_destroy(v);
exit:
  st = msp__mtx_settle(&r, st);
  msp__mtx_close(&r);
  msp__free(val);
  return st;
}

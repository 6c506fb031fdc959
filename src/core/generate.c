// generate.c: built-in matrix generators (msp_matrix_generate) building sorted CSR directly.
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define GEN_FORMS                                                                                  \
  "laplace2d:N, stencil27:N, random:ROWS:PER_ROW[:SEED], rmat:SCALE:EDGE_FACTOR[:SEED], "          \
  "banded:ROWS:WIDTH, powerlaw:ROWS:MEAN[:SEED], poisson3d:N, convdiff3d:N[:PECLET]"

// Seed used when a spec names none: fixed so that a spec always means the same matrix.
#define GEN_DEFAULT_SEED 20261122u

// Every entry is generated from a counter-based hash of (seed, row, k) so that the result does
// not depend on the number of threads or on the order in which rows are filled.
static inline uint64_t gen_mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static inline uint64_t gen_hash3(uint64_t seed, uint64_t a, uint64_t b) {
  return gen_mix(gen_mix(gen_mix(seed) ^ a) ^ (b * 0xd1b54a32d192ed03ull));
}
// A uniform value in [-1, 1) from a hash (53 random bits).
static inline double gen_unit(uint64_t h) {
  return (double)(h >> 11) * 0x1.0p-52 - 1.0;
}
// A uniform value in [0, 1).
static inline double gen_u01(uint64_t h) {
  return (double)(h >> 11) * 0x1.0p-53;
}
// A uniform integer in [0, n) for n < 2^32 (multiply-shift on the high 32 bits).
static inline int64_t gen_below(uint64_t h, int64_t n) {
  return (int64_t)(((h >> 32) * (uint64_t)n) >> 32);
}

// Per-row random stream (splitmix64 seeded from (seed, row)).
typedef struct {
  uint64_t s;
} gen_stream;
static inline gen_stream gen_stream_at(uint64_t seed, uint64_t row) {
  gen_stream g = {gen_hash3(seed, row, 0x5bd1e995u)};
  return g;
}
static inline uint64_t gen_next(gen_stream *g) {
  g->s += 0x9e3779b97f4a7c15ull;
  return gen_mix(g->s);
}

typedef enum {
  GEN_LAPLACE2D,
  GEN_STENCIL27,
  GEN_RANDOM,
  GEN_RMAT,
  GEN_BANDED,
  GEN_POWERLAW,
  GEN_POISSON3D,
  GEN_CONVDIFF3D
} gen_kind;

typedef struct {
  gen_kind kind;
  int64_t rows, cols;
  int64_t n;       // grid side (laplace2d, stencil27)
  int64_t per_row; // random
  int64_t width;   // banded
  double mean;     // powerlaw
  double peclet;   // convdiff3d
  int scale;       // rmat
  int64_t edges;   // rmat: EDGE_FACTOR * 2^SCALE
  uint64_t seed;
  double *wx; // stencil27: coefficient tables at half-integer coordinates (2N+1 each)
  double *wy, *wz;
} gen_spec;

// ---- parsing ------------------------------------------------------------------------------------
static msp_status gen_bad(const char *spec, const char *why) {
  return msp__error(MSP_ERR_INVALID_ARGUMENT,
                    "msp_matrix_generate: bad spec \"%s\" (%s); valid forms: " GEN_FORMS, spec,
                    why);
}

// Split `buf` at ':' into fields (pointers into buf). Returns the field count, or max + 1 when
// there are more than max fields.
static int gen_split(char *buf, char **field, int max) {
  int n = 0;
  char *p = buf;
  for (;;) {
    if (n == max) return max + 1;
    field[n++] = p;
    char *c = strchr(p, ':');
    if (!c) return n;
    *c = '\0';
    p = c + 1;
  }
}

// Parse a whole-string non-negative integer.
static int gen_int(const char *s, int64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+') return 0;
  errno = 0;
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0') return 0;
  *out = (int64_t)v;
  return 1;
}
static int gen_u64(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+') return 0;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return 0;
  *out = (uint64_t)v;
  return 1;
}
static int gen_real(const char *s, double *out) {
  if (!s || !*s) return 0;
  errno = 0;
  char *end = NULL;
  double v = strtod(s, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

static msp_status gen_parse(const char *spec, gen_spec *g) {
  char buf[256];
  char *f[6];
  memset(g, 0, sizeof(*g));
  g->seed = GEN_DEFAULT_SEED;
  if (strlen(spec) >= sizeof(buf)) return gen_bad(spec, "too long");
  strcpy(buf, spec);
  int nf = gen_split(buf, f, 4);
  if (nf > 4) return gen_bad(spec, "too many fields");
  const char *name = f[0];
  const int64_t col_max = INT32_MAX; // column indices are int32
  if (strcmp(name, "laplace2d") == 0 || strcmp(name, "stencil27") == 0) {
    int dim = (name[0] == 'l') ? 2 : 3;
    if (nf != 2 || !gen_int(f[1], &g->n) || g->n < 1)
      return gen_bad(spec, "N must be a positive integer");
    int64_t rows = g->n;
    for (int d = 1; d < dim; d++) {
      if (rows > col_max / g->n)
        return msp__error(MSP_ERR_INVALID_ARGUMENT,
                          "msp_matrix_generate: \"%s\": N^%d rows exceed the int32 column "
                          "index range (at most %lld rows)",
                          spec, dim, (long long)col_max);
      rows *= g->n;
    }
    g->kind = (dim == 2) ? GEN_LAPLACE2D : GEN_STENCIL27;
    g->rows = g->cols = rows;
    return MSP_SUCCESS;
  }
  if (strcmp(name, "poisson3d") == 0 || strcmp(name, "convdiff3d") == 0) {
    const int cd = name[0] == 'c';
    if (nf < 2 || nf > 2 + cd || !gen_int(f[1], &g->n) || g->n < 1)
      return gen_bad(spec,
                     cd ? "expected N, then an optional PECLET" : "N must be a positive integer");
    if (g->n > 1290) // 1290^3 < 2^31 - 1 < 1291^3
      return msp__error(MSP_ERR_INVALID_ARGUMENT,
                        "msp_matrix_generate: \"%s\": N^3 rows exceed the int32 column index "
                        "range (N at most 1290)",
                        spec);
    g->peclet = 10.0;
    if (nf == 3 && (!gen_real(f[2], &g->peclet) || g->peclet < 0))
      return gen_bad(spec, "PECLET must be a finite number >= 0");
    g->kind = cd ? GEN_CONVDIFF3D : GEN_POISSON3D;
    g->rows = g->cols = g->n * g->n * g->n;
    return MSP_SUCCESS;
  }
  if (strcmp(name, "random") == 0 || strcmp(name, "powerlaw") == 0) {
    int is_random = (name[0] == 'r');
    if (nf < 3 || nf > 4)
      return gen_bad(spec, "expected ROWS and a second number, then an optional SEED");
    if (!gen_int(f[1], &g->rows) || g->rows < 1)
      return gen_bad(spec, "ROWS must be a positive integer");
    if (g->rows > col_max)
      return msp__error(MSP_ERR_INVALID_ARGUMENT,
                        "msp_matrix_generate: \"%s\": %lld rows exceed the int32 column index "
                        "range (at most %lld)",
                        spec, (long long)g->rows, (long long)col_max);
    if (nf == 4 && !gen_u64(f[3], &g->seed))
      return gen_bad(spec, "SEED must be a non-negative integer");
    g->cols = g->rows;
    if (is_random) {
      if (!gen_int(f[2], &g->per_row))
        return gen_bad(spec, "PER_ROW must be a non-negative integer");
      if (g->per_row > g->rows)
        return msp__error(MSP_ERR_INVALID_ARGUMENT,
                          "msp_matrix_generate: \"%s\": PER_ROW %lld exceeds the %lld columns",
                          spec, (long long)g->per_row, (long long)g->rows);
      if (g->per_row > 0 && g->rows > INT64_MAX / g->per_row)
        return msp__error(MSP_ERR_INVALID_ARGUMENT,
                          "msp_matrix_generate: \"%s\": the number of nonzeros overflows", spec);
      g->kind = GEN_RANDOM;
    } else {
      if (!gen_real(f[2], &g->mean) || !(g->mean > 0.0))
        return gen_bad(spec, "MEAN must be a positive number");
      if (g->mean > (double)g->rows)
        return msp__error(MSP_ERR_INVALID_ARGUMENT,
                          "msp_matrix_generate: \"%s\": MEAN %g exceeds the %lld columns", spec,
                          g->mean, (long long)g->rows);
      g->kind = GEN_POWERLAW;
    }
    return MSP_SUCCESS;
  }
  if (strcmp(name, "rmat") == 0) {
    int64_t scale = 0, ef = 0;
    if (nf < 3 || nf > 4)
      return gen_bad(spec, "expected SCALE and EDGE_FACTOR, then an optional SEED");
    if (!gen_int(f[1], &scale) || scale < 1)
      return gen_bad(spec, "SCALE must be a positive integer");
    if (scale > 30)
      return msp__error(MSP_ERR_INVALID_ARGUMENT,
                        "msp_matrix_generate: \"%s\": 2^%lld rows exceed the int32 column index "
                        "range (SCALE at most 30)",
                        spec, (long long)scale);
    if (!gen_int(f[2], &ef) || ef < 1)
      return gen_bad(spec, "EDGE_FACTOR must be a positive integer");
    if (ef > (INT64_MAX >> 30))
      return msp__error(MSP_ERR_INVALID_ARGUMENT,
                        "msp_matrix_generate: \"%s\": the number of edges overflows", spec);
    if (nf == 4 && !gen_u64(f[3], &g->seed))
      return gen_bad(spec, "SEED must be a non-negative integer");
    g->kind = GEN_RMAT;
    g->scale = (int)scale;
    g->rows = g->cols = (int64_t)1 << scale;
    g->edges = ef << scale;
    return MSP_SUCCESS;
  }
  if (strcmp(name, "banded") == 0) {
    if (nf != 3) return gen_bad(spec, "expected ROWS and WIDTH");
    if (!gen_int(f[1], &g->rows) || g->rows < 1)
      return gen_bad(spec, "ROWS must be a positive integer");
    if (g->rows > col_max)
      return msp__error(MSP_ERR_INVALID_ARGUMENT,
                        "msp_matrix_generate: \"%s\": %lld rows exceed the int32 column index "
                        "range (at most %lld)",
                        spec, (long long)g->rows, (long long)col_max);
    if (!gen_int(f[2], &g->width) || g->width < 1)
      return gen_bad(spec, "WIDTH must be a positive integer");
    // A band wider than the matrix is the dense matrix; clip so that row lengths stay exact.
    if (g->width > 2 * g->rows - 1) g->width = 2 * g->rows - 1;
    g->kind = GEN_BANDED;
    g->cols = g->rows;
    return MSP_SUCCESS;
  }
  return gen_bad(spec, "unknown generator");
}

// ---- per-row lengths (pure functions of the spec and the row) ----------------------------------
// banded: columns i - lo .. i + hi clipped to 0..cols-1 (lo + hi + 1 = WIDTH; the extra entry of
// an even width goes to the right).
static inline void banded_range(const gen_spec *g, int64_t i, int64_t *first, int64_t *last) {
  int64_t lo = (g->width - 1) / 2, hi = g->width - 1 - lo;
  int64_t a = i - lo, b = i + hi;
  if (a < 0) a = 0;
  if (b > g->cols - 1) b = g->cols - 1;
  *first = a;
  *last = b;
}

// powerlaw: continuous Pareto with shape 1.5 (density exponent 2.5) and scale MEAN/3, so its
// mean is MEAN; rounded to the nearest integer and capped at the number of columns. Heavy-tailed
// enough that the longest row is ~rows^(2/3) times the mean: the skewed case of the kernel rule.
static inline int64_t powerlaw_len(const gen_spec *g, int64_t i) {
  double u = 1.0 - gen_u01(gen_hash3(g->seed, (uint64_t)i, 0x706f776572ull)); // (0, 1]
  double x = (g->mean / 3.0) * pow(u, -1.0 / 1.5);
  if (!(x < (double)g->cols)) return g->cols;
  return (int64_t)(x + 0.5);
}

static inline int64_t gen_row_len(const gen_spec *g, int64_t i) {
  switch (g->kind) {
  case GEN_LAPLACE2D: {
    int64_t n = g->n, r = i / n, c = i % n;
    return 5 - (r == 0) - (r == n - 1) - (c == 0) - (c == n - 1);
  }
  case GEN_STENCIL27: {
    int64_t n = g->n, x = i % n, y = (i / n) % n, z = i / (n * n);
    int64_t lx = 3 - (x == 0) - (x == n - 1), ly = 3 - (y == 0) - (y == n - 1),
            lz = 3 - (z == 0) - (z == n - 1);
    return lx * ly * lz;
  }
  case GEN_POISSON3D:
  case GEN_CONVDIFF3D: {
    int64_t n = g->n, x = i % n, y = (i / n) % n, z = i / (n * n);
    return 7 - (x == 0) - (x == n - 1) - (y == 0) - (y == n - 1) - (z == 0) - (z == n - 1);
  }
  case GEN_RANDOM:
    return g->per_row;
  case GEN_BANDED: {
    int64_t a, b;
    banded_range(g, i, &a, &b);
    return b - a + 1;
  }
  case GEN_POWERLAW:
    return powerlaw_len(g, i);
  case GEN_RMAT:
    break;
  }
  return 0;
}

// ---- per-row fill -------------------------------------------------------------------------------
static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}
static void sort_i32(int32_t *v, int64_t n) {
  if (n <= 32) {
    for (int64_t i = 1; i < n; i++) {
      int32_t t = v[i];
      int64_t j = i;
      while (j > 0 && v[j - 1] > t) {
        v[j] = v[j - 1];
        j--;
      }
      v[j] = t;
    }
  } else {
    qsort(v, (size_t)n, sizeof(*v), cmp_i32);
  }
}
// Sort and drop duplicates; returns the new length.
static int64_t sort_unique_i32(int32_t *v, int64_t n) {
  if (n <= 1) return n;
  sort_i32(v, n);
  int64_t m = 1;
  for (int64_t i = 1; i < n; i++)
    if (v[i] != v[m - 1]) v[m++] = v[i];
  return m;
}

// k distinct columns out of n, sorted, into col[0..k). Sparse rows: draw, sort, drop duplicates,
// draw the missing ones again (expected < 2k draws as k <= n/2). Dense rows: selection sampling
// (Knuth's algorithm S), which yields sorted output in one pass over n < 2k candidates.
static void gen_distinct_columns(gen_stream *rs, int64_t n, int64_t k, int32_t *col) {
  if (k <= 0) return;
  if (2 * k <= n) {
    int64_t have = 0;
    while (have < k) {
      for (int64_t t = have; t < k; t++)
        col[t] = (int32_t)gen_below(gen_next(rs), n);
      have = sort_unique_i32(col, k);
    }
  } else {
    int64_t chosen = 0;
    for (int64_t j = 0; j < n && chosen < k; j++) {
      // Select j with probability (still needed) / (still available): exactly k in the end.
      if (gen_below(gen_next(rs), n - j) < k - chosen) col[chosen++] = (int32_t)j;
    }
  }
}

// Smooth coefficient field for stencil27: w = 1 + 0.5 * sx * cy * sz at the midpoint of the two
// grid points, tabulated per axis at half-integer coordinates (index 2x + dx). Symmetric in the
// two points, so the matrix is symmetric; diagonal = sum of |off-diagonals| + 1, so it is
// strictly diagonally dominant with positive diagonal (SPD).
static msp_status stencil_tables(gen_spec *g) {
  msp_status st = MSP_SUCCESS;
  int64_t m = 2 * g->n + 1;
  MSP_TRY(MSP_ALLOC(g->wx, m, "stencil27 coefficient table"));
  MSP_TRY(MSP_ALLOC(g->wy, m, "stencil27 coefficient table"));
  MSP_TRY(MSP_ALLOC(g->wz, m, "stencil27 coefficient table"));
  for (int64_t t = 0; t < m; t++) {
    double p = (double)t / (2.0 * (double)g->n); // coordinate / N in [0, 1]
    g->wx[t] = sin(2.0 * M_PI * p + 0.3);
    g->wy[t] = cos(2.0 * M_PI * p);
    g->wz[t] = sin(M_PI * p + 0.7);
  }
exit:
  return st;
}

static void gen_fill_row(const gen_spec *g, int64_t i, int32_t *col, double *val) {
  switch (g->kind) {
  case GEN_LAPLACE2D: {
    int64_t n = g->n, r = i / n, c = i % n, k = 0;
    if (r > 0) col[k] = (int32_t)(i - n), val[k++] = -1.0;
    if (c > 0) col[k] = (int32_t)(i - 1), val[k++] = -1.0;
    col[k] = (int32_t)i, val[k++] = 4.0;
    if (c < n - 1) col[k] = (int32_t)(i + 1), val[k++] = -1.0;
    if (r < n - 1) col[k] = (int32_t)(i + n), val[k++] = -1.0;
    break;
  }
  case GEN_STENCIL27: {
    int64_t n = g->n, x = i % n, y = (i / n) % n, z = i / (n * n), k = 0, diag = -1;
    double sum = 0.0;
    // dz outer, dx inner: columns come out ascending.
    for (int dz = -1; dz <= 1; dz++) {
      if (z + dz < 0 || z + dz >= n) continue;
      for (int dy = -1; dy <= 1; dy++) {
        if (y + dy < 0 || y + dy >= n) continue;
        for (int dx = -1; dx <= 1; dx++) {
          if (x + dx < 0 || x + dx >= n) continue;
          col[k] = (int32_t)(i + (dz * n + dy) * n + dx);
          if (dx == 0 && dy == 0 && dz == 0) {
            diag = k;
            val[k] = 0.0;
          } else {
            double w = 1.0 + 0.5 * g->wx[2 * x + dx] * g->wy[2 * y + dy] * g->wz[2 * z + dz];
            val[k] = -w;
            sum += w;
          }
          k++;
        }
      }
    }
    val[diag] = sum + 1.0;
    break;
  }
  case GEN_POISSON3D:
  case GEN_CONVDIFF3D: {
    // -laplace(u) + PECLET (w . grad u) on the unit cube with mesh width h = 1/(N+1), Dirichlet
    // boundary, scaled by h^2; the wind w = (1, 1/2, 1/4) differenced upwind (one-sided from the
    // side it blows from), so the matrix is nonsymmetric, an M-matrix, and diagonally dominant
    // (strictly in the rows next to the boundary). PECLET = 0 (and poisson3d) is the 7-point
    // Laplacian: 6 on the diagonal, -1 off it.
    static const double wind[3] = {1.0, 0.5, 0.25};
    const int64_t n = g->n, x = i % n, y = (i / n) % n, z = i / (n * n);
    const int64_t step[3] = {1, n, n * n}, at[3] = {x, y, z};
    const double c = g->kind == GEN_CONVDIFF3D ? g->peclet / (double)(n + 1) : 0.0;
    int64_t k = 0;
    // below the diagonal: z-1, y-1, x-1 (ascending columns), each with the upwind term
    for (int d = 2; d >= 0; d--)
      if (at[d] > 0) col[k] = (int32_t)(i - step[d]), val[k++] = -1.0 - c * wind[d];
    col[k] = (int32_t)i, val[k++] = 6.0 + c * (wind[0] + wind[1] + wind[2]);
    for (int d = 0; d < 3; d++)
      if (at[d] < n - 1) col[k] = (int32_t)(i + step[d]), val[k++] = -1.0;
    break;
  }
  case GEN_RANDOM:
  case GEN_POWERLAW: {
    int64_t k = (g->kind == GEN_RANDOM) ? g->per_row : powerlaw_len(g, i);
    gen_stream rs = gen_stream_at(g->seed, (uint64_t)i);
    gen_distinct_columns(&rs, g->cols, k, col);
    // Values hashed from (row, column), not from the draw order.
    for (int64_t t = 0; t < k; t++)
      val[t] = gen_unit(gen_hash3(g->seed ^ 0x76616cull, (uint64_t)i, (uint64_t)col[t]));
    break;
  }
  case GEN_BANDED: {
    int64_t a, b;
    banded_range(g, i, &a, &b);
    // Off-diagonals in [-1, -0.5), diagonal = WIDTH: strictly diagonally dominant, values vary.
    for (int64_t j = a, k = 0; j <= b; j++, k++) {
      col[k] = (int32_t)j;
      val[k] = (j == i)
                   ? (double)g->width
                   : -0.75 + 0.25 * gen_unit(gen_hash3(0x62616e64ull, (uint64_t)i, (uint64_t)j));
    }
    break;
  }
  case GEN_RMAT:
    break;
  }
}

// Rows of length/fill defined per row: count, allocate exactly once, prefix, fill in parallel.
static msp_status gen_rowwise(msp_context ctx, const gen_spec *g, msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  msp_matrix A = NULL;
  const int64_t rows = g->rows;
  int64_t nnz = 0;
#pragma omp parallel for schedule(static) reduction(+ : nnz)
  for (int64_t i = 0; i < rows; i++)
    nnz += gen_row_len(g, i);

  MSP_TRY(msp__matrix_alloc(ctx, rows, g->cols, nnz, &A));
  int64_t *rp = A->rowptr;
  rp[0] = 0;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; i++)
    rp[i + 1] = gen_row_len(g, i);
  for (int64_t i = 0; i < rows; i++)
    rp[i + 1] += rp[i];
  if (rp[rows] != nnz) {
    st = msp__error(MSP_ERR_INTERNAL,
                    "msp_matrix_generate: row lengths summed to %lld, expected %lld",
                    (long long)rp[rows], (long long)nnz);
    goto exit;
  }
  int32_t *ci = A->colind;
  double *va = A->val;
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < rows; i++)
    gen_fill_row(g, i, ci + rp[i], va + rp[i]);

  st = msp__matrix_finish(&A); // destroys A on failure
  if (st == MSP_SUCCESS) *out = A;
  A = NULL;
exit:
  msp_matrix_destroy(&A);
  return st;
}

// R-MAT (Chakrabarti et al.; Graph500 parameters a=.57 b=.19 c=.19 d=.05): each edge picks one
// quadrant per level from 16 random bits; edge e's draws come from the hash of (seed, e), so the
// edge list is fixed. Edges are packed as row * 2^SCALE + col, sorted by a stable parallel LSD
// radix sort (its output, the sorted list, is the same for any thread count) and deduplicated.
// Counting into rows with atomics was tried first: the hub rows made every thread fight over
// the same cache lines (a minute for SCALE 22 on two cores).
static inline uint64_t rmat_edge(const gen_spec *g, int64_t e) {
  // Quadrant thresholds out of 65536: a, a+b, a+b+c.
  const uint32_t ta = 37356, tab = 49807, tabc = 62259;
  gen_stream rs = gen_stream_at(g->seed, (uint64_t)e);
  uint64_t bits = 0, r = 0, c = 0;
  for (int l = 0; l < g->scale; l++) {
    if ((l & 3) == 0) bits = gen_next(&rs);
    uint32_t u = (uint32_t)(bits & 0xffffu);
    bits >>= 16;
    r = 2 * r + (u >= tab);
    c = 2 * c + ((u >= ta && u < tab) || u >= tabc);
  }
  return (r << g->scale) | c;
}

#define RADIX_BITS 11
#define RADIX_BINS (1 << RADIX_BITS)

// Stable LSD radix sort of key[0..n) on its low `bits` bits; tmp has n entries; hist has
// nt * RADIX_BINS entries for a team of exactly nt threads. The sorted keys end in key.
static void radix_sort_u64(uint64_t *key, uint64_t *tmp, int64_t n, int bits, int64_t *hist,
                           int nt) {
  uint64_t *src = key, *dst = tmp;
  for (int shift = 0; shift < bits; shift += RADIX_BITS) {
#pragma omp parallel num_threads(nt)
    {
#ifdef _OPENMP
      int t = omp_get_thread_num(), T = omp_get_num_threads();
#else
      int t = 0, T = 1;
#endif
      int64_t lo = n * t / T, hi = n * (t + 1) / T;
      int64_t *h = hist + (int64_t)t * RADIX_BINS;
      for (int d = 0; d < RADIX_BINS; d++)
        h[d] = 0;
      for (int64_t i = lo; i < hi; i++)
        h[(src[i] >> shift) & (RADIX_BINS - 1)]++;
#pragma omp barrier
#pragma omp single
      {
        // Offsets digit-major, thread-minor: thread t's keys of digit d follow those of t - 1.
        int64_t sum = 0;
        for (int d = 0; d < RADIX_BINS; d++)
          for (int u = 0; u < T; u++) {
            int64_t c = hist[(int64_t)u * RADIX_BINS + d];
            hist[(int64_t)u * RADIX_BINS + d] = sum;
            sum += c;
          }
      }
      for (int64_t i = lo; i < hi; i++)
        dst[h[(src[i] >> shift) & (RADIX_BINS - 1)]++] = src[i];
    }
    uint64_t *sw = src;
    src = dst;
    dst = sw;
  }
  if (src != key) memcpy(key, src, (size_t)n * sizeof(*key));
}

static msp_status gen_rmat(msp_context ctx, const gen_spec *g, msp_matrix *out) {
  msp_status st = MSP_SUCCESS;
  msp_matrix A = NULL;
  uint64_t *key = NULL, *tmp = NULL;
  int64_t *hist = NULL;
  const int64_t rows = g->rows, m = g->edges;
  const uint64_t colmask = ((uint64_t)1 << g->scale) - 1;
#ifdef _OPENMP
  const int nt = omp_get_max_threads();
#else
  const int nt = 1;
#endif
  MSP_TRY(MSP_ALLOC(key, m, "R-MAT edge list"));
  MSP_TRY(MSP_ALLOC(tmp, m, "R-MAT edge list (sort buffer)"));
  MSP_TRY(MSP_ALLOC(hist, (int64_t)nt * RADIX_BINS, "R-MAT radix histograms"));

#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < m; e++)
    key[e] = rmat_edge(g, e);
  radix_sort_u64(key, tmp, m, 2 * g->scale, hist, nt);
  MSP_FREE(tmp);
  MSP_FREE(hist);

  // Duplicates are adjacent now: count the distinct entries, then fill the CSR once.
  int64_t nnz = 0;
  for (int64_t e = 0; e < m; e++)
    nnz += (e == 0 || key[e] != key[e - 1]);
  MSP_TRY(msp__matrix_alloc(ctx, rows, g->cols, nnz, &A));
  int64_t *rp = A->rowptr;
  int32_t *ci = A->colind;
  double *va = A->val;
  int64_t p = 0;
  for (int64_t e = 0; e < m; e++) {
    if (e > 0 && key[e] == key[e - 1]) continue;
    rp[(key[e] >> g->scale) + 1]++;
    ci[p++] = (int32_t)(key[e] & colmask);
  }
  MSP_FREE(key); // release the edge list before the upload
  for (int64_t i = 0; i < rows; i++)
    rp[i + 1] += rp[i];
    // Values hashed from (row, column): the same for a duplicate whichever copy survived.
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < rows; i++)
    for (int64_t k = rp[i]; k < rp[i + 1]; k++)
      va[k] = gen_unit(gen_hash3(g->seed ^ 0x726d6174ull, (uint64_t)i, (uint64_t)ci[k]));

  st = msp__matrix_finish(&A);
  if (st == MSP_SUCCESS) *out = A;
  A = NULL;
exit:
  msp_matrix_destroy(&A);
  msp__free(key);
  msp__free(tmp);
  msp__free(hist);
  return st;
}

msp_status msp_matrix_generate(msp_context ctx, const char *spec, msp_matrix *A) {
  msp_status st = MSP_SUCCESS;
  gen_spec g;
  memset(&g, 0, sizeof(g));
  MSP_CHECK_ARG(A != NULL, "msp_matrix_generate: A is NULL");
  *A = NULL;
  MSP_CHECK_HANDLE(msp__check_context(ctx, "msp_matrix_generate", "ctx"));
  MSP_CHECK_ARG(spec != NULL, "msp_matrix_generate: spec is NULL; valid forms: " GEN_FORMS);
  MSP_TRY(gen_parse(spec, &g));
  if (g.kind == GEN_STENCIL27) MSP_TRY(stencil_tables(&g));
  if (g.kind == GEN_RMAT)
    MSP_TRY_THREADS(ctx, gen_rmat(ctx, &g, A));
  else
    MSP_TRY_THREADS(ctx, gen_rowwise(ctx, &g, A));
exit:
  msp__free(g.wx);
  msp__free(g.wy);
  msp__free(g.wz);
  return st;
}

// Rows [r0, r1) of the matrix `spec` describes, as one process generates them (the same rows,
// columns and values: gen_fill_row), for a distributed layer that generates each rank's rows on
// that rank. *rows / *cols: the whole matrix's; with r0 == r1 nothing else is made. *rp (r1 - r0
// + 1, from 0), *ci (global columns) and *val are allocated here (msp__free). Row-wise generators
// only: R-MAT's edge list is one sorted whole (MSP_ERR_NOT_SUPPORTED); a bad spec or range
// MSP_ERR_INVALID_ARGUMENT.
msp_status msp__matrix_generate_rows(const char *spec, int64_t r0, int64_t r1, int64_t *rows,
                                     int64_t *cols, int64_t **rp, int32_t **ci, double **val) {
  msp_status st = MSP_SUCCESS;
  gen_spec g;
  memset(&g, 0, sizeof(g));
  int64_t *p = NULL;
  int32_t *c = NULL;
  double *v = NULL;
  MSP_CHECK_ARG(spec && rows && cols, "msp_matrix_generate: spec or sizes NULL");
  MSP_TRY(gen_parse(spec, &g));
  if (g.kind == GEN_RMAT) {
    st = msp__error(MSP_ERR_NOT_SUPPORTED,
                    "msp_matrix_generate: %s is generated as one sorted edge list, not row by row",
                    spec);
    goto exit;
  }
  *rows = g.rows;
  *cols = g.cols;
  if (r0 == r1) goto exit;
  if (r0 < 0 || r1 < r0 || r1 > g.rows || !rp || !ci || !val) {
    st = msp__error(MSP_ERR_INVALID_ARGUMENT,
                    "msp_matrix_generate: rows [%lld, %lld) outside the %lld rows of %s",
                    (long long)r0, (long long)r1, (long long)g.rows, spec);
    goto exit;
  }
  if (g.kind == GEN_STENCIL27) MSP_TRY(stencil_tables(&g));
  const int64_t n = r1 - r0;
  MSP_TRY(MSP_ALLOC(p, n + 1, "generated rows"));
  p[0] = 0;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    p[i + 1] = gen_row_len(&g, r0 + i);
  for (int64_t i = 0; i < n; i++)
    p[i + 1] += p[i];
  MSP_TRY(MSP_ALLOC(c, p[n] > 0 ? p[n] : 1, "generated rows"));
  MSP_TRY(MSP_ALLOC(v, p[n] > 0 ? p[n] : 1, "generated rows"));
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < n; i++)
    gen_fill_row(&g, r0 + i, c + p[i], v + p[i]);
  *rp = p;
  *ci = c;
  *val = v;
  p = NULL;
  c = NULL;
  v = NULL;
exit:
  msp__free(p);
  msp__free(c);
  msp__free(v);
  msp__free(g.wx);
  msp__free(g.wy);
  msp__free(g.wz);
  return st;
}

// R-MAT in parts, for a graph generated by several processes (the distributed layer): with keys
// NULL, the sizes (*rows, *edges, *scale); otherwise also edges [e0, e1) of the one edge list
// msp_matrix_generate sorts, packed as row * 2^SCALE + col. Any process may draw any range: edge
// e's draws depend on (seed, e) alone. MSP_ERR_NOT_SUPPORTED for a spec that is not R-MAT.
msp_status msp__matrix_generate_edges(const char *spec, int64_t e0, int64_t e1, int64_t *rows,
                                      int64_t *edges, int *scale, uint64_t *keys) {
  msp_status st = MSP_SUCCESS;
  gen_spec g;
  memset(&g, 0, sizeof(g));
  MSP_CHECK_ARG(spec && rows && edges && scale, "msp_matrix_generate: spec or sizes NULL");
  MSP_TRY(gen_parse(spec, &g));
  if (g.kind != GEN_RMAT) {
    st = msp__error(MSP_ERR_NOT_SUPPORTED, "msp_matrix_generate: %s is not an R-MAT graph", spec);
    goto exit;
  }
  *rows = g.rows;
  *edges = g.edges;
  *scale = g.scale;
  if (!keys) goto exit;
  if (e0 < 0 || e1 < e0 || e1 > g.edges) {
    st = msp__error(MSP_ERR_INVALID_ARGUMENT,
                    "msp_matrix_generate: edges [%lld, %lld) outside the %lld edges of %s",
                    (long long)e0, (long long)e1, (long long)g.edges, spec);
    goto exit;
  }
#pragma omp parallel for schedule(static)
  for (int64_t e = e0; e < e1; e++)
    keys[e - e0] = rmat_edge(&g, e);
exit:
  return st;
}

// The values of rows [r0, r0 + n) of an R-MAT graph whose columns (sorted, each once) are given
// (rp from 0): hashed from (row, column) as msp_matrix_generate's.
msp_status msp__matrix_generate_edge_values(const char *spec, int64_t r0, int64_t n,
                                            const int64_t *rp, const int32_t *ci, double *val) {
  msp_status st = MSP_SUCCESS;
  gen_spec g;
  memset(&g, 0, sizeof(g));
  MSP_TRY(gen_parse(spec, &g));
  if (g.kind != GEN_RMAT) {
    st = msp__error(MSP_ERR_NOT_SUPPORTED, "msp_matrix_generate: %s is not an R-MAT graph", spec);
    goto exit;
  }
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = rp[i]; k < rp[i + 1]; k++)
      val[k] = gen_unit(gen_hash3(g.seed ^ 0x726d6174ull, (uint64_t)(r0 + i), (uint64_t)ci[k]));
exit:
  return st;
}

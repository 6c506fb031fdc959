// mtx_write.c: Matrix Market output (dense vectors, plain or gzip) that never loses a file: the
// bytes go through safe_write.c (a temporary file renamed over the target once complete). zlib's
// deflate allocates through the library allocator.
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

// Output stream of a writer: plain, or gzip through deflate driven directly (as the reader
// drives inflate, so its allocations go through the library allocator too).
typedef struct {
  const char *name; // the target, for messages
  msp__safe_file *f;
  bool gzip, zinit;
  z_stream z;
  unsigned char zout[1 << 14];
} mtx_writer;

// Deflate what is in w->z with `flush`, writing the compressed bytes out.
static msp_status writer_deflate(mtx_writer *w, int flush) {
  for (;;) {
    w->z.next_out = w->zout;
    w->z.avail_out = (uInt)sizeof w->zout;
    int ret = deflate(&w->z, flush);
    if (ret == Z_STREAM_ERROR)
      return msp__error(MSP_ERR_IO, "cannot write %s: zlib deflate failed", w->name);
    size_t have = sizeof w->zout - w->z.avail_out;
    if (have) {
      msp_status st = msp__safe_write(w->f, w->zout, have);
      if (st != MSP_SUCCESS) return st;
    }
    if (flush == Z_FINISH ? ret == Z_STREAM_END : w->z.avail_out != 0) return MSP_SUCCESS;
  }
}

static msp_status writer_put(mtx_writer *w, const char *s, size_t n) {
  if (!w->gzip) return msp__safe_write(w->f, s, n);
  w->z.next_in = (Bytef *)(uintptr_t)s;
  w->z.avail_in = (uInt)n;
  return writer_deflate(w, Z_NO_FLUSH);
}

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), t = strlen(tail);
  return n >= t && strcmp(s + n - t, tail) == 0;
}

// The text of v as a Matrix Market array (%.17g, '.' whatever the locale).
static msp_status write_vector_text(mtx_writer *w, msp_vector v) {
  msp_status st = MSP_SUCCESS;
  const msp_acc acc = msp__vector_acc(v, 0); // the stored values, decoded one by one
  const char *dp = localeconv()->decimal_point;
  char sep = (dp && dp[0] && !dp[1]) ? dp[0] : '.';
  char head[128];
  int k = snprintf(head, sizeof head,
                   "%%%%MatrixMarket matrix array real general\n%% written by mixsparse\n%lld 1\n",
                   (long long)v->n);
  MSP_TRY(writer_put(w, head, (size_t)k));
  for (int64_t i = 0; i < v->n; i++) {
    char num[64];
    k = snprintf(num, sizeof num, "%.17g\n", msp_acc_load(&acc, i));
    if (sep != '.')
      for (int c = 0; c < k; c++)
        if (num[c] == sep) num[c] = '.';
    MSP_TRY(writer_put(w, num, (size_t)k));
  }
  if (w->gzip) MSP_TRY(writer_deflate(w, Z_FINISH));
exit:
  return st;
}

msp_status msp_vector_write_mtx(msp_vector v, const char *path) {
  msp_status st = MSP_SUCCESS;
  mtx_writer *w = NULL;
  MSP_TRY(msp__check_vector(v, "msp_vector_write_mtx", "v"));
  MSP_CHECK_ARG(path && path[0], "msp_vector_write_mtx: path is NULL or empty");
  MSP_TRY(msp__vector_on_host(v));
  MSP_TRY(MSP_ALLOC_ZERO(w, 1, "Matrix Market writer"));
  w->name = path;
  w->gzip = ends_with(path, ".gz");
  if (w->gzip) {
    w->z.zalloc = msp__zalloc;
    w->z.zfree = msp__zfree;
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
    int ret =
        deflateInit2(&w->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    if (ret != Z_OK) {
      st = ret == Z_MEM_ERROR
               ? msp__error(MSP_ERR_OUT_OF_MEMORY, "cannot write %s: zlib has no memory", path)
               : msp__error(MSP_ERR_IO, "cannot write %s: zlib deflateInit2 failed", path);
      goto exit;
    }
    w->zinit = true;
  }
  MSP_TRY(msp__safe_open(path, &w->f));
  MSP_TRY(write_vector_text(w, v));
  MSP_TRY(msp__safe_commit(&w->f));
exit:
  if (w) {
    if (w->zinit) deflateEnd(&w->z);
    msp__safe_abort(&w->f);
  }
  msp__free(w);
  return st;
}

// mtx_write.c: Matrix Market output (dense vectors, plain or gzip) that never loses a file.
//
// The output goes to a temporary file in the target's directory, is flushed to the disk (fsync),
// and only then renamed over the target; a symbolic link is followed, so the file it points to
// is replaced and the link itself stays. zlib's deflate allocates through the library allocator.
#define _POSIX_C_SOURCE 200809L // lstat, readlink, fsync, fchmod, O_CLOEXEC under -std=c11
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

// ---- writing ------------------------------------------------------------------------------------
msp_status msp__same_file(const char *a, const char *b, int *same) {
  struct stat sa, sb;
  MSP_CHECK_ARG(a && b && same, "msp__same_file: NULL argument");
  *same = 0;
  const char *paths[2] = {a, b};
  struct stat *sts[2] = {&sa, &sb};
  for (int k = 0; k < 2; k++) {
    if (stat(paths[k], sts[k]) == 0) continue;
    if (errno == ENOENT || errno == ENOTDIR) return MSP_SUCCESS; // a file that does not exist
    return msp__error(MSP_ERR_IO, "%s: cannot examine: %s", paths[k], strerror(errno));
  }
  *same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return MSP_SUCCESS;
}

// A copy of `n` bytes of s followed by `tail` (NUL-terminated), allocated through the library.
static msp_status path_join(char **out, const char *s, size_t n, const char *tail) {
  size_t t = strlen(tail);
  msp_status st = msp__alloc((void **)out, n + t + 1, 1, "file name");
  if (st != MSP_SUCCESS) return st;
  memcpy(*out, s, n);
  memcpy(*out + n, tail, t + 1);
  return MSP_SUCCESS;
}

// The file that writing `path` must replace: symbolic links followed (a relative link from the
// link's directory), so the link stays a link. The final name need not exist.
static msp_status resolve_target(const char *path, char **out) {
  msp_status st = MSP_SUCCESS;
  char *cur = NULL, *link = NULL, *next = NULL;
  *out = NULL;
  MSP_TRY(path_join(&cur, path, strlen(path), ""));
  for (int hops = 0;; hops++) {
    struct stat sb;
    if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) break;
    if (hops == 40) {
      st = msp__error(MSP_ERR_IO, "cannot write %s: more than 40 symbolic links to follow", path);
      goto exit;
    }
    size_t cap = sb.st_size > 0 ? (size_t)sb.st_size + 1 : 4096;
    MSP_TRY(msp__alloc((void **)&link, cap, 1, "symbolic link target"));
    ssize_t n = readlink(cur, link, cap);
    if (n < 0 || (size_t)n >= cap) {
      st = msp__error(MSP_ERR_IO, "cannot write %s: cannot read the symbolic link %s: %s", path,
                      cur, n < 0 ? strerror(errno) : "its target changed while being read");
      goto exit;
    }
    link[n] = '\0';
    const char *slash = strrchr(cur, '/');
    if (link[0] == '/' || !slash)
      MSP_TRY(path_join(&next, link, (size_t)n, ""));
    else
      MSP_TRY(path_join(&next, cur, (size_t)(slash - cur) + 1, link));
    MSP_FREE(link);
    msp__free(cur);
    cur = next;
    next = NULL;
  }
  *out = cur;
  cur = NULL;
exit:
  msp__free(cur);
  msp__free(link);
  msp__free(next);
  return st;
}

// Output stream of a writer: plain, or gzip through deflate driven directly (as the reader
// drives inflate, so its allocations go through the library allocator too).
typedef struct {
  const char *name; // the target, for messages
  FILE *f;
  bool gzip, zinit;
  z_stream z;
  unsigned char zout[1 << 14];
} mtx_writer;

static msp_status writer_fail(const mtx_writer *w, int err) {
  return msp__error(MSP_ERR_IO, "cannot write %s: %s (the previous file, if any, is unchanged)",
                    w->name, strerror(err));
}

// Deflate what is in w->z with `flush`, writing the compressed bytes out.
static msp_status writer_deflate(mtx_writer *w, int flush) {
  for (;;) {
    w->z.next_out = w->zout;
    w->z.avail_out = (uInt)sizeof w->zout;
    int ret = deflate(&w->z, flush);
    if (ret == Z_STREAM_ERROR)
      return msp__error(MSP_ERR_IO, "cannot write %s: zlib deflate failed", w->name);
    size_t have = sizeof w->zout - w->z.avail_out;
    if (have && fwrite(w->zout, 1, have, w->f) != have) return writer_fail(w, errno);
    if (flush == Z_FINISH ? ret == Z_STREAM_END : w->z.avail_out != 0) return MSP_SUCCESS;
  }
}

static msp_status writer_put(mtx_writer *w, const char *s, size_t n) {
  if (!w->gzip) return fwrite(s, 1, n, w->f) == n ? MSP_SUCCESS : writer_fail(w, errno);
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

// Make the directory entry of a rename durable (best effort: some file systems refuse).
static void sync_directory(const char *target) {
  const char *slash = strrchr(target, '/');
  char *dir = NULL;
  if (path_join(&dir, slash ? target : ".", slash ? (size_t)(slash - target) + 1 : 1, "") !=
      MSP_SUCCESS) {
    msp__clear_error();
    return;
  }
  int fd = open(dir, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  msp__free(dir);
}

msp_status msp_vector_write_mtx(msp_vector v, const char *path) {
  msp_status st = MSP_SUCCESS;
  char *target = NULL, *tmp = NULL;
  int fd = -1;
  mtx_writer *w = NULL;
  MSP_TRY(msp__check_vector(v, "msp_vector_write_mtx", "v"));
  MSP_CHECK_ARG(path && path[0], "msp_vector_write_mtx: path is NULL or empty");
  MSP_TRY(msp__vector_on_host(v));
  MSP_TRY(MSP_ALLOC_ZERO(w, 1, "Matrix Market writer"));
  w->name = path;
  w->gzip = ends_with(path, ".gz");
  {
    // A device or a pipe (/dev/stdout, a FIFO) cannot be replaced by a rename: it is written in
    // place, as there is no previous content to keep.
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
      w->f = fopen(path, "wb");
      if (!w->f) {
        st = writer_fail(w, errno);
        goto exit;
      }
    }
  }
  if (!w->f) MSP_TRY(resolve_target(path, &target));
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
  // The temporary file: next to the target (so rename replaces it atomically, on the same file
  // system), hidden, with a name no other writer picks (process id and a counter).
  if (target) {
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    const size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    static unsigned counter = 0;
    for (int attempt = 0; fd < 0; attempt++) {
      char tail[512];
      snprintf(tail, sizeof tail, ".%.400s.tmp-%ld-%u", base, (long)getpid(), counter++);
      MSP_FREE(tmp);
      MSP_TRY(path_join(&tmp, target, dirlen, tail));
      fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0 && (errno != EEXIST || attempt == 100)) {
        st = msp__error(MSP_ERR_IO,
                        "cannot write %s: cannot create a temporary file in its directory: %s "
                        "(the previous file, if any, is unchanged)",
                        path, strerror(errno));
        goto exit;
      }
    }
  }
  if (target) {
    // Replacing a file keeps its permission bits; a new one gets 0666 less the umask (open).
    struct stat sb;
    if (stat(target, &sb) == 0) (void)fchmod(fd, sb.st_mode & 07777);
    w->f = fdopen(fd, "wb");
    if (!w->f) {
      st = writer_fail(w, errno);
      goto exit;
    }
    fd = -1; // owned by w->f now
  }
  MSP_TRY(write_vector_text(w, v));
  if (fflush(w->f) != 0 || (target && fsync(fileno(w->f)) != 0)) {
    st = writer_fail(w, errno);
    goto exit;
  }
  {
    FILE *f = w->f;
    w->f = NULL;
    if (fclose(f) != 0) {
      st = writer_fail(w, errno);
      goto exit;
    }
  }
  if (target) {
    if (rename(tmp, target) != 0) {
      st = writer_fail(w, errno);
      goto exit;
    }
    MSP_FREE(tmp); // renamed: nothing to remove
    sync_directory(target);
  }
exit:
  if (w) {
    if (w->zinit) deflateEnd(&w->z);
    if (w->f) fclose(w->f);
  }
  if (fd >= 0) close(fd);
  if (tmp) unlink(tmp); // only the temporary file: the target is never removed
  msp__free(tmp);
  msp__free(target);
  msp__free(w);
  return st;
}

// mtx_input.c: the input layer of the Matrix Market reader (mtx_input.h): raw bytes -> (gzip
// inflate) -> a line buffer. zlib's inflate is driven directly (not gzopen) so that its
// allocations go through the library allocator too and every failure, including a truncated or
// corrupt stream, is seen and reported with its own status.
#include "mtx_input.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// Report an error at the reader's current line: "NAME line N: what".
msp_status msp__mtx_fail(const msp__mtx_reader *r, msp_status s, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return msp__error(s, "%s line %lld: %s", r->name, (long long)(r->lineno > 0 ? r->lineno : 1),
                    what);
}

void *msp__zalloc(void *opaque, unsigned items, unsigned size) {
  (void)opaque;
  if (size && items > SIZE_MAX / size) return NULL;
  return msp__malloc((size_t)items * size);
}
void msp__zfree(void *opaque, void *p) {
  (void)opaque;
  msp__free(p);
}

// Read up to n raw bytes into dst; *got < n only at the end of the input.
static msp_status raw_read(msp__mtx_reader *r, void *dst, size_t n, size_t *got) {
  *got = 0;
  if (r->raw_eof) return MSP_SUCCESS;
  if (r->file) {
    *got = fread(dst, 1, n, r->file);
    if (*got < n) {
      if (ferror(r->file)) return msp__mtx_fail(r, MSP_ERR_IO, "read error: %s", strerror(errno));
      r->raw_eof = true;
    }
    return MSP_SUCCESS;
  }
  size_t left = r->mem_size - r->mem_pos;
  *got = left < n ? left : n;
  if (*got) memcpy(dst, r->mem + r->mem_pos, *got);
  r->mem_pos += *got;
  if (r->mem_pos == r->mem_size) r->raw_eof = true;
  return MSP_SUCCESS;
}

// Map an inflate failure to a status: out of memory, or a corrupt stream (with zlib's reason).
static msp_status gzip_fail(msp__mtx_reader *r, int ret) {
  if (ret == Z_MEM_ERROR)
    return msp__mtx_fail(r, MSP_ERR_OUT_OF_MEMORY, "out of memory while decompressing");
  return msp__mtx_fail(r, MSP_ERR_MM_GZIP, "corrupt gzip stream (%s)",
                       r->z.msg ? r->z.msg : "inflate failed");
}

// Allocate the buffers and look at the first bytes to decide between plain text and gzip.
msp_status msp__mtx_start(msp__mtx_reader *r) {
  msp_status st = MSP_SUCCESS;
  size_t got = 0;
  r->cap = MTX_CHUNK;
  MSP_TRY(MSP_ALLOC(r->buf, r->cap, "Matrix Market line buffer"));
  MSP_TRY(raw_read(r, r->buf, r->cap, &got));
  if (got >= 2 && (unsigned char)r->buf[0] == 0x1f && (unsigned char)r->buf[1] == 0x8b) {
    r->gzip = true;
    MSP_TRY(MSP_ALLOC(r->zin, MTX_CHUNK, "gzip input buffer"));
    memcpy(r->zin, r->buf, got);
    r->z.zalloc = msp__zalloc;
    r->z.zfree = msp__zfree;
    r->z.opaque = NULL;
    r->z.next_in = r->zin;
    r->z.avail_in = (uInt)got;
    int ret = inflateInit2(&r->z, 15 + 16); // 15-bit window, gzip wrapper
    if (ret != Z_OK) {
      st = gzip_fail(r, ret);
      goto exit;
    }
    r->zinit = true;
  } else {
    r->end = got;
    r->eof = r->raw_eof && got == 0;
  }
exit:
  return st;
}

// Inflate more text into buf[end, cap). Concatenated gzip members are read as one stream, as
// gzip(1) and gzread do; bytes after the last member that are not a gzip header are ignored.
static msp_status gzip_fill(msp__mtx_reader *r) {
  msp_status st = MSP_SUCCESS;
  for (;;) {
    if (r->zdone) {
      if (r->z.avail_in < 2 && !r->raw_eof) {
        size_t have = r->z.avail_in, got = 0;
        if (have) r->zin[0] = *r->z.next_in;
        MSP_TRY(raw_read(r, r->zin + have, MTX_CHUNK - have, &got));
        r->z.next_in = r->zin;
        r->z.avail_in = (uInt)(have + got);
      }
      if (r->z.avail_in >= 2 && r->z.next_in[0] == 0x1f && r->z.next_in[1] == 0x8b) {
        int ret = inflateReset(&r->z);
        if (ret != Z_OK) return gzip_fail(r, ret);
        r->zdone = false;
      } else {
        r->eof = true;
        return MSP_SUCCESS;
      }
    }
    if (r->z.avail_in == 0 && !r->raw_eof) {
      size_t got = 0;
      MSP_TRY(raw_read(r, r->zin, MTX_CHUNK, &got));
      r->z.next_in = r->zin;
      r->z.avail_in = (uInt)got;
    }
    uInt room = (uInt)(r->cap - r->end);
    r->z.next_out = (Bytef *)r->buf + r->end;
    r->z.avail_out = room;
    int ret = inflate(&r->z, Z_NO_FLUSH);
    size_t produced = room - r->z.avail_out;
    r->end += produced;
    if (ret == Z_STREAM_END) {
      r->zdone = true;
    } else if (ret == Z_BUF_ERROR) {
      // No progress was possible: with no input left the stream was cut short.
      if (r->z.avail_in == 0 && r->raw_eof)
        return msp__mtx_fail(r, MSP_ERR_MM_GZIP, "corrupt gzip stream (truncated)");
    } else if (ret != Z_OK) {
      return gzip_fail(r, ret);
    }
    if (produced > 0) return MSP_SUCCESS;
  }
exit:
  return st;
}

// Make room and decode more text after buf[end]; sets eof when nothing more will come.
static msp_status reader_fill(msp__mtx_reader *r) {
  msp_status st = MSP_SUCCESS;
  if (r->beg > 0) {
    memmove(r->buf, r->buf + r->beg, r->end - r->beg);
    r->end -= r->beg;
    r->scan -= r->beg;
    r->beg = 0;
  }
  if (r->end == r->cap) {
    if (r->cap >= MTX_MAX_LINE) {
      r->lineno++; // the line being assembled
      return msp__mtx_fail(r, MSP_ERR_MM_VALUE, "line longer than %zu MiB", MTX_MAX_LINE >> 20);
    }
    char *grown = msp__realloc(r->buf, 2 * r->cap);
    if (!grown)
      return msp__mtx_fail(r, MSP_ERR_OUT_OF_MEMORY, "cannot grow the line buffer to %zu bytes",
                           2 * r->cap);
    r->buf = grown;
    r->cap *= 2;
  }
  if (r->gzip) return gzip_fill(r);
  size_t got = 0;
  MSP_TRY(raw_read(r, r->buf + r->end, r->cap - r->end, &got));
  r->end += got;
  if (got == 0 && r->raw_eof) r->eof = true;
exit:
  return st;
}

// Hand out the next line (without its '\n'); *got is false at the end of the input.
msp_status msp__mtx_line(msp__mtx_reader *r, const char **line, size_t *len, bool *got) {
  msp_status st = MSP_SUCCESS;
  *got = false;
  for (;;) {
    char *nl = r->end > r->scan ? memchr(r->buf + r->scan, '\n', r->end - r->scan) : NULL;
    if (nl) {
      *line = r->buf + r->beg;
      *len = (size_t)(nl - (r->buf + r->beg));
      r->beg = r->scan = (size_t)(nl - r->buf) + 1;
      break;
    }
    r->scan = r->end;
    if (r->eof) {
      if (r->beg == r->end) return MSP_SUCCESS;
      *line = r->buf + r->beg; // last line without a final '\n'
      *len = r->end - r->beg;
      r->beg = r->scan = r->end;
      break;
    }
    MSP_TRY(reader_fill(r));
  }
  r->lineno++;
  *got = true;
exit:
  return st;
}

// Settle the status of a failed read. After a parse error in a gzip file, decode the rest: when
// the stream itself is corrupt, that is the real cause (a flipped byte can decode to garbage text
// before the CRC check fails), so it replaces the parse error. Messages from outside the parser
// (allocation failures, building the matrix) get the file name in front.
msp_status msp__mtx_settle(msp__mtx_reader *r, msp_status st) {
  if (st == MSP_SUCCESS || !r->name) return st;
  char saved[8192]; // as msp_last_error's buffer (status.c)
  snprintf(saved, sizeof saved, "%s", msp_last_error());
  // Bytes a corrupt stream's garbage turns into a parse error within: a stream damaged before
  // the error is found that close to it (zlib's data checks, or its end and CRC-32); one that
  // reads on is left alone, so an early error is reported at once instead of after inflating
  // the rest of a file of any size (the CRC check is for the files that parsed).
  if (r->gzip && st != MSP_ERR_MM_GZIP && st != MSP_ERR_OUT_OF_MEMORY && st != MSP_ERR_IO) {
    size_t drained = 0;
    while (!r->eof && drained < MTX_GZIP_DRAIN) {
      r->beg = r->end = r->scan = 0;
      msp_status drain = gzip_fill(r);
      if (drain == MSP_ERR_MM_GZIP) return drain;
      if (drain != MSP_SUCCESS) break;
      drained += r->end;
    }
  }
  size_t n = strlen(r->name);
  if (strncmp(saved, r->name, n) == 0 && (saved[n] == ' ' || saved[n] == ':'))
    return msp__error(st, "%s", saved);
  return msp__error(st, "%s: %s", r->name, saved);
}

void msp__mtx_close(msp__mtx_reader *r) {
  if (r->zinit) inflateEnd(&r->z);
  if (r->file) fclose(r->file);
  msp__free(r->zin);
  msp__free(r->buf);
  memset(r, 0, sizeof *r);
}

// Open a file for the reader; ERR_IO with the system's reason when it cannot be opened.
msp_status msp__mtx_open_file(msp__mtx_reader *r, const char *path) {
  memset(r, 0, sizeof *r);
  r->name = path;
  r->file = fopen(path, "rb");
  if (!r->file) return msp__error(MSP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  return MSP_SUCCESS;
}

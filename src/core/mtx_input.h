// mtx_input.h: the input layer of the Matrix Market reader (mtx_input.c): raw bytes from a file
// or a memory block, gzip inflate when the content starts with the gzip magic bytes, and lines;
// mtx.c parses the lines.
#ifndef MSP_MTX_INPUT_H
#define MSP_MTX_INPUT_H

#include "internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <zlib.h>

// Decoded bytes read per refill, and the initial size of the line buffer. The fuzz build makes
// it tiny (MSP_MTX_CHUNK=16) so that small inputs cross every refill and growth boundary.
#ifdef MSP_MTX_CHUNK
#define MTX_CHUNK ((size_t)MSP_MTX_CHUNK)
#else
#define MTX_CHUNK ((size_t)1 << 16)
#endif
// After a parse error in a gzip file, at most this many more bytes are inflated to tell a corrupt
// stream (MSP_ERR_MM_GZIP) from a bad text (see msp__mtx_settle).
#define MTX_GZIP_DRAIN ((size_t)1 << 20)
// A line longer than this is refused instead of growing the buffer without bound (the Matrix
// Market specification limits lines to 1024 characters; comments in the wild are longer).
#define MTX_MAX_LINE ((size_t)64 << 20)
typedef struct {
  const char *name; // file name (or the caller's label) used in messages
  // raw bytes: a file or a memory block
  FILE *file;
  const unsigned char *mem;
  size_t mem_size, mem_pos;
  bool raw_eof;
  // gzip decoding
  bool gzip, zinit, zdone;
  z_stream z;
  unsigned char *zin;
  // decoded text: buf[beg, end) not yet handed out; the search for '\n' resumes at scan
  char *buf;
  size_t cap, beg, end, scan;
  bool eof;       // no more decoded bytes will come
  int64_t lineno; // number of the last line handed out (1-based)
} msp__mtx_reader;

// Report an error at the reader's current line: "NAME line N: what".
msp_status msp__mtx_fail(const msp__mtx_reader *r, msp_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
// Open a file for the reader (r is reset first); ERR_IO with the system's reason.
msp_status msp__mtx_open_file(msp__mtx_reader *r, const char *path);
// Allocate the buffers and look at the first bytes to decide between plain text and gzip.
msp_status msp__mtx_start(msp__mtx_reader *r);
// Hand out the next line (without its '\n'); *got is false at the end of the input.
msp_status msp__mtx_line(msp__mtx_reader *r, const char **line, size_t *len, bool *got);
// Settle the status of a failed read (a gzip stream found corrupt within MTX_GZIP_DRAIN bytes
// after a parse error replaces it; messages
// from outside the parser get the file name in front).
msp_status msp__mtx_settle(msp__mtx_reader *r, msp_status st);
// Free what the reader holds and close its file; r is zeroed.
void msp__mtx_close(msp__mtx_reader *r);

#endif

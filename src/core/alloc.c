// alloc.c: host memory through the installed allocator, with overflow-checked helpers.
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static msp_allocator allocator = {malloc, realloc, free};

msp_status msp_set_allocator(const msp_allocator *alloc) {
  if (!alloc) {
    allocator = (msp_allocator){malloc, realloc, free};
    return MSP_SUCCESS;
  }
  MSP_CHECK_ARG(alloc->malloc_fn && alloc->realloc_fn && alloc->free_fn,
                "msp_set_allocator: every function pointer must be set");
  allocator = *alloc;
  return MSP_SUCCESS;
}

// A zero-byte request still returns a unique pointer (1 byte), so NULL always means failure.
void *msp__malloc(size_t bytes) {
  return allocator.malloc_fn(bytes ? bytes : 1);
}

void *msp__calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  void *p = msp__malloc(count * size);
  size_t bytes = count * size;
  if (p) memset(p, 0, bytes > 0 ? bytes : 1);
  return p;
}

void *msp__realloc(void *p, size_t bytes) {
  return allocator.realloc_fn(p, bytes ? bytes : 1);
}

void msp__free(void *p) {
  if (p) allocator.free_fn(p);
}

msp_status msp__alloc(void **out, size_t count, size_t size, const char *what) {
  *out = NULL;
  if (size && count > SIZE_MAX / size)
    return msp__error(MSP_ERR_OUT_OF_MEMORY, "%s: %zu x %zu bytes overflows size_t", what, count,
                      size);
  *out = msp__malloc(count * size);
  if (!*out)
    return msp__error(MSP_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", what, count * size);
  return MSP_SUCCESS;
}

msp_status msp__alloc_zero(void **out, size_t count, size_t size, const char *what) {
  msp_status st = msp__alloc(out, count, size, what);
  size_t bytes = count * size;
  if (st == MSP_SUCCESS) memset(*out, 0, bytes > 0 ? bytes : 1);
  return st;
}

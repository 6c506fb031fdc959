// alloc.c: host memory through the installed allocator, with overflow-checked helpers, and the
// count of the library's live host bytes that the memory budget holds against.
#include "internal.h"

#include <stdatomic.h>
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

// Every block carries its size in a header in front of it, so that the library knows the host
// bytes it holds and msp_set_memory_limit holds at every allocation, not only for the estimates
// that operations make up front. 16 bytes keep the caller's block aligned as malloc's.
#define HEADER 16
static _Atomic size_t live_bytes = 0;

size_t msp__memory_in_use(void) {
  return atomic_load(&live_bytes);
}

// Count `bytes` more as live when the budget has room for them; 0 (nothing counted) otherwise.
static int admit(size_t bytes) {
  const size_t limit = msp__memory_limit_bytes();
  size_t cur = atomic_load(&live_bytes);
  do {
    if (bytes > limit || cur > limit - bytes) return 0;
  } while (!atomic_compare_exchange_weak(&live_bytes, &cur, cur + bytes));
  return 1;
}
static void release(size_t bytes) {
  atomic_fetch_sub(&live_bytes, bytes);
}

// A zero-byte request still returns a unique pointer (1 byte), so NULL always means failure.
// *over_budget (may be NULL) tells a refusal of the budget from one of the allocator.
static void *block_alloc(size_t bytes, int *over_budget) {
  const size_t b = bytes ? bytes : 1;
  if (over_budget) *over_budget = 0;
  if (b > SIZE_MAX - HEADER) return NULL;
  if (!admit(b)) {
    if (over_budget) *over_budget = 1;
    return NULL;
  }
  unsigned char *p = allocator.malloc_fn(b + HEADER);
  if (!p) {
    release(b);
    return NULL;
  }
  memcpy(p, &b, sizeof b);
  return p + HEADER;
}

void *msp__malloc(size_t bytes) {
  return block_alloc(bytes, NULL);
}

void *msp__calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  void *p = msp__malloc(count * size);
  size_t bytes = count * size;
  if (p) memset(p, 0, bytes > 0 ? bytes : 1);
  return p;
}

void *msp__realloc(void *p, size_t bytes) {
  if (!p) return msp__malloc(bytes);
  const size_t b = bytes ? bytes : 1;
  unsigned char *base = (unsigned char *)p - HEADER;
  size_t old;
  memcpy(&old, base, sizeof old);
  if (b > SIZE_MAX - HEADER) return NULL;
  if (b > old && !admit(b - old)) return NULL;
  unsigned char *q = allocator.realloc_fn(base, b + HEADER);
  if (!q) {
    if (b > old) release(b - old);
    return NULL; // the old block stays valid and counted
  }
  if (b < old) release(old - b);
  memcpy(q, &b, sizeof b);
  return q + HEADER;
}

void msp__free(void *p) {
  if (!p) return;
  unsigned char *base = (unsigned char *)p - HEADER;
  size_t b;
  memcpy(&b, base, sizeof b);
  release(b);
  allocator.free_fn(base);
}

msp_status msp__alloc(void **out, size_t count, size_t size, const char *what) {
  *out = NULL;
  if (size && count > SIZE_MAX / size)
    return msp__error(MSP_ERR_OUT_OF_MEMORY, "%s: %zu x %zu bytes overflows size_t", what, count,
                      size);
  int over_budget = 0;
  *out = block_alloc(count * size, &over_budget);
  if (!*out && over_budget) return msp__memory_check(count * size, what);
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

// status.c: status names and strings, the thread-local last-error message, enum tags.
#include "internal.h"

#include <stdio.h>
#include <string.h>

// Room for a message naming a path at the system's length limit (PATH_MAX, 4096) and the reason.
static _Thread_local char last_error[8192];

const char *msp_status_name(msp_status s) {
  switch (s) {
#define MSP_STATUS_NAME_(name, code, text)                                                         \
  case MSP_##name:                                                                                 \
    return #name;
    MSP_STATUS_MAP(MSP_STATUS_NAME_)
#undef MSP_STATUS_NAME_
  default:
    return "UNKNOWN";
  }
}

const char *msp_status_string(msp_status s) {
  switch (s) {
#define MSP_STATUS_TEXT_(name, code, text)                                                         \
  case MSP_##name:                                                                                 \
    return text;
    MSP_STATUS_MAP(MSP_STATUS_TEXT_)
#undef MSP_STATUS_TEXT_
  default:
    return "unknown status";
  }
}

const char *msp_last_error(void) {
  return last_error;
}

msp_status msp__error(msp_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return s;
}

void msp__clear_error(void) {
  last_error[0] = '\0';
}

// ---- tags -----------------------------------------------------------------------------------
static const char *format_tags[] = {
#define MSP_FORMAT_TAG_(name, tag, ident) tag,
    MSP_FORMAT_LIST(MSP_FORMAT_TAG_)
#undef MSP_FORMAT_TAG_
};
static const char *precision_tags[] = {
#define MSP_PRECISION_TAG_(name, tag, bytes) tag,
    MSP_PRECISION_LIST(MSP_PRECISION_TAG_)
#undef MSP_PRECISION_TAG_
};
static const char *kernel_tags[] = {"auto", "scalar", "vector", "merge"};
static const char *backend_tags[] = {"auto", "cpu", "cuda"};

const char *msp_format_name(msp_format f) {
  if (f == MSP_FORMAT_AUTO) return "auto";
  if (f == MSP_FORMAT_TUNE) return "tune";
  if ((unsigned)f < MSP_FORMAT_COUNT) return format_tags[f];
  return NULL;
}
const char *msp_kernel_name(msp_kernel k) {
  return (unsigned)k < MSP_KERNEL_COUNT ? kernel_tags[k] : NULL;
}
const char *msp_precision_name(msp_precision p) {
  return (unsigned)p < MSP_PRECISION_COUNT ? precision_tags[p] : NULL;
}
const char *msp_backend_name(msp_backend b) {
  return (unsigned)b <= MSP_BACKEND_CUDA ? backend_tags[b] : NULL;
}

// Look tag up in names[0..n); on failure the message lists the valid tags.
static msp_status parse_tag(const char *what, const char *tag, const char *const *names, int n,
                            const char *extra, int *out) {
  if (!tag) return msp__error(MSP_ERR_INVALID_ARGUMENT, "%s: NULL tag", what);
  for (int i = 0; i < n; i++)
    if (strcmp(tag, names[i]) == 0) {
      *out = i;
      return MSP_SUCCESS;
    }
  char list[512];
  size_t len = 0;
  list[0] = '\0';
  for (int i = 0; i < n && len < sizeof list; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
  return msp__error(MSP_ERR_INVALID_ARGUMENT, "unknown %s '%s' (valid: %s%s)", what, tag, list,
                    extra ? extra : "");
}

msp_status msp_format_parse(const char *tag, msp_format *out) {
  MSP_CHECK_ARG(out, "msp_format_parse: out is NULL");
  if (tag && strcmp(tag, "auto") == 0) {
    *out = MSP_FORMAT_AUTO;
    return MSP_SUCCESS;
  }
  if (tag && strcmp(tag, "tune") == 0) {
    *out = MSP_FORMAT_TUNE;
    return MSP_SUCCESS;
  }
  int i = 0;
  msp_status st = parse_tag("format", tag, format_tags, MSP_FORMAT_COUNT, ", auto, tune", &i);
  if (st == MSP_SUCCESS) *out = (msp_format)i;
  return st;
}
msp_status msp_kernel_parse(const char *tag, msp_kernel *out) {
  MSP_CHECK_ARG(out, "msp_kernel_parse: out is NULL");
  int i = 0;
  msp_status st = parse_tag("kernel", tag, kernel_tags, MSP_KERNEL_COUNT, NULL, &i);
  if (st == MSP_SUCCESS) *out = (msp_kernel)i;
  return st;
}
msp_status msp_precision_parse(const char *tag, msp_precision *out) {
  MSP_CHECK_ARG(out, "msp_precision_parse: out is NULL");
  int i = 0;
  msp_status st = parse_tag("precision", tag, precision_tags, MSP_PRECISION_COUNT, NULL, &i);
  if (st == MSP_SUCCESS) *out = (msp_precision)i;
  return st;
}
msp_status msp_backend_parse(const char *tag, msp_backend *out) {
  MSP_CHECK_ARG(out, "msp_backend_parse: out is NULL");
  int i = 0;
  msp_status st = parse_tag("backend", tag, backend_tags, 3, NULL, &i);
  if (st == MSP_SUCCESS) *out = (msp_backend)i;
  return st;
}

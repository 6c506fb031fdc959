// json.c: the JSON writer of the program and the benchmark, over cJSON or, when the build has no
// cJSON, its own.
//
// JSON goes through cJSON (Debian's libcjson-dev, found by CMake) so that escaping and number
// printing are a well-kept library's, not printf's. The repository's CI installs no packages,
// so a machine without libcjson-dev must still build the program: then this file's small
// writer prints the same bytes (cJSON's unformatted layout and number rules), which keeps the
// golden tests byte-identical in both builds. Either way a non-finite number is written as null.
#include "json.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef MSP_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define JSON_MAX_DEPTH 8

struct json {
  int oom;          // an allocation failed: json_print reports it
  int depth;        // index of the innermost open object or array
  char nulled[256]; // names of the members written as null because they were not finite
#ifdef MSP_HAVE_CJSON
  cJSON *stack[JSON_MAX_DEPTH];
#else
  char *buf;
  size_t len, cap;
  int count[JSON_MAX_DEPTH];  // members written so far at each depth
  char close[JSON_MAX_DEPTH]; // '}' or ']'
#endif
};

static void note_null(json *j, const char *key) {
  size_t used = strlen(j->nulled);
  snprintf(j->nulled + used, sizeof j->nulled - used, "%s%s", used ? ", " : "", key ? key : "[]");
}

#ifdef MSP_HAVE_CJSON

json *json_new(void) {
  json *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->stack[0] = cJSON_CreateObject();
  if (!j->stack[0]) {
    free(j);
    return NULL;
  }
  return j;
}

// Add item to the innermost open object (under key) or array; an item that could not be made
// marks the document as failed.
static void add(json *j, const char *key, cJSON *item) {
  if (!item) {
    j->oom = 1;
    return;
  }
  cJSON *parent = j->stack[j->depth];
  cJSON_bool ok = cJSON_IsArray(parent) ? cJSON_AddItemToArray(parent, item)
                                        : cJSON_AddItemToObject(parent, key, item);
  if (!ok) {
    cJSON_Delete(item);
    j->oom = 1;
  }
}

static void open_container(json *j, const char *key, cJSON *item) {
  if (j->depth + 1 >= JSON_MAX_DEPTH) {
    cJSON_Delete(item);
    j->oom = 1;
    return;
  }
  add(j, key, item);
  if (item && !j->oom) j->stack[++j->depth] = item;
}

void json_object(json *j, const char *key) {
  open_container(j, key, cJSON_CreateObject());
}
void json_array(json *j, const char *key) {
  open_container(j, key, cJSON_CreateArray());
}
void json_end(json *j) {
  if (j->depth > 0) j->depth--;
}
void json_number(json *j, const char *key, double v) {
  if (!isfinite(v)) {
    note_null(j, key);
    add(j, key, cJSON_CreateNull());
  } else {
    add(j, key, cJSON_CreateNumber(v));
  }
}
void json_int(json *j, const char *key, long long v) {
  add(j, key, cJSON_CreateNumber((double)v));
}
void json_string(json *j, const char *key, const char *s) {
  add(j, key, cJSON_CreateString(s));
}
void json_bool(json *j, const char *key, int b) {
  add(j, key, cJSON_CreateBool(b));
}
void json_null(json *j, const char *key) {
  add(j, key, cJSON_CreateNull());
}

msp_status json_print(json *j, FILE *f) {
  msp_status st = MSP_ERR_OUT_OF_MEMORY;
  char *text = j->oom ? NULL : cJSON_PrintUnformatted(j->stack[0]);
  if (text) {
    fprintf(f, "%s\n", text);
    cJSON_free(text);
    st = MSP_SUCCESS;
  }
  json_free(j);
  return st;
}

void json_free(json *j) {
  if (!j) return;
  cJSON_Delete(j->stack[0]);
  free(j);
}

#else // the program's own writer, used only when the build found no cJSON

static void put(json *j, const char *s, size_t n) {
  if (j->oom) return;
  if (j->len + n + 1 > j->cap) {
    size_t cap = j->cap ? j->cap : 256;
    while (j->len + n + 1 > cap)
      cap *= 2;
    char *b = realloc(j->buf, cap);
    if (!b) {
      j->oom = 1;
      return;
    }
    j->buf = b;
    j->cap = cap;
  }
  memcpy(j->buf + j->len, s, n);
  j->len += n;
  j->buf[j->len] = '\0';
}

static void puts_j(json *j, const char *s) {
  put(j, s, strlen(s));
}

// A string with the escapes cJSON writes: the two that JSON requires, the short forms of the
// usual control characters and \u00XX for the rest below 0x20; other bytes as they are.
static void quoted(json *j, const char *s) {
  puts_j(j, "\"");
  for (; *s; s++) {
    char e[8];
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '"':
      puts_j(j, "\\\"");
      break;
    case '\\':
      puts_j(j, "\\\\");
      break;
    case '\b':
      puts_j(j, "\\b");
      break;
    case '\f':
      puts_j(j, "\\f");
      break;
    case '\n':
      puts_j(j, "\\n");
      break;
    case '\r':
      puts_j(j, "\\r");
      break;
    case '\t':
      puts_j(j, "\\t");
      break;
    default:
      if (c < 0x20) {
        snprintf(e, sizeof e, "\\u%04x", c);
        puts_j(j, e);
      } else {
        put(j, (const char *)&c, 1);
      }
    }
  }
  puts_j(j, "\"");
}

// The separator and the key of the next member of the innermost container.
static void member(json *j, const char *key) {
  if (j->count[j->depth]++) puts_j(j, ",");
  if (j->close[j->depth] == '}') {
    quoted(j, key ? key : "");
    puts_j(j, ":");
  }
}

json *json_new(void) {
  json *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->close[0] = '}';
  puts_j(j, "{");
  if (j->oom) {
    json_free(j);
    return NULL;
  }
  return j;
}

static void open_container(json *j, const char *key, char open, char close) {
  if (j->depth + 1 >= JSON_MAX_DEPTH) {
    j->oom = 1;
    return;
  }
  member(j, key);
  put(j, &open, 1);
  j->depth++;
  j->count[j->depth] = 0;
  j->close[j->depth] = close;
}

void json_object(json *j, const char *key) {
  open_container(j, key, '{', '}');
}
void json_array(json *j, const char *key) {
  open_container(j, key, '[', ']');
}
void json_end(json *j) {
  if (j->depth == 0) return;
  put(j, &j->close[j->depth], 1);
  j->depth--;
}

// Numbers as cJSON prints them: an integral value within int's range as an integer, else the
// shortest of 15 or 17 significant digits that reads back as the same double.
void json_number(json *j, const char *key, double v) {
  char b[32];
  if (!isfinite(v)) {
    note_null(j, key);
    json_null(j, key);
    return;
  }
  int as_int = v >= (double)INT_MAX ? INT_MAX : v <= (double)INT_MIN ? INT_MIN : (int)v;
  if (v == (double)as_int) {
    snprintf(b, sizeof b, "%d", as_int);
  } else {
    double back = 0;
    snprintf(b, sizeof b, "%1.15g", v);
    if (sscanf(b, "%lg", &back) != 1 ||
        fabs(back - v) > (fabs(back) > fabs(v) ? fabs(back) : fabs(v)) * DBL_EPSILON)
      snprintf(b, sizeof b, "%1.17g", v);
  }
  member(j, key);
  puts_j(j, b);
}
void json_int(json *j, const char *key, long long v) {
  json_number(j, key, (double)v);
}
void json_string(json *j, const char *key, const char *s) {
  member(j, key);
  quoted(j, s);
}
void json_bool(json *j, const char *key, int b) {
  member(j, key);
  puts_j(j, b ? "true" : "false");
}
void json_null(json *j, const char *key) {
  member(j, key);
  puts_j(j, "null");
}

msp_status json_print(json *j, FILE *f) {
  while (j->depth > 0)
    json_end(j);
  puts_j(j, "}");
  msp_status st = j->oom ? MSP_ERR_OUT_OF_MEMORY : MSP_SUCCESS;
  if (st == MSP_SUCCESS) fprintf(f, "%s\n", j->buf);
  json_free(j);
  return st;
}

void json_free(json *j) {
  if (!j) return;
  free(j->buf);
  free(j);
}

#endif

void json_status(json *j, const char *why) {
  if (!j->nulled[0] && !why) {
    json_string(j, "status", "ok");
    return;
  }
  char reason[512];
  snprintf(reason, sizeof reason, "%s%s%s%s", why ? why : "", why && j->nulled[0] ? "; " : "",
           j->nulled[0] ? "not finite, written as null: " : "", j->nulled);
  json_string(j, "status", "nonfinite");
  json_string(j, "status_reason", reason);
}

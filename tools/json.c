// json.c: the JSON writer of the program and the benchmark, over cJSON.
//
// JSON goes through cJSON (Debian's libcjson-dev, required by CMake) so that escaping and number
// printing are a well-kept library's, not printf's; there is no second writer to keep
// byte-identical with it (docs/design.md, "JSON"). A non-finite number is written as null.
#include "json.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define JSON_MAX_DEPTH 8

struct json {
  int oom;          // an allocation failed: json_print reports it
  int depth;        // index of the innermost open object or array
  char nulled[256]; // names of the members written as null because they were not finite
  cJSON *stack[JSON_MAX_DEPTH];
};

static void note_null(json *j, const char *key) {
  size_t used = strlen(j->nulled);
  snprintf(j->nulled + used, sizeof j->nulled - used, "%s%s", used ? ", " : "", key ? key : "[]");
}

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

static long printed; // documents printed on standard output

long json_printed(void) {
  return printed;
}

msp_status json_print(json *j, FILE *f) {
  msp_status st = MSP_ERR_OUT_OF_MEMORY;
  char *text = j->oom ? NULL : cJSON_PrintUnformatted(j->stack[0]);
  if (text) {
    fprintf(f, "%s\n", text);
    if (f == stdout) printed++;
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

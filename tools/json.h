// json.h: the JSON writer of the program and the benchmark (tools/json.c).
#ifndef MSP_TOOLS_JSON_H
#define MSP_TOOLS_JSON_H

#include "mixsparse.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---- JSON ---------------------------------------------------------------------------------
// A JSON document built member by member (through cJSON) and printed once, complete, by
// json_print.
// Numbers that are not finite are written as null and remembered, so that json_status can say
// which they were. Allocation failures are remembered too and reported by json_print.
typedef struct json json;
json *json_new(void);                       // the top-level object; NULL when out of memory
void json_object(json *j, const char *key); // open an object member (key NULL inside an array)
void json_array(json *j, const char *key);
void json_end(json *j); // close the innermost open object or array
void json_number(json *j, const char *key, double v);
void json_int(json *j, const char *key, long long v);
void json_string(json *j, const char *key, const char *s);
void json_bool(json *j, const char *key, int b);
void json_null(json *j, const char *key);
// "status": "ok", or "nonfinite" with "status_reason" naming the members written as null
// (after `why`, when not NULL). Call last, in the top-level object.
void json_status(json *j, const char *why);
// Print the document on one line to f and free it; MSP_SUCCESS or MSP_ERR_OUT_OF_MEMORY.
msp_status json_print(json *j, FILE *f);
// How many documents json_print wrote on standard output so far.
long json_printed(void);
void json_free(json *j);

#ifdef __cplusplus
}
#endif
#endif

// common.h: what the subcommands of the mixsparse program share: options, messages, inputs, JSON.
#ifndef MSP_TOOLS_COMMON_H
#define MSP_TOOLS_COMMON_H
#include "mixsparse.h"

#include <stdint.h>
#include <stdio.h>

extern const char *prog;

// Exit statuses of the program, the same for every subcommand (item 10 of issue 12).
enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

// Every option of the program, one bit each: a subcommand accepts a subset and refuses the
// rest, so an option is never silently without effect.
enum {
  OPT_JSON = 1 << 0,
  OPT_ACCURACY = 1 << 1,
  OPT_ALLOW_NONFINITE = 1 << 2,
  OPT_BACKEND = 1 << 3,
  OPT_FORMAT = 1 << 4,
  OPT_KERNEL = 1 << 5,
  OPT_PRECISION = 1 << 6,
  OPT_VPRECISION = 1 << 7,
  OPT_RANGE = 1 << 8,
  OPT_X = 1 << 9,
  OPT_OUTPUT = 1 << 10,
  OPT_REPEAT = 1 << 11,
  OPT_MAX_FILL = 1 << 12,
  OPT_DIGITS = 1 << 13,
  OPT_BDMP_F = 1 << 14,
  OPT_BDMP_LAMBDA = 1 << 15,
  // pagerank
  OPT_ALPHA = 1 << 16,
  OPT_TOL = 1 << 17,
  OPT_MAX_ITERS = 1 << 18,
  OPT_LAYOUT = 1 << 19,
  OPT_BANK = 1 << 20,
  OPT_WEIGHTED = 1 << 21,
  OPT_PERSONALIZE = 1 << 22,
  OPT_VALUES = 1 << 23,
  OPT_TOP = 1 << 24,
};

typedef struct {
  const char *file;
  msp_backend backend;
  msp_format format;
  msp_kernel kernel;
  msp_precision precision;
  int cpms_segments;
  msp_precision vprecision; // storage precision of x and y (--vector-precision)
  int vsegments;            // CPMS segments of x read by the products (0: all)
  const char *x_spec;
  const char *output;
  int repeat;
  int json;
  double max_fill;
  int accuracy;
  int digits;
  double bdmp_f;      // 0: the library default
  double bdmp_lambda; // 0: computed from bdmp_f
  int allow_nonfinite;
  int range;      // msp_range_policy for matrix values the precision cannot hold
  int help;       // --help or -h was given: print the help and nothing else
  unsigned given; // OPT_ bits of the options on the command line
  // pagerank
  const char *precision_arg; // --precision as given (pagerank reads f64|cpms2|cpms4|auto)
  int raw_precision;         // set by a subcommand whose --precision is not a storage precision
  double alpha, tol;
  int max_iters;
  int separate; // --layout separate
  int bank;     // --bank BYTES (0: the library's default)
  int weighted, values;
  const char *personalize;
  int top;
} options;

extern const char *const range_names[3]; // by msp_range_policy

void options_init(options *o);
// Parse argv[1..argc-1] (argv[0] is the subcommand's name) with getopt_long. `accepted` is the
// OPT_ mask of the subcommand; `file` 0: no FILE, 1: FILE required, 2: FILE optional. Returns
// EXIT_OK, or EXIT_USAGE after printing why.
int parse_options(int argc, char **argv, unsigned accepted, int file, options *o);

// "mixsparse: WHAT: MESSAGE (STATUS)", naming WHAT once when the library's message already
// starts with it; adds a hint for the options that would have accepted the input. Returns 1.
int fail(msp_status st, const char *what);
// "mixsparse: MESSAGE (try 'mixsparse --help')", MESSAGE as printf formats it. Returns 2.
int usage_error(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;

double now_s(void);

// A matrix from a file, or from the generator for "gen:SPEC".
msp_status load_matrix(msp_context ctx, const options *o, msp_matrix *A);
// x from "ones", "random:SEED" or a Matrix Market array file (--allow-nonfinite applies).
// Prints its own message on failure.
msp_status make_x(msp_context ctx, const options *o, int64_t n, double **out);

#include "json.h" // the JSON writer (tools/json.c), shared with bench/

#endif

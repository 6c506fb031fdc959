// common.h: what the subcommands of the mixsparse program share: options, messages, inputs, JSON.
#ifndef MSP_TOOLS_COMMON_H
#define MSP_TOOLS_COMMON_H
#include "mixsparse.h"

#include <stdint.h>
#include <stdio.h>

extern const char *prog;

// Exit statuses of the program, the same for every subcommand.
enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

// Every option of the program, one bit each: a subcommand accepts a subset and refuses the
// rest, so an option is never silently without effect.
typedef uint64_t opt_mask;
#define OPT_JSON (UINT64_C(1) << 0)
#define OPT_ACCURACY (UINT64_C(1) << 1)
#define OPT_ALLOW_NONFINITE (UINT64_C(1) << 2)
#define OPT_BACKEND (UINT64_C(1) << 3)
#define OPT_FORMAT (UINT64_C(1) << 4)
#define OPT_KERNEL (UINT64_C(1) << 5)
#define OPT_PRECISION (UINT64_C(1) << 6)
#define OPT_VPRECISION (UINT64_C(1) << 7)
#define OPT_RANGE (UINT64_C(1) << 8)
#define OPT_X (UINT64_C(1) << 9)
#define OPT_OUTPUT (UINT64_C(1) << 10)
#define OPT_REPEAT (UINT64_C(1) << 11)
#define OPT_MAX_FILL (UINT64_C(1) << 12)
#define OPT_DIGITS (UINT64_C(1) << 13)
#define OPT_BDMP_F (UINT64_C(1) << 14)
#define OPT_BDMP_LAMBDA (UINT64_C(1) << 15)
#define OPT_ALPHA (UINT64_C(1) << 16)
#define OPT_TOL (UINT64_C(1) << 17)
#define OPT_MAX_ITERS (UINT64_C(1) << 18)
#define OPT_LAYOUT (UINT64_C(1) << 19)
#define OPT_BANK (UINT64_C(1) << 20)
#define OPT_WEIGHTED (UINT64_C(1) << 21)
#define OPT_PERSONALIZE (UINT64_C(1) << 22)
#define OPT_VALUES (UINT64_C(1) << 23)
#define OPT_TOP (UINT64_C(1) << 24)
#define OPT_RHS (UINT64_C(1) << 25)
#define OPT_X0 (UINT64_C(1) << 26)
#define OPT_RESTART (UINT64_C(1) << 27)
#define OPT_RTOL (UINT64_C(1) << 28)
#define OPT_ATOL (UINT64_C(1) << 29)
#define OPT_BASIS (UINT64_C(1) << 30)
#define OPT_PRECOND (UINT64_C(1) << 31)
#define OPT_ORTHO (UINT64_C(1) << 32)
#define OPT_HISTORY (UINT64_C(1) << 33)
#define OPT_ORDER (UINT64_C(1) << 34)
#define OPT_THREADS (UINT64_C(1) << 36) // every command takes it (parse_options)
#define OPT_QUIET (UINT64_C(1) << 37)   // every command: no progress line
#define OPT_MONITOR (UINT64_C(1) << 35)

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
  opt_mask given; // OPT_ bits of the options on the command line
  // pagerank
  const char *precision_arg; // --precision as given (pagerank reads f64|cpms2|cpms4|auto)
  int raw_precision;         // set by a subcommand whose --precision is not a storage precision
  double alpha, tol;
  int max_iters;
  int separate; // --layout separate
  int bank;     // --bank BYTES (0: the library's default)
  int weighted, values;
  int order; // --order: msp_pagerank_order
  const char *personalize;
  int top;
  int monitor; // --monitor: a line per iteration, flushed as it goes (solve, pagerank)
  // solve
  const char *rhs, *x0, *history;
  int restart;
  double rtol, atol;
  msp_precision basis;
  int basis_auto;
  msp_precond precond;
  msp_ortho ortho;
  int threads; // --threads N: host threads of every operation (0: OpenMP's default)
  int quiet;   // --quiet: no progress line on stderr
} options;

extern const char *const range_names[3]; // by msp_range_policy

void options_init(options *o);
// Parse argv[1..argc-1] (argv[0] is the subcommand's name) with getopt_long. `accepted` is the
// OPT_ mask of the subcommand; `file` 0: no FILE, 1: FILE required, 2: FILE optional. Returns
// EXIT_OK, or EXIT_USAGE after printing why.
int parse_options(int argc, char **argv, opt_mask accepted, int file, options *o);

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

// The exit status rc of a command, after printing {"status": "error", ...} on standard output
// when --json was given, rc is not 0 and no JSON document was printed.
int command_exit(int rc);

// Every file the program writes goes through the library's safe writer (src/core/safe_write.c):
// written beside the target and renamed over it once complete (a symbolic link followed, a link
// planted at the temporary name never), so a failure leaves the previous file as it was and says
// why. EXIT_OK, or EXIT_FAILED after saying why.
int write_file_safely(const char *path, const char *data, size_t n);
// Refuse outputs that would replace an input or one another (links followed; for outputs that
// do not exist yet, the same name in the same directory): EXIT_USAGE after saying which,
// EXIT_OK otherwise. outs[k] (NULL: not given) is named by opts[k]; ins[k] may be NULL.
int check_outputs(int nout, const char *const *outs, const char *const *opts, int nin,
                  const char *const *ins);

// msp_vector_write_mtx, or for the path "-" the same Matrix Market text on standard output.
msp_status write_vector(msp_vector v, const char *path);

// msp_context_create with the host threads of --threads (every context of the command).
msp_status context_create(msp_backend backend, int device, msp_context *ctx);

// The conversion the options ask for (--format, --kernel, --precision, --max-fill, --range, the
// BDMP options); the library's defaults for what was not given.
msp_convert_options convert_options_of(const options *o);
// pagerank's --precision: f64, cpms2, cpms4 or auto (a usage error otherwise).
int parse_pagerank_mode(const char *v, msp_pagerank_precision *m);

// A matrix from a file, or from the generator for "gen:SPEC".
msp_status load_matrix(msp_context ctx, const options *o, msp_matrix *A);
// x from "ones", "random:SEED" or a Matrix Market array file (--allow-nonfinite applies).
// Prints its own message on failure.
msp_status make_x(msp_context ctx, const options *o, int64_t n, double **out);

#include "json.h"     // the JSON writer (tools/json.c), shared with bench/
#include "progress.h" // the progress line of long work

// Finish the document j (the status member, with `why` for nonfinite numbers; NULL for none),
// print it on stdout and free it. EXIT_OK, or EXIT_FAILED after saying why.
int json_finish(json *j, const char *why);

#endif

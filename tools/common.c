// common.c: option parsing, messages and inputs shared by the subcommands of the program.
#define _POSIX_C_SOURCE 200809L
#include "common.h"
#include "internal.h" // the safe writer, msp__same_file

#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *prog = "mixsparse";
const char *const range_names[3] = {"error", "saturate", "allow"};

void options_init(options *o) {
  memset(o, 0, sizeof *o);
  o->backend = MSP_BACKEND_AUTO;
  o->format = MSP_FORMAT_AUTO;
  o->kernel = MSP_KERNEL_AUTO;
  o->precision = MSP_PRECISION_F64;
  o->vprecision = MSP_PRECISION_F64;
  o->x_spec = "ones";
  o->repeat = 10;
  o->max_fill = 3.0;
  o->range = MSP_RANGE_ERROR;
}

msp_convert_options convert_options_of(const options *o) {
  msp_convert_options co = msp_convert_options_default();
  co.format = o->format;
  co.kernel = o->kernel;
  co.precision = o->precision;
  co.cpms_segments = o->cpms_segments;
  co.max_fill = o->max_fill;
  co.bdmp_digits = o->digits;
  if (o->bdmp_f > 0) co.bdmp_f = o->bdmp_f;
  co.bdmp_lambda = o->bdmp_lambda;
  co.range = o->range;
  return co;
}

int parse_pagerank_mode(const char *v, msp_pagerank_precision *m) {
  static const char *names[] = {"f64", "cpms2", "cpms4", "auto"};
  for (int k = 0; k < 4; k++)
    if (strcmp(v, names[k]) == 0) {
      *m = (msp_pagerank_precision)k;
      return EXIT_OK;
    }
  return usage_error("bad --precision '%s' for pagerank (f64, cpms2, cpms4 or auto)", v);
}

// The subcommand being run (its --help is the one a usage error points to), --json, and the
// first error's message, which command_exit prints as JSON when no document was printed.
static const char *cli_cmd;
static int cli_json;
static char cli_error[1024];

static void remember_error(const char *fmt, va_list ap) {
  if (!cli_error[0]) vsnprintf(cli_error, sizeof cli_error, fmt, ap);
}

static void remember(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  remember_error(fmt, ap);
  va_end(ap);
}

int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  va_start(ap, fmt);
  remember_error(fmt, ap);
  va_end(ap);
  fprintf(stderr, " (try '%s%s%s --help')\n", prog, cli_cmd ? " " : "", cli_cmd ? cli_cmd : "");
  return EXIT_USAGE;
}

int command_exit(int rc) {
  if (rc == EXIT_OK || !cli_json || json_printed() > 0) return rc;
  json *j = json_new();
  if (!j) return rc;
  json_string(j, "status", "error");
  json_int(j, "exit_status", rc);
  json_string(j, "message",
              cli_error[0]          ? cli_error
              : msp_last_error()[0] ? msp_last_error()
                                    : "failed (the message is on standard error)");
  json_print(j, stdout);
  return rc;
}

// The library speaks to programmers (MSP_READ_ALLOW_NONFINITE); the user of this program sets
// --allow-nonfinite, so the message names the option instead.
#define API_NONFINITE "MSP_READ_ALLOW_NONFINITE"

int fail(msp_status st, const char *what) {
  const char *msg = msp_last_error()[0] ? msp_last_error() : msp_status_string(st);
  size_t wl = strlen(what);
  // The library's message often starts with the file it read: name it once.
  int named = strncmp(msg, what, wl) == 0 && (msg[wl] == ':' || msg[wl] == ' ');
  fprintf(stderr, "%s: ", prog);
  if (!named) fprintf(stderr, "%s: ", what);
  const char *flag = strstr(msg, API_NONFINITE);
  if (flag) {
    fprintf(stderr, "%.*s--allow-nonfinite%s", (int)(flag - msg), msg,
            flag + strlen(API_NONFINITE));
    remember("%s%s%.*s--allow-nonfinite%s (%s)", named ? "" : what, named ? "" : ": ",
             (int)(flag - msg), msg, flag + strlen(API_NONFINITE), msp_status_name(st));
  } else {
    fputs(msg, stderr);
    remember("%s%s%s (%s)", named ? "" : what, named ? "" : ": ", msg, msp_status_name(st));
  }
  // No generic hint: --allow-nonfinite only admits non-finite values in the files read, and the
  // reader's message names it where it would help; a NaN or Inf that an operation refuses or
  // produces (a GMRES breakdown, a fixed-point encoding) comes the same with it.
  fprintf(stderr, " (%s)\n", msp_status_name(st));
  return EXIT_FAILED;
}

static int cli_threads;  // --threads (0: the library's default)
static FILE *cli_stdout; // --output -: the original standard output (the report goes to stderr)

msp_status write_vector(msp_vector v, const char *path) {
  if (strcmp(path, "-") != 0 || !cli_stdout) return msp_vector_write_mtx(v, path);
  const int64_t n = msp_vector_length(v);
  double *h = malloc((size_t)(n ? n : 1) * sizeof *h);
  if (!h) return MSP_ERR_OUT_OF_MEMORY;
  msp_status st = msp_vector_get(v, h);
  if (st == MSP_SUCCESS || st == MSP_ERR_RANGE) { // saturated values were copied out: write them
    // The library's text (mtx_write.c): %.17g reads back bit for bit.
    fprintf(cli_stdout,
            "%%%%MatrixMarket matrix array real general\n%% written by mixsparse\n"
            "%lld 1\n",
            (long long)n);
    for (int64_t i = 0; i < n; i++)
      fprintf(cli_stdout, "%.17g\n", h[i]);
    if (fflush(cli_stdout) != 0 || ferror(cli_stdout)) {
      st = MSP_ERR_IO;
      fprintf(stderr, "%s: cannot write the output on standard output\n", prog);
    }
  }
  free(h);
  return st;
}

msp_status context_create(msp_backend backend, int device, msp_context *ctx) {
  msp_status st = msp_context_create(backend, device, ctx);
  if (st == MSP_SUCCESS && cli_threads > 0) st = msp_context_set_threads(*ctx, cli_threads);
  if (st != MSP_SUCCESS) msp_context_destroy(ctx);
  return st;
}

int write_file_safely(const char *path, const char *data, size_t n) {
  msp__safe_file *f = NULL;
  msp_status st = msp__safe_open(path, &f);
  if (st == MSP_SUCCESS) st = msp__safe_write(f, data, n);
  if (st == MSP_SUCCESS) st = msp__safe_commit(&f);
  msp__safe_abort(&f);
  return st == MSP_SUCCESS ? EXIT_OK : fail(st, path);
}

int check_outputs(int nout, const char *const *outs, const char *const *opts, int nin,
                  const char *const *ins) {
  for (int a = 0; a < nout; a++) {
    if (!outs[a]) continue;
    for (int k = 0; k < nin; k++) {
      int same = 0;
      if (ins[k] && msp__same_file(outs[a], ins[k], &same) == MSP_SUCCESS && same)
        return usage_error("%s %s is the input file %s: refusing to overwrite it", opts[a], outs[a],
                           ins[k]);
    }
    for (int b = a + 1; b < nout; b++) {
      int same = 0;
      if (outs[b] && msp__same_target(outs[a], outs[b], &same) == MSP_SUCCESS && same)
        return usage_error("%s %s and %s %s name the same file: one would replace the other",
                           opts[a], outs[a], opts[b], outs[b]);
    }
  }
  return EXIT_OK;
}

double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// ---- options --------------------------------------------------------------------------------
// getopt_long's val for each long option is its OPT_ bit's index plus this base, clear of the
// short options' characters.
#define LONG_BASE 256
static const struct {
  const char *name;
  int has_arg;
  opt_mask bit;
} option_list[] = {
    {"json", no_argument, OPT_JSON},
    {"accuracy", no_argument, OPT_ACCURACY},
    {"allow-nonfinite", no_argument, OPT_ALLOW_NONFINITE},
    {"backend", required_argument, OPT_BACKEND},
    {"format", required_argument, OPT_FORMAT},
    {"kernel", required_argument, OPT_KERNEL},
    {"precision", required_argument, OPT_PRECISION},
    {"vector-precision", required_argument, OPT_VPRECISION},
    {"range", required_argument, OPT_RANGE},
    {"x", required_argument, OPT_X},
    {"output", required_argument, OPT_OUTPUT},
    {"repeat", required_argument, OPT_REPEAT},
    {"max-fill", required_argument, OPT_MAX_FILL},
    {"digits", required_argument, OPT_DIGITS},
    {"bdmp-f", required_argument, OPT_BDMP_F},
    {"bdmp-lambda", required_argument, OPT_BDMP_LAMBDA},
    {"alpha", required_argument, OPT_ALPHA},
    {"tol", required_argument, OPT_TOL},
    {"max-iters", required_argument, OPT_MAX_ITERS},
    {"layout", required_argument, OPT_LAYOUT},
    {"bank", required_argument, OPT_BANK},
    {"weighted", no_argument, OPT_WEIGHTED},
    {"personalize", required_argument, OPT_PERSONALIZE},
    {"values", no_argument, OPT_VALUES},
    {"top", required_argument, OPT_TOP},
    {"rhs", required_argument, OPT_RHS},
    {"x0", required_argument, OPT_X0},
    {"restart", required_argument, OPT_RESTART},
    {"rtol", required_argument, OPT_RTOL},
    {"atol", required_argument, OPT_ATOL},
    {"basis", required_argument, OPT_BASIS},
    {"precond", required_argument, OPT_PRECOND},
    {"ortho", required_argument, OPT_ORTHO},
    {"history", required_argument, OPT_HISTORY},
    {"order", required_argument, OPT_ORDER},
    {"monitor", no_argument, OPT_MONITOR},
    {"threads", required_argument, OPT_THREADS},
    {"quiet", no_argument, OPT_QUIET},
};
#define OPTION_COUNT (int)(sizeof option_list / sizeof option_list[0])

// A CPMS segment count (1..S) after the tag, for the two CPMS precisions only: cpms2 cuts a
// double into 2 segments, cpms4 into 4 (src/common: msp_cpms layout).
static int parse_precision(const char *opt, const char *v, msp_precision *p, int *segments) {
  char tag[32];
  snprintf(tag, sizeof tag, "%s", v);
  char *colon = strchr(tag, ':');
  if (colon) *colon = '\0';
  if (msp_precision_parse(tag, p) != MSP_SUCCESS) return usage_error("%s", msp_last_error());
  *segments = 0;
  if (!colon) return EXIT_OK;
  int max = *p == MSP_PRECISION_CPMS2 ? 2 : *p == MSP_PRECISION_CPMS4 ? 4 : 0;
  if (max == 0) {
    return usage_error("%s '%s': a segment count applies to cpms2 and cpms4 only", opt, v);
  }
  char *end;
  long k = strtol(colon + 1, &end, 10);
  if (*end || colon[1] == '\0' || k < 1 || k > max) {
    return usage_error("%s '%s': the CPMS segment count is 1..%d for %s", opt, v, max, tag);
  }
  *segments = (int)k;
  return EXIT_OK;
}

static int parse_double(const char *opt, const char *v, double *out) {
  char *end;
  double f = strtod(v, &end);
  if (*end || end == v || !(f > 0) || !isfinite(f)) {
    return usage_error("bad %s '%s' (a positive number)", opt, v);
  }
  *out = f;
  return EXIT_OK;
}

static int parse_long(const char *opt, const char *v, long lo, long hi, int *out) {
  char *end;
  long k = strtol(v, &end, 10);
  if (*end || end == v || k < lo || k > hi) {
    return usage_error("bad %s '%s' (%ld..%ld)", opt, v, lo, hi);
  }
  *out = (int)k;
  return EXIT_OK;
}

// --x: "ones", "random:SEED" with a decimal seed, or a file; a malformed random spec is a usage
// error here rather than a failed run later.
static int check_x_spec(const char *opt, const char *v) {
  if (strncmp(v, "random:", 7) != 0) return EXIT_OK;
  const char *s = v + 7;
  if (!*s) return usage_error("bad %s '%s' (ones, random:SEED or FILE.mtx)", opt, v);
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return usage_error("bad %s '%s' (ones, random:SEED or FILE.mtx)", opt, v);
  return EXIT_OK;
}

static int set_option(options *o, opt_mask bit, const char *opt, const char *v) {
  int rc = EXIT_OK, k = 0;
  switch (bit) {
  case OPT_JSON:
    o->json = 1;
    break;
  case OPT_ACCURACY:
    o->accuracy = 1;
    break;
  case OPT_ALLOW_NONFINITE:
    o->allow_nonfinite = 1;
    break;
  case OPT_BACKEND:
    if (msp_backend_parse(v, &o->backend) != MSP_SUCCESS) rc = usage_error("%s", msp_last_error());
    break;
  case OPT_FORMAT:
    if (msp_format_parse(v, &o->format) != MSP_SUCCESS) rc = usage_error("%s", msp_last_error());
    break;
  case OPT_KERNEL:
    if (msp_kernel_parse(v, &o->kernel) != MSP_SUCCESS) rc = usage_error("%s", msp_last_error());
    break;
  case OPT_PRECISION:
    o->precision_arg = v;
    if (!o->raw_precision) rc = parse_precision(opt, v, &o->precision, &o->cpms_segments);
    break;
  case OPT_VPRECISION:
    rc = parse_precision(opt, v, &o->vprecision, &o->vsegments);
    break;
  case OPT_RANGE:
    while (k < 3 && strcmp(v, range_names[k]) != 0)
      k++;
    if (k == 3) return usage_error("bad --range '%s' (error, saturate or allow)", v);
    o->range = k;
    break;
  case OPT_X:
    rc = check_x_spec(opt, v);
    o->x_spec = v;
    break;
  case OPT_OUTPUT:
    o->output = v;
    break;
  case OPT_REPEAT:
    rc = parse_long(opt, v, 1, 1000000, &o->repeat);
    break;
  case OPT_MAX_FILL:
    rc = parse_double(opt, v, &o->max_fill);
    break;
  case OPT_DIGITS:
    rc = parse_long(opt, v, 1, 15, &o->digits);
    break;
  case OPT_BDMP_F:
    rc = parse_double(opt, v, &o->bdmp_f);
    break;
  case OPT_BDMP_LAMBDA:
    rc = parse_double(opt, v, &o->bdmp_lambda);
    break;
  case OPT_ALPHA:
    rc = parse_double(opt, v, &o->alpha);
    if (!rc && o->alpha >= 1.0) rc = usage_error("bad --alpha '%s' (between 0 and 1)", v);
    break;
  case OPT_TOL:
    rc = parse_double(opt, v, &o->tol);
    break;
  case OPT_MAX_ITERS:
    rc = parse_long(opt, v, 0, 1000000000, &o->max_iters);
    break;
  case OPT_LAYOUT:
    if (strcmp(v, "interleaved") != 0 && strcmp(v, "separate") != 0)
      return usage_error("bad --layout '%s' (interleaved or separate)", v);
    o->separate = strcmp(v, "separate") == 0;
    break;
  case OPT_ORDER: {
    static const char *names[] = {"auto", "natural", "degree"};
    o->order = -1;
    for (int w = 0; w < 3; w++)
      if (strcmp(v, names[w]) == 0) o->order = w;
    if (o->order < 0) return usage_error("bad --order '%s' (auto, natural or degree)", v);
    break;
  }
  case OPT_BANK:
    rc = parse_long(opt, v, 64, 65536, &o->bank);
    if (!rc && (o->bank & (o->bank - 1)) != 0)
      rc = usage_error("bad --bank '%s' (a power of two from 64 to 65536)", v);
    break;
  case OPT_WEIGHTED:
    o->weighted = 1;
    break;
  case OPT_PERSONALIZE:
    o->personalize = v;
    break;
  case OPT_VALUES:
    o->values = 1;
    break;
  case OPT_TOP:
    rc = parse_long(opt, v, 0, 1000000, &o->top);
    break;
  case OPT_RHS:
    if (strcmp(v, "ones") && strcmp(v, "sin")) rc = check_x_spec(opt, v);
    o->rhs = v;
    break;
  case OPT_X0:
    o->x0 = v;
    break;
  case OPT_RESTART:
    rc = parse_long(opt, v, 1, 100000, &o->restart);
    break;
  case OPT_RTOL:
    rc = parse_double(opt, v, &o->rtol);
    break;
  case OPT_ATOL: {
    char *end;
    o->atol = strtod(v, &end);
    if (*end || end == v || !(o->atol >= 0) || !isfinite(o->atol))
      rc = usage_error("bad %s '%s' (a number >= 0)", opt, v);
    break;
  }
  case OPT_BASIS:
    o->basis_auto = strcmp(v, "auto") == 0;
    if (!o->basis_auto && msp_precision_parse(v, &o->basis) != MSP_SUCCESS)
      rc = usage_error("bad --basis '%s' (f64, f32, f16, bf16, fx32, fx16, cpms2, cpms4 or auto)",
                       v);
    break;
  case OPT_PRECOND:
    o->precond = !strcmp(v, "none")     ? MSP_PRECOND_NONE
                 : !strcmp(v, "jacobi") ? MSP_PRECOND_JACOBI
                 : !strcmp(v, "ilu0")   ? MSP_PRECOND_ILU0
                                        : (msp_precond)-1;
    if ((int)o->precond < 0) rc = usage_error("bad --precond '%s' (none, jacobi or ilu0)", v);
    break;
  case OPT_ORTHO:
    if (strcmp(v, "cgs") && strcmp(v, "mgs") && strcmp(v, "dcgs2"))
      return usage_error("bad --ortho '%s' (dcgs2, cgs or mgs)", v);
    o->ortho = strcmp(v, "mgs") == 0   ? MSP_ORTHO_MGS
               : strcmp(v, "cgs") == 0 ? MSP_ORTHO_CGS
                                       : MSP_ORTHO_DCGS2;
    break;
  case OPT_HISTORY:
    o->history = v;
    break;
  case OPT_THREADS:
    rc = parse_long(opt, v, 1, 4096, &o->threads);
    break;
  case OPT_QUIET:
    o->quiet = 1;
    break;
  case OPT_MONITOR:
    o->monitor = 1;
    break;
  }
  o->given |= bit;
  return rc;
}

// Options that the chosen format would ignore: refused, so a user never believes they acted.
static int check_effect(const options *o) {
  const int bdmp = o->format == MSP_FORMAT_BDMP_PBP || o->format == MSP_FORMAT_BDMP_TCKI;
  static const struct {
    opt_mask bit;
    const char *name;
  } bdmp_only[] = {
      {OPT_DIGITS, "--digits"}, {OPT_BDMP_F, "--bdmp-f"}, {OPT_BDMP_LAMBDA, "--bdmp-lambda"}};
  // --digits D also asks AUTO for D digits: it may then store values in fp32 (or choose BDMP)
  // where the bound of D digits holds, so it chooses the precision and --precision has no say.
  const int auto_digits = o->format == MSP_FORMAT_AUTO && (o->given & OPT_DIGITS);
  for (int i = 0; i < 3; i++)
    if ((o->given & bdmp_only[i].bit) && !bdmp && !(i == 0 && auto_digits)) {
      return usage_error("%s has no effect with --format %s (only with bdmp-pbp or bdmp-tcki%s)",
                         bdmp_only[i].name, msp_format_name(o->format), i == 0 ? ", or auto" : "");
    }
  if (auto_digits && (o->given & OPT_PRECISION) && o->precision != MSP_PRECISION_F64)
    return usage_error("--precision %s has no effect with --format auto --digits (AUTO chooses "
                       "the storage precision that keeps D digits)",
                       msp_precision_name(o->precision));
  if (o->kernel != MSP_KERNEL_AUTO && o->format != MSP_FORMAT_CSR && o->format != MSP_FORMAT_AUTO &&
      o->format != MSP_FORMAT_TUNE) {
    return usage_error("--kernel %s has no effect with --format %s (CSR kernels only)",
                       msp_kernel_name(o->kernel), msp_format_name(o->format));
  }
  return EXIT_OK;
}

int parse_options(int argc, char **argv, opt_mask accepted, int file, options *o) {
  cli_cmd = argv[0];
  // --help anywhere wins, even after an option that would be refused; --json anywhere makes
  // even an error before it a JSON object.
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      o->help = 1;
      return EXIT_OK;
    }
    if (!strcmp(argv[i], "--json") && (accepted & OPT_JSON)) cli_json = 1;
  }
  accepted |= OPT_THREADS | OPT_QUIET; // every command runs host threads and may take long
  struct option longs[OPTION_COUNT + 1];
  for (int i = 0; i < OPTION_COUNT; i++)
    longs[i] = (struct option){option_list[i].name, option_list[i].has_arg, NULL, LONG_BASE + i};
  longs[OPTION_COUNT] = (struct option){NULL, 0, NULL, 0};
  opterr = 0; // the messages are this program's, in its own words
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":o:", longs, NULL)) != -1) {
    // The option's own word: the one before its value when the value was a word of its own.
    const char *opt =
        optarg && optind >= 2 && optarg == argv[optind - 1] ? argv[optind - 2] : argv[optind - 1];
    if (c == '?') return usage_error("unknown option '%s'", opt);
    if (c == ':') return usage_error("option %s needs a value", opt);
    int idx = c - LONG_BASE;
    if (c == 'o') // -o is --output
      for (idx = 0; option_list[idx].bit != OPT_OUTPUT; idx++)
        ;
    opt_mask bit = option_list[idx].bit;
    char name[40];
    snprintf(name, sizeof name, "--%s", option_list[idx].name);
    // getopt_long takes "--rep" for --repeat; this program spells options out, as it always did.
    size_t nl = strlen(name), given = strcspn(opt, "=");
    if (c != 'o' && (given != nl || strncmp(opt, name, nl) != 0))
      return usage_error("unknown option '%.*s'", (int)given, opt);
    if (!(accepted & bit))
      return usage_error("'%s' does not take %s (it has no effect there)", argv[0], name);
    int rc = set_option(o, bit, name, optarg);
    if (rc) return rc;
  }
  for (int i = optind; i < argc; i++) {
    if (file && !o->file)
      o->file = argv[i];
    else
      return usage_error("unexpected argument '%s'", argv[i]);
  }
  if (!o->file && file == 1) return usage_error("%s", "missing FILE argument");
  if (o->output && strcmp(o->output, "-") == 0) {
    if (o->json) return usage_error("--output - and --json would both write standard output");
    // The result alone goes to standard output; what the command reports goes to stderr.
    fflush(stdout);
    const int fd = dup(1);
    if (fd < 0 || !(cli_stdout = fdopen(fd, "w")) || dup2(2, 1) < 0) {
      fprintf(stderr, "%s: cannot direct the report to standard error\n", prog);
      return EXIT_FAILED;
    }
  }
  progress_enable(isatty(2) && !o->json && !o->quiet);
  // Every context of the command (context_create) and OpenMP's own count, for any other.
  if (o->threads > 0) {
    cli_threads = o->threads;
    omp_set_num_threads(o->threads);
  }
  return check_effect(o);
}

// ---- inputs ---------------------------------------------------------------------------------
msp_status load_matrix(msp_context ctx, const options *o, msp_matrix *A) {
  char what[200];
  const int gen = strncmp(o->file, "gen:", 4) == 0;
  snprintf(what, sizeof what, "%s %s", gen ? "generating" : "reading", o->file);
  progress_start(what);
  const msp_status st =
      gen ? msp_matrix_generate(ctx, o->file + 4, A)
          : msp_matrix_read_mtx(ctx, o->file, o->allow_nonfinite ? MSP_READ_ALLOW_NONFINITE : 0, A);
  progress_stop();
  return st;
}

msp_status make_x(msp_context ctx, const options *o, int64_t n, double **out) {
  msp_status st = MSP_SUCCESS;
  msp_vector v = NULL;
  double *x = malloc((size_t)(n ? n : 1) * sizeof *x);
  if (!x) {
    fprintf(stderr, "%s: cannot allocate x of %lld entries\n", prog, (long long)n);
    return MSP_ERR_OUT_OF_MEMORY;
  }
  if (strcmp(o->x_spec, "ones") == 0) {
    for (int64_t i = 0; i < n; i++)
      x[i] = 1.0;
  } else if (strncmp(o->x_spec, "random:", 7) == 0) {
    uint64_t s = strtoull(o->x_spec + 7, NULL, 10); // checked by parse_options
    for (int64_t i = 0; i < n; i++) {               // splitmix64: uniform in [-1, 1)
      uint64_t z = (s += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      x[i] = 2.0 * ((double)(z >> 11) * 0x1.0p-53) - 1.0;
    }
  } else {
    st = msp_vector_read_mtx(ctx, o->x_spec, o->allow_nonfinite ? MSP_READ_ALLOW_NONFINITE : 0, &v);
    if (st != MSP_SUCCESS) {
      fail(st, o->x_spec);
      goto exit;
    }
    if (msp_vector_length(v) != n) {
      fprintf(stderr, "%s: %s has %lld entries, the matrix has %lld columns\n", prog, o->x_spec,
              (long long)msp_vector_length(v), (long long)n);
      st = MSP_ERR_DIMENSION_MISMATCH;
      goto exit;
    }
    if ((st = msp_vector_get(v, x)) != MSP_SUCCESS) {
      fail(st, o->x_spec);
      goto exit;
    }
  }
exit:
  msp_vector_destroy(&v);
  if (st != MSP_SUCCESS) {
    free(x);
    x = NULL;
  }
  *out = x;
  return st;
}

int json_finish(json *j, const char *why) {
  json_status(j, why);
  msp_status st = json_print(j, stdout);
  return st == MSP_SUCCESS ? EXIT_OK : fail(st, "JSON output");
}

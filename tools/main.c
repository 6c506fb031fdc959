// main.c: the mixsparse command-line program: dispatch to a subcommand (one file each).
#define _POSIX_C_SOURCE 200809L // setenv
#include "cmd.h"
#include "common.h"

#include <stdlib.h>
#include <string.h>

// OpenMP threads that spin while they wait hold up every product when other programs compete
// for the cores (each barrier waits for a descheduled thread's turn; docs/design.md, "Threads"),
// so the program waits passively unless the user chose a policy. The OpenMP runtime reads the
// variable when it is loaded, before main: the executable's pre-initialisers run before any
// shared library's constructors.
static void passive_wait_default(int argc, char **argv, char **envp) {
  (void)argc, (void)argv, (void)envp;
  setenv("OMP_WAIT_POLICY", "passive", 0);
}
typedef void (*preinit_fn)(int, char **, char **);
__attribute__((section(".preinit_array"), used)) static const preinit_fn preinit_passive =
    passive_wait_default;

static const char *main_help =
    "usage: mixsparse COMMAND [ARGS]\n"
    "  run [FILE]    the main job: analyse, choose, run SpMV on the best backend, report\n"
    "  info FILE     statistics, chosen format and kernel, footprint per format\n"
    "  spmv FILE     y = A*x with a chosen backend, format, kernel and precision\n"
    "  pagerank FILE PageRank of a graph, in fp64 or with adaptive CPMS reads\n"
    "  solve FILE    A x = b by GMRES with a compressed Krylov basis (CB-GMRES)\n"
    "  devices       list CUDA devices\n"
    "  COMMAND --help for the options of each command. Every command takes --threads N (host\n"
    "  threads), and --json (one JSON object on stdout; on failure {\"status\": \"error\", ...});\n"
    "  --output - writes the result on stdout (the report then goes to stderr).\n"
    "  FILE is a Matrix Market file (.mtx, .mtx.gz) or gen:SPEC, e.g. gen:poisson3d:64,\n"
    "  gen:convdiff3d:64 (every SPEC: 'mixsparse info --help').\n"
    "  Exit status: 0 success, 1 a failed operation (or a non-finite result of spmv or run),\n"
    "  2 a usage error (unknown or malformed option, or one without effect for the command),\n"
    "  3 solve did not converge within --max-iters.\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(main_help, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    fputs(main_help, stdout);
    return EXIT_OK;
  }
  if (!strcmp(cmd, "--version")) {
    printf("mixsparse %d.%d.%d\n", MSP_VERSION_MAJOR, MSP_VERSION_MINOR, MSP_VERSION_PATCH);
    return EXIT_OK;
  }
#ifdef MSP_HAVE_MPI
  // started by mpirun with more than one rank: the distributed commands (tools/cmd_mpi.c)
  if ((!strcmp(cmd, "spmv") || !strcmp(cmd, "solve") || !strcmp(cmd, "pagerank")) &&
      cmd_mpi_ranks() > 1)
    return command_exit(cmd_mpi(argc - 1, argv + 1));
#endif
  // With --json, a command that fails still prints one JSON object (command_exit).
  if (!strcmp(cmd, "info")) return command_exit(cmd_info(argc - 1, argv + 1));
  if (!strcmp(cmd, "spmv") || !strcmp(cmd, "run"))
    return command_exit(cmd_spmv(argc - 1, argv + 1));
  if (!strcmp(cmd, "devices")) return command_exit(cmd_devices(argc - 1, argv + 1));
  if (!strcmp(cmd, "pagerank")) return command_exit(cmd_pagerank(argc - 1, argv + 1));
  if (!strcmp(cmd, "solve")) return command_exit(cmd_solve(argc - 1, argv + 1));
  return usage_error("unknown command '%s'", cmd);
}

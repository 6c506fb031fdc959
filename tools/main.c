// main.c: the mixsparse command-line program: dispatch to a subcommand (one file each).
#include "cmd.h"
#include "common.h"

#include <string.h>

static const char *main_help =
    "usage: mixsparse COMMAND [ARGS]\n"
    "  run [FILE]    the main job: analyse, choose, run SpMV on the best backend, report\n"
    "  info FILE     statistics, chosen format and kernel, footprint per format\n"
    "  spmv FILE     y = A*x with a chosen backend, format, kernel and precision\n"
    "  pagerank FILE PageRank of a graph, in fp64 or with adaptive CPMS reads\n"
    "  solve FILE    A x = b by GMRES with a compressed Krylov basis (CB-GMRES)\n"
    "  devices       list CUDA devices\n"
    "  COMMAND --help for the options of each command.\n"
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
    return cmd_mpi(argc - 1, argv + 1);
#endif
  if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
  if (!strcmp(cmd, "spmv") || !strcmp(cmd, "run")) return cmd_spmv(argc - 1, argv + 1);
  if (!strcmp(cmd, "devices")) return cmd_devices(argc - 1, argv + 1);
  if (!strcmp(cmd, "pagerank")) return cmd_pagerank(argc - 1, argv + 1);
  if (!strcmp(cmd, "solve")) return cmd_solve(argc - 1, argv + 1);
  return usage_error("unknown command '%s'", cmd);
}

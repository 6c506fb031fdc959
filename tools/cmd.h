// cmd.h: the subcommands of the mixsparse program; each takes argv[0] = its own name.
#ifndef MSP_TOOLS_CMD_H
#define MSP_TOOLS_CMD_H

int cmd_info(int argc, char **argv);
int cmd_spmv(int argc, char **argv); // spmv and run (argv[0] tells which)
int cmd_devices(int argc, char **argv);
int cmd_pagerank(int argc, char **argv);
int cmd_solve(int argc, char **argv);
// Built with MPI (tools/cmd_mpi.c): the ranks mpirun started (1 when not started by one), and
// spmv / solve / pagerank distributed over them.
int cmd_mpi_ranks(void);
int cmd_mpi(int argc, char **argv);

#endif

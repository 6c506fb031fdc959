#!/bin/sh
# test_dist_cli.sh: the program under mpirun (tools/cmd_mpi.c): MPIEXEC NP EXTRA PROGRAM ARGS...
# must exit 0 and report in its JSON that the distributed result has one process's bits.
mpiexec=$1 np=$2 extra=$3
shift 3
# shellcheck disable=SC2086 # EXTRA: zero or more words
out=$("$mpiexec" -n "$np" $extra "$@") || {
  echo "FAILED: $mpiexec -n $np $extra $* exited $?"
  echo "$out"
  exit 1
}
echo "$out"
case $out in
*'"same_bits_as_one_process":true,"status":"ok"'*) exit 0 ;;
*) echo "FAILED: the distributed result is not one process's"; exit 1 ;;
esac

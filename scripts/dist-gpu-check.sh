#!/usr/bin/env bash
# dist-gpu-check.sh: the distributed layer's tests on a machine with several GPUs, from binaries
# built elsewhere (tests/test_dist_cuda and mixsparse, built with MPI and CUDA): CUDA ranks two
# on one GPU (host transport), one GPU per rank over NCCL and over the host transport on the
# machine's GPUs (2 to 4), two ranks under compute-sanitizer memcheck, and the program under
# mpirun (spmv, solve with the same bits on two runs and over both transports, pagerank;
# --output; a bad file). Logs go to $OUT (or ./dist-check-out).
#
# usage: scripts/dist-gpu-check.sh BINDIR
set -uo pipefail
bin=$1
out=${OUT:-dist-check-out}
mkdir -p "$out"
log=$out/dist-check.log
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=4 OMP_WAIT_POLICY=passive
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
mpi="mpirun --bind-to none -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x OMP_WAIT_POLICY -x LD_LIBRARY_PATH"
t=$bin/tests/test_dist_cuda
step() {
  local name=$1
  shift
  local t0=$(date +%s)
  timeout "${STEP_TIMEOUT:-150}" "$@" > /tmp/step.log 2>&1
  local rc=$?
  {
    echo "== $name: exit $rc, $(( $(date +%s) - t0 )) s: $*"
    cat /tmp/step.log
  } >> "$log"
  echo "$name: exit $rc ($(( $(date +%s) - t0 )) s) $(grep -E 'PASS|FAIL|SKIP|checks,|result bits|GMRES:' /tmp/step.log | tail -1)"
  grep -m5 -E "FAIL|error|rror:" /tmp/step.log | head -5
}
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv > "$out/gpus.txt" 2>&1
nvidia-smi topo -m >> "$out/gpus.txt" 2>&1
head -5 "$out/gpus.txt"
# one rank per GPU (2 or 4 GPUs: np is the machine's count, at most 4)
np=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
[ "$np" -gt 4 ] && np=4
[ "$np" -lt 2 ] && np=2
m=$bin/mixsparse
step "np$np local (nccl)" $mpi -np $np $t --backend cuda --device local
step "np2 one GPU (host)" $mpi -np 2 $t --backend cuda --device 0
if [ -z "${QUICK:-}" ]; then
  # (the short set, QUICK=1: the two above, memcheck over NCCL, the bits and a bad file)
  step "np$np local (host)" $mpi -np $np $t --backend cuda --device local --transport host
  step "np2 memcheck (host, one GPU)" $mpi -np 2 compute-sanitizer --tool memcheck \
    --error-exitcode 1 $t --backend cuda --device 0 --quick
  step "cli spmv np$np" $mpi -np $np $m spmv gen:stencil27:64 --backend cuda --output /tmp/y.mtx
  step "cli spmv np$np host f32" $mpi -np $np $m spmv gen:stencil27:64 --backend cuda \
    --transport host --vector-precision f32
fi
step "np2 memcheck (nccl)" $mpi -np 2 compute-sanitizer --tool memcheck --report-api-errors no \
  --error-exitcode 1 $t --backend cuda --device local --transport nccl --quick
# the same bits on two runs, and over NCCL (reductions on the device) as over the host transport
# (reductions over MPI on the host): the same operations in the same order
for k in 1 2; do
  step "cli solve np$np nccl run $k" $mpi -np $np $m solve gen:convdiff3d:64 --backend cuda \
    --restart 50 --precond jacobi --transport nccl --output /tmp/x$k.mtx
done
step "cli solve np$np host" $mpi -np $np $m solve gen:convdiff3d:64 --backend cuda --restart 50 \
  --precond jacobi --transport host --output /tmp/x3.mtx
if cmp -s /tmp/x1.mtx /tmp/x2.mtx; then echo "solve: the same bits on two runs"; else
  echo "solve: FAIL: two runs differ"; fi | tee -a "$log"
if cmp -s /tmp/x1.mtx /tmp/x3.mtx; then echo "solve: nccl and host the same bits"; else
  echo "solve: FAIL: nccl and host differ"; fi | tee -a "$log"
if [ -z "${QUICK:-}" ]; then
  step "cli solve np$np fx16 basis" $mpi -np $np $m solve gen:convdiff3d:48 --backend cuda \
    --restart 30 --basis fx16
  step "cli pagerank np$np" $mpi -np $np $m pagerank gen:rmat:18:16 --backend cuda
  step "cli pagerank np$np cpms2" $mpi -np $np $m pagerank gen:rmat:18:16 --backend cuda \
    --precision cpms2
  head -3 /tmp/y.mtx >> "$log" 2>&1
fi
step "cli bad file np$np" $mpi -np $np $m spmv /nonexistent.mtx --backend cuda

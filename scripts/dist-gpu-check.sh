#!/usr/bin/env bash
# dist-gpu-check.sh: the distributed layer's tests on a machine with several GPUs, from binaries
# built elsewhere (tests/test_dist_cuda and mixsparse, built with MPI and CUDA): CUDA ranks two
# on one GPU (host transport), one GPU per rank over NCCL and over the host transport on 2 and 4
# GPUs, one rank under compute-sanitizer memcheck, and the program under mpirun (spmv, solve,
# pagerank; --output; a bad file). Logs go to $OUT (or ./dist-check-out).
#
# usage: scripts/dist-gpu-check.sh BINDIR
set -uo pipefail
bin=$1
out=${OUT:-dist-check-out}
mkdir -p "$out"
log=$out/dist-check.log
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=4 OMP_WAIT_POLICY=passive
mpi="mpirun --bind-to none -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x OMP_WAIT_POLICY"
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
  echo "$name: exit $rc ($(( $(date +%s) - t0 )) s) $(grep -E 'PASS|FAIL|SKIP' /tmp/step.log | tail -1)"
  grep -m5 -E "FAIL|error|rror:" /tmp/step.log | head -5
}
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv > "$out/gpus.txt" 2>&1
nvidia-smi topo -m >> "$out/gpus.txt" 2>&1
head -5 "$out/gpus.txt"
if [ -n "${QUICK:-}" ]; then
  # the short set: 4 GPUs over NCCL, 2 ranks sharing one GPU (host transport), one case of each
  # kind under memcheck (host transport: the product's kernels; NCCL's own API checks aside)
  step "np4 local (nccl)" $mpi -np 4 $t --backend cuda --device local
  step "np2 one GPU (host)" $mpi -np 2 $t --backend cuda --device 0
  step "np2 memcheck (host)" $mpi -np 2 compute-sanitizer --tool memcheck --error-exitcode 1 \
    $t --backend cuda --device local --transport host --quick
  m=$bin/mixsparse
  step "cli spmv np4 --output" $mpi -np 4 $m spmv gen:stencil27:64 --backend cuda --output /tmp/y.mtx
  step "cli pagerank np4" $mpi -np 4 $m pagerank gen:rmat:18:16 --backend cuda
  step "cli solve np4 fx16" $mpi -np 4 $m solve gen:convdiff3d:48 --backend cuda --restart 30 \
    --basis fx16
  step "cli bad file np4" $mpi -np 4 $m spmv /nonexistent.mtx --backend cuda
  exit 0
fi
step "np2 one GPU (host)" $mpi -np 2 $t --backend cuda --device 0
step "np2 local (nccl)" $mpi -np 2 $t --backend cuda --device local
step "np4 local (nccl)" $mpi -np 4 $t --backend cuda --device local
step "np4 local (host)" $mpi -np 4 $t --backend cuda --device local --transport host
step "np2 memcheck (host, one GPU)" $mpi -np 2 compute-sanitizer --tool memcheck --error-exitcode 1 \
  $t --backend cuda --device 0
step "np2 memcheck (nccl)" $mpi -np 2 compute-sanitizer --tool memcheck --report-api-errors no \
  --error-exitcode 1 \
  $t --backend cuda --device local --transport nccl
m=$bin/mixsparse
step "cli spmv np4" $mpi -np 4 $m spmv gen:stencil27:64 --backend cuda --output /tmp/y.mtx
step "cli spmv np4 host f32" $mpi -np 4 $m spmv gen:stencil27:64 --backend cuda --transport host \
  --vector-precision f32
step "cli solve np4" $mpi -np 4 $m solve gen:convdiff3d:64 --backend cuda --restart 50 \
  --precond jacobi
step "cli solve np4 fx16 basis" $mpi -np 4 $m solve gen:convdiff3d:48 --backend cuda --restart 30 \
  --basis fx16
step "cli pagerank np4" $mpi -np 4 $m pagerank gen:rmat:18:16 --backend cuda
step "cli pagerank np4 cpms2" $mpi -np 4 $m pagerank gen:rmat:18:16 --backend cuda --precision cpms2
step "cli bad file np4" $mpi -np 4 $m spmv /nonexistent.mtx --backend cuda
head -3 /tmp/y.mtx >> "$log" 2>&1

#!/usr/bin/env bash
# gpu-gate.sh: the GPU check of a tree in one bounded run on a GPU machine: build with -j16
# (timed), the CUDA tests plain, the cross test plain and under compute-sanitizer memcheck,
# racecheck and initcheck, cuda_gmres plain and under memcheck, the Krylov basis passes under
# memcheck and racecheck and their bandwidth, then (SPMV_SCRIPT) the SpMV collection benchmark
# with the time left. Every step is capped so that the whole stays under DEADLINE seconds (a
# device call's limit); a step cut by its cap says exit 124. Logs: $OUT/logs.tgz and gate.log.
#
# usage: OUT=DIR [DEADLINE=575] [SRC=tree.tar.gz] [MATS=matrices.tar|DIR] [CJSON=DIR]
#        [SPMV_SCRIPT=bench/collection/spmv-gpu.sh] scripts/gpu-gate.sh
#   SRC    a `git archive --format=tar.gz` of the commit to check (default: this checkout)
#   MATS   the matrices (a tar or a folder with INDEX.tsv; default: matrices-local)
#   CJSON  a folder with include/cjson/cJSON.h and libcjson.so(.1), where the machine has none
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
t0=$(date +%s)
DEADLINE=${DEADLINE:-575}
L=/tmp/logs; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/logs.tgz -C /tmp logs' EXIT
left() { echo $(( DEADLINE - ($(date +%s) - t0) )); }
cap() { local w=$1 l; l=$(( $(left) - ${2:-0} )); [ $l -lt $w ] && w=$l; [ $w -lt 1 ] && w=1; echo $w; }
cudalib=$(cd "$(dirname "$(command -v nvcc)")/../lib64" 2>/dev/null && pwd)
CJSON=${CJSON:-}
export LD_LIBRARY_PATH=${CJSON:+$CJSON:}${cudalib:+$cudalib:}${LD_LIBRARY_PATH:-}
{
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
src=$ROOT
if [ -n "${SRC:-}" ]; then src=/tmp/gate-src; rm -rf $src; mkdir -p $src; tar xzf "$SRC" -C $src; fi
mats=${MATS:-$ROOT/matrices-local}
if [ -f "$mats" ]; then mkdir -p /tmp/gate-mats && tar xf "$mats" -C /tmp/gate-mats; mats=/tmp/gate-mats; fi
cj=""
[ -n "$CJSON" ] && cj="-DMSP_CJSON_INCLUDE=$CJSON/include -DMSP_CJSON_LIB=$CJSON/libcjson.so"
bin=/tmp/gate-build
cmake -S $src -B $bin -DMSP_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DMSP_MPI=OFF \
  -DCMAKE_BUILD_TYPE=Release $cj -DMSP_MATRICES_DIR=$mats > $L/build.log 2>&1 &&
  { tb=$(date +%s); timeout $(cap 300) cmake --build $bin -j16 >> $L/build.log 2>&1; rc=$?; echo "whole build (cmake --build -j16, every target, MPI off): exit $rc | $(( $(date +%s) - tb )) s"; }
echo "build done | $(( $(date +%s) - t0 )) s"
grep -E 'error|Error' $L/build.log | head -10
export MSP_MATRICES_DIR=$mats MSP_TEST_DATA=$src/tests/data OMP_WAIT_POLICY=passive
for t in cuda_vector_prec cuda_pairs cuda_vector cuda_bdmp cuda_pagerank; do
  timeout $(cap 45 330) stdbuf -oL $bin/tests/$t > $L/$t.log 2>&1
  echo "$t: exit $? | $(tail -n 1 $L/$t.log) | $(( $(date +%s) - t0 )) s"
  grep -m3 'failed:' $L/$t.log | cut -c1-300
done
MSP_TEST_MAX_MATRICES=40 MSP_CROSS_MAX_NNZ=120000 MSP_TEST_MAX_NNZ=120000 timeout $(cap 75 290) stdbuf -oL -eL $bin/tests/cuda_cross > $L/cuda_cross.log 2>&1
echo "cuda_cross: exit $? | $(grep -E '^cross:|checks,|matrices' $L/cuda_cross.log | tail -3 | tr '\n' ' ') | $(( $(date +%s) - t0 )) s"
grep -m5 'failed:' $L/cuda_cross.log | cut -c1-300
small="MSP_TEST_QUICK=1 MSP_TEST_SANITIZER=1 MSP_TEST_MAX_MATRICES=6"
env $small MSP_CROSS_MAX_NNZ=20000 MSP_TEST_MAX_NNZ=20000 timeout $(cap 60 230) compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 $bin/tests/cuda_cross > $L/san-memcheck-cross.log 2>&1
echo "cuda_cross under memcheck: exit $? | $(grep -E 'ERROR SUMMARY' $L/san-memcheck-cross.log | tail -1) | $(grep -E '^cross:|checks,' $L/san-memcheck-cross.log | tail -2 | tr '\n' ' ') | $(( $(date +%s) - t0 )) s"
env MSP_TEST_QUICK=1 MSP_TEST_SANITIZER=1 MSP_TEST_MAX_MATRICES=3 MSP_CROSS_MAX_NNZ=2000 MSP_TEST_MAX_NNZ=2000 timeout $(cap 125 130) compute-sanitizer --tool racecheck --error-exitcode 1 $bin/tests/cuda_cross > $L/san-racecheck-cross.log 2>&1
echo "cuda_cross under racecheck: exit $? | $(grep -E 'RACECHECK SUMMARY' $L/san-racecheck-cross.log | tail -1) | $(grep -E '^cross:|checks,' $L/san-racecheck-cross.log | tail -2 | tr '\n' ' ') | $(( $(date +%s) - t0 )) s"
timeout $(cap 60 60) stdbuf -oL $bin/tests/cuda_gmres > $L/cuda_gmres.log 2>&1
echo "cuda_gmres: exit $? | $(tail -n 1 $L/cuda_gmres.log) | $(( $(date +%s) - t0 )) s"
grep -m5 'failed:' $L/cuda_gmres.log | cut -c1-300
env MSP_TEST_QUICK=1 timeout $(cap 40 40) compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 $bin/tests/cuda_gmres > $L/san-memcheck-gmres.log 2>&1
echo "cuda_gmres (quick) under memcheck: exit $? | $(grep -E 'ERROR SUMMARY' $L/san-memcheck-gmres.log | tail -1) | $(tail -n 1 $L/san-memcheck-gmres.log) | $(( $(date +%s) - t0 )) s"
MSP_MATRICES_DIR=/nonexistent MSP_TEST_SANITIZER=1 MSP_CROSS_FORMATS=${INIT_FORMATS:-coo,hyb,ell} timeout $(cap 35 110) compute-sanitizer --tool initcheck --error-exitcode 1 $bin/tests/cuda_cross > $L/san-initcheck-cross.log 2>&1
echo "cuda_cross (edge cases, ${INIT_FORMATS:-coo,hyb,ell}) under initcheck: exit $? | $(grep -E 'ERROR SUMMARY' $L/san-initcheck-cross.log | tail -1) | $(grep -E '^cross:|checks,' $L/san-initcheck-cross.log | tail -2 | tr '\n' ' ') | $(( $(date +%s) - t0 )) s"
grep -m2 -A3 'Uninitialized' $L/san-initcheck-cross.log | cut -c1-200 | head -8
timeout $(cap 30 115) compute-sanitizer --tool memcheck --error-exitcode 1 $bin/bench/mixsparse-bench-basis --backend cuda --n 100003 --cols 201 --reps 1 --precisions f16,f32,fx16 > $L/san-memcheck-basis.log 2>&1
echo "bench-basis (n 100003, 201 columns, f16 f32 fx16) under memcheck: exit $? | $(grep -E 'ERROR SUMMARY' $L/san-memcheck-basis.log | tail -1) | $(( $(date +%s) - t0 )) s"
timeout $(cap 30 95) compute-sanitizer --tool racecheck --error-exitcode 1 $bin/bench/mixsparse-bench-basis --backend cuda --n 100003 --cols 201 --reps 1 --precisions f16,f32,fx16 > $L/san-racecheck-basis.log 2>&1
echo "bench-basis under racecheck: exit $? | $(grep -E 'RACECHECK SUMMARY' $L/san-racecheck-basis.log | tail -1) | $(( $(date +%s) - t0 )) s"
timeout $(cap 25 70) $bin/bench/mixsparse-bench-basis --backend cuda --precisions f64,f32,f16,bf16,fx32,fx16 --reps 20 --csv $L/basis.csv > $L/bench-basis.log 2>&1
echo "bench-basis: exit $? | $(( $(date +%s) - t0 )) s"; tail -16 $L/bench-basis.log
if [ -n "${SPMV_SCRIPT:-}" ] && [ $(left) -gt 45 ]; then
  echo "== SpMV collection benchmark ($(left) s left)"
  (cd $src && OUT=$L SPMV_BUDGET=$(cap 145 4) BUILD=$bin MATS=$mats bash "$src/$SPMV_SCRIPT" > $L/spmv-run.log 2>&1)
  tail -8 $L/spmv-run.log
fi
echo "total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee $L/gate.log
cp $L/gate.log $OUT/

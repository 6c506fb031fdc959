#!/usr/bin/env bash
# gpu-all.sh: on a GPU machine, in one go: build with CUDA, run every test, the CUDA tests under
# compute-sanitizer (memcheck, racecheck), and the benchmark. Logs go to $OUT (or ./gpu-out).
# Matrices come from matrices-local/ (a git-ignored copy of ../shared/matrices) when present.
#
# usage: scripts/gpu-all.sh [STAGES]   STAGES: a comma list of test, sanitize, precision, main
#        (default test,sanitize,precision,main); each stage is bounded by a timeout so that one
#        call of the device tool (10 minutes) holds the stages it is given.
# The build alone takes minutes (src/cuda/csr.cu instantiates every pair of value and x
# precisions for each CSR kernel: about 3 minutes of one core). Where device time is short,
# build on a machine without a GPU and run scripts/gpu-prebuilt.sh on the device instead.
set -uo pipefail
final=${OUT:-gpu-out}
out=/tmp/gpu-logs
rm -rf "$out"; mkdir -p "$out" "$final"
# The device tool returns at most 8 files: everything is packed into one archive at exit, and the
# CSV files and tables are copied beside it.
trap 'tar czf "$final/gpu-logs.tgz" -C /tmp gpu-logs; cp "$out"/*.csv "$out"/*.md "$final"/ 2>/dev/null' EXIT
mat=${MSP_MATRICES_DIR:-$PWD/matrices-local}
stages=",${1:-test,sanitize,precision,main},"
export MSP_MATRICES_DIR=$mat
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
t0=$(date +%s)
echo "== build"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DMSP_CUDA=ON -DMSP_MATRICES_DIR="$mat" > "$out/build.log" 2>&1 &&
  cmake --build build-gpu -j 16 >> "$out/build.log" 2>&1 || { tail -60 "$out/build.log"; echo "BUILD FAILED"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
./build-gpu/mixsparse devices > "$out/devices.txt" 2>&1; head -3 "$out/devices.txt"
if [[ $stages == *,test,* ]]; then
  echo "== ctest (all tests, GPU present)"
  (cd build-gpu && OMP_WAIT_POLICY=passive timeout 330 ctest --output-on-failure -j 8 --timeout 320) > "$out/ctest.log" 2>&1
  grep -E "tests passed|tests failed|Failed|Timeout|\*\*\*|SKIPPED|Not Run|cross:" "$out/ctest.log" | head -40
  echo "ctest done: $(( $(date +%s) - t0 )) s"
  ./build-gpu/mixsparse run > "$out/run.txt" 2>&1; cat "$out/run.txt"
fi
if [[ $stages == *,sanitize,* ]]; then
  echo "== compute-sanitizer (memcheck with leak check, racecheck) on a sample"
  GPU_CHECK_NO_PLAIN=1 timeout 240 ./scripts/gpu-check.sh build-gpu > "$out/gpu-check.log" 2>&1
  grep -E "^(PASS|FAIL)|gpu-check:|ERROR SUMMARY|hazard" "$out/gpu-check.log" | tail -20
  echo "sanitizer done: $(( $(date +%s) - t0 )) s"
fi
if [[ $stages == *,precision,* ]]; then
  echo "== benchmark: every storage precision"
  STAGE=precision BUILD=build-gpu timeout 330 ./scripts/bench-gpu.sh "$out" > "$out/bench-precision.log" 2>&1
  tail -40 "$out/bench-precision.log"
  echo "precision bench done: $(( $(date +%s) - t0 )) s"
fi
if [[ $stages == *,main,* ]]; then
  echo "== benchmark: the generated suite and the real matrices in f64 (regression check)"
  STAGE=main BUILD=build-gpu BUDGET=${BUDGET:-150} timeout 330 ./scripts/bench-gpu.sh "$out" > "$out/bench-main.log" 2>&1
  tail -30 "$out/bench-main.log"
  echo "main bench done: $(( $(date +%s) - t0 )) s"
fi

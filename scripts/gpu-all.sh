#!/usr/bin/env bash
# gpu-all.sh: on a GPU machine, in one go: build with CUDA, run every test, the CUDA tests
# under compute-sanitizer (memcheck, racecheck), and the benchmark. Logs go to $OUT (or ./gpu-out).
# Matrices come from matrices-local/ (a git-ignored copy of ../shared/matrices) when present.
set -uo pipefail
final=${OUT:-gpu-out}
out=/tmp/gpu-logs
rm -rf "$out"; mkdir -p "$out" "$final"
# The device tool returns at most 8 files: everything is packed into one archive at exit.
trap 'tar czf "$final/gpu-logs.tgz" -C /tmp gpu-logs; cp "$out"/*.png "$out"/*.csv "$final"/ 2>/dev/null' EXIT
mat=${MSP_MATRICES_DIR:-$PWD/matrices-local}
stage=${1:-all}
export MSP_MATRICES_DIR=$mat
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
t0=$(date +%s)
echo "== build"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DMSP_CUDA=ON -DMSP_MATRICES_DIR="$mat" > "$out/build.log" 2>&1 &&
  cmake --build build-gpu -j 16 >> "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; echo "BUILD FAILED"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
./build-gpu/mixsparse devices > "$out/devices.txt" 2>&1; cat "$out/devices.txt"
if [ "$stage" = all ] || [ "$stage" = test ] || [ "$stage" = quick ]; then
  echo "== ctest (all tests, GPU present)"
  (cd build-gpu && ctest --output-on-failure -j 8 --timeout 400) > "$out/ctest.log" 2>&1
  grep -E "tests passed|tests failed|Failed|\*\*\*|SKIPPED|Not Run" "$out/ctest.log" | head -40
  for t in build-gpu/tests/cuda_*; do echo "-- $t"; grep -E "checks|SKIPPED" "$out/ctest.log" | grep "$(basename $t)" | head -3; done
  echo "ctest done: $(( $(date +%s) - t0 )) s"
  ./build-gpu/mixsparse run > "$out/run.txt" 2>&1; cat "$out/run.txt"
fi
if [ "$stage" = all ] || [ "$stage" = sanitize ]; then
  echo "== compute-sanitizer"
  GPU_CHECK_NO_PLAIN=1 timeout 500 ./scripts/gpu-check.sh build-gpu > "$out/gpu-check.log" 2>&1
  tail -20 "$out/gpu-check.log"
  echo "sanitizer done: $(( $(date +%s) - t0 )) s"
fi
if [ "$stage" = all ] || [ "$stage" = bench ]; then
  echo "== benchmark"
  timeout 480 ./scripts/bench-gpu.sh "$out" > "$out/bench.log" 2>&1
  tail -60 "$out/bench.log"
  echo "bench done: $(( $(date +%s) - t0 )) s"
fi
if [ "$stage" = quick ]; then
  echo "== quick benchmark"
  timeout 240 ./build-gpu/bench/mixsparse-bench --quick --reps 20 --dir "$mat" --min-nnz 1000000 \
    --csv "$out/bench.csv" --json "$out/bench.json" > "$out/bench-quick.txt" 2>&1
  tail -70 "$out/bench-quick.txt"
  echo "quick bench done: $(( $(date +%s) - t0 )) s"
fi
if [ "$stage" = ab ]; then
  echo "== CUDA tests, default kernels"
  (cd build-gpu && ctest -R "cuda_|readme|cli_golden" --output-on-failure -j 5 --timeout 400) > "$out/ctest-cuda.log" 2>&1
  grep -E "Test +#|tests passed|tests failed" "$out/ctest-cuda.log"
  echo "== CUDA CSR/COO tests with the old kernels (MSP_CSR_VARIANT=0 MSP_COO_VARIANT=0)"
  (cd build-gpu && MSP_CSR_VARIANT=0 MSP_COO_VARIANT=0 ctest -R "cuda_csr|cuda_formats" -j 2 --timeout 400) > "$out/ctest-old.log" 2>&1
  grep -E "Test +#|tests passed" "$out/ctest-old.log"
  echo "ctest done: $(( $(date +%s) - t0 )) s"
  echo "== compute-sanitizer (default kernels)"
  GPU_CHECK_NO_PLAIN=1 timeout 300 ./scripts/gpu-check.sh build-gpu > "$out/gpu-check.log" 2>&1
  grep -E "^(PASS|FAIL)|gpu-check:" "$out/gpu-check.log"
  echo "sanitizer done: $(( $(date +%s) - t0 )) s"
  for v in new old; do
    if [ $v = old ]; then export MSP_CSR_VARIANT=0 MSP_COO_VARIANT=0; else unset MSP_CSR_VARIANT MSP_COO_VARIANT; fi
    timeout 200 ./build-gpu/bench/mixsparse-bench --formats csr,coo,cusparse --precisions f64 --reps 30 \
      --dir "$mat" --min-nnz 100001 --csv "$out/ab-$v.csv" > "$out/ab-$v.txt" 2>&1
    echo "ab $v done: $(( $(date +%s) - t0 )) s"
  done
  unset MSP_CSR_VARIANT MSP_COO_VARIANT
fi

#!/bin/sh
# gpu-check.sh: run every CUDA test plain, then under compute-sanitizer memcheck and racecheck.
#
# Usage: scripts/gpu-check.sh [BUILD_DIR]   (default: build)
# Prints one line per run and a final "gpu-check: N passed, M failed"; exits non-zero on any
# failure. A test that reports itself skipped (exit 77: no device, or no CUDA in the build)
# counts as failed here: this script exists to prove the GPU path on a GPU machine.
# Sanitizer runs set MSP_TEST_QUICK=1 (small matrices only) and MSP_TEST_SANITIZER=1 (the tests
# leave out the deliberate out-of-memory calls, which the sanitizer would report as API errors).
# The cross test (cuda_cross: every format x precision x kernel) runs under both sanitizers with
# its matrices capped by MSP_CROSS_MAX_NNZ (GPU_CHECK_CROSS_MAX_NNZ, default 20000) and at most
# GPU_CHECK_MAX_MATRICES of the collection; its plain run crosses everything.
# Logs: BUILD_DIR/gpu-check-logs/<test>.<mode>.log.
set -u

BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SANITIZER=${COMPUTE_SANITIZER:-}
if [ -z "$SANITIZER" ]; then
  if command -v compute-sanitizer >/dev/null 2>&1; then
    SANITIZER=compute-sanitizer
  elif [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
    SANITIZER=/usr/local/cuda/bin/compute-sanitizer
  else
    SANITIZER=compute-sanitizer # reported as missing by the first sanitizer run
  fi
fi
# The same environment CTest gives the tests.
MSP_MATRICES_DIR=${MSP_MATRICES_DIR:-$ROOT/../shared/matrices}
MSP_TEST_DATA=${MSP_TEST_DATA:-$ROOT/tests/data}
export MSP_MATRICES_DIR MSP_TEST_DATA

if [ ! -d "$BUILD/tests" ]; then
  echo "gpu-check: $BUILD/tests not found (build first: cmake --build $BUILD)" >&2
  exit 2
fi
LOGS="$BUILD/gpu-check-logs"
mkdir -p "$LOGS"

passed=0
failed=0
found=0

# run MODE TEST [PREFIX...]: one run, one summary line.
run() {
  mode=$1
  test=$2
  shift 2
  name=$(basename "$test")
  log="$LOGS/$name.$mode.log"
  start=$(date +%s)
  "$@" "$test" >"$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    printf 'PASS  %-14s %-10s %5ss  %s\n' "$name" "$mode" "$secs" "$(tail -n 1 "$log")"
  else
    failed=$((failed + 1))
    if [ $rc -eq 77 ]; then
      why="skipped (exit 77), counted as failed"
    else
      why="exit $rc"
    fi
    printf 'FAIL  %-14s %-10s %5ss  %s; log: %s\n' "$name" "$mode" "$secs" "$why" "$log"
    grep -m 5 -E 'CHECK|ERROR|error|SKIPPED|Invalid|Race|Leaked|not found' "$log" | sed 's/^/      /'
  fi
}

for t in "$BUILD"/tests/cuda_*; do
  if [ ! -f "$t" ] || [ ! -x "$t" ]; then continue; fi
  found=$((found + 1))
  # GPU_CHECK_NO_PLAIN=1 skips the plain run (when ctest has just run the same binaries).
  [ -n "${GPU_CHECK_NO_PLAIN:-}" ] || run plain "$t" env
  # Under the sanitizers: small matrices, at most 30 of the collection (spread over it).
  small="MSP_TEST_QUICK=1 MSP_TEST_SANITIZER=1 MSP_TEST_MAX_NNZ=${GPU_CHECK_MAX_NNZ:-30000}"
  small="$small MSP_TEST_MAX_MATRICES=${GPU_CHECK_MAX_MATRICES:-30}"
  small="$small MSP_CROSS_MAX_NNZ=${GPU_CHECK_CROSS_MAX_NNZ:-20000}"
  run memcheck "$t" env $small "$SANITIZER" --tool memcheck --leak-check full --error-exitcode 1
  run racecheck "$t" env $small "$SANITIZER" --tool racecheck --error-exitcode 1
done

if [ $found -eq 0 ]; then
  echo "gpu-check: no cuda_* test binaries in $BUILD/tests (configure with -DMSP_CUDA=ON)" >&2
  echo "gpu-check: 0 passed, 1 failed"
  exit 1
fi
echo "gpu-check: $passed passed, $failed failed"
[ $failed -eq 0 ]

#!/usr/bin/env bash
# bench-gpu.sh: build and run mixsparse-bench (generated suite + matrices-local/) on the GPU, writing table, JSON, CSV and PNG to OUTDIR.
#
# usage: scripts/bench-gpu.sh OUTDIR [more mixsparse-bench options]
#   env BUILD   build directory (default: build-gpu when scripts/gpu-all.sh made it, else build);
#               configured with -DMSP_CUDA=ON when it has no CMakeCache.txt
#   env BUDGET  seconds after which later matrices skip the less important variants (default 210;
#               see bench/README.md), so that the whole run stays near 6 minutes on an H100
# matrices-local/ (git-ignored) holds the real matrices above 1e5 nonzeros; without it only
# the generated suite runs.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 OUTDIR [mixsparse-bench options]" >&2
  exit 2
fi
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
shift
BUDGET=${BUDGET:-210}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ -z "${BUILD:-}" ]; then
  if [ -f build-gpu/CMakeCache.txt ]; then BUILD=build-gpu; else BUILD=build; fi
fi
mkdir -p "$OUT"

start=$(date +%s)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMSP_CUDA=ON > "$OUT/cmake.log" 2>&1 ||
    { cat "$OUT/cmake.log" >&2; exit 1; }
fi
cmake --build "$BUILD" -j "$(nproc)" --target mixsparse-bench > "$OUT/build.log" 2>&1 ||
  { tail -50 "$OUT/build.log" >&2; exit 1; }
echo "build: $(( $(date +%s) - start )) s" >&2

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,power.limit --format=csv > "$OUT/gpu.txt" 2>&1 || true

args=()
if [ -d matrices-local ]; then
  args+=(--dir matrices-local --min-nnz 100001)
else
  echo "note: matrices-local/ is absent: generated suite only" >&2
fi

set +e
"$BUILD/bench/mixsparse-bench" ${args[@]+"${args[@]}"} --budget "$BUDGET" \
  --json "$OUT/bench.json" --csv "$OUT/bench.csv" --png "$OUT/bench.png" \
  --plot-script "$ROOT/bench/plot.py" "$@" > "$OUT/bench.txt" 2> "$OUT/bench.err"
rc=$?
set -e
# The device lines and the summary (the end of the table); the full table is in bench.txt.
head -5 "$OUT/bench.txt" || true
sed -n '/^==== summary/,$p' "$OUT/bench.txt" || true
tail -3 "$OUT/bench.err" >&2 || true
echo "mixsparse-bench exit $rc after $(( $(date +%s) - start )) s; outputs in $OUT" >&2
exit $rc

#!/usr/bin/env bash
# bench-gpu.sh: build and run mixsparse-bench (generated suite + matrices-local/) on the GPU, writing table, JSON, CSV and PNG to OUTDIR.
#
# usage: scripts/bench-gpu.sh OUTDIR [more mixsparse-bench options, for the main stage]
#   env BUILD   build directory (default: build-gpu when scripts/gpu-all.sh made it, else build);
#               configured with -DMSP_CUDA=ON when it has no CMakeCache.txt
#   env BUDGET  seconds after which later matrices skip the less important variants (default 210;
#               see bench/README.md), so that the main stage stays near 6 minutes on an H100
#   env STAGE   main (generated suite + real matrices: bench.*), precision (every
#               storage precision on four generated matrices, bench-precision.*, and x, y in f64
#               vs f32 on random:16000000:2, bench-vectors.*; about 5 minutes) or all (default)
#   env PREC_REPS  timed runs per row in the precision stage (default 20)
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

STAGE=${STAGE:-all}
BENCH="$BUILD/bench/mixsparse-bench"
rc=0

# ---- main stage: the generated suite and matrices-local/ in f64 and f32 -----------------------
if [ "$STAGE" = all ] || [ "$STAGE" = main ]; then
  args=()
  if [ -d matrices-local ]; then
    args+=(--dir matrices-local --min-nnz 100001)
  else
    echo "note: matrices-local/ is absent: generated suite only" >&2
  fi

  set +e
  "$BENCH" ${args[@]+"${args[@]}"} --budget "$BUDGET" \
    --json "$OUT/bench.json" --csv "$OUT/bench.csv" --png "$OUT/bench.png" \
    --plot-script "$ROOT/bench/plot.py" "$@" > "$OUT/bench.txt" 2> "$OUT/bench.err"
  rc=$?
  set -e
  # The device lines and the summary (the end of the table); the full table is in bench.txt.
  head -5 "$OUT/bench.txt" || true
  sed -n '/^==== summary/,$p' "$OUT/bench.txt" || true
  tail -3 "$OUT/bench.err" >&2 || true
  echo "main stage: mixsparse-bench exit $rc after $(( $(date +%s) - start )) s" >&2
fi

# ---- precision stage -----------------------------------------------------------------
# Every storage precision (CPMS reading 1 of 2, 1-2 of 4 and all segments) in the formats the
# AUTO rule and the precisions care about (CSR with each kernel, COO, ELL, HLL, DIA, HDIA, and
# AUTO itself), against cuSPARSE in f64, f32 and CSR with f16 / bf16 values; then x and y in f64
# against f32 where they are a third of the bytes. Fewer timed runs keep it near 5 minutes.
if [ "$STAGE" = all ] || [ "$STAGE" = precision ]; then
  PREC_REPS=${PREC_REPS:-20}
  pstart=$(date +%s)
  common=(--no-generated --reps "$PREC_REPS" --warmup 3)
  set +e
  "$BENCH" "${common[@]}" --gen stencil27:128 --gen random:4000000:16 --gen rmat:21:16 \
    --gen laplace2d:3000 --formats csr,coo,ell,hll,dia,hdia,auto,cusparse \
    --precisions f64,f32,f16,bf16,fx32,fx16,cpms2:1,cpms2:2,cpms4:1,cpms4:2,cpms4:4 \
    --json "$OUT/bench-precision.json" --csv "$OUT/bench-precision.csv" \
    > "$OUT/bench-precision.txt" 2> "$OUT/bench-precision.err"
  prc=$?
  "$BENCH" "${common[@]}" --gen random:16000000:2 --formats csr,ell,hll,auto,cusparse \
    --precisions f64,f32 --vector-precisions f64,f32 \
    --json "$OUT/bench-vectors.json" --csv "$OUT/bench-vectors.csv" \
    > "$OUT/bench-vectors.txt" 2> "$OUT/bench-vectors.err"
  vrc=$?
  set -e
  tail -n 3 "$OUT/bench-precision.err" "$OUT/bench-vectors.err" >&2 || true
  python3 "$ROOT/scripts/bench-table-precision.py" "$OUT/bench-precision.csv" \
    "$OUT/bench-vectors.csv" > "$OUT/precision-table.md" 2> "$OUT/precision-table.err" || true
  tail -4 "$OUT/precision-table.md" || true
  echo "precision stage: exit $prc / $vrc after $(( $(date +%s) - pstart )) s" >&2
  [ $rc -ne 0 ] || rc=$prc
  [ $rc -ne 0 ] || rc=$vrc
fi
echo "bench-gpu.sh: exit $rc after $(( $(date +%s) - start )) s; outputs in $OUT" >&2
exit $rc

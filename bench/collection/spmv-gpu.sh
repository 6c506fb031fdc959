#!/usr/bin/env bash
# spmv-gpu.sh: the SpMV collection benchmark against cuSPARSE on one GPU, in one job, for at most
# about 145 s. Run from the repository root on the device machine:
#   BUILD=./dev-build MATS=./matrices-local bash bench/collection/spmv-gpu.sh
# BUILD: a CUDA build of the committed tree with bench/mixsparse-bench and libmixsparse_dev.so
# (default ./dev-build); MATS: the files of bench/collection/matrices.txt as NAME.mtx.gz, at any
# depth, with the collection's INDEX.tsv (default ./matrices-local, a git-ignored copy of those
# files of ../shared/matrices); SPMV_BUDGET: the seconds it may take (default 145). Writes
# $OUT/spmv/:
#   passN.csv                      up to five passes over every matrix (ours and cuSPARSE in
#                                  each, f64 and f32 values, x and y f64 for ours)
#   bench-N.log                    the benchmark's log of pass N (card, bandwidth, launch floor)
#   formats.csv                    ELL, HLL, DIA, HDIA, HYB once (f64), when time is left
#   tables.md                      the tables (scripts/bench-table-spmv.py over the passes)
#   cross.log                      cuda_cross on COO and HYB (when the build has it and time is left)
#   summary.txt                    exit codes, times, the card
# Then, on the development machine, the docs tables (see the end of this file).
set -uo pipefail
ROOT=$(pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$ROOT/dev-build}
MATS=${MATS:-$ROOT/matrices-local}
O=${OUT:-/tmp/out}/spmv
mkdir -p "$O"
S=$O/summary.txt
t0=$(date +%s)
left() { echo $((${SPMV_BUDGET:-145} - ($(date +%s) - t0))); }

B=$BUILD/bench/mixsparse-bench
[ -x "$B" ] || B=$(find "$BUILD" -name mixsparse-bench -type f -perm -u+x 2>/dev/null | head -1)
LIB=$(find "$BUILD" -name 'libmixsparse_dev.so*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=${LIB:+$(dirname "$LIB"):}$BUILD:$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMP_WAIT_POLICY=passive
{
  echo "bench: ${B:-missing}"
  echo "lib: ${LIB:-missing}"
  nvidia-smi -L 2>&1
  git -C "$ROOT" log -1 --format='tree: %h %s' 2>/dev/null
} > "$S"
if [ -z "$B" ] || [ ! -x "$B" ]; then
  echo "mixsparse-bench not found under $BUILD" | tee -a "$S"
  exit 1
fi

# The matrices, in the order of the list (by nonzeros).
files=()
for m in $(grep -v '^#' "$HERE/matrices.txt"); do
  f=$(find "$MATS" -name "$m.mtx.gz" -o -name "$m.mtx" 2>/dev/null | head -1)
  if [ -n "$f" ]; then files+=("$f"); else echo "missing matrix: $m" | tee -a "$S"; fi
done
echo "matrices: ${#files[@]}" | tee -a "$S"
[ ${#files[@]} -gt 0 ] || exit 1

# Up to five passes of the same command (three at least when time allows); each pass times ours
# and cuSPARSE on every matrix, so the ratios are of one job, and the passes show how much the
# figures move between runs. A pass took about 10 s of the earlier jobs' pace (two of 27 and 40
# matrices: 4 s and 3 s after the start-up); the first is capped at 60 s, the others at 30 s (the
# CSV is written at the end of a pass), and they stop while 60 s are left for the cross test and
# the tables.
for i in 1 2 3 4 5; do
  if [ "$(left)" -lt 60 ]; then echo "pass $i: not run, $(left) s left" | tee -a "$S"; break; fi
  cap=30
  [ "$i" = 1 ] && cap=60
  stdbuf -oL -eL timeout "$cap" "$B" --no-generated --gen banded:1:1 --reps 30 --warmup 5 \
    --budget 1000 --formats csr,coo,auto,cusparse --precisions f64,f32 \
    --csv "$O/pass$i.csv" "${files[@]}" > "$O/bench-$i.log" 2>&1
  echo "pass $i: exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$S"
done
# Our other formats once (f64 values), for the rule's next fit: formats.csv, not in the tables.
if [ "$(left)" -ge 75 ]; then
  stdbuf -oL -eL timeout 25 "$B" --no-generated --reps 30 --warmup 5 --budget 1000 \
    --formats ell,hll,dia,hdia,hyb,cusparse --precisions f64 --csv "$O/formats.csv" "${files[@]}" \
    > "$O/bench-formats.log" 2>&1
  echo "formats pass: exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$S"
fi
grep -hE "^device|^measured:|launch floor" "$O/bench-1.log" | tee -a "$S"
grep -h "max err\|exceeds\|FAIL" "$O"/bench-*.log | head -5 >> "$S"

# The kernels' results against the CPU (COO and HYB: the look-back path changed) when the build
# has the cross test and time is left.
X=$(find "$BUILD" -name cuda_cross -type f -perm -u+x 2>/dev/null | head -1)
lim=$(( $(left) - 8 ))
[ "$lim" -gt 40 ] && lim=40
if [ -n "$X" ] && [ "$lim" -ge 20 ]; then
  # the collection as the test reads it: the files and their INDEX.tsv in one folder
  MX=$(mktemp -d)
  cp "$MATS/INDEX.tsv" "$MX/"
  for f in "${files[@]}"; do ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$MX/"; done
  MSP_MATRICES_DIR=$MX MSP_CROSS_FORMATS=coo,hyb MSP_CROSS_MAX_NNZ=400000 MSP_TEST_MAX_NNZ=400000 \
    MSP_TEST_MAX_MATRICES=6 stdbuf -oL -eL timeout "$lim" "$X" > "$O/cross.log" 2>&1
  echo "cuda_cross coo,hyb: exit $? (limit ${lim} s)" | tee -a "$S"
  grep -E "^cross:|^cuda_cross:|checks|failed" "$O/cross.log" | tail -3 | tee -a "$S"
else
  echo "cuda_cross: not run (binary ${X:-missing}, limit ${lim} s)" | tee -a "$S"
fi

if command -v python3 > /dev/null && ls "$O"/pass*.csv > /dev/null 2>&1; then
  python3 "$ROOT/scripts/bench-table-spmv.py" "$O"/pass*.csv > "$O/tables.md" 2>&1
  grep -E "^passes:|^\| >= 1e5|^\| > 1e6" "$O/tables.md" | tee -a "$S"
fi
echo "done after $(( $(date +%s) - t0 )) s" | tee -a "$S"
exit 0

# ---- the docs tables (on the development machine, from the repository root) ----------------
# With the returned folder at R (R/spmv/pass*.csv and R/spmv/bench-1.log):
#   python3 scripts/bench-table-spmv.py R/spmv/pass*.csv \
#     --mats ../shared/matrices --docs docs/results \
#     --card "NVIDIA H200 (132 SMs, 60 MiB L2); read bandwidth measured in the same run <GB/s from bench-1.log>; launch floor <us from bench-1.log>" \
#     --date <date> \
#     --command "mixsparse-bench --no-generated --gen banded:1:1 --reps 30 --warmup 5 --budget 1000 --formats csr,coo,auto,cusparse --precisions f64,f32 FILES (bench/collection/matrices.txt: 62 matrices of ../shared/matrices), N passes in one job; python3 scripts/bench-table-spmv.py pass*.csv --mats ../shared/matrices --docs docs/results"
#   python3 scripts/perf-doc.py      # docs/performance.md and the chart from docs/results

#!/usr/bin/env bash
# gpu-prebuilt.sh: on a GPU machine, run CUDA binaries built elsewhere (no compile on the GPU
# machine, whose time is short): the CUDA tests plain, the cross test under compute-sanitizer
# memcheck and racecheck on a sample, and the precision benchmark. Logs go to $OUT (or ./gpu-out).
#
# usage: scripts/gpu-prebuilt.sh ARCHIVE.tar.gz
#   ARCHIVE holds tests/cuda_* , bench/mixsparse-bench and mixsparse from a build configured with
#   -DMSP_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real (see the README's "GPU runs").
#   env PREC_REPS: timed runs per benchmark row (default 10); matrices from matrices-local/;
#   SKIP_CROSS=1 leaves out the plain cross test, SAN_SKIP_CROSS=1 the cross test under the
#   sanitizers; SKIP_TESTS=1 goes straight to the benchmarks; SKIP_BENCH=1 stops after the tests; SKIP_PAGERANK / SKIP_SPMV_BENCH leave out one benchmark;
#   PR_GRAPHS (specs or files) and PR_TIMEOUT / CUPY_TIMEOUT the PageRank benchmark's graphs.
set -uo pipefail
final=${OUT:-gpu-out}
out=/tmp/gpu-logs
bin=/tmp/gpu-bin
rm -rf "$out" "$bin"
mkdir -p "$out" "$final" "$bin"
trap 'tar czf "$final/gpu-logs.tgz" -C /tmp gpu-logs; cp "$out"/*.csv "$out"/*.md "$final"/ 2>/dev/null' EXIT
tar xf "$1" -C "$bin" || { echo "cannot unpack $1"; exit 1; }
export MSP_MATRICES_DIR=${MSP_MATRICES_DIR:-$PWD/matrices-local}
export MSP_TEST_DATA=$PWD/tests/data OMP_WAIT_POLICY=passive
# libraries the build machine linked that the GPU machine may lack (libcjson), shipped in lib/
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
t0=$(date +%s)
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
"$bin/mixsparse" devices | head -3
# Line-buffered output: a test killed by its timeout still leaves what it printed.
lb="stdbuf -oL -eL"
if [ -z "${SKIP_TESTS:-}" ]; then
echo "== CUDA tests, plain"
for t in cuda_vector cuda_vector_prec cuda_bdmp cuda_pagerank cuda_gmres; do
  [ -x "$bin/tests/$t" ] || continue
  timeout "${TEST_TIMEOUT:-120}" $lb "$bin/tests/$t" > "$out/$t.log" 2>&1
  echo "$t: exit $? $(tail -n 1 "$out/$t.log")"
done
# CROSS_MAX_NNZ / CROSS_MATRICES cap the collection when time is short (default: all of it).
if [ -z "${SKIP_CROSS:-}" ]; then
env ${CROSS_MAX_NNZ:+MSP_CROSS_MAX_NNZ=$CROSS_MAX_NNZ MSP_TEST_MAX_NNZ=$CROSS_MAX_NNZ} \
  ${CROSS_MATRICES:+MSP_TEST_MAX_MATRICES=$CROSS_MATRICES} \
  timeout "${CROSS_TIMEOUT:-150}" $lb "$bin/tests/cuda_cross" > "$out/cuda_cross.log" 2>&1
echo "cuda_cross: exit $? after $(( $(date +%s) - t0 )) s"
fi
grep -E "^cross:|FAIL|not supported" "$out/cuda_cross.log" | head -20
echo "== compute-sanitizer on a sample"
small="MSP_TEST_QUICK=1 MSP_TEST_SANITIZER=1 MSP_TEST_MAX_NNZ=20000 MSP_TEST_MAX_MATRICES=${SAN_MATRICES:-6} MSP_CROSS_MAX_NNZ=20000"
for tool in memcheck racecheck; do
  extra=""
  [ $tool = memcheck ] && extra="--leak-check full"
  if [ -z "${SAN_SKIP_CROSS:-}" ]; then
    # racecheck instruments shared memory: the small cases cover every kernel
    cap=20000
    [ $tool = racecheck ] && cap=${RACE_MAX_NNZ:-2000}
    env $small MSP_CROSS_MAX_NNZ=$cap MSP_TEST_MAX_NNZ=$cap timeout "${SAN_TIMEOUT:-100}" \
      compute-sanitizer --tool $tool $extra --error-exitcode 1 \
      "$bin/tests/cuda_cross" > "$out/san-$tool-cross.log" 2>&1
    echo "cuda_cross under $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san-$tool-cross.log" | tail -1)"
  fi
  for t in cuda_bdmp cuda_pagerank cuda_gmres; do
    [ -x "$bin/tests/$t" ] || continue
    env MSP_TEST_QUICK=1 timeout "${SAN_TIMEOUT:-100}" compute-sanitizer --tool $tool $extra \
      --error-exitcode 1 "$bin/tests/$t" > "$out/san-$tool-${t#cuda_}.log" 2>&1
    echo "$t under $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san-$tool-${t#cuda_}.log" | tail -1)"
  done
  [ -n "${SAN_CROSS_ONLY:-}" ] && continue
  env $small timeout "${SAN_TIMEOUT:-40}" compute-sanitizer --tool $tool $extra --error-exitcode 1 \
    "$bin/tests/cuda_vector_prec" > "$out/san-$tool-vprec.log" 2>&1
  echo "cuda_vector_prec under $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san-$tool-vprec.log" | tail -1)"
done
echo "sanitizer done: $(( $(date +%s) - t0 )) s"
fi
[ -n "${SKIP_BENCH:-}" ] && { echo "benchmarks skipped (SKIP_BENCH)"; exit 0; }
# PageRank: our forms and modes, then CuPy on the same graphs (dumped CSR) in the same job.
if [ -x "$bin/bench/mixsparse-bench-pagerank" ] && [ -z "${SKIP_PAGERANK:-}" ]; then
  echo "== PageRank benchmark"
  mkdir -p /tmp/prdump
  graphs=""
  for g in ${PR_GRAPHS:-gen:rmat:22:16 gen:rmat:24:16 gen:powerlaw:8000000:16 $MSP_MATRICES_DIR/web-NotreDame.mtx.gz}; do
    graphs="$graphs --graph $g"
  done
  # every kernel loaded at start-up, so that no first launch times a module load
  CUDA_MODULE_LOADING=EAGER timeout "${PR_TIMEOUT:-300}" $lb "$bin/bench/mixsparse-bench-pagerank" --backend cuda $graphs \
    --dump /tmp/prdump --csv "$out/bench-pagerank.csv" > "$out/bench-pagerank.txt" 2>&1
  echo "pagerank bench: exit $? after $(( $(date +%s) - t0 )) s"
  tags=$(ls /tmp/prdump/*.txt 2>/dev/null | xargs -n1 basename 2>/dev/null | sed 's/\.txt$//')
  timeout "${CUPY_TIMEOUT:-200}" $lb python3 bench/pagerank_cupy.py /tmp/prdump $tags \
    --csv "$out/bench-pagerank-cupy.csv" > "$out/bench-pagerank-cupy.txt" 2>&1
  echo "cupy pagerank: exit $? after $(( $(date +%s) - t0 )) s"
  python3 scripts/bench-table-pagerank.py "$out/bench-pagerank.csv" "$out/bench-pagerank-cupy.csv" \
    > "$out/pagerank-table.md" 2>&1
  cat "$out/pagerank-table.md"
  rm -rf /tmp/prdump
fi
[ -n "${SKIP_SPMV_BENCH:-}" ] && { echo "SpMV benchmarks skipped (SKIP_SPMV_BENCH)"; exit 0; }
echo "== precision benchmark"
reps=${PREC_REPS:-10}
timeout "${BENCH_TIMEOUT:-170}" "$bin/bench/mixsparse-bench" --no-generated --reps "$reps" --warmup 2 \
  ${BENCH_GENS:---gen stencil27:128 --gen random:4000000:16 --gen rmat:21:16 --gen laplace2d:3000} \
  --formats "${BENCH_FORMATS:-csr,coo,ell,hll,dia,hdia,auto,cusparse}" \
  --precisions f64,f32,f16,bf16,fx32,fx16,cpms2:1,cpms2:2,cpms4:1,cpms4:2,cpms4:4 \
  --json "$out/bench-precision.json" --csv "$out/bench-precision.csv" \
  > "$out/bench-precision.txt" 2> "$out/bench-precision.err"
echo "precision bench: exit $? after $(( $(date +%s) - t0 )) s"
timeout "${VEC_TIMEOUT:-45}" "$bin/bench/mixsparse-bench" --no-generated --reps "$reps" --warmup 2 \
  --gen random:16000000:2 --formats csr,auto,cusparse --precisions f64,f32 \
  --vector-precisions f64,f32 --json "$out/bench-vectors.json" --csv "$out/bench-vectors.csv" \
  > "$out/bench-vectors.txt" 2> "$out/bench-vectors.err"
echo "vector bench: exit $? after $(( $(date +%s) - t0 )) s"
python3 scripts/bench-table-precision.py "$out/bench-precision.csv" "$out/bench-vectors.csv" \
  > "$out/precision-table.md" 2> "$out/precision-table.err"
tail -n 25 "$out/precision-table.md"
echo "done: $(( $(date +%s) - t0 )) s"

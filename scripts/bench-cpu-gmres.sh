#!/bin/sh
# bench-cpu-gmres.sh BUILD DUMPDIR OUT.csv [RUNS]: GMRES on the CPU against SciPy, the same
# systems, restart and tolerance (b = ones, x0 = 0, rtol 1e-8, f64 basis, no preconditioner):
# mixsparse-bench-solve (DCGS2) and bench/gmres_cupy.py --peer scipy, with 1 and 2 threads
# (OMP_NUM_THREADS; OPENBLAS_NUM_THREADS for SciPy's BLAS), RUNS times each (5). Each line of
# OUT.csv is a CSV row of either program with the runner and thread count first (ours1, scipy2,
# ...); scripts/bench-targets-gmres.py --cpu takes the fastest run of each.
build=$1 dump=$2 out=$3 runs=${4:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PY:-/usr/bin/python3} # the Debian interpreter, whose SciPy is the packaged one
command -v "$py" >/dev/null || py=python3
mats=${MSP_MATRICES_DIR:-$here/../shared/matrices}
mkdir -p "$dump"
: >"$out"
r=0
while [ $r -lt "$runs" ]; do
  for sys in gen:poisson3d:48:100 "$mats/add32.mtx.gz:50" "$mats/pde2961.mtx.gz:50"; do
    spec=${sys%:*} m=${sys##*:}
    for t in 1 2; do
      OMP_NUM_THREADS=$t "$build/bench/mixsparse-bench-solve" --backend cpu --system "$spec" \
        --restarts "$m" --bases f64 --preconds none --orthos dcgs2 --max-iters 5000 \
        --dump "$dump" --csv "$dump/ours.csv" >/dev/null || exit 1
      tail -n 1 "$dump/ours.csv" | sed "s/^/ours$t,/" >>"$out"
      OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t $py "$here/bench/gmres_cupy.py" "$dump" "$spec" \
        --restarts "$m" --preconds none --peer scipy --max-iters 5000 | tail -n 1 |
        sed "s/^/scipy$t,/" >>"$out"
    done
  done
  r=$((r + 1))
done

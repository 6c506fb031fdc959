#!/usr/bin/env bash
# dist-scaling.sh: the distributed layer's scaling benchmark on a machine with several GPUs:
# strong scaling (the same matrix on 2 and 4 GPUs, against one GPU in the same job: rank 0's
# one-process reference), weak scaling (the same rows per GPU) and the two halo transports (NCCL
# and pinned host buffers) side by side. Each job is one `mpirun -np N mixsparse ... --json`; its
# JSON goes to one line of $OUT/dist-jobs.jsonl with the job's name, ranks and command, which
# scripts/dist-table.py turns into bench/results/dist-scaling.csv and docs/distributed.md.
#
# usage: scripts/dist-scaling.sh BINDIR [JOB...]
#   BINDIR holds mixsparse (built with MPI and CUDA); JOBs (default: all): spmv-stencil,
#   spmv-rmat, solve, pagerank, weak.
#   env RANKS (default "2 4"), TRANSPORTS (default "nccl host"), BASES (GMRES's, default
#   "f64 f32"), REPEAT (products per SpMV timing, default 50), JOB_TIMEOUT (seconds per job,
#   default 240).
set -uo pipefail
bin=$1
shift
out=${OUT:-dist-out}
mkdir -p "$out"
log=$out/dist-jobs.jsonl
ranks=${RANKS:-"2 4"}
transports=${TRANSPORTS:-"nccl host"}
repeat=${REPEAT:-50}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=${OMP_NUM_THREADS:-16} OMP_WAIT_POLICY=passive
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)

# job NAME NP ARGS...: one mpirun, its JSON (or its error) as one line of the log
job() {
  local name=$1 np=$2
  shift 2
  local t0=$(date +%s)
  timeout "${JOB_TIMEOUT:-240}" mpirun -np "$np" --bind-to none -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS \
    -x LD_LIBRARY_PATH \
    -x OMP_WAIT_POLICY "$bin/mixsparse" "$@" --json > /tmp/dist-job.json 2> /tmp/dist-job.err
  local rc=$?
  python3 - "$name" "$np" "$rc" "$card" "$gpus" "mpirun -np $np mixsparse $* --json" \
    /tmp/dist-job.json /tmp/dist-job.err >> "$log" <<'EOF'
import json, sys, datetime
name, np, rc, card, gpus, cmd, jf, ef = sys.argv[1:9]
try:
    res = json.load(open(jf))
except Exception:
    res = None
print(json.dumps({"job": name, "ranks": int(np), "rc": int(rc), "card": card,
                  "gpus": int(gpus or 0), "command": cmd,
                  "date": datetime.datetime.utcnow().strftime("%Y-%m-%d"),
                  "result": res, "stderr": open(ef).read()[-2000:]}))
EOF
  echo "$name np=$np rc=$rc $(( $(date +%s) - t0 )) s"
  [ $rc -ne 0 ] && tail -5 /tmp/dist-job.err
}

# one_gpu NAME ARGS...: the one-GPU figure of a weak-scaling row (no mpirun)
one_gpu() {
  local name=$1
  shift
  timeout "${JOB_TIMEOUT:-240}" "$bin/mixsparse" "$@" --json > /tmp/dist-job.json 2> /tmp/dist-job.err
  local rc=$?
  python3 - "$name" "$rc" "$card" "mixsparse $* --json" /tmp/dist-job.json >> "$log" <<'EOF'
import json, sys, datetime
name, rc, card, cmd, jf = sys.argv[1:6]
try:
    res = json.load(open(jf))
except Exception:
    res = None
print(json.dumps({"job": name, "ranks": 1, "rc": int(rc), "card": card, "command": cmd,
                  "date": datetime.datetime.utcnow().strftime("%Y-%m-%d"), "result": res}))
EOF
  echo "$name one GPU rc=$rc"
}

jobs=("$@")
sel() {
  [ ${#jobs[@]} -eq 0 ] && return 0
  for j in "${jobs[@]}"; do [ "$j" = "$1" ] && return 0; done
  return 1
}

# strong scaling: SpMV on stencil27:200 (216 M nonzeros), both transports
if sel spmv-stencil; then
  for np in $ranks; do
    for t in $transports; do
      job spmv-stencil27-200 "$np" spmv gen:stencil27:200 --backend cuda --transport "$t" \
        --repeat "$repeat"
    done
  done
fi
# SpMV on an R-MAT graph, where the halo is most of x: rows in blocks, then METIS's layout
if sel spmv-rmat; then
  for np in $ranks; do
    job spmv-rmat-24-16 "$np" spmv gen:rmat:24:16 --backend cuda --transport nccl --repeat "$repeat"
    job spmv-rmat-24-16-metis "$np" spmv gen:rmat:24:16 --backend cuda --transport nccl \
      --repeat "$repeat" --partition metis
  done
fi
# GMRES, restart 100, Jacobi, f64 and f32 bases (both transports: over NCCL the reductions stay
# on the device, over the host transport they go through MPI)
if sel solve; then
  for np in $ranks; do
    for b in ${BASES:-f64 f32}; do
      for t in $transports; do
        job "solve-convdiff3d-160-$b" "$np" solve gen:convdiff3d:160 --backend cuda \
          --transport "$t" --restart 100 --precond jacobi --basis "$b"
      done
    done
  done
fi
# PageRank (pull form) on an R-MAT graph
if sel pagerank; then
  for np in $ranks; do
    job pagerank-rmat-25-16 "$np" pagerank gen:rmat:25:16 --backend cuda --transport nccl
  done
fi
# weak scaling: stencil27 of about 100 M nonzeros per GPU (155^3, 196^3, 246^3 rows)
if sel weak; then
  one_gpu weak-stencil27-155 spmv gen:stencil27:155 --backend cuda --repeat "$repeat"
  for np in $ranks; do
    n=155
    [ "$np" = 2 ] && n=196
    [ "$np" = 4 ] && n=246
    for t in $transports; do
      job "weak-stencil27-$n" "$np" spmv gen:stencil27:$n --backend cuda --transport "$t" \
        --repeat "$repeat" --no-reference
    done
  done
fi

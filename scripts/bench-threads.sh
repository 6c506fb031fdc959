#!/bin/sh
# bench-threads.sh PROGRAM MATRIX [ROUNDS] [BUSY]: the CPU product's time per thread setting,
# with BUSY (default 2) busy processes competing for the cores, as CSV on stdout:
# setting,median_ms,min_ms,max_ms,runs. The settings: one thread, the default, two threads
# (--threads 2), and two threads that spin while they wait (OpenMP's active policy).
prog=$1; m=$2; rounds=${3:-7}; busy=${4:-2}
pids=""
for i in $(seq "$busy"); do yes >/dev/null & pids="$pids $!"; done
trap 'kill $pids 2>/dev/null' EXIT
sleep 1
run() { # NAME ENV ARGS...
  name=$1; envs=$2; shift 2
  t=$(env $envs "$prog" spmv "$m" --backend cpu --repeat 100 --json "$@" 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds_per_product"]*1e3)')
  echo "$name|$t"
}
for r in $(seq "$rounds"); do
  run "1 thread (OMP_NUM_THREADS=1)" "OMP_NUM_THREADS=1"
  run "default" "X=1"
  run "--threads 2" "X=1" --threads 2
  run "2 threads spinning (OMP_NUM_THREADS=2 OMP_WAIT_POLICY=active)" "OMP_NUM_THREADS=2 OMP_WAIT_POLICY=active"
done | python3 -c '
import sys, statistics, collections
d = collections.OrderedDict()
for l in sys.stdin:
    k, v = l.rstrip("\n").split("|")
    if v: d.setdefault(k, []).append(float(v))
print("setting,median_ms,min_ms,max_ms,runs")
for k, v in d.items():
    print("%s,%.3f,%.3f,%.3f,%d" % (k, statistics.median(v), min(v), max(v), len(v)))'

#!/bin/sh
# test_dist_agree.sh MPIEXEC EXTRA PROGRAM: ranks that are given different command lines, or
# of which one fails before the distributed context exists, all refuse alike with one message
# from rank 0, and never hang: each job runs under a time limit, and running past it fails.
mpiexec=$1 extra=$2 prog=$3
limit=60
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
cases=0
# run NAME WANT_STATUS WANT_TEXT MPIEXEC-ARGS...: the job's exit status and a line of its output
run() {
  name=$1 want=$2 text=$3
  shift 3
  cases=$((cases + 1))
  # shellcheck disable=SC2086 # EXTRA: zero or more words
  timeout -k 10 "$limit" "$mpiexec" $extra "$@" >"$tmp/out" 2>&1
  got=$?
  if [ "$got" = 124 ] || [ "$got" = 137 ]; then
    echo "FAIL $name: still running after ${limit}s (a hang)"
    fails=$((fails + 1))
  elif [ "$got" != "$want" ]; then
    echo "FAIL $name: exit status $got, expected $want"
    cat "$tmp/out"
    fails=$((fails + 1))
  elif ! grep -q -- "$text" "$tmp/out"; then
    echo "FAIL $name: the output lacks '$text':"
    cat "$tmp/out"
    fails=$((fails + 1))
  elif [ "$(grep -c -- "$text" "$tmp/out")" != 1 ]; then
    echo "FAIL $name: '$text' more than once (one message for the job):"
    cat "$tmp/out"
    fails=$((fails + 1))
  fi
}
differs="was given another command line than rank 0"
g=gen:laplace2d:100
run commands 2 "$differs" -n 1 "$prog" spmv $g : -n 1 "$prog" solve $g
run repeat 2 "$differs" -n 1 "$prog" spmv $g --repeat 5 : -n 1 "$prog" spmv $g --repeat 50
run basis 2 "$differs" -n 1 "$prog" solve $g --basis f64 : -n 1 "$prog" solve $g --basis fx16
run bogus 2 "$differs" -n 1 "$prog" spmv $g : -n 1 "$prog" spmv $g --bogus
run file 2 "$differs" -n 1 "$prog" spmv $g : -n 1 "$prog" spmv gen:laplace2d:101
run format 2 "$differs" -n 2 "$prog" spmv $g --format csr : -n 1 "$prog" spmv $g --format ell
# One rank fails before the distributed context is made: in its working directory the output
# is the input file (a hard link), so it refuses; the others must not go on alone.
mkdir "$tmp/a" "$tmp/b"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n3 3 3\n' >"$tmp/a/m.mtx"
cp "$tmp/a/m.mtx" "$tmp/b/m.mtx"
ln "$tmp/b/m.mtx" "$tmp/b/y.mtx"
run early_failure 2 "as rank 1 sees it" -n 1 --wdir "$tmp/a" "$prog" spmv m.mtx --output y.mtx : \
  -n 1 --wdir "$tmp/b" "$prog" spmv m.mtx --output y.mtx
if [ -e "$tmp/a/y.mtx" ]; then
  echo "FAIL early_failure: rank 0 wrote its output although rank 1 refused"
  fails=$((fails + 1))
fi
# the same command line on every rank still runs
run same 0 '"status":"ok"' -n 2 "$prog" spmv $g --json
# --no-reference on a gen: matrix: no rank makes the whole matrix (rank 0 learns the size from
# the ranks' rows), and the results are the reference run's bits; a bad spec fails alike
for c in "spmv gen:stencil27:24" "solve gen:convdiff3d:24 --restart 20" "pagerank gen:rmat:14:8"; do
  w=$(echo "$c" | cut -d' ' -f1)
  # shellcheck disable=SC2086 # c: the command and its options
  run "${w}_ref" 0 'result bits' -n 2 "$prog" $c --output "$tmp/$w-ref.mtx"
  # shellcheck disable=SC2086
  run "${w}_noref" 0 'no one-process reference' -n 2 "$prog" $c --no-reference \
    --output "$tmp/$w-noref.mtx"
  if ! cmp -s "$tmp/$w-ref.mtx" "$tmp/$w-noref.mtx"; then
    echo "FAIL ${w}_noref: the result differs from the run with the reference"
    fails=$((fails + 1))
  fi
done
run noref_bad_spec 1 'unknown generator' -n 2 "$prog" spmv gen:nosuch:3 --no-reference
echo "test_dist_agree: $cases cases, $fails failures"
[ "$fails" -eq 0 ]

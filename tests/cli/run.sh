#!/bin/sh
# run.sh PROGRAM DIR [--update]: golden-output tests of the mixsparse program.
# Each case runs the program, checks its exit status, and compares stdout (or the file it
# wrote) with DIR/expected/NAME.out and stderr with DIR/expected/NAME.err byte for byte.
# Timing lines are nondeterministic, so spmv cases compare the written y file, not stdout.
prog=$1
dir=$2
update=${3:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
cases=0

# check NAME EXPECTED_STATUS WHAT(stdout|file:PATH|none) ARGS...
check() {
  name=$1; want=$2; what=$3; shift 3
  cases=$((cases + 1))
  (cd "$dir/input" && "$prog" "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
  got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit status $got, expected $want"; cat "$tmp/$name.err"; fails=$((fails + 1)); return
  fi
  case $what in
    stdout) actual="$tmp/$name.out" ;;
    file:*) actual="$dir/input/${what#file:}" ;;
    none) actual="" ;;
  esac
  # stderr has the program's own messages; compare them too
  for kind in out err; do
    if [ "$kind" = out ]; then src=$actual; else src="$tmp/$name.err"; fi
    [ -n "$src" ] || continue
    exp="$dir/expected/$name.$kind"
    if [ "$update" = "--update" ]; then cp "$src" "$exp"; continue; fi
    if ! cmp -s "$src" "$exp"; then
      echo "FAIL $name: $kind differs from $exp"; diff "$exp" "$src" | head -20; fails=$((fails + 1))
    fi
  done
  case $what in file:*) rm -f "$dir/input/${what#file:}" ;; esac
}

check info_small 0 stdout info small.mtx
check info_small_json 0 stdout info small.mtx --json
check info_sym 0 stdout info sym.mtx
check info_gen 0 stdout info gen:laplace2d:4
check info_gen_dia 0 stdout info gen:laplace2d:300
check info_gen_coo 0 stdout info gen:rmat:16:8:3
check spmv_ones 0 file:y_ones.mtx spmv small.mtx --backend cpu --output y_ones.mtx
check spmv_x 0 file:y_x.mtx spmv small.mtx --backend cpu --x x5.mtx --format coo --output y_x.mtx
check spmv_sym 0 file:y_sym.mtx spmv sym.mtx --backend cpu --kernel merge --format csr --output y_sym.mtx
check err_missing 1 none info no_such_file.mtx
check err_index 1 none info bad_index.mtx
check err_banner 1 none spmv bad_banner.mtx --backend cpu
check err_xlen 1 none spmv small.mtx --backend cpu --x x3.mtx
check err_option 2 none spmv small.mtx --frobnicate
check err_format 2 none spmv small.mtx --format csc
check err_nofile 2 none info
check err_command 2 none frobnicate
check err_repeat 2 none spmv small.mtx --repeat 0
# Range honesty: f16 cannot hold 1e5 or -7e5 (above 65504) nor -1e-10 (below 2^-25)
check err_range 1 none spmv range.mtx --backend cpu --format csr --precision f16
check spmv_range_saturate 0 file:y_range_sat.mtx spmv range.mtx --backend cpu --format csr --precision f16 --range saturate --output y_range_sat.mtx
check err_range_policy 2 none spmv range.mtx --range clamp
check spmv_vec_f32 0 file:y_vf32.mtx spmv small.mtx --backend cpu --vector-precision f32 --x x5.mtx --output y_vf32.mtx
check spmv_vec_sat 0 file:y_vsat.mtx spmv range.mtx --backend cpu --format csr --vector-precision f16 --output y_vsat.mtx
check err_vec_prec 2 none spmv small.mtx --vector-precision f8
check help 0 stdout --help
check help_spmv 0 stdout spmv --help

if [ "$update" = "--update" ]; then echo "cli_golden: expected outputs updated"; exit 0; fi
echo "cli_golden: $cases cases, $fails failures"
[ "$fails" -eq 0 ]

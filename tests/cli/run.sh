#!/bin/sh
# run.sh PROGRAM DIR [--update]: golden-output tests of the mixsparse program.
# Each case runs the program, checks its exit status, and compares stdout (or the file it
# wrote) with DIR/expected/NAME.out and stderr with DIR/expected/NAME.err byte for byte.
# Timing lines are nondeterministic, so spmv cases compare the written y file, or stdout with
# the timings masked: WHAT text (the time, speed and setup lines) or json (the timing keys).
# Every --json output is parsed with Python's json module, whatever else the case compares.
prog=$1
dir=$2
update=${3:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
cases=0
have_python=1
command -v python3 >/dev/null 2>&1 || have_python=0
[ "$have_python" = 1 ] || echo "cli_golden: python3 not found: --json outputs NOT parsed, json cases SKIPPED"

# Timings masked in text output: the lines of `spmv` and `run` that hold them.
mask_text() {
  sed -e 's/^time .*/time T/' -e 's/^  time .*/  time T/' -e 's/^  speed .*/  speed T/' \
      -e 's/^  setup .*/  setup T/' -e 's/converted in [0-9.]* ms/converted in T ms/' "$1"
}
# A JSON document parsed (failing when it is not JSON), its timing members masked, re-printed.
mask_json() {
  python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for k in ("seconds_per_product", "gb_per_s", "gflop_per_s", "load_seconds", "convert_seconds",
          "time_seconds", "time_per_iteration_seconds", "setup_seconds"):
    if k in doc:
        doc[k] = "T"
print(json.dumps(doc, indent=1))
' "$1"
}

# check NAME EXPECTED_STATUS WHAT(stdout|dash|text|json|jsononly|file:PATH|none) ARGS...
# (dash: stdout as is, stderr with the timings masked: the report of --output -)
check() {
  name=$1; want=$2; what=$3; shift 3
  case $what in json*) [ "$have_python" = 1 ] || { echo "SKIP $name: no python3"; return; } ;; esac
  cases=$((cases + 1))
  (cd "$dir/input" && "$prog" "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
  got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit status $got, expected $want"; cat "$tmp/$name.err"; fails=$((fails + 1)); return
  fi
  case " $* " in
    *" --json "*)
      if [ "$have_python" = 1 ] && ! mask_json "$tmp/$name.out" >"$tmp/$name.json"; then
        echo "FAIL $name: --json output is not JSON"; fails=$((fails + 1)); return
      fi ;;
  esac
  case $what in
    stdout|dash) actual="$tmp/$name.out" ;;
    text) mask_text "$tmp/$name.out" >"$tmp/$name.masked"; actual="$tmp/$name.masked" ;;
    json) actual="$tmp/$name.json" ;;
    jsononly) actual="" ;;
    file:*) actual="$dir/input/${what#file:}" ;;
    none) actual="" ;;
  esac
  # stderr has the program's own messages; compare them too
  for kind in out err; do
    if [ "$kind" = out ]; then src=$actual; else src="$tmp/$name.err"; fi
    if [ "$kind" = err ] && [ "$what" = dash ]; then mask_text "$src" >"$tmp/$name.errm"; src="$tmp/$name.errm"; fi
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
check pagerank_text 0 text pagerank graph.mtx --backend cpu --top 3
check pagerank_json 0 json pagerank graph.mtx --backend cpu --precision cpms4 --json --top 2
check pagerank_values 0 text pagerank graph.mtx --backend cpu --values --precision cpms2 --layout separate
check pagerank_out 0 file:p_graph.mtx pagerank graph.mtx --backend cpu --top 0 --output p_graph.mtx
check pagerank_degree 0 text pagerank graph.mtx --backend cpu --top 3 --order degree
check err_pagerank_order 2 none pagerank graph.mtx --order random
check err_pagerank_precision 2 none pagerank graph.mtx --precision f32
check err_pagerank_bank 2 none pagerank graph.mtx --bank 256
check err_pagerank_format 2 none pagerank graph.mtx --format csr
check err_pagerank_weight 1 none pagerank negw.mtx --backend cpu --weighted
check err_pagerank_output 2 none pagerank graph.mtx --output graph.mtx
check solve_text 0 text solve gen:poisson3d:6 --rhs sin --precond jacobi
check solve_json 0 json solve gen:convdiff3d:6 --basis f32 --rhs random:3 --json
check solve_not_converged 3 json solve gen:convdiff3d:6 --max-iters 3 --json
check solve_out 0 file:x_solve.mtx solve gen:poisson3d:4 --precond ilu0 --output x_solve.mtx
check err_solve_basis 2 none solve gen:poisson3d:4 --basis f8
check err_solve_precond 2 none solve gen:poisson3d:4 --precond ilu1
check err_solve_option 2 none solve gen:poisson3d:4 --top 3
check err_solve_output 2 none solve small.mtx --output small.mtx
check err_solve_square 1 none solve small.mtx
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
check err_output_is_input 2 none spmv small.mtx --backend cpu --output small.mtx
check err_output_is_x 2 none spmv small.mtx --backend cpu --x x5.mtx --output ./x5.mtx
check help 0 stdout --help
check help_spmv 0 stdout spmv --help

# two error figures, each named; the JSON keys normwise_error and
# componentwise_error (the accuracy object's per-entry figure is max_entry_rel_error).
check spmv_json 0 json spmv small.mtx --backend cpu --x x5.mtx --json
check spmv_acc_json 0 json spmv small.mtx --backend cpu --format csr --precision fx16 --accuracy --json
check run_fx16 0 text run small.mtx --backend cpu --format csr --precision fx16
# Item 5 and 7: NaN in the matrix (allowed): no nan in the JSON (null and a status saying why),
# y reported, exit status 1
check run_nan 1 text run nan.mtx --backend cpu --allow-nonfinite
check run_nan_json 1 json run nan.mtx --backend cpu --allow-nonfinite --json
check info_nan_json 0 json info nan.mtx --allow-nonfinite --json
check devices_json 0 jsononly devices --json
# Item 6: the --digits guarantee in the help (help_spmv above). Item 10: usage errors exit 2.
check err_cpms2_segments 2 none spmv small.mtx --precision cpms2:3
check err_cpms4_segments 2 none spmv small.mtx --precision cpms4:5
check err_f32_segments 2 none spmv small.mtx --precision f32:2
check err_x_random 2 none spmv small.mtx --x random:abc
check err_missing_value 2 none spmv small.mtx --repeat
check err_abbrev 2 none spmv small.mtx --rep 2
# Item 11: options without effect are refused; run's help lists every option it takes
check err_digits_csr 2 none spmv small.mtx --format csr --digits 3
check err_lambda_csr 2 none spmv small.mtx --format csr --bdmp-lambda 2
check err_bdmp_f_auto 2 none spmv small.mtx --bdmp-f 0.5
check err_kernel_coo 2 none spmv small.mtx --kernel merge --format coo
check err_info_repeat 2 none info small.mtx --repeat 3
check help_run 0 stdout run --help
# Item 12: --allow-nonfinite covers --x, and the message names the option, not the API flag
check err_x_nan 1 none spmv small.mtx --backend cpu --x xnan.mtx
check spmv_x_nan 1 json spmv small.mtx --backend cpu --x xnan.mtx --allow-nonfinite --json
# Item 13: the file named once (also err_missing, err_index, err_banner above)
check err_nan 1 none info nan.mtx
# Item 14: BDMP's storage is the mix of fp32 and fp64
check spmv_bdmp_mixed 0 text spmv mixed.mtx --backend cpu --format bdmp-pbp --digits 12
check spmv_bdmp_json 0 json spmv mixed.mtx --backend cpu --format bdmp-tcki --digits 12 --json
# --format auto --digits D chooses among fp64, f32 and BDMP and says why (the
# candidates' bytes, the bound); --precision and the other formats still refuse --digits
check spmv_auto_digits 0 json spmv mixed.mtx --backend cpu --format auto --digits 12 --accuracy --json
check run_auto_digits 0 text run gen:banded:2000:16 --backend cpu --digits 7 --accuracy
check err_auto_digits_precision 2 none spmv small.mtx --digits 7 --precision f32
check err_digits_tune 2 none spmv small.mtx --format tune --digits 7
check err_auto_digits_range 2 none spmv small.mtx --digits 16
# --json errors are one JSON object on stdout, with the message; usage errors name the
# subcommand's help; --output - writes the result alone on stdout (the report goes to stderr);
# --threads N for every command, with the same bits for any N.
check err_json_missing 1 stdout spmv no_such_file.mtx --json
check err_json_option 2 stdout solve gen:poisson3d:4 --frobnicate --json
check err_json_output_dash 2 stdout spmv small.mtx --output - --json
check spmv_output_dash 0 dash spmv small.mtx --backend cpu --x x5.mtx --output -
check pagerank_output_dash 0 dash pagerank graph.mtx --backend cpu --top 0 --output - --threads 2
check spmv_threads3 0 file:y_t3.mtx spmv small.mtx --backend cpu --x x5.mtx --threads 3 --output y_t3.mtx
check info_threads 0 stdout info small.mtx --threads 1
check info_quiet 0 stdout info small.mtx --quiet
check err_threads 2 none spmv small.mtx --threads 0
check solve_one_restart 0 text solve gen:laplace2d:12 --restart 18
# Item 15: --backend cuda where there is none says why; the words depend on the build, so the
# case runs in builds without CUDA only
devices=$(cd "$dir/input" && "$prog" devices --json)
if echo "$devices" | grep -q '"cuda_built":false'; then
  check err_cuda_not_built 1 none spmv small.mtx --backend cuda
elif echo "$devices" | grep -q '"count":0' && ! [ -e /dev/nvidiactl ]; then
  # a CUDA build on a machine without an NVIDIA driver (CI's): "no usable CUDA device" and why
  check err_cuda_no_driver 1 none spmv small.mtx --backend cuda
else
  echo "SKIP err_cuda_no_driver: this machine has an NVIDIA driver (the message would differ)"
fi

if [ "$update" = "--update" ]; then echo "cli_golden: expected outputs updated"; exit 0; fi
echo "cli_golden: $cases cases, $fails failures"
[ "$fails" -eq 0 ]

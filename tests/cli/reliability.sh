#!/bin/sh
# reliability.sh PROGRAM DIR: the program's files are never lost and its messages say why.
# Every file it writes (--output, --history) goes through one safe writer: a failed write keeps
# the previous file, a symbolic link is followed, a link planted at the temporary name is never
# written through, outputs may not name one another, stale temporary files of killed writers
# are removed; and a hint is given only where it helps.
prog=$1
dir=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
cases=0
ok() { cases=$((cases + 1)); }
bad() { cases=$((cases + 1)); fails=$((fails + 1)); echo "FAIL $*"; }
cd "$tmp" || exit 1
host=$(uname -n 2>/dev/null | tr -c 'A-Za-z0-9.\n-' '_' | cut -c1-64)
[ -n "$host" ] || host=host

# 1. --history at a path of 4095 bytes (the system's limit) whose write fails (no room: a file
# size limit of 0): the previous file is kept, and the message says why.
long=$tmp
while [ ${#long} -lt 3900 ]; do
  long=$long/dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd
done
mkdir -p "$long"
name=$(printf '%*s' $((4095 - ${#long} - 1)) '' | tr ' ' h)
target=$long/$name
if [ ${#target} -ne 4095 ]; then
  bad "long path: built ${#target} bytes, not 4095"
else
  echo keep >"$target"
  # the limit holds for every regular file the process writes: its messages go through a pipe
  { (ulimit -f 0 2>/dev/null && trap '' XFSZ && exec "$prog" solve gen:laplace2d:4 --history \
    "$target") 2>&1 >/dev/null; echo "exit $?"; } | cat >err
  rc=$(sed -n 's/^exit //p' err)
  if [ "$rc" = 0 ] || [ "$(cat "$target" 2>/dev/null)" != keep ]; then
    bad "long path failing write: exit $rc, the previous file is now: $(head -c 40 "$target" 2>&1)"
  elif ! grep -q "too large\|File too large\|No space" err; then
    bad "long path failing write: the message lacks the reason: $(cat err)"
  else ok; fi
  # the same path written successfully: a CSV replaces the file, no temporary file remains
  "$prog" solve gen:laplace2d:4 --history "$target" >out 2>err
  rc=$?
  if [ "$rc" != 0 ] || [ "$(head -n 1 "$target")" != "iteration,relative_residual" ]; then
    bad "long path write: exit $rc: $(cat err)"
  elif [ "$(ls -A "$long" | wc -l)" != 1 ]; then
    bad "long path write: files left beside it: $(ls -A "$long")"
  else ok; fi
fi

# 2. --history and --output naming one file (also through a link) are refused before anything runs
echo keep >same.mtx
ln -s same.mtx same-link.mtx
for h in same.mtx same-link.mtx ./same.mtx; do
  "$prog" solve gen:laplace2d:4 --output same.mtx --history "$h" >out 2>err
  rc=$?
  if [ "$rc" != 2 ] || [ "$(cat same.mtx)" != keep ] || ! grep -q "name the same file" err; then
    bad "--output same.mtx --history $h: exit $rc, file $(head -c 20 same.mtx), $(cat err)"
  else ok; fi
done
# two new files of one name are the same target too
"$prog" solve gen:laplace2d:4 --output new.out --history ./new.out >out 2>err
rc=$?
if [ "$rc" != 2 ] || [ -e new.out ]; then bad "--output new.out --history ./new.out: exit $rc"; else ok; fi

# 3. a symbolic link target is followed: the file it names is replaced, the link stays
echo old >real.csv
ln -s real.csv link.csv
"$prog" solve gen:laplace2d:4 --history link.csv >out 2>err
rc=$?
if [ "$rc" != 0 ] || [ ! -L link.csv ] || [ "$(head -n 1 real.csv)" != "iteration,relative_residual" ]; then
  bad "--history through a link: exit $rc, link $(ls -l link.csv), real.csv $(head -c 30 real.csv)"
else ok; fi

# 4. links planted at the temporary names (the old PATH.tmpPID and the current .NAME.tmp-HOST-PID-N
# of the first counters) are never written through: the victim keeps its content
echo victim >victim.txt
sh -c 'ln -s victim.txt "hist.csv.tmp$$"
       for n in 0 1 2 3; do ln -s victim.txt ".hist.csv.tmp-$1-$$-$n"; done
       exec "$0" solve gen:laplace2d:4 --history hist.csv' "$prog" "$host" >out 2>err
rc=$?
if [ "$rc" != 0 ] || [ "$(cat victim.txt)" != victim ] || [ -L hist.csv ] ||
  [ "$(head -n 1 hist.csv)" != "iteration,relative_residual" ]; then
  bad "planted links: exit $rc, victim now $(head -c 30 victim.txt), $(cat err)"
else ok; fi
rm -f hist.csv* .hist.csv.tmp-*

# 5. errors say why (the system's reason), for --history and --output alike
"$prog" solve gen:laplace2d:4 --history no-such-dir/h.csv >out 2>err
rc=$?
if [ "$rc" != 1 ] || ! grep -q "No such file or directory" err; then
  bad "--history in a missing directory: exit $rc, message: $(cat err)"
else ok; fi
"$prog" spmv gen:laplace2d:4 --backend cpu --output no-such-dir/y.mtx >out 2>err
rc=$?
if [ "$rc" != 1 ] || ! grep -q "No such file or directory" err; then
  bad "--output in a missing directory: exit $rc, message: $(cat err)"
else ok; fi

# 6. temporary files that killed writers left are removed by the next write into the directory:
# those of processes that no longer run; a running process's stays
dead=999999
while kill -0 "$dead" 2>/dev/null; do dead=$((dead - 1)); done
mkdir stale
head -c 100000 /dev/zero >"stale/.y.mtx.tmp-$host-$dead-0"
head -c 100 /dev/zero >"stale/.other.mtx.tmp-$host-$dead-7"
echo live >"stale/.y.mtx.tmp-$host-$$-0"
echo foreign >"stale/.y.mtx.tmp-otherhost-$dead-0"
"$prog" spmv gen:laplace2d:4 --backend cpu --output stale/y.mtx >out 2>err
rc=$?
if [ "$rc" != 0 ] || [ -e "stale/.y.mtx.tmp-$host-$dead-0" ] || [ -e "stale/.other.mtx.tmp-$host-$dead-7" ]; then
  bad "stale temporary files: exit $rc, left: $(ls -A stale)"
elif [ ! -e "stale/.y.mtx.tmp-$host-$$-0" ] || [ ! -e "stale/.y.mtx.tmp-otherhost-$dead-0" ]; then
  bad "stale temporary files: a live process's or another host's file was removed: $(ls -A stale)"
else ok; fi

# 7. a GMRES breakdown (NaN or Inf produced by the iteration) comes the same with
# --allow-nonfinite: no hint that the option would help
cp "$dir/input/breakdown.mtx" . 2>/dev/null ||
  printf '%%%%MatrixMarket matrix coordinate real general\n2 2 4\n1 1 1.5e308\n1 2 1.5e308\n2 1 1.5e308\n2 2 -1.5e308\n' >breakdown.mtx
for opt in "" --allow-nonfinite; do
  "$prog" solve breakdown.mtx $opt >out 2>err
  rc=$?
  if [ "$rc" != 1 ] || ! grep -q "ERR_NONFINITE" err || grep -q "allow-nonfinite accepts" err; then
    bad "GMRES breakdown ${opt:-without options}: exit $rc, message: $(cat err)"
  else ok; fi
done
# the hint stays where it helps: a non-finite value in the file read
printf '%%%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 inf\n' >inf.mtx
"$prog" info inf.mtx >out 2>err
if ! grep -q "allow-nonfinite accepts it" err; then bad "reader hint lost: $(cat err)"; else ok; fi

echo "cli_reliability: $cases cases, $fails failures"
[ "$fails" -eq 0 ]

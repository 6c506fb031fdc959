#!/bin/sh
# run.sh MODE BUILD SOURCE LIBDIR VERSION CC CMAKE [MPI MPIEXEC]: install the built tree into a temporary
# prefix (cmake --install) and build the README's C example against it, as a user would.
#   MODE pkgconfig: `cc $(pkg-config --cflags --libs mixsparse)` (shared library), and with
#                   `pkg-config --static` and -l:libmixsparse.a (static library); exit 77 when
#                   pkg-config is not installed.
#   MODE cmake:     a C-only CMake project with find_package(mixsparse) linking
#                   mixsparse::mixsparse (shared), mixsparse::static, and mixsparse::mixsparse
#                   with MIXSPARSE_USE_STATIC_LIBS.
# Both modes first check the installed files, the soname, that the shared library exports
# msp_* symbols only (internals only those its version script lists) and that the installed
# program needs it. Each program is run and must print the README's result; the shared ones
# must need libmixsparse.so.MAJOR.MINOR, the static ones must not need libmixsparse at all.
# pkgconfig mode also checks that DESTDIR stages the tree under another root.
# MPI ON (the library was built with its distributed layer): mixsparse_mpi.h, libmixsparse_mpi.a
# and mixsparse-mpi.pc must be installed, and tests/install/mpi_example.c is built with
# `pkg-config --cflags --libs mixsparse-mpi` / linked to mixsparse::mixsparse_mpi and run under
# MPIEXEC -n 1 (it must not need libmixsparse.so). MPI OFF: those checks say SKIPPED.
mode=$1
build=$2
src=$3
libdir=$4
version=$5
cc=$6
cmake=$7
mpi=${8:-OFF}
mpiexec=$9
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
soname=libmixsparse.so.$(echo "$version" | cut -d. -f1-2)
example=$src/tests/readme_example.c

fail() {
  echo "install_$mode: FAIL: $*"
  exit 1
}

# needs PROGRAM yes|no: whether the program needs the shared library (its dynamic section).
needs() {
  if readelf -d "$1" | grep -q "NEEDED.*\[libmixsparse"; then got=yes; else got=no; fi
  [ "$got" = "$2" ] || fail "$1: needs libmixsparse: $got, expected $2"
  if [ "$2" = yes ]; then
    readelf -d "$1" | grep -q "NEEDED.*\[$soname\]" || fail "$1 does not need $soname"
  fi
}

# check PROGRAM [LAUNCHER...]: runs (under the launcher) and prints the README example's result
# (y = A x for x = 1 2 3).
check() {
  prog=$1
  shift
  LD_LIBRARY_PATH=$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@" "$prog" >"$tmp/out" 2>&1 ||
    fail "$prog exited with $?: $(cat "$tmp/out")"
  grep -q '^y = 0 0 4 on ' "$tmp/out" || fail "$1 printed: $(cat "$tmp/out")"
  echo "install_$mode: $(basename "$prog"): $(cat "$tmp/out")"
}

if [ "$mode" = pkgconfig ] && ! command -v pkg-config >/dev/null 2>&1; then
  echo "install_pkgconfig: SKIPPED: pkg-config is not installed"
  exit 77
fi

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  fail "cmake --install: $(cat "$tmp/install.log")"
for f in include/mixsparse.h "$libdir/libmixsparse.a" "$libdir/libmixsparse.so" \
  "$libdir/$soname" bin/mixsparse "$libdir/pkgconfig/mixsparse.pc" \
  "$libdir/cmake/mixsparse/mixsparseConfig.cmake" \
  "$libdir/cmake/mixsparse/mixsparseConfigVersion.cmake"; do
  [ -e "$prefix/$f" ] || fail "$f not installed"
done
if [ "$mpi" = ON ]; then
  for f in include/mixsparse_mpi.h "$libdir/libmixsparse_mpi.a" "$libdir/pkgconfig/mixsparse-mpi.pc"; do
    [ -e "$prefix/$f" ] || fail "$f not installed (built with MPI)"
  done
  # (no mpiexec found at configure time: the example runs as a singleton, without a launcher)
  launch=${mpiexec:+$mpiexec -n 1}
  mpi_example=$src/tests/install/mpi_example.c
else
  echo "install_$mode: SKIPPED the distributed layer's checks: built without MPI"
  [ ! -e "$prefix/include/mixsparse_mpi.h" ] || fail "mixsparse_mpi.h installed without MPI"
fi
readelf -d "$prefix/$libdir/libmixsparse.so" | grep -q "SONAME.*\[$soname\]" ||
  fail "libmixsparse.so has no soname $soname"
# Only the public API is exported (msp_ followed by a letter) and the msp__ internals that the
# version script names for the program and the distributed layer; no other internal.
exported=$(nm -D --defined-only "$prefix/$libdir/libmixsparse.so" | awk '{print $3}' | sed 's/@.*//')
[ -n "$exported" ] || fail "libmixsparse.so exports nothing"
listed=$(grep -o 'msp__[a-z0-9_]*' "$build/mixsparse.map" | sort -u)
others=$(echo "$exported" | grep -v '^msp_[a-z]' | grep -vxF "$listed" | head -5)
[ -z "$others" ] || fail "libmixsparse.so exports symbols outside msp_* and the map's internals: $others"
# The program is small: it links the shared library instead of a copy of every kernel.
needs "$prefix/bin/mixsparse" yes
echo "$exported" | grep -qx msp_spmv || fail "libmixsparse.so does not export msp_spmv"
"$prefix/bin/mixsparse" --version | grep -qx "mixsparse $version" ||
  fail "installed program: $("$prefix/bin/mixsparse" --version 2>&1)"

case $mode in
pkgconfig)
  export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
  got=$(pkg-config --modversion mixsparse) || fail "pkg-config does not find mixsparse"
  [ "$got" = "$version" ] || fail "pkg-config --modversion: $got, expected $version"
  # Shared library.
  # shellcheck disable=SC2046
  "$cc" -o "$tmp/ex_shared" "$example" $(pkg-config --cflags --libs mixsparse) ||
    fail "cc \$(pkg-config --cflags --libs mixsparse)"
  needs "$tmp/ex_shared" yes
  check "$tmp/ex_shared"
  # Static library: the same flags with the private dependencies, the archive named exactly.
  static_libs=$(pkg-config --static --libs mixsparse | sed 's/-lmixsparse\( \|$\)/-l:libmixsparse.a\1/')
  # shellcheck disable=SC2046,SC2086
  "$cc" -o "$tmp/ex_static" "$example" $(pkg-config --cflags mixsparse) $static_libs ||
    fail "cc \$(pkg-config --static --libs mixsparse): $static_libs"
  needs "$tmp/ex_static" no
  check "$tmp/ex_static"
  # The distributed layer: its own file, everything in Libs (the static library).
  if [ "$mpi" = ON ]; then
    mpi_flags=$(pkg-config --cflags --libs mixsparse-mpi) || fail "pkg-config does not find mixsparse-mpi"
    # shellcheck disable=SC2086
    "$cc" -o "$tmp/ex_mpi" "$mpi_example" $mpi_flags ||
      fail "cc \$(pkg-config --cflags --libs mixsparse-mpi): $mpi_flags"
    needs "$tmp/ex_mpi" no
    # shellcheck disable=SC2086
    check "$tmp/ex_mpi" $launch
  fi
  # DESTDIR stages the same tree under another root.
  DESTDIR=$tmp/stage "$cmake" --install "$build" --prefix /opt/msp >/dev/null 2>&1 ||
    fail "DESTDIR=... cmake --install"
  [ -e "$tmp/stage/opt/msp/include/mixsparse.h" ] || fail "DESTDIR not honoured"
  ;;
cmake)
  mkdir -p "$tmp/proj"
  cp "$example" "$tmp/proj/ex.c"
  cat >"$tmp/proj/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(use_mixsparse LANGUAGES C)
find_package(mixsparse $version REQUIRED CONFIG)
add_executable(ex_shared ex.c)
target_link_libraries(ex_shared PRIVATE mixsparse::mixsparse)
add_executable(ex_static ex.c)
target_link_libraries(ex_static PRIVATE mixsparse::static)
EOF
  if [ "$mpi" = ON ]; then
    cp "$mpi_example" "$tmp/proj/ex_mpi.c"
    cat >>"$tmp/proj/CMakeLists.txt" <<EOF
if(NOT mixsparse_HAVE_MPI OR NOT TARGET mixsparse::mixsparse_mpi)
  message(FATAL_ERROR "the package has no mixsparse::mixsparse_mpi")
endif()
add_executable(ex_mpi ex_mpi.c)
target_link_libraries(ex_mpi PRIVATE mixsparse::mixsparse_mpi)
EOF
  fi
  "$cmake" -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 || fail "configure: $(cat "$tmp/cmake.log")"
  "$cmake" --build "$tmp/proj/build" >"$tmp/build.log" 2>&1 || fail "build: $(cat "$tmp/build.log")"
  needs "$tmp/proj/build/ex_shared" yes
  check "$tmp/proj/build/ex_shared"
  needs "$tmp/proj/build/ex_static" no
  check "$tmp/proj/build/ex_static"
  if [ "$mpi" = ON ]; then
    needs "$tmp/proj/build/ex_mpi" no
    # shellcheck disable=SC2086
    check "$tmp/proj/build/ex_mpi" $launch
  fi
  # MIXSPARSE_USE_STATIC_LIBS turns mixsparse::mixsparse into the static library.
  "$cmake" -S "$tmp/proj" -B "$tmp/proj/build" -DMIXSPARSE_USE_STATIC_LIBS=ON >"$tmp/cmake.log" 2>&1 ||
    fail "configure with MIXSPARSE_USE_STATIC_LIBS: $(cat "$tmp/cmake.log")"
  "$cmake" --build "$tmp/proj/build" --target ex_shared >"$tmp/build.log" 2>&1 ||
    fail "build with MIXSPARSE_USE_STATIC_LIBS: $(cat "$tmp/build.log")"
  needs "$tmp/proj/build/ex_shared" no
  check "$tmp/proj/build/ex_shared"
  ;;
*)
  fail "unknown mode $mode"
  ;;
esac
echo "install_$mode: passed"

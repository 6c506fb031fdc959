#!/usr/bin/env bash
# dist-pack.sh: the distributed layer's binaries from a CUDA + MPI build, packed for the
# several-GPU machine (scripts/dist-device-run.sh unpacks them): bin/mixsparse,
# bin/tests/test_dist_cuda and bin/lib (the libraries they link from this machine that the GPU
# machine may lack: libmixsparse, libcjson, libmetis, the CUDA runtime), debug sections stripped.
# It also checks that the program holds one CUDA runtime, the shared one (no static copy linked
# into the program or the library beside it).
#
# usage: scripts/dist-pack.sh BUILDDIR OUT.tar.gz
set -euo pipefail
build=$1
out=$2
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/bin/tests" "$t/bin/lib"
cp "$build/mixsparse" "$t/bin/"
cp "$build/tests/test_dist_cuda" "$t/bin/tests/"
for f in "$t/bin/mixsparse" "$t/bin/tests/test_dist_cuda"; do
  ldd "$f" | awk '/=> \// {print $3}' |
    grep -E 'libmixsparse|libcjson|libmetis|libcudart|libGKlib' | while read -r lib; do
    cp -L "$lib" "$t/bin/lib/$(basename "$lib")"
  done
done
strip --strip-debug "$t/bin/mixsparse" "$t/bin/tests/test_dist_cuda" "$t"/bin/lib/*
# one CUDA runtime: the program and its libraries define none of the runtime's functions
for f in "$t/bin/mixsparse" "$t/bin/tests/test_dist_cuda" "$t"/bin/lib/libmixsparse*; do
  if [ "$(nm "$f" 2>/dev/null | grep -cE ' [Tt] cudaMalloc$')" != 0 ]; then
    echo "dist-pack: $f holds a static CUDA runtime" >&2
    exit 1
  fi
done
# (ldd's output is taken whole first: grep -q stopping early would fail the pipe under pipefail)
libs=$(ldd "$t/bin/mixsparse")
grep -q 'libcudart\.so' <<< "$libs" || {
  echo "dist-pack: mixsparse does not link the shared CUDA runtime" >&2
  exit 1
}
tar czf "$out" -C "$t" bin
ls -la "$out"
tar tzf "$out"

#!/usr/bin/env bash
# dist-device-run.sh: unpack the prebuilt distributed binaries on the several-GPU machine and run
# the checks (scripts/dist-gpu-check.sh) and/or the scaling benchmark (scripts/dist-scaling.sh).
# usage: scripts/dist-device-run.sh ARCHIVE.tar.gz check|bench|both [JOB...]
#   ARCHIVE (scripts/dist-pack.sh) holds bin/mixsparse, bin/tests/test_dist_cuda and bin/lib
#   (libraries the build machine linked that the GPU machine may lack, the CUDA runtime among
#   them); NCCL is the machine's own (or the Python wheel's).
set -uo pipefail
arch=$1
what=$2
shift 2
b=/tmp/dist-bin
rm -rf $b && mkdir -p $b && tar xzf "$arch" -C $b || exit 1
export LD_LIBRARY_PATH=$b/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ldd $b/bin/mixsparse | grep -q "libnccl.so.2 => not found"; then
  nl=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + '/lib')" 2>/dev/null)
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$nl
fi
ldd $b/bin/mixsparse | grep -E "not found|nccl|libmpi\.|cusparse|cudart"
case $what in
  check) scripts/dist-gpu-check.sh $b/bin ;;
  bench) scripts/dist-scaling.sh $b/bin "$@" ;;
  both) scripts/dist-gpu-check.sh $b/bin; scripts/dist-scaling.sh $b/bin "$@" ;;
esac

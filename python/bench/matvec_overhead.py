"""matvec_overhead.py: the per-call cost of y = A @ x from Python, mixsparse against SciPy (and
against CuPy on a GPU), on one matrix: one CSV row per variant with the median and minimum of
single calls timed back to back (interleaved, so load on the machine hits every variant alike).

    python3 python/bench/matvec_overhead.py [matrix.mtx[.gz]] [--calls N] [--threads T ...]

Default matrix: add32 from ../shared/matrices. Never part of the test run.
"""

import argparse
import gzip
import os
import sys
import time
import warnings

import numpy as np
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import mixsparse as ms  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "..", "shared", "matrices", "add32.mtx.gz")


def read(path):
    f = gzip.open(path) if path.endswith(".gz") else open(path, "rb")
    with f, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # mmread's changing default type
        return sp.csr_matrix(scipy.io.mmread(f))


def timed(variants, calls):
    """{name: array of microseconds per call}, the variants called in turn."""
    pc = time.perf_counter_ns
    out = {k: np.empty(calls) for k in variants}
    for fn in variants.values():
        for _ in range(20):
            fn()  # warm-up: work vectors, caches, the GPU's clocks
    for i in range(calls):
        for name, fn in variants.items():
            t0 = pc()
            fn()
            out[name][i] = (pc() - t0) / 1e3
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("matrix", nargs="?", default=DEFAULT)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2, 0],
                    help="host threads of the CPU context (0: OpenMP's default)")
    args = ap.parse_args()
    A = read(args.matrix)
    name = os.path.basename(args.matrix).split(".")[0]
    rng = np.random.default_rng(1)
    x = rng.random(A.shape[1])
    variants, checks = {"scipy A@x": lambda: A @ x}, {}
    for t in args.threads:
        ctx = ms.Context("cpu")
        if t:
            try:
                ctx.set_threads(t)
            except NotImplementedError as e:
                print("# no row for %d threads: %s" % (t, e), file=sys.stderr)
                continue
        M = ms.Matrix.from_scipy(A, ctx)
        label = "mixsparse cpu %s threads" % (t or "default")
        variants[label] = (lambda M=M: M @ x)
        checks[label] = M @ x
    try:
        import cupy
        import cupyx.scipy.sparse as csp

        gctx = ms.Context("cuda")
        G = ms.Matrix.from_scipy(A, gctx)
        Gd = csp.csr_matrix(A)
        xd = cupy.asarray(x)
        sync = cupy.cuda.get_current_stream().synchronize

        def cupy_mv():
            y = Gd @ xd
            sync()
            return y

        def ms_cupy():
            y = G @ xd
            sync()
            return y

        variants["mixsparse cuda numpy in/out"] = lambda: G @ x
        variants["cupyx A@x (cupy in/out)"] = cupy_mv
        variants["mixsparse cuda cupy in/out"] = ms_cupy
        checks["mixsparse cuda numpy in/out"] = G @ x
        checks["mixsparse cuda cupy in/out"] = cupy.asnumpy(G @ xd)
    except Exception as e:  # noqa: BLE001  (no CuPy, no GPU: the CPU rows only)
        print("# no GPU rows: %s: %s" % (type(e).__name__, e), file=sys.stderr)
    ref = A @ x
    for label, y in checks.items():
        err = np.abs(y - ref).max() / np.abs(ref).max()
        assert err < 1e-13, (label, err)
    res = timed(variants, args.calls)
    print("matrix,rows,nnz,variant,median_us,min_us,ratio_to_scipy_median")
    base = np.median(res["scipy A@x"])
    for label, v in res.items():
        print("%s,%d,%d,%s,%.2f,%.2f,%.3f" % (name, A.shape[0], A.nnz, label, np.median(v),
                                             v.min(), np.median(v) / base))  # fmt: skip


if __name__ == "__main__":
    main()

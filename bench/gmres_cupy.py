#!/usr/bin/env python3
"""gmres_cupy.py: the CuPy peer of mixsparse-bench-solve, cupyx.scipy.sparse.linalg.gmres on the
same systems (the CSR that `mixsparse-bench-solve --dump DIR` wrote, so the matrix is identical
bit for bit), b = ones, x0 = 0, the same restarts and relative tolerance (atol 0), no
preconditioner or Jacobi (a LinearOperator multiplying by the inverse diagonal; CuPy applies M on
the right, as we do).

usage: gmres_cupy.py DIR SPEC... [--restarts 100,300] [--rtol 1e-8] [--preconds none,jacobi]
                     [--max-iters 20000] [--csv FILE] [--peer cupy|scipy]

--peer scipy: the CPU peer instead, scipy.sparse.linalg.gmres on the same CSR (its threads are
BLAS's: set OPENBLAS_NUM_THREADS / OMP_NUM_THREADS as for ours); it counts every inner iteration
(callback "pr_norm"), and converges inside a cycle.

SPEC is the system as given to mixsparse-bench-solve (gen:convdiff3d:128 or a path); its dump is
DIR/TAG.{txt,rowptr,colind,val} with TAG made as the C program makes it. CuPy's gmres checks
convergence only at a restart (every cycle runs its `restart` iterations), so its iteration count
is cycles x restart, counted with the callback that CuPy calls once per cycle. Time: one solve
after an untimed warm-up (a few cycles), device synchronised around it; CSV columns: system, n,
nnz, backend (cupy), restart, rtol, basis (f64), precond, converged (explicit residual <= rtol),
iterations, restarts, time_s, ms_per_iter, rel_residual.
"""

import inspect
import os
import sys
import time

import numpy as np


def tag_of(spec):
    s = spec[4:] if spec.startswith("gen:") else spec
    s = os.path.basename(s)
    s = s.replace(":", "_").replace(".", "_")
    return s.split("_mtx")[0]  # as bench_tag (bench/bench_dump.c): dir/a.mtx.gz -> a


def load(d, spec):
    tag = tag_of(spec)
    with open(os.path.join(d, tag + ".txt")) as f:
        n, nnz = (int(t) for t in f.read().split())
    rp = np.fromfile(os.path.join(d, tag + ".rowptr"), dtype="<i8", count=n + 1)
    ci = np.fromfile(os.path.join(d, tag + ".colind"), dtype="<i4", count=nnz)
    va = np.fromfile(os.path.join(d, tag + ".val"), dtype="<f8", count=nnz)
    return n, nnz, rp, ci, va


def scipy_peer(d, specs, opts):
    """The same rows for scipy.sparse.linalg.gmres on the CPU (backend scipy)."""
    try:
        import scipy.sparse as sp
        import scipy.sparse.linalg as sla
    except ImportError as e:
        print(f"gmres_cupy.py: SciPy is not available ({e})", file=sys.stderr)
        return 77
    restarts = [int(r) for r in opts["--restarts"].split(",")]
    rtol = float(opts["--rtol"])
    max_iters = int(opts["--max-iters"])
    tol_kw = "rtol" if "rtol" in inspect.signature(sla.gmres).parameters else "tol"
    out = open(opts["--csv"], "w") if opts["--csv"] else None
    hdr = "system,n,nnz,backend,restart,rtol,basis,precond,converged,iterations,restarts,time_s,ms_per_iter,rel_residual"
    print(hdr)
    if out:
        print(hdr, file=out)
    for spec in specs:
        n, nnz, rp, ci, va = load(d, spec)
        A = sp.csr_matrix((va, ci, rp), shape=(n, n))
        b = np.ones(n)
        dinv = 1.0 / A.diagonal()
        for m in restarts:
            for p in opts["--preconds"].split(","):
                op = A
                if p == "jacobi":  # A M^-1 as an explicit operator: SciPy's M is a left one
                    op = (A @ sp.diags(dinv)).tocsr()
                its = [0]

                def count(_):
                    its[0] += 1

                kw = {tol_kw: rtol, "atol": 0.0, "restart": m}
                t0 = time.perf_counter()
                x, info = sla.gmres(op, b, maxiter=max_iters // m + 1, callback=count,
                                    callback_type="pr_norm", **kw)
                t = time.perf_counter() - t0
                if p == "jacobi":
                    x = dinv * x
                rel = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
                conv = int(rel <= rtol * (1 + 1e-6))
                row = (f"{spec},{n},{nnz},scipy,{m},{rtol:g},f64,{p},{conv},{its[0]},"
                       f"{max((its[0] - 1) // m, 0)},{t:.6f},{1e3 * t / max(its[0], 1):.6f},{rel:.3e}")
                print(row, flush=True)
                if out:
                    print(row, file=out, flush=True)
    if out:
        out.close()
    return 0


def main(argv):
    args, opts = [], {"--restarts": "100,300", "--rtol": "1e-8", "--preconds": "none,jacobi",
                      "--max-iters": "20000", "--csv": None, "--peer": "cupy"}  # fmt: skip
    it = iter(argv[1:])
    for a in it:
        if a in opts:
            opts[a] = next(it, None)
            if opts[a] is None:
                print(__doc__, file=sys.stderr)
                return 2
        else:
            args.append(a)
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    d, specs = args[0], args[1:]
    if opts["--peer"] == "scipy":
        return scipy_peer(d, specs, opts)
    try:
        import cupy
        import cupyx.scipy.sparse as csp
        import cupyx.scipy.sparse.linalg as cla
    except ImportError as e:
        print(f"gmres_cupy.py: CuPy is not available ({e})", file=sys.stderr)
        return 77
    restarts = [int(r) for r in opts["--restarts"].split(",")]
    rtol = float(opts["--rtol"])
    preconds = opts["--preconds"].split(",")
    max_iters = int(opts["--max-iters"])
    # CuPy renamed tol to rtol in newer releases: use whichever its gmres takes.
    tol_kw = "rtol" if "rtol" in inspect.signature(cla.gmres).parameters else "tol"
    out = open(opts["--csv"], "w") if opts["--csv"] else None
    hdr = "system,n,nnz,backend,restart,rtol,basis,precond,converged,iterations,restarts,time_s,ms_per_iter,rel_residual"
    print(hdr)
    if out:
        print(hdr, file=out)
    for spec in specs:
        n, nnz, rp, ci, va = load(d, spec)
        A = csp.csr_matrix((cupy.asarray(va), cupy.asarray(ci), cupy.asarray(rp)), shape=(n, n))
        b = cupy.ones(n, dtype=cupy.float64)
        bnorm = float(cupy.linalg.norm(b))
        dinv = 1.0 / A.diagonal()
        jacobi = cla.LinearOperator((n, n), matvec=lambda v: dinv * v, dtype=cupy.float64)
        for m in restarts:
            for p in preconds:
                M = jacobi if p == "jacobi" else None
                kw = {tol_kw: rtol, "atol": 0.0, "restart": m, "M": M}
                # Warm-up: kernels compiled and loaded, the memory pool filled.
                cla.gmres(A, b, maxiter=2 * m, **kw)
                cycles = [0]

                def count(_):
                    cycles[0] += 1

                cupy.cuda.Device().synchronize()
                t0 = time.perf_counter()
                x, info = cla.gmres(A, b, maxiter=max_iters, callback=count, callback_type="pr_norm", **kw)
                cupy.cuda.Device().synchronize()
                t = time.perf_counter() - t0
                rel = float(cupy.linalg.norm(b - A @ x)) / bnorm
                its = min(cycles[0] * m, max_iters) if cycles[0] else 0
                conv = int(rel <= rtol * (1 + 1e-6))
                row = (f"{spec},{n},{nnz},cupy,{m},{rtol:g},f64,{p},{conv},{its},{max(cycles[0] - 1, 0)},"
                       f"{t:.6f},{1e3 * t / max(its, 1):.6f},{rel:.3e}")  # fmt: skip
                print(row, flush=True)
                if out:
                    print(row, file=out, flush=True)
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""gmres_scipy.py: msp_gmres's inner iteration counts against scipy.sparse.linalg.gmres.

usage: gmres_scipy.py GMRES_DRIVER MATRICES_DIR

Both solve A x = 1 from x0 = 0 with the same restart, rtol 1e-8, atol 0 and no preconditioner;
the counts must agree within max(2%, 2). SciPy counts one callback ("pr_norm") per inner
iteration. Exits 77 (skipped, with a message) when numpy/scipy or the matrices are absent.
"""
import json
import os
import subprocess
import sys

# (matrix, restart): collection matrices that converge within a few thousand iterations.
CASES = [
    ("sherman4", 50), ("sherman4", 100), ("pde2961", 50), ("cage9", 50), ("orsirr_1", 100),
    ("bfwa782", 100), ("add32", 50), ("cage8", 50), ("cz308", 50), ("pde900", 50),
    ("rdb1250", 50), ("rdb1250l", 50), ("rdb2048", 50),
]
RTOL = 1e-8
MAX_ITERS = 5000


def scipy_iterations(sla, A, b, restart):
    count = [0]

    def callback(_presid):
        count[0] += 1

    kwargs = dict(restart=restart, callback=callback, callback_type="pr_norm", atol=0.0)
    # SciPy 1.12 renamed tol to rtol (and counts maxiter in restart cycles either way).
    try:
        x, info = sla.gmres(A, b, rtol=RTOL, maxiter=MAX_ITERS // restart + 1, **kwargs)
    except TypeError:
        x, info = sla.gmres(A, b, tol=RTOL, maxiter=MAX_ITERS // restart + 1, **kwargs)
    return count[0], info


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    driver, mdir = sys.argv[1], sys.argv[2]
    try:
        import numpy as np
        import scipy.io
        import scipy.sparse.linalg as sla
    except ImportError as e:
        print("SKIPPED: numpy/scipy not available (%s); install python3-scipy" % e)
        return 77
    failures, ran = 0, 0
    for name, restart in CASES:
        path = os.path.join(mdir, name + ".mtx.gz")
        if not os.path.exists(path):
            print("%-10s missing, not compared" % name)
            continue
        A = scipy.io.mmread(path).tocsr().astype(np.float64)
        b = np.ones(A.shape[0])
        sp_iters, info = scipy_iterations(sla, A, b, restart)
        out = subprocess.run([driver, path, str(restart), repr(RTOL), str(MAX_ITERS), "f64",
                              "none", "cgs"], capture_output=True, text=True)
        if out.returncode != 0:
            print("%-10s driver failed: %s" % (name, out.stderr.strip()))
            failures += 1
            continue
        rep = json.loads(out.stdout)
        ours = rep["iterations"]
        allowed = max(0.02 * sp_iters, 2)
        ok = abs(ours - sp_iters) <= allowed and rep["converged"] == (info == 0)
        ran += 1
        print("%-10s m=%-4d msp %5d (converged %d, residual %.2e)  scipy %5d (info %d)  %s" %
              (name, restart, ours, rep["converged"], rep["rel_residual"], sp_iters, info,
               "ok" if ok else "DIFFERS"))
        if not ok:
            failures += 1
    if ran == 0:
        print("SKIPPED: none of the matrices found under %s" % mdir)
        return 77
    print("%d compared, %d differ" % (ran, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Markdown tables from mixsparse-bench-solve's CSV and bench/gmres_cupy.py's CSV (same run).

usage: bench-table-solve.py OURS.csv [CUPY.csv]
One row per system, restart, tolerance, preconditioner and basis of ours: iterations, time to
solution, time per iteration, bytes per iteration and share of the bandwidth, and the ratios
ours / CuPy (time to solution and time per iteration; below 1 means ours is faster) against
CuPy's row with the same system, restart, tolerance and preconditioner. Then, per system,
restart and preconditioner, the speed-up of each basis over our f64 GMRES (time to solution).
"""
import csv
import sys


def load(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError as e:
        print(f"bench-table-solve.py: {e}", file=sys.stderr)
        return []


def key(r):
    return (r["system"], int(r["restart"]), float(r["rtol"]), r["precond"])


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "-"


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    ours = load(argv[0])
    cupy = {key(r): r for r in (load(argv[1]) if len(argv) > 1 else [])}
    if not ours:
        return 1
    # ours: time after the set-up (setup_s, shown apart), as CuPy's, which makes its Jacobi
    # diagonal before its timer starts
    print("| system | n | m | rtol | precond | basis | iterations | time (s) | setup (s) | ms/iter | MB/iter "
          "| % bw | CuPy iterations | CuPy ms/iter | ours/CuPy time | ours/CuPy per iter |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(ours, key=lambda r: (int(r["n"]), r["system"], int(r["restart"]), r["precond"])):
        c = cupy.get(key(r))
        conv = "" if r["converged"] == "1" else " (not converged)"
        setup = float(r.get("setup_s") or 0.0)
        t, tpi = float(r["time_s"]) - setup, float(r["ms_per_iter"])
        ct = float(c["time_s"]) if c and c["converged"] == "1" else None
        ctpi = float(c["ms_per_iter"]) if c else None
        print("| %s | %s | %s | %s | %s | %s | %s%s | %.4f | %.4f | %.4f | %.1f | %s | %s | %s | %s | %s |" % (
            r["system"], r["n"], r["restart"], r["rtol"], r["precond"], r["basis"], r["iterations"], conv,
            t, setup, tpi, float(r["bytes_per_iter"]) / 1e6, r["pct_bw"] if float(r["pct_bw"]) > 0 else "-",
            (c["iterations"] + ("" if c["converged"] == "1" else " (not converged)")) if c else "-",
            "%.4f" % ctpi if ctpi else "-", ratio(t if r["converged"] == "1" else None, ct),
            ratio(tpi, ctpi)))  # fmt: skip
    print()
    groups = {}
    for r in ours:
        groups.setdefault(key(r), {})[r["basis"]] = r
    bases = []
    for r in ours:
        if r["basis"] not in bases and r["basis"] != "f64":
            bases.append(r["basis"])
    print("| system | m | rtol | precond | " + " | ".join(b + " / f64 (time)" for b in bases) + " |")
    print("|---|---|---|---|" + "---|" * len(bases))
    for k in sorted(groups):
        g = groups[k]
        f = g.get("f64")
        ft = float(f["time_s"]) if f and f["converged"] == "1" else None
        cells = []
        for b in bases:
            r = g.get(b)
            bt = float(r["time_s"]) if r and r["converged"] == "1" else None
            cells.append("%.2fx" % (ft / bt) if ft and bt else "-")
        print("| %s | %d | %g | %s | %s |" % (k[0], k[1], k[2], k[3], " | ".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

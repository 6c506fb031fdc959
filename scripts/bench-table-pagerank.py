#!/usr/bin/env python3
"""Markdown tables from mixsparse-bench-pagerank's CSV and pagerank_cupy.py's CSV (same run).

usage: bench-table-pagerank.py OURS.csv [CUPY.csv]
Per graph and tolerance: time to converge (ms) and iterations of every mode; then the ratios the
PageRank issue sets targets on: value-free f64 over the values form, best CPMS mode over
value-free f64 (geometric mean over graphs above 1e7 edges), and the best of ours over CuPy.
"""
import csv
import math
import sys


def load(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    rows = load(argv[0]) + (load(argv[1]) if len(argv) > 1 else [])
    modes = []
    for r in rows:
        if r["mode"] not in modes:
            modes.append(r["mode"])
    t = {}
    info = {}
    for r in rows:
        key = (r["graph"], float(r["tol"]))
        t.setdefault(key, {})[r["mode"]] = r
        info[r["graph"]] = (int(r["nodes"]), int(r["edges"]))
    print("| graph | edges | tol | " + " | ".join(modes) + " |")
    print("|---|---|---|" + "---|" * len(modes))
    for key in sorted(t, key=lambda k: (info[k[0]][1], -k[1])):
        cells = []
        for m in modes:
            r = t[key].get(m)
            if not r:
                cells.append("-")
                continue
            mark = "" if r["converged"] == "1" else " (not converged)"
            cells.append("%.2f ms / %s it%s" % (1e3 * float(r["time_s"]), r["iterations"], mark))
        print("| %s | %d | %.0e | %s |" % (key[0], info[key[0]][1], key[1], " | ".join(cells)))
    print()
    # one ratio table per node order (mode names "f64:degree" when the run asked for several)
    suffixes = []
    for m in modes:
        if m != "cupy":
            sfx = m[m.index(":"):] if ":" in m else ""
            if sfx not in suffixes:
                suffixes.append(sfx)
    for sfx in suffixes:
        print("Ratios%s:" % (" (order %s)" % sfx[1:] if sfx else ""))
        print()
        print("| graph | edges | tol | f64 value-free / values-f64 | best CPMS / f64 | best ours / CuPy |")
        print("|---|---|---|---|---|---|")
        big = {}
        for key in sorted(t, key=lambda k: (info[k[0]][1], -k[1])):
            d = t[key]

            def tm(m):
                r = d.get(m)
                ok = r and r["converged"] == "1" and float(r["time_s"]) > 0
                return float(r["time_s"]) if ok else None

            vf, vl, cu = tm("f64" + sfx), tm("values-f64" + sfx), tm("cupy")
            cp = [x for x in (tm("cpms2" + sfx), tm("cpms4" + sfx)) if x]
            ours = [x for x in (tm(m) for m in modes if m.endswith(sfx) and m != "cupy") if x]
            s1 = vl / vf if vf and vl else None
            s2 = vf / min(cp) if vf and cp else None
            s3 = cu / min(ours) if cu and ours else None
            f = lambda x: "%.2fx" % x if x else "-"
            print("| %s | %d | %.0e | %s | %s | %s |" % (key[0], info[key[0]][1], key[1], f(s1), f(s2), f(s3)))
            if info[key[0]][1] > 1e7:
                for name, x in (("value-free", s1), ("cpms", s2), ("cupy", s3)):
                    if x:
                        big.setdefault((name, key[1]), []).append(x)
        print()
        print("Geometric means over the graphs above 1e7 edges%s:" % (" (order %s)" % sfx[1:] if sfx else ""))
        for (name, tol), xs in sorted(big.items()):
            g = math.exp(sum(math.log(x) for x in xs) / len(xs))
            print("- %s at tol %.0e: %.2fx (%d graphs)" % (name, tol, g, len(xs)))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

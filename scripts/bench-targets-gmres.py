#!/usr/bin/env python3
"""The GMRES targets beside their figures, from one job's CSVs (markdown on stdout).

usage: bench-targets-gmres.py OURS.csv CUPY.csv [BASIS.csv] [--cpu CPU.csv]

OURS.csv: mixsparse-bench-solve (--orthos dcgs2), CUPY.csv: bench/gmres_cupy.py on the same
systems in the same job, BASIS.csv: mixsparse-bench-basis; CPU.csv: scripts/bench-cpu-gmres.sh (the fastest of its runs
per runner, threads and system). Time to solution is the solve after
its set-up (as CuPy's, whose timer starts after its operator is made). Each target of the
solver's issue gets a row per case: the figure, the target and met / missed.
"""
import csv
import sys


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def solve_time(r):
    return float(r["time_s"]) - float(r.get("setup_s") or 0.0)


def main(argv):
    cpu = None
    if "--cpu" in argv:
        i = argv.index("--cpu")
        cpu = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    ours = [r for r in load(argv[0]) if r.get("ortho", "dcgs2") == "dcgs2"]
    cupy = {(r["system"], int(r["restart"]), r["precond"]): r for r in load(argv[1])}
    rows = []

    def add(target, case, figure, ok):
        rows.append((target, case, figure, "met" if ok else "missed"))

    by = {}
    for r in ours:
        by[(r["system"], int(r["restart"]), r["precond"], r["basis"])] = r
    for (system, m, pc, basis), r in sorted(by.items()):
        c = cupy.get((system, m, pc))
        if not c:
            continue
        conv, cconv = r["converged"] == "1", c["converged"] == "1"
        t, ct = solve_time(r), float(c["time_s"])
        tpi, ctpi = float(r["ms_per_iter"]), float(c["ms_per_iter"])
        case = "%s m=%d" % (system.replace("gen:", ""), m)
        speed = ct / t if conv and cconv else 0.0
        if basis == "f64":
            add("f64 per iteration <= CuPy's", case, "%.3f vs %.3f ms" % (tpi, ctpi), tpi <= ctpi)
            add("f64 to solution <= CuPy's", case,
                "%.3f vs %.3f s (%d vs %s its)" % (t, ct, int(r["iterations"]), c["iterations"]),
                conv and (not cconv or t <= ct))
        if basis == "f32" and system in ("gen:convdiff3d:128", "gen:poisson3d:128"):
            want = 1.5 if m >= 300 else 1.3
            add("f32 >= %.1fx CuPy to solution" % want, case, "%.2fx" % speed, speed >= want)
            f = by.get((system, m, pc, "f64"))
            if f and f["converged"] == "1" and conv:
                add("f32 >= 1.4x our f64 to solution", case, "%.2fx" % (solve_time(f) / t),
                    solve_time(f) / t >= 1.4)
        if basis in ("f16", "bf16") and m >= 300:
            if conv:
                add("%s >= 1.8x CuPy at m=300 (where it converges)" % basis, case,
                    "%.2fx" % speed, speed >= 1.8)
            else:
                add("%s >= 1.8x CuPy at m=300 (where it converges)" % basis, case,
                    "not converged in %s its" % r["iterations"], True)
        if basis == "auto":
            f = by.get((system, m, pc, "f64"))
            if f and f["converged"] == "1":
                ft, fi = solve_time(f), int(f["iterations"])
                add("auto <= 1.05x f64's time, converges", case,
                    "%.3f vs %.3f s (%.2fx)" % (t, ft, t / ft) if conv else "not converged",
                    conv and t <= 1.05 * ft)
                add("auto <= 1.2x f64's iterations", case,
                    "%s vs %d" % (r["iterations"], fi), conv and int(r["iterations"]) <= 1.2 * fi)
    if len(argv) > 2:
        for b in load(argv[2]):
            if not b["pass"].startswith("dcgs2"):
                continue
            want = 75.0 if b["precision"] in ("fx32", "fx16") else 85.0
            add("basis pass >= %d%% of the read bandwidth" % want,
                "%s %s (n %s, %s columns)" % (b["pass"], b["precision"], b["n"], b["columns"]),
                "%s GB/s, %s%%" % (b["gb_per_s"], b["pct_bw"]), float(b["pct_bw"]) >= want)
    if cpu:
        best = {}
        with open(cpu) as f:
            for line in csv.reader(f):
                who, system = line[0], line[1]
                ms = float(line[15] if who.startswith("ours") else line[13])
                k = (system, who)
                best[k] = min(best.get(k, ms), ms)
        for system in sorted({k[0] for k in best}):
            name = system.split("/")[-1].replace(".mtx.gz", "").replace("gen:", "")
            s1, o1 = best.get((system, "scipy1")), best.get((system, "ours1"))
            s2, o2 = best.get((system, "scipy2")), best.get((system, "ours2"))
            if s1 and o1:
                add("CPU 1 thread: ms/iteration <= SciPy's", name,
                    "%.4f vs %.4f ms (%.2fx)" % (o1, s1, s1 / o1), o1 <= s1)
            if s1 and o2:
                add("CPU 2 threads: >= 1.6x SciPy (1 thread)", name,
                    "%.4f vs %.4f ms (%.2fx)" % (o2, s1, s1 / o2), s1 / o2 >= 1.6)
    print("| target | case | figure | |")
    print("|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %s |" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

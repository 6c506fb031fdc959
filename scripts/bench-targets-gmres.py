#!/usr/bin/env python3
"""The GMRES targets beside their figures, from one job's CSVs (markdown on stdout).

usage: bench-targets-gmres.py OURS.csv CUPY.csv [BASIS.csv] [--cpu CPU.csv]
           [--results DIR --card CARD --date DATE --command COMMAND [--cgs OURS_CGS.csv]
           [--cpu-host CPU2.csv]]
       bench-targets-gmres.py --basis BASIS.csv --results DIR --card CARD --date DATE
           --command COMMAND
       bench-targets-gmres.py --cpu-update CPU.csv --results DIR --date DATE --command COMMAND

OURS.csv: mixsparse-bench-solve (--orthos dcgs2), CUPY.csv: bench/gmres_cupy.py on the same
systems in the same job, BASIS.csv: mixsparse-bench-basis; CPU.csv: scripts/bench-cpu-gmres.sh (the fastest of its runs
per runner, threads and system). Time to solution is the solve after
its set-up (as CuPy's, whose timer starts after its operator is made). Each target of the
solver's issue gets a row per case: the figure, the target and met / missed.
--results DIR: instead of markdown, docs/results-style CSVs (comment lines title, card, date,
command, what; then the table) for scripts/perf-doc.py: DIR/gmres_cupy.csv (per system, restart
and basis: ours against CuPy) DIR/gmres_targets.csv (the targets) and, with --cgs (mixsparse-bench-solve --orthos cgs on some of
the same systems in the same job), DIR/gmres_ortho.csv.
--basis BASIS.csv (a job of mixsparse-bench-basis alone): DIR/gmres_basis.csv, the DCGS2 passes
of every basis precision beside their bandwidth target.
"""
import csv
import sys


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def solve_time(r):
    return float(r["time_s"]) - float(r.get("setup_s") or 0.0)


def cpu_rows(path, add):
    """The CPU targets from a scripts/bench-cpu-gmres.sh CSV: the fastest run of each."""
    best = {}
    with open(path) as f:
        for line in csv.reader(f):
            who, system = line[0], line[1]
            ms = float(line[15] if who.startswith("ours") else line[13])
            k = (system, who)
            best[k] = min(best.get(k, ms), ms)
    for system in sorted({k[0] for k in best}):
        name = system.split("/")[-1].replace(".mtx.gz", "").replace("gen:", "")
        s1, o1 = best.get((system, "scipy1")), best.get((system, "ours1"))
        o2 = best.get((system, "ours2"))
        if s1 and o1:
            add("CPU 1 thread: ms/iteration <= SciPy's", name,
                "%.4f vs %.4f ms (%.2fx)" % (o1, s1, s1 / o1), o1 <= s1)
        if s1 and o2:
            add("CPU 2 threads: >= 1.6x SciPy (1 thread)", name,
                "%.4f vs %.4f ms (%.2fx)" % (o2, s1, s1 / o2), s1 / o2 >= 1.6)


def cpu_update(path, opt):
    """DIR/gmres_targets.csv with its CPU rows replaced by those of a newer
    scripts/bench-cpu-gmres.sh run (--cpu-update CPU.csv, --command: how that run was made);
    the other rows and their job stay as they are."""
    target = opt["--results"] + "/gmres_targets.csv"
    with open(target) as f:
        lines = f.read().splitlines()
    rows = []
    cpu_rows(path, lambda *r: rows.append((r[0], r[1], r[2], "met" if r[3] else "missed")))
    out = []
    for line in lines:
        if line.startswith("CPU ") or line.startswith('"CPU '):
            continue
        if line.startswith("# what:"):
            line = ("# what: Each target of the solver beside its figure from the same job; the "
                    "CPU rows from a later run on the CPU machine: %s (the fastest of its runs), "
                    "%s." % (opt.get("--command", path), opt.get("--date", "")))
        out.append(line)
    with open(target, "w", newline="") as f:
        f.write("\n".join(out) + "\n")
        w = csv.writer(f, lineterminator="\n")
        for r in rows:
            w.writerow(list(r))
    return 0


def basis_results(path, opt):
    """DIR/gmres_basis.csv: the DCGS2 passes of a mixsparse-bench-basis CSV and their targets."""
    rows = [b for b in load(path) if b["pass"].startswith("dcgs2")]
    with open(opt["--results"] + "/gmres_basis.csv", "w", newline="") as f:
        f.write("# title: GMRES: the basis passes\n# card: %s\n# date: %s\n# command: %s\n"
                % (opt.get("--card", "?"), opt.get("--date", "?"), opt.get("--command", "?")))
        f.write("# what: DCGS2's two passes over j + 1 = %s columns of n = %s rows per Krylov "
                "basis precision: the median time, GB/s by the byte model (the columns read "
                "once in their precision, w read in f64; the update also writes columns j and "
                "j + 1 and w) and that rate as a share of the read bandwidth measured in the same "
                "run (msp_nrm1 over 1 GiB: %s GB/s), beside the target (85%%, fixed point 75%%).\n"
                % (rows[0]["columns"], rows[0]["n"], rows[0]["read_bw_gb_per_s"]))
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["precision", "pass", "ms", "GB/s", "% of read bandwidth", "target", "met"])
        for b in rows:
            want = 75.0 if b["precision"] in ("fx32", "fx16") else 85.0
            target = "%d%%" % want if b["precision"] != "cpms2" else "-"
            met = ("met" if float(b["pct_bw"]) >= want else "missed") if target != "-" else "-"
            w.writerow([b["precision"], b["pass"], b["ms"], b["gb_per_s"], b["pct_bw"], target,
                        met])
    return 0


def main(argv):
    opt = {}
    for name in ("--cpu", "--results", "--card", "--date", "--command", "--cgs", "--cpu-host",
                 "--basis", "--cpu-update"):
        if name in argv:
            i = argv.index(name)
            opt[name] = argv[i + 1]
            argv = argv[:i] + argv[i + 2:]
    cpu = opt.get("--cpu")
    if "--basis" in opt and "--results" in opt:
        return basis_results(opt["--basis"], opt)
    if "--cpu-update" in opt and "--results" in opt:
        return cpu_update(opt["--cpu-update"], opt)
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
        cpu_rows(cpu, add)
    if "--results" in opt:
        head = "# card: %s\n# date: %s\n# command: %s\n" % (opt.get("--card", "?"),
                                                         opt.get("--date", "?"),
                                                         opt.get("--command", "?"))
        with open(opt["--results"] + "/gmres_cupy.csv", "w", newline="") as f:
            f.write("# title: GMRES against CuPy\n" + head)
            f.write("# what: Restarted GMRES, b = ones, x0 = 0, rtol 1e-8, no preconditioner, DCGS2 "
                    "(the default), per Krylov basis precision, against CuPy's gmres (fp64, "
                    "classical Gram-Schmidt) on the same CSR in the same job. Time after the "
                    "set-up (as CuPy's); ms/it = time / iterations (CuPy runs every cycle to its "
                    "end); MB/it by the byte model (SpMV and basis bytes per iteration).\n")
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["system", "n", "m", "basis", "iterations", "time (s)", "ms/it", "MB/it",
                        "CuPy iterations", "CuPy time (s)", "CuPy ms/it", "CuPy / ours time",
                        "CuPy / ours per it"])
            for (system, m, pc, basis), r in sorted(
                    by.items(), key=lambda kv: (int(kv[1]["n"]), kv[0][0], kv[0][1])):
                c = cupy.get((system, m, pc))
                t = solve_time(r)
                conv = r["converged"] == "1"
                row = [system.replace("gen:", ""), r["n"], m, basis,
                       r["iterations"] + ("" if conv else " (not converged)"), "%.4f" % t,
                       "%.4f" % float(r["ms_per_iter"]),
                       "%.1f" % (float(r["bytes_per_iter"]) / 1e6)]
                if c:
                    cconv = c["converged"] == "1"
                    ct = float(c["time_s"])
                    row += [c["iterations"] + ("" if cconv else " (not converged)"), "%.4f" % ct,
                            "%.4f" % float(c["ms_per_iter"]),
                            "%.2fx" % (ct / t) if conv and cconv else "-",
                            "%.2fx" % (float(c["ms_per_iter"]) / float(r["ms_per_iter"]))]
                else:
                    row += ["-"] * 5
                w.writerow(row)
        if "--cgs" in opt:  # the same systems with --orthos cgs, same job
            with open(opt["--results"] + "/gmres_ortho.csv", "w", newline="") as f:
                f.write("# title: GMRES: DCGS2 against the re-orthogonalising CGS\n" + head)
                f.write("# what: The same solves with the orthogonalisation of before (classical "
                        "Gram-Schmidt re-orthogonalised while a pass loses more than a factor "
                        "sqrt(2): three reads of the basis per iteration on these systems) and "
                        "with DCGS2 (two reads, one reduction), same job.\n")
                w = csv.writer(f, lineterminator="\n")
                w.writerow(["system", "m", "basis", "cgs iterations", "cgs ms/it", "cgs MB/it",
                            "dcgs2 iterations", "dcgs2 ms/it", "dcgs2 MB/it", "cgs / dcgs2 time"])
                for r in load(opt["--cgs"]):
                    d = by.get((r["system"], int(r["restart"]), r["precond"], r["basis"]))
                    if not d:
                        continue
                    w.writerow([r["system"].replace("gen:", ""), r["restart"], r["basis"],
                                r["iterations"], r["ms_per_iter"],
                                "%.1f" % (float(r["bytes_per_iter"]) / 1e6), d["iterations"],
                                d["ms_per_iter"], "%.1f" % (float(d["bytes_per_iter"]) / 1e6),
                                "%.2fx" % (solve_time(r) / solve_time(d))])
        if "--cpu-host" in opt:  # the same CPU measurement on another host (named in --card)
            host = []
            cpu_rows(opt["--cpu-host"], lambda *r: host.append((r[0], r[1], r[2],
                                                               "met" if r[3] else "missed")))
            with open(opt["--results"] + "/gmres_cpu_host.csv", "w", newline="") as f:
                f.write("# title: GMRES on the CPU against SciPy, the GPU job's host\n" + head)
                f.write("# what: scripts/bench-cpu-gmres.sh with one run on the idle CPU host of "
                        "the GPU job (64 vCPUs, SciPy 1.18.1 and NumPy 2.5.2 of its Python), "
                        "where 2 threads can be measured: ours (DCGS2) and SciPy's gmres, same "
                        "systems, restart and tolerance.\n")
                w = csv.writer(f, lineterminator="\n")
                w.writerow(["target", "case", "figure", "met"])
                for r in host:
                    w.writerow(list(r))
        with open(opt["--results"] + "/gmres_targets.csv", "w", newline="") as f:
            f.write("# title: GMRES against CuPy: the targets\n" + head)
            f.write("# what: Each target of the solver beside its figure from the same job (the "
                    "CPU rows: the fastest of the runs of scripts/bench-cpu-gmres.sh).\n")
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["target", "case", "figure", "met"])
            for r in rows:
                w.writerow(list(r))
        return 0
    print("| target | case | figure | |")
    print("|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %s |" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

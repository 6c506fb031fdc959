#!/usr/bin/env python3
"""cli_monitor.py PROGRAM: `mixsparse solve --monitor` and `mixsparse pagerank --monitor` print
their header before the iteration starts and one line per iteration as it runs, and `spmv` and
`run` their header before the products: the lines are read here from a pipe while the program is
still running (tolerances it cannot reach, repeat counts it cannot finish soon), then the
program is stopped. A complete short run's lines agree with its --history file."""
import os
import subprocess
import sys
import tempfile
import time

prog = sys.argv[1]
failures = []


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print("FAIL " + msg)


def read_while_running(args, want_lines, prefix):
    """Start the program, read want_lines lines from its stdout pipe, and report whether it was
    still running after the last one was read."""
    p = subprocess.Popen([prog] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        deadline = time.time() + 120
        while len(lines) < want_lines and time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
        running = p.poll() is None
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()
    check(len(lines) == want_lines, "%s: read %d of %d lines: %r" % (prefix, len(lines), want_lines, lines))
    check(running, "%s: the program had ended when its lines were read" % prefix)
    return lines


# GMRES that cannot stop early (rtol 1e-300): restart 10 on 64 k unknowns, 10^6 iterations
lines = read_while_running(["solve", "gen:convdiff3d:40", "--rtol", "1e-300", "--restart", "10",
                            "--max-iters", "1000000", "--monitor", "--backend", "cpu"], 7, "solve")
if len(lines) == 7:
    check(lines[0].startswith("matrix ") and "64000 x 64000" in lines[0], "solve header: %r" % lines[0])
    check(lines[1].startswith("options ") and "restart 10" in lines[1], "solve options: %r" % lines[1])
    for k, line in enumerate(lines[2:]):
        f = line.split()
        check(len(f) == 7 and f[0] == str(k) and f[1] == "residual" and f[3] == "relative"
              and f[5] == "basis" and f[6] == "f64", "solve monitor line %d: %r" % (k, line))
    first = lines[2].split()
    check(len(first) == 7 and float(first[4]) == 1.0, "solve monitor line 0: %r" % lines[2])

# PageRank with a tolerance it cannot reach within 10^6 iterations on 2^16 nodes
lines = read_while_running(["pagerank", "gen:rmat:16:16:1", "--tol", "1e-300", "--max-iters", "1000000",
                            "--monitor", "--backend", "cpu", "--precision", "cpms4"], 8, "pagerank")
if len(lines) == 8:
    check(lines[0].startswith("graph ") and "65536 nodes" in lines[0], "pagerank header: %r" % lines[0])
    check(lines[1].startswith("backend "), "pagerank backend: %r" % lines[1])
    check(lines[2].startswith("options ") and "precision cpms4" in lines[2], "pagerank options: %r" % lines[2])
    for k, line in enumerate(lines[3:]):
        f = line.split()
        check(len(f) == 6 and f[0] == str(k + 1) and f[1] == "change" and f[3] == "read"
              and f[4] in ("16", "32", "48", "64") and (k > 0 or f[4] == "16"), "pagerank monitor line %d: %r" % (k + 1, line))

# spmv and run: the header (matrix, backend, what was asked) before the products, which a
# repeat count of 10^7 keeps going long after it
lines = read_while_running(["spmv", "gen:stencil27:32", "--repeat", "1000000", "--backend", "cpu",
                            "--precision", "f32"], 1, "spmv")
if len(lines) == 1:
    check(lines[0].startswith("gen:stencil27:32: 32768 x 32768,") and "backend cpu;" in lines[0]
          and "precision f32" in lines[0] and "1000000 repeats" in lines[0], "spmv header: %r" % lines[0])
lines = read_while_running(["run", "--repeat", "1000000", "--backend", "cpu"], 4, "run")
if len(lines) == 4:
    check(lines[0] == "mixsparse run" and lines[1].startswith("  matrix     gen:stencil27:64:")
          and lines[2] == "  backend    cpu" and lines[3].startswith("  options    format auto,"),
          "run header: %r" % lines)

# A complete run: one line per iteration, the relative residual of each that of --history
with tempfile.TemporaryDirectory() as tmp:
    hist = os.path.join(tmp, "h.csv")
    r = subprocess.run([prog, "solve", "gen:poisson3d:12", "--monitor", "--history", hist,
                        "--restart", "5", "--backend", "cpu"], capture_output=True, text=True)
    check(r.returncode == 0, "solve gen:poisson3d:12: exit %d %s" % (r.returncode, r.stderr))
    mon = [l.split() for l in r.stdout.splitlines() if l[:1] == " "]
    rows = open(hist).read().splitlines()[1:] if os.path.exists(hist) else []
    check(len(mon) == len(rows) and len(rows) > 10, "monitor %d lines, history %d" % (len(mon), len(rows)))
    for m, h in zip(mon, rows):
        k, v = h.split(",")
        check(m[0] == k and abs(float(m[4]) - float(v)) <= 1e-12 * float(v),
              "iteration %s: monitor %s, history %s" % (k, m[4], v))
    it = [l for l in r.stdout.splitlines() if l.startswith("iterations")]
    check(it and it[0].split()[1] == str(len(rows) - 1), "iterations line %r, %d monitor lines" % (it, len(mon)))

print("cli_monitor: %d failed" % len(failures))
sys.exit(1 if failures else 0)

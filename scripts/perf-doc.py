#!/usr/bin/env python3
"""perf-doc.py [--no-plots]: docs/performance.md (and its charts, docs/img/*.png) from the
benchmark results in docs/results/.

Each docs/results/NAME.csv starts with comment lines "# title: ...", "# card: ...",
"# date: ...", "# command: ...", "# what: ..." and then holds the table (a header row and the
rows). An optional docs/results/NAME.md is text placed after the section's heading (how to run
the benchmark, what to read in the table). Sections come in the order of ORDER below, then any
other CSV in name order, so a new benchmark needs only its CSV (and text). Charts are drawn with
matplotlib (Debian: python3-matplotlib) for the results that have a chart below; without it the
document is still written, with the charts that already exist. The results are never edited by
hand: rerun the benchmark, replace the CSV, run `make plots`.
"""
import csv
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "results")
IMG = os.path.join(ROOT, "docs", "img")
OUT = os.path.join(ROOT, "docs", "performance.md")
ORDER = ["spmv", "spmv-collection", "spmv-collection-classes", "spmv-collection-kernels",
         "precision", "bdmp", "gmres_cupy", "pagerank", "cpu", "threads", "history", "scaling"]

INTRO = """# Performance

Every figure here comes from a benchmark CSV in [results/](results/) through
`scripts/perf-doc.py` (`make plots` runs it and redraws the charts); nothing is edited by hand.
Each section names the card (or CPU), the date and the command. The GPU benchmarks compare
mixsparse with the vendor or peer library on the same matrix, on the same device, in the same
job, and report the share of the memory bandwidth measured in that job: SpMV and the solvers are
bound by memory traffic, so bytes moved per second is the figure that says how close to the
hardware a kernel runs.

## How to run the benchmarks

| benchmark | what it measures | how |
|---|---|---|
| `mixsparse-bench` (CUDA builds) | SpMV per matrix x format x storage precision x vector precision against cuSPARSE (CSR, COO, sliced ELL), GB/s by the byte model, % of the measured read bandwidth, error against fp64 | `make bench`, or `scripts/bench-gpu.sh OUT` on a GPU machine; `--help` lists the options |
| `mixsparse-bench-cpu` | the CPU backend against Eigen, GraphBLAS and librsb (each when installed) | `make bench-cpu` |
| `mixsparse-bench-solve` | GMRES / CB-GMRES time to solution per basis precision and preconditioner; dumps the systems for `bench/gmres_cupy.py` (CuPy's gmres on the same matrices) | see the GMRES section |
| `mixsparse-bench-pagerank` | PageRank per precision mode; dumps the graphs for `bench/pagerank_cupy.py` | see the PageRank section |
| `scripts/bench-threads.sh` | the CPU product per thread setting under competing load | see the threads section |

Benchmarks never decide whether a test passes. Figures from a shared machine vary from run to
run: where a table was measured more than once, its section says by how much.
"""


def read(path):
    meta, rows = {}, []
    with open(path, newline="") as f:
        lines = f.read().split("\n")
    body = []
    for line in lines:
        m = re.match(r"#\s*(\w+):\s*(.*)", line)
        if m and not body:
            meta[m.group(1)] = m.group(2)
        elif line.strip():
            body.append(line)
    rows = list(csv.reader(body))
    return meta, rows


def md_table(rows):
    head = rows[0]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows[1:]:
        out.append("| " + " | ".join(c.replace("|", "/") for c in r) + " |")
    return "\n".join(out)


def number(cell):
    m = re.match(r"\s*(-?[0-9.]+(?:e-?[0-9]+)?)", cell)
    return float(m.group(1)) if m else None


# ---- charts: name -> function(rows, path) that draws one PNG --------------------------------
def chart_spmv(plt, rows, path):
    # speedup against the matrix's nonzeros (log scale): the launch-bound small matrices on the
    # left, the bandwidth-bound large ones on the right
    h = rows[0]
    ni, ai, ci = h.index("nnz"), h.index("AUTO x"), h.index("CSR x")
    fi = h.index("AUTO f32 x") if "AUTO f32 x" in h else None
    fig, ax = plt.subplots(figsize=(9, 4.5))
    series = [(ai, "o", "AUTO f64 (vs fastest cuSPARSE f64)"),
              (ci, "x", "CSR, automatic kernel, f64 (vs fastest cuSPARSE CSR/COO)")]
    if fi is not None:
        series.append((fi, "^", "AUTO f32 values (vs fastest cuSPARSE f32)"))
    for col, mark, label in series:
        pts = [(number(r[ni]), number(r[col])) for r in rows[1:]]
        pts = [p for p in pts if p[0] and p[1]]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=mark, s=22, label=label)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("nonzeros")
    ax.set_ylabel("speedup over cuSPARSE")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def chart_bdmp(plt, rows, path):
    h = rows[0]
    mi, pi, ti = h.index("matrix"), h.index("PBP x cuSPARSE"), h.index("TCKI")
    data = [(r[mi], number(r[pi]), number(r[ti])) for r in rows[1:]]
    data = [d for d in data if d[1] and d[2]]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    x = range(len(data))
    ax.bar([i - 0.2 for i in x], [d[1] for d in data], 0.4, label="BDMP-PBP")
    ax.bar([i + 0.2 for i in x], [d[2] for d in data], 0.4, label="BDMP-TCKI")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels([d[0] for d in data], rotation=30, fontsize=8)
    ax.set_ylabel("speedup over cuSPARSE CSR fp64")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def chart_pagerank(plt, rows, path):
    h = rows[0]
    modes = [m for m in ("f64", "cpms2", "cpms4", "auto") if m in h]
    last = {}
    for r in rows[1:]:
        last[r[0]] = r  # the tightest tolerance of each graph comes last
    fig, ax = plt.subplots(figsize=(8, 3.5))
    graphs = list(last)
    for k, m in enumerate(modes):
        sp = []
        for g in graphs:
            ours, cupy = number(last[g][h.index(m)]), number(last[g][h.index("cupy")])
            sp.append(cupy / ours if ours and cupy else 0)
        ax.bar([i + 0.2 * (k - 1.5) for i in range(len(graphs))], sp, 0.2, label=m)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(graphs)))
    ax.set_xticklabels(graphs, fontsize=8)
    ax.set_ylabel("speedup over CuPy (tightest tol)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def chart_cpu(plt, rows, path):
    h = rows[0]
    data = [(r[0], number(r[h.index("AUTO / peer (format)")])) for r in rows[1:]]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar(range(len(data)), [d[1] for d in data])
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(data)))
    ax.set_xticklabels([d[0] for d in data], rotation=30, fontsize=8)
    ax.set_ylabel("time / fastest peer (< 1: faster)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def chart_threads(plt, rows, path):
    h = rows[0]
    data = [(r[h.index("setting")], float(r[h.index("median_ms")])) for r in rows[1:]
            if r[h.index("busy")] == "2"]
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.barh(range(len(data)), [d[1] for d in data])
    ax.set_yticks(range(len(data)))
    ax.set_yticklabels([d[0] for d in data], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("ms per product, two busy processes on the 2 cores (log)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def chart_history(plt, rows, path):
    h = rows[0]
    series = {}
    for r in rows[1:]:
        series.setdefault(r[h.index("basis")], []).append(
            (int(r[h.index("iteration")]), float(r[h.index("relative_residual")])))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for b, pts in series.items():
        ax.semilogy([p[0] for p in pts], [max(p[1], 1e-300) for p in pts], label=b)
    ax.set_xlabel("iteration")
    ax.set_ylabel("relative residual")
    ax.legend(title="basis")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def chart_precision(plt, rows, path):
    # AUTO's speedup over its own f64 values per storage precision, a group of bars per matrix
    h = rows[0]
    precs = [c for c in h[h.index("f64") + 1:]]
    auto = [r for r in rows[1:] if r[h.index("variant")] == "auto"]
    names = [r[0] for r in auto]
    # a matrix measured with more than one pair of vector precisions is named with the pair
    label = [r[0] if names.count(r[0]) == 1 else "%s (x, y %s)" % (r[0], r[h.index("x, y")])
             for r in auto]
    data = [(label[i], [number(r[h.index(c)]) for c in precs]) for i, r in enumerate(auto)]
    f64 = {label[i]: number(r[h.index("f64")]) for i, r in enumerate(auto)}
    fig, ax = plt.subplots(figsize=(9, 3.8))
    w = 0.8 / max(len(precs), 1)
    for k, c in enumerate(precs):
        sp = [f64[m] / t if t and f64.get(m) else 0 for m, ts in data for t in [ts[k]]]
        ax.bar([i + w * (k - (len(precs) - 1) / 2) for i in range(len(data))], sp, w, label=c)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(data)))
    ax.set_xticklabels([d[0] for d in data], fontsize=8)
    ax.set_ylabel("AUTO: speedup over f64 values")
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def grouped_bars(plt, points, size, path, ylabel, line, legend_title, label_style):
    """One bar per (group, series) of points [(group, series, value)], a group of bars per group
    in the order first met, with a reference line at `line`."""
    groups, series, val = [], [], {}
    for g, t, v in points:
        if g not in groups:
            groups.append(g)
        if t not in series:
            series.append(t)
        val[(g, t)] = v
    fig, ax = plt.subplots(figsize=size)
    w = 0.8 / max(len(series), 1)
    for k, t in enumerate(series):
        ax.bar([i + w * (k - (len(series) - 1) / 2) for i in range(len(groups))],
               [val.get((g, t)) or 0 for g in groups], w, label=t)
    ax.axhline(line, color="k", lw=0.8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, **label_style)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8, title=legend_title, ncol=min(len(series), 5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def chart_gmres(plt, rows, path):
    # time to solution against CuPy's fp64 GMRES, a group of bars (one per basis) per system
    h = rows[0]
    points = [("%s m=%s" % (r[h.index("system")], r[h.index("m")]), r[h.index("basis")],
               number(r[h.index("CuPy / ours time")])) for r in rows[1:]]
    grouped_bars(plt, points, (9, 3.8), path, "speedup over CuPy (time)", 1.0, "basis",
                 {"fontsize": 8})


def chart_scaling(plt, rows, path):
    # parallel efficiency per job and transport against one GPU (a failed job has none: left out)
    h = rows[0]
    points = [("%s (%s GPUs)" % (r[h.index("job")], r[h.index("ranks")]), r[h.index("transport")],
               100.0 * float(r[h.index("efficiency")])) for r in rows[1:]
              if r[h.index("transport")] != "-" and r[h.index("efficiency")] != ""]
    grouped_bars(plt, points, (8, 3.5), path, "efficiency against one GPU (%)", 100.0, "transport",
                 {"fontsize": 7, "rotation": 15, "ha": "right"})


CHARTS = {"spmv": chart_spmv, "spmv-collection": chart_spmv, "bdmp": chart_bdmp,
          "pagerank": chart_pagerank, "cpu": chart_cpu, "threads": chart_threads,
          "history": chart_history, "precision": chart_precision, "gmres_cupy": chart_gmres}
# Charts of CSVs that another page shows (their rows name the card and date): drawn here, shown
# on that page.
OTHER_CHARTS = {"distributed-scaling": ("scaling-4gpu", chart_scaling),
                "distributed-2xh200-scaling": ("scaling-2gpu", chart_scaling)}


# tables longer than this are linked rather than written out
LONG_TABLE = 60
# CSVs whose tables another page generates
OTHER_PAGES = {"distributed-scaling": ": the scaling table of [distributed.md](distributed.md)"}


def main():
    plots = "--no-plots" not in sys.argv[1:]
    plt = None
    if plots:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt  # noqa: F811
        except ImportError:
            print("perf-doc.py: matplotlib not found (Debian: python3-matplotlib): the charts are "
                  "not redrawn", file=sys.stderr)
    names = [os.path.splitext(os.path.basename(p))[0]
             for p in sorted(glob.glob(os.path.join(RESULTS, "*.csv")))]
    names = [n for n in ORDER if n in names] + [n for n in names if n not in ORDER]
    out = [INTRO]
    others = []
    os.makedirs(IMG, exist_ok=True)
    for n in names:
        meta, rows = read(os.path.join(RESULTS, n + ".csv"))
        if not rows:
            continue
        if not meta:
            # a CSV without the header lines is another page's data (its card, date and command
            # are per row): listed, not shown
            others.append(n)
            continue
        out.append("## %s\n" % meta.get("title", n))
        text = os.path.join(RESULTS, n + ".md")
        if os.path.exists(text):
            out.append(open(text).read().strip() + "\n")
        if meta.get("what"):
            out.append(meta["what"] + "\n")
        out.append("- Card: %s\n- Date: %s\n- Command: `%s`\n- Data: [results/%s.csv](results/%s.csv)\n"
                   % (meta.get("card", "?"), meta.get("date", "?"), meta.get("command", "?"), n, n))
        png = os.path.join(IMG, n + ".png")
        if plt and n in CHARTS:
            CHARTS[n](plt, rows, png)
            plt.close("all")
        if os.path.exists(png):
            out.append("![%s](img/%s.png)\n" % (meta.get("title", n), n))
        if len(rows) > LONG_TABLE:
            # a long series is read from its chart and its CSV, not from a page of rows
            out.append("%d rows: see the chart and [results/%s.csv](results/%s.csv).\n"
                       % (len(rows) - 1, n, n))
        else:
            out.append(md_table(rows) + "\n")
    for n, (png_name, fn) in OTHER_CHARTS.items():
        if plt and n in others:
            fn(plt, read(os.path.join(RESULTS, n + ".csv"))[1], os.path.join(IMG, png_name + ".png"))
            plt.close("all")
    if others:
        out.append("## Other data\n")
        out.append("\n".join("- [results/%s.csv](results/%s.csv)%s" % (n, n, OTHER_PAGES.get(n, ""))
                              for n in others) + "\n")
    with open(OUT, "w") as f:
        f.write("\n".join(out))
    print("perf-doc.py: wrote %s (%d sections)" % (os.path.relpath(OUT, ROOT), len(names)))


if __name__ == "__main__":
    main()

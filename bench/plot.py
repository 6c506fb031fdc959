#!/usr/bin/env python3
# plot.py: bar chart of our fp64 speedup over the fastest cuSPARSE variant per matrix, from mixsparse-bench's CSV.
"""usage: plot.py BENCH.csv OUT.png

For each matrix: speedup = t(fastest cuSPARSE fp64 variant) / t(ours), for our CSR kernel
chosen automatically (ours:csr-auto), our automatic format (ours:auto) and TUNE (ours:tune)
where measured. Log scale, a line at 1.0 (parity with cuSPARSE)."""
import csv
import sys


def load(path):
    best_cusp = {}
    ours = {}
    order = []
    kind = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            m = r["matrix"]
            if m not in kind:
                order.append(m)
                kind[m] = r["kind"]
            # f64 values with x and y in f64 (rows of --vector-precisions runs are left out)
            if r["status"] != "ok" or r["precision"] != "f64" or r.get("vector_precision", "f64") != "f64":
                continue
            ms = float(r["ms"])
            if ms <= 0:
                continue
            v = r["variant"]
            if v.startswith("cusparse:"):
                if m not in best_cusp or ms < best_cusp[m]:
                    best_cusp[m] = ms
            elif v in ("ours:csr-auto", "ours:auto", "ours:tune"):
                ours[(m, v)] = ms
    return order, kind, best_cusp, ours


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    order, kind, best_cusp, ours = load(sys.argv[1])
    mats = [m for m in order if m in best_cusp]
    if not mats:
        print("plot.py: no matrix has a cuSPARSE fp64 time; nothing to plot", file=sys.stderr)
        return 1
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    series = [("ours:csr-auto", "CSR, kernel auto", "#4c72b0"),
              ("ours:auto", "format AUTO", "#dd8452"),
              ("ours:tune", "TUNE", "#55a868")]
    series = [s for s in series if any((m, s[0]) in ours for m in mats)]
    n = max(len(series), 1)
    width = 0.8 / n
    lo, hi = 1.0, 1.0
    fig, ax = plt.subplots(figsize=(min(24.0, max(8.0, 0.12 * len(mats) * n + 3)), 6.0))
    for k, (var, label, color) in enumerate(series):
        xs, ys = [], []
        for i, m in enumerate(mats):
            if (m, var) in ours:
                xs.append(i - 0.4 + width * (k + 0.5))
                ys.append(best_cusp[m] / ours[(m, var)])
        # Bars grow from parity (1.0) up or down, which reads right on a log axis.
        ax.bar(xs, [y - 1.0 for y in ys], bottom=1.0, width=width, label=label, color=color)
        lo = min([lo] + ys)
        hi = max([hi] + ys)
    ax.set_yscale("log")
    ax.set_ylim(lo / 1.15, hi * 1.15)
    if hi / lo < 4:
        nice = [0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.5, 2, 3]
    else:
        nice = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100]
    ax.set_yticks([t for t in nice if lo / 1.15 <= t <= hi * 1.15])
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "%gx" % v))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.axhline(1.0, color="black", linewidth=1.0)
    ax.set_xticks(range(len(mats)))
    ax.set_xticklabels([m + (" *" if kind[m] == "generated" else "") for m in mats], rotation=60,
                       ha="right", fontsize=8)
    ax.set_ylabel("speedup over the fastest cuSPARSE variant (fp64)")
    ax.set_title("mixsparse SpMV vs cuSPARSE (* generated matrix; > 1 is faster)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    print("plot.py: wrote %s (%d matrices)" % (sys.argv[2], len(mats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""bench-table-spmv.py BENCH.csv [MORE.csv ...] [--mats DIR] [--docs DIR --card C --date D --command CMD]:
the SpMV tables against cuSPARSE from mixsparse-bench's CSV: one row per matrix, the summary per
size class, and every kernel of ours side by side with the features the AUTO rule reads.

Speedups are t(cuSPARSE) / t(ours) per matrix, in the same run (x > 1: mixsparse is faster):
  - 'AUTO x': our automatic format against the fastest cuSPARSE variant (CSR default and ALG2,
    COO ALG1 and ALG2, sliced ELL) in the same value precision (f64, or f32 with f32 values);
  - 'CSR x': our CSR with the automatic kernel against the fastest cuSPARSE CSR/COO variant;
  - 'best of ours': our fastest fixed format / kernel on the matrix, against the same peer as AUTO.
Size classes by nonzeros: below 1e5 (bound by the launch and latency), 1e5-1e6, above 1e6.
Several CSVs of the same matrices (passes of one job) are merged: each time is the median of the
passes' medians, and the spread between passes is printed. --mats DIR: the .mtx(.gz) files, read
for the row statistics of the kernels table (mean, row_cv = row_std / row_mean, skewness = longest
row / mean, after symmetric expansion); without it those columns are left out.
Without --docs the tables are printed (Markdown); with it docs/results/spmv-collection.csv (per
matrix), spmv-collection-classes.csv (per class) and spmv-collection-kernels.csv (every kernel)
are written with their header lines for scripts/perf-doc.py.
"""
import argparse
import collections
import csv
import math
import os

ap = argparse.ArgumentParser()
ap.add_argument("csv", nargs="+")
ap.add_argument("--docs")
ap.add_argument("--card", default="?")
ap.add_argument("--date", default="?")
ap.add_argument("--command", default="?")
ap.add_argument("--mats")
a = ap.parse_args()

M = collections.OrderedDict()
rows_in = [r for path in a.csv for r in csv.DictReader(open(path))]
for r in rows_in:
    # ours with x and y in fp64; cuSPARSE in the values' precision throughout (its f32 row
    # reads f32 x and writes f32 y)
    ours = r["variant"].startswith("ours:")
    if r.get("status") != "ok" or (ours and r.get("vector_precision", "f64") != "f64"):
        continue
    if r["precision"] not in ("f64", "f32"):
        continue
    M.setdefault(r["matrix"], {}).setdefault(r["precision"], {}).setdefault(r["variant"], []).append(r)
# several passes: the row of the median time (the lower middle of an even count)
spread = collections.defaultdict(list)
for byp in M.values():
    for w in byp.values():
        for k, rs in w.items():
            rs.sort(key=lambda r: float(r["ms"]))
            if len(rs) > 1:
                spread["ours" if k.startswith("ours:") else "cusparse"].append(
                    float(rs[-1]["ms"]) / float(rs[0]["ms"]) - 1)
            w[k] = rs[(len(rs) - 1) // 2]
for who, d in sorted(spread.items()):
    d.sort()
    print("passes: %s times, (slowest - fastest) / fastest over %d: median %.1f%%, 90th %.1f%%"
          % (who, len(d), 100 * d[len(d) // 2], 100 * d[int(0.9 * (len(d) - 1))]))


def row_stats(m):
    """(rows, mean, row_cv, skewness) of matrix m's file in --mats, or None."""
    import gzip
    if not a.mats:
        return None
    for ext in (".mtx.gz", ".mtx"):
        path = os.path.join(a.mats, m + ext)
        if os.path.exists(path):
            break
    else:
        return None
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        head = f.readline().lower().split()
        sym = head[4] if len(head) > 4 else "general"
        line = f.readline()
        while line.startswith("%"):
            line = f.readline()
        n = int(line.split()[0])
        cnt = [0] * n
        for line in f:
            p = line.split()
            if len(p) < 2:
                continue
            i, j = int(p[0]) - 1, int(p[1]) - 1
            cnt[i] += 1
            if sym != "general" and i != j:
                cnt[j] += 1
    nnz = sum(cnt)
    mean = nnz / n
    var = max(sum(c * c for c in cnt) / n - mean * mean, 0.0)
    return n, mean, (var ** 0.5) / mean if mean else 0.0, max(cnt) / mean if mean else 0.0


def gm(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def cls(nnz):
    return "< 1e5" if nnz < 1e5 else ("1e5 - 1e6" if nnz <= 1e6 else "> 1e6")


rows, per = [], collections.defaultdict(lambda: collections.defaultdict(list))
for m, byp in M.items():
    v = byp.get("f64", {})
    any_row = next(iter(v.values())) if v else None
    if not any_row:
        continue
    nnz, kind = int(any_row["nnz"]), any_row["kind"]
    out = {"matrix": m, "kind": kind, "nnz": nnz}
    for p in ("f64", "f32"):
        w = byp.get(p, {})
        cu = {k: float(r["ms"]) for k, r in w.items() if k.startswith("cusparse:")}
        cc = {k: x for k, x in cu.items() if ":csr" in k or ":coo" in k}
        if not cu:
            continue
        fk = min(cu, key=cu.get)
        if "ours:auto" in w:
            out[p + "_auto"] = cu[fk] / float(w["ours:auto"]["ms"])
            out[p + "_fmt"] = w["ours:auto"].get("choice", "").split(":")[0] or w["ours:auto"].get("format", "")
            out[p + "_pct"] = float(w["ours:auto"]["pct_read_bw"])
            out[p + "_auto_us"] = 1e3 * float(w["ours:auto"]["ms"])
        if "ours:csr-auto" in w and cc:
            out[p + "_csr"] = min(cc.values()) / float(w["ours:csr-auto"]["ms"])
            out[p + "_kern"] = w["ours:csr-auto"].get("choice", "").split(":")[0]
        fixed = {k: float(r["ms"]) for k, r in w.items()
                 if k.startswith("ours:") and k not in ("ours:auto", "ours:tune", "ours:csr-auto")}
        if fixed:
            b = min(fixed, key=fixed.get)
            out[p + "_best"] = "%s %.2f" % (b.split(":")[1], cu[fk] / fixed[b])
        out[p + "_peer"] = "%s %.1f" % (fk.split(":")[1], 1e3 * cu[fk])
        for key in ("auto", "csr"):
            # the 1 x 1 matrix measures the floor; it is in the table, not in the summaries
            if p + "_" + key in out and nnz >= 1000:
                per[(cls(nnz) if kind == "real" else "generated", p, key)][m] = out[p + "_" + key]
    rows.append(out)


KERNELS = ("csr-scalar", "csr-vector", "csr-merge", "coo")
ktab = [["matrix", "nnz", "rows", "mean", "row_cv", "skewness"]
        + ["%s %s x" % (p, k.split("-")[-1]) for p in ("f64", "f32") for k in KERNELS + ("auto",)]
        + ["f64 AUTO format", "f32 AUTO format"]]
for m, byp in M.items():
    v = byp.get("f64", {})
    any_row = next(iter(v.values())) if v else None
    if not any_row or any_row["kind"] != "real":
        continue
    st = row_stats(m)
    cells = [m, any_row["nnz"]]
    cells += (["%d" % st[0], "%.2f" % st[1], "%.2f" % st[2], "%.1f" % st[3]] if st
              else [any_row["rows"], "%.2f" % (int(any_row["nnz"]) / max(int(any_row["rows"]), 1)),
                    "-", "-"])
    fmts = []
    for p in ("f64", "f32"):
        w = byp.get(p, {})
        cu = [float(r["ms"]) for k, r in w.items() if k.startswith("cusparse:")]
        for k in KERNELS + ("auto",):
            r = w.get("ours:" + k)
            cells.append("%.2f" % (min(cu) / float(r["ms"])) if r and cu else "-")
        r = w.get("ours:auto")
        fmts.append(r.get("choice", "") or "-" if r else "-")
    ktab.append(cells + fmts)


def f2(x):
    return "%.2f" % x if isinstance(x, float) else (x if x else "-")


head = ["matrix", "kind", "nnz", "fastest cuSPARSE f64 (us)", "AUTO format", "AUTO x",
        "AUTO % read bw", "CSR kernel", "CSR x", "best of ours f64", "AUTO f32 x", "CSR f32 x"]
table = [head]
for o in rows:
    table.append([o["matrix"], o["kind"], str(o["nnz"]), o.get("f64_peer", "-"), o.get("f64_fmt", "-"),
                  f2(o.get("f64_auto")), "%.1f" % o["f64_pct"] if "f64_pct" in o else "-",
                  o.get("f64_kern", "-"), f2(o.get("f64_csr")), o.get("f64_best", "-"),
                  f2(o.get("f32_auto")), f2(o.get("f32_csr"))])

chead = ["class", "precision", "ours", "matrices", "geomean x", "worst x (matrix)", ">= 1.0x",
         "< 0.9x"]
ctab = [chead]
order = ["generated", "< 1e5", "1e5 - 1e6", "> 1e6"]
groups = sorted(per, key=lambda k: (order.index(k[0]) if k[0] in order else 9, k[1] != "f64",
                                    k[2] != "auto"))
# the collection's matrices with >= 1e5 nonzeros together: the headline figures
for p in ("f64", "f32"):
    for key in ("auto", "csr"):
        merged = {}
        for c in ("1e5 - 1e6", "> 1e6"):
            merged.update(per.get((c, p, key), {}))
        if merged:
            per[(">= 1e5", p, key)] = merged
            groups.append((">= 1e5", p, key))
for g in groups:
    d = per[g]
    if not d:
        continue
    worst = min(d, key=d.get)
    ctab.append([g[0], g[1], "AUTO" if g[2] == "auto" else "CSR auto kernel", str(len(d)),
                 "%.3f" % gm(list(d.values())), "%.2f (%s)" % (d[worst], worst),
                 "%d" % sum(1 for x in d.values() if x >= 1.0),
                 "%d" % sum(1 for x in d.values() if x < 0.9)])


def md(t):
    s = ["| " + " | ".join(t[0]) + " |", "|" + "---|" * len(t[0])]
    s += ["| " + " | ".join(r) + " |" for r in t[1:]]
    return "\n".join(s)


if not a.docs:
    print(md(table))
    print()
    print(md(ctab))
    print()
    print(md(ktab))
else:
    what = ("Our kernels and cuSPARSE (CSR default and CSR_ALG2, COO ALG1 and ALG2, sliced ELL, each "
            "after cusparseSpMV_preprocess) on the same matrices in one process, median of the timed "
            "runs, CUDA events, L2 flushed before each run. \"AUTO x\": our automatic format against "
            "the fastest cuSPARSE variant in the same value precision (ours with x and y in fp64, "
            "cuSPARSE f32 with f32 x and y); \"CSR x\": "
            "our CSR with the automatic kernel against the fastest cuSPARSE CSR/COO variant; \"best "
            "of ours\": our fastest fixed format or kernel; \"% read bw\": AUTO's GB/s by its byte "
            "model over the read bandwidth measured in the same run. x > 1: mixsparse is faster.")
    kwhat = ("Every kernel of ours on the collection's real matrices, each against the fastest "
             "cuSPARSE variant in the same value precision (as \"AUTO x\" above), beside the row "
             "statistics the AUTO rule reads (mean row length, row_cv = row_std / mean, skewness = "
             "longest row / mean). scalar, vector, merge: CSR with that kernel; coo: our COO; auto "
             "and AUTO format: what AUTO chose in that job. x > 1: mixsparse is faster.")
    for name, title, t, w in (("spmv-collection", "SpMV against cuSPARSE on the collection", table,
                               what),
                              ("spmv-collection-classes",
                               "SpMV against cuSPARSE on the collection: summary per size class",
                               ctab, what),
                              ("spmv-collection-kernels",
                               "The AUTO rule on the collection: every kernel of ours", ktab, kwhat)):
        with open(os.path.join(a.docs, name + ".csv"), "w", newline="") as f:
            f.write("# title: %s\n# card: %s\n# date: %s\n# command: %s\n# what: %s\n"
                    % (title, a.card, a.date, a.command, w))
            csv.writer(f).writerows(t)
    print("wrote %s/spmv-collection.csv (%d matrices), spmv-collection-classes.csv and "
          "spmv-collection-kernels.csv" % (a.docs, len(table) - 1))

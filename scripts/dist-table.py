#!/usr/bin/env python3
"""The distributed scaling table: scripts/dist-scaling.sh's JSON lines to a CSV and to the
generated part of docs/distributed.md.

usage: dist-table.py JOBS.jsonl OUT.csv [DOC.md [MARKER]]
One CSV row per (job, ranks, transport): the slowest rank's time, the one-GPU time of the same job
(rank 0's one-process reference; for weak scaling the one-GPU run of the smallest matrix), the
parallel efficiency (one-GPU time / (ranks x time) for strong scaling, one-GPU time / time for
weak), halo bytes per product over all ranks, the longest halo wait per product of any rank, the
transport, iterations (GMRES), the reductions over the ranks and the slowest rank's seconds per
reduction, card, date and command. With DOC.md, the text between the markers
<!-- MARKER:begin --> and <!-- MARKER:end --> (MARKER: dist-table unless given) is replaced by the
tables, each target beside its figure.
"""
import csv
import json
import sys

FIELDS = ["job", "kind", "ranks", "transport", "seconds", "one_gpu_seconds", "efficiency",
          "halo_bytes_per_product", "halo_wait_ms_per_product", "iterations",
          "one_gpu_iterations", "same_iterations", "max_rel_diff", "reductions",
          "reduce_ms_per_reduction", "card", "date", "command"]

# (job prefix, ranks) -> the target for that figure
TARGETS = {
    ("spmv-stencil27-200", 2): ("efficiency >= 90%", 0.90),
    ("spmv-stencil27-200", 4): ("efficiency >= 80%", 0.80),
    ("spmv-rmat-24-16-metis", 4): ("efficiency >= 60% with METIS", 0.60),
    ("spmv-rmat-24-16", 4): ("report the halo's cost (METIS: >= 60%)", None),
    ("solve-convdiff3d-160-f64", 4): ("efficiency >= 80%, one GPU's iterations", 0.80),
    ("solve-convdiff3d-160-f32", 4): ("efficiency >= 80%, one GPU's iterations", 0.80),
    ("weak-stencil27", 4): ("weak efficiency >= 90%", 0.90),
    ("pagerank-rmat-25-16", 4): ("efficiency >= 60%", 0.60),
}


def rows_of(lines):
    jobs = [json.loads(x) for x in lines if x.strip()]
    one_weak = None
    for j in jobs:
        if j["job"].startswith("weak-") and j["ranks"] == 1 and j.get("result"):
            one_weak = j["result"].get("seconds_per_product")
    out = []
    for j in jobs:
        r = j.get("result")
        if j["ranks"] == 1:
            if r:
                out.append({"job": j["job"], "kind": "spmv", "ranks": 1, "transport": "-",
                            "seconds": r.get("seconds_per_product"),
                            "one_gpu_seconds": r.get("seconds_per_product"), "efficiency": 1.0,
                            "halo_bytes_per_product": 0, "halo_wait_ms_per_product": 0,
                            "card": j["card"], "date": j["date"], "command": j["command"]})
            continue
        if not r:
            out.append({"job": j["job"], "kind": "failed", "ranks": j["ranks"], "card": j["card"],
                        "date": j["date"], "command": j["command"],
                        "transport": "stopped by its time limit (exit 124)" if j["rc"] == 124
                        else "exit %d: %s" % (j["rc"], j.get("stderr", "")[-200:]
                                              .replace("\n", " "))})
            continue
        kind = r.get("command", "?")
        t = r.get("seconds")
        one = r.get("one_process_seconds") if r.get("reference", True) else None
        weak = j["job"].startswith("weak-")
        if weak:
            one = one_weak
        eff = None
        if one and t:
            eff = one / t if weak else one / (j["ranks"] * t)
        wait = max((p.get("halo_wait_seconds_per_product", 0) for p in r.get("per_rank", [])),
                   default=0)
        red = max((p.get("reductions", 0) for p in r.get("per_rank", [])), default=0)
        red_s = max((p.get("reduce_seconds", 0) for p in r.get("per_rank", [])), default=0)
        row = {"job": j["job"], "kind": kind, "ranks": j["ranks"],
               "reductions": red if red else None,
               "reduce_ms_per_reduction": 1e3 * red_s / red if red else None,
               "transport": r.get("transport", "?"), "seconds": t, "one_gpu_seconds": one,
               "efficiency": eff, "halo_bytes_per_product": r.get("bytes_sent_per_product"),
               "halo_wait_ms_per_product": wait * 1e3, "card": j["card"], "date": j["date"],
               "command": j["command"], "max_rel_diff": r.get("max_rel_diff_from_one_process")}
        if kind == "pagerank" and r.get("iteration_seconds") and r.get(
                "one_process_iteration_seconds"):
            # the power iterations (the setup, G^T's construction, is reported in the JSON)
            row["seconds"] = r["iteration_seconds"]
            row["one_gpu_seconds"] = one = r["one_process_iteration_seconds"]
            row["efficiency"] = one / (j["ranks"] * row["seconds"])
        if kind == "pagerank":
            row["iterations"] = r.get("iterations")
            row["one_gpu_iterations"] = r.get("one_process_iterations")
            row["same_iterations"] = int(r.get("iterations") == r.get("one_process_iterations"))
        if kind == "solve":
            row["iterations"] = r.get("iterations")
            row["one_gpu_iterations"] = r.get("one_process_iterations")
            row["same_iterations"] = int(r.get("iterations") == r.get("one_process_iterations"))
        out.append(row)
    return out


def fmt(v, f):
    return "-" if v is None or v == "" else f % v


def target_of(row):
    for (prefix, np), tg in TARGETS.items():
        if row["job"].startswith(prefix) and row["ranks"] == np:
            return tg
    return None


def table(rows):
    s = ["| job | ranks | transport | time | one GPU | efficiency | halo bytes/product | "
         "halo wait ms/product | iterations (one GPU) | ms/reduction | target | met |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["kind"] == "failed":
            s.append("| %s | %d | failed: %s | | | | | | | | | |" % (r["job"], r["ranks"],
                                                                  r["transport"]))
            continue
        unit = "s" if r["kind"] in ("solve", "pagerank") else "ms"
        k = 1.0 if unit == "s" else 1e3
        tg = target_of(r)
        met = "-"
        if tg and tg[1] is not None and r.get("efficiency") is not None:
            ok = r["efficiency"] >= tg[1]
            if r["kind"] == "solve":
                ok = ok and r.get("same_iterations") == 1
            met = "met" if ok else "missed"
        it = "-"
        if r.get("iterations") is not None:
            it = "%s (%s)" % (r["iterations"], r.get("one_gpu_iterations"))
        s.append("| %s | %d | %s | %s %s | %s %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["job"], r["ranks"], r["transport"], fmt(r["seconds"] and r["seconds"] * k, "%.4g"),
            unit, fmt(r["one_gpu_seconds"] and r["one_gpu_seconds"] * k, "%.4g"), unit,
            fmt(r["efficiency"] and 100 * r["efficiency"], "%.1f%%"),
            fmt(r.get("halo_bytes_per_product"), "%.0f"),
            fmt(r.get("halo_wait_ms_per_product"), "%.3f"), it,
            fmt(r.get("reduce_ms_per_reduction"), "%.3f"), tg[0] if tg else "-", met))
    return "\n".join(s)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    rows = rows_of(open(sys.argv[1]).readlines())
    with open(sys.argv[2], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    if len(sys.argv) > 3:
        cards = sorted({r["card"] for r in rows if r.get("card")})
        dates = sorted({r["date"] for r in rows if r.get("date")})
        gpus = max((json.loads(x).get("gpus", 0) for x in open(sys.argv[1]) if x.strip()),
                   default=0)
        body = ["Measured on %s%s of one host, %s (generated by scripts/dist-table.py from %s; "
                "CSV: %s). The one-GPU time is rank 0's one-process run of the same job on its "
                "GPU; efficiency = one-GPU time / (ranks x time); for weak scaling (the same "
                "rows per GPU) the one-GPU time is the smallest matrix's on one GPU and efficiency "
                "= one-GPU time / time." % (
                    "%d x " % gpus if gpus else "", ", ".join(cards) or "?",
                    ", ".join(dates) or "?", sys.argv[1], sys.argv[2]), "", table(rows), "",
                "Commands:", ""]
        body += ["- `%s`" % r["command"] for r in rows]
        doc = open(sys.argv[3]).read()
        mk = sys.argv[4] if len(sys.argv) > 4 else "dist-table"
        a, b = "<!-- %s:begin -->" % mk, "<!-- %s:end -->" % mk
        i, k = doc.index(a) + len(a), doc.index(b)
        open(sys.argv[3], "w").write(doc[:i] + "\n" + "\n".join(body) + "\n" + doc[k:])
    return 0


if __name__ == "__main__":
    sys.exit(main())

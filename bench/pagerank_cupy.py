#!/usr/bin/env python3
"""PageRank in CuPy: the peer of mixsparse-bench-pagerank, as a GPU Python user would write it.

The same formulation as msp_pagerank (row = source, dangling mass spread with the factor alpha,
uniform teleport, stop when ||p_k - p_{k-1}||_1 < tol): M = G^T D^-1 as a cupyx.scipy.sparse CSR
matrix with values 1/O_i, then p = alpha M p + (alpha s + 1 - alpha) / n per iteration, the
change read back to the host each iteration (the test needs it). One run to the smallest
tolerance records the change and elapsed time after each iteration; the time to each larger
tolerance is read off the same run (the path does not depend on the tolerance).

usage: pagerank_cupy.py DUMPDIR TAG... [--tols 1e-4,1e-6,1e-8,1e-10] [--csv FILE]
DUMPDIR holds TAG.rowptr (int64), TAG.colind (int32) and TAG.txt ("n nnz"), G's CSR as
mixsparse-bench-pagerank --dump wrote it.
"""
import sys
import time


def main(argv):
    tols = [1e-4, 1e-6, 1e-8, 1e-10]
    csv = None
    args = []
    i = 0
    while i < len(argv):
        if argv[i] == "--tols":
            tols = [float(t) for t in argv[i + 1].split(",")]
            i += 2
        elif argv[i] == "--csv":
            csv = argv[i + 1]
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import cupy as cp
        import cupyx.scipy.sparse as csp
        import numpy as np
    except ImportError as e:
        print("pagerank_cupy: SKIPPED, CuPy not importable (%s)" % e)
        return 0
    dumpdir, tags = args[0], args[1:]
    alpha = 0.85
    tmin = min(tols)
    rows = []
    # Warm-up: CuPy compiles its kernels at their first use; that is not PageRank's time.
    w = csp.random(1000, 1000, density=0.01, format="csr", dtype=cp.float64)
    pw = cp.full(1000, 1e-3)
    for _ in range(3):
        pw = 0.85 * (w.T.tocsr() @ pw) + 0.15 * pw[pw > 0].sum() / 1000
        float(cp.abs(pw).sum())
    marks = cp.zeros(11, dtype=cp.int32)
    cp.add.at(marks, cp.arange(3, dtype=cp.int64), 1)
    cp.cumsum(marks, dtype=cp.int32)
    cp.cuda.Stream.null.synchronize()
    for tag in tags:
        try:
            n, nnz = (int(v) for v in open("%s/%s.txt" % (dumpdir, tag)).read().split())
        except OSError:
            print("pagerank_cupy: %s not dumped: left out" % tag)
            continue
        rowptr = np.fromfile("%s/%s.rowptr" % (dumpdir, tag), dtype=np.int64)
        colind = np.fromfile("%s/%s.colind" % (dumpdir, tag), dtype=np.int32)
        t0 = time.perf_counter()
        d_rp = cp.asarray(rowptr.astype(np.int32) if nnz < 2**31 else rowptr)
        d_ci = cp.asarray(colind)
        outdeg = cp.diff(d_rp).astype(cp.float64)
        inv = cp.where(outdeg > 0, 1.0 / cp.maximum(outdeg, 1.0), 0.0)
        # G with values 1/O_i (row i's entries all 1/O_i), transposed into CSR on the GPU; the
        # row of each entry from rowptr by a scan of row-start marks (no host round trip)
        marks = cp.zeros(nnz + 1, dtype=cp.int32)
        cp.add.at(marks, d_rp[1:-1], 1)
        row_of = cp.cumsum(marks[:nnz], dtype=cp.int32)
        del marks
        vals = inv[row_of]
        G = csp.csr_matrix((vals, d_ci, d_rp), shape=(n, n))
        M = G.T.tocsr()
        dangling = outdeg == 0
        del G, vals, row_of
        p = cp.full(n, 1.0 / n, dtype=cp.float64)
        cp.cuda.Stream.null.synchronize()
        setup = time.perf_counter() - t0
        hist, htime = [], []
        start = time.perf_counter()
        for _ in range(1000):
            s = p[dangling].sum()
            pn = alpha * (M @ p) + (alpha * s + 1.0 - alpha) / n
            change = float(cp.abs(pn - p).sum())  # the host needs it: a synchronisation
            p = pn
            hist.append(change)
            htime.append(time.perf_counter() - start)
            if change < tmin:
                break
        for tol in tols:
            it = next((k for k, c in enumerate(hist) if c < tol), None)
            conv = it is not None
            used = it + 1 if conv else len(hist)
            t = htime[used - 1] if used else 0.0
            rows.append("%s,%d,%d,cupy,%.0e,%d,%d,f64,%.6f,%.4f,%.3f,,\n"
                        % (tag, n, nnz, tol, conv, used, t, 1e3 * t / max(used, 1), setup))
            sys.stdout.write(rows[-1])
        sys.stdout.flush()
        del M, p, pn, dangling, outdeg, inv, d_rp, d_ci
        cp.get_default_memory_pool().free_all_blocks()
    if csv:
        with open(csv, "w") as f:
            f.write("graph,nodes,edges,mode,tol,converged,iterations,storage,time_s,ms_per_iter,"
                    "setup_s,gb_per_s_model,pct_bw\n")
            f.writelines(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

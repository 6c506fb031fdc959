"""test_lifetime.py: objects are freed by close(), by with-blocks and by the garbage collector:
10^4 create/use/destroy cycles leave the resident memory where it was."""

import gc
import os

import numpy as np
import scipy.sparse as sp

import mixsparse as ms

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes():
    """Resident set size of this process (/proc/self/statm, second field, in pages)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def one_cycle(i, A, x):
    """A context, a matrix, its conversion, vectors and a product; freed three ways in turn."""
    if i % 3 == 0:  # with-blocks
        with ms.Context("cpu") as c, ms.Matrix.from_scipy(A, c) as M:
            with M.convert(format="ell", precision="f32") as B, ms.Vector(x, c) as v:
                with B @ v as y:
                    y.to_numpy()
    elif i % 3 == 1:  # close(): the context closes what was made with it
        c = ms.Context("cpu")
        M = ms.Matrix.from_scipy(A, c)
        B = M.convert(format="hll", precision="fx16")
        (B @ x).sum()
        c.close()
        assert M.closed and B.closed
    else:  # the garbage collector (reference counting), no close() anywhere
        M = ms.Matrix.from_scipy(A, ms.Context("cpu"))
        B = M.convert(format="csr", precision="f16")
        ms.gmres(M, x, max_iters=2)
        v = ms.Vector(x, M.context, precision="cpms2")
        (B @ v).to_numpy()
        del M, B, v


def test_ten_thousand_cycles_without_growth():
    A = sp.random(40, 40, density=0.2, format="csr", random_state=0) + sp.eye(40)
    x = np.ones(40)
    for i in range(1000):  # warm-up: allocator pools, OpenMP threads, numpy caches
        one_cycle(i, A, x)
    gc.collect()
    before = rss_bytes()
    for i in range(1000, 10000):
        one_cycle(i, A, x)
    gc.collect()
    grown = rss_bytes() - before
    # 9000 cycles: a leak of even 64 bytes a cycle would exceed this.
    assert grown < 512 * 1024, "resident memory grew by %d bytes over 9000 cycles" % grown

"""_solvers.py: GMRES and PageRank over the C API, their options and reports, and monitors."""

import ctypes

import numpy as np

from . import _inputs, _lib
from ._errors import check
from ._core import (
    _DP,
    _ORTHO,
    _PAGERANK_ORDER,
    _PAGERANK_PRECISION,
    _PRECOND,
    _VP,
    _choice,
    _ctx,
    _f64,
    _need,
    _parse,
    lib,
    precisions,
)
from ._matrix import Matrix, _matrix_arg
from ._vector import Vector, _as_vector


class GmresReport:
    """What gmres did: converged, iterations, restarts, rel_residual (final explicit
    ||b - A x|| / ||b||), history (numpy array of the recurrence's relative residuals when
    asked for, else None), cycle_precisions (basis precision tag of each recorded cycle),
    iterations_by_precision (dict tag -> inner iterations), time_s, basis_bytes, setup_s (of
    time_s, the set-up before the first iteration: work vectors, basis, preconditioner),
    stopped (a callback asked to stop), info (SciPy's code, set by mixsparse.linalg.gmres) and
    error (the library's message when mixsparse.linalg.gmres reports a breakdown, else None)."""

    def __init__(self, rep, history):
        self.converged = bool(rep.converged)
        self.iterations = rep.iterations
        self.restarts = rep.restarts
        self.rel_residual = rep.rel_residual
        self.history = None if history is None else history[: rep.history_length].copy()
        cycles = range(rep.cycles_recorded)
        self.cycle_precisions = [precisions[rep.cycle_precision[i]] for i in cycles]
        by = rep.iterations_by_precision
        self.iterations_by_precision = {
            precisions[i]: by[i] for i in range(_lib.PRECISION_COUNT) if by[i]
        }
        self.time_s = rep.time_s
        self.basis_bytes = rep.basis_bytes
        self.setup_s = rep.setup_s
        self.stopped = bool(getattr(rep, "stopped", 0))
        self.info = None
        self.error = None

    def _append(self, later):
        """Add the report of a later call that went on from this one's x (one more cycle)."""
        self.converged, self.rel_residual = later.converged, later.rel_residual
        self.stopped = later.stopped
        self.restarts += later.restarts + (1 if later.iterations else 0)
        self.iterations += later.iterations
        if self.history is not None and later.history is not None:
            self.history = np.concatenate([self.history, later.history[1:]])
        self.cycle_precisions += later.cycle_precisions
        for tag, k in later.iterations_by_precision.items():
            self.iterations_by_precision[tag] = self.iterations_by_precision.get(tag, 0) + k
        self.time_s += later.time_s
        self.basis_bytes += later.basis_bytes
        self.setup_s += later.setup_s

    def __repr__(self):
        return "GmresReport(converged=%s, iterations=%d, restarts=%d, rel_residual=%.3g)" % (
            self.converged, self.iterations, self.restarts, self.rel_residual)  # fmt: skip


_GMRES_MONITOR = ctypes.CFUNCTYPE(ctypes.c_int, _VP, ctypes.c_int64, ctypes.c_double,
                                  ctypes.c_double, ctypes.c_int)  # fmt: skip
_PAGERANK_MONITOR = ctypes.CFUNCTYPE(ctypes.c_int, _VP, ctypes.c_int64, ctypes.c_double,
                                     ctypes.c_int)  # fmt: skip


def has_monitor():
    """Whether the loaded library calls a Python function per solver iteration (the monitor of
    msp_solver_options): needed by callbacks per inner iteration."""
    return "monitor" in dict(_lib.SolverOptions._fields_)


class _Monitor:
    """A Python function called by the C solver per iteration through the options' monitor.
    fn(iteration, residual, rel_residual, basis_tag) returns True to stop. An exception
    stops the solve and is raised again once the C call has returned; StopIteration only
    stops it."""

    def __init__(self, fn, kind=_GMRES_MONITOR):
        self.fn = fn
        self.error = None

        def call(data, *args):
            try:
                return 1 if self.fn(*args) else 0
            except StopIteration:
                return 1
            except BaseException as e:  # noqa: BLE001  (nothing may propagate into C)
                self.error = e
                return 1

        self.c = kind(call)

    def install(self, options):
        if "monitor" not in dict(type(options)._fields_):
            raise NotImplementedError(
                "this build of %s has no solver monitor, which callbacks per iteration need"
                % _lib.path
            )
        options.monitor = ctypes.cast(self.c, _VP).value
        options.monitor_data = None

    def reraise(self):
        if self.error is not None:
            e, self.error = self.error, None
            raise e


def _solver_options(restart, rtol, atol, max_iters, basis_precision, basis_auto, precond, ortho):
    o = lib.msp_solver_options_default()
    o.restart = _inputs.integer(restart, "restart", 1, _inputs.INT32_MAX)
    o.rtol = _inputs.real(rtol, "rtol")
    o.atol = _inputs.real(atol, "atol")
    o.max_iters = _inputs.integer(max_iters, "max_iters")
    o.basis_precision = _parse(lib.msp_precision_parse, basis_precision, "basis_precision")
    o.basis_auto = int(bool(basis_auto))
    o.precond = _choice(_PRECOND, precond, "preconditioner")
    o.ortho = _choice(_ORTHO, ortho, "orthogonalisation")
    return o


def _gmres_call(A, bv, xv, o, history_capacity=0, monitor=None):
    """One msp_gmres call on A's context (x in and out in xv); returns its GmresReport."""
    rep = _lib.SolverReport()
    hist = None
    if history_capacity:
        hist = np.zeros(history_capacity)
        rep.history = hist.ctypes.data_as(_DP)
        rep.history_capacity = hist.shape[0]
    if monitor is not None:
        monitor.install(o)
    try:
        check(lib.msp_gmres(A.context._handle(), A._handle(), bv._handle(), xv._handle(),
                            ctypes.byref(o), ctypes.byref(rep)))  # fmt: skip
    finally:
        if monitor is not None:
            monitor.reraise()
    return GmresReport(rep, hist)


def gmres(A, b, x0=None, *, restart=100, rtol=1e-8, atol=0.0, max_iters=10000,
          basis_precision="f64", basis_auto=False, precond="none", ortho="cgs",
          history=False, monitor=None):  # fmt: skip
    """Solve A x = b by restarted GMRES with right preconditioning; returns (x, GmresReport).
    This is the library's own interface (max_iters counts inner iterations; restart 100, rtol
    1e-8); mixsparse.linalg.gmres has SciPy's signature, defaults and (x, info) result.

    A: a Matrix, or any scipy.sparse matrix or dense array (copied for this call).
    CB-GMRES: basis_precision stores the Krylov basis in a reduced precision ("f32", "f16",
    "fx16", "cpms2", ...), all arithmetic fp64; basis_auto=True starts in f32 and moves to f64
    when the residual stagnates. precond: "none", "jacobi", "ilu0"; ortho: "cgs", "mgs".
    b (and x0) are numpy arrays (x returned as numpy) or Vectors (x0 updated in place, or a new
    Vector). monitor(iteration, residual, rel_residual, basis_tag), when given, is called
    before the first iteration (0) and after every inner iteration; a true result stops the
    solve (report.stopped). Not converging is report.converged == False, not an error. Raises
    DimensionMismatchError, InvalidArgumentError, InvalidMatrixError (a bad pivot),
    NonFiniteError, NotSupportedError; TypeError for complex values or a non-integer count."""
    o = _solver_options(restart, rtol, atol, max_iters, basis_precision, basis_auto, precond,
                        ortho)  # fmt: skip
    ctx = A.context if isinstance(A, Matrix) else _ctx(None)
    A, atmp = _matrix_arg(A, ctx)
    n = A.shape[0]
    as_numpy = not isinstance(b, Vector)
    bv, btmp, xv, xtmp = None, False, None, False
    try:
        bv, btmp = _as_vector(b, ctx, "b", n)
        if isinstance(x0, Vector):
            xv = x0
        else:
            xv, xtmp = Vector(n if x0 is None else _f64(x0, "x0", n), context=ctx), True
        mon = None
        if monitor is not None:
            mon = _Monitor(lambda k, r, rr, p: monitor(k, r, rr, precisions[p]))
        report = _gmres_call(A, bv, xv, o, o.max_iters + 1 if history else 0, mon)
        if as_numpy:
            return xv.to_numpy(), report
        xtmp = False  # handed to the caller
        return xv, report
    finally:
        if btmp:
            bv.close()
        if xtmp and xv is not None:
            xv.close()
        if atmp:
            A.close()


class PagerankReport:
    """What pagerank did: converged, iterations, iterations_by_bits (dict read width in bits ->
    iterations), values (whether the values form ran), storage (precision tag of p), change
    (final ||p_k - p_{k-1}||_1), time_s, setup_s, dangling (nodes without out-edges), order
    (the internal node numbering used: "natural" or "degree"), stopped (a monitor asked to
    stop)."""

    def __init__(self, rep):
        self.converged = bool(rep.converged)
        self.iterations = rep.iterations
        by = rep.iterations_by_bits
        self.iterations_by_bits = {16 * w: by[w] for w in range(1, 5) if by[w]}
        self.values = bool(rep.values)
        self.storage = precisions[rep.storage]
        self.change = rep.change
        self.time_s = rep.time_s
        self.setup_s = rep.setup_s
        self.dangling = rep.dangling
        self.order = {v: k for k, v in _PAGERANK_ORDER.items()}[rep.order]
        self.stopped = bool(getattr(rep, "stopped", 0))

    def __repr__(self):
        return "PagerankReport(converged=%s, iterations=%d, storage=%s, change=%.3g)" % (
            self.converged, self.iterations, self.storage, self.change)  # fmt: skip


def _pagerank_call(G, o, p, personalization, monitor=None):
    """One msp_pagerank call: p (a Vector) in (when o.use_guess) and out."""
    fn = _need("msp_pagerank")
    ctx = G.context
    n = G.shape[0]
    pv, ptmp = None, False
    try:
        if personalization is not None:
            pv, ptmp = _as_vector(personalization, ctx, "personalization", n)
            o.personalization = pv._handle().value
        if monitor is not None:
            monitor.install(o)
        rep = _lib.PagerankReport()
        try:
            check(fn(ctx._handle(), G._handle(), ctypes.byref(o), p._handle(), ctypes.byref(rep)))
        finally:
            if monitor is not None:
                monitor.reraise()
        return PagerankReport(rep)
    finally:
        if ptmp:
            pv.close()


def _pagerank_options(alpha, tol, max_iters, precision, separate, bank_bytes, switch_factor,
                      weighted, values, order):  # fmt: skip
    o = _need("msp_pagerank_options_default")()
    o.alpha = _inputs.real(alpha, "alpha")
    o.tol = _inputs.real(tol, "tol")
    o.max_iters = _inputs.integer(max_iters, "max_iters")
    o.precision = _choice(_PAGERANK_PRECISION, precision, "PageRank precision")
    o.order = _choice(_PAGERANK_ORDER, order, "PageRank order")
    o.separate, o.weighted = int(bool(separate)), int(bool(weighted))
    o.bank_bytes = _inputs.integer(bank_bytes, "bank_bytes", 0, _inputs.INT32_MAX)
    if switch_factor is not None:
        o.switch_factor = _inputs.real(switch_factor, "switch_factor")
    if values is not None:
        o.values = int(bool(values))
    return o


def pagerank(G, *, alpha=0.85, tol=1e-10, max_iters=1000, precision="f64", separate=False,
             bank_bytes=0, switch_factor=None, weighted=False, values=None, p0=None,
             personalization=None, order="auto", monitor=None):  # fmt: skip
    """PageRank of the graph G (a Matrix, or any scipy.sparse matrix or dense array, copied for
    this call; entry (i, j) is an edge i -> j); returns (p as a numpy array summing to 1,
    PagerankReport). This is the library's own interface (tol on the 1-norm of the change);
    mixsparse.linalg.pagerank follows networkx and cuGraph.

    precision: "f64", "cpms2", "cpms4" (customized-precision rank vector read with more segments
    as it converges) or "auto". p0: a starting vector; personalization: teleport weights
    (n values >= 0, positive sum). order: "auto", "natural" or "degree", the internal node
    numbering (p is returned in G's order either way). monitor(iteration, change, read_bits),
    when given, is called after every iteration; a true result stops (report.stopped). Other
    options as in msp_pagerank_options. Not converging is report.converged == False. Raises
    InvalidArgumentError, DimensionMismatchError, InvalidMatrixError (a bad weight),
    NotSupportedError; NotImplementedError when the library has no msp_pagerank."""
    o = _pagerank_options(alpha, tol, max_iters, precision, separate, bank_bytes, switch_factor,
                          weighted, values, order)  # fmt: skip
    ctx = G.context if isinstance(G, Matrix) else _ctx(None)
    G, gtmp = _matrix_arg(G, ctx, "G")
    n = G.shape[0]
    p = None
    try:
        o.use_guess = int(p0 is not None)
        p = Vector(n if p0 is None else _f64(p0, "p0", n), context=ctx)
        mon = None if monitor is None else _Monitor(monitor, _PAGERANK_MONITOR)
        rep = _pagerank_call(G, o, p, personalization, mon)
        return p.to_numpy(), rep
    finally:
        if p is not None:
            p.close()
        if gtmp:
            G.close()

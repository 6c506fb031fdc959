"""mixsparse.linalg: the solvers with the signatures SciPy, networkx and cuGraph users know.

    import scipy.sparse as sp, mixsparse.linalg as msl
    x, info = msl.gmres(A, b)                      # A: scipy.sparse (any format), numpy,
    x, info = msl.gmres(A, b, rtol=1e-10, M="ilu0", basis_precision="f32")   # or a Matrix
    p = msl.pagerank(G, alpha=0.85)                 # networkx's arguments; an array back

A, b and the other operands may be scipy.sparse matrices or arrays of any format, numpy arrays
(a dense 2-D array where a matrix is expected), mixsparse.Matrix objects or, on a CUDA context,
CuPy arrays and cupyx.scipy.sparse matrices, in which case the results are CuPy arrays and the
vectors go from device to device. The matrix itself is set up (analysed, converted) on the host.
"""

import math
import warnings

import numpy as np

from . import _core, _inputs
from ._core import GmresReport, Matrix, PagerankReport, Vector
from ._errors import NonFiniteError, NotSupportedError, invalid, make_error, mismatch, status_code

__all__ = ["gmres", "pagerank", "Preconditioner", "PowerIterationFailedConvergence",
           "GmresReport", "PagerankReport"]  # fmt: skip

_contexts = {}  # (backend, device) -> Context made here for callers that named none
_HISTORY_MAX = 10**7  # residuals a report keeps at most (history=True)


def _context_for(backend, device=0):
    key = (backend, device)
    c = _contexts.get(key)
    if c is None or c.closed:
        c = _contexts[key] = _core.Context(backend, device)
    return c


def _pick_context(A, operands, context, backend):
    """The context a call runs on: `context`; else A's (a Matrix); else a CUDA context on the
    GPU of CuPy operands; else one for `backend`; else mixsparse.default_context()."""
    if context is not None:
        if not isinstance(context, _core.Context):
            raise invalid("context must be a mixsparse.Context, not %r" % type(context).__name__)
        if backend is not None and context.backend != backend:
            raise invalid("backend=%r with a %s context" % (backend, context.backend))
        return context
    if isinstance(A, Matrix):
        if backend is not None and A.context.backend != backend:
            raise invalid("backend=%r for a Matrix of a %s context (convert it with "
                          "A.convert(context=...))" % (backend, A.context.backend))  # fmt: skip
        return A.context
    for x in (A,) + tuple(operands):
        if _inputs.is_cupy_array(x) or _inputs.is_cupy_sparse(x):
            if backend not in (None, "cuda", "auto"):
                raise invalid("CuPy operands with backend=%r: they live on a GPU" % backend)
            dev = x.device if _inputs.is_cupy_array(x) else x.data.device
            return _context_for("cuda", dev.id)
    if backend is not None:
        _core._parse(_core.lib.msp_backend_parse, backend, "backend")
        return _context_for(backend) if backend != "auto" else _core.default_context()
    return _core.default_context()


class _Operand:
    """A right-hand side or starting vector of n values, numpy or CuPy, as a Vector on ctx."""

    def __init__(self, x, ctx, n, what):
        self.cupy = _inputs.is_cupy_array(x)
        if self.cupy:
            import cupy

            if x.dtype.kind == "c":
                raise TypeError("%s holds complex values (%s); mixsparse holds real values"
                                % (what, x.dtype))  # fmt: skip
            if x.dtype.kind not in "fiub":
                raise TypeError("%s must hold real numbers, not %s" % (what, x.dtype))
            if x.shape not in ((n,), (n, 1)):
                raise mismatch("%s has shape %s, expected (%d,) or (%d, 1)" % (what, x.shape, n, n))
            if ctx.backend != "cuda":
                raise make_error(status_code("ERR_NOT_SUPPORTED"), "%s is a CuPy array and the "
                                 "context is a %s one" % (what, ctx.backend))  # fmt: skip
            _core._check_cupy_device(x, ctx)
            self.array = cupy.ascontiguousarray(x.ravel(), dtype=cupy.float64)
            self.norm = float(cupy.linalg.norm(self.array))
            self.vector = Vector(n, context=ctx)
            _core._cupy_stream_done(cupy)
            try:
                _core.check(_core._need("msp_vector_set_device")(self.vector._handle(),
                                                                 self.array.data.ptr))
            except BaseException:
                self.vector.close()
                raise
        else:
            arr = x if isinstance(x, np.ndarray) else np.asarray(x)
            if arr.ndim == 2 and arr.shape[1:] == (1,):
                arr = arr[:, 0]
            self.array = _inputs.float64(arr, what, n)
            self.norm = float(np.linalg.norm(self.array))
            self.vector = Vector(self.array, context=ctx)

    def close(self):
        self.vector.close()


def _result(v, as_cupy):
    """A Vector's values as a new numpy array, or a new CuPy array (device to device)."""
    if as_cupy:
        import cupy

        return _core._vector_to_cupy(v, cupy.empty(len(v), dtype=cupy.float64))
    return v.to_numpy()


class Preconditioner:
    """A preconditioner that mixsparse's GMRES builds and applies itself (right
    preconditioning, in fp64): Preconditioner("jacobi") (M = diag(A)) or Preconditioner("ilu0")
    (incomplete LU with A's pattern). gmres(..., M="jacobi") is the same."""

    def __init__(self, kind):
        if kind not in ("jacobi", "ilu0", "none"):
            raise invalid("unknown preconditioner %r (valid: jacobi, ilu0, none)" % (kind,))
        self.kind = kind

    def __repr__(self):
        return "Preconditioner(%r)" % self.kind


def _preconditioner(M):
    if M is None:
        return "none"
    if isinstance(M, Preconditioner):
        return M.kind
    if isinstance(M, str):
        return Preconditioner(M).kind
    raise TypeError(
        "M must be None, 'jacobi', 'ilu0' or a mixsparse.linalg.Preconditioner, not %s: "
        "mixsparse builds and applies its preconditioners inside the solver (on the GPU for a "
        "CUDA context) and cannot call a Python LinearOperator or matrix per iteration; use "
        "scipy.sparse.linalg.gmres(A, b, M=...) with a mixsparse.Matrix A for that"
        % type(M).__name__
    )


def gmres(A, b, x0=None, *, rtol=1e-5, atol=0.0, restart=None, maxiter=None, M=None,
          callback=None, callback_type=None, return_report=False, context=None, backend=None,
          format=None, precision=None, basis_precision="f64", ortho="cgs", history=False,
          tol=None):  # fmt: skip
    """Solve A x = b by restarted GMRES, as scipy.sparse.linalg.gmres: returns (x, info).

    info: 0 converged (||b - A x|| <= max(rtol ||b||, atol), checked on the explicit residual);
    > 0 not converged, the number of iterations done (maxiter when it ran out, as SciPy);
    < 0 a breakdown: -1 when the iteration produced NaN or Inf (x is then the initial guess).
    Illegal input raises (ValueError subclasses for values, TypeError for types).

    SciPy's arguments and defaults: x0 (None: zeros; "Mb": M b for M None or "jacobi"),
    rtol=1e-5, atol=0.0, restart=20 (at most n), maxiter=10 n restart cycles, M (None,
    "jacobi", "ilu0" or a Preconditioner: mixsparse applies its own preconditioners; a
    LinearOperator M raises TypeError), callback and callback_type ("x": callback(x) after
    every restart cycle; "pr_norm": callback(||r|| / ||b||) after every inner iteration;
    "legacy", the default when a callback is given, as SciPy: "pr_norm" with maxiter counting
    inner iterations). A callback that raises StopIteration stops the solve (info > 0 unless
    x has converged); other exceptions stop it and propagate.

    mixsparse's options: context or backend ("cpu", "cuda", "auto"; default: A's context, the
    GPU of CuPy operands, else mixsparse.default_context()); format and precision (convert A,
    e.g. precision="f32" stores its values in fp32; arithmetic stays fp64); basis_precision
    (the Krylov basis' storage: "f64", "f32", "f16", "bf16", "fx32", "fx16", "cpms2", ...,
    or "auto": f32 first, f64 once the residual stagnates); ortho ("cgs", "mgs"); history=True
    (the report keeps the relative residual of every iteration, up to 10**7 of them);
    return_report=True returns
    (x, info, GmresReport). tol is SciPy's old name of rtol (DeprecationWarning).

    A: a square scipy.sparse matrix or array (any format), dense array, mixsparse.Matrix, or
    cupyx.scipy.sparse matrix; b and x0: numpy or CuPy arrays of shape (n,) or (n, 1); x is
    returned as a numpy array of shape (n,), or a CuPy array when b is one."""
    if tol is not None:
        warnings.warn("gmres: 'tol' is SciPy's old name; use rtol", DeprecationWarning, 2)
        rtol = tol
    if callback_type not in (None, "x", "pr_norm", "legacy"):
        raise ValueError("unknown callback_type %r (valid: 'x', 'pr_norm', 'legacy')"
                         % (callback_type,))  # fmt: skip
    if callback is not None and callback_type is None:
        warnings.warn("mixsparse.linalg.gmres called with a callback and no callback_type: "
                      "'legacy' is used, as SciPy does (callback(||r||/||b||) per inner "
                      "iteration, maxiter counting inner iterations); pass callback_type="
                      "'pr_norm' or 'x'", DeprecationWarning, 2)  # fmt: skip
        callback_type = "legacy"
    if callback is None:
        callback_type = None
    elif not callable(callback):
        raise TypeError("callback must be callable, not %s" % type(callback).__name__)
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is None or isinstance(value, str):
            raise invalid("%s must be a number >= 0, not %r" % (name, value))
        if not _inputs.real(value, name) >= 0:
            raise invalid("%s = %r must be >= 0" % (name, value))
    rtol, atol = float(rtol), float(atol)
    precond = _preconditioner(M)
    if basis_precision == "auto":
        basis_auto, basis_precision = True, "f64"
    else:
        basis_auto = False
    ctx = _pick_context(A, (b, x0), context, backend)
    as_cupy = _inputs.is_cupy_array(b)
    temps = []
    try:
        Am, made = _core._matrix_arg(A, ctx)
        if made:
            temps.append(Am)
        if format is not None or precision is not None:
            Am = Am.convert(format=format or "auto", precision=precision)
            temps.append(Am)
        rows, cols = Am.shape
        if rows != cols:
            raise invalid("gmres needs a square matrix, not %d x %d" % (rows, cols))
        n = rows
        bo = _Operand(b, ctx, n, "b")
        temps.append(bo)
        if x0 is None:
            xv = Vector(n, context=ctx)
        elif isinstance(x0, str):
            if x0 != "Mb":
                raise invalid("x0 must be an array, None or 'Mb', not %r" % (x0,))
            xv = _mb(Am, bo, precond, ctx)
        else:
            xv = _Operand(x0, ctx, n, "x0").vector
        temps.append(xv)
        restart = min(_inputs.integer(20 if restart is None else restart, "restart", 1,
                                      _inputs.INT32_MAX), max(n, 1))  # fmt: skip
        if maxiter is None:
            maxiter = 10 * n
        maxiter = _inputs.integer(maxiter, "maxiter", 1)
        if bo.norm == 0 or math.isinf(atol) or math.isinf(rtol):
            # SciPy: b = 0 gives x = 0; an infinite tolerance accepts the initial guess.
            if bo.norm == 0:
                _core.check(_core.lib.msp_vector_fill(xv._handle(), 0.0))
            report = _empty_report(True)
            return _finish(xv, 0, report, as_cupy, return_report)
        inner = maxiter if callback_type == "legacy" else min(maxiter * restart, _inputs.INT64_MAX)
        o = _core._solver_options(restart, rtol, atol, inner, basis_precision, basis_auto,
                                  precond, ortho)  # fmt: skip
        monitor = None
        if callback_type in ("pr_norm", "legacy"):

            def on_iteration(k, residual, rel_residual, basis):
                if k > 0:  # SciPy calls back after iterations, not for the initial residual
                    callback(rel_residual)
                return False

            monitor = _core._Monitor(on_iteration)
        cap = min(inner + 1, _HISTORY_MAX) if history else 0
        start = xv.to_numpy()  # returned if the iteration breaks down
        try:
            if callback_type == "x":
                report = _cycles(Am, bo, xv, o, maxiter, cap, callback, as_cupy)
            else:
                report = _core._gmres_call(Am, bo.vector, xv, o, cap, monitor)
        except NonFiniteError as e:
            if "b holds" in e.message or "initial residual" in e.message:
                raise  # the input itself is not finite: illegal input, not a breakdown
            report = _empty_report(False)
            report.error = e.message
            xv.set(start)
            return _finish(xv, -1, report, as_cupy, return_report)
        if report.converged:
            info = 0
        elif report.stopped:
            info = max(1, report.iterations if callback_type == "legacy" else report.restarts + 1)
        else:
            info = maxiter
        return _finish(xv, info, report, as_cupy, return_report)
    finally:
        for t in reversed(temps):
            t.close()


def _empty_report(converged):
    rep = _core._lib.SolverReport()
    rep.converged = int(converged)
    return GmresReport(rep, None)


def _finish(xv, info, report, as_cupy, return_report):
    report.info = info
    x = _result(xv, as_cupy)
    return (x, info, report) if return_report else (x, info)


def _mb(A, bo, precond, ctx):
    """x0 = M b: b itself without a preconditioner, b / diag(A) for Jacobi."""
    if precond == "ilu0":
        raise NotSupportedError(status_code("ERR_NOT_SUPPORTED"), "ERR_NOT_SUPPORTED",
                                "x0='Mb' with M='ilu0': the factors live inside the solver; "
                                "pass x0 explicitly")  # fmt: skip
    b = bo.array.get() if bo.cupy else bo.array
    if precond == "jacobi":
        d = A.to_scipy().diagonal()
        if not np.all(d):
            raise make_error(status_code("ERR_INVALID_MATRIX"), "x0='Mb' with Jacobi: row %d "
                             "(0-based) has no diagonal entry" % int(np.flatnonzero(d == 0)[0]))
        b = b / d
    return Vector(np.array(b, dtype=np.float64), context=ctx)


def _cycles(A, bo, xv, o, maxiter, cap, callback, as_cupy):
    """callback_type='x': one msp_gmres call per restart cycle (x carried over), callback(x)
    after each, as SciPy calls it."""
    restart = o.restart
    report = None
    for _ in range(maxiter):
        o.max_iters = restart
        r = _core._gmres_call(A, bo.vector, xv, o, restart + 1 if cap else 0)
        if report is None:
            report = r
        else:
            report._append(r)
        if r.converged and r.iterations == 0:
            break  # the starting x already met the tolerance: SciPy calls nothing
        try:
            callback(_result(xv, as_cupy))
        except StopIteration:
            report.stopped = not report.converged
            break
        if r.converged:
            break
    return report


class PowerIterationFailedConvergence(RuntimeError):
    """pagerank did not converge in max_iter iterations (networkx raises an exception of this
    name). Attributes: num_iterations, ranks (the last iterate, normalised), report."""

    def __init__(self, num_iterations, ranks, report):
        self.num_iterations = num_iterations
        self.ranks = ranks
        self.report = report
        super().__init__("power iteration failed to converge within %d iterations (last change "
                         "%.3g; pass fail_on_nonconvergence=False to get the ranks anyway)"
                         % (num_iterations, report.change))  # fmt: skip


def _node_values(v, n, what):
    """A dict {node: value} (missing nodes 0, as networkx) or an array of n values."""
    if isinstance(v, dict):
        out = np.zeros(n)
        for node, value in v.items():
            i = _inputs.integer(node, "%s key" % what, 0, n - 1)
            out[i] = _inputs.real(value, "%s[%d]" % (what, i))
        return out
    if _inputs.is_cupy_array(v):
        return v
    return _inputs.float64(v, what, n)


def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1e-06, nstart=None,
             weight=None, dangling=None, *, return_report=False, fail_on_nonconvergence=True,
             context=None, backend=None, precision="f64", order="auto", separate=False,
             bank_bytes=0, switch_factor=None, values=None):  # fmt: skip
    """PageRank of the graph G, with networkx's arguments (nx.pagerank) and cuGraph's
    fail_on_nonconvergence: returns the ranks as an array summing to 1 (numpy; CuPy when G is
    a cupyx.scipy.sparse matrix), in G's node order; (ranks, PagerankReport) with
    return_report=True.

    G: a square scipy.sparse matrix or array (any format), dense array, mixsparse.Matrix or
    cupyx.scipy.sparse matrix whose entry (i, j) is an edge i -> j (networkx's
    to_scipy_sparse_array). alpha: damping factor. personalization, nstart and dangling: dicts
    {node: value} (missing nodes 0) or arrays of n values; dangling must equal the
    personalization (mixsparse gives the dangling nodes' mass to the personalization;
    another distribution raises NotSupportedError). max_iter and tol as networkx: stop when
    ||p_k - p_{k-1}||_1 < n tol. weight: None (every edge counts 1) or any name (True too):
    G's values are the edge weights (finite, >= 0). Not converging raises
    PowerIterationFailedConvergence, as networkx and cuGraph do, unless
    fail_on_nonconvergence=False.

    mixsparse's options: context or backend; precision ("f64", "cpms2", "cpms4", "auto": the
    rank vector stored in customized precision and read with more bits as it converges);
    order ("auto", "natural", "degree"); separate, bank_bytes, switch_factor, values (see
    msp_pagerank_options)."""
    ctx = _pick_context(G, (personalization, nstart), context, backend)
    as_cupy = _inputs.is_cupy_sparse(G) or _inputs.is_cupy_array(personalization)
    weighted = weight is not None and weight is not False
    if weighted and not (weight is True or isinstance(weight, str)):
        raise TypeError("weight must be None, True or an attribute name, not %r" % (weight,))
    temps = []
    try:
        Gm, made = _core._matrix_arg(G, ctx, "G")
        if made:
            temps.append(Gm)
        rows, cols = Gm.shape
        if rows != cols:
            raise invalid("pagerank needs a square adjacency matrix, not %d x %d" % (rows, cols))
        n = rows
        max_iter = _inputs.integer(max_iter, "max_iter")
        tol = _inputs.real(tol, "tol")
        if n == 0:
            empty = np.zeros(0)
            return (empty, None) if return_report else empty
        pers = None if personalization is None else _node_values(personalization, n,
                                                                 "personalization")
        if dangling is not None:
            d = _node_values(dangling, n, "dangling")
            d = d.get() if _inputs.is_cupy_array(d) else d
            ref = np.ones(n) if pers is None else (pers.get() if _inputs.is_cupy_array(pers)
                                                   else pers)  # fmt: skip
            if d.sum() <= 0 or ref.sum() <= 0 or not np.allclose(d / d.sum(), ref / ref.sum(),
                                                                 rtol=1e-12, atol=0):
                raise NotSupportedError(
                    status_code("ERR_NOT_SUPPORTED"), "ERR_NOT_SUPPORTED",
                    "dangling: mixsparse gives the dangling nodes' mass to the personalization "
                    "(uniform without one); another distribution is not supported")
        if pers is not None and _inputs.is_cupy_array(pers):
            po = _Operand(pers, ctx, n, "personalization")
            temps.append(po)
            pers = po.vector
        o = _core._pagerank_options(alpha, tol * n, max_iter, precision, separate, bank_bytes,
                                    switch_factor, weighted, values, order)  # fmt: skip
        if nstart is not None:
            start = _node_values(nstart, n, "nstart")
            p = _Operand(start, ctx, n, "nstart").vector
            o.use_guess = 1
        else:
            p = Vector(n, context=ctx)
        temps.append(p)
        report = _core._pagerank_call(Gm, o, p, pers)
        ranks = _result(p, as_cupy)
        if not report.converged and fail_on_nonconvergence:
            raise PowerIterationFailedConvergence(report.iterations, ranks, report)
        return (ranks, report) if return_report else ranks
    finally:
        for t in reversed(temps):
            t.close()


"""_core.py: the C library's entry points, contexts and the handles' base (ctypes over the C API).

Matrices are in _matrix.py, vectors and the operations over them in _vector.py, GMRES and
PageRank in _solvers.py; their names are imported at the end of this module too, for the package
and linalg.py, which read them from here."""

import ctypes
import weakref

import numpy as np

from . import _inputs, _lib
from ._errors import check, invalid, mismatch

lib = _lib.lib
_H = ctypes.c_void_p
_DP = ctypes.POINTER(ctypes.c_double)

READ_ALLOW_NONFINITE = 1  # MSP_READ_ALLOW_NONFINITE
_RANGE = {"error": 0, "saturate": 1, "allow": 2}
_PRECOND = {"none": 0, "jacobi": 1, "ilu0": 2}
_ORTHO = {"cgs": 0, "mgs": 1, "dcgs2": 2}
_PAGERANK_PRECISION = {"f64": 0, "cpms2": 1, "cpms4": 2, "auto": 3}
_PAGERANK_ORDER = {"auto": 0, "natural": 1, "degree": 2}


def _need(name):
    if not _lib.has(name):
        raise NotImplementedError("%s is not in this build of %s" % (name, _lib.path))
    return getattr(lib, name)


def _parse(fn, tag, what):
    if not isinstance(tag, str):
        raise invalid("%s must be a string tag, not %r" % (what, tag))
    out = ctypes.c_int()
    check(fn(tag.encode(), ctypes.byref(out)))
    return out.value


def _name(fn, value):
    s = fn(value)
    return s.decode() if s is not None else None


def _choice(table, value, what):
    try:
        return table[value]
    except (KeyError, TypeError):
        raise invalid("unknown %s %r (valid: %s)" % (what, value, ", ".join(table))) from None


_f64 = _inputs.float64  # a C-contiguous float64 1-D array of real values (complex refused)
_F64 = np.dtype(np.float64)
_VP = ctypes.c_void_p


def _fast(name, argtypes):
    """A second entry point to a C function taking addresses as plain ints: the products' hot
    path skips building ctypes pointer objects."""
    fn = lib[name]
    fn.restype, fn.argtypes = ctypes.c_int, argtypes
    return fn


_c_vector_set = _fast("msp_vector_set", [_VP, _VP])
_c_vector_get = _fast("msp_vector_get", [_VP, _VP])
_c_spmv = _fast("msp_spmv", [_VP, ctypes.c_double, _VP, _VP, ctypes.c_double, _VP])
_c_spmv_host = _fast("msp_spmv_host", [_VP, ctypes.c_double, _VP, _VP, ctypes.c_double, _VP])


def check_dims(got, want, what):
    """Raise DimensionMismatchError when a length differs from the one required."""
    if got != want:
        raise mismatch("%s has length %d, expected %d" % (what, got, want))


formats = [_name(lib.msp_format_name, i) for i in range(_lib.FORMAT_COUNT)]
precisions = [_name(lib.msp_precision_name, i) for i in range(_lib.PRECISION_COUNT)]


def status_names():
    """Every status name of the library, in code order ("SUCCESS", "ERR_INVALID_ARGUMENT", ...)."""
    out, i = [], 0
    while True:
        n = lib.msp_status_name(i).decode()
        if n == "UNKNOWN":
            return out
        out.append(n)
        i += 1


def set_memory_limit(nbytes):
    """Limit the host memory that reading, generating, converting and vector creation may
    plan for (0: the machine's physical memory); over it they raise OutOfMemoryError."""
    check(lib.msp_set_memory_limit(_inputs.integer(nbytes, "nbytes", 0, 2**64 - 1)))


def device_count():
    """Number of usable CUDA devices (0 without CUDA in the build or without a GPU)."""
    n = ctypes.c_int()
    check(lib.msp_device_count(ctypes.byref(n)))
    return n.value


def device_info(ordinal=0):
    """Facts of CUDA device `ordinal` as a dict (name, multiprocessors, peak_bandwidth_gbs, ...).
    Raises NotBuiltError, NoDeviceError or InvalidArgumentError."""
    p = _lib.DeviceProps()
    ordinal = _inputs.integer(ordinal, "ordinal", 0, _inputs.INT32_MAX)
    check(lib.msp_device_info(ordinal, ctypes.byref(p)))
    d = {k: getattr(p, k) for k, _ in p._fields_}
    d["name"] = p.name.decode(errors="replace")
    return d


class _Handle:
    """Owner of one C handle: freed by close(), by a with-block, or when garbage collected."""

    _destroy = None  # the msp_*_destroy function
    _kind = "object"

    def __init__(self):
        self._h = _H()

    @property
    def closed(self):
        """True once the object has been freed."""
        return not self._h.value

    def _handle(self):
        if not self._h.value:
            raise invalid("this %s is closed" % self._kind)
        return self._h

    def close(self):
        """Free the C object now (idempotent)."""
        if self._h.value:
            check(type(self)._destroy(ctypes.byref(self._h)))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown, or a context still in use)
            pass


class Context(_Handle):
    """A backend and device: Context(backend="auto" | "cpu" | "cuda", device=0).

    "auto" picks CUDA when it is built in and a GPU is usable, else the CPU. Raises
    NotBuiltError (CUDA asked for in a build without it), NoDeviceError, DeviceError.
    Matrices and vectors keep their context alive; closing the context (close() or the end of
    a with-block) closes every matrix and vector made with it first.
    """

    _destroy = staticmethod(lib.msp_context_destroy)
    _kind = "context"

    def __init__(self, backend="auto", device=0):
        super().__init__()
        self._children = weakref.WeakSet()
        # The CUDA device ordinal asked for (unused on the CPU).
        self.device = _inputs.integer(device, "device", 0, _inputs.INT32_MAX)
        b = _parse(lib.msp_backend_parse, backend, "backend")
        check(lib.msp_context_create(b, self.device, ctypes.byref(self._h)))

    def _adopt(self, child):
        self._handle()
        self._children.add(child)

    def close(self):
        """Close every matrix and vector made with this context, then the context itself.
        Raises InvalidArgumentError, closing nothing, while a vector's memory is still used by
        an array made from it through DLPack."""
        exported = [c for c in list(self._children) if getattr(c, "_dlpack_exports", 0)]
        if exported and not self.closed:
            exported[0].close()  # raises, saying why
        for child in list(self._children):
            child.close()
        super().close()

    @property
    def backend(self):
        """The backend in use: "cpu" or "cuda" (never "auto")."""
        return _name(lib.msp_backend_name, lib.msp_context_backend(self._handle()))

    @property
    def threads(self):
        """Host threads (OpenMP) the next operation on this context will use."""
        return _need("msp_context_threads")(self._handle())

    def set_threads(self, threads):
        """Use `threads` host threads for every operation on this context (0: OpenMP's default,
        OMP_NUM_THREADS or one per CPU). Results are the same bits for any count."""
        threads = _inputs.integer(threads, "threads", 0, _inputs.INT32_MAX)
        check(_need("msp_context_set_threads")(self._handle(), threads))

    def synchronize(self):
        """Wait until all work queued on the device has finished (nothing to do on the CPU)."""
        check(lib.msp_context_synchronize(self._handle()))

    def __repr__(self):
        return "<mixsparse.Context %s>" % ("closed" if self.closed else self.backend)


_default = None


def default_context():
    """The context used when none is given: Context("auto"), created on first use."""
    global _default
    if _default is None or _default.closed:
        _default = Context("auto")
    return _default


def _ctx(context):
    if context is None:
        return default_context()
    if not isinstance(context, Context):
        raise invalid("context must be a mixsparse.Context, not %r" % type(context).__name__)
    return context


# The rest of the package's objects, after what they build on above (each module imports from
# this one); here too so that mixsparse._core.<name> keeps naming every one of them.
from ._matrix import (  # noqa: E402,F401
    Matrix,
    _check_cupy_device,
    _cupy_stream_done,
    _matrix_arg,
    _vector_to_cupy,
    as_matrix,
    read_mtx,
)
from ._vector import (  # noqa: E402,F401
    Vector,
    _as_vector,
    axpby,
    copy,
    dot,
    from_dlpack,
    nrm1,
    nrm2,
    scale,
    spmv,
)
from ._solvers import (  # noqa: E402,F401
    GmresReport,
    PagerankReport,
    _Monitor,
    _gmres_call,
    _pagerank_call,
    _pagerank_options,
    _solver_options,
    gmres,
    has_monitor,
    pagerank,
)

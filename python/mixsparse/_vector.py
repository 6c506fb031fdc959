"""_vector.py: vectors (Vector), DLPack and CuPy exchange, and the operations over vectors."""

import ctypes

import numpy as np

from . import _dlpack, _inputs
from ._errors import check, invalid, make_error, status_code
from ._core import (
    READ_ALLOW_NONFINITE,
    _DP,
    Context,
    _Handle,
    _ctx,
    _f64,
    _name,
    _need,
    _parse,
    check_dims,
    lib,
)
from ._matrix import Matrix, _matrix_arg


class Vector(_Handle):
    """A dense vector held by mixsparse: on the GPU for a CUDA context, where it stays between
    operations (copied to the host only by to_numpy), on the host otherwise.

    Vector(n) is a zero vector of length n (an integer, 0 <= n < 2**63); Vector(values) copies
    a 1-D array-like of real values (complex values raise TypeError).
    precision: the storage precision of its values ("f64" default; any of mixsparse.precisions).
    """

    _destroy = staticmethod(lib.msp_vector_destroy)
    _kind = "vector"

    def __init__(self, values, context=None, precision="f64"):
        super().__init__()
        self.context = _ctx(context)
        self.context._adopt(self)
        p = _parse(lib.msp_precision_parse, precision, "precision")
        if isinstance(values, (int, np.integer, bool, np.bool_)):
            n, data = _inputs.integer(values, "the length n"), None
        else:
            data = _f64(values, "values")
            n = data.shape[0]
        check(lib.msp_vector_create_precision(self.context._handle(), n, p, ctypes.byref(self._h)))
        if data is not None:
            try:
                self.set(data)
            except BaseException:
                self.close()
                raise

    @classmethod
    def read_mtx(cls, path, context=None, allow_nonfinite=False):
        """Read a dense Matrix Market array file (one column) into an f64 Vector. Raises
        FileError, MatrixMarketError; ValueError for a path with a NUL."""
        name = _inputs.path(path)
        v = cls.__new__(cls)
        _Handle.__init__(v)
        v.context = _ctx(context)
        v.context._adopt(v)
        flags = READ_ALLOW_NONFINITE if allow_nonfinite else 0
        ch = v.context._handle()
        check(lib.msp_vector_read_mtx(ch, name, flags, ctypes.byref(v._h)))
        return v

    def write_mtx(self, path):
        """Write the vector as a Matrix Market array file (%.17g). A path with an embedded NUL
        raises ValueError, as open() does (C would cut the name there and replace another
        file)."""
        check(lib.msp_vector_write_mtx(self._handle(), _inputs.path(path)))

    def __len__(self):
        return lib.msp_vector_length(self._handle())

    @property
    def precision(self):
        """Storage precision tag of the values."""
        return _name(lib.msp_precision_name, lib.msp_vector_precision(self._handle()))

    @property
    def nbytes(self):
        """Bytes of the stored values (and fixed-point scales)."""
        return lib.msp_vector_bytes(self._handle())

    @property
    def transfers(self):
        """Host <-> device copies made so far."""
        return lib.msp_vector_transfers(self._handle())

    def set(self, values):
        """Copy len(self) values in (encoded in the vector's precision). Raises
        DimensionMismatchError, RangeError, NonFiniteError (fixed point)."""
        data = _f64(values, "values", len(self))
        check(lib.msp_vector_set(self._handle(), data.ctypes.data_as(_DP)))

    def fill(self, value):
        """Set every entry to `value` (a real number)."""
        check(lib.msp_vector_fill(self._handle(), _inputs.real(value, "value")))

    def to_numpy(self, out=None):
        """The values as a float64 numpy array (into `out` when given: a writable C-contiguous
        float64 numpy array of length len(self)); copies device to host once if the host copy
        is stale. Raises InvalidArgumentError for an `out` that does not fit (a read-only one
        included: nothing is written), RangeError (after copying) when results overflowed the
        vector's precision since the last read."""
        n = len(self)
        if out is None:
            out = np.empty(n, dtype=np.float64)
        elif not isinstance(out, np.ndarray):
            raise invalid("out must be a numpy array, not %s" % type(out).__name__)
        elif out.dtype != np.float64 or out.shape != (n,) or not out.flags.c_contiguous:
            raise invalid("out must be a contiguous float64 array of length %d, not %s of "
                          "shape %s" % (n, out.dtype, out.shape))  # fmt: skip
        elif not out.flags.writeable:
            raise invalid("out is read-only (a read-only memmap or writeable=False): nothing "
                          "was written to it")
        check(lib.msp_vector_get(self._handle(), out.ctypes.data_as(_DP)))
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.to_numpy()
        return a if dtype is None else a.astype(dtype)

    def set_cpms_segments(self, segments):
        """CPMS vectors: how many segments reads use from now on (0: all)."""
        segments = _inputs.integer(segments, "segments", 0, 2**31 - 1)
        check(lib.msp_vector_set_cpms_segments(self._handle(), segments))

    # ---- DLPack: zero-copy exchange with CuPy, PyTorch, JAX ... on the GPU -------------------
    _dlpack_exports = 0  # tensors handed out through __dlpack__ and not yet released

    def close(self):
        """Free the C object now (idempotent). Raises InvalidArgumentError while arrays made
        from it through DLPack (cupy.from_dlpack(v), ...) are still alive: they use its memory."""
        if self._h.value and self._dlpack_exports:
            raise invalid(
                "this vector's device memory is still used by %d array(s) made from it through "
                "DLPack; delete them before closing the vector or its context"
                % self._dlpack_exports
            )
        super().close()

    def device_pointer(self):
        """The address (int) of the vector's values in GPU memory (CUDA contexts), in its
        storage precision; owned by the vector. Makes the device copy current and marks it
        written there (the host copy is refreshed on the next read). NotSupportedError on the
        CPU."""
        p = ctypes.c_void_p()
        check(_need("msp_vector_device_data")(self._handle(), ctypes.byref(p)))
        return p.value or 0

    def __dlpack_device__(self):
        """(2, device ordinal): DLPack's kDLCUDA and the context's GPU. NotSupportedError for a
        CPU context (its values are not exported; use to_numpy())."""
        if self.context.backend != "cuda":
            raise _no_device_data(self)
        return (_dlpack.KDL_CUDA, self.context.device)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the vector's device values (float64, length n), without a copy:
        cupy.from_dlpack(v), torch.from_dlpack(v), ... see the same GPU memory.

        The work queued on the vector's context is finished first, so the values are ready for
        the consumer's `stream` whatever it is. The vector stays alive while the consumer's
        array does, and is marked written on the device (the consumer may write): after writing
        through that array on a stream of the consumer's, synchronise it before the next
        mixsparse call reads the vector. Only f64 vectors on a CUDA context are exported
        (NotSupportedError otherwise); max_version is accepted and a DLPack 0.x capsule
        returned; copy=True and a dl_device other than the vector's raise BufferError."""
        if stream is not None and not isinstance(stream, int):
            raise invalid("stream must be an int or None, not %r" % (stream,))
        device = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != device:
            raise BufferError("mixsparse exports on %s only, not on %s" % (device, dl_device))
        if copy:
            raise BufferError("mixsparse exports its device values without copying (copy=True)")
        if self.precision != "f64":
            raise make_error(
                status_code("ERR_NOT_SUPPORTED"),
                "DLPack exports f64 vectors only; this vector stores %s values (make an f64 "
                "Vector and mixsparse.copy into it)" % self.precision,
            )
        ptr = self.device_pointer()
        self.context.synchronize()

        def released(vector=self):
            vector._dlpack_exports -= 1

        capsule = _dlpack.export(ptr, len(self), device, self, released)
        self._dlpack_exports += 1
        return capsule

    @classmethod
    def from_dlpack(cls, obj, context=None):
        """A new f64 Vector holding a copy of `obj`, any object with __dlpack__ (a CuPy or
        PyTorch array, ...) of one-dimensional contiguous float64 values.

        Device arrays (kDLCUDA) need a CUDA context on the same GPU and are copied device to
        device (msp_vector_set_device: no host copy), after the work the producer queued on
        its stream; host arrays (kDLCPU) are copied in as by Vector(values), on any context.
        The arguments may also come as (context, obj). Raises InvalidArgumentError (no
        __dlpack__, another dtype, shape, stride or GPU), NotSupportedError (device memory
        into a CPU context, or a device type other than CPU and CUDA)."""
        if isinstance(obj, Context) and not isinstance(context, Context):
            obj, context = context, obj
        ctx = _ctx(context)
        if not hasattr(obj, "__dlpack__"):
            raise invalid("from_dlpack needs an object with __dlpack__, not %r"
                          % type(obj).__name__)  # fmt: skip
        device = tuple(obj.__dlpack_device__()) if hasattr(obj, "__dlpack_device__") else None
        if device is not None and device[0] == _dlpack.KDL_CPU:
            host = np.from_dlpack(obj)
            if host.dtype != np.float64:
                raise invalid("from_dlpack takes float64 values, not %s" % host.dtype)
            if host.ndim != 1:
                raise invalid("from_dlpack takes one dimension, not shape %s" % (host.shape,))
            return cls(host, context=ctx)
        if device is not None and device[0] != _dlpack.KDL_CUDA:
            raise make_error(
                status_code("ERR_NOT_SUPPORTED"),
                "from_dlpack: DLPack device type %d; mixsparse takes CPU (1) and CUDA (2) memory"
                % device[0],
            )
        if ctx.backend != "cuda":
            raise make_error(
                status_code("ERR_NOT_SUPPORTED"),
                "from_dlpack: device memory needs a CUDA context, not a %s one (copy it to the "
                "host first, e.g. cupy.asnumpy)" % ctx.backend,
            )
        # Stream 1 (CUDA's legacy default stream): the producer orders its pending writes
        # before it, and msp_vector_set_device waits for that stream before copying.
        capsule = obj.__dlpack__(stream=1)
        t = _dlpack.read(capsule)
        if t.device != (_dlpack.KDL_CUDA, ctx.device):
            raise invalid("from_dlpack: the array is on device %s, the context on CUDA device %d"
                          % (t.device, ctx.device))  # fmt: skip
        v = cls(t.n, context=ctx)
        try:
            check(_need("msp_vector_set_device")(v._handle(), t.data))
        except BaseException:
            v.close()
            raise
        del capsule  # the producer's memory is released once its capsule goes
        return v

    def __repr__(self):
        if self.closed:
            return "<mixsparse.Vector closed>"
        backend = self.context.backend
        return "<mixsparse.Vector n=%d %s on %s>" % (len(self), self.precision, backend)


def _no_device_data(v):
    return make_error(
        status_code("ERR_NOT_SUPPORTED"),
        "DLPack: this vector is on a %s context, which has no device memory to share (use "
        "to_numpy(), or a CUDA context)" % v.context.backend,
    )


def from_dlpack(obj, context=None):
    """A new Vector from any object with __dlpack__ (see Vector.from_dlpack): device to device
    for CUDA arrays, such as mixsparse.from_dlpack(cupy_array, ctx)."""
    return Vector.from_dlpack(obj, context)


def _as_vector(v, ctx, what, n):
    """(Vector, temporary?) for a Vector or a 1-D array-like of length n."""
    if isinstance(v, Vector):
        return v, False
    data = _f64(v, what, n)
    return Vector(data, context=ctx), True


def spmv(alpha, A, x, beta, y):
    """y = alpha * A @ x + beta * y, on A's backend; returns y.

    A is a Matrix (or a scipy.sparse matrix or dense array, copied for this call). x and y are
    Vectors or numpy arrays. A numpy y must be a contiguous float64 array and is
    updated in place; y=None (beta must be 0) returns a new numpy array. With beta == 0, y is
    not read (NaN in y does not propagate). Raises DimensionMismatchError,
    InvalidArgumentError (operands of another context), NotSupportedError."""
    alpha, beta = _inputs.real(alpha, "alpha"), _inputs.real(beta, "beta")
    ctx = A.context if isinstance(A, Matrix) else _ctx(None)
    A, atmp = _matrix_arg(A, ctx)
    rows, cols = A.shape
    xv, xtmp, yv, ytmp, out = None, False, None, False, None
    try:
        xv, xtmp = _as_vector(x, ctx, "x", cols)
        if isinstance(y, Vector):
            yv = y
        else:
            if y is None:
                if beta != 0:
                    raise invalid("y=None needs beta == 0")
                out = np.empty(rows, dtype=np.float64)
            else:
                out = y
                if not (
                    isinstance(out, np.ndarray) and out.dtype == np.float64
                    and out.flags.c_contiguous and out.flags.writeable
                ):  # fmt: skip
                    raise invalid("a numpy y must be a writable contiguous float64 array")
                if out.ndim != 1:
                    raise invalid("y must be one-dimensional")
                check_dims(out.shape[0], rows, "y")
            yv, ytmp = Vector(rows, context=ctx), True
            if beta != 0:
                yv.set(out)
        check(lib.msp_spmv(ctx._handle(), float(alpha), A._handle(), xv._handle(), float(beta),
                           yv._handle()))  # fmt: skip
        if out is not None:
            yv.to_numpy(out)
            return out
        return yv
    finally:
        if xtmp:
            xv.close()
        if ytmp and yv is not None:
            yv.close()
        if atmp:
            A.close()


def _vec_ctx(x):
    if not isinstance(x, Vector):
        raise invalid("a mixsparse.Vector is needed, not %r" % type(x).__name__)
    return x.context


def dot(x, y):
    """x . y of two Vectors (deterministic summation order)."""
    r = ctypes.c_double()
    yh = y._handle() if isinstance(y, Vector) else None
    check(lib.msp_dot(_vec_ctx(x)._handle(), x._handle(), yh, ctypes.byref(r)))
    return r.value


def nrm2(x):
    """The Euclidean norm of a Vector."""
    r = ctypes.c_double()
    check(lib.msp_nrm2(_vec_ctx(x)._handle(), x._handle(), ctypes.byref(r)))
    return r.value


def nrm1(x):
    """The 1-norm (sum of |x_i|) of a Vector."""
    r = ctypes.c_double()
    check(lib.msp_nrm1(_vec_ctx(x)._handle(), x._handle(), ctypes.byref(r)))
    return r.value


def axpby(alpha, x, beta, y):
    """y = alpha * x + beta * y for Vectors; returns y."""
    _vec_ctx(y)
    alpha, beta = _inputs.real(alpha, "alpha"), _inputs.real(beta, "beta")
    check(lib.msp_axpby(_vec_ctx(x)._handle(), alpha, x._handle(), beta, y._handle()))
    return y


def scale(alpha, x):
    """x = alpha * x for a Vector; returns x."""
    check(lib.msp_scale(_vec_ctx(x)._handle(), _inputs.real(alpha, "alpha"), x._handle()))
    return x


def copy(x, y):
    """y = x for Vectors; returns y."""
    _vec_ctx(y)
    check(lib.msp_copy(_vec_ctx(x)._handle(), x._handle(), y._handle()))
    return y

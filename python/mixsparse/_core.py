"""_core.py: contexts, matrices, vectors and the operations over them (ctypes over the C API)."""

import ctypes
import os
import weakref

import numpy as np

from . import _dlpack, _lib
from ._errors import check, invalid, make_error, mismatch, status_code

lib = _lib.lib
_H = ctypes.c_void_p
_DP = ctypes.POINTER(ctypes.c_double)

READ_ALLOW_NONFINITE = 1  # MSP_READ_ALLOW_NONFINITE
_RANGE = {"error": 0, "saturate": 1, "allow": 2}
_PRECOND = {"none": 0, "jacobi": 1, "ilu0": 2}
_ORTHO = {"cgs": 0, "mgs": 1}
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


def _f64(a, what, n=None):
    """A C-contiguous float64 1-D copy or view of `a`, of length n when n is given."""
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim != 1:
        raise invalid("%s must be one-dimensional, not of shape %s" % (what, arr.shape))
    if n is not None and arr.shape[0] != n:
        check_dims(arr.shape[0], n, what)
    return arr


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
    check(lib.msp_set_memory_limit(int(nbytes)))


def device_count():
    """Number of usable CUDA devices (0 without CUDA in the build or without a GPU)."""
    n = ctypes.c_int()
    check(lib.msp_device_count(ctypes.byref(n)))
    return n.value


def device_info(ordinal=0):
    """Facts of CUDA device `ordinal` as a dict (name, multiprocessors, peak_bandwidth_gbs, ...).
    Raises NotBuiltError, NoDeviceError or InvalidArgumentError."""
    p = _lib.DeviceProps()
    check(lib.msp_device_info(int(ordinal), ctypes.byref(p)))
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
        self.device = int(device)  # the CUDA device ordinal asked for (unused on the CPU)
        b = _parse(lib.msp_backend_parse, backend, "backend")
        check(lib.msp_context_create(b, int(device), ctypes.byref(self._h)))

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


class Matrix(_Handle):
    """A sparse matrix held by mixsparse (host CSR in fp64, plus its format's arrays once
    converted). Make one with Matrix.from_scipy, Matrix.from_csr, read_mtx or Matrix.generate;
    A @ x multiplies by a numpy vector or a Vector."""

    _destroy = staticmethod(lib.msp_matrix_destroy)
    _kind = "matrix"

    def __init__(self, _context):
        super().__init__()
        self.context = _context
        _context._adopt(self)

    @classmethod
    def from_csr(cls, shape, indptr, indices, data, context=None, allow_nonfinite=False):
        """A matrix of `shape` (rows, cols) from CSR arrays, which are copied: indptr (rows + 1
        entries from 0, non-decreasing), indices (columns 0..cols-1, any order, duplicates
        summed) and data (finite unless allow_nonfinite). Raises InvalidMatrixError naming the
        offending index, NonFiniteError, OutOfMemoryError."""
        ctx = _ctx(context)
        rows, cols = (int(s) for s in shape)
        ip = np.ascontiguousarray(indptr, dtype=np.int64)
        if indices is not None and len(indices) and np.max(indices) > np.iinfo(np.int32).max:
            raise invalid("column indices beyond int32")
        ix = np.ascontiguousarray(indices, dtype=np.int32)
        dv = np.ascontiguousarray(data, dtype=np.float64)
        if ip.ndim != 1 or ip.shape[0] != rows + 1:
            raise invalid("indptr must have rows + 1 = %d entries, not %d" % (rows + 1, ip.size))
        if ix.shape != dv.shape or ix.ndim != 1 or ix.shape[0] < ip[-1]:
            raise invalid("indices and data must both hold indptr[-1] = %d entries" % ip[-1])
        A = cls(ctx)
        flags = READ_ALLOW_NONFINITE if allow_nonfinite else 0
        check(
            lib.msp_matrix_from_csr(
                ctx._handle(), rows, cols, ip.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
                ix.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), dv.ctypes.data_as(_DP),
                flags, ctypes.byref(A._h),
            )
        )  # fmt: skip
        return A

    @classmethod
    def from_scipy(cls, A, context=None, allow_nonfinite=False):
        """A copy of any scipy.sparse matrix or array (or a dense 2-D array-like) with real
        values. Complex values raise TypeError."""
        import scipy.sparse as sp

        M = A if sp.issparse(A) else sp.csr_matrix(np.asarray(A))
        if np.issubdtype(M.dtype, np.complexfloating):
            raise TypeError("mixsparse holds real matrices; got %s values" % M.dtype)
        M = M.tocsr()
        if M.ndim != 2:
            raise invalid("a two-dimensional matrix is needed")
        return cls.from_csr(M.shape, M.indptr, M.indices, M.data, context, allow_nonfinite)

    @classmethod
    def read_mtx(cls, path, context=None, allow_nonfinite=False):
        """Read a Matrix Market file (.mtx or .mtx.gz). Raises FileError, MatrixMarketError
        (its name says which check failed; the message names file and line), NonFiniteError,
        OutOfMemoryError."""
        ctx = _ctx(context)
        A = cls(ctx)
        flags = READ_ALLOW_NONFINITE if allow_nonfinite else 0
        check(lib.msp_matrix_read_mtx(ctx._handle(), os.fsencode(path), flags, ctypes.byref(A._h)))
        return A

    @classmethod
    def generate(cls, spec, context=None):
        """A built-in matrix from a spec such as "laplace2d:100", "random:1000:8:1",
        "poisson3d:20" (see msp_matrix_generate). Raises InvalidArgumentError listing the
        valid forms for a bad spec."""
        ctx = _ctx(context)
        A = cls(ctx)
        check(lib.msp_matrix_generate(ctx._handle(), spec.encode(), ctypes.byref(A._h)))
        return A

    @property
    def shape(self):
        """(rows, cols)."""
        h = self._handle()
        return (lib.msp_matrix_rows(h), lib.msp_matrix_cols(h))

    @property
    def nnz(self):
        """Number of stored nonzeros (duplicates summed)."""
        return lib.msp_matrix_nnz(self._handle())

    @property
    def format(self):
        """Storage format tag ("csr", "ell", "bdmp-pbp", ...)."""
        return _name(lib.msp_format_name, lib.msp_matrix_format(self._handle()))

    @property
    def kernel(self):
        """CSR kernel tag ("scalar", "vector", "merge")."""
        return _name(lib.msp_kernel_name, lib.msp_matrix_kernel(self._handle()))

    @property
    def precision(self):
        """Storage precision tag of the values ("f64", "f32", "fx16", "cpms2", ...)."""
        return _name(lib.msp_precision_name, lib.msp_matrix_precision(self._handle()))

    @property
    def nbytes(self):
        """Bytes of the format's arrays (values, indices, offsets, padding)."""
        return lib.msp_matrix_bytes(self._handle())

    @property
    def choice_reason(self):
        """Why the format and kernel were chosen (one line)."""
        return lib.msp_matrix_choice_reason(self._handle()).decode(errors="replace")

    def convert(self, format="auto", precision=None, kernel="auto", context=None, **options):
        """A copy of this matrix in `format` ("auto", "tune" or a tag of mixsparse.formats) with
        values stored in `precision` (a tag of mixsparse.precisions; default "f32", or "f64"
        for `format="auto"` with `bdmp_digits`, where AUTO itself decides what goes to fp32),
        on `context` (default: this matrix's). Options (msp_convert_options): hack_size,
        ell_width, hyb_k, max_fill, cpms_segments, bdmp_f, bdmp_lambda, bdmp_digits (with
        "auto": the accuracy-aware choice of the format and storage), allow_atomics,
        bdmp_paper_rule, range ("error", "saturate", "allow"). Raises FillLimitError,
        RangeError (naming the first value the precision cannot hold), NotSupportedError,
        InvalidArgumentError."""
        ctx = self.context if context is None else _ctx(context)
        if precision is None:
            precision = "f64" if format == "auto" and options.get("bdmp_digits") else "f32"
        o = lib.msp_convert_options_default()
        o.format = _parse(lib.msp_format_parse, format, "format")
        o.precision = _parse(lib.msp_precision_parse, precision, "precision")
        o.kernel = _parse(lib.msp_kernel_parse, kernel, "kernel")
        for key, value in options.items():
            if key == "range":
                value = _choice(_RANGE, value, "range policy")
            elif key not in {k for k, _ in o._fields_} or key in ("format", "precision", "kernel"):
                raise invalid("unknown conversion option %r" % key)
            setattr(o, key, value)
        B = Matrix(ctx)
        src = self._handle()
        check(lib.msp_matrix_convert(ctx._handle(), src, ctypes.byref(o), ctypes.byref(B._h)))
        return B

    def analyze(self):
        """Statistics of the pattern and values as a dict (rows, nnz, row_max, row_cv,
        skewness, diagonals, bandwidth, ell_fill, dia_fill, ...; see msp_matrix_stats)."""
        s = _lib.MatrixStats()
        check(lib.msp_matrix_analyze(self._handle(), ctypes.byref(s)))
        return {k: getattr(s, k) for k, _ in s._fields_}

    def to_scipy(self):
        """The host CSR copy as a scipy.sparse.csr_array (fp64: the values as given, not as
        stored in a reduced precision)."""
        import scipy.sparse as sp

        rows, cols = self.shape
        nnz = self.nnz
        ip = np.empty(rows + 1, dtype=np.int64)
        ix = np.empty(max(nnz, 1), dtype=np.int32)
        dv = np.empty(max(nnz, 1), dtype=np.float64)
        check(
            lib.msp_matrix_get_csr(
                self._handle(), ip.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
                ix.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), dv.ctypes.data_as(_DP),
            )
        )  # fmt: skip
        make = getattr(sp, "csr_array", sp.csr_matrix)
        return make((dv[:nnz], ix[:nnz], ip), shape=(rows, cols))

    def set_kernel(self, kernel):
        """Select the CSR kernel ("auto", "scalar", "vector", "merge"); CSR matrices only."""
        k = _parse(lib.msp_kernel_parse, kernel, "kernel")
        check(lib.msp_matrix_set_kernel(self._handle(), k))

    def set_cpms_segments(self, segments):
        """CPMS matrices: how many segments products read from now on (0: all)."""
        check(lib.msp_matrix_set_cpms_segments(self._handle(), int(segments)))

    def range_info(self):
        """(saturated, flushed): values the conversion found outside the precision's range."""
        s, f = ctypes.c_int64(), ctypes.c_int64()
        check(lib.msp_matrix_range_info(self._handle(), ctypes.byref(s), ctypes.byref(f)))
        return s.value, f.value

    def bdmp_info(self):
        """BDMP formats: the per-tile precision selection as a dict (lambda, digits, bound,
        tiles, tiles_f32, nnz_f32, nnz_f64, tile_formats), the footprint in parts (bytes_values,
        bytes_indices, bytes_meta), TCKI's CSR-like block rows (csr_brows, csr_nnz) and the
        device time of a BDMP conversion on CUDA (convert_device_ms; 0 when built on the
        host). NotSupportedError otherwise."""
        r = _lib.BdmpReport()
        check(lib.msp_matrix_bdmp_info(self._handle(), ctypes.byref(r)))
        d = {k: getattr(r, k) for k, _ in r._fields_}
        d["lambda"] = d.pop("lambda_")
        d["tile_formats"] = list(r.tile_formats)
        return d

    def spmv_bytes(self, beta_nonzero=False):
        """Bytes one product moves under the library's byte model (x and y in f64)."""
        return lib.msp_spmv_bytes(self._handle(), int(bool(beta_nonzero)))

    def __matmul__(self, x):
        """A @ x: a numpy array for a 1-D array-like x (2-D: column by column), a new Vector
        for a Vector x."""
        if isinstance(x, Vector):
            y = Vector(self.shape[0], context=self.context)
            try:
                spmv(1.0, self, x, 0.0, y)
            except BaseException:
                y.close()
                raise
            return y
        arr = np.asarray(x)
        if arr.ndim == 2:
            out = np.empty((self.shape[0], arr.shape[1]))
            for j in range(arr.shape[1]):
                out[:, j] = spmv(1.0, self, arr[:, j], 0.0, None)
            return out
        return spmv(1.0, self, arr, 0.0, None)

    def __repr__(self):
        if self.closed:
            return "<mixsparse.Matrix closed>"
        rows, cols = self.shape
        return "<mixsparse.Matrix %dx%d nnz=%d %s %s>" % (
            rows, cols, self.nnz, self.format, self.precision)  # fmt: skip


def read_mtx(path, context=None, allow_nonfinite=False):
    """Read a Matrix Market file into a Matrix (see Matrix.read_mtx)."""
    return Matrix.read_mtx(path, context, allow_nonfinite)


class Vector(_Handle):
    """A dense vector held by mixsparse: on the GPU for a CUDA context, where it stays between
    operations (copied to the host only by to_numpy), on the host otherwise.

    Vector(n) is a zero vector of length n; Vector(values) copies a 1-D array-like.
    precision: the storage precision of its values ("f64" default; any of mixsparse.precisions).
    """

    _destroy = staticmethod(lib.msp_vector_destroy)
    _kind = "vector"

    def __init__(self, values, context=None, precision="f64"):
        super().__init__()
        self.context = _ctx(context)
        self.context._adopt(self)
        p = _parse(lib.msp_precision_parse, precision, "precision")
        if isinstance(values, (int, np.integer)):
            n, data = int(values), None
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
        """Read a dense Matrix Market array file (one column) into an f64 Vector."""
        v = cls.__new__(cls)
        _Handle.__init__(v)
        v.context = _ctx(context)
        v.context._adopt(v)
        flags = READ_ALLOW_NONFINITE if allow_nonfinite else 0
        ch = v.context._handle()
        check(lib.msp_vector_read_mtx(ch, os.fsencode(path), flags, ctypes.byref(v._h)))
        return v

    def write_mtx(self, path):
        """Write the vector as a Matrix Market array file (%.17g)."""
        check(lib.msp_vector_write_mtx(self._handle(), os.fsencode(path)))

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
        """Set every entry to `value`."""
        check(lib.msp_vector_fill(self._handle(), float(value)))

    def to_numpy(self, out=None):
        """The values as a float64 numpy array (into `out` when given); copies device to host
        once if the host copy is stale. Raises RangeError (after copying) when results
        overflowed the vector's precision since the last read."""
        n = len(self)
        if out is None:
            out = np.empty(n, dtype=np.float64)
        elif out.dtype != np.float64 or out.shape != (n,) or not out.flags.c_contiguous:
            raise invalid("out must be a contiguous float64 array of length %d" % n)
        check(lib.msp_vector_get(self._handle(), out.ctypes.data_as(_DP)))
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.to_numpy()
        return a if dtype is None else a.astype(dtype)

    def set_cpms_segments(self, segments):
        """CPMS vectors: how many segments reads use from now on (0: all)."""
        check(lib.msp_vector_set_cpms_segments(self._handle(), int(segments)))

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

    x and y are Vectors or numpy arrays. A numpy y must be a contiguous float64 array and is
    updated in place; y=None (beta must be 0) returns a new numpy array. With beta == 0, y is
    not read (NaN in y does not propagate). Raises DimensionMismatchError,
    InvalidArgumentError (operands of another context), NotSupportedError."""
    if not isinstance(A, Matrix):
        raise invalid("A must be a mixsparse.Matrix")
    ctx = A.context
    rows, cols = A.shape
    xv, xtmp = _as_vector(x, ctx, "x", cols)
    yv, ytmp, out = None, False, None
    try:
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
    check(lib.msp_axpby(_vec_ctx(x)._handle(), float(alpha), x._handle(), float(beta), y._handle()))
    return y


def scale(alpha, x):
    """x = alpha * x for a Vector; returns x."""
    check(lib.msp_scale(_vec_ctx(x)._handle(), float(alpha), x._handle()))
    return x


def copy(x, y):
    """y = x for Vectors; returns y."""
    _vec_ctx(y)
    check(lib.msp_copy(_vec_ctx(x)._handle(), x._handle(), y._handle()))
    return y


class GmresReport:
    """What gmres did: converged, iterations, restarts, rel_residual (final explicit
    ||b - A x|| / ||b||), history (numpy array of the recurrence's relative residuals when
    asked for, else None), cycle_precisions (basis precision tag of each recorded cycle),
    iterations_by_precision (dict tag -> inner iterations), time_s, basis_bytes, setup_s (of
    time_s, the set-up before the first iteration: work vectors, basis, preconditioner)."""

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

    def __repr__(self):
        return "GmresReport(converged=%s, iterations=%d, restarts=%d, rel_residual=%.3g)" % (
            self.converged, self.iterations, self.restarts, self.rel_residual)  # fmt: skip


def gmres(A, b, x0=None, *, restart=100, rtol=1e-8, atol=0.0, max_iters=10000,
          basis_precision="f64", basis_auto=False, precond="none", ortho="cgs",
          history=False):  # fmt: skip
    """Solve A x = b by restarted GMRES with right preconditioning; returns (x, GmresReport).

    CB-GMRES: basis_precision stores the Krylov basis in a reduced precision ("f32", "f16",
    "fx16", "cpms2", ...), all arithmetic fp64; basis_auto=True starts in f32 and moves to f64
    when the residual stagnates. precond: "none", "jacobi", "ilu0"; ortho: "cgs", "mgs".
    b (and x0) are numpy arrays (x returned as numpy) or Vectors (x0 updated in place, or a new
    Vector). Not converging is report.converged == False, not an error. Raises
    DimensionMismatchError, InvalidArgumentError, InvalidMatrixError (a bad pivot),
    NonFiniteError, NotSupportedError."""
    if not isinstance(A, Matrix):
        raise invalid("A must be a mixsparse.Matrix")
    ctx = A.context
    n = A.shape[0]
    o = lib.msp_solver_options_default()
    o.restart, o.rtol, o.atol, o.max_iters = int(restart), float(rtol), float(atol), int(max_iters)
    o.basis_precision = _parse(lib.msp_precision_parse, basis_precision, "basis_precision")
    o.basis_auto = int(bool(basis_auto))
    o.precond = _choice(_PRECOND, precond, "preconditioner")
    o.ortho = _choice(_ORTHO, ortho, "orthogonalisation")
    rep = _lib.SolverReport()
    hist = None
    if history:
        hist = np.zeros(max(int(max_iters), 0) + 1)
        rep.history = hist.ctypes.data_as(_DP)
        rep.history_capacity = hist.shape[0]
    as_numpy = not isinstance(b, Vector)
    bv, btmp = _as_vector(b, ctx, "b", n)
    xv, xtmp = None, False
    try:
        if isinstance(x0, Vector):
            xv = x0
        else:
            xv, xtmp = Vector(n if x0 is None else _f64(x0, "x0", n), context=ctx), True
        check(lib.msp_gmres(ctx._handle(), A._handle(), bv._handle(), xv._handle(),
                            ctypes.byref(o), ctypes.byref(rep)))  # fmt: skip
        report = GmresReport(rep, hist)
        if as_numpy:
            return xv.to_numpy(), report
        xtmp = False  # handed to the caller
        return xv, report
    finally:
        if btmp:
            bv.close()
        if xtmp and xv is not None:
            xv.close()


class PagerankReport:
    """What pagerank did: converged, iterations, iterations_by_bits (dict read width in bits ->
    iterations), values (whether the values form ran), storage (precision tag of p), change
    (final ||p_k - p_{k-1}||_1), time_s, setup_s, dangling (nodes without out-edges), order
    (the internal node numbering used: "natural" or "degree")."""

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

    def __repr__(self):
        return "PagerankReport(converged=%s, iterations=%d, storage=%s, change=%.3g)" % (
            self.converged, self.iterations, self.storage, self.change)  # fmt: skip


def pagerank(G, *, alpha=0.85, tol=1e-10, max_iters=1000, precision="f64", separate=False,
             bank_bytes=0, switch_factor=None, weighted=False, values=None, p0=None,
             personalization=None, order="auto"):  # fmt: skip
    """PageRank of the graph G (a Matrix; entry (i, j) is an edge i -> j); returns
    (p as a numpy array summing to 1, PagerankReport).

    precision: "f64", "cpms2", "cpms4" (customized-precision rank vector read with more segments
    as it converges) or "auto". p0: a starting vector; personalization: teleport weights
    (n values >= 0, positive sum). order: "auto", "natural" or "degree", the internal node
    numbering (p is returned in G's order either way). Other options as in msp_pagerank_options.
    Not converging is report.converged == False. Raises InvalidArgumentError,
    DimensionMismatchError, InvalidMatrixError (a bad weight), NotSupportedError;
    NotImplementedError when the library has no msp_pagerank."""
    fn = _need("msp_pagerank")
    if not isinstance(G, Matrix):
        raise invalid("G must be a mixsparse.Matrix")
    ctx = G.context
    n = G.shape[0]
    o = _need("msp_pagerank_options_default")()
    o.alpha, o.tol, o.max_iters = float(alpha), float(tol), int(max_iters)
    o.precision = _choice(_PAGERANK_PRECISION, precision, "PageRank precision")
    o.order = _choice(_PAGERANK_ORDER, order, "PageRank order")
    o.separate, o.bank_bytes, o.weighted = int(bool(separate)), int(bank_bytes), int(bool(weighted))
    if switch_factor is not None:
        o.switch_factor = float(switch_factor)
    if values is not None:
        o.values = int(bool(values))
    temps = []
    try:
        if personalization is not None:
            pv, tmp = _as_vector(personalization, ctx, "personalization", n)
            if tmp:
                temps.append(pv)
            o.personalization = pv._handle().value
        o.use_guess = int(p0 is not None)
        p = Vector(n if p0 is None else _f64(p0, "p0", n), context=ctx)
        temps.append(p)
        rep = _lib.PagerankReport()
        check(fn(ctx._handle(), G._handle(), ctypes.byref(o), p._handle(), ctypes.byref(rep)))
        return p.to_numpy(), PagerankReport(rep)
    finally:
        for t in temps:
            t.close()

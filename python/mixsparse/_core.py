"""_core.py: contexts, matrices, vectors and the operations over them (ctypes over the C API)."""

import ctypes
import threading
import weakref

import numpy as np

from . import _dlpack, _errors, _inputs, _lib
from ._errors import check, invalid, make_error, mismatch, status_code

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


class Matrix(_Handle):
    """A sparse matrix held by mixsparse (host CSR in fp64, plus its format's arrays once
    converted). Make one with Matrix.from_scipy (any scipy.sparse format, or a dense array),
    Matrix.from_csr, read_mtx or Matrix.generate, or as_matrix(anything).

    It is a SciPy LinearOperator in all but inheritance: shape, dtype (float64: products
    compute in fp64 whatever the storage precision), matvec, rmatvec, matmat, rmatmat, dot,
    A @ x, A * x, x @ A, A.T and A.H, so scipy.sparse.linalg.aslinearoperator(A) and the SciPy
    solvers (scipy.sparse.linalg.gmres(A, b)) take it. x may be a numpy array (1-D, or 2-D
    column by column), a Vector, or on a CUDA context a CuPy array (the result is then a CuPy
    array, computed without a copy through the host). Products of two sparse matrices are not
    supported (TypeError)."""

    _destroy = staticmethod(lib.msp_matrix_destroy)
    _kind = "matrix"
    __array_ufunc__ = None  # numpy defers x @ A and x * A to the reflected operators below
    __array_priority__ = 200.0  # CuPy (and scipy.sparse) defer to them by priority
    ndim = 2

    def __init__(self, _context):
        super().__init__()
        self.context = _context
        self._shape = None
        self._work = None  # (x, y, x handle, y handle): f64 Vectors reused by products
        self._lock = threading.Lock()  # guards _work: a second thread uses temporaries
        self._on_host = None  # a CPU context: products use the caller's arrays in place
        self._transpose = None  # the transpose Matrix, or a weak reference to the original
        _context._adopt(self)

    @classmethod
    def from_csr(cls, shape, indptr, indices, data, context=None, allow_nonfinite=False):
        """A matrix of `shape` (rows, cols) from CSR arrays, which are copied: indptr (rows + 1
        integers from 0, non-decreasing), indices (integers, columns 0..cols-1, any order,
        duplicates summed) and data (real, finite unless allow_nonfinite). Row, column and entry
        numbers in messages are 0-based. Raises TypeError (non-integer indices or indptr,
        complex data), InvalidArgumentError (negative shape, an index out of range),
        InvalidMatrixError (indptr not starting at 0 or decreasing), NonFiniteError,
        OutOfMemoryError."""
        ctx = _ctx(context)
        try:
            rows, cols = shape
        except (TypeError, ValueError):
            raise invalid("shape must be a pair (rows, cols), not %r" % (shape,)) from None
        if isinstance(rows, (int, np.integer)) and isinstance(cols, (int, np.integer)):
            if rows < 0 or cols < 0:
                raise invalid("negative shape (%d, %d): rows and columns must be >= 0"
                              % (rows, cols))  # fmt: skip
        rows = _inputs.integer(rows, "shape[0] (rows)")
        cols = _inputs.integer(cols, "shape[1] (columns)", 0, _inputs.INT32_MAX + 1)
        bad_matrix = _errors.invalid_matrix
        ip = _inputs.index_array(indptr, "indptr", 0, _inputs.INT64_MAX, np.int64, bad_matrix)
        if ip.shape[0] != rows + 1:
            raise invalid("indptr must have rows + 1 = %d entries, not %d" % (rows + 1, ip.size))
        if ip[0] != 0:
            raise bad_matrix("indptr[0] = %d, not 0" % ip[0])
        drop = np.flatnonzero(np.diff(ip) < 0)
        if drop.size:
            i = int(drop[0])
            raise bad_matrix("indptr decreases at row %d (0-based): %d -> %d"
                             % (i, ip[i], ip[i + 1]))  # fmt: skip
        nnz = int(ip[-1])
        if cols == 0 and nnz:
            raise invalid("a matrix with 0 columns has no entries; indptr[-1] = %d" % nnz)
        ix = _inputs.index_array(_head(indices, nnz, "indices"), "indices", 0, cols - 1, np.int32,
                                 bad_matrix)  # fmt: skip
        dv = _inputs.float64(_head(data, nnz, "data"), "data")
        if not allow_nonfinite:
            bad = np.flatnonzero(~np.isfinite(dv[:nnz]))
            if bad.size:
                k = int(bad[0])
                row = int(np.searchsorted(ip, k, side="right")) - 1
                raise make_error(status_code("ERR_NONFINITE"), "data[%d] (row %d, column %d, "
                                 "0-based) is %r; pass allow_nonfinite=True to keep it"
                                 % (k, row, ix[k], dv[k]))  # fmt: skip
        A = cls(ctx)
        flags = READ_ALLOW_NONFINITE if allow_nonfinite else 0
        st = lib.msp_matrix_from_csr(
            ctx._handle(), rows, cols, ip.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
            ix.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), dv.ctypes.data_as(_DP),
            flags, ctypes.byref(A._h),
        )  # fmt: skip
        if st:  # the library numbers the arrays' rows, columns and entries as given: from 0
            msg = lib.msp_last_error().decode(errors="replace")
            raise make_error(st, msg if "based" in msg else msg + " (numbers 0-based)")
        return A

    @classmethod
    def from_scipy(cls, A, context=None, allow_nonfinite=False):
        """A copy of any scipy.sparse matrix or array (csr, csc, coo, bsr, dia, dok, lil), of a
        cupyx.scipy.sparse matrix (set up from a host copy: analysis and conversion run on the
        host) or of a dense 2-D array-like (its zeros dropped), with real values. Complex
        values raise TypeError, as do a LinearOperator (no entries to copy) and a 1-D array."""
        import scipy.sparse as sp

        if _inputs.is_cupy_sparse(A):
            A = A.get()
        if _inputs.is_linear_operator(A):
            raise TypeError("a LinearOperator has no entries to copy; mixsparse needs the matrix "
                            "itself (scipy.sparse, a dense array or a mixsparse.Matrix)")
        if _inputs.is_cupy_array(A):
            A = A.get()
        if sp.issparse(A):
            M = A
        else:
            dense = np.asarray(A)
            if dense.dtype.kind not in "fiubc":
                raise TypeError("a matrix needs numeric values, not %s" % dense.dtype)
            if dense.ndim != 2:
                raise invalid("a two-dimensional matrix is needed, not shape %s" % (dense.shape,))
            M = dense
        if np.issubdtype(M.dtype, np.complexfloating):
            raise TypeError("mixsparse holds real matrices; got %s values" % M.dtype)
        if len(M.shape) != 2:
            raise invalid("a two-dimensional matrix is needed, not shape %s" % (M.shape,))
        M = sp.csr_matrix(M)  # a copy in CSR whatever the format (duplicates summed)
        return cls.from_csr(M.shape, M.indptr, M.indices, M.data, context, allow_nonfinite)

    @classmethod
    def read_mtx(cls, path, context=None, allow_nonfinite=False):
        """Read a Matrix Market file (.mtx or .mtx.gz). Raises FileError, MatrixMarketError
        (its name says which check failed; the message names file and line, counted from 1 as
        editors do), NonFiniteError, OutOfMemoryError; ValueError for a path with a NUL."""
        ctx = _ctx(context)
        name = _inputs.path(path)
        A = cls(ctx)
        flags = READ_ALLOW_NONFINITE if allow_nonfinite else 0
        check(lib.msp_matrix_read_mtx(ctx._handle(), name, flags, ctypes.byref(A._h)))
        return A

    @classmethod
    def generate(cls, spec, context=None):
        """A built-in matrix from a spec such as "laplace2d:100", "random:1000:8:1",
        "poisson3d:20" (see msp_matrix_generate). Raises InvalidArgumentError listing the
        valid forms for a bad spec."""
        ctx = _ctx(context)
        if not isinstance(spec, str) or "\0" in spec:
            raise invalid("spec must be a string without NUL, not %r" % (spec,))
        A = cls(ctx)
        check(lib.msp_matrix_generate(ctx._handle(), spec.encode(), ctypes.byref(A._h)))
        return A

    @property
    def shape(self):
        """(rows, cols)."""
        s = self._shape
        if s is None or not self._h.value:
            h = self._handle()
            s = self._shape = (lib.msp_matrix_rows(h), lib.msp_matrix_cols(h))
        return s

    @property
    def dtype(self):
        """numpy.float64: the type of every product's result (arithmetic is fp64 whatever the
        storage precision of the values)."""
        return _F64

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
        values stored in `precision` (a tag of mixsparse.precisions; default: this matrix's
        own, f64 for a matrix made from arrays or a file, so a conversion never loses digits
        unless asked to), on `context` (default: this matrix's). Options (msp_convert_options):
        hack_size, ell_width, hyb_k, max_fill, cpms_segments, bdmp_f, bdmp_lambda, bdmp_digits
        (with "auto": the accuracy-aware choice of the format and storage), allow_atomics,
        bdmp_paper_rule, range ("error", "saturate", "allow"). Raises FillLimitError,
        RangeError (naming the first value the precision cannot hold), NotSupportedError,
        InvalidArgumentError."""
        ctx = self.context if context is None else _ctx(context)
        if precision is None:
            precision = self.precision
        o = lib.msp_convert_options_default()
        o.format = _parse(lib.msp_format_parse, format, "format")
        o.precision = _parse(lib.msp_precision_parse, precision, "precision")
        o.kernel = _parse(lib.msp_kernel_parse, kernel, "kernel")
        fields = dict(o._fields_)
        for key, value in options.items():
            if key == "range":
                value = _choice(_RANGE, value, "range policy")
            elif key not in fields or key in ("format", "precision", "kernel"):
                raise invalid("unknown conversion option %r" % key)
            elif fields[key] is ctypes.c_double:
                value = _inputs.real(value, key)
            else:
                bits = 8 * ctypes.sizeof(fields[key]) - 1
                value = _inputs.integer(value, key, -(2**bits), 2**bits - 1)
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
        segments = _inputs.integer(segments, "segments", 0, 2**31 - 1)
        check(lib.msp_matrix_set_cpms_segments(self._handle(), segments))

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

    def close(self):
        """Free the C object now (idempotent), with the work vectors its products reuse."""
        work, self._work = self._work, None
        if work is not None:
            work[0].close()
            work[1].close()
        super().close()

    # ---- products: the LinearOperator protocol ---------------------------------------------
    def _workspace(self):
        """The f64 Vectors (x: cols, y: rows) that products with arrays copy through, made on
        the first product and reused, so that a product allocates nothing in the library."""
        w = self._work
        if w is None or w[0].closed or w[1].closed:
            rows, cols = self.shape
            x = Vector(cols, context=self.context)
            y = Vector(rows, context=self.context)
            w = self._work = (x, y, x._h.value, y._h.value)
        return w

    def _matvec_f64(self, x, out):
        """out = A x for C-contiguous float64 numpy arrays of lengths cols and rows."""
        h = self._h.value or self._handle().value
        on_host = self._on_host
        if on_host is None:
            on_host = self._on_host = self.context.backend == "cpu"
        if on_host:  # no copy: the C product reads x and writes out where they are
            st = _c_spmv_host(self.context._h.value, 1.0, h, x.ctypes.data, 0.0, out.ctypes.data)
            if st:
                raise make_error(st)
            return out
        if not self._lock.acquire(False):  # another thread is using the work vectors
            return spmv(1.0, self, x, 0.0, out)
        try:
            w = self._work or self._workspace()
            st = _c_vector_set(w[2], x.ctypes.data)
            if st == 0:
                st = _c_spmv(self.context._h.value, 1.0, h, w[2], 0.0, w[3])
            if st == 0:
                st = _c_vector_get(w[3], out.ctypes.data)
            if st:
                raise make_error(st)
        finally:
            self._lock.release()
        return out

    def __matmul__(self, x):
        """A @ x: x a 1-D array (a new 1-D array), a 2-D array (column by column), a Vector (a
        new Vector), a CuPy array on a CUDA context (a new CuPy array) or a LinearOperator (a
        SciPy product operator). Raises TypeError for complex values and for a sparse x,
        DimensionMismatchError for a length that does not fit."""
        if type(x) is np.ndarray and x.dtype is _F64 and x.ndim == 1 and x.flags.c_contiguous:
            rows, cols = self._shape or self.shape
            if x.shape[0] == cols:
                return self._matvec_f64(x, np.empty(rows))
        return self._product(x, "@")

    def _product(self, x, op):
        """A @ x for every x that the fast path of __matmul__ does not take."""
        if isinstance(x, Vector):
            y = Vector(self.shape[0], context=self.context)
            try:
                spmv(1.0, self, x, 0.0, y)
            except BaseException:
                y.close()
                raise
            return y
        if isinstance(x, Matrix) or _inputs.is_scipy_sparse(x) or _inputs.is_cupy_sparse(x):
            raise TypeError(
                "A %s B with a sparse B (%s) is not supported: mixsparse multiplies a sparse "
                "matrix by dense vectors and 2-D arrays (for a sparse product use A.to_scipy() "
                "%s B)" % (op, type(x).__name__, op)
            )
        if _inputs.is_linear_operator(x):
            return self._operator() @ x
        if _inputs.is_cupy_array(x):
            return self._product_cupy(x)
        if np.isscalar(x):
            if op == "@":
                raise TypeError("A @ scalar is not defined (as in NumPy); use A * %r" % (x,))
            return self._operator() * _inputs.real(x, "the scalar factor")
        arr = np.asarray(x)
        if arr.dtype != _F64:
            arr = _inputs.float64(arr.ravel(), "x").reshape(arr.shape)
        rows, cols = self.shape
        if arr.ndim == 1:
            if arr.shape[0] != cols:
                raise mismatch("A %s x: x has length %d, A has %d columns" % (op, arr.shape[0],
                                                                            cols))  # fmt: skip
            return self._matvec_f64(np.ascontiguousarray(arr), np.empty(rows))
        if arr.ndim == 2:
            if arr.shape[0] != cols:
                raise mismatch("A %s X: X has %d rows, A has %d columns" % (op, arr.shape[0],
                                                                          cols))  # fmt: skip
            xt = np.ascontiguousarray(arr.T)  # column j of X is row j here
            yt = np.empty((arr.shape[1], rows))
            for j in range(arr.shape[1]):
                self._matvec_f64(xt[j], yt[j])
            return np.ascontiguousarray(yt.T)
        raise invalid("A %s x takes a 1-D or 2-D x, not shape %s" % (op, arr.shape))

    def _product_cupy(self, x):
        """A @ x for a CuPy array x on this CUDA context's GPU: device to device."""
        import cupy

        if self.context.backend != "cuda":
            raise make_error(
                status_code("ERR_NOT_SUPPORTED"),
                "A @ x with a CuPy x needs A on a CUDA context, not a %s one (make A with "
                "context=mixsparse.Context('cuda'), or pass x.get())" % self.context.backend,
            )
        if x.dtype.kind == "c":
            raise TypeError("x holds complex values (%s); mixsparse holds real values" % x.dtype)
        if x.dtype.kind not in "fiub":
            raise TypeError("x must hold real numbers, not %s" % x.dtype)
        _check_cupy_device(x, self.context)
        rows, cols = self.shape
        if x.ndim not in (1, 2) or x.shape[0] != cols:
            raise mismatch("A @ x: x of shape %s, A has %d columns" % (x.shape, cols))
        xt = cupy.ascontiguousarray(x.T if x.ndim == 2 else x[None, :], dtype=cupy.float64)
        yt = cupy.empty((xt.shape[0], rows), dtype=cupy.float64)
        _cupy_stream_done(cupy)
        with self._lock:
            w = self._workspace()
            set_device = _need("msp_vector_set_device")
            for j in range(xt.shape[0]):
                check(set_device(w[0]._handle(), xt[j].data.ptr))
                check(lib.msp_spmv(self.context._handle(), 1.0, self._handle(), w[0]._handle(),
                                   0.0, w[1]._handle()))  # fmt: skip
                _vector_to_cupy(w[1], yt[j])
        return yt[0] if x.ndim == 1 else cupy.ascontiguousarray(yt.T)

    def _operator(self):
        """This matrix as a scipy.sparse.linalg.LinearOperator."""
        from scipy.sparse.linalg import aslinearoperator

        return aslinearoperator(self)

    def matvec(self, x):
        """A x for x of shape (cols,) or (cols, 1), returning shape (rows,) or (rows, 1), as
        LinearOperator.matvec."""
        shape = np.shape(x) if not _inputs.is_cupy_array(x) else x.shape
        if shape not in ((self.shape[1],), (self.shape[1], 1)):
            raise mismatch("matvec: x of shape %s, A has %d columns" % (shape, self.shape[1]))
        return self @ x

    def matmat(self, X):
        """A X for a 2-D X of cols rows (one product per column), as LinearOperator.matmat."""
        if np.ndim(X) != 2:
            raise invalid("matmat takes a 2-D array, not %d-D" % np.ndim(X))
        return self @ X

    def rmatvec(self, x):
        """A^T x (the transpose product, through A.T), as LinearOperator.rmatvec."""
        return self.T.matvec(x)

    def rmatmat(self, X):
        """A^T X, as LinearOperator.rmatmat."""
        return self.T.matmat(X)

    def dot(self, x):
        """As LinearOperator.dot: A @ x for arrays and Vectors, a SciPy operator for a scalar
        or a LinearOperator x."""
        return self.__mul__(x)

    def __mul__(self, x):
        """A * x: the product (as LinearOperator and scipy.sparse matrices, not element-wise);
        a scalar gives the scaled SciPy operator."""
        if type(x) is np.ndarray and x.dtype is _F64 and x.ndim == 1 and x.flags.c_contiguous:
            return self.__matmul__(x)
        return self._product(x, "*")

    def __rmatmul__(self, x):
        """x @ A = (A^T x^T)^T for a 1-D or 2-D x (through A.T)."""
        if _inputs.is_scipy_sparse(x) or _inputs.is_cupy_sparse(x):
            return self._product(x, "@")  # refused, saying why
        if np.ndim(x) == 0 and not _inputs.is_cupy_array(x):
            raise TypeError("scalar @ A is not defined (as in NumPy); use %r * A" % (x,))
        if np.ndim(x) == 2 or (_inputs.is_cupy_array(x) and x.ndim == 2):
            return (self.T @ x.T).T
        return self.T @ x

    def __rmul__(self, x):
        """x * A: a scalar gives the scaled SciPy operator; an array x gives x @ A."""
        if np.isscalar(x):
            return self._operator() * _inputs.real(x, "the scalar factor")
        return self.__rmatmul__(x)

    @property
    def T(self):
        """The transpose, a Matrix on the same context in the same format and storage precision
        (a format whose padding the transpose would overflow falls back to "auto"), built on
        first use and kept while this matrix lives."""
        t = self._transpose
        if isinstance(t, weakref.ref):
            t = t()
        if t is None or t.closed:
            t = self._make_transpose()
            t._transpose = weakref.ref(self)
            self._transpose = t
        return t

    @property
    def H(self):
        """The conjugate transpose: A.T (the values are real)."""
        return self.T

    def transpose(self):
        """The transpose (A.T)."""
        return self.T

    def adjoint(self):
        """The conjugate transpose (A.T: the values are real)."""
        return self.T

    def _make_transpose(self):
        import scipy.sparse as sp

        S = sp.csr_matrix(self.to_scipy().T)
        rows, cols = S.shape
        base = Matrix.from_csr((rows, cols), S.indptr, S.indices, S.data, self.context,
                               allow_nonfinite=True)  # fmt: skip
        fmt, prec = self.format, self.precision
        if fmt == "csr" and prec == "f64":
            return base
        try:
            for attempt in (fmt, "auto"):
                try:
                    return base.convert(format=attempt, precision=prec)
                except (_errors.FillLimitError, _errors.NotSupportedError):
                    if attempt == "auto":
                        raise
        finally:
            base.close()

    def __repr__(self):
        if self.closed:
            return "<mixsparse.Matrix closed>"
        rows, cols = self.shape
        return "<mixsparse.Matrix %dx%d nnz=%d %s %s>" % (
            rows, cols, self.nnz, self.format, self.precision)  # fmt: skip


def _head(a, n, what):
    """The first n entries of the 1-D array-like `a`, which must hold at least n."""
    arr = a if isinstance(a, np.ndarray) else np.asarray(a)
    if arr.ndim != 1 or arr.shape[0] < n:
        raise invalid("%s must be 1-D and hold indptr[-1] = %d entries, not shape %s"
                      % (what, n, arr.shape))  # fmt: skip
    return arr[:n]


def as_matrix(A, context=None, allow_nonfinite=False):
    """A as a Matrix: a Matrix itself (on `context` when given, which must then be its own), or
    a copy of a scipy.sparse matrix or array of any format, a cupyx.scipy.sparse matrix, or a
    dense 2-D array-like (see Matrix.from_scipy). Raises TypeError for complex values and for
    a LinearOperator, InvalidArgumentError for a Matrix of another context."""
    if isinstance(A, Matrix):
        if context is not None and A.context is not context:
            raise invalid("A is a Matrix of another context; make it on this one, or convert "
                          "it with A.convert(context=...)")  # fmt: skip
        A._handle()
        return A
    return Matrix.from_scipy(A, context, allow_nonfinite)


def _matrix_arg(A, ctx, what="A"):
    """(Matrix, made here?) for a solver's matrix argument of any accepted kind."""
    if isinstance(A, Matrix):
        return as_matrix(A, ctx), False
    if isinstance(A, (Vector, Context)) or A is None or isinstance(A, (str, bytes)):
        raise invalid("%s must be a matrix (mixsparse.Matrix, scipy.sparse, a dense 2-D array), "
                      "not %s" % (what, type(A).__name__))  # fmt: skip
    return Matrix.from_scipy(A, ctx), True


def _cupy_stream_done(cupy):
    """Finish the work queued on CuPy's current stream when it is not the legacy default
    stream, which mixsparse's device copies already wait for."""
    s = cupy.cuda.get_current_stream()
    if s.ptr:
        s.synchronize()


def _check_cupy_device(x, ctx):
    dev = x.device.id
    if dev != ctx.device:
        raise invalid("a CuPy array on GPU %d with a CUDA context on GPU %d" % (dev, ctx.device))


def _vector_to_cupy(v, out):
    """Copy an f64 Vector's device values into the CuPy array `out` (same GPU, contiguous, its
    length), device to device, ordered on CuPy's current stream."""
    import cupy

    n = out.shape[0]
    ptr = v.device_pointer()
    v.context.synchronize()
    if n:
        mem = cupy.cuda.UnownedMemory(ptr, n * 8, v, v.context.device)
        view = cupy.ndarray((n,), cupy.float64, cupy.cuda.MemoryPointer(mem, 0))
        out[...] = view
        cupy.cuda.get_current_stream().synchronize()  # the Vector may be freed or reused next
    return out


def read_mtx(path, context=None, allow_nonfinite=False):
    """Read a Matrix Market file into a Matrix (see Matrix.read_mtx)."""
    return Matrix.read_mtx(path, context, allow_nonfinite)


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

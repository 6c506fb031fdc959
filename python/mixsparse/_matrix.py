"""_matrix.py: sparse matrices (Matrix), made from arrays, SciPy matrices or files."""

import ctypes
import threading
import weakref

import numpy as np

from . import _errors, _inputs, _lib
from ._errors import check, invalid, make_error, mismatch, status_code
from ._core import (
    READ_ALLOW_NONFINITE,
    _DP,
    _F64,
    _RANGE,
    Context,
    _Handle,
    _c_spmv,
    _c_spmv_host,
    _c_vector_get,
    _c_vector_set,
    _choice,
    _ctx,
    _name,
    _need,
    _parse,
    lib,
)


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


# After Matrix: _vector.py imports it from here.
from ._vector import Vector, spmv  # noqa: E402

"""_inputs.py: checks and conversions of what Python callers pass in (integers, index and value
arrays, paths, and arrays of other libraries: scipy.sparse, CuPy, cupyx.scipy.sparse).

Every refusal names the argument and, for arrays, the first offending entry; row, column and
entry numbers are 0-based, as in NumPy.
"""

import operator
import os

import numpy as np

from ._errors import invalid

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


def integer(value, what, lo=0, hi=INT64_MAX):
    """`value` as a Python int in lo..hi. A non-integer (float, string, ...) raises TypeError;
    an integer outside the range raises InvalidArgumentError (a ValueError), so that ctypes
    never truncates it."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("%s must be an integer, not a bool" % what)
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, not %s %r"
                        % (what, type(value).__name__, value)) from None  # fmt: skip
    if v < lo or v > hi:
        raise invalid("%s = %d is outside %d..%d" % (what, v, lo, hi))
    return v


def real(value, what):
    """`value` as a Python float; complex numbers raise TypeError."""
    if isinstance(value, (complex, np.complexfloating)):
        raise TypeError("%s must be real, not complex %r (mixsparse holds real values)"
                        % (what, value))  # fmt: skip
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError("%s must be a real number, not %s %r"
                        % (what, type(value).__name__, value)) from None  # fmt: skip


def path(p, what="path"):
    """A file system path (str, bytes or os.PathLike) as bytes for the C library. An embedded
    NUL raises ValueError, as open() does: C would cut the name there and use another file."""
    try:
        b = os.fsencode(p)
    except TypeError:
        raise TypeError("%s must be a str, bytes or os.PathLike, not %s"
                        % (what, type(p).__name__)) from None  # fmt: skip
    if b"\0" in b:
        raise ValueError("%s %r contains an embedded null byte" % (what, p))
    return b


def _dtype_refusal(arr, what, kinds):
    if arr.dtype.kind == "c":
        return TypeError("%s holds complex values (%s); mixsparse holds real values (pass the "
                         "real part explicitly if that is what you mean)" % (what, arr.dtype))
    if arr.dtype.kind not in kinds:
        return TypeError("%s must hold %s, not %s" % (what, "integers" if kinds == "iu" else
                                                      "real numbers", arr.dtype))  # fmt: skip
    return None


def float64(a, what, n=None):
    """A C-contiguous float64 1-D copy or view of the array-like `a` (of length n when given).
    Complex, object and string values raise TypeError (never a silent cast); integers and
    booleans are converted."""
    arr = a if type(a) is np.ndarray else np.asarray(a)
    if arr.dtype != np.float64:
        err = _dtype_refusal(arr, what, "fiub")
        if err is not None:
            raise err
        arr = arr.astype(np.float64)
    arr = np.ascontiguousarray(arr)
    if arr.ndim != 1:
        raise invalid("%s must be one-dimensional, not of shape %s" % (what, arr.shape))
    if n is not None and arr.shape[0] != n:
        from ._errors import mismatch

        raise mismatch("%s has length %d, expected %d" % (what, arr.shape[0], n))
    return arr


def index_array(a, what, lo, hi, dtype, error=invalid):
    """A C-contiguous 1-D array of `dtype` (np.int32 or np.int64) holding the integers of `a`,
    each in lo..hi (inclusive). Non-integer arrays (floats, even integral ones, complex,
    booleans, objects) raise TypeError; an entry outside the range raises error(message)
    (InvalidArgumentError by default) naming its 0-based position and value, checked before
    the cast, so nothing wraps."""
    arr = a if type(a) is np.ndarray else np.asarray(a)
    if arr.size == 0 and arr.dtype.kind in "fO":
        arr = arr.astype(dtype)  # an empty list comes as float64: no value to refuse
    elif arr.dtype.kind == "O":  # Python ints beyond int64, or mixed objects
        values = []
        for k, v in enumerate(arr.ravel()):
            if isinstance(v, (bool, np.bool_, float, complex)) or not hasattr(v, "__index__"):
                raise TypeError("%s must hold integers, not %s (%s[%d] = %r)"
                                % (what, type(v).__name__, what, k, v))  # fmt: skip
            v = operator.index(v)
            if v < lo or v > hi:
                raise error("%s[%d] = %d is outside %d..%d (0-based)" % (what, k, v, lo, hi))
            values.append(v)
        arr = np.array(values, dtype=dtype).reshape(arr.shape)
    err = _dtype_refusal(arr, what, "iu")
    if err is not None:
        raise err
    if arr.ndim != 1:
        raise invalid("%s must be one-dimensional, not of shape %s" % (what, arr.shape))
    if arr.size:
        # Compared in the array's own type (uint64 beyond int64 included), before any cast.
        bad = np.flatnonzero((arr < lo) | (arr > hi))
        if bad.size:
            k = int(bad[0])
            raise error("%s[%d] = %d is outside %d..%d (0-based)"
                        % (what, k, int(arr[k]), lo, hi))  # fmt: skip
    return np.ascontiguousarray(arr, dtype=dtype)


def is_cupy_array(x):
    """Whether x is a CuPy ndarray (checked without importing CuPy)."""
    t = type(x)
    return t.__module__.startswith("cupy") and t.__name__ == "ndarray"


def is_cupy_sparse(A):
    """Whether A is a cupyx.scipy.sparse matrix (checked without importing CuPy)."""
    return type(A).__module__.startswith("cupyx.scipy.sparse") and hasattr(A, "get")


def is_scipy_sparse(A):
    """Whether A is a scipy.sparse matrix or array (scipy imported only if it is loaded)."""
    import sys

    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(A)


def is_linear_operator(A):
    """Whether A is a scipy.sparse.linalg.LinearOperator."""
    import sys

    la = sys.modules.get("scipy.sparse.linalg")
    return la is not None and isinstance(A, la.LinearOperator)

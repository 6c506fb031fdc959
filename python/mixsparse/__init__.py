"""mixsparse: sparse matrix-vector products and solvers in mixed and reduced precisions on
NVIDIA GPUs and CPUs, from Python (ctypes over libmixsparse.so; numpy and scipy in and out).

    import numpy as np, scipy.sparse as sp, mixsparse as ms
    A = ms.Matrix.from_scipy(sp.random(1000, 1000, density=0.01, format="csr"))
    B = A.convert(format="auto", precision="f32")   # stored in fp32, fp64 arithmetic
    y = B @ np.ones(1000)                            # numpy in, numpy out

SciPy-style solvers taking scipy.sparse, numpy and CuPy operands: mixsparse.linalg.gmres (x, info)
and mixsparse.linalg.pagerank (networkx's arguments). A Matrix is a SciPy LinearOperator in all
but inheritance (scipy.sparse.linalg.gmres(A, b) takes it).

Errors raise mixsparse.Error subclasses carrying the status name and the library's message.
Objects are freed when garbage collected, or at once by close() or a with-block.
"""

from . import _lib
from ._core import (
    Context,
    GmresReport,
    Matrix,
    PagerankReport,
    Vector,
    as_matrix,
    axpby,
    copy,
    default_context,
    device_count,
    device_info,
    dot,
    formats,
    from_dlpack,
    gmres,
    nrm1,
    nrm2,
    pagerank,
    precisions,
    read_mtx,
    scale,
    set_memory_limit,
    spmv,
    has_monitor,
    status_names,
)
from ._errors import (
    DeviceError,
    DimensionMismatchError,
    Error,
    FileError,
    FillLimitError,
    InternalError,
    InvalidArgumentError,
    InvalidMatrixError,
    MatrixMarketError,
    NoDeviceError,
    NonFiniteError,
    NotBuiltError,
    NotSupportedError,
    OutOfMemoryError,
    RangeError,
    error_class,
)

from . import linalg  # noqa: E402  (SciPy-style solvers: mixsparse.linalg.gmres, pagerank)

__version__ = "0.1.0"
library_path = _lib.path  # the libmixsparse.so in use

__all__ = [
    "Context", "Matrix", "Vector", "as_matrix", "linalg", "has_monitor", "GmresReport",
    "PagerankReport", "read_mtx", "spmv", "gmres", "from_dlpack",
    "pagerank", "dot", "nrm1", "nrm2", "axpby", "scale", "copy", "default_context",
    "device_count", "device_info", "set_memory_limit", "formats", "precisions", "status_names",
    "error_class", "Error", "InvalidArgumentError", "DimensionMismatchError", "OutOfMemoryError",
    "NotSupportedError", "NotBuiltError", "NoDeviceError", "DeviceError", "FileError",
    "InvalidMatrixError", "NonFiniteError", "FillLimitError", "MatrixMarketError",
    "InternalError", "RangeError", "library_path",
]  # fmt: skip

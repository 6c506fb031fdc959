"""_errors.py: the exceptions raised for the library's status codes (MSP_STATUS_MAP)."""

from . import _lib


class Error(Exception):
    """A mixsparse call failed.

    Attributes: ``status`` (the msp_status number), ``name`` (the status name without its
    prefix, e.g. ``"ERR_MM_INDEX"``), ``description`` (msp_status_string) and ``message``
    (msp_last_error: what was wrong and where).
    """

    def __init__(self, status, name, message, description=""):
        self.status = status
        self.name = name
        self.message = message
        self.description = description
        super().__init__("%s: %s" % (name, message or description))


class InvalidArgumentError(Error, ValueError):
    """MSP_ERR_INVALID_ARGUMENT: a bad argument, option or handle (closed objects included)."""


class DimensionMismatchError(Error, ValueError):
    """MSP_ERR_DIMENSION_MISMATCH: operand lengths do not fit the matrix."""


class OutOfMemoryError(Error, MemoryError):
    """MSP_ERR_OUT_OF_MEMORY: host or device memory, or the memory limit, is exhausted."""


class NotSupportedError(Error):
    """MSP_ERR_NOT_SUPPORTED: the operation does not exist for this format or backend."""


class NotBuiltError(Error):
    """MSP_ERR_NOT_BUILT: the backend was not compiled into this build of the library."""


class NoDeviceError(Error):
    """MSP_ERR_NO_DEVICE: no usable GPU."""


class DeviceError(Error):
    """MSP_ERR_DEVICE: the GPU or its driver failed."""


class FileError(Error, OSError):
    """MSP_ERR_IO: a file could not be opened, read or written."""


class InvalidMatrixError(Error, ValueError):
    """MSP_ERR_INVALID_MATRIX: inconsistent matrix data (indices, pointers, pivots)."""


class NonFiniteError(Error, ValueError):
    """MSP_ERR_NONFINITE: NaN or Inf where it is not allowed."""


class FillLimitError(Error):
    """MSP_ERR_FILL_LIMIT: the format's padding would exceed the fill limit (max_fill)."""


class MatrixMarketError(Error, ValueError):
    """MSP_ERR_MM_*: a malformed Matrix Market file; ``name`` says which check failed."""


class InternalError(Error):
    """MSP_ERR_INTERNAL: a bug in mixsparse."""


class RangeError(Error, ValueError):
    """MSP_ERR_RANGE: a value outside the range of the storage precision."""


_BY_NAME = {
    "ERR_INVALID_ARGUMENT": InvalidArgumentError,
    "ERR_DIMENSION_MISMATCH": DimensionMismatchError,
    "ERR_OUT_OF_MEMORY": OutOfMemoryError,
    "ERR_NOT_SUPPORTED": NotSupportedError,
    "ERR_NOT_BUILT": NotBuiltError,
    "ERR_NO_DEVICE": NoDeviceError,
    "ERR_DEVICE": DeviceError,
    "ERR_IO": FileError,
    "ERR_INVALID_MATRIX": InvalidMatrixError,
    "ERR_NONFINITE": NonFiniteError,
    "ERR_FILL_LIMIT": FillLimitError,
    "ERR_INTERNAL": InternalError,
    "ERR_RANGE": RangeError,
}


def status_name(status):
    """The status name without its prefix ("ERR_MM_INDEX"); "UNKNOWN" outside the list."""
    return _lib.lib.msp_status_name(status).decode()


def error_class(status):
    """The Error subclass raised for a status number (Error itself for an unknown one)."""
    name = status_name(status)
    if name.startswith("ERR_MM_"):
        return MatrixMarketError
    return _BY_NAME.get(name, Error)


def make_error(status, message=None):
    """The exception for a failed call: the status and msp_last_error's message."""
    if message is None:
        message = _lib.lib.msp_last_error().decode(errors="replace")
    desc = _lib.lib.msp_status_string(status).decode()
    return error_class(status)(status, status_name(status), message, desc)


def check(status):
    """Raise the Error subclass for a nonzero msp_status; return None on success."""
    if status != 0:
        raise make_error(status)


def status_code(name):
    """The msp_status number of a status name ("ERR_INVALID_ARGUMENT" -> 1)."""
    code = 0
    while True:
        found = status_name(code)
        if found == name:
            return code
        if found == "UNKNOWN":
            raise KeyError(name)
        code += 1


def invalid(message):
    """An InvalidArgumentError for a check made in Python (no library call failed)."""
    return make_error(status_code("ERR_INVALID_ARGUMENT"), message)


def mismatch(message):
    """A DimensionMismatchError for a check made in Python."""
    return make_error(status_code("ERR_DIMENSION_MISMATCH"), message)


def invalid_matrix(message):
    """An InvalidMatrixError for a check made in Python."""
    return make_error(status_code("ERR_INVALID_MATRIX"), message)

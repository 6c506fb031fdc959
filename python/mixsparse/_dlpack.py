"""_dlpack.py: DLPack capsules made and read with ctypes (no compiled helper).

A producer hands out a PyCapsule named "dltensor" that points to a DLManagedTensor; a consumer
that takes the tensor over renames the capsule "used_dltensor" and calls the tensor's deleter
when it is done with the memory; a capsule that nobody took over calls the deleter when it is
destroyed. The structures below follow the DLPack header (dlpack.h, ABI of versions 0.x, which
every consumer accepts).
"""

import ctypes

from ._errors import invalid

KDL_CPU = 1
KDL_CUDA = 2
KDL_FLOAT = 2  # DLDataTypeCode of IEEE floating point

_NAME = b"dltensor"  # a module-level constant: a capsule keeps a pointer to its name


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]  # fmt: skip


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
    ]  # fmt: skip


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # void (*)(DLManagedTensor *)
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # void (*)(PyObject *capsule)

_api = ctypes.pythonapi
_capsule_new = _api.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_is_valid = _api.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_pointer = _api.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = _api.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
# The same two functions on the raw address that a capsule destructor receives (the capsule's
# reference count is already 0 there: it must not be touched as a Python object).
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api)
)
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api)
)


class _Export:
    """What one exported tensor keeps alive until its deleter runs: the DLManagedTensor, its
    shape array, the owner of the memory, and what to do on release."""

    def __init__(self, owner, on_release):
        self.managed = DLManagedTensor()
        self.shape = (ctypes.c_int64 * 1)()
        self.owner = owner
        self.on_release = on_release


_exports = {}  # address of the DLManagedTensor -> _Export


def _release(address):
    exp = _exports.pop(address, None)
    if exp is not None and exp.on_release is not None:
        exp.on_release()


@_DELETER
def _deleter(address):
    try:
        _release(address)
    except Exception:  # noqa: BLE001  (nothing may propagate into C; interpreter shutdown)
        pass


@_DESTRUCTOR
def _destructor(capsule):
    try:
        if _is_valid_raw(capsule, _NAME):  # not taken over by a consumer: release it here
            _release(_get_pointer_raw(capsule, _NAME))
    except Exception:  # noqa: BLE001
        pass


def export(pointer, n, device, owner, on_release=None):
    """A "dltensor" capsule for n contiguous float64 values at `pointer` on `device`
    (device_type, device_id). `owner` is kept alive, and on_release() called once, when the
    consumer's deleter runs (or the capsule is destroyed unused)."""
    exp = _Export(owner, on_release)
    exp.shape[0] = n
    t = exp.managed.dl_tensor
    t.data = pointer
    t.device = DLDevice(device[0], device[1])
    t.ndim = 1
    t.dtype = DLDataType(KDL_FLOAT, 64, 1)
    t.shape = exp.shape
    t.strides = None  # compact row-major
    t.byte_offset = 0
    exp.managed.manager_ctx = None
    exp.managed.deleter = ctypes.cast(_deleter, ctypes.c_void_p).value
    address = ctypes.addressof(exp.managed)
    _exports[address] = exp
    try:
        return _capsule_new(address, _NAME, ctypes.cast(_destructor, ctypes.c_void_p).value)
    except BaseException:
        _exports.pop(address, None)
        raise


def live_exports():
    """Number of exported tensors whose consumers have not released them yet."""
    return len(_exports)


class Tensor:
    """The fields of a consumed DLTensor that mixsparse uses: data (address of the first value,
    byte_offset included), n, device (device_type, device_id)."""

    def __init__(self, data, n, device):
        self.data = data
        self.n = n
        self.device = device


def read(capsule):
    """Check that `capsule` holds a one-dimensional contiguous float64 DLPack tensor and return
    its Tensor. The capsule is not taken over: the memory stays valid while the caller holds
    the capsule, and the producer's destructor releases it afterwards. Raises
    InvalidArgumentError naming what does not fit."""
    if not _is_valid(capsule, _NAME):
        got = _get_name(capsule) if type(capsule).__name__ == "PyCapsule" else None
        raise invalid(
            "__dlpack__ returned %s, not a DLPack capsule named 'dltensor'"
            % ("a capsule named %r" % got.decode() if got else repr(type(capsule).__name__))
        )
    t = DLManagedTensor.from_address(_get_pointer(capsule, _NAME)).dl_tensor
    d = t.dtype
    if (d.code, d.bits, d.lanes) != (KDL_FLOAT, 64, 1):
        raise invalid(
            "DLPack tensor of type code %d, %d bits, %d lanes: mixsparse vectors take float64"
            % (d.code, d.bits, d.lanes)
        )
    if t.ndim != 1:
        raise invalid("DLPack tensor with %d dimensions: a vector needs one" % t.ndim)
    n = t.shape[0]
    if t.strides and n > 1 and t.strides[0] != 1:
        raise invalid(
            "DLPack tensor with stride %d: mixsparse copies contiguous values only (make a "
            "contiguous copy first)" % t.strides[0]
        )
    if n > 0 and not t.data:
        raise invalid("DLPack tensor of %d values with a NULL data pointer" % n)
    return Tensor((t.data or 0) + t.byte_offset, n, (t.device.device_type, t.device.device_id))

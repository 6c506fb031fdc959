"""_lib.py: loads libmixsparse.so through ctypes and declares the C API (include/mixsparse.h).

The library is looked up, in order, at $MIXSPARSE_LIBRARY, next to this package (a pip install
copies it there), in the source tree's build/ directory, and on the system's search path.
"""

import ctypes
import ctypes.util
import glob
import os

c_int = ctypes.c_int
c_int64 = ctypes.c_int64
c_double = ctypes.c_double
c_size_t = ctypes.c_size_t
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
P = ctypes.POINTER

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    """Paths to try for the shared library, best first."""
    env = os.environ.get("MIXSPARSE_LIBRARY")
    if env:
        return [env]  # named explicitly: nothing else is tried
    found = sorted(glob.glob(os.path.join(_HERE, "libmixsparse.so*")), key=len)
    repo = os.path.dirname(os.path.dirname(_HERE))
    found.append(os.path.join(repo, "build", "libmixsparse.so"))
    system = ctypes.util.find_library("mixsparse")
    if system:
        found.append(system)
    return found


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path), os.path.abspath(path) if os.sep in path else path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError(
        "mixsparse: libmixsparse.so not found; build it with `make` in the source tree, or set "
        "MIXSPARSE_LIBRARY to its path. Tried: " + "; ".join(tried)
    )


lib, path = _load()


class MatrixStats(ctypes.Structure):
    _fields_ = [
        ("rows", c_int64), ("cols", c_int64), ("nnz", c_int64),
        ("row_min", c_int64), ("row_max", c_int64),
        ("row_mean", c_double), ("row_std", c_double), ("row_cv", c_double),
        ("skewness", c_double),
        ("empty_rows", c_int64), ("diagonals", c_int64), ("bandwidth", c_int64),
        ("lower_bandwidth", c_int64), ("upper_bandwidth", c_int64),
        ("ell_fill", c_double), ("dia_fill", c_double),
        ("abs_mean", c_double), ("abs_std", c_double),
        ("hll_fill", c_double), ("hdia_fill", c_double),
        ("hyb_k", c_int64), ("hyb_fill", c_double), ("hyb_coo_share", c_double),
    ]  # fmt: skip


class ConvertOptions(ctypes.Structure):
    _fields_ = [
        ("format", c_int), ("kernel", c_int), ("precision", c_int), ("hack_size", c_int),
        ("ell_width", c_int64), ("hyb_k", c_int64), ("max_fill", c_double),
        ("cpms_segments", c_int),
        ("bdmp_f", c_double), ("bdmp_lambda", c_double), ("bdmp_digits", c_int),
        ("allow_atomics", c_int), ("bdmp_paper_rule", c_int), ("range", c_int),
    ]  # fmt: skip


class BdmpReport(ctypes.Structure):
    _fields_ = [
        ("lambda_", c_double), ("digits", c_int), ("bound", c_double),
        ("tiles", c_int64), ("tiles_f32", c_int64), ("nnz_f32", c_int64), ("nnz_f64", c_int64),
        ("tile_formats", c_int64 * 4),
        ("bytes_values", c_int64), ("bytes_indices", c_int64), ("bytes_meta", c_int64),
        ("csr_brows", c_int64), ("csr_nnz", c_int64), ("convert_device_ms", c_double),
    ]  # fmt: skip


class SolverOptions(ctypes.Structure):
    _fields_ = [
        ("restart", c_int), ("rtol", c_double), ("atol", c_double), ("max_iters", c_int64),
        ("basis_precision", c_int), ("basis_auto", c_int), ("precond", c_int), ("ortho", c_int),
        ("monitor", c_void_p), ("monitor_data", c_void_p),
    ]  # fmt: skip


SOLVER_MAX_CYCLES = 256


def _count(name_fn):
    """Entries of an enumeration: its name function answers NULL past the last one."""
    n = 0
    while name_fn(n) is not None:
        n += 1
    return n


lib.msp_format_name.restype = c_char_p
lib.msp_format_name.argtypes = [c_int]
lib.msp_precision_name.restype = c_char_p
lib.msp_precision_name.argtypes = [c_int]
lib.msp_kernel_name.restype = c_char_p
lib.msp_kernel_name.argtypes = [c_int]
lib.msp_backend_name.restype = c_char_p
lib.msp_backend_name.argtypes = [c_int]
PRECISION_COUNT = _count(lib.msp_precision_name)
FORMAT_COUNT = _count(lib.msp_format_name)


class SolverReport(ctypes.Structure):
    _fields_ = [
        ("converged", c_int), ("iterations", c_int64), ("restarts", c_int64),
        ("rel_residual", c_double), ("history", P(c_double)), ("history_capacity", c_int64),
        ("history_length", c_int64), ("cycles_recorded", c_int),
        ("cycle_precision", c_int * SOLVER_MAX_CYCLES),
        ("iterations_by_precision", c_int64 * PRECISION_COUNT),
        ("time_s", c_double), ("basis_bytes", c_double), ("setup_s", c_double),
        ("stopped", c_int),
    ]  # fmt: skip


class DeviceProps(ctypes.Structure):
    _fields_ = [
        ("ordinal", c_int), ("name", ctypes.c_char * 256), ("multiprocessors", c_int),
        ("warp_size", c_int), ("max_threads_per_mp", c_int), ("registers_per_block", c_int),
        ("memory_clock_khz", c_int), ("memory_bus_width_bits", c_int),
        ("peak_bandwidth_gbs", c_double), ("has_uva", c_int),
        ("compute_major", c_int), ("compute_minor", c_int),
        ("total_memory_bytes", c_size_t), ("l2_cache_bytes", c_size_t),
    ]  # fmt: skip


DP = P(c_double)


class PagerankOptions(ctypes.Structure):
    _fields_ = [
        ("alpha", c_double), ("tol", c_double), ("max_iters", c_int64), ("precision", c_int),
        ("separate", c_int), ("bank_bytes", c_int), ("switch_factor", c_double),
        ("weighted", c_int), ("values", c_int), ("use_guess", c_int),
        ("personalization", c_void_p), ("order", c_int), ("monitor", c_void_p),
        ("monitor_data", c_void_p),
    ]  # fmt: skip


class PagerankReport(ctypes.Structure):
    _fields_ = [
        ("converged", c_int), ("iterations", c_int64), ("iterations_by_bits", c_int64 * 5),
        ("values", c_int), ("storage", c_int), ("change", c_double), ("time_s", c_double),
        ("setup_s", c_double), ("dangling", c_int64), ("order", c_int), ("history", DP),
        ("history_time", DP), ("history_capacity", c_int64), ("history_length", c_int64),
        ("stopped", c_int),
    ]  # fmt: skip


H = c_void_p  # every handle (msp_context, msp_matrix, msp_vector) is an opaque pointer
S = c_int  # msp_status
_PROTOTYPES = {
    "msp_status_name": (c_char_p, [c_int]),
    "msp_status_string": (c_char_p, [c_int]),
    "msp_last_error": (c_char_p, []),
    "msp_set_memory_limit": (S, [c_size_t]),
    "msp_format_parse": (S, [c_char_p, P(c_int)]),
    "msp_kernel_parse": (S, [c_char_p, P(c_int)]),
    "msp_precision_parse": (S, [c_char_p, P(c_int)]),
    "msp_backend_parse": (S, [c_char_p, P(c_int)]),
    "msp_context_create": (S, [c_int, c_int, P(H)]),
    "msp_context_destroy": (S, [P(H)]),
    "msp_context_backend": (c_int, [H]),
    "msp_context_synchronize": (S, [H]),
    "msp_context_set_threads": (S, [H, c_int]),
    "msp_context_threads": (c_int, [H]),
    "msp_device_count": (S, [P(c_int)]),
    "msp_device_info": (S, [c_int, P(DeviceProps)]),
    "msp_matrix_read_mtx": (S, [H, c_char_p, ctypes.c_uint, P(H)]),
    "msp_matrix_from_csr": (
        S,
        [H, c_int64, c_int64, P(c_int64), P(ctypes.c_int32), DP, ctypes.c_uint, P(H)],
    ),
    "msp_matrix_generate": (S, [H, c_char_p, P(H)]),
    "msp_matrix_destroy": (S, [P(H)]),
    "msp_matrix_rows": (c_int64, [H]),
    "msp_matrix_cols": (c_int64, [H]),
    "msp_matrix_nnz": (c_int64, [H]),
    "msp_matrix_format": (c_int, [H]),
    "msp_matrix_kernel": (c_int, [H]),
    "msp_matrix_precision": (c_int, [H]),
    "msp_matrix_bytes": (c_size_t, [H]),
    "msp_matrix_choice_reason": (c_char_p, [H]),
    "msp_matrix_get_csr": (S, [H, P(c_int64), P(ctypes.c_int32), DP]),
    "msp_matrix_set_kernel": (S, [H, c_int]),
    "msp_matrix_analyze": (S, [H, P(MatrixStats)]),
    "msp_convert_options_default": (ConvertOptions, []),
    "msp_matrix_set_cpms_segments": (S, [H, c_int]),
    "msp_matrix_convert": (S, [H, H, P(ConvertOptions), P(H)]),
    "msp_matrix_range_info": (S, [H, P(c_int64), P(c_int64)]),
    "msp_matrix_bdmp_info": (S, [H, P(BdmpReport)]),
    "msp_vector_create": (S, [H, c_int64, P(H)]),
    "msp_vector_create_precision": (S, [H, c_int64, c_int, P(H)]),
    "msp_vector_destroy": (S, [P(H)]),
    "msp_vector_length": (c_int64, [H]),
    "msp_vector_precision": (c_int, [H]),
    "msp_vector_bytes": (c_size_t, [H]),
    "msp_vector_set_cpms_segments": (S, [H, c_int]),
    "msp_vector_set": (S, [H, DP]),
    "msp_vector_fill": (S, [H, c_double]),
    "msp_vector_get": (S, [H, DP]),
    "msp_vector_read_mtx": (S, [H, c_char_p, ctypes.c_uint, P(H)]),
    "msp_vector_write_mtx": (S, [H, c_char_p]),
    "msp_vector_transfers": (c_int64, [H]),
    "msp_vector_device_data": (S, [H, P(c_void_p)]),
    "msp_vector_set_device": (S, [H, c_void_p]),
    "msp_spmv": (S, [H, c_double, H, H, c_double, H]),
    "msp_spmv_host": (S, [H, c_double, H, c_void_p, c_double, c_void_p]),
    "msp_dot": (S, [H, H, H, DP]),
    "msp_nrm2": (S, [H, H, DP]),
    "msp_nrm1": (S, [H, H, DP]),
    "msp_axpby": (S, [H, c_double, H, c_double, H]),
    "msp_scale": (S, [H, c_double, H]),
    "msp_copy": (S, [H, H, H]),
    "msp_spmv_bytes": (c_double, [H, c_int]),
    "msp_spmv_bytes_vectors": (c_double, [H, H, H, c_int]),
    "msp_solver_options_default": (SolverOptions, []),
    "msp_gmres": (S, [H, H, H, H, P(SolverOptions), P(SolverReport)]),
    "msp_pagerank_options_default": (PagerankOptions, []),
    "msp_pagerank": (S, [H, H, P(PagerankOptions), H, P(PagerankReport)]),
}

# Functions this build of the library lacks (a newer header than the library, or a function
# still being written): their wrappers raise NotImplementedError.
missing = set()
for _name, (_res, _args) in _PROTOTYPES.items():
    try:
        _fn = getattr(lib, _name)
    except AttributeError:
        missing.add(_name)
        continue
    _fn.restype = _res
    _fn.argtypes = _args


def has(name):
    """Whether the loaded library exports the C function `name`."""
    return name not in missing

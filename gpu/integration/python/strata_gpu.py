"""strata's GPU caching allocator for PyTorch and CuPy, from libstrata-gpu-alloc.so.

PyTorch (before its first CUDA allocation):

    import strata_gpu, torch
    torch.cuda.memory.change_current_allocator(strata_gpu.pytorch_allocator())

CuPy:

    import strata_gpu, cupy
    cupy.cuda.set_allocator(strata_gpu.cupy_allocator)

Both need a GPU. The library is $STRATA_GPU_ALLOC_LIBRARY when that is set,
else a copy beside this file, else whatever the dynamic loader finds by name.
STRATA_GPU_ALLOC_CONF configures it when a device's allocator is first made.
"""

import ctypes
import errno
import json
import os

LIBRARY_NAME = "libstrata-gpu-alloc.so"

_SIGNED_FIELDS = ("reserved_bytes", "reserved_bytes_peak", "allocated_bytes",
                  "allocated_bytes_peak", "active_bytes", "requested_bytes", "segments",
                  "allocations")
_UNSIGNED_FIELDS = ("cache_hits", "cache_misses", "cross_stream_reuses", "alloc_retries", "ooms",
                    "device_allocs", "device_frees")


class Stats(ctypes.Structure):
    """strata_gpu_stats: one device's totals, both pools together."""

    _fields_ = ([(name, ctypes.c_int64) for name in _SIGNED_FIELDS] +
                [(name, ctypes.c_uint64) for name in _UNSIGNED_FIELDS])


def library_path():
    """Where the library is: the environment's choice, a copy beside this file, or its name."""
    chosen = os.environ.get("STRATA_GPU_ALLOC_LIBRARY")
    if chosen:
        return chosen
    beside = os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY_NAME)
    return beside if os.path.exists(beside) else LIBRARY_NAME


_library = None


def library():
    """The library, loaded once, with every function's C types declared (errno kept)."""
    global _library
    if _library is not None:
        return _library
    lib = ctypes.CDLL(library_path(), use_errno=True)
    size, device, stream, ptr = ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p
    for name in ("strata_gpu_malloc", "strata_gpu_torch_malloc"):
        getattr(lib, name).argtypes = [size, device, stream]
        getattr(lib, name).restype = ptr
    lib.strata_gpu_free.argtypes = [ptr, size, device, stream]
    lib.strata_gpu_free.restype = None
    lib.strata_gpu_record_stream.argtypes = [ptr, device, stream]
    lib.strata_gpu_record_stream.restype = ctypes.c_int
    lib.strata_gpu_empty_cache.argtypes = [device]
    lib.strata_gpu_empty_cache.restype = ctypes.c_int
    lib.strata_gpu_get_stats.argtypes = [device, ctypes.POINTER(Stats)]
    lib.strata_gpu_get_stats.restype = ctypes.c_int
    lib.strata_gpu_snapshot_json.argtypes = [device, ctypes.c_char_p, size]
    lib.strata_gpu_snapshot_json.restype = size
    lib.strata_gpu_last_error.argtypes = []
    lib.strata_gpu_last_error.restype = ctypes.c_char_p
    _library = lib
    return lib


def last_error():
    """Why this thread's latest failing call failed."""
    return library().strata_gpu_last_error().decode()


def _failure(call):
    """The exception for a failed call: MemoryError when out of memory, else OSError."""
    code = ctypes.get_errno()
    message = "%s: %s" % (call, last_error())
    return MemoryError(message) if code == errno.ENOMEM else OSError(code, message)


def pytorch_allocator():
    """A CUDAPluggableAllocator over the library, for change_current_allocator."""
    import torch
    return torch.cuda.memory.CUDAPluggableAllocator(library_path(), "strata_gpu_torch_malloc",
                                                    "strata_gpu_free")


class _Block:
    """One block CuPy holds: freed, on the stream it was allocated for, when CuPy lets go."""

    __slots__ = ("ptr", "size", "device", "stream", "free")

    def __init__(self, ptr, size, device, stream):
        self.ptr, self.size, self.device, self.stream = ptr, size, device, stream
        # Kept here: at interpreter exit the module's globals may be gone first.
        self.free = library().strata_gpu_free

    def __del__(self):
        self.free(self.ptr, self.size, self.device, self.stream)


def cupy_allocator(size):
    """cupy.cuda.set_allocator's callable: `size` bytes on the current device and stream."""
    import cupy
    device = cupy.cuda.runtime.getDevice()
    stream = cupy.cuda.get_current_stream().ptr
    ptr = library().strata_gpu_malloc(size, device, stream)
    if ptr is None and size != 0:
        raise _failure("strata_gpu_malloc of %d bytes on device %d" % (size, device))
    owner = _Block(ptr, size, device, stream) if ptr is not None else None
    memory = cupy.cuda.memory.UnownedMemory(ptr or 0, size, owner, device)
    return cupy.cuda.memory.MemoryPointer(memory, 0)


def empty_cache(device=0):
    """Give the device's fully free cached segments back to CUDA."""
    if library().strata_gpu_empty_cache(device) != 0:
        raise _failure("strata_gpu_empty_cache")


def stats(device=0):
    """The device's totals as a dict (all zero before its first allocation)."""
    totals = Stats()
    if library().strata_gpu_get_stats(device, ctypes.byref(totals)) != 0:
        raise _failure("strata_gpu_get_stats")
    return {name: getattr(totals, name) for name, _ in Stats._fields_}


def snapshot(device=0):
    """The device's memory snapshot (PyTorch's key names), parsed from its JSON."""
    lib = library()
    length = lib.strata_gpu_snapshot_json(device, None, 0)
    if length == 0:
        raise _failure("strata_gpu_snapshot_json")
    text = ctypes.create_string_buffer(length + 1)
    lib.strata_gpu_snapshot_json(device, text, length + 1)
    return json.loads(text.value.decode())

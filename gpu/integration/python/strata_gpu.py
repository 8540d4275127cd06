"""strata's GPU caching allocator for PyTorch and CuPy, from libstrata-gpu-alloc.so.

PyTorch (before its first CUDA allocation):

    import strata_gpu
    strata_gpu.use_with_pytorch()

That builds strata's small PyTorch extension (gpu/integration/torch/) with
PyTorch's JIT compiler once, then loads it from PyTorch's extension cache
($TORCH_EXTENSIONS_DIR): out of memory is then torch.OutOfMemoryError,
Tensor.record_stream and CUDA graphs (torch.cuda.graph) reach strata, and
torch.cuda.empty_cache empties strata's cache. Where the extension cannot be
built it warns and falls back to pytorch_allocator(), the plain
CUDAPluggableAllocator, which carries none of those.

CuPy (cupy.cuda.set_allocator with cupy_allocator; CuPy is imported only then):

    import strata_gpu
    strata_gpu.use_with_cupy()

ledger() is the memory ledger of the library's allocators: what each device's
caching allocator holds and hands out, and the device's own view (free, total,
used outside strata), as a dict, text or a self-contained HTML page.

Both need a GPU. The library is $STRATA_GPU_ALLOC_LIBRARY when that is set,
else the install's (share/strata/python/strata_gpu.py finds lib/ from
strata_gpu_layout.json beside it; `pip install gpu/integration/python` puts
it in strata_gpu_data/ beside this file), else a copy beside this file, else
whatever the dynamic loader finds by name.
STRATA_GPU_ALLOC_CONF configures it when a device's allocator is first made.

No-device answers: where the package was built without the CUDA toolkit there
is no library, and every function that needs it (library(), stats(),
snapshot(), ledger(), empty_cache(), use_with_pytorch(), use_with_cupy())
raises OSError with errno ENODEV saying so; available() is then False.
Without a GPU the library loads and its calls fail with ENODEV (integration.h).
"""

import ctypes
import errno
import json
import os
import warnings

LIBRARY_NAME = "libstrata-gpu-alloc.so"

_SIGNED_FIELDS = ("reserved_bytes", "reserved_bytes_peak", "allocated_bytes",
                  "allocated_bytes_peak", "active_bytes", "requested_bytes", "segments",
                  "allocations")
_UNSIGNED_FIELDS = ("cache_hits", "cache_misses", "cross_stream_reuses", "alloc_retries", "ooms",
                    "device_allocs", "device_frees")

# CUDA's stream handles that name no stream of their own and are never destroyed:
# the legacy default stream (0, and 1 spelt out) and the per-thread default (2).
_BUILT_IN_STREAMS = (0, 1, 2)

_HERE = os.path.dirname(os.path.abspath(__file__))


def _layout():
    """Where the library, the headers and the extension's source are, relative to this file.

    An install writes strata_gpu_layout.json beside it; in the source tree they are
    gpu/integration/torch and gpu/include, and the library is found as library_path() says.
    A pip install built without the CUDA toolkit says so there ("built_without_cuda").
    """
    try:
        with open(os.path.join(_HERE, "strata_gpu_layout.json"), encoding="utf-8") as file:
            paths = json.load(file)
    except FileNotFoundError:
        paths = {"include": os.path.join(os.pardir, os.pardir, "include"),
                 "torch_extension": os.path.join(os.pardir, "torch", "strata_torch_allocator.cpp")}
    return {key: os.path.normpath(os.path.join(_HERE, path)) if isinstance(path, str) else path
            for key, path in paths.items()}


_LAYOUT = _layout()
NO_LIBRARY = ("strata_gpu: this package was built without the CUDA toolkit, so it has no "
              "libstrata-gpu-alloc.so (reinstall where nvcc or CUDAToolkit_ROOT is found, or "
              "set STRATA_GPU_ALLOC_LIBRARY)")
TORCH_EXTENSION_SOURCE = _LAYOUT["torch_extension"]
INCLUDE_DIR = _LAYOUT["include"]


class Stats(ctypes.Structure):
    """strata_gpu_stats: one device's totals, both pools together."""

    _fields_ = ([(name, ctypes.c_int64) for name in _SIGNED_FIELDS] +
                [(name, ctypes.c_uint64) for name in _UNSIGNED_FIELDS])


def library_path():
    """Where the library is: the environment's choice, the install's copy, a copy beside
    this file, or its name for the dynamic loader."""
    chosen = os.environ.get("STRATA_GPU_ALLOC_LIBRARY")
    if chosen:
        return chosen
    if _LAYOUT.get("built_without_cuda"):
        return None
    for candidate in (_LAYOUT.get("library"), os.path.join(_HERE, LIBRARY_NAME)):
        if candidate and os.path.exists(candidate):
            return candidate
    return LIBRARY_NAME


_library = None


def library():
    """The library, loaded once, with every function's C types declared (errno kept).

    strata_gpu_stream_destroyed is declared only where the library has it (it
    came after the others), so an older library still loads.
    """
    global _library
    if _library is not None:
        return _library
    path = library_path()
    if path is None:
        raise OSError(errno.ENODEV, NO_LIBRARY)
    lib = ctypes.CDLL(path, use_errno=True)
    size, device, stream, ptr = ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p
    for name in ("strata_gpu_malloc", "strata_gpu_torch_malloc"):
        getattr(lib, name).argtypes = [size, device, stream]
        getattr(lib, name).restype = ptr
    lib.strata_gpu_free.argtypes = [ptr, size, device, stream]
    lib.strata_gpu_free.restype = None
    lib.strata_gpu_record_stream.argtypes = [ptr, device, stream]
    lib.strata_gpu_record_stream.restype = ctypes.c_int
    if hasattr(lib, "strata_gpu_stream_destroyed"):
        lib.strata_gpu_stream_destroyed.argtypes = [device, stream]
        lib.strata_gpu_stream_destroyed.restype = ctypes.c_int
    lib.strata_gpu_empty_cache.argtypes = [device]
    lib.strata_gpu_empty_cache.restype = ctypes.c_int
    lib.strata_gpu_get_stats.argtypes = [device, ctypes.POINTER(Stats)]
    lib.strata_gpu_get_stats.restype = ctypes.c_int
    lib.strata_gpu_snapshot_json.argtypes = [device, ctypes.c_char_p, size]
    lib.strata_gpu_snapshot_json.restype = size
    if hasattr(lib, "strata_gpu_ledger"):
        lib.strata_gpu_ledger.argtypes = [ctypes.c_int, ctypes.c_char_p, size]
        lib.strata_gpu_ledger.restype = size
    lib.strata_gpu_last_error.argtypes = []
    lib.strata_gpu_last_error.restype = ctypes.c_char_p
    _library = lib
    return lib


def available():
    """Whether the library loads (a GPU is still needed for it to hand out memory)."""
    try:
        library()
        return True
    except OSError:
        return False


def last_error():
    """Why this thread's latest failing call failed."""
    return library().strata_gpu_last_error().decode()


def _failure(call):
    """The exception for a failed call: MemoryError when out of memory, else OSError."""
    code = ctypes.get_errno()
    message = "%s: %s" % (call, last_error())
    return MemoryError(message) if code == errno.ENOMEM else OSError(code, message)


# ---- PyTorch

def pytorch_allocator():
    """The plain CUDAPluggableAllocator over the library, for change_current_allocator.

    It carries allocate and free alone: Tensor.record_stream is dropped, out of
    memory is a RuntimeError and CUDA graphs cannot capture. use_with_pytorch()
    wires those where it can build strata's extension.
    """
    import torch
    library()  # no library: the no-device answer, before PyTorch is asked
    return torch.cuda.memory.CUDAPluggableAllocator(library_path(), "strata_gpu_torch_malloc",
                                                    "strata_gpu_free")


def torch_extension(build_directory=None, verbose=False):
    """strata's PyTorch extension, built by PyTorch's JIT compiler (or loaded from its cache).

    It needs the CUDA toolkit's headers (PyTorch's CUDA headers include them) and
    links PyTorch alone; it opens the library itself. Raises when it cannot be built.
    """
    from torch.utils import cpp_extension
    if not os.path.exists(TORCH_EXTENSION_SOURCE):
        raise FileNotFoundError("no extension source at %s" % TORCH_EXTENSION_SOURCE)
    if cpp_extension.CUDA_HOME is None:
        raise RuntimeError("no CUDA toolkit found (set CUDA_HOME) for the CUDA headers")
    return cpp_extension.load(
        name="strata_torch_allocator",
        sources=[TORCH_EXTENSION_SOURCE],
        extra_include_paths=[INCLUDE_DIR, os.path.join(cpp_extension.CUDA_HOME, "include")],
        extra_cflags=["-O2"],
        # CUDAPluggableAllocator lives in libtorch_cuda from PyTorch 2.5 or 2.6 on,
        # in libtorch_python (linked for every extension) before.
        extra_ldflags=["-ltorch_cuda", "-lc10_cuda", "-ldl"],
        build_directory=build_directory,
        verbose=verbose)


# How use_with_pytorch installed strata in this process: None, "extension" or "pluggable".
_pytorch_route = None

LOST_WITHOUT_EXTENSION = (
    "Tensor.record_stream (dropped: a block may be reused while another stream still "
    "uses it), torch.OutOfMemoryError (out of memory is a plain RuntimeError) and CUDA "
    "graphs (torch.cuda.graph cannot capture)")


def use_with_pytorch(build_directory=None, verbose=False):
    """Make strata PyTorch's CUDA allocator; call it before PyTorch's first CUDA allocation.

    Returns the route taken: "extension" (strata's extension, with record_stream,
    torch.OutOfMemoryError and, where the library has the graph pool entry
    points, CUDA graphs) or "pluggable" (the plain CUDAPluggableAllocator, with a
    warning naming what is lost, when the extension cannot be built). A second
    call returns the first one's route.
    """
    global _pytorch_route
    if _pytorch_route is not None:
        return _pytorch_route
    # Loaded first, so the extension's dlopen of the same path finds this copy
    # (and without a library, the no-device answer comes before PyTorch is imported).
    library()
    import torch
    try:
        extension = torch_extension(build_directory, verbose)
    except Exception as error:  # any build failure: compiler, headers, PyTorch too old
        warnings.warn("strata_gpu: strata's PyTorch extension could not be built (%s: %s); "
                      "falling back to the plain CUDAPluggableAllocator, which loses %s"
                      % (type(error).__name__, error, LOST_WITHOUT_EXTENSION),
                      RuntimeWarning, stacklevel=2)
        torch.cuda.memory.change_current_allocator(pytorch_allocator())
        _pytorch_route = "pluggable"
        return _pytorch_route
    missing = extension.install(library_path())
    if missing:
        warnings.warn("strata_gpu: %s lacks %s, so CUDA graphs (torch.cuda.graph) are not wired"
                      % (library_path(), ", ".join(missing)), RuntimeWarning, stacklevel=2)
    _pytorch_route = "extension"
    return _pytorch_route


# ---- CuPy

class _Block:
    """One block CuPy holds: freed, on the stream it was allocated for, when CuPy lets go."""

    __slots__ = ("ptr", "size", "device", "stream", "free")

    def __init__(self, ptr, size, device, stream):
        self.ptr, self.size, self.device, self.stream = ptr, size, device, stream
        # Kept here: at interpreter exit the module's globals may be gone first.
        self.free = library().strata_gpu_free

    def __del__(self):
        self.free(self.ptr, self.size, self.device, self.stream)


class StreamWatch:
    """The streams strata has cached blocks with, told to strata before CUDA destroys them.

    CUDA may hand a destroyed stream's handle to a new stream, which strata must
    not take for the old one: strata_gpu_stream_destroyed has to come before
    cudaStreamDestroy. CuPy's Stream calls cudaStreamDestroy in its __del__, and
    CPython runs __del__ before an object's weakref callbacks when its last
    reference goes, so weakref.finalize would come too late. The watch wraps the
    class's __del__ instead: the notice first, CuPy's own __del__ after it.
    """

    def __init__(self, notify):
        # notify(device, handle) -> 0, or -1 with strata's error (strata_gpu_stream_destroyed).
        self.notify = notify
        self.devices = {}  # stream handle -> the device strata allocated on with it
        self.notices = 0

    def saw(self, handle, device):
        """strata allocated on `device` for the stream `handle`."""
        if handle not in _BUILT_IN_STREAMS:
            self.devices[handle] = device

    def destroying(self, handle):
        """The stream `handle` is about to be destroyed: tell strata if it knows it."""
        device = self.devices.pop(handle, None)
        if device is None:
            return
        self.notices += 1
        if self.notify(device, handle) != 0:
            warnings.warn("strata_gpu_stream_destroyed for stream %#x on device %d: %s"
                          % (handle, device, last_error()), RuntimeWarning)

    def wrap(self, stream_class):
        """Make stream_class.__del__ tell the watch first; once per class."""
        original = stream_class.__del__
        if getattr(original, "strata_watch", None) is not None:
            return
        watch = self  # bound in the closure: module globals may be gone at exit

        def __del__(stream, *args, **kwargs):
            try:
                watch.destroying(stream.ptr)
            finally:
                original(stream, *args, **kwargs)

        __del__.strata_watch = watch
        stream_class.__del__ = __del__


_cupy_streams = None


def cupy_stream_watch(cupy):
    """The process's watch over CuPy's streams (None where the library cannot be told).

    Made, and cupy.cuda.Stream wrapped, on first use.
    """
    global _cupy_streams
    if _cupy_streams is None:
        lib = library()
        if not hasattr(lib, "strata_gpu_stream_destroyed"):
            return None
        _cupy_streams = StreamWatch(lib.strata_gpu_stream_destroyed)
        _cupy_streams.wrap(cupy.cuda.Stream)
    return _cupy_streams


def cupy_allocator(size):
    """cupy.cuda.set_allocator's callable: `size` bytes on the current device and stream.

    In CuPy's per-thread default stream mode the stream handle is
    cudaStreamPerThread (2), passed as it is: strata resolves it per thread.
    """
    import cupy
    device = cupy.cuda.runtime.getDevice()
    stream = cupy.cuda.get_current_stream().ptr
    ptr = library().strata_gpu_malloc(size, device, stream)
    if ptr is None and size != 0:
        raise _failure("strata_gpu_malloc of %d bytes on device %d" % (size, device))
    watch = cupy_stream_watch(cupy)
    if watch is not None:
        watch.saw(stream, device)
    owner = _Block(ptr, size, device, stream) if ptr is not None else None
    memory = cupy.cuda.memory.UnownedMemory(ptr or 0, size, owner, device)
    return cupy.cuda.memory.MemoryPointer(memory, 0)


def use_with_cupy(cupy=None):
    """Make strata CuPy's device allocator (cupy.cuda.set_allocator(cupy_allocator)).

    CuPy is imported here, not with this module; `cupy` may be given instead
    (the module itself, or a stand-in with the same cuda attributes). The
    library is loaded first, so without it this raises the no-device OSError
    and CuPy's allocator stays as it was.
    """
    library()
    if cupy is None:
        import cupy
    cupy.cuda.set_allocator(cupy_allocator)


# ---- both

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


LEDGER_FORMATS = {"text": 0, "json": 1, "html": 2}


def ledger(format="json"):
    """The library's memory ledger: a dict for "json", else the "text" or "html" string."""
    lib = library()
    if not hasattr(lib, "strata_gpu_ledger"):
        raise OSError(errno.ENOSYS, "%s has no strata_gpu_ledger" % library_path())
    code = LEDGER_FORMATS[format]
    length = lib.strata_gpu_ledger(code, None, 0)
    if length == 0:
        raise _failure("strata_gpu_ledger")
    text = ctypes.create_string_buffer(length + 1)
    lib.strata_gpu_ledger(code, text, length + 1)
    value = text.value.decode()
    return json.loads(value) if format == "json" else value


def snapshot(device=0):
    """The device's memory snapshot (PyTorch's key names), parsed from its JSON."""
    lib = library()
    length = lib.strata_gpu_snapshot_json(device, None, 0)
    if length == 0:
        raise _failure("strata_gpu_snapshot_json")
    text = ctypes.create_string_buffer(length + 1)
    lib.strata_gpu_snapshot_json(device, text, length + 1)
    return json.loads(text.value.decode())

"""strata_gpu.py, the Python helper over libstrata-gpu-alloc.so: it loads the
library with ctypes, declares the C types the header gives, and reports the
library's answers; the CuPy stream watch is checked on a stand-in class; the
PyTorch and CuPy parts run only where those packages and a GPU are present
(the PyTorch ones in fresh processes, since an allocator is installed once,
before CUDA starts).

Run by CTest with STRATA_GPU_ALLOC_LIBRARY naming the built library and
PYTHONPATH holding gpu/integration/python.
"""

import ctypes
import errno
import os
import subprocess
import sys
import textwrap
import types
import unittest

import strata_gpu


def _importable(name):
    """Whether the package `name` can be imported here."""
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def _torch_with_a_gpu():
    """Whether PyTorch is installed and sees a CUDA device (checked without starting CUDA)."""
    if not _importable("torch"):
        return False
    import torch
    return torch.cuda.is_available()


def _cupy_devices():
    """How many CUDA devices CuPy sees (0 where its runtime cannot start: no driver)."""
    import cupy
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        return 0


def _run_fresh(code):
    """Run `code` in a fresh interpreter with this one's environment; its completed process."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600, check=False)


class LibraryTest(unittest.TestCase):
    def test_loads_with_the_headers_types(self):
        lib = strata_gpu.library()
        self.assertIs(lib.strata_gpu_malloc.restype, ctypes.c_void_p)
        self.assertEqual(len(lib.strata_gpu_malloc.argtypes), 3)
        self.assertEqual(len(lib.strata_gpu_free.argtypes), 4)
        # strata_gpu_stats: eight int64_t and seven uint64_t, as the header lays it out.
        self.assertEqual(ctypes.sizeof(strata_gpu.Stats), 15 * 8)
        if hasattr(lib, "strata_gpu_stream_destroyed"):
            self.assertEqual(len(lib.strata_gpu_stream_destroyed.argtypes), 2)

    def test_the_extension_source_and_its_header_are_where_the_module_looks(self):
        self.assertTrue(os.path.isfile(strata_gpu.TORCH_EXTENSION_SOURCE))
        header = os.path.join(strata_gpu.INCLUDE_DIR, "strata", "gpu", "integration.h")
        self.assertTrue(os.path.isfile(header))

    def test_a_device_cuda_does_not_have_is_no_device(self):
        # No machine here has 64 GPUs, nor a device -3; the header promises ENODEV.
        for device in (64, -3):
            with self.assertRaises(OSError) as caught:
                strata_gpu.stats(device)
            self.assertEqual(caught.exception.errno, errno.ENODEV)
            with self.assertRaises(OSError) as caught:
                strata_gpu.empty_cache(device)
            self.assertEqual(caught.exception.errno, errno.ENODEV)

    def test_a_block_goes_round_the_cache(self):
        # On a GPU, or the emulated one the tests' library runs on without a GPU.
        lib = strata_gpu.library()
        ptr = lib.strata_gpu_malloc(1 << 20, 0, None)
        if ptr is None:
            self.skipTest("no GPU: %s" % strata_gpu.last_error())
        totals = strata_gpu.stats(0)
        self.assertGreaterEqual(totals["allocated_bytes"], 1 << 20)
        self.assertEqual(totals["allocations"], 1)
        shot = strata_gpu.snapshot(0)
        self.assertEqual([segment["device"] for segment in shot["segments"]], [0])
        lib.strata_gpu_free(ptr, 1 << 20, 0, None)
        again = lib.strata_gpu_malloc(1 << 20, 0, None)
        self.assertEqual(again, ptr)
        self.assertEqual(lib.strata_gpu_record_stream(again, 0, None), 0)
        lib.strata_gpu_free(again, 1 << 20, 0, None)
        strata_gpu.empty_cache(0)
        self.assertEqual(strata_gpu.stats(0)["reserved_bytes"], 0)

    def test_malloc_answers_null_and_errno_without_a_gpu(self):
        lib = strata_gpu.library()
        ptr = lib.strata_gpu_malloc(1024, 0, None)
        if ptr is not None:
            lib.strata_gpu_free(ptr, 1024, 0, None)
            self.skipTest("a GPU is present")
        self.assertEqual(ctypes.get_errno(), errno.ENODEV)
        self.assertIn("no CUDA device", strata_gpu.last_error())

    @unittest.skipUnless(_importable("torch"), "PyTorch is not installed")
    def test_pytorch_allocator(self):
        import torch
        if not torch.cuda.is_available():
            self.skipTest("no CUDA device")
        allocator = strata_gpu.pytorch_allocator()
        self.assertIsInstance(allocator, torch.cuda.memory.CUDAPluggableAllocator)

    @unittest.skipUnless(_torch_with_a_gpu(), "PyTorch with a CUDA device is not here")
    def test_use_with_pytorch_raises_out_of_memory_as_pytorch_does(self):
        done = _run_fresh("""
            import strata_gpu, torch
            assert strata_gpu.use_with_pytorch() == "extension"
            x = torch.ones(1 << 20, device="cuda")
            assert x.sum().item() == 1 << 20
            free, total = torch.cuda.mem_get_info()
            try:
                torch.empty(2 * total, dtype=torch.uint8, device="cuda")
                raise SystemExit("no out-of-memory error")
            except torch.cuda.OutOfMemoryError as error:
                print("raised:", error)
            """)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    @unittest.skipUnless(_torch_with_a_gpu(), "PyTorch with a CUDA device is not here")
    def test_use_with_pytorch_falls_back_naming_what_is_lost(self):
        done = _run_fresh("""
            import warnings, strata_gpu, torch
            strata_gpu.TORCH_EXTENSION_SOURCE = "/nonexistent/strata_torch_allocator.cpp"
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                assert strata_gpu.use_with_pytorch() == "pluggable"
            text = " ".join(str(w.message) for w in caught)
            for lost in ("record_stream", "OutOfMemoryError", "CUDA graphs"):
                assert lost in text, text
            assert torch.ones(1024, device="cuda").sum().item() == 1024
            """)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    @unittest.skipUnless(_importable("cupy"), "CuPy is not installed")
    def test_cupy_allocator(self):
        if _cupy_devices() == 0:
            self.skipTest("no CUDA device")
        pointer = strata_gpu.cupy_allocator(1 << 20)
        self.assertNotEqual(pointer.ptr, 0)
        self.assertGreaterEqual(strata_gpu.stats(pointer.device_id)["allocated_bytes"], 1 << 20)

    @unittest.skipUnless(_importable("cupy"), "CuPy is not installed")
    def test_cupy_streams_are_told_to_strata_before_their_end(self):
        import cupy
        if _cupy_devices() == 0:
            self.skipTest("no CUDA device")
        watch = strata_gpu.cupy_stream_watch(cupy)
        if watch is None:
            self.skipTest("the library has no strata_gpu_stream_destroyed")
        before = watch.notices
        stream = cupy.cuda.Stream()
        with stream:
            pointer = strata_gpu.cupy_allocator(4096)
        del pointer
        stream.synchronize()
        del stream
        self.assertEqual(watch.notices, before + 1)


class StreamWatchTest(unittest.TestCase):
    """The watch on a stand-in for CuPy's Stream, whose __del__ destroys the handle."""

    def setUp(self):
        self.events = []
        events = self.events

        class Stream:
            def __init__(self, ptr):
                self.ptr = ptr

            def __del__(self):
                events.append(("cudaStreamDestroy", self.ptr))

        def notify(device, handle):
            events.append(("strata_gpu_stream_destroyed", device, handle))
            return 0

        self.Stream = Stream
        self.watch = strata_gpu.StreamWatch(notify)
        self.watch.wrap(Stream)

    def test_strata_hears_of_a_stream_before_it_is_destroyed(self):
        stream = self.Stream(0x1234)
        self.watch.saw(0x1234, 3)
        del stream
        self.assertEqual(self.events, [("strata_gpu_stream_destroyed", 3, 0x1234),
                                       ("cudaStreamDestroy", 0x1234)])
        self.assertEqual(self.watch.notices, 1)

    def test_streams_strata_never_saw_and_built_in_streams_are_not_told(self):
        self.watch.saw(2, 0)  # cudaStreamPerThread is never destroyed
        for ptr in (0x5678, 2):
            stream = self.Stream(ptr)
            del stream
        self.assertEqual(self.events, [("cudaStreamDestroy", 0x5678), ("cudaStreamDestroy", 2)])

    def test_a_reused_handle_is_told_once_per_stream(self):
        for _ in range(2):
            stream = self.Stream(0x9abc)
            self.watch.saw(0x9abc, 0)
            del stream
        notices = [event for event in self.events if event[0] == "strata_gpu_stream_destroyed"]
        self.assertEqual(len(notices), 2)

    def test_wrapping_twice_tells_strata_once(self):
        self.watch.wrap(self.Stream)
        stream = self.Stream(0x4321)
        self.watch.saw(0x4321, 0)
        del stream
        self.assertEqual(self.watch.notices, 1)


class LedgerTest(unittest.TestCase):
    def test_the_ledger_parses_and_its_totals_add_up(self):
        lib = strata_gpu.library()
        ptr = lib.strata_gpu_malloc(1 << 20, 0, None)  # NULL without a GPU: the ledger still answers
        ledger = strata_gpu.ledger()
        roots = [row for row in ledger["resources"] if row["parent"] is None]
        for domain, total in ledger["totals"].items():
            self.assertEqual(total, sum(row["held"] for row in roots if row["domain"] == domain))
        if ptr is not None:
            caches = [row for row in ledger["resources"] if row["kind"] == "caching_allocator"]
            self.assertEqual(len(caches), 1)
            self.assertGreaterEqual(caches[0]["in_use"], 1 << 20)
            self.assertEqual([device["ordinal"] for device in ledger["devices"]], [0])
            lib.strata_gpu_free(ptr, 1 << 20, 0, None)
        self.assertIn("strata ledger", strata_gpu.ledger("text"))
        self.assertTrue(strata_gpu.ledger("html").startswith("<!DOCTYPE html>"))

    def test_an_unknown_format_is_refused(self):
        with self.assertRaises(KeyError):
            strata_gpu.ledger("xml")
        lib = strata_gpu.library()
        self.assertEqual(lib.strata_gpu_ledger(7, None, 0), 0)
        self.assertEqual(ctypes.get_errno(), errno.EINVAL)


class CupyTest(unittest.TestCase):
    def test_use_with_cupy_hands_cupy_strata_allocator(self):
        chosen = []
        stand_in = types.SimpleNamespace(cuda=types.SimpleNamespace(set_allocator=chosen.append))
        strata_gpu.use_with_cupy(stand_in)
        self.assertEqual(chosen, [strata_gpu.cupy_allocator])

    def test_without_a_library_every_call_is_no_device(self):
        saved = strata_gpu._library, strata_gpu._LAYOUT, os.environ.pop("STRATA_GPU_ALLOC_LIBRARY")
        strata_gpu._library, strata_gpu._LAYOUT = None, {"built_without_cuda": True}
        try:
            self.assertFalse(strata_gpu.available())
            chosen = []
            stand_in = types.SimpleNamespace(cuda=types.SimpleNamespace(set_allocator=chosen.append))
            for call in (strata_gpu.stats, strata_gpu.ledger, lambda: strata_gpu.use_with_cupy(stand_in)):
                with self.assertRaises(OSError) as caught:
                    call()
                self.assertEqual(caught.exception.errno, errno.ENODEV)
            self.assertEqual(chosen, [])
        finally:
            strata_gpu._library, strata_gpu._LAYOUT, os.environ["STRATA_GPU_ALLOC_LIBRARY"] = saved


if __name__ == "__main__":
    unittest.main()

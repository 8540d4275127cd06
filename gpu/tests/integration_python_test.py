"""strata_gpu.py, the Python helper over libstrata-gpu-alloc.so: it loads the
library with ctypes, declares the C types the header gives, and reports the
library's answers; the PyTorch and CuPy parts run only where those packages
and a GPU are present.

Run by CTest with STRATA_GPU_ALLOC_LIBRARY naming the built library and
PYTHONPATH holding gpu/integration/python.
"""

import ctypes
import errno
import unittest

import strata_gpu


def _importable(name):
    """Whether the package `name` can be imported here."""
    try:
        __import__(name)
        return True
    except ImportError:
        return False


class LibraryTest(unittest.TestCase):
    def test_loads_with_the_headers_types(self):
        lib = strata_gpu.library()
        self.assertIs(lib.strata_gpu_malloc.restype, ctypes.c_void_p)
        self.assertEqual(len(lib.strata_gpu_malloc.argtypes), 3)
        self.assertEqual(len(lib.strata_gpu_free.argtypes), 4)
        # strata_gpu_stats: eight int64_t and seven uint64_t, as the header lays it out.
        self.assertEqual(ctypes.sizeof(strata_gpu.Stats), 15 * 8)

    def test_nothing_is_counted_before_an_allocation(self):
        # Device 7 is never allocated on here, with or without a GPU.
        self.assertTrue(all(value == 0 for value in strata_gpu.stats(7).values()))
        self.assertEqual(strata_gpu.snapshot(7), {})
        strata_gpu.empty_cache(7)

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

    @unittest.skipUnless(_importable("cupy"), "CuPy is not installed")
    def test_cupy_allocator(self):
        import cupy
        if cupy.cuda.runtime.getDeviceCount() == 0:
            self.skipTest("no CUDA device")
        pointer = strata_gpu.cupy_allocator(1 << 20)
        self.assertNotEqual(pointer.ptr, 0)
        self.assertGreaterEqual(strata_gpu.stats(pointer.device_id)["allocated_bytes"], 1 << 20)


if __name__ == "__main__":
    unittest.main()

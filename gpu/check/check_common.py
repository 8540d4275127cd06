"""What the device check's Python pieces share: their command line, their result
file, and putting strata (or not) under PyTorch before its first CUDA allocation.

Every piece writes one JSON object to --out: "status" ("passed", "failed" or
"skipped"), "reason" when not passed, and the numbers it measured. Its exit
status says the same (0 passed, 1 failed, 77 skipped), which is what
scripts/gpu-check.sh records; gpu/check/report.py reads the files.
"""

import argparse
import json
import os
import sys
import time

EXIT_PASSED, EXIT_FAILED, EXIT_SKIPPED = 0, 1, 77

# The allocators a PyTorch piece can run under.
TORCH_ALLOCATORS = ("native", "native-async", "strata")


def arguments(description, allocators=False):
    """The command line every piece takes (--out FILE), with --allocator where it runs under one."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", required=True, help="the JSON result file to write")
    if allocators:
        parser.add_argument("--allocator", choices=TORCH_ALLOCATORS, required=True,
                            help="native: PyTorch's caching allocator; native-async: its "
                                 "cudaMallocAsync backend; strata: strata's, through "
                                 "strata_gpu.use_with_pytorch()")
    return parser


def finish(out, status, reason=None, **numbers):
    """Write the result file and leave with the exit status that says the same."""
    result = {"status": status, **numbers}
    if reason:
        result["reason"] = reason
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as file:
        json.dump(result, file, indent=2, sort_keys=True)
        file.write("\n")
    if reason:
        print("%s: %s" % (status, reason))
    sys.exit({"passed": EXIT_PASSED, "skipped": EXIT_SKIPPED}.get(status, EXIT_FAILED))


def import_or_skip(out, name):
    """The package `name`, or a skipped result when it is not installed."""
    try:
        return __import__(name)
    except ImportError as error:
        finish(out, "skipped", "%s is not installed (%s)" % (name, error))


def torch_with_allocator(out, allocator):
    """PyTorch, with `allocator` installed before its first CUDA allocation.

    Returns (torch, route): route is None for PyTorch's own allocators, else
    strata's route ("extension" or "pluggable"). Skips without PyTorch or a GPU.
    """
    if allocator == "native-async":
        # Read when PyTorch's allocator starts, so it must be set before.
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    torch = import_or_skip(out, "torch")
    if not torch.cuda.is_available():
        finish(out, "skipped", "PyTorch sees no CUDA device")
    route = None
    if allocator == "strata":
        import strata_gpu
        route = strata_gpu.use_with_pytorch()
    return torch, route


def strata_stats():
    """strata's totals on device 0, as strata_gpu.stats() gives them."""
    import strata_gpu
    return strata_gpu.stats(0)


class Stopwatch:
    """Seconds since it was made, by the monotonic clock."""

    def __init__(self):
        self.start = time.perf_counter()

    def seconds(self):
        """Seconds elapsed, rounded for the report."""
        return round(time.perf_counter() - self.start, 3)

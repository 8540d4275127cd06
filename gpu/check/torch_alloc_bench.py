"""Allocate+free through PyTorch, in the cases of strata-bench's xsigma/gpu-allocators
(1 KB, 64 KB, 4 MB, and batches of ten 1 KB blocks): torch.empty then del in a
loop on the current stream, synchronized before the clock stops. One process
per allocator, so each starts from a fresh CUDA context and an empty cache.

    python3 gpu/check/torch_alloc_bench.py --allocator strata --out FILE

Reports nanoseconds per allocate+free pair, the median of the timed repeats.
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (beside this file)

# (label, bytes per block, blocks live at once, rounds per repeat)
CASES = (("1 KB", 1024, 1, 20000),
         ("64 KB", 64 << 10, 1, 20000),
         ("4 MB", 4 << 20, 1, 20000),
         ("10 x 1 KB", 1024, 10, 4000))
REPEATS = 5
WARM_UP_ROUNDS = 500


def one_repeat(torch, size, blocks, rounds):
    """Nanoseconds per pair over `rounds` rounds of `blocks` blocks allocated then freed."""
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    for _ in range(rounds):
        live = [torch.empty(size, dtype=torch.uint8, device="cuda") for _ in range(blocks)]
        del live
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - start) / (rounds * blocks)


def measure(torch, size, blocks, rounds):
    """The median of REPEATS timed repeats, after warm-up rounds that fill the cache."""
    one_repeat(torch, size, blocks, WARM_UP_ROUNDS)
    return statistics.median(one_repeat(torch, size, blocks, rounds) for _ in range(REPEATS))


def main():
    """Time every case under the chosen allocator and write ns per pair."""
    options = check_common.arguments(__doc__, allocators=True).parse_args()
    torch, route = check_common.torch_with_allocator(options.out, options.allocator)
    if options.allocator == "native-async" and \
            torch.cuda.get_allocator_backend() != "cudaMallocAsync":
        check_common.finish(options.out, "failed", "PyTorch did not take backend:cudaMallocAsync")
    ns_per_pair = {label: round(measure(torch, size, blocks, rounds), 1)
                   for label, size, blocks, rounds in CASES}
    extra = {"strata": check_common.strata_stats()} if options.allocator == "strata" else {}
    check_common.finish(options.out, "passed", allocator=options.allocator, route=route,
                        device=torch.cuda.get_device_name(0), ns_per_pair=ns_per_pair,
                        repeats=REPEATS, **extra)


if __name__ == "__main__":
    main()

"""A CuPy workload through strata: cupy.cuda.set_allocator(strata_gpu.cupy_allocator),
then rounds that allocate arrays of varying sizes (1 K to 4 M elements),
compute on them (elementwise, a reduction, every tenth round a matmul) and free
them, each result compared with NumPy's. Every fifth round runs on a new
cupy.cuda.Stream that is dropped after it, so strata hears of destroyed
streams (strata_gpu_stream_destroyed, where the library has it); an array
made on that stream outlives it, is checked after, then freed (naming the
destroyed stream's handle, as CuPy does).

    python3 gpu/check/cupy_workload.py --out FILE [--rounds 200] [--threads 1]

With CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 CuPy's current stream is
cudaStreamPerThread (handle 2), which strata resolves per thread; --threads 2
then runs the rounds on two threads at once.
"""

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (beside this file)

ELEMENTS = (1 << 10, 3000, 1 << 14, 100_000, 1 << 18, 1_000_000, 1 << 22)
MATMUL_SIZES = (64, 128, 256)
SEED = 1234


def one_round(cupy, numpy, draw, index):
    """Allocate, compute and compare one round; the number of results that disagreed."""
    elements = ELEMENTS[draw.integers(len(ELEMENTS))]
    left = draw.standard_normal(elements, dtype=numpy.float32)
    right = draw.standard_normal(elements, dtype=numpy.float32)
    on_gpu_left, on_gpu_right = cupy.asarray(left), cupy.asarray(right)
    combined = on_gpu_left * 2.0 + on_gpu_right
    wrong = int(not numpy.allclose(cupy.asnumpy(combined), left * 2.0 + right, rtol=1e-5))
    wrong += int(not numpy.isclose(float(cupy.abs(combined).sum()),
                                   float(numpy.abs(left * 2.0 + right).sum(dtype=numpy.float64)),
                                   rtol=1e-3))
    if index % 10 == 0:
        size = MATMUL_SIZES[draw.integers(len(MATMUL_SIZES))]
        square = draw.standard_normal((size, size), dtype=numpy.float32)
        product = cupy.asnumpy(cupy.asarray(square) @ cupy.asarray(square))
        wrong += int(not numpy.allclose(product, square @ square, rtol=1e-3, atol=1e-3))
    return wrong


def round_on_a_stream_of_its_own(cupy, numpy, draw, index):
    """One round on a new stream, dropped after it; an array made there is checked after that."""
    stream = cupy.cuda.Stream()
    with stream:
        wrong = one_round(cupy, numpy, draw, index)
        survivor = cupy.arange(4096, dtype=cupy.float32)
    stream.synchronize()
    del stream
    wrong += int(float(survivor.sum()) != 4095 * 4096 / 2)
    del survivor
    return wrong


def rounds(cupy, numpy, count, seed, mismatches, failures):
    """`count` rounds, every fifth on a stream of its own (round_on_a_stream_of_its_own)."""
    draw = numpy.random.default_rng(seed)
    try:
        for index in range(count):
            if index % 5 == 4:
                mismatches.append(round_on_a_stream_of_its_own(cupy, numpy, draw, index))
            else:
                mismatches.append(one_round(cupy, numpy, draw, index))
    except Exception as error:  # reported with the result, not lost in a thread
        failures.append("%s: %s" % (type(error).__name__, error))


def verdict(failures, wrong, watch, options):
    """(status, reason): failed on an exception, a wrong result, or a stream strata missed."""
    streams = options.threads * (options.rounds // 5)
    if failures:
        return "failed", "; ".join(failures)
    if wrong:
        return "failed", "%d results differ from NumPy's" % wrong
    if watch is not None and watch.notices < streams:
        return "failed", "strata heard of %d of %d destroyed streams" % (watch.notices, streams)
    return "passed", None


def main():
    """Run the rounds on --threads threads and report mismatches and strata's totals."""
    parser = check_common.arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    options = parser.parse_args()
    cupy = check_common.import_or_skip(options.out, "cupy")
    import numpy
    import strata_gpu
    try:
        devices = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as error:  # no driver
        devices, reason = 0, str(error)
    else:
        reason = "CuPy sees no CUDA device"
    if devices == 0:
        check_common.finish(options.out, "skipped", reason)
    cupy.cuda.set_allocator(strata_gpu.cupy_allocator)
    clock = check_common.Stopwatch()
    mismatches, failures = [], []
    workers = [threading.Thread(target=rounds,
                                args=(cupy, numpy, options.rounds, SEED + n, mismatches, failures))
               for n in range(options.threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    cupy.cuda.Device().synchronize()
    watch = strata_gpu.cupy_stream_watch(cupy)
    check_common.finish(
        options.out, *verdict(failures, sum(mismatches), watch, options),
        rounds=len(mismatches), threads=options.threads, seconds=clock.seconds(),
        current_stream_handle=cupy.cuda.get_current_stream().ptr,
        per_thread_default_stream=os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM") == "1",
        stream_notices=None if watch is None else watch.notices,
        cupy=cupy.__version__, strata=strata_gpu.stats(cupy.cuda.runtime.getDevice()))


if __name__ == "__main__":
    main()

"""strata's own targets for its specialised allocators (issue 17), checked against this
run's medians: each row says what was measured, against what, and whether it is met."""

from number_format import number

BURSTS = [100, 500, 1000, 5000, 10000]
FRAME_SIZES = ["64 B", "256 B", "1 KB", "4 KB", "64 KB"]
FRAMES = ["physics: 800 allocs, 95 KB", "particles: 10,000 allocs, 640 KB", "UI: 200 allocs, 32 KB"]
FRAME_MODES = ["strata frame_allocator", "strata frame_allocator (minimal)"]


def median(results, scenario, column, label):
    metric = results.metric(scenario, column, label)
    return metric.median if metric else None


def burst_target(results, statistic):
    """The session heap's worst ratio to the best other strategy over the burst sizes."""
    scenario = "session/session-heap"
    worst = None
    for count in BURSTS:
        label = f"{statistic}, {count} msgs"
        own = median(results, scenario, "strata session_heap", label)
        best = results.best_competitor(scenario, label)
        if own is None or best is None:
            return None
        if worst is None or own / best[1] > worst[0]:
            worst = (own / best[1], count, own, best)
    ratio, count, own, best = worst
    text = (f"worst at {count} msgs: {number(own)} ns/msg against {best[0]} {number(best[1])} "
            f"({ratio:.2f}×)")
    return text, ratio < 1, f"{(ratio - 1) * 100:.0f}% slower than {best[0]}"


def destroy_target(results):
    own = median(results, "session/session-heap-lifetime", "strata session_heap",
                 "end of a 64 MiB session")
    if own is None:
        return None
    return f"{number(own)} µs", own <= 10, f"{number(own - 10)} µs over"


def frame_speed_target(results):
    worst = None
    for mode in FRAME_MODES:
        for size in FRAME_SIZES:
            own = median(results, "frame/frame-arena", mode, size)
            if own is None:
                return None
            if worst is None or own > worst[0]:
                worst = (own, mode, size)
    own, mode, size = worst
    return (f"slowest: {number(own)} ns ({mode}, {size})", own <= 2, f"{number(own - 2)} ns over")


def fastest_malloc(results, frame):
    """(allocator, median) of the fastest malloc in `frame/realistic`, strata's included."""
    medians = [(a, median(results, "frame/realistic", a, frame)) for a in results.measured_names()]
    medians = [m for m in medians if m[1] is not None]
    return min(medians, key=lambda m: m[1]) if medians else None


def frame_ratio_target(results):
    worst = None
    for mode in FRAME_MODES:
        for frame in FRAMES:
            own = median(results, "frame/frame-arena", mode, frame)
            host_malloc = median(results, "frame/frame-arena", "malloc", frame)
            if own is None or host_malloc is None:
                return None
            ratio = host_malloc / own
            if worst is None or ratio < worst[0]:
                worst = (ratio, mode, frame)
    ratio, mode, frame = worst
    host = results.host("frame/frame-arena")
    text = f"least: {ratio:.1f}× ({mode}, {frame.split(':')[0]}) against {host}'s malloc"
    best = fastest_malloc(results, frame)
    if best:
        own = median(results, "frame/frame-arena", mode, frame)
        text += f"; {best[1] / own:.1f}× against the fastest malloc there ({best[0]}, `frame/realistic`)"
    return text, ratio >= 4, f"{ratio:.1f}× < 4×"


def waste_target(results):
    cells = []
    met = True
    for alignment in (1, 8):
        own = median(results, "frame/frame-arena-stress", "strata frame_allocator",
                     f"waste, align {alignment}")
        if own is None:
            return None
        cells.append(f"{number(own)} % at align {alignment}")
        met = met and own <= 2
    return "; ".join(cells), met, "the padding to 8 bytes of 7, 31 and 63-byte requests"


def pool_target(results):
    own = median(results, "cell/pool-pairs", "strata object_pool<T>", "64 B object, allocate+free")
    if own is None:
        return None
    return f"{number(own)} ns/pair", own <= 3, f"{number(own - 3)} ns over"


TARGETS = [
    ("session heap P50 below every other strategy at every burst size",
     lambda r: burst_target(r, "P50")),
    ("session heap P99 below every other strategy at every burst size",
     lambda r: burst_target(r, "P99")),
    ("end of a 64 MiB session ≤ 10 µs", destroy_target),
    ("frame allocator ≤ 2 ns per allocation at every size, default and minimal",
     frame_speed_target),
    ("frame allocator ≥ 4× faster than malloc on the realistic frames, default and minimal",
     frame_ratio_target),
    ("alignment-stress waste ≤ 2 %", waste_target),
    ("object_pool<T> allocate+free pair ≤ 3 ns", pool_target),
]


def target_rows(results):
    """(target, measured, verdict) for each target this run measured."""
    rows = []
    for name, check in TARGETS:
        outcome = check(results)
        if outcome is None:
            continue
        measured, met, shortfall = outcome
        rows.append((name, measured, "met" if met else f"**missed**: {shortfall}"))
    return rows


"""The five seed reports: the system each reproduces, its headline claim, and the
figures it published placed beside this machine's numbers for the same measurement.

A claim row is (scenario, label, statistic, seed figure): statistic "median" reads a
metric, "p50"/"p99" read a latency distribution."""

SEEDS = [
    {
        "seed": "000",
        "system": "XSigma",
        "file": "000_21f4f9164d0f8f89.txt",
        "headline": (
            "mimalloc allocates 10,000 × 4 KB in 895 µs against 6,074 µs for the standard "
            "allocator (9.4× faster overall); the XSigma CPU allocator wins the 10,000-operation "
            "mixed stress (69 ms vs 139 ms mimalloc, 223 ms standard); all allocators pass "
            "alignment 16–1024 B, 1–64 MB blocks and 4-thread tests. (Windows, MSVC.)"
        ),
        "claims": [
            ("xsigma/4k-x10000-warm", "allocate", "median", "mimalloc 895 µs · standard 6,074 µs"),
            ("xsigma/4k-x10000-warm", "free", "median", "mimalloc 71 µs · standard 1,950 µs"),
            ("xsigma/4k-x10000-cold", "total", "median", "mimalloc 966 µs · standard 8,024 µs"),
            ("xsigma/4k-x10000-warm", "total ops/s", "median",
             "mimalloc 10.4 M/s · standard 1.25 M/s"),
            ("xsigma/4-threads-mixed", "4 threads x 1,000", "median", "1–2 ms (all allocators)"),
            ("xsigma/mixed-stress", "time", "median",
             "XSigma 69 ms · mimalloc 139 ms · standard 223 ms"),
            ("xsigma/gpu-allocators", "1 KB: allocate+free", "median",
             "direct 293 µs · pool 259 µs · caching 0.18 µs"),
            ("xsigma/gpu-allocators", "64 KB: allocate+free", "median",
             "direct 234 µs · pool 241 µs · caching 0.40 µs"),
            ("xsigma/gpu-allocators", "4 MB: allocate+free", "median",
             "direct 320 µs · pool 490 µs · caching 0.51 µs"),
            ("xsigma/gpu-allocators", "10 x 1 KB batch: allocate+free", "median",
             "direct 337 µs · pool 333 µs · caching 0.34 µs"),
            ("xsigma/gpu-transfers", "H2D 1 KB: bandwidth, copy + wait", "median", "0.84 MB/s"),
            ("xsigma/gpu-transfers", "H2D 16 MB: bandwidth, copy + wait", "median", "2,340 MB/s"),
            ("xsigma/gpu-transfers", "D2H 1 KB: bandwidth, copy + wait", "median", "1.78 MB/s"),
            ("xsigma/gpu-transfers", "D2H 16 MB: bandwidth, copy + wait", "median", "4,039 MB/s"),
        ],
    },
    {
        "seed": "001",
        "system": "Cell",
        "file": "001_81880fd2b6354442.txt",
        "headline": (
            "On Linux, Cell is 1.4–1.5× faster than glibc for 16–128 B malloc/free pairs "
            "(2.57 ns vs 3.80 ns) and 6.8× at 4 KB, but glibc wins from 16 KB up "
            "(4 MB: 11.5 ns vs 3.54 µs)."
        ),
        "claims": [
            ("cell/single-pairs", "16 B", "median", "Cell 2.57 ns · glibc 3.80 ns"),
            ("cell/single-pairs", "1 KB", "median", "Cell 2.58 ns · glibc 3.62 ns"),
            ("cell/single-pairs", "4 KB", "median", "Cell 2.62 ns · glibc 17.8 ns"),
            ("cell/single-pairs", "16 KB", "median", "Cell 21.5 ns · glibc 16.5 ns"),
            ("cell/batches", "64 B x 1,000", "median", "Cell 8.54 µs · glibc 6.36 µs"),
            ("cell/batches", "1 KB x 1,000", "median", "Cell 9.59 µs · glibc 13.4 µs"),
            ("cell/large-pairs", "64 KB", "median", "Cell 19.3 ns · glibc 11.3 ns"),
            ("cell/large-pairs", "4 MB", "median", "Cell 3.54 µs · glibc 11.5 ns"),
            ("cell/sequential-traversal", "1,000 objects, in order", "median",
             "Cell 879 ns · malloc 870 ns (Windows)"),
            ("cell/random-traversal", "100,000 objects, random order", "median",
             "Cell 169.6 µs · malloc 165.2 µs (Windows)"),
            ("cell/pool-traversal", "1,000 objects, in order", "median",
             "Cell 879 ns · malloc 870 ns (Windows)"),
            ("cell/pool-traversal", "100,000 objects, random order", "median",
             "Cell 169.6 µs · malloc 165.2 µs (Windows)"),
        ],
    },
    {
        "seed": "002",
        "system": "Unified Allocator",
        "file": "002_037f359a1a6770eb.txt",
        "headline": (
            "A pooling allocator over CUDA unified memory is 1.8–6.7× faster than "
            "cudaMallocManaged and ~30× faster on repeated 1 MB blocks, while plain malloc "
            "stays the fastest host allocator (small blocks: 0.48 ms allocate, 18.49 ms total "
            "with CPU access). (Jetson AGX Orin; block counts not published, so only the "
            "shape of each scenario is reproduced here.)"
        ),
        "claims": [
            ("unified/small", "total", "median", "standard_malloc 18.49 ms (CPU access)"),
            ("unified/medium", "total", "median", "standard_malloc 15.47 ms"),
            ("unified/large", "total", "median", "standard_malloc 55.37 ms"),
            ("unified/mixed", "total", "median", "standard_malloc 166.72 ms"),
            ("unified/repeated-1mb", "total", "median", "standard_malloc 34.97 ms"),
            ("unified/pool-reuse", "total", "median",
             "unified pool 0.06 ms · cudaMalloc 1.17 ms · managed 1.85 ms"),
            ("unified/managed-small", "CPU access: total", "median",
             "unified_allocator 47.17 ms · cuda_managed 165.45 ms · cuda_device 48.83 ms"),
            ("unified/managed-small", "GPU access: total", "median",
             "unified_allocator 19.50 ms · cuda_managed 130.04 ms · cuda_device 17.16 ms"),
            ("unified/managed-medium", "CPU access: total", "median",
             "unified_allocator 17.72 ms · cuda_managed 34.42 ms · cuda_device 26.05 ms"),
            ("unified/managed-medium", "GPU access: total", "median",
             "unified_allocator 5.01 ms · cuda_managed 15.58 ms · cuda_device 7.96 ms"),
            ("unified/managed-large", "CPU access: total", "median",
             "unified_allocator 79.79 ms · cuda_managed 83.13 ms · cuda_device 94.93 ms"),
            ("unified/managed-large", "GPU access: total", "median",
             "unified_allocator 31.69 ms · cuda_managed 31.45 ms · cuda_device 28.98 ms"),
            ("unified/managed-mixed", "CPU access: total", "median",
             "unified_allocator 182.59 ms · cuda_managed 189.96 ms · cuda_device 238.02 ms"),
            ("unified/managed-mixed", "GPU access: total", "median",
             "unified_allocator 71.46 ms · cuda_managed 81.42 ms · cuda_device 73.53 ms"),
            ("unified/managed-repeated-1mb", "CPU access: total", "median",
             "unified_allocator 25.96 ms · cuda_managed 47.26 ms · cuda_device 52.20 ms"),
            ("unified/managed-repeated-1mb", "GPU access: total", "median",
             "unified_allocator 5.23 ms · cuda_managed 18.34 ms · cuda_device 15.32 ms"),
            ("unified/managed-pool-reuse", "µs per allocate+free", "median",
             "pool 0.018 ms vs cudaMallocManaged 29.99 ms per average cycle (~1,700×)"),
            ("unified/managed-threads", "4 threads, small: mean thread time", "median",
             "unified_allocator 406.34 ms"),
            ("unified/managed-threads", "8 threads, mixed: mean thread time", "median",
             "unified_allocator 660.43 ms"),
        ],
    },
    {
        "seed": "003",
        "system": "SessionHeap",
        "file": "003_b02dc878b140825e.txt",
        "headline": (
            "A monotonic session heap over a private mimalloc heap allocates 256-byte FIX "
            "messages in bursts at 4.1 ns/msg P50 (4.2 ns P99) at 1,000 messages, against "
            "4.3 ns for mimalloc alone and 11.4 ns for a std::pmr monotonic buffer; overflow "
            "falls back at 9.2 ns/msg instead of throwing."
        ),
        "claims": [
            ("session/bursts", "malloc, 1000 msgs", "p50", "mimalloc-only 4.3 ns"),
            ("session/bursts", "malloc, 1000 msgs", "p99", "mimalloc-only 4.4 ns"),
            ("session/bursts", "pmr::monotonic (64 MB buffer), 1000 msgs", "p50",
             "monotonic-only 11.4 ns"),
            ("session/single-allocation", "malloc 256 B", "p50", "mimalloc heap 12.9 ns"),
            ("session/single-allocation", "pmr::monotonic 256 B", "p50", "PMR monotonic 10.5 ns"),
            ("session/free-latency", "free on the allocating thread", "p50", "mimalloc 13.2 ns"),
            ("session/free-latency", "free on another thread", "p50", "mimalloc 22.5 ns"),
            ("session/cleanup", "pmr::monotonic release()", "p50", "pool.release() 103 ns"),
            ("session/overflow", "per message (median burst / 100)", "median",
             "SessionHeap 9.2 ns/msg"),
            ("session/session-heap", "P50, 1000 msgs", "median",
             "SessionHeap 4.1 · mimalloc-only 4.3 · monotonic-only 11.4 ns"),
            ("session/session-heap", "P99, 1000 msgs", "median",
             "SessionHeap 4.2 · mimalloc-only 4.4 · monotonic-only 14.3 ns"),
            ("session/session-heap-lifetime", "cleanup of 1,000 messages", "median",
             "pool.release() 103 ns · mi_heap_destroy 278 ns"),
            ("session/session-heap-lifetime", "100 msgs into a 4 KB buffer", "median",
             "SessionHeap 9.2 ns/msg"),
        ],
    },
    {
        "seed": "004",
        "system": "framealloc",
        "file": "004_b23b09e5778844e2.txt",
        "headline": (
            "Per-thread frame arenas allocate in ~4 ns at any size (3× faster than malloc at "
            "64 B, 3,400× at 64 KB), realistic game frames run 2.8–4.1× faster than malloc, "
            "and per-thread cost stays flat from 1 to 16 threads while malloc's grows."
        ),
        "claims": [
            ("frame/single-sizes", "64 B", "median", "malloc 12.4 ns · framealloc 4.1 ns"),
            ("frame/single-sizes", "64 KB", "median", "malloc 15.3 µs · framealloc 4.5 ns"),
            ("frame/batch", "1,000 x malloc(64)", "median",
             "malloc 12,450 ns · framealloc 8,920 ns · batch API 64 ns"),
            ("frame/realistic", "physics: 800 allocs, 95 KB", "median",
             "malloc 12.4 µs · framealloc 3.2 µs"),
            ("frame/realistic", "particles: 10,000 allocs, 640 KB", "median",
             "malloc 162 µs · framealloc 40.1 µs"),
            ("frame/realistic", "UI: 200 allocs, 32 KB", "median",
             "malloc 5.1 µs · framealloc 1.8 µs"),
            ("frame/thread-scaling", "4 threads", "median", "malloc 49.2 ns · framealloc 4.3 ns"),
            ("frame/alignment-stress", "1,000 x malloc(7|31|63)", "median",
             "malloc 13,892 ns · framealloc 4,567 ns"),
            ("frame/alignment-stress", "waste", "median", "malloc 12.4 % · framealloc 2.1 %"),
            ("frame/frame-arena", "64 B", "median", "framealloc 4.1 ns · malloc 12.4 ns"),
            ("frame/frame-arena", "64 KB", "median", "framealloc 4.5 ns · malloc 15.3 µs"),
            ("frame/frame-arena", "1,000 x 64 B, one call each", "median",
             "framealloc 8,920 ns · malloc 12,450 ns"),
            ("frame/frame-arena", "1,000 x 64 B, batch API (separate blocks)", "median",
             "framealloc batch API 64 ns"),
            ("frame/frame-arena", "physics: 800 allocs, 95 KB", "median",
             "framealloc 3.2 µs · malloc 12.4 µs"),
            ("frame/frame-arena", "particles: 10,000 allocs, 640 KB", "median",
             "framealloc 40.1 µs · malloc 162 µs"),
            ("frame/frame-arena", "UI: 200 allocs, 32 KB", "median",
             "framealloc 1.8 µs · malloc 5.1 µs"),
            ("frame/frame-arena-stress", "2 threads", "median", "framealloc 4.2 ns · malloc 24.8 ns"),
            ("frame/frame-arena-stress", "waste, align 1", "median",
             "framealloc 2.1 % · bumpalo 3.8 % · malloc 12.4 %"),
        ],
    },
    {
        "seed": "035",
        "system": "Heap program shapes",
        "file": "issue 35",
        "headline": (
            "Not a seed report: the shapes of the standard allocator benchmarks on which "
            "strata's heap was not the fastest (random sizes in a bounded working set, a "
            "server whose threads free their predecessors' blocks, short-lived threads, a "
            "leaking loop); every allocator should be within 1.05x of the fastest."
        ),
        "claims": [],
    },
]

# The metrics that make up the headline table (README and report top); a strategy
# scenario's row compares strata's own allocator with the best of the seed's strategies.
HEADLINE = [
    ("xsigma/4k-x10000-warm", "total"),
    ("xsigma/4k-x10000-warm-touched", "total"),
    ("xsigma/mixed-stress", "time"),
    ("cell/single-pairs", "64 B"),
    ("cell/batches", "1 KB x 1,000"),
    ("cell/large-pairs", "1 MB"),
    ("cell/pool-pairs", "64 B object, allocate+free"),
    ("cell/pool-traversal", "100,000 objects, random order"),
    ("unified/mixed", "total"),
    ("session/producer-consumer", "1 producer -> 1 consumer"),
    ("session/session-heap", "P50, 1000 msgs"),
    ("session/session-heap", "P99, 10000 msgs"),
    ("session/session-heap-lifetime", "end of a 64 MiB session"),
    ("frame/realistic", "particles: 10,000 allocs, 640 KB"),
    ("frame/thread-scaling", "2 threads"),
    ("frame/alignment-stress", "1,000 x malloc(7|31|63)"),
    ("frame/frame-arena", "64 B"),
    ("frame/frame-arena", "particles: 10,000 allocs, 640 KB"),
    ("frame/frame-arena-stress", "2 threads"),
    ("frame/frame-arena-stress", "1,000 x 7|31|63 B, align 8"),
]

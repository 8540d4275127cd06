// The scenario registry: every table of the five seed reports, in report order. To add
// a scenario, write its function (workloads.hpp) and add one row here; a row without a
// function names the strata component it waits for and is reported as pending. A row
// ending in `strategies` compares strata's own allocator with the seed's strategies.
#include <array>

#include "scenario.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr bool strategies = true;
constexpr std::string_view gpu = "strata GPU allocators (gpu/, not yet filed)";

// The GPU scenarios of seed 000, where this build has the GPU layer (gpu/).
#if STRATA_BENCH_GPU
constexpr scenario_function gpu_allocators = xsigma_gpu_allocators;
constexpr scenario_function gpu_transfers = xsigma_gpu_transfers;
#else
constexpr scenario_function gpu_allocators = nullptr;
constexpr scenario_function gpu_transfers = nullptr;
#endif
// A GPU scenario's function where this build has the GPU layer, else pending.
#if STRATA_BENCH_GPU
#define gpu_scenario(function) function
#else
#define gpu_scenario(function) nullptr
#endif

// How seed 002's managed-memory scenarios run, said once for every row.
#define managed_detail                                                                      \
  "; strategies in turn on the CUDA backend where a GPU is present, else on the simulated " \
  "device (the strategy names say which): malloc, cudaMallocManaged, cudaMalloc, strata "   \
  "managed_pool, and managed_pool with prefetch to the side about to touch the memory"

constexpr std::string_view no_gpu_layer = "the GPU layer, gpu/ (left out of this build)";

constexpr auto registry = std::to_array<scenario>({
    // 000 XSigma
    {"xsigma/4k-x10000-cold",
     "000",
     "10,000 x 4 KB, cold process",
     "10,000 separate malloc(4096) then 10,000 frees, first thing in a new process; "
     "one process per repetition",
     xsigma_4k_batch,
     {},
     true},
    {"xsigma/4k-x10000-cold-touched",
     "000",
     "10,000 x 4 KB written once, cold process",
     "as 4k-x10000-cold, but each block's first and last byte is written as it is allocated, "
     "so every page it spans is faulted in (the realistic case); one process per repetition",
     xsigma_4k_batch_touched,
     {},
     true},
    {"xsigma/4k-x10000-warm", "000", "10,000 x 4 KB, warm",
     "10,000 separate malloc(4096) then 10,000 frees, after warm-up rounds", xsigma_4k_batch},
    {"xsigma/4k-x10000-warm-touched", "000", "10,000 x 4 KB written once, warm",
     "as 4k-x10000-warm, but each block's first and last byte is written as it is allocated",
     xsigma_4k_batch_touched},
    {"xsigma/alignment", "000", "Aligned allocation 16-1024 B",
     "posix_memalign of 1,000 x 256 B at each alignment, then the frees; every address checked",
     xsigma_alignment},
    {"xsigma/large-blocks", "000", "1, 16 and 64 MB blocks",
     "malloc, write one byte per 4 KB page, free; minor page faults per round",
     xsigma_large_blocks},
    {"xsigma/4-threads-mixed", "000", "4 threads x 1,000 mixed 1-64 KB",
     "each of 4 pinned threads makes 1,000 allocations of 1-64 KB then frees them; wall time",
     xsigma_four_threads_mixed},
    {"xsigma/mixed-stress", "000", "10,000-operation mixed stress, 64 B-1 MB",
     "10,000 allocations interleaved with frees of random live blocks (p = 0.4), every block "
     "filled and checked before its free; time, peak live blocks, RSS growth, minor page "
     "faults per round",
     xsigma_mixed_stress},
    {"xsigma/large-block-loop", "000", "5-25 MB blocks allocated and freed in a loop",
     "100 blocks (500 with --full) of 5-25 MB (uniform, fixed seed), one at a time: malloc, "
     "write one byte per 4 KB page, free; mean time per cycle, minor page faults per cycle, "
     "and the RSS growth at the peak and after the loop over the RSS before the first round "
     "(issue 21)",
     xsigma_large_block_loop},
    {"xsigma/large-block-loop-3-bytes", "000", "5-25 MB blocks in a loop, 3 bytes written",
     "as large-block-loop, but only the first, middle and last byte of each block written, "
     "which leaves the heap's own cost and the page faults it causes (issue 21)",
     xsigma_large_block_loop_3_bytes},
    {"xsigma/bfc",
     "000",
     "BFC allocator: mixed sizes in a preallocated region",
     "2,000 blocks of 64 B-64 KB (log-uniform, fixed seed) allocated, 50,000 free+allocate "
     "pairs at random slots, then all freed: strata::bfc in one 64 MB region taken up front, "
     "malloc, std::pmr::unsynchronized_pool_resource and the strata heap, in turn",
     xsigma_bfc,
     {},
     false,
     strategies},
    {"xsigma/tracking-overhead",
     "000",
     "Tracking allocator overhead",
     "the mixed stress (10,000 allocations of 64 B-1 MB, frees at p = 0.4, blocks filled) "
     "through the strata heap resource alone, tracking<heap> compiled out, tracking<heap> on "
     "(exact, exact with no_lock, and sampled 1 per 512 KiB) and statistics<heap>, in turn; "
     "mean of 10 runs (25 with --full) per repetition",
     xsigma_tracking_overhead,
     {},
     false,
     strategies},
    {"xsigma/gpu-allocators", "000",
     "GPU: direct vs pool vs caching (1 KB, 64 KB, 4 MB, 10 x 1 KB)",
     "blocks allocated and freed on one stream of the CUDA backend where a GPU is present, "
     "else of the simulated device (250 µs per allocate and per free, cudaMalloc's cost in "
     "the seed; the strategy names say which): direct device allocation (cudaMalloc), the "
     "device's stream-ordered pool (cudaMallocAsync), strata::gpu::device_pool (bfc over "
     "64 MB reserved up front) and strata::gpu::caching_allocator, in turn; overhead is the "
     "device memory a fresh instance holds beyond the bytes requested (MB = 2^20 bytes)",
     gpu_allocators, no_gpu_layer, false, strategies},
    {"xsigma/gpu-transfers", "000", "H2D / D2H transfer throughput",
     "copies of 1 KB, 64 KB, 1 MB and 16 MB to the device and back, each waited for, from "
     "pageable host memory (malloc) and from a buffer of strata::gpu::pinned_pool, on the "
     "CUDA backend where a GPU is present, else on the simulated device, whose copies are "
     "host memcpy with no cost model (the strategy names say which; MB = 2^20 bytes)",
     gpu_transfers, no_gpu_layer, false, strategies},
    {"gpu/fragmentation", "000", "GPU fragmentation: growing lengths and random lifetimes",
     "two sequences, each through a fresh instance of every strategy on the CUDA backend "
     "where a GPU is present, else on the simulated device (8 GiB address-only, 250 µs per "
     "allocate, free and physical granule; the strategy names say which): growing lengths "
     "(lengths 10 to 30, per step a kept tensor of length x 1 MiB and a freed workspace of "
     "length x 3 MiB) and random lifetimes (1,500 tensors of 512 B to 32 MiB, log-uniform, "
     "on two streams, each freed on its stream 1 to 64 allocations later; fixed seed). "
     "Strategies: strata::gpu::caching_allocator plain and with expandable segments, "
     "strata::gpu::device_pool, the device's stream-ordered pool (cudaMallocAsync) and "
     "direct allocation (cudaMalloc). Peak reserved is the device memory the instance held "
     "at most (the device's free memory before it less after each call), peak allocated the "
     "bytes live at most, fragmentation the share of the held memory not live at the held "
     "peak; time is one run to the last stream's completion (MB = 2^20 bytes)",
     gpu_scenario(gpu_fragmentation), no_gpu_layer, false, strategies},

    // 001 Cell
    {"cell/single-pairs", "001", "Single malloc+free, 16 B-16 KB",
     "malloc(size) immediately followed by free, averaged", cell_single_pairs},
    {"cell/batches", "001", "Batches of 1,000 (64 B, 1 KB)",
     "1,000 separate allocations then 1,000 frees, per batch", cell_batches},
    {"cell/large-pairs", "001", "Large malloc+free, 64 KB-4 MB",
     "malloc(size) immediately followed by free, memory untouched", cell_large_pairs},
    {"cell/threads", "001", "1 vs N threads (64 B, 1 KB)",
     "malloc+free pairs on 1 thread and on one pinned thread per CPU; wall time / all pairs",
     cell_thread_scaling},
    {"cell/sequential-traversal", "001", "Sequential traversal of 1,000 objects",
     "1,000 separately allocated 64-byte objects read in allocation order",
     cell_sequential_traversal},
    {"cell/random-traversal", "001", "Random traversal of 100,000 objects",
     "100,000 separately allocated 64-byte objects read in a fixed random order",
     cell_random_traversal},
    {"cell/false-sharing-active", "001", "Active false sharing, 8-byte objects",
     "2 pinned threads (and one per CPU where there are more) each allocate an 8-byte object, "
     "write each of its bytes 1,000 times, free it; 10,000 objects each (50,000 with --full); "
     "wall time, and as a fact the 64-byte lines that objects of different threads shared "
     "(the cache-thrash shape; issue 21)",
     cell_false_sharing_active},
    {"cell/false-sharing-passive", "001", "Passive false sharing, 8-byte objects",
     "the main thread allocates one 8-byte object per worker, back to back, and hands them "
     "out; each pinned worker frees the one it got, then allocates, writes 1,000 times per "
     "byte and frees its own, 10,000 times (50,000 with --full); wall time, and as facts the "
     "64-byte lines that the workers' own objects shared, and that the handed-out ones did "
     "(the cache-scratch shape; issue 21)",
     cell_false_sharing_passive},
    {"cell/pool-traversal",
     "001",
     "Traversal of objects from strata's fixed-size pool",
     "the traversals above (64-byte objects, 1,000 in order, 100,000 in a fixed random order) "
     "over objects from strata::fixed_pool, beside the same objects from separate malloc calls",
     pool_traversal,
     {},
     false,
     strategies},
    {"cell/pool-pairs",
     "001",
     "One 64-byte object allocated and freed: pools",
     "create+destroy of strata::object_pool<T>, allocate+deallocate of strata::fixed_pool and "
     "std::pmr::unsynchronized_pool_resource, malloc+free; averaged",
     pool_pairs,
     {},
     false,
     strategies},

    // 002 Unified Allocator
    {"unified/small", "002", "Small blocks (< 1 MB)",
     "256 blocks of 4 KB-1 MB: allocate all, write and read all, free all; minor page faults "
     "per round",
     unified_small},
    {"unified/medium", "002", "Medium blocks (1-10 MB)",
     "16 blocks of 1-10 MB: allocate all, write and read all, free all; minor page faults per "
     "round",
     unified_medium},
    {"unified/large", "002", "Large blocks (> 10 MB)",
     "16, 32 and 64 MB: allocate all, write and read all, free all; minor page faults per round",
     unified_large},
    {"unified/mixed", "002", "Mixed sizes",
     "64 small, 8 medium and one 20 MB block: allocate, access, free; minor page faults per round",
     unified_mixed},
    {"unified/repeated-1mb", "002", "64 x 1 MB",
     "64 blocks of exactly 1 MB: allocate, access, free; minor page faults per round",
     unified_repeated_1mb},
    {"unified/pool-reuse", "002", "1 MB allocate/free repeated 1,000 times",
     "allocate 1 MB, write a byte, free; 1,000 times", unified_pool_reuse},
    {"unified/threads", "002", "Multithreaded (4 and 8 threads)",
     "each thread allocates, accesses and frees its own blocks 4 times", unified_threads},
    {"unified/managed-small", "002", "Small blocks (< 1 MB), CPU and GPU access",
     "256 blocks of 4 KB-1 MB: allocate all, access all, free all, once accessed by the CPU and "
     "once by "
     "the GPU" managed_detail,
     gpu_scenario(unified_managed_small), no_gpu_layer, false, strategies},
    {"unified/managed-medium", "002", "Medium blocks (1-10 MB), CPU and GPU access",
     "16 blocks of 1-10 MB: allocate all, access all, free all, once accessed by the CPU and once "
     "by "
     "the GPU" managed_detail,
     gpu_scenario(unified_managed_medium), no_gpu_layer, false, strategies},
    {"unified/managed-large", "002", "Large blocks (> 10 MB), CPU and GPU access",
     "16, 32 and 64 MB: allocate all, access all, free all, once accessed by the CPU and once by "
     "the GPU" managed_detail,
     gpu_scenario(unified_managed_large), no_gpu_layer, false, strategies},
    {"unified/managed-mixed", "002", "Mixed sizes, CPU and GPU access",
     "64 small, 8 medium and one 20 MB block: allocate all, access all, free all, once accessed by "
     "the CPU and once by "
     "the GPU" managed_detail,
     gpu_scenario(unified_managed_mixed), no_gpu_layer, false, strategies},
    {"unified/managed-repeated-1mb", "002", "64 x 1 MB, CPU and GPU access",
     "64 blocks of exactly 1 MB: allocate all, access all, free all, once accessed by the CPU and "
     "once by "
     "the GPU" managed_detail,
     gpu_scenario(unified_managed_repeated_1mb), no_gpu_layer, false, strategies},
    {"unified/managed-pool-reuse", "002", "1 MB allocate/free repeated 1,000 times: pool vs direct",
     "allocate 1 MB of unified memory, touch a byte on the host, free; 1,000 times through "
     "malloc, cudaMallocManaged and strata managed_pool" managed_detail,
     gpu_scenario(unified_managed_pool_reuse), no_gpu_layer, false, strategies},
    {"unified/managed-threads", "002", "Multithreaded unified memory (4 and 8 threads)",
     "each thread allocates, accesses on the CPU and frees its own blocks 4 times, through "
     "malloc, cudaMallocManaged and strata managed_pool" managed_detail,
     gpu_scenario(unified_managed_threads), no_gpu_layer, false, strategies},

    // 003 SessionHeap
    {"session/bursts", "003", "Bursts of 100-10,000 256-byte messages",
     "per-message time of each burst (burst time / messages); P50 and P99 over bursts",
     session_bursts},
    {"session/single-allocation", "003", "Single 256-byte allocation latency",
     "one allocation timed alone with rdtsc (lfence-serialised), timer overhead subtracted",
     session_single_allocation},
    {"session/free-latency", "003", "Individual and cross-thread free",
     "free(256 B) timed alone, on the allocating thread and on a second thread",
     session_free_latency},
    {"session/producer-consumer", "003", "Producer -> consumer, 2 threads",
     "one thread allocates 256-byte messages, a second frees them; messages per second",
     session_producer_consumer},
    {"session/producer-consumer-sizes", "003", "Producer -> consumer, sizes 64 B-1 KiB",
     "as producer-consumer, with 300,000 messages (2,000,000 with --full) of sizes drawn "
     "uniformly from 64 B to 1 KiB (fixed seed), then the same count of 256 B messages; "
     "wall time per block (issue 21)",
     session_producer_consumer_sizes},
    {"session/cleanup", "003", "Cleanup after 1,000 messages",
     "free() of each message vs release() of std::pmr resources", session_cleanup},
    {"session/overflow", "003", "Overflow: 100 messages into a 4 KB buffer",
     "std::pmr::monotonic_buffer_resource, 4 KB initial buffer, upstream operator new",
     session_overflow},
    {"session/session-heap",
     "003",
     "strata session heap and the seed's strategies: bursts",
     "bursts of 100-10,000 256-byte messages from each strategy in turn; per-message time of "
     "a burst (burst time / messages), P50 and P99 over the bursts of a repetition; buffers "
     "of 64 MB are rewound and heap blocks freed after each burst, untimed",
     session_heap_bursts,
     {},
     false,
     strategies},
    {"session/session-heap-latency",
     "003",
     "strata session heap and the seed's strategies: single allocation, free",
     "one 256-byte allocation timed alone (rdtsc between lfences, timer overhead subtracted); "
     "free of one message on the allocating thread and on a second thread (not for the "
     "std::pmr resources, which are not thread-safe)",
     session_heap_latency,
     {},
     false,
     strategies},
    {"session/session-heap-lifetime",
     "003",
     "strata session heap and the seed's strategies: cleanup, overflow, destroy",
     "cleanup of a session of 1,000 messages (destroy(), release(), mi_heap_destroy or 1,000 "
     "frees); 100 messages into a fresh session with a 4 KB buffer (overflow: the heap or "
     "operator new serves the rest) and with a 1 MiB one (no overflow), and their ratio; the end "
     "of a session holding 1, 16 or 64 MiB of "
     "messages, every message written once",
     session_heap_lifetime,
     {},
     false,
     strategies},

    // 004 framealloc
    {"frame/single-sizes", "004", "Single allocation, 64 B-64 KB",
     "malloc(size) averaged over batches of 1,000; frees not timed", frame_single_sizes},
    {"frame/batch", "004", "1,000 individual 64-byte allocations",
     "1,000 separate malloc(64) calls, then their frees, each phase timed", frame_batch},
    {"frame/realistic", "004", "Realistic frames: physics, particles, UI",
     "allocate every block of a frame, write its first byte, free all", frame_realistic},
    {"frame/thread-scaling", "004", "Thread scaling, 64 B",
     "every pinned thread allocates and frees 64 B blocks; time per operation per thread",
     frame_thread_scaling},
    {"frame/alignment-stress", "004", "Alignment stress: 7/31/63-byte mix",
     "1,000 allocations cycling 7, 31, 63 B; time and waste from malloc_usable_size",
     frame_alignment_stress},
    {"frame/frame-arena",
     "004",
     "strata frame allocator and the seed's strategies: sizes, batches, frames",
     "strata::frame_allocator in default mode (tags and byte counts) and minimal mode, "
     "std::pmr::monotonic_buffer_resource, a plain bump arena and malloc: one allocation of "
     "64 B-64 KB averaged over frames of 1,000; 1,000 x 64 B by one call each, by the batch "
     "API and as one contiguous block; the three realistic frames (allocate, write the first "
     "byte, end the frame)",
     frame_arena_frames,
     {},
     false,
     strategies},
    {"frame/frame-arena-stress",
     "004",
     "strata frame allocator and the seed's strategies: threads, alignment",
     "1 to N threads (N = the CPUs this process may use), each running frames of 1,000 x 64 B "
     "(one frame allocator shared, the others one per thread); 1,000 allocations cycling 7, "
     "31, 63 B at alignment 1 and 8, time and waste (padding / bytes occupied)",
     frame_arena_stress,
     {},
     false,
     strategies},

    // issue 35: the shapes of the standard allocator benchmarks the heap lost
    {"heap/random-working-set", "035", "Random sizes in a bounded working set, 1 and 2 threads",
     "each thread keeps 4,000 blocks and replaces a random one 400,000 times (2,000,000 with "
     "--full), sizes 8 B + 40 KiB x u^8 (median 168 B, one in ten over 17 KiB), first byte "
     "written; wall time per replacement",
     heap_random_working_set},
    {"heap/server-handoff", "035", "Server simulation: each thread frees its predecessor's blocks",
     "2 chains at once, each an array of 1,000 blocks of 10-1,000 B that 20 threads in turn "
     "take over: each replaces random blocks (20,000 each; 100,000 with --full), freeing "
     "those the thread before it allocated; free, then sized operator delete; wall time per "
     "replacement",
     heap_server_handoff},
    {"heap/short-lived-threads", "035", "Short-lived threads handing objects on",
     "50 waves (200 with --full) of 4 threads; each allocates 2,000 objects of 16 B-1 KiB, "
     "frees every fourth, swaps the rest into a shared 4,096-slot exchange and frees what it "
     "takes out (other threads' objects), then exits; wall time per thread",
     heap_short_lived_threads},
    {"heap/leak-loop", "035", "A loop that leaks one block in fifty",
     "100 rounds of 10,000 mallocs of 16-512 B, then frees of all but one in fifty, which "
     "stay until the 100 rounds end (freed after the clock stops); time for the 100 rounds",
     heap_leak_loop},
});

}  // namespace

std::span<const scenario> all_scenarios() {
  return registry;
}

}  // namespace strata_bench

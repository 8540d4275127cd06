// The scenario functions, one group per seed report. Each runs warm-up and measured
// rounds itself and records through plain malloc/free/new/delete, so whichever
// allocator the process was started with serves every allocation; the strategy
// scenarios also call the seeds' strategies and strata's own allocators directly.
#pragma once

#include "scenario.hpp"

namespace strata_bench {

// 000 XSigma
void xsigma_4k_batch(const run_settings&, recorder&);
void xsigma_4k_batch_touched(const run_settings&, recorder&);
void xsigma_alignment(const run_settings&, recorder&);
void xsigma_large_blocks(const run_settings&, recorder&);
void xsigma_four_threads_mixed(const run_settings&, recorder&);
void xsigma_mixed_stress(const run_settings&, recorder&);
// issue 21: 5-25 MB blocks in a loop, every page written or 3 bytes
void xsigma_large_block_loop(const run_settings&, recorder&);
void xsigma_large_block_loop_3_bytes(const run_settings&, recorder&);
// strategies: strata bfc in a preallocated region, malloc, pmr pool, strata heap
void xsigma_bfc(const run_settings&, recorder&);
// strategies: heap alone, tracking compiled out, tracking on, statistics adaptor
void xsigma_tracking_overhead(const run_settings&, recorder&);
// strategies on the GPU backend present (CUDA, else the simulated device): direct
// allocation, the device's stream-ordered pool, strata device_pool and caching_allocator
void xsigma_gpu_allocators(const run_settings&, recorder&);
// strategies: pageable host memory (malloc) and strata's pinned_pool, H2D and D2H
void xsigma_gpu_transfers(const run_settings&, recorder&);
// issue 37: caching plain and with expandable segments, device_pool, the
// stream-ordered pool and direct allocation on two fragmentation-prone sequences
void gpu_fragmentation(const run_settings&, recorder&);

// 001 Cell
void cell_single_pairs(const run_settings&, recorder&);
void cell_batches(const run_settings&, recorder&);
void cell_large_pairs(const run_settings&, recorder&);
void cell_thread_scaling(const run_settings&, recorder&);
void cell_sequential_traversal(const run_settings&, recorder&);
void cell_random_traversal(const run_settings&, recorder&);
// issue 21: small objects of different threads in one cache line
void cell_false_sharing_active(const run_settings&, recorder&);
void cell_false_sharing_passive(const run_settings&, recorder&);
void pool_traversal(const run_settings&, recorder&);  // strategies: strata pool, malloc
void pool_pairs(const run_settings&, recorder&);

// 002 Unified Allocator (host malloc side)
void unified_small(const run_settings&, recorder&);
void unified_medium(const run_settings&, recorder&);
void unified_large(const run_settings&, recorder&);
void unified_mixed(const run_settings&, recorder&);
void unified_repeated_1mb(const run_settings&, recorder&);
void unified_pool_reuse(const run_settings&, recorder&);
void unified_threads(const run_settings&, recorder&);
// strategies on the GPU backend present: malloc, cudaMallocManaged, cudaMalloc, strata
// managed_pool without and with prefetch; CPU and GPU access
void unified_managed_small(const run_settings&, recorder&);
void unified_managed_medium(const run_settings&, recorder&);
void unified_managed_large(const run_settings&, recorder&);
void unified_managed_mixed(const run_settings&, recorder&);
void unified_managed_repeated_1mb(const run_settings&, recorder&);
void unified_managed_pool_reuse(const run_settings&, recorder&);
void unified_managed_threads(const run_settings&, recorder&);

// 003 SessionHeap (malloc and std::pmr baselines)
void session_bursts(const run_settings&, recorder&);
void session_single_allocation(const run_settings&, recorder&);
void session_free_latency(const run_settings&, recorder&);
void session_producer_consumer(const run_settings&, recorder&);
// issue 21: the producer -> consumer pair with sizes spread over 64 B-1 KiB
void session_producer_consumer_sizes(const run_settings&, recorder&);
void session_cleanup(const run_settings&, recorder&);
void session_overflow(const run_settings&, recorder&);
// strategies: strata session heap, pmr monotonic and pool, mimalloc heap, malloc
void session_heap_bursts(const run_settings&, recorder&);
void session_heap_latency(const run_settings&, recorder&);
void session_heap_lifetime(const run_settings&, recorder&);

// 004 framealloc (malloc baselines)
void frame_single_sizes(const run_settings&, recorder&);
void frame_batch(const run_settings&, recorder&);
void frame_realistic(const run_settings&, recorder&);
void frame_thread_scaling(const run_settings&, recorder&);
void frame_alignment_stress(const run_settings&, recorder&);
// strategies: strata frame allocator (default, minimal), pmr monotonic, bump arena, malloc
void frame_arena_frames(const run_settings&, recorder&);
void frame_arena_stress(const run_settings&, recorder&);

// issue 35: the shapes of the programs on which the heap was not the fastest
void heap_random_working_set(const run_settings&, recorder&);
void heap_server_handoff(const run_settings&, recorder&);
void heap_short_lived_threads(const run_settings&, recorder&);
void heap_leak_loop(const run_settings&, recorder&);

}  // namespace strata_bench

// strata-replay --gpu: replays a device trace (the GPU caching allocator's
// STRATA_GPU_TRACE, or a PyTorch memory snapshot converted by
// torch_snapshot_to_trace.py) under each configuration given, on an
// address-only simulated device, and compares peak reserved, peak allocated,
// fragmentation at the peak, cudaMalloc calls and out-of-memory.
#ifndef STRATA_REPLAY_GPU_REPLAY_HPP
#define STRATA_REPLAY_GPU_REPLAY_HPP

namespace strata_replay {

// The whole --gpu command line (argv as main got it); returns the exit code.
int run_gpu(int argc, char** argv);

}  // namespace strata_replay

#endif  // STRATA_REPLAY_GPU_REPLAY_HPP

// The GPU rows of the misuse matrix, joined from their parts, and the GPU
// headers that need none.
#include "gpu_rows.hpp"

namespace strata_misuse {

const std::vector<row>& gpu_misuse_rows() {
  static const std::vector<row> rows = [] {
    std::vector<row> all;
    for (auto part : {gpu_device_rows, gpu_resource_rows, gpu_c_api_rows})
      for (row& r : part()) all.push_back(std::move(r));
    return all;
  }();
  return rows;
}

const std::vector<exempt_header>& gpu_exempt_headers() {
  static const std::vector<exempt_header> headers = {
      {"gpu/device.hpp", "the device interface; the device row runs it on the simulated device"},
      {"gpu/cuda.hpp",
       "opens the CUDA backend, which answers as the device row says (its tests run it on the "
       "emulated runtime)"},
      {"gpu/cccl.hpp", "CCCL's property bridge: types only"},
      {"gpu/error.hpp", "the error type every GPU answer throws"},
      {"gpu/liveness.hpp", "the word the resources check their lifetime by; their rows cover it"},
      {"gpu/memory_access.hpp", "where memory may be touched from: constants only"},
      {"gpu/stream_ordered_resource.hpp",
       "the spellings every resource shares; each resource's row covers them"},
      {"gpu/device_upstream.hpp", "device_pool's region source; device_pool's row covers it"},
      {"gpu/managed_upstream.hpp", "managed_pool's region source; managed_pool's row covers it"},
      {"gpu/transfer_meter.hpp",
       "copies and counts them, allocates nothing; gpu::tracking's row covers its owner"},
      {"gpu/caching/config.hpp", "the caching allocator's settings: its row covers it"},
      {"gpu/caching/out_of_memory.hpp", "the caching allocator's out-of-memory error"},
      {"gpu/caching/snapshot.hpp", "the caching allocator's snapshot types"},
      {"gpu/caching/statistics.hpp", "the caching allocator's statistics types"},
      {"gpu/caching/replay.hpp",
       "replays a device trace on a simulated device of its own; a damaged trace is the trace "
       "reader's (trace_bad_input), a bad configuration parse_caching_config's"},
      {"gpu/ledger_source.hpp",
       "hands the ledger a device's free and total memory; allocates nothing, no lifetime"},
  };
  return headers;
}

}  // namespace strata_misuse

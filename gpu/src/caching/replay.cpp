#include <strata/gpu/caching/replay.hpp>
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/simulated.hpp>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace strata::gpu {

namespace {

using trace::device_op;
using trace::device_record;

// The trace's streams as streams of the simulated device: the handles CUDA
// gives fixed meanings keep them, the others become streams of their own.
class stream_map {
 public:
  explicit stream_map(simulated_device& dev) : dev_(dev) {}
  ~stream_map() {
    for (const auto& [handle, s] : made_) dev_.destroy_stream(s);
  }
  stream_map(const stream_map&) = delete;
  stream_map& operator=(const stream_map&) = delete;

  // The simulated stream for a recorded handle.
  stream operator()(std::uint64_t handle) {
    if (handle <= 2) return stream{reinterpret_cast<void*>(static_cast<std::uintptr_t>(handle))};
    const auto it = made_.find(handle);
    if (it != made_.end()) return it->second;
    return made_.emplace(handle, dev_.create_stream()).first->second;
  }

 private:
  simulated_device& dev_;
  std::unordered_map<std::uint64_t, stream> made_;
};

// Keeps the peaks, the fragmentation at the peak of reserved and the timeline.
class peak_watch {
 public:
  peak_watch(replay_result& out, std::size_t records, std::size_t points)
      : out_(out), every_(points == 0 ? 0 : std::max<std::size_t>(1, records / points)) {}

  // The allocator's totals after record `index`.
  void after(std::uint64_t index, const caching_stats& stats) {
    const auto reserved = static_cast<std::size_t>(stats.all.reserved_bytes.current);
    const auto allocated = static_cast<std::size_t>(stats.all.allocated_bytes.current);
    if (reserved > out_.peak_reserved) {
      out_.peak_reserved = reserved;
      out_.fragmentation_at_peak =
          1.0 - static_cast<double>(allocated) / static_cast<double>(reserved);
    }
    out_.peak_allocated = std::max(out_.peak_allocated, allocated);
    if (every_ == 0 || index < next_) return;
    out_.timeline.push_back({index, reserved, allocated});
    next_ = index + every_;
  }

 private:
  replay_result& out_;
  std::size_t every_;
  std::uint64_t next_ = 0;  // the record at which the next sample is taken
};

}  // namespace

// Reserved bytes from the segment records, bytes asked for from the blocks.
recorded_summary summarize(const std::vector<device_record>& records) {
  recorded_summary out;
  std::unordered_set<std::uint64_t> streams;
  std::unordered_map<std::uint64_t, std::size_t> asked;
  std::size_t reserved = 0;
  std::size_t requested = 0;
  for (const device_record& r : records) {
    streams.insert(r.stream);
    switch (r.kind) {
      case device_op::alloc:
        ++out.allocations;
        asked[r.address] = r.size;
        requested += r.size;
        out.peak_requested = std::max(out.peak_requested, requested);
        break;
      case device_op::free_requested:
        ++out.frees;
        if (const auto it = asked.find(r.address); it != asked.end()) {
          requested -= it->second;
          asked.erase(it);
        }
        break;
      case device_op::segment_alloc:
        ++out.device_allocations;
        reserved += r.size;
        out.peak_reserved = std::max(out.peak_reserved, reserved);
        break;
      case device_op::segment_map:  // expandable segments take memory without a cudaMalloc
        reserved += r.size;
        out.peak_reserved = std::max(out.peak_reserved, reserved);
        break;
      case device_op::segment_free:
      case device_op::segment_unmap:
        reserved -= std::min(reserved, static_cast<std::size_t>(r.size));
        break;
      case device_op::oom:
        ++out.ooms;
        break;
      case device_op::free_completed:
        break;
    }
  }
  out.streams = streams.size();
  return out;
}

// One pass over the records; stops at the first allocation that fails.
replay_result replay(const std::vector<device_record>& records, const caching_config& config,
                     const replay_options& options) {
  simulated_config device_config;
  device_config.capacity = options.device_memory;
  device_config.backing = memory_backing::address_only;
  device_config.poison_freed = false;
  simulated_device dev(device_config);
  replay_result out;
  {
    stream_map streams(dev);
    caching_config quiet = config;
    quiet.trace_capacity = 0;
    quiet.trace_path.clear();
    caching_allocator cache(dev, quiet);
    peak_watch watch(out, records.size(), options.timeline_points);
    std::unordered_map<std::uint64_t, void*> blocks;
    blocks.reserve(1024);
    for (std::size_t i = 0; i < records.size(); ++i) {
      const device_record& r = records[i];
      if (r.kind != device_op::alloc && r.kind != device_op::free_requested &&
          r.kind != device_op::oom)
        continue;
      const stream s = streams(r.stream);
      try {
        if (r.kind == device_op::free_requested) {
          const auto it = blocks.find(r.address);
          if (it == blocks.end()) {
            ++out.unmatched_frees;
            continue;
          }
          cache.deallocate_on(it->second, 0, device_alignment, s);
          blocks.erase(it);
        } else {
          void* p = cache.allocate_on(r.size, device_alignment, s);
          if (r.kind == device_op::alloc) {
            blocks[r.address] = p;
          } else {
            // The failed request fits here: seen at its peak, then given back.
            watch.after(i, cache.stats());
            cache.deallocate_on(p, 0, device_alignment, s);
          }
        }
      } catch (const out_of_memory_error&) {
        out.out_of_memory = true;
        out.oom_record = i;
        out.oom_bytes = r.size;
        break;
      }
      ++out.replayed;
      watch.after(i, cache.stats());
    }
    out.device_allocations = cache.stats().num_device_allocs;
    out.peak_reserved = std::max<std::size_t>(
        out.peak_reserved, static_cast<std::size_t>(cache.stats().all.reserved_bytes.peak));
  }
  return out;
}

}  // namespace strata::gpu
